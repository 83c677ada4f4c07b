//! TERMINAL.REMAIN and SERVER.REMAIN: exited terminals kept with their last screen.

use std::time::Duration;

use phux_core::server::ServerConfig;
use phux_core::sim::{apply_input, paste};

use super::*;

fn keeping(n: usize) -> Harness {
    let mut config = ServerConfig::new(vec![1; 16]);
    config.remain_on_exit = n;
    config.remain_for = Duration::from_hours(1);
    Harness::with_config(config)
}

fn screen(h: &mut Harness, c: phux_core::server::ConnId, t: &TerminalId) -> Option<CommandResult> {
    h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: None,
            cells: false,
        },
    )
}

fn listed(h: &mut Harness, c: phux_core::server::ConnId) -> Vec<TerminalId> {
    match h.request(
        c,
        Command::GetState {
            scope: StateScope::Server,
        },
    ) {
        Some(CommandResult::OkWith(CommandValue::State(s))) => {
            s.terminals.into_iter().map(|t| t.terminal).collect()
        }
        other => panic!("{other:?}"),
    }
}

/// Spawns a terminal that prints `words` and exits with `status`.
fn exited(h: &mut Harness, c: phux_core::server::ConnId, words: &[u8], status: i32) -> TerminalId {
    let t = h.spawn(c);
    h.pty(&t).script(words);
    h.pty(&t).exit(status);
    h.settle();
    t
}

#[test]
fn an_exited_terminal_keeps_its_screen_and_status_until_dismissed() {
    // [TERMINAL.REMAIN.1] [TERMINAL.REMAIN.2] [TERMINAL.REMAIN.3] [TERMINAL.REMAIN.4]
    // [TERMINAL.CLOSED.4]
    let mut h = keeping(4);
    let c = h.client();
    let t = exited(&mut h, c, b"last words", 3);
    assert_eq!(h.server.remains_count(), 1);
    assert_eq!(h.server.terminal_count(), 0);
    let v = expect_json(screen(&mut h, c, &t));
    assert_eq!(v["lines"][0], "last words");
    let state = expect_json(h.request(
        c,
        Command::GetTerminalState {
            terminal: t.clone(),
            include_scrollback: false,
            max_scrollback_lines: 0,
        },
    ));
    assert_eq!(
        (state["lifecycle"].as_str(), state["exit_status"].as_i64()),
        (Some("exited"), Some(3))
    );
    assert_eq!(listed(&mut h, c), std::slice::from_ref(&t));
    // Input, resize, leases and signals find no terminal.
    let op = h.next_request_id();
    h.send(c, &command_frame(op, apply_input(5, &t, vec![paste(b"x")])));
    h.settle();
    assert_eq!(
        h.take_result(c, op).as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    let signal = h.request(
        c,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: phux_proto::command::Signal::Interrupt,
        },
    );
    assert_eq!(
        signal.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    // Attaching shows the last screen, then TERMINAL_CLOSED with the status, and leaves no
    // stream open.
    h.recv(c);
    assert_eq!(
        h.request(
            c,
            Command::AttachTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    let got = h.settle_recv(c);
    let chunk = got.iter().position(|f| {
        matches!(f, Frame::BootstrapChunk(b) if b.payload.windows(10).any(|w| w == b"last words"))
    });
    let closed = got.iter().position(
        |f| matches!(f, Frame::TerminalClosed(tc) if tc.terminal == t && tc.exit_status == Some(3)),
    );
    assert!(
        chunk.is_some() && closed.is_some() && chunk < closed,
        "{got:?}"
    );
    // Kept until dismissed: attaching again works again.
    assert_eq!(
        h.request(
            c,
            Command::AttachTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    // KILL_TERMINAL dismisses it, without another TERMINAL_CLOSED.
    h.settle_recv(c);
    assert_eq!(
        h.request(
            c,
            Command::KillTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    assert!(
        !h.settle_recv(c)
            .iter()
            .any(|f| matches!(f, Frame::TerminalClosed(_)))
    );
    assert_eq!(
        screen(&mut h, c, &t).as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    assert!(listed(&mut h, c).is_empty());
}

#[test]
fn a_killed_terminal_is_not_kept_and_nothing_is_kept_when_off() {
    // [TERMINAL.REMAIN.1] [TERMINAL.CLOSED.4]
    let mut h = keeping(4);
    let c = h.client();
    let t = h.spawn(c);
    h.request(
        c,
        Command::KillTerminal {
            terminal: t.clone(),
        },
    );
    h.settle();
    assert_eq!(
        screen(&mut h, c, &t).as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    let mut h = keeping(0);
    let c = h.client();
    let t = exited(&mut h, c, b"bye", 0);
    assert_eq!(
        screen(&mut h, c, &t).as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}

#[test]
fn the_oldest_give_way_past_the_count_and_each_goes_after_its_time() {
    // [SERVER.REMAIN.1] [SERVER.REMAIN.2]
    let mut h = keeping(2);
    let c = h.client();
    let a = exited(&mut h, c, b"a", 1);
    h.advance(Duration::from_mins(1));
    let b = exited(&mut h, c, b"b", 2);
    h.advance(Duration::from_mins(1));
    let d = exited(&mut h, c, b"d", 4);
    assert_eq!(listed(&mut h, c), [b.clone(), d.clone()]);
    // b has been kept an hour 60 s before d has.
    h.advance(Duration::from_mins(58));
    assert_eq!(listed(&mut h, c), [b.clone(), d.clone()]);
    h.advance(Duration::from_secs(61));
    assert_eq!(listed(&mut h, c), std::slice::from_ref(&d));
    h.advance(Duration::from_mins(1));
    assert!(listed(&mut h, c).is_empty());
    assert_eq!(h.server.remains_count(), 0);
    let _ = a;
}

#[test]
fn kept_terminals_make_room_for_a_spawn_and_survive_an_upgrade() {
    // [SERVER.REMAIN.3] [TERMINAL.REMAIN.1]
    let mut h = keeping(4);
    let c = h.client();
    let a = exited(&mut h, c, b"first", 1);
    let b = exited(&mut h, c, b"second", 2);
    // An upgrade carries them, screen and status.
    let rid = h.next_request_id();
    h.send(c, &command_frame(rid, Command::Upgrade { binary: None }));
    h.settle();
    h.upgrade_in_place().expect("upgraded");
    assert_eq!(listed(&mut h, c), [a.clone(), b.clone()]);
    let v = expect_json(screen(&mut h, c, &b));
    assert_eq!(v["lines"][0], "second");
    // A budget that holds one more 80x24 model beside the live ones: the oldest kept one
    // makes room rather than the spawn being refused.
    let held = h.server.models_bytes();
    h.server.set_models_budget(held);
    let live = h.spawn(c);
    assert!(matches!(live, TerminalId::Local(_)));
    let now = listed(&mut h, c);
    assert!(now.contains(&live) && !now.contains(&a), "{now:?}");
}
