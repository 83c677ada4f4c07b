//! APPLY_INPUT steps.

use super::*;

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
fn apply_input_full_queue_is_resource_exhausted_and_leaves_no_record() {
    // [INPUT.APPLY.8] [INPUT.DEDUPE.9]
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_jobs_per_terminal = 1;
    let (mut h, c, t) = setup_with(config);
    occupy_queue(&mut h, c, &t);
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"a")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    // No binding was kept: another payload under the id is evaluated afresh.
    assert_eq!(
        code(&apply(&mut h, c, 1, &t, vec![paste(b"other")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
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

#[test]
fn apply_input_with_a_key_that_types_nothing_is_refused_whole() {
    // [INPUT.APPLY.13] [INPUT.DEDUPE.9]: a key that carries text the encoder cannot send
    // (phux 0.8 forbids control characters in `text`) refuses the batch at step 7: nothing
    // of it is written, the answer is 200, and no record binds the id.
    let (mut h, c, t) = setup();
    let mut silent = KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE);
    silent.text = Some("\u{3}".to_owned());
    let mut a = KeyEvent::press(PhysicalKey::KEY_A, ModSet::NONE);
    a.text = Some("a".to_owned());
    let r = apply(
        &mut h,
        c,
        1,
        &t,
        vec![InputEvent::Key(a.clone()), InputEvent::Key(silent)],
    );
    assert_eq!(code(&r), Some(ErrorCode::INVALID_COMMAND), "{r:?}");
    assert!(h.writes.is_empty());
    // The id is evaluated afresh: the same id with the good key alone is written.
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![InputEvent::Key(a)]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"a");
    // ROUTE_INPUT keeps phux's rule: OK, nothing written ([INPUT.ROUTE.3]).
    let mut silent = KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE);
    silent.text = Some("\u{1b}".to_owned());
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: InputEvent::Key(silent),
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
    h.settle();
    assert_eq!(h.pty(&t).read_log(), b"a");
}
