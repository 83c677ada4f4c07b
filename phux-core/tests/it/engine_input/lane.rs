//! lane.

use super::*;

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
