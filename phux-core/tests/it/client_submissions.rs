//! Submissions split into several operations are all-or-nothing in order (CLIENT.SUBMIT.N):
//! once a part is not delivered, no later part of it is ever sent, in this run or after a
//! crash, whatever the journal's age.

use phux_core::client::journal::{Incarnation, JournalRecord, Part, decode_journal};
use phux_core::client::outbox::{Input, Outbox, OutboxConfig, Resolution};
use phux_core::client::retry::{NotSentReason, UnknownReason};
use phux_core::time::Instant;
use phux_proto::command::ApplyInput;
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteTrust, PhysicalKey};
use phux_proto::{CommandResult, ErrorCode, OperationId, TerminalId};

fn inc() -> Incarnation {
    Incarnation::of(b"server")
}

fn now() -> Instant {
    Instant::from_millis(1_000)
}

fn t() -> TerminalId {
    TerminalId::Local(1)
}

fn ids() -> impl FnMut() -> OperationId {
    let mut n = 0u128;
    move || {
        n += 1;
        OperationId::from_u128(n).unwrap()
    }
}

fn error(code: ErrorCode) -> CommandResult {
    CommandResult::Error {
        code,
        message: "m".into(),
    }
}

fn not_sent_after(part: u32) -> Resolution {
    Resolution::NotSent(NotSentReason::EarlierPartFailed { part })
}

/// An outbox holding one submission of `parts` operations (256 key events each) to `t()`.
fn submitted(parts: usize) -> (Outbox, Vec<OperationId>) {
    let mut outbox = Outbox::new(OutboxConfig::default());
    let key = InputEvent::Key(KeyEvent {
        text: Some("x".into()),
        ..KeyEvent::press(PhysicalKey::KEY_X, ModSet::NONE)
    });
    let ops = outbox
        .submit(
            now(),
            inc(),
            t(),
            Input::Events(vec![key; 256 * parts]),
            ids(),
        )
        .unwrap();
    assert_eq!(ops.len(), parts);
    (outbox, ops)
}

fn resolved_ops(resolved: &[(ApplyInput, Resolution)]) -> Vec<(OperationId, Resolution)> {
    resolved
        .iter()
        .map(|(input, r)| (input.operation_id, r.clone()))
        .collect()
}

fn journal(outbox: &mut Outbox) -> Vec<JournalRecord> {
    std::iter::from_fn(|| outbox.poll_journal()).collect()
}

// [CLIENT.SUBMIT.1] Every part names its submission and its place; [CLIENT.SUBMIT.2] a
// refused first part ends the submission: the later parts are reported not sent, in order,
// with the refusal, and are never offered for sending.
#[test]
fn client_submit_2_a_refused_part_ends_its_submission() {
    let (mut outbox, ops) = submitted(3);
    for (i, op) in ops.iter().enumerate() {
        let part = outbox.pending(*op).unwrap().part;
        let index = u32::try_from(i).unwrap() + 1;
        assert_eq!(
            part,
            Part {
                submission: ops[0],
                index,
                of: 3
            }
        );
    }
    let sent = outbox.poll_send(now(), inc()).unwrap();
    assert_eq!(sent.operation_id, ops[0]);
    let resolved = outbox.handle_answer(now(), ops[0], error(ErrorCode::CANONICAL_LIMIT_EXCEEDED));
    assert_eq!(
        resolved_ops(&resolved),
        [
            (
                ops[0],
                Resolution::Refused {
                    code: ErrorCode::CANONICAL_LIMIT_EXCEEDED,
                    message: "m".into()
                }
            ),
            (ops[1], not_sent_after(1)),
            (ops[2], not_sent_after(1)),
        ]
    );
    assert!(outbox.is_empty());
    assert_eq!(outbox.poll_send(now(), inc()), None);
    // Each resolution is journaled, so a later run neither sends nor reports them again.
    let resolutions = journal(&mut outbox)
        .into_iter()
        .filter(|r| matches!(r, JournalRecord::Resolved { .. }))
        .count();
    assert_eq!(resolutions, 3);
}

// [CLIENT.SUBMIT.2] A delivered part lets the next go; a part in doubt ends the rest.
#[test]
fn client_submit_2_an_unknown_middle_part_ends_the_rest() {
    let (mut outbox, ops) = submitted(4);
    assert_eq!(outbox.poll_send(now(), inc()).unwrap().operation_id, ops[0]);
    assert_eq!(
        resolved_ops(&outbox.handle_answer(now(), ops[0], CommandResult::Ok)),
        [(ops[0], Resolution::Delivered)]
    );
    assert_eq!(outbox.poll_send(now(), inc()).unwrap().operation_id, ops[1]);
    let resolved = outbox.handle_answer(now(), ops[1], error(ErrorCode::INPUT_DELIVERY_UNKNOWN));
    assert_eq!(
        resolved_ops(&resolved),
        [
            (ops[1], Resolution::Unknown(UnknownReason::DeliveryUnknown)),
            (ops[2], not_sent_after(2)),
            (ops[3], not_sent_after(2)),
        ]
    );
    assert_eq!(outbox.poll_send(now(), inc()), None);
}

// [CLIENT.SUBMIT.2] A part the user drops (not sent) ends its submission too: dropping part 1
// must not deliver the rest of a paste without its start.
#[test]
fn client_submit_2_dropping_a_part_drops_the_rest() {
    let (mut outbox, ops) = submitted(3);
    let resolved = outbox.drop_pending(&ops[..1]);
    assert_eq!(
        resolved_ops(&resolved),
        [
            (ops[0], Resolution::NotSent(NotSentReason::Dropped)),
            (ops[1], not_sent_after(1)),
            (ops[2], not_sent_after(1)),
        ]
    );
    // Another submission to the same terminal is not touched.
    let (mut two, others) = submitted(2);
    two.drop_pending(&others[1..]);
    assert_eq!(two.poll_send(now(), inc()).unwrap().operation_id, others[0]);
}

// [CLIENT.SUBMIT.2] [CLIENT.JOURNAL.3] A crash between the failed part's record and its later
// parts' (a torn tail): the rebuilt outbox never sends them and reports them not sent at the
// next handshake; compaction keeps that knowledge (an Ended record) once the failed part's
// own record is gone.
#[test]
fn client_submit_2_survives_a_crash_and_compaction() {
    let (mut outbox, ops) = submitted(3);
    outbox.poll_send(now(), inc()).unwrap();
    outbox.handle_answer(now(), ops[0], error(ErrorCode::INPUT_DELIVERY_UNKNOWN));
    let mut records = journal(&mut outbox);
    // The last two records (parts 2 and 3 resolved) never reached the disk.
    let resolved_at: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, JournalRecord::Resolved { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(resolved_at.len(), 3);
    records.truncate(resolved_at[1]);
    let mut file = Vec::new();
    for r in &records {
        r.encode(&mut file);
    }
    let mut rebuilt =
        Outbox::rebuild(OutboxConfig::default(), decode_journal(&file).records).unwrap();
    assert_eq!(rebuilt.len(), 2);
    assert_eq!(rebuilt.pending(ops[1]).unwrap().blocked_by, Some(1));
    assert_eq!(rebuilt.poll_send(now(), inc()), None, "never sent");
    assert_eq!(rebuilt.poll_timeout(), None, "nothing to wait for");
    // What a run that starts from it writes first: the compacted journal.
    let compacted = rebuilt.compact();
    assert!(compacted.contains(&JournalRecord::Ended {
        submission: ops[0],
        part: 1
    }));
    let mut again = Outbox::rebuild(OutboxConfig::default(), compacted).unwrap();
    assert_eq!(again.poll_send(now(), inc()), None);
    assert_eq!(
        resolved_ops(&again.handle_reconnected(now(), inc())),
        [(ops[1], not_sent_after(1)), (ops[2], not_sent_after(1))]
    );
    assert!(again.is_empty());
}

// [CLIENT.SUBMIT.2] A first part in doubt after a crash is resent with its id; its answer
// decides the rest: unknown ends them, delivered lets them go.
#[test]
fn client_submit_2_a_part_in_doubt_decides_the_rest_when_answered() {
    for (answer, rest_sent) in [
        (error(ErrorCode::INPUT_DELIVERY_UNKNOWN), false),
        (CommandResult::Ok, true),
    ] {
        let (mut outbox, ops) = submitted(2);
        outbox.poll_send(now(), inc()).unwrap();
        let records = journal(&mut outbox);
        // The process dies here, part 1 sent and unanswered.
        let mut rebuilt = Outbox::rebuild(OutboxConfig::default(), records).unwrap();
        assert!(rebuilt.pending(ops[0]).unwrap().in_doubt);
        assert!(rebuilt.handle_reconnected(now(), inc()).is_empty());
        assert_eq!(
            rebuilt.poll_send(now(), inc()).unwrap().operation_id,
            ops[0]
        );
        rebuilt.handle_answer(now(), ops[0], answer.clone());
        assert_eq!(
            rebuilt.poll_send(now(), inc()).map(|i| i.operation_id),
            rest_sent.then_some(ops[1]),
            "{answer:?}"
        );
    }
}

/// A kind-5 `Enqueued` record (before submissions were recorded), as bytes.
fn legacy_enqueued(op: u128, at: u64) -> JournalRecord {
    JournalRecord::Enqueued {
        input: ApplyInput {
            operation_id: OperationId::from_u128(op).unwrap(),
            terminal: t(),
            events: vec![InputEvent::Paste(phux_proto::input::PasteEvent {
                trust: PasteTrust::Trusted,
                data: format!("part {op}").into_bytes(),
            })],
        },
        enqueued_at: Instant::from_micros(at),
        addressed_to: inc(),
        part: None,
    }
}

// [CLIENT.SUBMIT.4] A journal from before submissions were recorded still reads: its
// consecutive records with one time, terminal and incarnation are one submission's parts,
// so the old run's unknown first part keeps its later parts from ever being sent. The bug this
// closes: `outbox resume` reported two parts unknown and went on to send the third.
#[test]
fn client_submit_4_a_journal_without_submissions_is_grouped_by_time() {
    let op = |n| OperationId::from_u128(n).unwrap();
    let sent = |n: u128| JournalRecord::Sent {
        op: op(n),
        incarnation: inc(),
        at: Instant::from_micros(600),
    };
    let records = vec![
        legacy_enqueued(1, 500),
        sent(1),
        legacy_enqueued(2, 500),
        legacy_enqueued(3, 500),
        // Another run's submission: another time.
        legacy_enqueued(4, 900),
        JournalRecord::Resolved {
            op: op(1),
            resolution: Resolution::Unknown(UnknownReason::DeliveryUnknown),
        },
    ];
    let mut file = Vec::new();
    for r in &records {
        r.encode(&mut file);
    }
    let decoded = decode_journal(&file);
    assert_eq!(decoded.records, records, "kind 5 still reads");
    let mut outbox = Outbox::rebuild(OutboxConfig::default(), decoded.records).unwrap();
    assert_eq!(
        outbox.pending(op(3)).unwrap().part,
        Part {
            submission: op(1),
            index: 3,
            of: 3
        }
    );
    assert_eq!(outbox.pending(op(4)).unwrap().part, Part::alone(op(4)));
    let resolved = outbox.handle_reconnected(now(), inc());
    assert_eq!(
        resolved_ops(&resolved),
        [(op(2), not_sent_after(1)), (op(3), not_sent_after(1))]
    );
    // The other submission goes out as usual.
    assert_eq!(outbox.poll_send(now(), inc()).unwrap().operation_id, op(4));
}

// A journal record this build writes for a submission round-trips, and one that names a part
// outside its submission is refused with a typed error rather than guessed at.
#[test]
fn client_submit_1_records_round_trip_and_bad_parts_are_refused() {
    let (mut outbox, _) = submitted(2);
    for record in journal(&mut outbox) {
        assert_eq!(JournalRecord::from_bytes(&record.to_bytes()), Ok(record));
    }
    let ended = JournalRecord::Ended {
        submission: OperationId::from_u128(7).unwrap(),
        part: 2,
    };
    assert_eq!(JournalRecord::from_bytes(&ended.to_bytes()), Ok(ended));
    let mut bad = legacy_enqueued(1, 1);
    if let JournalRecord::Enqueued { part, .. } = &mut bad {
        *part = Some(Part {
            submission: OperationId::from_u128(1).unwrap(),
            index: 3,
            of: 2,
        });
    }
    assert_eq!(
        JournalRecord::from_bytes(&bad.to_bytes()),
        Err(phux_core::client::journal::RecordError::Part { index: 3, of: 2 })
    );
}
