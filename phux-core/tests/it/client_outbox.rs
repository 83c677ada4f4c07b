//! The outbox on its own: paste splitting (CLIENT.SPLIT.N), the ceiling, the journal's
//! encoding, torn-tail tolerance, rebuild and compaction (CLIENT.OUTBOX.N).

use phux_core::client::journal::{
    Incarnation, JournalError, JournalRecord, Part, RecordError, decode_journal,
};
use phux_core::client::outbox::{
    DEFAULT_CEILING, Input, Outbox, OutboxConfig, OutboxError, Resolution, max_paste_len,
    split_utf8,
};
use phux_core::client::retry::{NotSentReason, UnknownReason};
use phux_core::time::Instant;
use phux_proto::command::{ApplyInput, MAX_APPLY_INPUT_EVENTS, MAX_APPLY_INPUT_LEN};
use phux_proto::frame::CommandFrame;
use phux_proto::input::{FocusEvent, InputEvent, KeyEvent, ModSet, PasteTrust, PhysicalKey};
use phux_proto::{Command, CommandResult, ErrorCode, Frame, OperationId, TerminalId};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

fn ids() -> impl FnMut() -> OperationId {
    let mut n = 0u128;
    move || {
        n += 1;
        OperationId::from_u128(n).unwrap()
    }
}

/// The incarnation every operation here is addressed to (and sent to).
fn server() -> Incarnation {
    Incarnation::of(b"server")
}

fn now() -> Instant {
    Instant::from_millis(1_000)
}

/// Every pending operation to `terminal`, in order, sent and answered OK one by one.
fn drain_ops(outbox: &mut Outbox, terminal: &TerminalId) -> Vec<ApplyInput> {
    let inc = Incarnation::of(b"server");
    let mut out = Vec::new();
    while let Some(input) = outbox.poll_send(now(), inc) {
        assert_eq!(&input.terminal, terminal);
        assert_eq!(outbox.poll_send(now(), inc), None, "[CLIENT.OUTBOX.2]");
        let resolved = outbox.handle_answer(now(), input.operation_id, CommandResult::Ok);
        assert_eq!(resolved, [(input.clone(), Resolution::Delivered)]);
        out.push(input);
    }
    out
}

/// Asserts the operation encodes as a COMMAND the codec accepts (its decoder enforces the
/// 64 KiB value bound) and reports its value length.
fn assert_in_limit(input: &ApplyInput) {
    assert!(input.value_len() <= MAX_APPLY_INPUT_LEN);
    assert!(input.events.len() <= MAX_APPLY_INPUT_EVENTS);
    let frame = Frame::Command(CommandFrame {
        request_id: 7,
        command: Command::ApplyInput(input.clone()),
    });
    let bytes = frame.to_bytes();
    assert_eq!(Frame::decode(&bytes).as_ref(), Ok(&frame));
}

fn paste_data(input: &ApplyInput) -> Vec<u8> {
    input
        .events
        .iter()
        .flat_map(|e| match e {
            InputEvent::Paste(p) => p.data.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

// [CLIENT.PASTE.1] The per-operation limit is computed from the encoding: a paste of exactly
// that size encodes at the 64 KiB bound, and one byte more does not decode.
#[test]
fn client_split_1_limit_is_exactly_the_encoding_bound() {
    for terminal in [
        TerminalId::Local(9),
        TerminalId::Satellite {
            host: "far.example".into(),
            id: 2,
        },
    ] {
        let max = max_paste_len(&terminal);
        let at = |len: usize| ApplyInput {
            operation_id: OperationId::from_u128(1).unwrap(),
            terminal: terminal.clone(),
            events: vec![InputEvent::Paste(phux_proto::input::PasteEvent {
                trust: PasteTrust::Trusted,
                data: vec![b'x'; len],
            })],
        };
        assert_eq!(at(max).value_len(), MAX_APPLY_INPUT_LEN);
        assert_in_limit(&at(max));
        let over = Frame::Command(CommandFrame {
            request_id: 1,
            command: Command::ApplyInput(at(max + 1)),
        });
        assert!(Frame::decode(&over.to_bytes()).is_err(), "one byte over");
    }
}

// [CLIENT.PASTE.2] Large pastes split at UTF-8 character boundaries, in order, each piece in
// limit; multi-byte characters straddling the limit move whole to the next piece.
#[test]
fn client_split_2_paste_splits_at_char_boundaries_in_order() {
    let terminal = TerminalId::Local(1);
    let max = max_paste_len(&terminal);
    for width in 1..=4usize {
        for shift in 0..width {
            // ASCII padding so a `width`-byte character starts `shift` bytes before the limit.
            let ch = ['a', 'é', '€', '😀'][width - 1];
            let mut text = "a".repeat(max - shift);
            while text.len() < 3 * max + 5 {
                text.push(ch);
            }
            let mut outbox = Outbox::new(OutboxConfig::default());
            let ops = outbox
                .submit(
                    now(),
                    server(),
                    terminal.clone(),
                    Input::Paste {
                        data: text.clone().into_bytes(),
                        trust: PasteTrust::Untrusted,
                    },
                    ids(),
                )
                .unwrap();
            assert_eq!(ops.len(), 4, "width {width} shift {shift}");
            let sent = drain_ops(&mut outbox, &terminal);
            assert_eq!(sent.iter().map(|s| s.operation_id).collect::<Vec<_>>(), ops);
            let mut joined = Vec::new();
            for input in &sent {
                assert_in_limit(input);
                let piece = paste_data(input);
                assert!(
                    std::str::from_utf8(&piece).is_ok(),
                    "piece is whole characters (width {width} shift {shift})"
                );
                joined.extend(piece);
            }
            assert_eq!(joined, text.as_bytes());
        }
    }
}

#[test]
fn client_split_2_invalid_utf8_still_splits_in_limit() {
    let data: Vec<u8> = (0..200_000u32).map(|i| 0x80 | (i as u8 & 0x3f)).collect();
    let pieces = split_utf8(&data, 1000);
    assert!(pieces.iter().all(|p| p.len() <= 1000 && !p.is_empty()));
    assert_eq!(pieces.concat(), data);
}

// Many small events pack into as few operations as the 256-event bound allows, in order.
#[test]
fn client_split_events_pack_under_the_event_count_bound() {
    let terminal = TerminalId::Local(1);
    let events: Vec<InputEvent> = (0..600)
        .map(|i| {
            if i % 2 == 0 {
                InputEvent::Key(KeyEvent::press(PhysicalKey::KEY_A, ModSet::NONE))
            } else {
                InputEvent::Focus(FocusEvent::Gained)
            }
        })
        .collect();
    let mut outbox = Outbox::new(OutboxConfig::default());
    let ops = outbox
        .submit(
            now(),
            server(),
            terminal.clone(),
            Input::Events(events.clone()),
            ids(),
        )
        .unwrap();
    assert_eq!(ops.len(), 3);
    let sent = drain_ops(&mut outbox, &terminal);
    sent.iter().for_each(assert_in_limit);
    let flat: Vec<InputEvent> = sent.into_iter().flat_map(|s| s.events).collect();
    assert_eq!(flat, events);
}

// [CLIENT.PASTE.3] Input over the ceiling is refused up front; nothing is queued or journaled.
#[test]
fn client_split_3_ceiling_refuses_up_front() {
    let terminal = TerminalId::Local(1);
    let mut outbox = Outbox::new(OutboxConfig::default());
    let err = outbox
        .submit(
            now(),
            server(),
            terminal.clone(),
            Input::Paste {
                data: vec![b'x'; DEFAULT_CEILING + 1],
                trust: PasteTrust::Trusted,
            },
            ids(),
        )
        .unwrap_err();
    assert_eq!(
        err,
        OutboxError::TooLarge {
            len: DEFAULT_CEILING + 1,
            ceiling: DEFAULT_CEILING
        }
    );
    assert!(err.to_string().contains("ceiling"));
    assert!(outbox.is_empty());
    assert!(!outbox.has_journal());
    // Exactly the ceiling is accepted; a smaller configured ceiling is honoured.
    assert_eq!(
        outbox
            .submit(
                now(),
                server(),
                terminal.clone(),
                Input::Paste {
                    data: vec![b'x'; DEFAULT_CEILING],
                    trust: PasteTrust::Trusted,
                },
                ids(),
            )
            .unwrap()
            .len(),
        17
    );
    let mut small = Outbox::new(OutboxConfig {
        ceiling: 10,
        journal: false,
    });
    assert!(matches!(
        small.submit(
            now(),
            server(),
            terminal.clone(),
            Input::Paste {
                data: vec![b'x'; 11],
                trust: PasteTrust::Trusted
            },
            ids()
        ),
        Err(OutboxError::TooLarge { .. })
    ));
    assert_eq!(
        small.submit(now(), server(), terminal, Input::Events(vec![]), ids()),
        Err(OutboxError::Empty)
    );
}

#[test]
fn duplicate_ids_are_refused_whole() {
    let terminal = TerminalId::Local(1);
    let mut outbox = Outbox::new(OutboxConfig::default());
    let same = || OperationId::from_u128(5).unwrap();
    let err = outbox
        .submit(
            now(),
            server(),
            terminal,
            Input::Paste {
                data: vec![b'x'; 100_000],
                trust: PasteTrust::Trusted,
            },
            same,
        )
        .unwrap_err();
    assert_eq!(
        err,
        OutboxError::DuplicateId {
            op: OperationId::from_u128(5).unwrap()
        }
    );
    assert!(outbox.is_empty());
}

fn sample_records() -> Vec<JournalRecord> {
    let op = |n| OperationId::from_u128(n).unwrap();
    vec![
        JournalRecord::Enqueued {
            input: ApplyInput {
                operation_id: op(1),
                terminal: TerminalId::Local(4),
                events: vec![InputEvent::Paste(phux_proto::input::PasteEvent {
                    trust: PasteTrust::Untrusted,
                    data: "naïve ☃".as_bytes().to_vec(),
                })],
            },
            enqueued_at: Instant::from_micros(11),
            addressed_to: Incarnation::of(b"a"),
            part: Some(Part::alone(op(1))),
        },
        JournalRecord::Sent {
            op: op(1),
            incarnation: Incarnation::of(b"a"),
            at: Instant::from_micros(12),
        },
        JournalRecord::Answered { op: op(1) },
        JournalRecord::Resolved {
            op: op(1),
            resolution: Resolution::Refused {
                code: ErrorCode::UNSAFE_PASTE,
                message: "APPLY_INPUT batch contains an unsafe paste".into(),
            },
        },
        JournalRecord::Resolved {
            op: op(2),
            resolution: Resolution::Unknown(UnknownReason::HorizonElapsed),
        },
        JournalRecord::Resolved {
            op: op(3),
            resolution: Resolution::Delivered,
        },
    ]
}

// [CLIENT.OUTBOX.5] Records round-trip through their versioned encoding; decoding is strict.
#[test]
fn client_outbox_5_records_round_trip_and_decode_strictly() {
    for record in sample_records() {
        let bytes = record.to_bytes();
        assert_eq!(JournalRecord::from_bytes(&bytes), Ok(record.clone()));
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(
            JournalRecord::from_bytes(&long),
            Err(RecordError::TrailingBytes { extra: 1 })
        );
        // Flip each byte: never a panic, never a silently different record.
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            if let Ok(other) = JournalRecord::from_bytes(&bad) {
                panic!("flip at {i} decoded as {other:?}");
            }
        }
    }
    // A well-formed record of another version is refused by name, not misread.
    let mut bytes = sample_records()[2].to_bytes();
    assert_eq!(bytes[4], 1, "version 1");
    bytes[4] = 2;
    let body_end = bytes.len() - 4;
    let check = Sha256::digest(&bytes[4..body_end]);
    bytes[body_end..].copy_from_slice(&check[..4]);
    assert_eq!(
        JournalRecord::from_bytes(&bytes),
        Err(RecordError::Version { found: 2 })
    );
}

// [CLIENT.JOURNAL.5] A torn last record is dropped and reported at every truncation point;
// damage before the last record is corruption.
#[test]
fn client_outbox_6_torn_tail_is_tolerated_at_every_cut() {
    let records = sample_records();
    let mut file = Vec::new();
    let mut ends = Vec::new();
    for record in &records {
        record.encode(&mut file);
        ends.push(file.len());
    }
    for cut in 0..=file.len() {
        let decoded = decode_journal(&file[..cut]);
        assert!(
            decoded.damaged.is_empty(),
            "cut {cut}: a cut is never damage"
        );
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        assert_eq!(decoded.records, records[..whole], "cut {cut}");
        let good = if whole == 0 { 0 } else { ends[whole - 1] };
        match decoded.torn_tail {
            None => assert_eq!(good, cut),
            Some(tail) => {
                assert_eq!(tail.offset, good);
                assert_eq!(tail.len, cut - good);
            }
        }
    }
    // A zero-filled tail (a crash after the file grew) is torn too.
    let mut zeros = file.clone();
    zeros.extend([0; 37]);
    let decoded = decode_journal(&zeros);
    assert_eq!(decoded.records, records);
    assert_eq!(decoded.torn_tail.unwrap().len, 37);
}

// [CLIENT.JOURNAL.6] [CLIENT.JOURNAL.7] Damage before the last record, in any byte of any
// record (a garbled body, a corrupted length that claims the rest of the file), is reported
// with its offset and never taken for a torn tail; every record after it is kept.
#[test]
fn client_journal_6_middle_damage_keeps_the_records_after_it() {
    let records = sample_records();
    let mut file = Vec::new();
    let mut starts = Vec::new();
    for record in &records {
        starts.push(file.len());
        record.encode(&mut file);
    }
    let last = *starts.last().unwrap();
    for at in 0..last {
        for flip in [0x01, 0x80, 0xff] {
            let mut bad = file.clone();
            bad[at] ^= flip;
            let decoded = decode_journal(&bad);
            let hit = starts.iter().rposition(|&s| s <= at).unwrap();
            assert_eq!(decoded.torn_tail, None, "byte {at}");
            assert_eq!(decoded.damaged.len(), 1, "byte {at} ^ {flip:#x}");
            let damage = &decoded.damaged[0];
            assert_eq!(damage.offset, starts[hit], "byte {at}");
            assert_eq!(damage.offset + damage.len, starts[hit + 1], "byte {at}");
            let mut kept = records.clone();
            kept.remove(hit);
            assert_eq!(decoded.records, kept, "byte {at} ^ {flip:#x}");
        }
    }
    // A length corrupted to claim more than the file holds is damage too (records follow).
    let mut bad = file.clone();
    bad[starts[1]..starts[1] + 4].copy_from_slice(&100_000u32.to_be_bytes());
    let decoded = decode_journal(&bad);
    assert!(decoded.torn_tail.is_none());
    assert_eq!(decoded.damaged[0].offset, starts[1]);
    assert_eq!(decoded.records.len(), records.len() - 1);
    // Salvaging skips what no longer fits (the Resolved of an operation whose Enqueued was
    // lost) instead of failing.
    let (outbox, skipped) = Outbox::rebuild_salvaging(OutboxConfig::default(), decoded.records);
    assert!(outbox.is_empty());
    assert!(!skipped.is_empty());
    assert!(matches!(skipped[0], JournalError::UnknownOperation { .. }));
}

// [CLIENT.OUTBOX.5] Rebuild validates the record sequence.
#[test]
fn client_outbox_5_rebuild_rejects_inconsistent_journals() {
    let records = sample_records();
    // Resolved for never-enqueued ops 2 and 3.
    assert!(matches!(
        Outbox::rebuild(OutboxConfig::default(), records.clone()),
        Err(JournalError::UnknownOperation { index: 4, .. })
    ));
    let twice = vec![records[0].clone(), records[0].clone()];
    assert!(matches!(
        Outbox::rebuild(OutboxConfig::default(), twice),
        Err(JournalError::DuplicateOperation { index: 1, .. })
    ));
    let outbox = Outbox::rebuild(OutboxConfig::default(), records[..4].to_vec()).unwrap();
    assert!(outbox.is_empty(), "enqueued then resolved: nothing pending");
}

// [CLIENT.OUTBOX.3] Operations are dropped only when resolved; compaction keeps exactly the
// live state (order, doubt, first send) and rebuilds to it.
#[test]
fn client_outbox_3_compact_rebuilds_the_live_state() {
    let inc = Incarnation::of(b"server");
    let t1 = TerminalId::Local(1);
    let t2 = TerminalId::Local(2);
    let mut outbox = Outbox::new(OutboxConfig::default());
    let mut next = ids();
    let key = || InputEvent::Key(KeyEvent::press(PhysicalKey::KEY_Q, ModSet::CTRL));
    let a = outbox
        .submit(
            now(),
            server(),
            t1.clone(),
            Input::Events(vec![key()]),
            &mut next,
        )
        .unwrap()[0];
    let b = outbox
        .submit(
            now(),
            server(),
            t1.clone(),
            Input::Events(vec![key()]),
            &mut next,
        )
        .unwrap()[0];
    let c = outbox
        .submit(
            now(),
            server(),
            t2.clone(),
            Input::Events(vec![key()]),
            &mut next,
        )
        .unwrap()[0];
    let d = outbox
        .submit(
            now(),
            server(),
            t2.clone(),
            Input::Events(vec![key()]),
            &mut next,
        )
        .unwrap()[0];
    // a in flight, c answered busy (waiting, not in doubt).
    assert_eq!(outbox.poll_send(now(), inc).unwrap().operation_id, a);
    assert_eq!(outbox.poll_send(now(), inc).unwrap().operation_id, c);
    let busy = CommandResult::Error {
        code: ErrorCode::RESOURCE_EXHAUSTED,
        message: String::new(),
    };
    assert_eq!(outbox.handle_answer(now(), c, busy), []);
    let mut log: Vec<JournalRecord> = std::iter::from_fn(|| outbox.poll_journal()).collect();
    let compacted = outbox.compact();
    // a: Enqueued+Sent; b: Enqueued; c: Enqueued+Sent+Answered; d: Enqueued.
    assert_eq!(compacted.len(), 7);
    for records in [compacted, std::mem::take(&mut log)] {
        let rebuilt = Outbox::rebuild(OutboxConfig::default(), records).unwrap();
        assert_eq!(rebuilt.queue(&t1), vec![a, b]);
        assert_eq!(rebuilt.queue(&t2), vec![c, d]);
        assert!(rebuilt.pending(a).unwrap().in_doubt, "in flight at restart");
        assert!(!rebuilt.pending(c).unwrap().in_doubt, "answered busy");
        assert_eq!(rebuilt.pending(c).unwrap().first_sent_at, Some(now()));
        assert_eq!(rebuilt.pending(b).unwrap().first_sent_at, None);
    }
}

fn event_strategy() -> impl Strategy<Value = InputEvent> {
    prop_oneof![
        (0u32..=175, any::<u16>()).prop_map(|(k, m)| InputEvent::Key(KeyEvent::press(
            PhysicalKey(k),
            ModSet(m & ModSet::KNOWN_BITS)
        ))),
        any::<bool>().prop_map(|g| InputEvent::Focus(if g {
            FocusEvent::Gained
        } else {
            FocusEvent::Lost
        })),
        ("\\PC{0,40}", any::<bool>()).prop_map(|(s, t)| InputEvent::Paste(
            phux_proto::input::PasteEvent {
                trust: if t {
                    PasteTrust::Trusted
                } else {
                    PasteTrust::Untrusted
                },
                data: s.into_bytes(),
            }
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    // [CLIENT.PASTE.2] Any text splits into in-limit operations whose pastes are whole
    // characters and concatenate back to the text.
    #[test]
    fn client_split_2_any_text_round_trips(
        chunk in "\\PC{1,64}",
        repeat in 1usize..3_000,
    ) {
        let text = chunk.repeat(repeat);
        let terminal = TerminalId::Local(1);
        let mut outbox = Outbox::new(OutboxConfig::default());
        let ops = outbox.submit(now(), server(), terminal.clone(), Input::Paste {
            data: text.clone().into_bytes(),
            trust: PasteTrust::Trusted,
        }, ids()).unwrap();
        let sent = drain_ops(&mut outbox, &terminal);
        prop_assert_eq!(sent.len(), ops.len());
        let mut joined = String::new();
        for input in &sent {
            prop_assert!(input.value_len() <= MAX_APPLY_INPUT_LEN);
            joined.push_str(std::str::from_utf8(&paste_data(input)).unwrap());
        }
        prop_assert_eq!(joined, text);
    }

    // [CLIENT.OUTBOX.5] Enqueued records carry any events through the wire codec.
    #[test]
    fn client_outbox_5_enqueued_round_trips(
        events in prop::collection::vec(event_strategy(), 1..20),
        at in any::<u64>(),
        id in 1u128..,
        part in prop::option::of((1u128.., 1u32.., any::<u32>())),
    ) {
        let part = part.map(|(submission, index, more)| Part {
            submission: OperationId::from_u128(submission).unwrap(),
            index,
            of: index.saturating_add(more),
        });
        let record = JournalRecord::Enqueued {
            input: ApplyInput {
                operation_id: OperationId::from_u128(id).unwrap(),
                terminal: TerminalId::Local(3),
                events,
            },
            enqueued_at: Instant::from_micros(at),
            addressed_to: Incarnation::of(&at.to_be_bytes()),
            part,
        };
        prop_assert_eq!(JournalRecord::from_bytes(&record.to_bytes()), Ok(record));
    }

    // [CLIENT.JOURNAL.7] Any garbling inside one record that is not the last (any stretch,
    // any bytes) loses that record only: every other record is recovered, in order.
    #[test]
    fn client_journal_7_one_garbled_record_costs_only_itself(
        hit in 0usize..5,
        start in any::<prop::sample::Index>(),
        garbage in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let records = sample_records();
        let mut file = Vec::new();
        let mut starts = Vec::new();
        for record in &records {
            starts.push(file.len());
            record.encode(&mut file);
        }
        let (from, to) = (starts[hit], starts[hit + 1]);
        let at = from + start.index(to - from);
        let mut bad = file.clone();
        for (i, b) in garbage.iter().enumerate() {
            if let Some(slot) = bad.get_mut(at + i).filter(|_| at + i < to) {
                *slot = *b;
            }
        }
        prop_assume!(bad != file);
        let decoded = decode_journal(&bad);
        let mut kept = records.clone();
        kept.remove(hit);
        prop_assert_eq!(decoded.records, kept);
        prop_assert_eq!(decoded.torn_tail, None);
        prop_assert_eq!(decoded.damaged.len(), 1);
        prop_assert_eq!(decoded.damaged[0].offset, from);
    }

    // Arbitrary bytes never panic the journal decoder.
    #[test]
    fn journal_decoder_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode_journal(&bytes);
        let _ = JournalRecord::from_bytes(&bytes);
    }
}

// [CLIENT.BIND.5] A record from before incarnations were recorded (kind 1) reads as addressed
// to no server: never sent, reported not sent at the next handshake.
#[test]
fn client_bind_5_unaddressed_records_are_never_sent() {
    let input = ApplyInput {
        operation_id: OperationId::from_u128(9).unwrap(),
        terminal: TerminalId::Local(1),
        events: vec![InputEvent::Focus(FocusEvent::Gained)],
    };
    let mut body = vec![1, 1];
    body.extend_from_slice(&1_000u64.to_be_bytes());
    Frame::Command(CommandFrame {
        request_id: 0,
        command: Command::ApplyInput(input.clone()),
    })
    .encode(&mut body);
    let mut file = (body.len() as u32).to_be_bytes().to_vec();
    file.extend_from_slice(&body);
    file.extend_from_slice(&Sha256::digest(&body)[..4]);
    let decoded = decode_journal(&file);
    assert_eq!(
        decoded.records,
        [JournalRecord::Enqueued {
            input: input.clone(),
            enqueued_at: Instant::from_micros(1_000),
            addressed_to: Incarnation::UNRECORDED,
            part: None,
        }]
    );
    let mut outbox = Outbox::rebuild(OutboxConfig::default(), decoded.records).unwrap();
    assert_eq!(
        outbox.poll_send(Instant::from_micros(2_000), server()),
        None
    );
    assert_eq!(
        outbox.handle_reconnected(Instant::from_micros(2_000), server()),
        [(input, Resolution::NotSent(NotSentReason::ServerGone))]
    );
}
