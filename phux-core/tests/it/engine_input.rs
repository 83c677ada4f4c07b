//! Engine tests for input: INPUT_* frames, ROUTE_INPUT, APPLY_INPUT with the dedupe ledger
//! and the acknowledgement lane, paste safety and the canonical-line guard
//! (INPUT.*, COMMAND.ORDER.3).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use std::time::Duration;

use phux_core::server::{ConnId, ServerConfig};
use phux_core::sim::{
    ChildMode, Harness, apply_input, command_frame, error_code, paste, server_id_for,
    untrusted_paste,
};
use phux_proto::command::{AcquireMode, Command, CommandResult};
use phux_proto::frame::{InputFocus, InputPaste, ViewportInfo, ViewportResize};
use phux_proto::input::{
    FocusEvent, InputEvent, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent, PasteEvent,
    PasteTrust, PhysicalKey,
};
use phux_proto::{ErrorCode, Frame, TerminalId};

/// A harness with one HELLO'd client and one Record-mode terminal.
fn setup() -> (Harness, ConnId, TerminalId) {
    setup_with(ServerConfig::new(server_id_for(1)))
}

fn setup_with(config: ServerConfig) -> (Harness, ConnId, TerminalId) {
    let mut h = Harness::with_config(config);
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    (h, c, t)
}

fn apply(
    h: &mut Harness,
    c: ConnId,
    op: u128,
    t: &TerminalId,
    events: Vec<InputEvent>,
) -> Option<CommandResult> {
    h.request(c, apply_input(op, t, events))
}

fn code(r: &Option<CommandResult>) -> Option<ErrorCode> {
    r.as_ref().and_then(error_code)
}

fn input_paste(t: &TerminalId, data: &[u8], trust: PasteTrust) -> Frame {
    Frame::InputPaste(InputPaste {
        terminal: t.clone(),
        event: PasteEvent {
            trust,
            data: data.to_vec(),
        },
    })
}

/// Keeps the terminal's pending-job queue occupied: a fire-and-forget job whose completion is
/// lost stays pending at the engine forever.
fn occupy_queue(h: &mut Harness, c: ConnId, t: &TerminalId) {
    h.pty(t).lose_next_completions(1);
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"~"),
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
}

// ---- APPLY_INPUT decode bounds ----------------------------------------------------------------

#[test]
fn apply_input_with_zero_operation_id_is_malformed() {
    // [INPUT.APPLY.1] [ERROR.COMMAND.1]
    let (mut h, c, t) = setup();
    let mut bytes = command_frame(
        5,
        apply_input(
            0x1111_1111_1111_1111_1111_1111_1111_1111,
            &t,
            vec![paste(b"x")],
        ),
    )
    .to_bytes();
    let at = bytes.windows(16).position(|w| w == [0x11; 16]).unwrap();
    bytes[at..at + 16].fill(0);
    h.send_raw(c, &bytes);
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(5) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
    assert!(h.writes.is_empty());
}

#[test]
fn apply_input_with_257_events_is_malformed() {
    // [INPUT.APPLY.1]
    let (mut h, c, t) = setup();
    let events = vec![InputEvent::Focus(FocusEvent::Gained); 257];
    h.send(c, &command_frame(6, apply_input(1, &t, events)));
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(6) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
}

#[test]
fn apply_input_over_64k_command_value_is_malformed() {
    // [INPUT.APPLY.1]
    let (mut h, c, t) = setup();
    h.send(
        c,
        &command_frame(7, apply_input(1, &t, vec![paste(&vec![b'a'; 65_536])])),
    );
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(7) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
    assert!(h.conn(c).is_open());
}

// ---- APPLY_INPUT steps --------------------------------------------------------------------------

#[test]
fn apply_input_ok_after_the_write_completes() {
    // [INPUT.APPLY.9] [INPUT.APPLY.5] [INPUT.ORDER.1]: not attached; OK only once written.
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(2);
    h.pty(&t).stall();
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(1, &t, vec![paste(b"ab"), paste(b"cd")])),
    );
    h.settle();
    assert_eq!(
        h.take_result(c, rid),
        None,
        "no result while bytes wait for the PTY"
    );
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.take_result(c, rid), Some(CommandResult::Ok));
    assert_eq!(h.writes.len(), 1, "one batch is one job");
    assert_eq!(h.writes[0].bytes, b"abcd");
    assert_eq!(h.pty(&t).read_log(), b"abcd");
}

#[test]
fn apply_input_empty_job_is_ok_in_its_turn() {
    // [INPUT.APPLY.10]: a focus event with focus reporting off encodes to nothing.
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"xyz"),
        },
    );
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(
            rid,
            apply_input(2, &t, vec![InputEvent::Focus(FocusEvent::Gained)]),
        ),
    );
    h.settle();
    assert_eq!(h.take_result(c, rid), None, "behind the stalled job");
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.take_result(c, rid), Some(CommandResult::Ok));
}

#[test]
fn apply_input_zero_events_is_invalid_without_binding() {
    // [INPUT.APPLY.3] [INPUT.APPLY.2]
    let (mut h, c, t) = setup();
    assert_eq!(
        code(&apply(&mut h, c, 9, &t, vec![])),
        Some(ErrorCode::INVALID_COMMAND)
    );
    // No binding was made: the id is fresh for a real payload.
    assert_eq!(
        apply(&mut h, c, 9, &t, vec![paste(b"q")]),
        Some(CommandResult::Ok)
    );
}

#[test]
fn apply_input_lane_is_checked_before_the_count() {
    // [INPUT.APPLY.2] [INPUT.LANE.1]
    let (mut h, c, t) = setup();
    h.pty(&t).lose_next_completions(1);
    assert_eq!(apply(&mut h, c, 1, &t, vec![paste(b"a")]), None);
    assert_eq!(
        code(&apply(&mut h, c, 2, &t, vec![])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
}

#[test]
fn apply_input_unknown_and_satellite_terminals() {
    // [INPUT.APPLY.4]
    let (mut h, c, _) = setup();
    assert_eq!(
        code(&apply(
            &mut h,
            c,
            1,
            &TerminalId::Local(77),
            vec![paste(b"a")]
        )),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    let sat = TerminalId::Satellite {
        host: "x".into(),
        id: 1,
    };
    assert_eq!(
        code(&apply(&mut h, c, 2, &sat, vec![paste(b"a")])),
        Some(ErrorCode::UNSUPPORTED_SATELLITE_ROUTE)
    );
}

#[test]
fn apply_input_lease_is_checked_before_paste_safety() {
    // [INPUT.APPLY.2] [LEASE.GATE.3]
    let (mut h, c, t) = setup();
    let other = h.client();
    h.request(
        other,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        },
    );
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![untrusted_paste(b"a\nb")])),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
}

#[test]
fn apply_input_encoded_over_64k_is_invalid_command() {
    // [INPUT.APPLY.7]: kitty flags 24 report every key with its text as decimal code points,
    // so two 30 KB keys of CJK text encode to far more than 64 KiB.
    let (mut h, c, t) = setup();
    h.pty(&t).script(b"\x1b[>24u");
    h.settle();
    let text: String = std::iter::repeat_n('\u{4e00}', 10_000).collect();
    let mut key = KeyEvent::press(PhysicalKey::KEY_A, ModSet::NONE);
    key.text = Some(text);
    let r = apply(
        &mut h,
        c,
        1,
        &t,
        vec![InputEvent::Key(key.clone()), InputEvent::Key(key)],
    );
    assert_eq!(code(&r), Some(ErrorCode::INVALID_COMMAND), "{r:?}");
    assert!(h.writes.is_empty());
}

#[test]
fn apply_input_full_queue_is_resource_exhausted_and_keeps_the_binding() {
    // [INPUT.APPLY.8] [INPUT.DEDUPE.9]
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_jobs_per_terminal = 1;
    let (mut h, c, t) = setup_with(config);
    occupy_queue(&mut h, c, &t);
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"a")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"other")])),
        Some(ErrorCode::INVALID_COMMAND)
    );
}

#[test]
fn apply_input_not_written_when_the_pty_goes_first() {
    // [INPUT.APPLY.11] [INPUT.DEDUPE.10]
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"zz"),
        },
    );
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(3, &t, vec![paste(b"abc")])),
    );
    h.settle();
    assert_eq!(h.take_result(c, rid), None);
    h.pty(&t).exit(0);
    h.settle();
    assert_eq!(
        code(&h.take_result(c, rid)),
        Some(ErrorCode::INPUT_NOT_WRITTEN)
    );
    assert_eq!(h.pty(&t).read_count(b"abc"), 0);
}

#[test]
fn apply_input_delivery_unknown_when_the_write_breaks_part_way() {
    // [INPUT.APPLY.12] [INPUT.DEDUPE.10]
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(2);
    h.pty(&t).stall();
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(3, &t, vec![paste(b"abcdef")])),
    );
    h.settle();
    h.pty(&t).exit(1);
    h.settle();
    assert_eq!(
        code(&h.take_result(c, rid)),
        Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
    );
}

// ---- dedupe ----------------------------------------------------------------------------------

#[test]
fn retry_replays_the_cached_result_without_writing() {
    // [INPUT.DEDUPE.2] [INPUT.DEDUPE.3] [INPUT.DEDUPE.1]: another client, same id, same payload.
    let (mut h, c, t) = setup();
    let other = h.client();
    assert_eq!(
        apply(&mut h, c, 42, &t, vec![paste(b"once")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        apply(&mut h, other, 42, &t, vec![paste(b"once")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_count(b"once"), 1);
    assert_eq!(h.writes.len(), 1);
}

#[test]
fn cached_error_replays_code_and_message() {
    // [INPUT.DEDUPE.3] [INPUT.CANON.4]
    let (mut h, c, t) = setup();
    h.pty(&t).set_canonical(true);
    let big = vec![b'x'; 5000];
    let first = apply(&mut h, c, 5, &t, vec![paste(&big)]);
    assert_eq!(code(&first), Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED));
    h.pty(&t).set_canonical(false);
    let again = apply(&mut h, c, 5, &t, vec![paste(&big)]);
    assert_eq!(again, first, "the cached final result, message included");
    assert!(h.pty(&t).read_log().is_empty());
}

#[test]
fn same_payload_ignores_request_id_and_unknown_fields() {
    // [INPUT.DEDUPE.4]: the retry carries an extra unknown TLV field in the COMMAND frame.
    let (mut h, c, t) = setup();
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    let mut bytes = command_frame(900, apply_input(8, &t, vec![paste(b"p")])).to_bytes();
    bytes.extend_from_slice(&[0x09, 0x04, 0x01, 0x00]);
    let len = u32::try_from(bytes.len() - 4).unwrap();
    bytes[..4].copy_from_slice(&len.to_be_bytes());
    h.send_raw(c, &bytes);
    h.settle();
    assert_eq!(h.take_result(c, 900), Some(CommandResult::Ok));
    assert_eq!(h.writes.len(), 1);
}

#[test]
fn same_id_other_payload_is_invalid_and_the_record_stays() {
    // [INPUT.DEDUPE.5]
    let (mut h, c, t) = setup();
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        code(&apply(&mut h, c, 8, &t, vec![paste(b"q")])),
        Some(ErrorCode::INVALID_COMMAND)
    );
    let t2 = h.spawn(c);
    assert_eq!(
        code(&apply(&mut h, c, 8, &t2, vec![paste(b"p")])),
        Some(ErrorCode::INVALID_COMMAND)
    );
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"p");
}

#[test]
fn ledger_records_last_at_least_600_seconds() {
    // [INPUT.DEDUPE.6]
    let (mut h, c, t) = setup();
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    h.advance(Duration::from_secs(599));
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_count(b"p"), 1);
}

#[test]
fn full_ledger_refuses_new_ids_and_resolves_known_ones() {
    // [INPUT.DEDUPE.7] [INPUT.DEDUPE.8]: 65,536 bindings made by step-4 refusals.
    let (mut h, c, t) = setup();
    h.log.set_enabled(false);
    let nowhere = TerminalId::Local(9999);
    let mut batch = Vec::new();
    for op in 1..=65_536u128 {
        batch.extend(command_frame(0, apply_input(op, &nowhere, vec![paste(b"n")])).to_bytes());
        if batch.len() > 60_000 {
            h.send_raw(c, &batch);
            batch.clear();
            h.settle();
            h.recv(c);
        }
    }
    h.send_raw(c, &batch);
    h.settle();
    h.recv(c);
    h.log.set_enabled(true);
    assert_eq!(
        code(&apply(&mut h, c, 70_000, &t, vec![paste(b"new")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    // A known id is still resolved: conflict, and the same payload re-evaluated.
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"n")])),
        Some(ErrorCode::INVALID_COMMAND)
    );
    assert_eq!(
        code(&apply(&mut h, c, 2, &nowhere, vec![paste(b"n")])),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    assert!(h.pty(&t).read_log().is_empty());
}

#[test]
fn refusal_before_handoff_keeps_only_the_binding() {
    // [INPUT.DEDUPE.9] [LEASE.GATE.3]
    let (mut h, c, t) = setup();
    let holder = h.client();
    h.request(
        holder,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        },
    );
    assert_eq!(
        code(&apply(&mut h, c, 3, &t, vec![paste(b"later")])),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    assert_eq!(
        code(&apply(&mut h, c, 3, &t, vec![paste(b"other")])),
        Some(ErrorCode::INVALID_COMMAND)
    );
    h.request(
        holder,
        Command::ReleaseInput {
            terminal: t.clone(),
        },
    );
    assert_eq!(
        apply(&mut h, c, 3, &t, vec![paste(b"later")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"later");
}

#[test]
fn not_written_is_cached_as_final() {
    // [INPUT.DEDUPE.10]: a retry of an operation answered 207 replays 207.
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"zz"),
        },
    );
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(3, &t, vec![paste(b"abc")])),
    );
    h.settle();
    h.pty(&t).exit(0);
    h.settle();
    assert_eq!(
        code(&h.take_result(c, rid)),
        Some(ErrorCode::INPUT_NOT_WRITTEN)
    );
    let t2 = h.spawn(c);
    let _ = t2;
    assert_eq!(
        code(&apply(&mut h, c, 3, &t, vec![paste(b"abc")])),
        Some(ErrorCode::INPUT_NOT_WRITTEN)
    );
}

#[test]
fn restart_presents_a_new_server_id() {
    // [INPUT.DEDUPE.11] [HELLO.OK.4]: the new incarnation has an empty ledger.
    let (mut h, c, t) = setup();
    assert_eq!(
        apply(&mut h, c, 8, &t, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
    h.restart_server();
    let d = h.connect();
    assert_ne!(h.hello(d).server_id, server_id_for(1));
    let t2 = h.spawn(d);
    assert_eq!(
        apply(&mut h, d, 8, &t2, vec![paste(b"p")]),
        Some(CommandResult::Ok)
    );
}

// ---- lane --------------------------------------------------------------------------------------

#[test]
fn lane_refuses_a_second_operation_and_a_same_id_retry_while_in_flight() {
    // [INPUT.LANE.1]
    let (mut h, c, t) = setup();
    let other = h.client();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    assert_eq!(apply(&mut h, c, 1, &t, vec![paste(b"slow")]), None);
    assert_eq!(
        code(&apply(&mut h, other, 2, &t, vec![paste(b"x")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"slow")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    // Another terminal is not affected.
    let t2 = h.spawn(c);
    assert_eq!(
        apply(&mut h, other, 3, &t2, vec![paste(b"y")]),
        Some(CommandResult::Ok)
    );
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.pty(&t).read_count(b"slow"), 1);
}

#[test]
fn lost_completion_is_delivery_unknown_after_5_seconds() {
    // [INPUT.LANE.2] [INPUT.LANE.4]
    let (mut h, c, t) = setup();
    h.pty(&t).lose_next_completions(1);
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(1, &t, vec![paste(b"lost")])),
    );
    h.advance(Duration::from_millis(4999));
    assert_eq!(h.take_result(c, rid), None);
    h.advance(Duration::from_millis(1));
    assert_eq!(
        code(&h.take_result(c, rid)),
        Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
    );
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"lost")])),
        Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
    );
    // The lane is free at once.
    assert_eq!(
        apply(&mut h, c, 2, &t, vec![paste(b"next")]),
        Some(CommandResult::Ok)
    );
}

#[test]
fn late_completion_changes_nothing() {
    // [INPUT.LANE.3]
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(1, &t, vec![paste(b"late")])),
    );
    h.advance(Duration::from_secs(6));
    assert_eq!(
        code(&h.take_result(c, rid)),
        Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
    );
    h.pty(&t).unstall();
    h.settle();
    let got = h.recv(c);
    assert!(
        !got.iter().any(|f| matches!(f, Frame::CommandResult(_))),
        "{got:?}"
    );
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"late")])),
        Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
    );
    assert_eq!(h.pty(&t).read_count(b"late"), 1);
}

#[test]
fn reconnect_retry_same_incarnation_is_never_written_twice() {
    // [INPUT.LANE.1] [INPUT.DEDUPE.2]: the connection drops mid-operation; the retry on a new
    // connection waits behind the lane, then gets the cached result.
    let (mut h, c, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    assert_eq!(apply(&mut h, c, 1, &t, vec![paste(b"once")]), None);
    h.disconnect(c);
    let d = h.client();
    assert_eq!(
        code(&apply(&mut h, d, 1, &t, vec![paste(b"once")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(
        apply(&mut h, d, 1, &t, vec![paste(b"once")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_count(b"once"), 1);
}

#[test]
fn drop_mid_frame_leaves_no_effect() {
    // [FRAME.STREAM.1] [DETACH.CLOSE.1]: half an APPLY_INPUT, then the connection drops.
    let (mut h, c, t) = setup();
    let bytes = command_frame(1, apply_input(1, &t, vec![paste(b"half")])).to_bytes();
    h.drop_after(c, bytes.len() / 2);
    h.send(
        c,
        &command_frame(1, apply_input(1, &t, vec![paste(b"half")])),
    );
    h.settle();
    assert!(h.writes.is_empty());
    let d = h.client();
    assert_eq!(
        apply(&mut h, d, 1, &t, vec![paste(b"half")]),
        Some(CommandResult::Ok)
    );
}

// ---- INPUT_* and ROUTE_INPUT -------------------------------------------------------------

#[test]
fn input_frames_need_an_attachment_and_get_no_reply() {
    // [INPUT.FRAME.1] [INPUT.FRAME.2] [INPUT.FRAME.3]
    let (mut h, c, t) = setup();
    h.send(c, &input_paste(&t, b"unattached", PasteTrust::Trusted));
    h.send(
        c,
        &input_paste(&TerminalId::Local(99), b"nowhere", PasteTrust::Trusted),
    );
    assert!(h.settle_recv(c).is_empty());
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.recv(c);
    h.send(c, &input_paste(&t, b"attached", PasteTrust::Trusted));
    h.send(c, &input_paste(&t, b"bad\n", PasteTrust::Untrusted));
    h.send(
        c,
        &Frame::InputFocus(InputFocus {
            terminal: t.clone(),
            event: FocusEvent::Gained,
        }),
    );
    assert!(h.settle_recv(c).is_empty());
    assert_eq!(h.pty(&t).read_log(), b"attached");
}

#[test]
fn input_frames_dropped_when_the_queue_is_full() {
    // [INPUT.FRAME.3]
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_jobs_per_terminal = 1;
    let (mut h, c, t) = setup_with(config);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    occupy_queue(&mut h, c, &t);
    h.send(c, &input_paste(&t, b"dropped", PasteTrust::Trusted));
    assert!(
        h.settle_recv(c)
            .iter()
            .all(|f| !matches!(f, Frame::CommandResult(_) | Frame::Error(_)))
    );
    assert_eq!(h.pty(&t).read_count(b"dropped"), 0);
}

#[test]
fn route_input_results() {
    // [INPUT.ROUTE.1] [INPUT.ROUTE.2] [INPUT.ROUTE.3] [INPUT.PASTE.SAFE.4]
    let (mut h, c, t) = setup();
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: TerminalId::Local(99),
            event: paste(b"a"),
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::TERMINAL_NOT_FOUND));
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"ok")
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: untrusted_paste(b"x\ny")
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: InputEvent::Focus(FocusEvent::Lost)
            }
        ),
        Some(CommandResult::Ok)
    );
    let holder = h.client();
    h.request(
        holder,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        },
    );
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"no"),
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::INPUT_LEASE_HELD));
    assert_eq!(h.pty(&t).read_log(), b"ok");
}

#[test]
fn jobs_for_one_terminal_keep_receive_order_across_clients() {
    // [COMMAND.ORDER.3] [INPUT.ORDER.1]
    let (mut h, a, t) = setup();
    let b = h.client();
    h.request(
        a,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.pty(&t).set_kernel_buffer(3);
    h.pty(&t).stall();
    h.send(a, &input_paste(&t, b"[1]", PasteTrust::Trusted));
    h.send(
        b,
        &command_frame(
            50,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"[2]"),
            },
        ),
    );
    h.send(
        a,
        &command_frame(51, apply_input(1, &t, vec![paste(b"[3"), paste(b"]")])),
    );
    h.send(
        b,
        &command_frame(
            52,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"[4]"),
            },
        ),
    );
    h.settle();
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.pty(&t).read_log(), b"[1][2][3][4]");
}

#[test]
fn a_stalled_terminal_delays_no_other() {
    // [INPUT.ORDER.2] [QUEUE.ISOLATION.1]
    let (mut h, c, t) = setup();
    let t2 = h.spawn(c);
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    assert_eq!(apply(&mut h, c, 1, &t, vec![paste(b"stuck")]), None);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t2.clone(),
        },
    );
    h.recv(c);
    assert_eq!(
        apply(&mut h, c, 2, &t2, vec![paste(b"free")]),
        Some(CommandResult::Ok)
    );
    h.pty(&t2).script(b"out");
    let got = h.settle_recv(c);
    assert!(
        got.iter()
            .any(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"out"))
    );
}

#[test]
fn mouse_cell_size_comes_from_the_last_viewport_resize() {
    // [INPUT.ATOM.1] [INPUT.ENCODE.MOUSE.6]: 1 x 1 pixel cells before any VIEWPORT_RESIZE.
    let (mut h, c, t) = setup();
    h.pty(&t).script(b"\x1b[?1000h\x1b[?1006h");
    h.settle();
    let click = InputEvent::Mouse(MouseEvent {
        action: MouseAction::Press,
        button: MouseButton::Left,
        mods: ModSet::NONE,
        x: 25.0,
        y: 15.0,
    });
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![click.clone()]),
        Some(CommandResult::Ok)
    );
    h.send(
        c,
        &Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols: 80,
                rows: 24,
                pixel_w: Some(800),
                pixel_h: Some(480),
            },
        }),
    );
    assert_eq!(
        apply(&mut h, c, 2, &t, vec![click]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.pty(&t).read_log(),
        b"\x1b[<0;26;16M\x1b[<0;3;1M".as_slice()
    );
}

// ---- paste safety and the canonical guard ---------------------------------------------------

#[test]
fn unsafe_untrusted_paste_is_refused_and_safe_ones_are_sanitized() {
    // [INPUT.PASTE.SAFE.1] [INPUT.PASTE.SAFE.2] [INPUT.PASTE.SAFE.3] [INPUT.ENCODE.PASTE.3]
    let (mut h, c, t) = setup();
    for (op, data) in [(1u128, &b"a\nb"[..]), (2, b"\xff\xfe"), (3, b"x\x1b[201~y")] {
        let r = apply(
            &mut h,
            c,
            op,
            &t,
            vec![paste(b"first"), untrusted_paste(data)],
        );
        assert_eq!(code(&r), Some(ErrorCode::UNSAFE_PASTE), "{data:?}");
    }
    assert!(
        h.pty(&t).read_log().is_empty(),
        "no byte of a refused batch"
    );
    assert_eq!(
        apply(&mut h, c, 4, &t, vec![untrusted_paste(b"ok\r\x1bz")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        apply(&mut h, c, 5, &t, vec![paste(b"t\nu")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"ok\r zt\ru");
}

#[test]
fn canonical_guard_counts_cr_only_under_icrnl() {
    // [INPUT.CANON.1] [INPUT.CANON.2] [INPUT.CANON.3] [INPUT.CANON.6]
    let (mut h, c, t) = setup();
    let mut data = vec![b'x'; 4000];
    data.push(b'\n'); // becomes CR (bracketed paste is off)
    data.extend(vec![b'y'; 4000]);
    h.pty(&t).set_canonical(true);
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![paste(&data)]),
        Some(CommandResult::Ok)
    );
    // The 4000 'y' that batch 1 left after its CR are still on the line: 96 more would make
    // it 4096 long, 95 more make it 4095.
    assert_eq!(
        code(&apply(&mut h, c, 2, &t, vec![paste(&[b'z'; 96])])),
        Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED)
    );
    assert_eq!(
        apply(&mut h, c, 3, &t, vec![paste(&[b'z'; 95])]),
        Some(CommandResult::Ok)
    );
    h.pty(&t).set_icrnl(false);
    assert_eq!(
        code(&apply(&mut h, c, 4, &t, vec![paste(&data)])),
        Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED)
    );
    h.pty(&t).set_canonical(false);
    assert_eq!(
        apply(&mut h, c, 5, &t, vec![paste(&vec![b'w'; 9000])]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log().len(), 8001 + 95 + 9000);
}

#[test]
fn canonical_refusal_of_fire_and_forget_input_is_silent() {
    // [INPUT.CANON.5]
    let (mut h, c, t) = setup();
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.recv(c);
    h.pty(&t).set_canonical(true);
    h.send(c, &input_paste(&t, &vec![b'x'; 5000], PasteTrust::Trusted));
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(&vec![b'y'; 5000])
            }
        ),
        Some(CommandResult::Ok)
    );
    let got = h.settle_recv(c);
    assert!(
        !got.iter()
            .any(|f| matches!(f, Frame::Error(_) | Frame::CommandResult(_))),
        "{got:?}"
    );
    assert!(h.pty(&t).read_log().is_empty());
}
