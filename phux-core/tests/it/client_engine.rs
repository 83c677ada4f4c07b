//! The ClientEngine driven against scripted server bytes (built with the codec): handshake,
//! correlation, per-terminal ordering, every retry branch end to end, restart from the
//! journal, and half-open detection. Clause ids: CLIENT.OUTBOX.N, CLIENT.RETRY.N,
//! CLIENT.HALFOPEN.N.

use std::time::Duration;

use phux_core::client::journal::Incarnation;
use phux_core::client::journal::{JournalRecord, decode_journal};
use phux_core::client::outbox::{OutboxError, Resolution, Scope};
use phux_core::client::retry::{NotSentReason, RESEND_HORIZON, UnknownReason};
use phux_core::client::{
    ApiMisuse, ClientAction, ClientConfig, ClientEngine, ClientEvent, ClientNotice, RedialReason,
};
use phux_core::time::Instant;
use phux_proto::command::ApplyInput;
use phux_proto::frame::{
    BootstrapProfile, BootstrapProfiles, ByteLimit, CommandResultFrame, DetachReason, Detached,
    ErrorFrame, HelloOk, LayerSet, Pong, ProtocolVersion, ServerCapabilities, ServerFeatures,
};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteTrust, PhysicalKey};
use phux_proto::{Command, CommandResult, ErrorCode, Frame, OperationId, TerminalId};

const SERVER_A: &[u8] = &[0xa1; 16];
const SERVER_B: &[u8] = &[0xb2; 16];

fn t(ms: u64) -> Instant {
    Instant::from_millis(ms)
}

fn hello_ok_with(server_id: &[u8], features: ServerFeatures) -> Vec<u8> {
    Frame::HelloOk(HelloOk {
        version: ProtocolVersion::CURRENT,
        capabilities: ServerCapabilities {
            layers: LayerSet::L1,
            features,
        },
        server_id: server_id.to_vec(),
        profile: BootstrapProfile::SynthesizedVtRaw,
        max_chunk_bytes: ByteLimit::new(256 * 1024).unwrap(),
        max_history_page_bytes: ByteLimit::new(1024 * 1024).unwrap(),
    })
    .to_bytes()
}

fn hello_ok(server_id: &[u8]) -> Vec<u8> {
    hello_ok_with(
        server_id,
        ServerFeatures::ACKNOWLEDGED_INPUT | ServerFeatures::SHUTDOWN,
    )
}

fn result(request_id: u32, result: CommandResult) -> Vec<u8> {
    Frame::CommandResult(CommandResultFrame { request_id, result }).to_bytes()
}

fn error(request_id: u32, code: ErrorCode) -> Vec<u8> {
    result(
        request_id,
        CommandResult::Error {
            code,
            message: format!("server says {code}"),
        },
    )
}

fn key(k: PhysicalKey) -> InputEvent {
    InputEvent::Key(KeyEvent::press(k, ModSet::NONE))
}

/// Operation ids 1, 2, 3, ... (random in a real client).
fn ids(start: u128) -> impl FnMut() -> OperationId {
    let mut n = start;
    move || {
        n += 1;
        OperationId::from_u128(n).unwrap()
    }
}

fn op(n: u128) -> OperationId {
    OperationId::from_u128(n).unwrap()
}

/// Everything the engine produced, drained in the documented order.
#[derive(Default, Debug)]
struct Io {
    events: Vec<ClientNotice>,
    journal: Vec<JournalRecord>,
    sent: Vec<Frame>,
}

impl Io {
    /// The APPLY_INPUT commands sent, with their request ids.
    fn applies(&self) -> Vec<(u32, ApplyInput)> {
        self.sent
            .iter()
            .filter_map(|f| match f {
                Frame::Command(c) => match &c.command {
                    Command::ApplyInput(a) => Some((c.request_id, a.clone())),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn applied_ops(&self) -> Vec<OperationId> {
        self.applies().iter().map(|(_, a)| a.operation_id).collect()
    }

    fn resolutions(&self) -> Vec<(OperationId, Resolution)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                ClientNotice::OperationResolved { op, resolution, .. } => {
                    Some((*op, resolution.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

fn drain(engine: &mut ClientEngine) -> Io {
    let mut io = Io::default();
    while let Some(action) = engine.poll_action() {
        match action {
            ClientAction::Journal(r) => {
                // [CLIENT.OUTBOX.1] Records come before anything else of the drain.
                assert!(
                    io.events.is_empty() && io.sent.is_empty(),
                    "a journal record after a notice or bytes: {r:?}"
                );
                io.journal.push(r);
            }
            ClientAction::Notify(e) => {
                assert!(io.sent.is_empty(), "a notice after bytes: {e:?}");
                io.events.push(e);
            }
            ClientAction::Transmit(bytes) => {
                let frame = Frame::decode(&bytes).expect("engine sends whole, valid frames");
                // [CLIENT.OUTBOX.1] An operation's bytes follow its `Sent` record.
                if let Frame::Command(c) = &frame
                    && let Command::ApplyInput(a) = &c.command
                {
                    assert!(
                        io.journal.iter().any(|r| matches!(
                            r,
                            JournalRecord::Sent { op, .. } if *op == a.operation_id
                        )),
                        "{} sent before its Sent record",
                        a.operation_id
                    );
                }
                io.sent.push(frame);
            }
        }
    }
    io
}

/// An engine connected to `server_id`, past the handshake, with its output drained.
fn ready(server_id: &[u8]) -> ClientEngine {
    let mut engine = ClientEngine::new(ClientConfig::default());
    engine.handle(t(0), ClientEvent::Connected);
    engine.handle(
        t(1),
        ClientEvent::Received {
            bytes: &hello_ok(server_id),
        },
    );
    drain(&mut engine);
    engine
}

#[test]
fn hello_flow_offers_raw_profile_and_remembers_server_id() {
    let mut engine = ClientEngine::new(ClientConfig::default());
    assert_eq!(
        engine.command(Command::Upgrade { binary: None }),
        Err(ApiMisuse::NotReady),
        "no command before a connection"
    );
    engine.handle(t(0), ClientEvent::Connected);
    let io = drain(&mut engine);
    let [Frame::Hello(hello)] = &io.sent[..] else {
        panic!("expected exactly HELLO, got {:?}", io.sent);
    };
    assert_eq!(hello.version, ProtocolVersion::CURRENT);
    assert!(hello.client_name.starts_with("phux-rs/"));
    let caps = &hello.capabilities;
    assert!(
        caps.bootstrap_profiles
            .contains(BootstrapProfiles::SYNTHESIZED_VT_RAW)
    );
    assert_eq!(caps.max_chunk_bytes.get(), 256 * 1024);
    assert_eq!(caps.max_history_page_bytes.get(), 1024 * 1024);
    assert_eq!(
        engine.command(Command::Upgrade { binary: None }),
        Err(ApiMisuse::NotReady),
        "no command before HELLO_OK"
    );
    // PING is fine during the handshake; PONG comes back as a frame.
    engine
        .send(&Frame::Ping(phux_proto::frame::Ping { nonce: 7 }))
        .unwrap();
    // HELLO_OK and PONG arrive in one read, split mid-frame across two calls.
    let mut bytes = hello_ok(SERVER_A);
    bytes.extend(Frame::Pong(Pong { nonce: 7 }).to_bytes());
    engine.handle(t(1), ClientEvent::Received { bytes: &bytes[..7] });
    assert!(!engine.is_ready());
    engine.handle(t(2), ClientEvent::Received { bytes: &bytes[7..] });
    let io = drain(&mut engine);
    assert!(matches!(&io.events[0], ClientNotice::HelloOk(h) if h.server_id == SERVER_A));
    assert_eq!(
        io.events[1],
        ClientNotice::Frame(Frame::Pong(Pong { nonce: 7 }))
    );
    assert_eq!(engine.server_id(), Some(SERVER_A));
    assert!(engine.is_ready());
    // A second HELLO_OK is the server's fault; the connection is given up.
    engine.handle(
        t(3),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert!(matches!(io.events[..], [ClientNotice::ConnectionFailed(_)]));
}

#[test]
fn commands_correlate_by_request_id_in_any_order() {
    let mut engine = ready(SERVER_A);
    let a = engine
        .command(Command::KillTerminal {
            terminal: TerminalId::Local(1),
        })
        .unwrap();
    let b = engine
        .command(Command::DetachTerminal {
            terminal: TerminalId::Local(2),
        })
        .unwrap();
    let c = engine.command(Command::Upgrade { binary: None }).unwrap();
    assert!(a != b && b != c && a != 0);
    let io = drain(&mut engine);
    assert_eq!(io.sent.len(), 3);
    assert_eq!(
        engine.command(Command::ApplyInput(ApplyInput {
            operation_id: op(1),
            terminal: TerminalId::Local(1),
            events: vec![key(PhysicalKey::KEY_A)],
        })),
        Err(ApiMisuse::UseApplyInput)
    );
    // Answers in reverse order; c answered by a correlated ERROR frame (our rule R7).
    let mut bytes = Frame::Error(ErrorFrame {
        request_id: Some(c),
        code: ErrorCode::MALFORMED_MESSAGE,
        message: "bad".into(),
    })
    .to_bytes();
    bytes.extend(error(b, ErrorCode::TERMINAL_NOT_FOUND));
    bytes.extend(result(a, CommandResult::Ok));
    bytes.extend(result(99, CommandResult::Ok));
    engine.handle(t(5), ClientEvent::Received { bytes: &bytes });
    let io = drain(&mut engine);
    assert_eq!(
        io.events,
        vec![
            ClientNotice::CommandResult {
                request_id: c,
                result: CommandResult::Error {
                    code: ErrorCode::MALFORMED_MESSAGE,
                    message: "bad".into()
                }
            },
            ClientNotice::CommandResult {
                request_id: b,
                result: CommandResult::Error {
                    code: ErrorCode::TERMINAL_NOT_FOUND,
                    message: "server says TERMINAL_NOT_FOUND".into()
                }
            },
            ClientNotice::CommandResult {
                request_id: a,
                result: CommandResult::Ok
            },
            // An answer nobody asked for is surfaced as it came.
            ClientNotice::Frame(Frame::CommandResult(CommandResultFrame {
                request_id: 99,
                result: CommandResult::Ok
            })),
        ]
    );
    // A command still pending when the connection drops is abandoned, not silently lost.
    let d = engine.command(Command::Upgrade { binary: None }).unwrap();
    engine.handle(t(6), ClientEvent::Disconnected);
    let io = drain(&mut engine);
    assert_eq!(
        io.events,
        vec![ClientNotice::CommandAbandoned { request_id: d }]
    );
}

// [CLIENT.OUTBOX.2] One operation per terminal in flight, in submission order; terminals
// are independent.
#[test]
fn client_outbox_2_one_at_a_time_per_terminal_in_order() {
    let mut engine = ready(SERVER_A);
    let t1 = TerminalId::Local(1);
    let t2 = TerminalId::Local(2);
    let mut next = ids(0);
    let first = engine
        .apply_input(t(10), t1.clone(), vec![key(PhysicalKey::KEY_A)], &mut next)
        .unwrap();
    let second = engine
        .apply_input(t(10), t1.clone(), vec![key(PhysicalKey::KEY_B)], &mut next)
        .unwrap();
    let other = engine
        .apply_input(t(10), t2.clone(), vec![key(PhysicalKey::KEY_C)], &mut next)
        .unwrap();
    let io = drain(&mut engine);
    // Recorded before sent: three Enqueued, then two Sent, all before the bytes.
    assert_eq!(io.journal.len(), 5);
    assert!(matches!(io.journal[0], JournalRecord::Enqueued { .. }));
    let sent = io.applies();
    assert_eq!(io.applied_ops(), vec![first[0], other[0]]);
    assert_eq!(engine.outbox().queue(&t1), vec![first[0], second[0]]);
    // The second op of terminal 1 waits until the first resolves.
    let rid_first = sent[0].0;
    engine.handle(
        t(20),
        ClientEvent::Received {
            bytes: &result(rid_first, CommandResult::Ok),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(io.resolutions(), vec![(first[0], Resolution::Delivered)]);
    assert_eq!(io.applied_ops(), vec![second[0]]);
    assert_eq!(
        io.journal[0],
        JournalRecord::Resolved {
            op: first[0],
            resolution: Resolution::Delivered
        }
    );
    assert_eq!(engine.outbox().len(), 2);
}

/// The APPLY_INPUT request a `Transmit` carries: its request id and operation.
fn apply_in(action: &ClientAction) -> Option<(u32, OperationId)> {
    let ClientAction::Transmit(bytes) = action else {
        return None;
    };
    match Frame::decode(bytes).expect("a whole frame") {
        Frame::Command(c) => match c.command {
            Command::ApplyInput(a) => Some((c.request_id, a.operation_id)),
            _ => None,
        },
        _ => None,
    }
}

// [CLIENT.OUTBOX.1] One drain, in the order the engine yields it: the records first (an
// answer's Resolved, the next operation's Sent), then the notice, then the bytes that send
// what the records describe.
#[test]
fn client_outbox_1_records_come_before_the_notice_and_the_bytes() {
    let mut engine = ready(SERVER_A);
    let term = TerminalId::Local(1);
    let mut next = ids(0);
    let first = engine
        .apply_input(
            t(10),
            term.clone(),
            vec![key(PhysicalKey::KEY_A)],
            &mut next,
        )
        .unwrap()[0];
    let actions: Vec<ClientAction> = std::iter::from_fn(|| engine.poll_action()).collect();
    let [
        ClientAction::Journal(JournalRecord::Enqueued { input, .. }),
        ClientAction::Journal(JournalRecord::Sent { op, .. }),
        send,
    ] = &actions[..]
    else {
        panic!("not Enqueued, Sent, bytes: {actions:?}");
    };
    assert_eq!((input.operation_id, *op), (first, first));
    let (rid, sent) = apply_in(send).expect("APPLY_INPUT");
    assert_eq!(sent, first);
    let second = engine
        .apply_input(t(11), term, vec![key(PhysicalKey::KEY_B)], &mut next)
        .unwrap()[0];
    let actions: Vec<ClientAction> = std::iter::from_fn(|| engine.poll_action()).collect();
    assert!(
        matches!(&actions[..], [ClientAction::Journal(JournalRecord::Enqueued { input, .. })] if input.operation_id == second),
        "queued behind the first, not sent: {actions:?}"
    );
    engine.handle(
        t(20),
        ClientEvent::Received {
            bytes: &result(rid, CommandResult::Ok),
        },
    );
    let actions: Vec<ClientAction> = std::iter::from_fn(|| engine.poll_action()).collect();
    let [
        ClientAction::Journal(JournalRecord::Resolved { op: resolved, .. }),
        ClientAction::Journal(JournalRecord::Sent { op: now_sent, .. }),
        ClientAction::Notify(ClientNotice::OperationResolved { op: notified, .. }),
        send,
    ] = &actions[..]
    else {
        panic!("not Resolved, Sent, the notice, bytes: {actions:?}");
    };
    assert_eq!((*resolved, *now_sent, *notified), (first, second, first));
    assert_eq!(apply_in(send).map(|(_, op)| op), Some(second));
    assert_eq!(engine.poll_action(), None, "drained");
}

/// Submits one key op to terminal 1 and returns its request id and id.
fn send_one(engine: &mut ClientEngine, now: Instant) -> (u32, OperationId) {
    let ops = engine
        .apply_input(
            now,
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_A)],
            ids(0),
        )
        .unwrap();
    let io = drain(engine);
    let sent = io.applies();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.operation_id, ops[0]);
    (sent[0].0, ops[0])
}

// [CLIENT.RETRY.3] RESOURCE_EXHAUSTED: nothing was written; the same id goes again after
// the backoff, not before.
#[test]
fn client_retry_3_busy_is_retried_with_backoff_same_id() {
    let mut engine = ready(SERVER_A);
    let (rid, id) = send_one(&mut engine, t(100));
    engine.handle(
        t(110),
        ClientEvent::Received {
            bytes: &error(rid, ErrorCode::RESOURCE_EXHAUSTED),
        },
    );
    let io = drain(&mut engine);
    assert!(io.resolutions().is_empty());
    assert!(io.sent.is_empty());
    assert_eq!(io.journal, vec![JournalRecord::Answered { op: id }]);
    assert_eq!(engine.poll_timeout(), Some(t(160)));
    engine.handle(t(159), ClientEvent::Timeout);
    assert!(drain(&mut engine).sent.is_empty(), "not before the backoff");
    engine.handle(t(160), ClientEvent::Timeout);
    let io = drain(&mut engine);
    let again = io.applies();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1.operation_id, id, "same operation id");
    assert_ne!(again[0].0, rid, "a new request id");
    // Busy for longer than the server's 5 s same-terminal bound: still retried, then OK.
    let mut now = 160;
    let mut rid = again[0].0;
    for _ in 0..12 {
        engine.handle(
            t(now),
            ClientEvent::Received {
                bytes: &error(rid, ErrorCode::RESOURCE_EXHAUSTED),
            },
        );
        drain(&mut engine);
        let wake = engine.poll_timeout().unwrap();
        engine.handle(wake, ClientEvent::Timeout);
        now = wake.as_micros() / 1000;
        let io = drain(&mut engine);
        assert!(io.resolutions().is_empty());
        rid = io.applies()[0].0;
    }
    assert!(now > 5_000, "retried past the 5 s bound: {now} ms");
    engine.handle(
        t(now + 1),
        ClientEvent::Received {
            bytes: &result(rid, CommandResult::Ok),
        },
    );
    assert_eq!(
        drain(&mut engine).resolutions(),
        vec![(id, Resolution::Delivered)]
    );
}

// [CLIENT.RETRY.5] INPUT_NOT_WRITTEN: same id again, a bounded number of times, then
// refused (never unknown: nothing was written).
#[test]
fn client_retry_5_not_written_is_retried_then_refused() {
    let mut engine = ready(SERVER_A);
    let (mut rid, id) = send_one(&mut engine, t(100));
    let mut sends = 1;
    loop {
        engine.handle(
            t(200),
            ClientEvent::Received {
                bytes: &error(rid, ErrorCode::INPUT_NOT_WRITTEN),
            },
        );
        let io = drain(&mut engine);
        if let [(resolved, resolution)] = &io.resolutions()[..] {
            assert_eq!(*resolved, id);
            assert!(matches!(
                resolution,
                Resolution::Refused {
                    code: ErrorCode::INPUT_NOT_WRITTEN,
                    ..
                }
            ));
            break;
        }
        let wake = engine.poll_timeout().unwrap();
        engine.handle(wake, ClientEvent::Timeout);
        let io = drain(&mut engine);
        assert_eq!(io.applied_ops(), vec![id]);
        rid = io.applies()[0].0;
        sends += 1;
    }
    assert_eq!(sends, phux_core::client::retry::NOT_WRITTEN_RETRIES);
    assert!(engine.outbox().is_empty());
}

// [CLIENT.RETRY.4] INPUT_DELIVERY_UNKNOWN is reported, never replayed.
// [CLIENT.RETRY.6] Other codes are refusals for good.
#[test]
fn client_retry_4_and_6_unknown_and_refused_codes_end_the_operation() {
    for (code, expected) in [
        (
            ErrorCode::INPUT_DELIVERY_UNKNOWN,
            Some(UnknownReason::DeliveryUnknown),
        ),
        (ErrorCode::UNSAFE_PASTE, None),
        (ErrorCode::CANONICAL_LIMIT_EXCEEDED, None),
        (ErrorCode::INVALID_COMMAND, None),
        (ErrorCode::TERMINAL_NOT_FOUND, None),
        (ErrorCode::INPUT_LEASE_HELD, None),
        (ErrorCode::UNSUPPORTED_SATELLITE_ROUTE, None),
        (ErrorCode::PERMISSION_DENIED, None),
    ] {
        let mut engine = ready(SERVER_A);
        let (rid, id) = send_one(&mut engine, t(100));
        engine.handle(
            t(200),
            ClientEvent::Received {
                bytes: &error(rid, code),
            },
        );
        let io = drain(&mut engine);
        let want = match expected {
            Some(reason) => Resolution::Unknown(reason),
            None => Resolution::Refused {
                code,
                message: format!("server says {code}"),
            },
        };
        assert_eq!(io.resolutions(), vec![(id, want)], "{code}");
        // Nothing is ever resent.
        engine.handle(t(60_000), ClientEvent::Timeout);
        assert!(drain(&mut engine).sent.is_empty(), "{code}");
        assert!(engine.outbox().is_empty());
    }
}

// [CLIENT.RETRY.2] Lost before the answer: same server_id → resent with the same id after
// the new HELLO_OK; changed server_id → unknown; past the horizon → unknown.
#[test]
fn client_retry_2_connection_loss_same_incarnation_resends_same_id() {
    let mut engine = ready(SERVER_A);
    let (_, id) = send_one(&mut engine, t(100));
    engine.handle(t(200), ClientEvent::Disconnected);
    assert!(engine.outbox().pending(id).unwrap().in_doubt);
    engine.handle(t(300), ClientEvent::Connected);
    let io = drain(&mut engine);
    assert!(io.applies().is_empty(), "nothing before HELLO_OK");
    engine.handle(
        t(310),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(io.applied_ops(), vec![id]);
    let rid = io.applies()[0].0;
    engine.handle(
        t(320),
        ClientEvent::Received {
            bytes: &result(rid, CommandResult::Ok),
        },
    );
    assert_eq!(
        drain(&mut engine).resolutions(),
        vec![(id, Resolution::Delivered)]
    );
}

// [CLIENT.BIND.3] ... and the never-sent operation queued behind it is reported not sent: the
// new server's `local:1` is another program.
#[test]
fn client_retry_2_connection_loss_new_incarnation_is_unknown() {
    let mut engine = ready(SERVER_A);
    let (_, id) = send_one(&mut engine, t(100));
    // A second op queued behind it was never sent: it is addressed to the old server.
    let queued = engine
        .apply_input(
            t(101),
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_B)],
            ids(100),
        )
        .unwrap();
    drain(&mut engine);
    engine.handle(t(200), ClientEvent::Disconnected);
    engine.handle(t(300), ClientEvent::Connected);
    engine.handle(
        t(310),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_B),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![
            (id, Resolution::Unknown(UnknownReason::IncarnationChanged)),
            (queued[0], Resolution::NotSent(NotSentReason::ServerGone)),
        ]
    );
    assert!(io.applies().is_empty(), "nothing reaches the new server");
    assert!(engine.outbox().is_empty());
    // [CLIENT.OUTBOX.3] Both resolutions are journaled, so no later run reports them again.
    let resolved: Vec<_> = io
        .journal
        .iter()
        .filter(|r| matches!(r, JournalRecord::Resolved { .. }))
        .collect();
    assert_eq!(resolved.len(), 2);
}

#[test]
fn client_retry_2_connection_loss_past_horizon_is_unknown() {
    let mut engine = ready(SERVER_A);
    let (_, id) = send_one(&mut engine, t(100));
    engine.handle(t(200), ClientEvent::Disconnected);
    let late = t(100) + RESEND_HORIZON;
    engine.handle(late, ClientEvent::Connected);
    engine.handle(
        late,
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![(id, Resolution::Unknown(UnknownReason::HorizonElapsed))]
    );
    assert!(io.applies().is_empty());
}

// [CLIENT.FEATURE.1] A server without ACKNOWLEDGED_INPUT never receives APPLY_INPUT: what a
// journal left for it is refused, and new input is refused up front.
#[test]
fn server_without_acknowledged_input_gets_no_apply_input() {
    let mut first = ready(SERVER_A);
    let ops = first
        .apply_input(
            t(10),
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_A), key(PhysicalKey::KEY_B)],
            ids(0),
        )
        .unwrap();
    // The journal as it stood before the send.
    let records: Vec<JournalRecord> = drain(&mut first)
        .journal
        .into_iter()
        .filter(|r| matches!(r, JournalRecord::Enqueued { .. }))
        .collect();
    let mut engine = ClientEngine::restore(ClientConfig::default(), records).unwrap();
    engine.handle(t(20), ClientEvent::Connected);
    engine.handle(
        t(21),
        ClientEvent::Received {
            bytes: &hello_ok_with(SERVER_A, ServerFeatures::SHUTDOWN),
        },
    );
    let io = drain(&mut engine);
    assert!(io.applies().is_empty());
    assert!(matches!(
        &io.resolutions()[..],
        [(o, Resolution::Refused { .. })] if *o == ops[0]
    ));
    assert_eq!(
        engine.apply_input(
            t(22),
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_A)],
            ids(50)
        ),
        Err(OutboxError::NotSupported)
    );
}

// [CLIENT.BIND.6] Input before a handshake has no incarnation to be addressed to.
#[test]
fn client_bind_6_input_before_hello_ok_is_refused() {
    let mut engine = ClientEngine::new(ClientConfig::default());
    let submit = |engine: &mut ClientEngine| {
        engine.apply_input(
            t(0),
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_A)],
            ids(0),
        )
    };
    assert_eq!(submit(&mut engine), Err(OutboxError::NotConnected));
    engine.handle(t(1), ClientEvent::Connected);
    assert_eq!(submit(&mut engine), Err(OutboxError::NotConnected));
    assert!(engine.outbox().is_empty());
    engine.handle(
        t(2),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    assert!(submit(&mut engine).is_ok());
}

// [CLIENT.BIND.1] The Enqueued record names the incarnation of the connection the input was
// submitted on; [CLIENT.BIND.4] an operation still waiting when its submission is 9.5 min old
// is not sent but reported; a journal days old sends nothing.
#[test]
fn client_bind_4_operations_expire_unsent() {
    use phux_core::client::retry::OPERATION_HORIZON;
    let mut engine = ready(SERVER_A);
    let (rid, first) = send_one(&mut engine, t(100));
    let waiting = engine
        .apply_input(
            t(100),
            TerminalId::Local(1),
            vec![key(PhysicalKey::KEY_B)],
            ids(10),
        )
        .unwrap();
    let io = drain(&mut engine);
    assert!(io.journal.iter().any(|r| matches!(r,
        JournalRecord::Enqueued { addressed_to, .. } if *addressed_to == Incarnation::of(SERVER_A))));
    let journal: Vec<JournalRecord> = engine.outbox().compact();
    // The head's answer arrives only at the horizon (a stalled terminal, busy retries...).
    let late = t(100) + OPERATION_HORIZON;
    engine.handle(
        late,
        ClientEvent::Received {
            bytes: &result(rid, CommandResult::Ok),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![
            (first, Resolution::Delivered),
            (waiting[0], Resolution::NotSent(NotSentReason::Expired)),
        ]
    );
    assert!(io.applies().is_empty());
    // Restored three days later, against the same server: nothing goes out.
    let mut engine = ClientEngine::restore(ClientConfig::default(), journal).unwrap();
    engine.handle(t(3 * 86_400_000), ClientEvent::Connected);
    engine.handle(
        t(3 * 86_400_000),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert!(io.applies().is_empty());
    assert_eq!(
        io.resolutions(),
        vec![
            (first, Resolution::Unknown(UnknownReason::HorizonElapsed)),
            (waiting[0], Resolution::NotSent(NotSentReason::Expired)),
        ]
    );
}

// [CLIENT.RESUME.1] With a scope, only that terminal's restored operations are sent; the
// others stay pending and journaled, untouched, even across a new incarnation.
#[test]
fn client_resume_1_scope_keeps_other_terminals_untouched() {
    let mut first = ready(SERVER_A);
    let mut all = Vec::new();
    for (n, term) in [(0, 1), (10, 2), (20, 1)] {
        all.extend(
            first
                .apply_input(
                    t(5),
                    TerminalId::Local(term),
                    vec![key(PhysicalKey::KEY_A)],
                    ids(n),
                )
                .unwrap(),
        );
    }
    let records: Vec<JournalRecord> = drain(&mut first)
        .journal
        .into_iter()
        .filter(|r| matches!(r, JournalRecord::Enqueued { .. }))
        .collect();
    let mut engine = ClientEngine::restore(ClientConfig::default(), records.clone()).unwrap();
    engine.set_scope(t(6), Scope::Terminal(TerminalId::Local(2)));
    engine.handle(t(7), ClientEvent::Connected);
    engine.handle(
        t(8),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(io.applied_ops(), vec![all[1]]);
    assert_eq!(engine.outbox().active_len(), 1);
    // A new incarnation resolves nothing outside the scope.
    let mut engine = ClientEngine::restore(ClientConfig::default(), records).unwrap();
    engine.set_scope(t(6), Scope::Terminal(TerminalId::Local(2)));
    engine.handle(t(7), ClientEvent::Connected);
    engine.handle(
        t(8),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_B),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![(all[1], Resolution::NotSent(NotSentReason::ServerGone))]
    );
    assert_eq!(
        engine.outbox().queue(&TerminalId::Local(1)),
        vec![all[0], all[2]]
    );
    assert_eq!(engine.outbox().compact().len(), 2, "kept for a later run");
    // Dropping is the user's explicit choice; it resolves once.
    engine.drop_operations(&[all[0], all[0]]);
    assert_eq!(
        drain(&mut engine).resolutions(),
        vec![(all[0], Resolution::NotSent(NotSentReason::Dropped))]
    );
    // Widening the scope while connected settles what comes into it at once: never sent.
    engine.set_scope(t(9), Scope::All);
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![(all[2], Resolution::NotSent(NotSentReason::ServerGone))]
    );
    assert!(io.applies().is_empty());
    assert_eq!(engine.poll_timeout(), None, "nothing left to wake for");
}

// [CLIENT.HALFOPEN.1] An operation unanswered 9 s after its send makes the engine ask for a
// redial; [CLIENT.HALFOPEN.2] after the new HELLO_OK it is resent with the same id.
#[test]
fn client_halfopen_1_unanswered_operation_triggers_redial_then_resend() {
    let mut engine = ready(SERVER_A);
    let (_, id) = send_one(&mut engine, t(1_000));
    assert_eq!(engine.poll_timeout(), Some(t(10_000)));
    engine.handle(t(9_999), ClientEvent::Timeout);
    assert!(drain(&mut engine).events.is_empty());
    engine.handle(t(10_000), ClientEvent::Timeout);
    let io = drain(&mut engine);
    assert_eq!(
        io.events,
        vec![ClientNotice::Redial {
            reason: RedialReason::HalfOpen {
                op: id,
                waited: Duration::from_secs(9)
            }
        }]
    );
    // Asked once, and nothing more goes out on the presumed-dead connection.
    engine.handle(t(20_000), ClientEvent::Timeout);
    assert!(drain(&mut engine).events.is_empty());
    assert_eq!(engine.poll_timeout(), None);
    engine.handle(t(20_001), ClientEvent::Disconnected);
    engine.handle(t(20_002), ClientEvent::Connected);
    engine.handle(
        t(20_003),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(io.applied_ops(), vec![id]);
}

#[test]
fn detached_is_reported() {
    let mut engine = ready(SERVER_A);
    engine.handle(
        t(5),
        ClientEvent::Received {
            bytes: &Frame::Detached(Detached {
                reason: Some(DetachReason::SERVER_SHUTDOWN),
                message: "bye".into(),
            })
            .to_bytes(),
        },
    );
    assert_eq!(
        drain(&mut engine).events,
        vec![ClientNotice::Detached {
            reason: Some(DetachReason::SERVER_SHUTDOWN),
            message: "bye".into()
        }]
    );
}

#[test]
fn garbage_from_the_server_fails_the_connection_without_panic() {
    let mut engine = ready(SERVER_A);
    engine.handle(
        t(5),
        ClientEvent::Received {
            bytes: &[0, 0, 0, 0, 0xc2],
        },
    );
    let io = drain(&mut engine);
    assert!(matches!(io.events[..], [ClientNotice::ConnectionFailed(_)]));
    // Further bytes on the failed connection are ignored.
    engine.handle(
        t(6),
        ClientEvent::Received {
            bytes: &result(1, CommandResult::Ok),
        },
    );
    assert!(drain(&mut engine).events.is_empty());
}

// [CLIENT.OUTBOX.4] After a client restart mid-operation, the journal rebuilds the outbox
// and the operation is resent with the same id to the same incarnation.
#[test]
fn client_outbox_4_restart_mid_operation_resends_same_id() {
    let mut file = Vec::new();
    let (id, queued) = {
        let mut engine = ready(SERVER_A);
        let ops = engine
            .paste(
                t(100),
                TerminalId::Local(3),
                "héllo wörld".as_bytes().to_vec(),
                PasteTrust::Untrusted,
                ids(0),
            )
            .unwrap();
        let queued = engine
            .apply_input(
                t(101),
                TerminalId::Local(3),
                vec![key(PhysicalKey::ENTER)],
                ids(10),
            )
            .unwrap();
        let io = drain(&mut engine);
        assert_eq!(io.applied_ops(), ops);
        for record in &io.journal {
            record.encode(&mut file);
        }
        // The process dies here: no answer, no Resolved record.
        (ops[0], queued[0])
    };
    let decoded = decode_journal(&file);
    assert_eq!(decoded.torn_tail, None);
    let mut engine = ClientEngine::restore(ClientConfig::default(), decoded.records).unwrap();
    assert_eq!(
        engine.outbox().queue(&TerminalId::Local(3)),
        vec![id, queued]
    );
    assert!(engine.outbox().pending(id).unwrap().in_doubt);
    engine.handle(t(5_000), ClientEvent::Connected);
    engine.handle(
        t(5_001),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_A),
        },
    );
    let io = drain(&mut engine);
    let sent = io.applies();
    assert_eq!(io.applied_ops(), vec![id], "same id, and only the head");
    let InputEvent::Paste(p) = &sent[0].1.events[0] else {
        panic!("paste restored as a paste");
    };
    assert_eq!(p.data, "héllo wörld".as_bytes());
    assert_eq!(p.trust, PasteTrust::Untrusted);
    engine.handle(
        t(5_002),
        ClientEvent::Received {
            bytes: &result(sent[0].0, CommandResult::Ok),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(io.resolutions(), vec![(id, Resolution::Delivered)]);
    assert_eq!(io.applied_ops(), vec![queued]);
}

#[test]
fn client_outbox_4_restart_to_a_new_incarnation_reports_unknown() {
    let mut engine = ready(SERVER_A);
    let (_, id) = send_one(&mut engine, t(100));
    let records = engine.outbox().compact();
    let mut engine = ClientEngine::restore(ClientConfig::default(), records).unwrap();
    engine.handle(t(200), ClientEvent::Connected);
    engine.handle(
        t(201),
        ClientEvent::Received {
            bytes: &hello_ok(SERVER_B),
        },
    );
    let io = drain(&mut engine);
    assert_eq!(
        io.resolutions(),
        vec![(id, Resolution::Unknown(UnknownReason::IncarnationChanged))]
    );
    assert!(io.applies().is_empty());
}
