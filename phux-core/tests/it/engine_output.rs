//! Engine tests for output, bootstrap and bounded outbound queues (OUTPUT.*, BOOTSTRAP.*,
//! QUEUE.*, TERMINAL.ATTACH.*).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use phux_core::server::{ConnId, ServerConfig};
use phux_core::sim::{Harness, command_frame, hello_frame, server_id_for};
use phux_core::terminal_state::TerminalState;
use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::frame::{
    BootstrapCodec, ByteLimit, DetachReason, Hello, OutputMode, Ping, TombstoneReason,
};
use phux_proto::{Frame, TerminalId};

fn attach(h: &mut Harness, c: ConnId, t: &TerminalId) -> Vec<Frame> {
    assert_eq!(
        h.request(
            c,
            Command::AttachTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    h.recv(c)
}

fn outputs(frames: &[Frame]) -> Vec<(u64, Vec<u8>, u64, u64)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::TerminalOutput(o) => {
                Some((o.seq, o.bytes.clone(), o.stream.get(), o.bootstrap.get()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn live_output_is_contiguous_exact_and_after_ready() {
    // [OUTPUT.SEQ.1] [OUTPUT.SEQ.2] [OUTPUT.BYTES.1] [BOOTSTRAP.READY.1] [BOOTSTRAP.BEGIN.3]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(b"one");
    h.settle();
    h.pty(&t).script(b"two");
    h.settle();
    let boot = attach(&mut h, c, &t);
    let Some(Frame::BootstrapBegin(begin)) = boot.first() else {
        panic!("{boot:?}")
    };
    assert_eq!(begin.base_seq, 2);
    for chunk in [&b"three"[..], b"\x1b[31mfour", b"five\r\n"] {
        h.pty(&t).script(chunk);
        h.settle();
    }
    let out = outputs(&h.recv(c));
    assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3, 4, 5]);
    let bytes: Vec<u8> = out.iter().flat_map(|o| o.1.clone()).collect();
    assert_eq!(bytes, b"three\x1b[31mfourfive\r\n");
    assert!(
        out.iter()
            .all(|o| o.2 == begin.stream.get() && o.3 == begin.bootstrap.get())
    );
}

#[test]
fn bootstrap_frames_in_order_with_small_chunks() {
    // [BOOTSTRAP.BEGIN.1] [BOOTSTRAP.BEGIN.2] [BOOTSTRAP.BEGIN.3] [BOOTSTRAP.CHUNK.1]
    // [BOOTSTRAP.READY.1] [TERMINAL.ATTACH.1]
    let mut h = Harness::new();
    let c = h.connect();
    let Frame::Hello(mut hello) = hello_frame() else {
        unreachable!()
    };
    hello.capabilities.max_chunk_bytes = ByteLimit::new(16).unwrap();
    h.send(c, &Frame::Hello(hello));
    h.settle();
    h.recv(c);
    let t = h.spawn(c);
    let u = h.spawn(c);
    let fresh = attach(&mut h, c, &u);
    let Some(Frame::BootstrapBegin(b0)) = fresh.first() else {
        panic!("{fresh:?}")
    };
    assert_eq!(b0.base_seq, 0, "no output yet");
    h.pty(&t)
        .script(b"\x1b[1;32mhello world, this is long enough for chunks\r\nsecond line");
    h.settle();
    let boot = attach(&mut h, c, &t);
    let Some(Frame::BootstrapBegin(begin)) = boot.first() else {
        panic!("{boot:?}")
    };
    assert_eq!(begin.codec, BootstrapCodec::SynthesizedVtV1);
    assert_eq!(begin.output_mode, OutputMode::Raw);
    assert_eq!((begin.cols, begin.rows), (80, 24));
    assert_ne!(begin.stream, b0.stream, "distinct streams per attachment");
    let chunks: Vec<_> = boot
        .iter()
        .filter_map(|f| match f {
            Frame::BootstrapChunk(ch) => Some(ch.clone()),
            _ => None,
        })
        .collect();
    assert!(chunks.len() > 2);
    for (i, ch) in chunks.iter().enumerate() {
        assert_eq!(ch.chunk_seq as usize, i);
        assert!(ch.payload.len() <= 16);
        assert_eq!((ch.stream, ch.bootstrap), (begin.stream, begin.bootstrap));
    }
    let ready = boot
        .iter()
        .position(|f| matches!(f, Frame::BootstrapReady(_)))
        .unwrap();
    let last_chunk = boot
        .iter()
        .rposition(|f| matches!(f, Frame::BootstrapChunk(_)))
        .unwrap();
    assert!(last_chunk < ready);
    assert!(matches!(&boot[ready], Frame::BootstrapReady(r) if r.history_cursor.is_none()));
}

#[test]
fn bootstrap_payload_rebuilds_the_screen() {
    // [BOOTSTRAP.CHUNK.2]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(
        b"\x1b]2;T\x07\x1b[?1h\x1b[?2004hplain \x1b[1;4;31mred bold\x1b[0m\r\nnext\x1b[5;10H*",
    );
    h.settle();
    let boot = attach(&mut h, c, &t);
    let payload: Vec<u8> = boot
        .iter()
        .filter_map(|f| match f {
            Frame::BootstrapChunk(ch) => Some(ch.payload.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    let mut fresh = TerminalState::new(80, 24, 100);
    fresh.ingest(&payload).unwrap();
    let r = h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: None,
            cells: true,
        },
    );
    let Some(CommandResult::OkWith(CommandValue::Json(server))) = r else {
        panic!("{r:?}")
    };
    let mut server: serde_json::Value = serde_json::from_str(&server).unwrap();
    let mut rebuilt: serde_json::Value =
        serde_json::from_str(&fresh.screen_json(t.local().unwrap(), None, true)).unwrap();
    server.as_object_mut().unwrap().remove("soft_wrap");
    rebuilt.as_object_mut().unwrap().remove("soft_wrap");
    assert_eq!(rebuilt, server);
    assert_eq!(fresh.modes(), {
        let mut s = TerminalState::new(80, 24, 100);
        s.ingest(b"\x1b[?1h\x1b[?2004h").unwrap();
        s.modes()
    });
}

#[test]
fn reattach_tombstones_and_restarts_on_the_same_stream() {
    // [TERMINAL.ATTACH.3] [BOOTSTRAP.TOMBSTONE.1] [BOOTSTRAP.TOMBSTONE.2] [BOOTSTRAP.TOMBSTONE.3]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    let boot = attach(&mut h, c, &t);
    let Some(Frame::BootstrapBegin(first)) = boot.first().cloned() else {
        panic!()
    };
    h.pty(&t).script(b"x");
    h.settle();
    h.recv(c);
    let again = attach(&mut h, c, &t);
    let Some(Frame::BootstrapTombstone(tomb)) = again.first() else {
        panic!("{again:?}")
    };
    assert_eq!(
        (
            tomb.stream,
            tomb.bootstrap,
            tomb.reason,
            tomb.last_valid_seq
        ),
        (
            first.stream,
            first.bootstrap,
            TombstoneReason::ExplicitReattach,
            1
        )
    );
    let Some(Frame::BootstrapBegin(second)) = again.get(1) else {
        panic!("{again:?}")
    };
    assert_eq!(second.stream, first.stream);
    assert_ne!(second.bootstrap, first.bootstrap);
    h.pty(&t).script(b"y");
    let out = outputs(&h.settle_recv(c));
    assert_eq!(
        out,
        vec![(2, b"y".to_vec(), first.stream.get(), second.bootstrap.get())]
    );
}

fn small_budgets(output: usize, control: usize) -> Harness {
    let mut config = ServerConfig::new(server_id_for(1));
    config.output_budget = output;
    config.control_budget = control;
    Harness::with_config(config)
}

#[test]
fn slow_reader_is_tombstoned_then_rebootstrapped_and_others_unaffected() {
    // [QUEUE.OUTPUT.1] [QUEUE.BOUND.1] [QUEUE.ISOLATION.1] [BOOTSTRAP.TOMBSTONE.1]
    // [BOOTSTRAP.TOMBSTONE.2] [BOOTSTRAP.TOMBSTONE.3] [BOOTSTRAP.TOMBSTONE.4]
    let mut h = small_budgets(2000, 64 * 1024);
    let slow = h.client();
    let fast = h.client();
    let t = h.spawn(slow);
    let boot = attach(&mut h, slow, &t);
    let Some(Frame::BootstrapBegin(first)) = boot.first().cloned() else {
        panic!()
    };
    attach(&mut h, fast, &t);
    h.stall_reader(slow);
    for i in 0..20u8 {
        h.pty(&t).script(&[b'a' + i; 300]);
        h.settle();
        let queued = h.server.queued_bytes(slow).unwrap();
        assert!(queued <= 2000 + 64 * 1024 + 400, "queue bound: {queued}");
    }
    let fast_out = outputs(&h.recv(fast));
    assert_eq!(fast_out.len(), 20, "the fast reader got everything");
    h.resume_reader(slow);
    h.settle();
    let got = h.recv(slow);
    let tomb = got
        .iter()
        .position(|f| matches!(f, Frame::BootstrapTombstone(_)))
        .expect("tombstone");
    let Frame::BootstrapTombstone(tb) = &got[tomb] else {
        unreachable!()
    };
    assert_eq!(tb.reason, TombstoneReason::OutboundGap);
    let before = outputs(&got[..tomb]);
    assert_eq!(
        tb.last_valid_seq,
        before.last().map_or(first.base_seq, |o| o.0)
    );
    assert!(before.iter().all(|o| o.3 == first.bootstrap.get()));
    // Nothing of the old bootstrap after its tombstone; a new bootstrap on the same stream.
    let after = &got[tomb + 1..];
    let Some(Frame::BootstrapBegin(next)) =
        after.iter().find(|f| matches!(f, Frame::BootstrapBegin(_)))
    else {
        panic!("{after:?}")
    };
    assert_eq!(next.stream, first.stream);
    assert_ne!(next.bootstrap, first.bootstrap);
    assert!(outputs(after).iter().all(|o| o.3 == next.bootstrap.get()));
    h.pty(&t).script(b"tail");
    let out = outputs(&h.settle_recv(slow));
    assert_eq!(
        out,
        vec![(
            21,
            b"tail".to_vec(),
            first.stream.get(),
            next.bootstrap.get()
        )]
    );
}

#[test]
fn each_tombstoned_stream_starts_over_once_when_the_reader_catches_up() {
    // [QUEUE.OUTPUT.1] [BOOTSTRAP.TOMBSTONE.4] [TERMINAL.ATTACH.3] Two terminals' streams fall
    // behind; one is re-attached while the reader is still stalled and falls behind again.
    // Once the reader catches up, each stream has exactly one new bootstrap after its last
    // tombstone, and live output follows on it.
    let mut h = small_budgets(2000, 64 * 1024);
    let slow = h.client();
    let owner = h.client();
    let terminals = [h.spawn(owner), h.spawn(owner)];
    for t in &terminals {
        attach(&mut h, slow, t);
    }
    h.stall_reader(slow);
    let flood = |h: &mut Harness, t: &TerminalId| {
        for i in 0..10u8 {
            h.pty(t).script(&[b'a' + i; 300]);
            h.settle();
        }
    };
    for t in &terminals {
        flood(&mut h, t);
    }
    let reattach = Command::AttachTerminal {
        terminal: terminals[0].clone(),
    };
    let rid = h.next_request_id();
    h.send(slow, &command_frame(rid, reattach));
    h.settle();
    flood(&mut h, &terminals[0]);
    h.resume_reader(slow);
    h.settle();
    let got = h.recv(slow);
    for t in &terminals {
        let last_tombstone = got
            .iter()
            .rposition(|f| matches!(f, Frame::BootstrapTombstone(tb) if &tb.terminal == t))
            .expect("the stream fell behind");
        let begins = got[last_tombstone..]
            .iter()
            .filter(|f| matches!(f, Frame::BootstrapBegin(b) if &b.terminal == t))
            .count();
        assert_eq!(begins, 1, "{t:?}: {got:?}");
    }
    for t in &terminals {
        h.pty(t).script(b"tail");
    }
    let tails: Vec<Vec<u8>> = h
        .settle_recv(slow)
        .iter()
        .filter_map(|f| match f {
            Frame::TerminalOutput(o) => Some(o.bytes.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tails, [b"tail".to_vec(), b"tail".to_vec()]);
}

#[test]
fn control_overflow_detaches_and_closes_only_that_client() {
    // [QUEUE.CONTROL.1] [QUEUE.CONTROL.2] [QUEUE.CONTROL.3] [EVENT.DELIVERY.2] [ERROR.FATAL.3]
    let mut h = small_budgets(4 * 1024 * 1024, 1000);
    let slow = h.client();
    let other = h.client();
    h.stall_reader(slow);
    for nonce in 0..200 {
        h.send(slow, &Frame::Ping(Ping { nonce }));
        h.settle();
        if !h.conn(slow).is_open() {
            break;
        }
    }
    assert!(!h.conn(slow).is_open(), "closed at once, unread or not");
    h.resume_reader(slow);
    let got = h.recv(slow);
    let pongs = got.iter().filter(|f| matches!(f, Frame::Pong(_))).count();
    assert!(pongs > 0);
    // No control frame was dropped before the DETACHED: the nonces are contiguous.
    let nonces: Vec<u64> = got
        .iter()
        .filter_map(|f| match f {
            Frame::Pong(p) => Some(p.nonce),
            _ => None,
        })
        .collect();
    assert_eq!(nonces, (0..nonces.len() as u64).collect::<Vec<_>>());
    assert!(
        matches!(got.last(), Some(Frame::Detached(d)) if d.reason == Some(DetachReason::PROTOCOL_ERROR) && !d.message.is_empty()),
        "{:?}",
        got.last()
    );
    h.send(other, &Frame::Ping(Ping { nonce: 1 }));
    assert_eq!(h.settle_recv(other).len(), 1);
}

#[test]
fn a_reply_larger_than_the_control_budget_reaches_a_reader_and_a_pile_detaches() {
    // [QUEUE.BOUND.1] [QUEUE.CONTROL.2]
    let mut h = small_budgets(4 * 1024 * 1024, 512);
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(&[b'x'; 80 * 20]);
    h.settle();
    let screen = |t: &TerminalId| Command::GetScreen {
        terminal: t.clone(),
        request_scrollback: None,
        cells: false,
    };
    // One reply of well over 512 bytes, nothing queued ahead of it: delivered.
    let r = h.request(c, screen(&t));
    let Some(CommandResult::OkWith(CommandValue::Json(json))) = r else {
        panic!("{r:?}")
    };
    assert!(json.len() > 1024 && json.contains(&"x".repeat(80)));
    assert!(h.conn(c).is_open(), "a reading client is not detached");
    // The same replies piling up unread: the second finds the budget spent ahead of it.
    h.stall_reader(c);
    for id in 0..3 {
        h.send(
            c,
            &Frame::Command(phux_proto::frame::CommandFrame {
                request_id: 100 + id,
                command: screen(&t),
            }),
        );
        h.settle();
    }
    assert!(
        !h.conn(c).is_open(),
        "detached once unread replies pile past the budget"
    );
    let bound = h.server.queued_bytes(c).unwrap_or(0);
    assert!(
        bound < 3 * 4096,
        "nothing queued past the DETACHED: {bound}"
    );
}

#[test]
fn hello_with_large_chunks_still_streams() {
    // [OUTPUT.ATTACH.1]: a client that never attached sees no output.
    let mut h = Harness::new();
    let c = h.client();
    let watcher = h.connect();
    let Frame::Hello(hello) = hello_frame() else {
        unreachable!()
    };
    let _: Hello = hello.clone();
    h.send(watcher, &Frame::Hello(hello));
    h.settle();
    h.recv(watcher);
    let t = h.spawn(c);
    h.pty(&t).script(b"private");
    h.settle();
    assert!(outputs(&h.recv(watcher)).is_empty());
}

#[test]
fn viewers_of_a_chunk_share_one_encoding_and_each_gets_its_own_stream() {
    // [OUTPUT.SEQ.2] [OUTPUT.BYTES.1] [QUEUE.ISOLATION.1]
    let mut h = Harness::new();
    let viewers = [h.client(), h.client(), h.client()];
    let t = h.spawn(viewers[0]);
    let begins: Vec<_> = viewers
        .iter()
        .map(|&v| match attach(&mut h, v, &t).first() {
            Some(Frame::BootstrapBegin(b)) => (b.stream.get(), b.bootstrap.get()),
            other => panic!("{other:?}"),
        })
        .collect();
    h.pty(&t).script(b"one chunk for all");
    h.settle();
    for (&v, &(stream, bootstrap)) in viewers.iter().zip(&begins) {
        assert_eq!(
            outputs(&h.recv(v)),
            vec![(1, b"one chunk for all".to_vec(), stream, bootstrap)]
        );
    }
    // One head, encoded once, went to all three.
    let sends = std::mem::take(&mut h.shared_sends);
    assert_eq!(sends.iter().map(|s| s.0).collect::<Vec<_>>(), viewers);
    assert!(sends.iter().all(|s| s.1 == sends[0].1));

    // A viewer that stops reading is left out once tombstoned; the other two still share.
    // A lone viewer's frame is its own.
    let mut h = small_budgets(2000, 64 * 1024);
    let [a, b] = [h.client(), h.client()];
    let t = h.spawn(a);
    attach(&mut h, a, &t);
    attach(&mut h, b, &t);
    h.stall_reader(b);
    for i in 0..10u8 {
        h.pty(&t).script(&[b'a' + i; 300]);
        h.settle();
    }
    assert_eq!(outputs(&h.recv(a)).len(), 10);
    assert!(h.recv(b).is_empty(), "a stalled reader got nothing yet");
    let sends = std::mem::take(&mut h.shared_sends);
    assert!(sends.iter().any(|s| s.0 == b), "shared while both streamed");
    h.pty(&t).script(b"after");
    h.settle();
    assert_eq!(
        outputs(&h.recv(a)).last().map(|o| o.1.clone()),
        Some(b"after".to_vec())
    );
    assert_eq!(
        h.shared_sends,
        vec![],
        "only one live viewer: nothing to share"
    );
}

#[test]
fn a_client_that_reattaches_without_reading_holds_a_bounded_queue() {
    // [QUEUE.BOOTSTRAP.1] [QUEUE.BOUND.1] [TERMINAL.ATTACH.3]
    let config = ServerConfig::new(server_id_for(1));
    let (output, control) = (config.output_budget, config.control_budget);
    let mut h = Harness::with_config(config);
    let c = h.client();
    let mut spawn = phux_proto::frame::SpawnTerminal::new(0, phux_proto::GroupId(1));
    spawn.initial_size = Some(phux_proto::frame::TerminalSize {
        cols: 1024,
        rows: 512,
    });
    let t = h.spawn_with(c, spawn);
    // A screen whose bootstrap is over half a megabyte: 200 of them would be 100 MB.
    let mut screen = b"\x1b[7m".to_vec();
    screen.extend(std::iter::repeat_n(b'x', 1024 * 512 - 1));
    h.pty(&t).script(&screen);
    h.settle();
    h.recv(c);
    h.stall_reader(c);
    let attaches = 200u32;
    let mut peak = 0;
    for rid in 1000..1000 + attaches {
        let attach = Command::AttachTerminal {
            terminal: t.clone(),
        };
        h.send(c, &command_frame(rid, attach));
        h.settle();
        peak = peak.max(h.conn(c).unread_bytes());
    }
    // One bootstrap may pass the output budget when it is queued behind less than half of it.
    let bootstrap = 1024 * 512 + 64 * 1024;
    assert!(
        peak <= output + bootstrap + control,
        "{peak} bytes queued for a client that never reads"
    );
    assert!(h.conn(c).is_open());
    // Once it reads, every ATTACH is answered and the newest bootstrap completes.
    h.resume_reader(c);
    h.settle();
    let frames = h.recv(c);
    let oks = frames
        .iter()
        .filter(|f| {
            matches!(f, Frame::CommandResult(r)
                if r.request_id >= 1000 && r.result == CommandResult::Ok)
        })
        .count();
    assert_eq!(oks, attaches as usize);
    let last_ok = frames
        .iter()
        .rposition(|f| matches!(f, Frame::CommandResult(r) if r.request_id == 999 + attaches))
        .unwrap();
    let Some(Frame::BootstrapReady(ready)) = frames[last_ok..]
        .iter()
        .rfind(|f| matches!(f, Frame::BootstrapReady(_)))
    else {
        panic!("no bootstrap after the last ATTACH")
    };
    // Nothing of the deferred generations was ever sent, the last one's frames all were.
    let begins = frames[last_ok..]
        .iter()
        .filter(|f| matches!(f, Frame::BootstrapBegin(b) if b.bootstrap == ready.bootstrap))
        .count();
    assert_eq!(begins, 1);
}

#[test]
fn past_the_server_wide_budget_the_heaviest_reader_is_detached() {
    // [SERVER.LIMIT.5]
    let mut config = ServerConfig::new(server_id_for(1));
    config.queued_budget = 300 * 1024;
    let mut h = Harness::with_config(config);
    let (lazy, busy, reader) = (h.client(), h.client(), h.client());
    let t = h.spawn(reader);
    for c in [lazy, busy, reader] {
        attach(&mut h, c, &t);
    }
    h.stall_reader(lazy);
    h.stall_reader(busy);
    // `busy` reads a little; `lazy` nothing: `lazy` holds the most when the budget is passed.
    let chunk = vec![b'z'; 16 * 1024];
    for _ in 0..8 {
        h.pty(&t).script(&chunk);
        h.settle();
        h.read_some(busy, 8 * 1024);
    }
    assert!(h.conn(lazy).is_open() && h.conn(busy).is_open());
    for _ in 0..8 {
        h.pty(&t).script(&chunk);
        h.settle();
        h.read_some(busy, 8 * 1024);
    }
    h.resume_reader(lazy);
    h.settle();
    let frames = h.recv(lazy);
    assert!(
        frames.iter().any(|f| matches!(f, Frame::Error(e)
            if e.code == phux_proto::ErrorCode::RESOURCE_EXHAUSTED)),
        "{:?}",
        frames.last()
    );
    assert!(matches!(frames.last(), Some(Frame::Detached(_))));
    // The others are served: the reader got every byte.
    let got: usize = outputs(&h.recv(reader)).iter().map(|o| o.1.len()).sum();
    assert_eq!(got, 16 * 16 * 1024);
    assert!(h.conn(reader).is_open() && h.conn(busy).is_open());
}

#[test]
fn frames_under_way_count_against_the_server_wide_budget() {
    // [SERVER.LIMIT.5] Each connection within the frame limit, together past the budget: the
    // one holding the most is failed and its frame dropped; the others keep their service.
    let mut config = ServerConfig::new(server_id_for(1));
    config.queued_budget = 1024 * 1024;
    let mut h = Harness::with_config(config);
    let (small, large, honest) = (h.client(), h.client(), h.client());
    // A command frame of 8 MiB announced; its body comes 64 KiB at a time.
    let mut header = (8u32 << 20).to_be_bytes().to_vec();
    header.push(0x31);
    h.send_raw(small, &header);
    h.send_raw(large, &header);
    let chunk = vec![0u8; 64 * 1024];
    for _ in 0..6 {
        h.send_raw(small, &chunk);
    }
    for _ in 0..9 {
        h.send_raw(large, &chunk);
    }
    h.settle();
    // 6 and 9 chunks: under the budget. One more each passes it.
    assert!(h.conn(small).is_open() && h.conn(large).is_open());
    h.send_raw(small, &chunk);
    h.send_raw(large, &chunk);
    h.settle();
    let frames = h.recv(large);
    assert!(
        frames.iter().any(|f| matches!(f, Frame::Error(e)
            if e.code == phux_proto::ErrorCode::RESOURCE_EXHAUSTED)),
        "{frames:?}"
    );
    assert!(matches!(frames.last(), Some(Frame::Detached(_))));
    // Its frame under way is dropped (the connection itself is gone once DETACHED is sent).
    assert!(h.server.buffered_bytes(large).is_none_or(|b| b == 0));
    assert!(h.conn(small).is_open());
    assert_eq!(h.server.buffered_bytes(small), Some(5 + 7 * 64 * 1024));
    h.send(honest, &Frame::Ping(Ping { nonce: 9 }));
    h.settle();
    assert!(
        h.recv(honest)
            .iter()
            .any(|f| matches!(f, Frame::Pong(p) if p.nonce == 9))
    );
}

#[test]
fn output_is_gathered_up_to_the_smallest_chunk_a_viewer_takes() {
    // [OUTPUT.GATHER.1]
    let mut h = Harness::new();
    let small = h.connect();
    let Frame::Hello(mut hello) = hello_frame() else {
        unreachable!()
    };
    hello.capabilities.max_chunk_bytes = ByteLimit::new(8192).unwrap();
    h.send(small, &Frame::Hello(hello));
    h.settle();
    h.recv(small);
    let t = h.spawn(small);
    let local = phux_core::server::LocalTerminal::of(&t).unwrap();
    // Nobody watches: only the screen model reads it, in chunks as large as the driver likes.
    let unwatched = h.server.output_gather_limit(local);
    assert!(unwatched > 8192, "{unwatched}");
    // A viewer bounds the chunk by what it negotiated, whether it waits for output or not
    // (the driver gathers only bulk reads, which are held for more to join them anyway).
    attach(&mut h, small, &t);
    assert_eq!(h.server.output_gather_limit(local), 8192);
    h.stall_reader(small);
    h.pty(&t).script(b"more output than the reader took");
    h.settle();
    assert!(h.server.queued_bytes(small).unwrap() > 0);
    assert_eq!(h.server.output_gather_limit(local), 8192);
    // The smallest of the viewers' chunks bounds it.
    let tiny = h.connect();
    let Frame::Hello(mut hello) = hello_frame() else {
        unreachable!()
    };
    hello.capabilities.max_chunk_bytes = ByteLimit::new(1024).unwrap();
    h.send(tiny, &Frame::Hello(hello));
    h.settle();
    h.recv(tiny);
    attach(&mut h, tiny, &t);
    assert_eq!(h.server.output_gather_limit(local), 1024);
    // Gone, it bounds nothing.
    h.disconnect(tiny);
    h.settle();
    assert_eq!(h.server.output_gather_limit(local), 8192);
    h.resume_reader(small);
    h.settle();
    let got = outputs(&h.recv(small));
    assert_eq!(
        got.last().map(|o| o.1.as_slice()),
        Some(&b"more output than the reader took"[..])
    );
}
