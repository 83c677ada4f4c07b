//! Each contender on a small transfer or a few operations, against the real helper binary:
//! every byte arrives, the phux server's screen and bootstrap show the last line, and the
//! latency probes return plausible timings.

use phux_bench::latency::{DirectPty, PhuxTerm, Relay, echo_argv, letter, sink_argv};
use phux_bench::procs::{PhuxServer, set_helper_exe};
use phux_bench::roles::RelayMode;
use phux_bench::throughput;

const LINES: u64 = 3000;

fn setup() {
    set_helper_exe(env!("CARGO_BIN_EXE_phux-bench").into());
}

#[test]
fn direct_drain_and_relay_deliver_every_byte() {
    setup();
    let d = throughput::direct(LINES).expect("direct drain");
    // The writer's lines, each LF turned into CR LF by the line discipline, and no more.
    assert_eq!(d.expected, LINES * 81);
    assert_eq!(d.delivered, d.expected);
    assert!(d.secs > 0.0);
    let r = throughput::relay(LINES).expect("relay");
    assert_eq!(r.delivered, r.expected);
}

#[test]
fn phux_keeps_the_screen_and_loses_nothing_when_the_child_exits() {
    setup();
    let server = PhuxServer::start(None).expect("server");
    let held = throughput::phux(&server, LINES, 1, true, throughput::Reader::Fast)
        .expect("one client, held");
    assert!(held.complete(), "{held:?}");
    assert_eq!(held.delivered, held.expected);
    assert_eq!(
        held.screen_ok,
        Some(true),
        "GET_SCREEN or bootstrap lacks the last line"
    );
    // The writer exits right after its payload: each of 3 viewers still gets all of it.
    let exiting = throughput::phux(&server, LINES, 3, false, throughput::Reader::Fast)
        .expect("three clients");
    assert!(exiting.complete(), "{exiting:?}");
    assert_eq!(exiting.delivered, exiting.expected);
}

#[test]
fn latency_probes_round_trip() {
    setup();
    let server = PhuxServer::start(None).expect("server");
    let mut sink = PhuxTerm::start(&server, &sink_argv()).expect("sink terminal");
    let mut echo = PhuxTerm::start(&server, &echo_argv()).expect("echo terminal");
    let mut relay = Relay::start(RelayMode::Echo, &echo_argv()).expect("relay");
    let mut direct = DirectPty::start(&echo_argv()).expect("direct");
    for i in 0..20 {
        assert!(sink.apply().expect("APPLY_INPUT") > 0.0);
        assert!(echo.echo(letter(i)).expect("INPUT_KEY echo") > 0.0);
        assert!(relay.round_trip(&[letter(i) as u8], 1).expect("relay echo") > 0.0);
        assert!(direct.echo(letter(i)).expect("PTY echo") > 0.0);
    }
}

#[test]
fn tmux_receives_the_stream() {
    phux_testkit::require_programs!("tmux");
    setup();
    let t = throughput::tmux_control(LINES, true).expect("tmux -C");
    assert!(t.delivered >= t.expected, "{t:?}");
    let a = throughput::tmux_attached(LINES).expect("tmux attached");
    assert!(
        a.complete(),
        "the end marker never reached the client: {a:?}"
    );
    let mut term = phux_bench::latency::TmuxTerm::start(&echo_argv()).expect("tmux term");
    assert!(term.echo('q').expect("tmux echo") > 0.0);
}

#[test]
fn dtach_receives_the_stream() {
    phux_testkit::require_programs!("dtach");
    setup();
    let d = throughput::dtach(LINES).expect("dtach");
    assert!(d.delivered >= d.expected, "{d:?}");
}

#[test]
fn the_reference_delivers_and_answers_when_it_is_there() {
    setup();
    let Ok(bin) = phux_bench::procs::reference_bin() else {
        println!("skipped: no phux reference (PHUX_REF_BIN)");
        return;
    };
    let server = PhuxServer::start_reference(&bin).expect("reference server");
    for reader in [
        throughput::Reader::Fast,
        throughput::Reader::Slow(throughput::SLOW_FRAME_COST),
    ] {
        let run = throughput::phux(&server, LINES, 1, true, reader).expect("one client");
        assert_eq!(run.delivered, run.expected, "{reader:?}: {run:?}");
        assert!(run.frames.is_some_and(|f| f > 0), "{run:?}");
    }
    let mut sink = PhuxTerm::start(&server, &sink_argv()).expect("sink terminal");
    let mut echo = PhuxTerm::start(&server, &echo_argv()).expect("echo terminal");
    for i in 0..5 {
        assert!(sink.apply().expect("APPLY_INPUT") > 0.0);
        assert!(echo.echo(letter(i)).expect("INPUT_KEY echo") > 0.0);
    }
    let mut c = server.client().expect("client");
    let spawn = phux_bench::commands::spawn_once(&mut c, &["cat".to_owned()]).expect("spawn");
    assert!(spawn > 0.0);
}

#[test]
fn the_websocket_client_round_trips_and_an_attack_on_the_listener_is_measured() {
    setup();
    let server = PhuxServer::start_ws(None).expect("server with --listen-ws");
    let client = server.ws_client().expect("HELLO over the WebSocket");
    let mut echo = PhuxTerm::over(client, &echo_argv()).expect("echo terminal over ws");
    for i in 0..5 {
        assert!(echo.apply().expect("APPLY_INPUT over ws") > 0.0);
        assert!(echo.echo(letter(i)).expect("INPUT_KEY echo over ws") > 0.0);
    }
    drop(server);
    // One attack as the hostile section mounts it: the honest page and the newcomers are
    // served throughout, and the attacker's messages are refused as the spec says (it fails
    // when a message past its frame is not answered and closed).
    let attack = phux_bench::hostile_ws::ws_attacks()
        .into_iter()
        .find(|a| a.name.contains("past its phux frame"))
        .expect("the attack");
    let o = phux_bench::hostile_ws::measure_ws(None, &attack).expect("measured");
    assert_eq!(o.error, None, "{o:?}");
    assert!(
        o.rounds >= 1 && !o.ack.is_empty() && !o.echo.is_empty(),
        "{o:?}"
    );
    assert_eq!((o.refused, o.turned_away), (0, 0), "{o:?}");
    assert!(!o.joined.is_empty(), "{o:?}");
    assert!(o.rss_peak >= o.rss_before, "{o:?}");
}
