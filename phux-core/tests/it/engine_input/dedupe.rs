//! dedupe.

use super::*;

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

/// `clients` clients, each with its own terminal, each making `ops` operations that are
/// written (ids `client * 1_000_000 + n`); returns the clients and their terminals.
fn fill_with_written_operations(
    h: &mut Harness,
    spawner: ConnId,
    clients: usize,
    ops: u128,
) -> Vec<(ConnId, TerminalId)> {
    let peers: Vec<(ConnId, TerminalId)> = (0..clients)
        .map(|_| (h.client(), h.spawn(spawner)))
        .collect();
    h.log.set_enabled(false);
    for n in 0..ops {
        for (i, (c, t)) in peers.iter().enumerate() {
            let op = (i as u128 + 1) * 1_000_000 + n;
            h.send(*c, &command_frame(0, apply_input(op, t, vec![paste(b"n")])));
        }
        h.settle();
        for (c, _) in &peers {
            for frame in h.recv(*c) {
                if let Frame::CommandResult(r) = frame {
                    assert_eq!(r.result, CommandResult::Ok);
                }
            }
        }
    }
    h.log.set_enabled(true);
    peers
}

#[test]
fn full_ledger_refuses_new_ids_and_resolves_known_ones() {
    // [INPUT.DEDUPE.7] [INPUT.DEDUPE.8]: 65,536 records of written operations, 8,192 from each
    // of eight clients.
    let (mut h, c, t) = setup();
    let peers = fill_with_written_operations(&mut h, c, 8, 8192);
    let (first, first_t) = peers[0].clone();
    assert_eq!(
        code(&apply(&mut h, c, 70_000, &t, vec![paste(b"new")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    // A known id is still resolved: the cached result replayed, a conflict refused.
    assert_eq!(
        apply(&mut h, first, 1_000_000, &first_t, vec![paste(b"n")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        code(&apply(
            &mut h,
            first,
            1_000_001,
            &first_t,
            vec![paste(b"x")]
        )),
        Some(ErrorCode::INVALID_COMMAND)
    );
    assert!(h.pty(&t).read_log().is_empty());
    assert_eq!(h.pty(&first_t).read_log(), vec![b'n'; 8192]);
}

#[test]
fn one_client_holds_at_most_its_share_of_the_ledger() {
    // [INPUT.DEDUPE.12]: shares bind once the ledger is half full; one client then holds half.
    let (mut h, c, t) = setup();
    let peers = fill_with_written_operations(&mut h, c, 1, 32_768);
    let (flooder, flooder_t) = peers[0].clone();
    assert_eq!(
        code(&apply(&mut h, flooder, 5, &flooder_t, vec![paste(b"more")])),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    assert_eq!(h.pty(&flooder_t).read_log(), vec![b'n'; 32_768]);
    // Everyone else still has room.
    assert_eq!(
        apply(&mut h, c, 5, &t, vec![paste(b"honest")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"honest");
}

#[test]
fn requests_refused_before_a_terminal_occupy_no_record() {
    // [INPUT.DEDUPE.9] [INPUT.DEDUPE.7]: 70,000 ids for a terminal that does not exist, more
    // than the whole ledger, then an honest operation is written.
    let (mut h, c, t) = setup();
    h.log.set_enabled(false);
    let nowhere = TerminalId::Local(9999);
    let mut batch = Vec::new();
    for op in 1..=70_000u128 {
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
        apply(&mut h, c, 80_000, &t, vec![paste(b"honest")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"honest");
}

#[test]
fn refusal_before_handoff_leaves_no_record() {
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
    // The id is unbound again: another payload under it is evaluated, not a conflict.
    assert_eq!(
        code(&apply(&mut h, c, 3, &t, vec![paste(b"other")])),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    h.request(
        holder,
        Command::ReleaseInput {
            terminal: t.clone(),
        },
    );
    assert_eq!(
        apply(&mut h, c, 3, &t, vec![paste(b"other")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"other");
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
