//! Engine tests for the bounds a hostile local peer meets before and at the handshake
//! (SERVER.LIMIT.*): unframed bytes before HELLO, the handshake timeout, the connection cap.
#![cfg(feature = "sim")]
#![allow(clippy::many_single_char_names)]

use std::time::Duration;

use phux_core::server::{ConnId, ServerConfig};
use phux_core::sim::{Harness, hello_frame, server_id_for};
use phux_proto::frame::{DetachReason, Ping};
use phux_proto::{ErrorCode, Frame};

/// Asserts the fatal sequence: ERROR{no request id, code}, DETACHED{PROTOCOL_ERROR}, close.
fn assert_fatal(h: &mut Harness, c: ConnId, code: ErrorCode) {
    let got = h.settle_recv(c);
    match &got[..] {
        [Frame::Error(e), Frame::Detached(d)] => {
            assert_eq!(e.request_id, None, "{got:?}");
            assert_eq!(e.code, code, "{got:?}");
            assert_eq!(d.reason, Some(DetachReason::PROTOCOL_ERROR), "{got:?}");
        }
        _ => panic!("expected ERROR({code:?}) + DETACHED, got {got:?}"),
    }
    assert!(h.conn(c).closed_by_server(), "connection not closed");
}

// ---- unframed bytes before HELLO ------------------------------------------------------------

#[test]
fn a_huge_frame_before_hello_is_failed_and_its_bytes_dropped() {
    // [SERVER.LIMIT.1]: a 16 MiB HELLO header, then 100 KiB of its body in 4 KiB reads.
    let mut h = Harness::new();
    let honest = h.client();
    let c = h.connect();
    h.send_raw(c, &[0x01, 0x00, 0x00, 0x00, 0x01]);
    let body = vec![0x41; 100 * 1024];
    for chunk in body.chunks(4096) {
        h.send_raw(c, chunk);
    }
    // Dropped at once, before the driver has performed anything.
    assert_eq!(h.server.buffered_bytes(c), Some(0));
    assert_fatal(&mut h, c, ErrorCode::FRAME_TOO_LARGE);
    // [ERROR.FATAL.3] The other connection is untouched.
    h.send(honest, &Frame::Ping(Ping { nonce: 5 }));
    assert!(matches!(&h.settle_recv(honest)[..], [Frame::Pong(p)] if p.nonce == 5));
}

#[test]
fn a_hello_with_pipelined_requests_in_one_read_is_not_counted_as_pre_hello() {
    // [SERVER.LIMIT.1]: only bytes still unframed while HELLO is awaited count.
    let mut h = Harness::new();
    let c = h.connect();
    let mut read = hello_frame().to_bytes();
    for nonce in 0..10_000 {
        read.extend(Frame::Ping(Ping { nonce }).to_bytes());
    }
    assert!(read.len() > 64 * 1024);
    h.send_raw(c, &read);
    let got = h.settle_recv(c);
    assert!(
        matches!(got.first(), Some(Frame::HelloOk(_))),
        "{:?}",
        got.first()
    );
    assert_eq!(got.len(), 10_001);
    assert!(h.conn(c).is_open());
}

// ---- the handshake timeout ------------------------------------------------------------------

#[test]
fn a_byte_a_second_peer_is_closed_at_the_handshake_timeout() {
    // [SERVER.LIMIT.2]: a HELLO dribbled one byte a second never completes in 10 s.
    let mut h = Harness::new();
    let c = h.connect();
    let hello = hello_frame().to_bytes();
    assert!(hello.len() > 12);
    let mut closed_at = None;
    for (second, byte) in hello.iter().enumerate() {
        if !h.conn(c).is_open() {
            break;
        }
        h.send_raw(c, &[*byte]);
        h.advance(Duration::from_secs(1));
        if closed_at.is_none() && h.conn(c).closed_by_server() {
            closed_at = Some(second + 1);
        }
    }
    assert_eq!(closed_at, Some(10), "closed after {closed_at:?} s");
    let got = h.settle_recv(c);
    match &got[..] {
        [Frame::Detached(d)] => assert_eq!(d.reason, Some(DetachReason::PROTOCOL_ERROR)),
        _ => panic!("expected DETACHED, got {got:?}"),
    }
}

#[test]
fn an_honest_hello_within_the_timeout_is_unaffected() {
    // [SERVER.LIMIT.2]: admitted at 9.9 s, then idle well past the timeout.
    let mut h = Harness::new();
    let c = h.connect();
    assert_eq!(
        h.server.poll_timeout(),
        Some(h.now + Duration::from_secs(10)),
        "the handshake deadline is the engine's wake-up"
    );
    h.advance(Duration::from_millis(9_900));
    assert!(h.conn(c).is_open());
    h.hello(c);
    assert_eq!(h.server.poll_timeout(), None, "no timer once admitted");
    h.advance(Duration::from_secs(30));
    assert!(h.conn(c).is_open());
    h.send(c, &Frame::Ping(Ping { nonce: 1 }));
    assert!(matches!(&h.settle_recv(c)[..], [Frame::Pong(_)]));
}

#[test]
fn the_handshake_timeout_is_configurable() {
    // [SERVER.LIMIT.2]
    let mut config = ServerConfig::new(server_id_for(1));
    config.handshake_timeout = Duration::from_secs(2);
    let mut h = Harness::with_config(config);
    let c = h.connect();
    h.advance(Duration::from_millis(1_999));
    assert!(h.conn(c).is_open());
    h.advance(Duration::from_millis(1));
    assert!(h.conn(c).closed_by_server());
}

// ---- the connection cap ---------------------------------------------------------------------

#[test]
fn a_connection_over_the_cap_is_refused_at_once() {
    // [SERVER.LIMIT.3]: with room for 3, the 4th is refused before its HELLO is read.
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_connections = 3;
    let mut h = Harness::with_config(config);
    let held: Vec<ConnId> = (0..3).map(|_| h.client()).collect();
    let over = h.connect();
    h.send(over, &hello_frame());
    assert_fatal(&mut h, over, ErrorCode::RESOURCE_EXHAUSTED);
    assert_eq!(h.server.connection_count(), 3);
    for c in &held {
        assert!(h.conn(*c).is_open());
    }
    // Once one leaves, there is room again.
    h.disconnect(held[0]);
    h.settle();
    let next = h.connect();
    h.hello(next);
    assert!(h.conn(next).is_open());
}

#[test]
fn the_default_cap_is_256() {
    // [SERVER.LIMIT.3]: connections awaiting HELLO count too.
    let mut h = Harness::new();
    for _ in 0..256 {
        h.connect();
    }
    h.settle();
    assert_eq!(h.server.connection_count(), 256);
    let over = h.connect();
    assert_fatal(&mut h, over, ErrorCode::RESOURCE_EXHAUSTED);
}

#[test]
fn a_flood_of_frames_is_handled_a_budget_at_a_time() {
    // [SERVER.FAIR.1]
    use phux_core::Instant;
    use phux_core::framing::FrameDecoder;
    use phux_core::server::{PeerInfo, ServerAction, ServerEngine, ServerEvent};

    let mut config = ServerConfig::new(server_id_for(1));
    config.frames_per_receive = 4;
    let mut engine = ServerEngine::new(config);
    let c = ConnId(1);
    let mut replies = FrameDecoder::new();
    let mut drain = |engine: &mut ServerEngine| {
        let mut pongs = 0;
        while let Some(action) = engine.poll_action() {
            if let ServerAction::Send { bytes, .. } = action {
                replies.push(&bytes);
                while let Ok(Some(frame)) = replies.poll_frame() {
                    pongs += usize::from(matches!(frame, Frame::Pong(_)));
                }
            }
        }
        pongs
    };
    engine.handle(
        Instant::ZERO,
        ServerEvent::Connected {
            conn: c,
            peer: PeerInfo::local(),
        },
    );
    let mut bytes = hello_frame().to_bytes();
    for nonce in 0..10 {
        bytes.extend(Frame::Ping(Ping { nonce }).to_bytes());
    }
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &bytes,
        },
    );
    // HELLO and three PINGs: four frames, the rest wait.
    assert_eq!(drain(&mut engine), 3);
    assert!(engine.is_backlogged(c));
    let mut turns = 0;
    let mut pongs = 3;
    while engine.is_backlogged(c) {
        engine.handle(
            Instant::ZERO,
            ServerEvent::Received {
                conn: c,
                bytes: &[],
            },
        );
        pongs += drain(&mut engine);
        turns += 1;
    }
    assert_eq!((pongs, turns), (10, 2));
    // A partial frame is not a backlog: it needs more bytes.
    let ping = Frame::Ping(Ping { nonce: 99 }).to_bytes();
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &ping[..3],
        },
    );
    assert!(!engine.is_backlogged(c));
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &ping[3..],
        },
    );
    assert_eq!(drain(&mut engine), 1);
}

/// An engine handling at most `units` of a connection's work per turn ([SERVER.FAIR.1]), and
/// one connection to it, not yet past HELLO.
fn engine_with_turns_of(units: usize) -> (phux_core::server::ServerEngine, ConnId) {
    use phux_core::Instant;
    use phux_core::server::{PeerInfo, ServerEngine, ServerEvent};
    let mut config = ServerConfig::new(server_id_for(1));
    config.frames_per_receive = units;
    let mut engine = ServerEngine::new(config);
    let c = ConnId(1);
    let peer = PeerInfo::local();
    engine.handle(Instant::ZERO, ServerEvent::Connected { conn: c, peer });
    (engine, c)
}

#[test]
fn a_costly_request_takes_more_of_a_turn() {
    // [SERVER.FAIR.1]: a resize counts as 8 frames.
    use phux_core::Instant;
    use phux_core::server::ServerEvent;
    use phux_proto::frame::{TerminalResize, TerminalSize};

    let (mut engine, c) = engine_with_turns_of(16);
    let mut bytes = hello_frame().to_bytes();
    for _ in 0..3 {
        let resize = TerminalResize {
            terminal: phux_proto::TerminalId::Local(9),
            size: TerminalSize { cols: 10, rows: 10 },
        };
        bytes.extend(Frame::TerminalResize(resize).to_bytes());
    }
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &bytes,
        },
    );
    // HELLO and two resizes fill the turn of 16; the third waits.
    assert!(engine.is_backlogged(c));
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &[],
        },
    );
    assert!(!engine.is_backlogged(c));
}

#[test]
fn a_large_reply_takes_the_rest_of_a_turn() {
    // [SERVER.FAIR.1]: a request counts one more unit per 64 KiB its replies queue, so a
    // screen document of a megabyte (16 units) ends the turn by itself.
    use phux_core::Instant;
    use phux_core::server::{ServerAction, ServerEngine, ServerEvent};
    use phux_proto::GroupId;
    use phux_proto::command::Command;
    use phux_proto::frame::{CommandFrame, SpawnTerminal, TerminalSize};

    let (mut engine, c) = engine_with_turns_of(16);
    let mut spawn = SpawnTerminal::new(1, GroupId(1));
    spawn.initial_size = Some(TerminalSize {
        cols: 1024,
        rows: 512,
    });
    let mut bytes = hello_frame().to_bytes();
    bytes.extend(Frame::SpawnTerminal(spawn).to_bytes());
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &bytes,
        },
    );
    let mut terminal = None;
    while let Some(action) = engine.poll_action() {
        if let ServerAction::Spawn { terminal: t, .. } = action {
            terminal = Some(t);
        }
    }
    let terminal = terminal.expect("no Spawn action");
    engine.handle(Instant::ZERO, ServerEvent::Spawned { terminal, pid: 42 });
    // Every cell an é: each row's text is 2 KiB, the document 1 MiB.
    let text = "é".repeat(1024 * 512);
    engine.handle(
        Instant::ZERO,
        ServerEvent::PtyOutput {
            terminal,
            bytes: text.as_bytes(),
        },
    );
    while engine.poll_action().is_some() {}
    let mut reads = Vec::new();
    for request_id in 10..13 {
        let command = Command::GetScreen {
            terminal: phux_proto::TerminalId::from(terminal),
            request_scrollback: None,
            cells: false,
        };
        reads.extend(
            Frame::Command(CommandFrame {
                request_id,
                command,
            })
            .to_bytes(),
        );
    }
    let mut replies = phux_core::framing::FrameDecoder::new();
    // The replies are read as they come (the driver reports them sent), so no queue bound is
    // reached.
    let mut results = |engine: &mut ServerEngine| {
        let (mut n, mut sent) = (0, 0);
        while let Some(action) = engine.poll_action() {
            if let ServerAction::Send { bytes, .. } = action {
                sent += bytes.len();
                replies.push(&bytes);
                while let Ok(Some(frame)) = replies.poll_frame() {
                    n += usize::from(matches!(frame, Frame::CommandResult(_)));
                }
            }
        }
        engine.handle(
            Instant::ZERO,
            ServerEvent::Sent {
                conn: c,
                bytes: sent,
            },
        );
        n
    };
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &reads,
        },
    );
    // Each read is 8 units and its megabyte 16 more: one read a turn, where the cost of the
    // request alone would allow two.
    for turn in 0..3 {
        assert_eq!(results(&mut engine), 1, "turn {turn}");
        assert_eq!(engine.is_backlogged(c), turn < 2, "turn {turn}");
        engine.handle(
            Instant::ZERO,
            ServerEvent::Received {
                conn: c,
                bytes: &[],
            },
        );
    }
}

/// Sends `frame` on `c`; every action the engine asks for after it.
fn deliver(
    engine: &mut phux_core::server::ServerEngine,
    c: ConnId,
    frame: &Frame,
) -> Vec<phux_core::server::ServerAction> {
    use phux_core::Instant;
    use phux_core::server::ServerEvent;

    let bytes = frame.to_bytes();
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &bytes,
        },
    );
    std::iter::from_fn(|| engine.poll_action()).collect()
}

/// Sends `frame` on `c`: the terminal a `Spawn` action names, if one came, and the frames
/// sent back to `c`.
fn exchange(
    engine: &mut phux_core::server::ServerEngine,
    c: ConnId,
    frame: &Frame,
) -> (Option<phux_core::server::LocalTerminal>, Vec<Frame>) {
    use phux_core::server::ServerAction;

    let mut decoder = phux_core::framing::FrameDecoder::new();
    let mut started = None;
    for action in deliver(engine, c, frame) {
        match action {
            ServerAction::Spawn { terminal, .. } => started = Some(terminal),
            ServerAction::Send { conn, bytes } if conn == c => decoder.push(&bytes),
            _ => {}
        }
    }
    let mut replies = Vec::new();
    while let Ok(Some(frame)) = decoder.poll_frame() {
        replies.push(frame);
    }
    (started, replies)
}

/// Spawns a terminal of `cols` x `rows` on `c` (past HELLO) and reports it started; returns it,
/// or the TERMINAL_SPAWNED error.
fn spawn_sized(
    engine: &mut phux_core::server::ServerEngine,
    c: ConnId,
    request_id: u32,
    (cols, rows): (u16, u16),
) -> Result<phux_core::server::LocalTerminal, String> {
    use phux_core::Instant;
    use phux_core::server::ServerEvent;
    use phux_proto::GroupId;
    use phux_proto::frame::{SpawnResult, SpawnTerminal, TerminalSize};

    let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
    spawn.initial_size = Some(TerminalSize { cols, rows });
    let (started, replies) = exchange(engine, c, &Frame::SpawnTerminal(spawn));
    if let Some(terminal) = started {
        engine.handle(Instant::ZERO, ServerEvent::Spawned { terminal, pid: 42 });
        while engine.poll_action().is_some() {}
        return Ok(terminal);
    }
    for frame in replies {
        if let Frame::TerminalSpawned(s) = frame
            && let SpawnResult::Err(e) = s.result
        {
            return Err(format!("{e:?}"));
        }
    }
    Err("no TERMINAL_SPAWNED".to_owned())
}

/// The number of history rows GET_SCREEN shows for `terminal`.
fn scrollback_rows(
    engine: &mut phux_core::server::ServerEngine,
    c: ConnId,
    terminal: phux_core::server::LocalTerminal,
) -> usize {
    use phux_proto::command::{Command, CommandResult, CommandValue};
    use phux_proto::frame::CommandFrame;

    let command = Command::GetScreen {
        terminal: phux_proto::TerminalId::from(terminal),
        request_scrollback: Some(0),
        cells: false,
    };
    let request = Frame::Command(CommandFrame {
        request_id: 900,
        command,
    });
    let (_, replies) = exchange(engine, c, &request);
    for frame in replies {
        if let Frame::CommandResult(r) = frame
            && let CommandResult::OkWith(CommandValue::Json(doc)) = r.result
        {
            let doc: serde_json::Value = serde_json::from_str(&doc).expect("a JSON document");
            return doc["scrollback"].as_array().expect("scrollback").len();
        }
    }
    panic!("no GET_SCREEN reply");
}

/// The sizes the engine asks the driver to give a PTY after `frame`.
fn resized_to(
    engine: &mut phux_core::server::ServerEngine,
    c: ConnId,
    frame: &Frame,
) -> Vec<(u16, u16)> {
    use phux_core::server::ServerAction;

    deliver(engine, c, frame)
        .into_iter()
        .filter_map(|action| match action {
            ServerAction::Resize { cols, rows, .. } => Some((cols, rows)),
            _ => None,
        })
        .collect()
}

#[test]
fn the_terminals_memory_budget_reserves_screens_sheds_history_and_refuses_the_rest() {
    // [SERVER.LIMIT.6] [SERVER.LIMIT.7]
    use phux_core::Instant;
    use phux_core::server::ServerEvent;
    use phux_core::terminal_state::TerminalState;
    use phux_proto::frame::{TerminalResize, TerminalSize};

    let (mut engine, c) = engine_with_turns_of(usize::MAX);
    let hello = hello_frame().to_bytes();
    engine.handle(
        Instant::ZERO,
        ServerEvent::Received {
            conn: c,
            bytes: &hello,
        },
    );
    while engine.poll_action().is_some() {}
    // Room for the screens of two 80x24 terminals at their costliest, and 100 KiB of history.
    let screens = TerminalState::rows_heap_bound(80, 24);
    let budget = 2 * screens + 100 * 1024;
    engine.set_models_budget(budget);
    let a = spawn_sized(&mut engine, c, 1, (80, 24)).expect("a small terminal fits");
    let b = spawn_sized(&mut engine, c, 2, (80, 24)).expect("a second one too");
    // A third one's screens do not fit, however empty the others are; nor does a big one.
    let refused = spawn_sized(&mut engine, c, 3, (80, 24)).expect_err("over the budget");
    assert!(refused.contains("memory budget"), "{refused}");
    let refused = spawn_sized(&mut engine, c, 4, (1024, 512)).expect_err("over the budget");
    assert!(refused.contains("memory budget"), "{refused}");
    // B has a little history, A a full one: 40 chunks of 100 full lines (8,100 bytes each).
    let line: Vec<u8> = (0..79u8).map(|i| b'!' + i % 94).chain(*b"\r\n").collect();
    let chunk = line.repeat(100);
    engine.handle(
        Instant::ZERO,
        ServerEvent::PtyOutput {
            terminal: b,
            bytes: &chunk,
        },
    );
    for _ in 0..40 {
        engine.handle(
            Instant::ZERO,
            ServerEvent::PtyOutput {
                terminal: a,
                bytes: &chunk,
            },
        );
        while engine.poll_action().is_some() {}
        assert!(
            engine.models_bytes() <= budget,
            "{} > {budget}",
            engine.models_bytes()
        );
    }
    // A, holding the most history, lost it (more than once) and holds what came since; B,
    // holding less, kept its 77 rows.
    let kept = scrollback_rows(&mut engine, c, a);
    assert!((1..4000).contains(&kept), "{kept}");
    assert_eq!(scrollback_rows(&mut engine, c, b), 77);
    // A resize whose screens would not fit grows along neither axis; one that shrinks is
    // taken as asked.
    let resize = |cols, rows| {
        Frame::TerminalResize(TerminalResize {
            terminal: a.into(),
            size: TerminalSize { cols, rows },
        })
    };
    assert_eq!(resized_to(&mut engine, c, &resize(1024, 512)), [(80, 24)]);
    assert_eq!(resized_to(&mut engine, c, &resize(1000, 10)), [(80, 10)]);
    assert_eq!(resized_to(&mut engine, c, &resize(60, 30)), [(60, 30)]);
    assert!(engine.models_bytes() <= budget);
}
