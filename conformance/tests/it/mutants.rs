//! The suite can fail: against a server with one rule broken, the case checking that rule
//! FAILs, on a step citing that rule's clause.
//!
//! Most mutants are our in-process server with its output tampered with on the way to the
//! runner (a frame changed, dropped or repeated), so each breaks exactly one observable rule.
//! One is a real rule flip in the server itself ([`BrokenInProcess`]): the driver writes a
//! retried operation's job to the PTY again after the engine answered it from the ledger.

use std::collections::BTreeMap;
use std::time::Duration;

use phux_conformance::runner::Outcome;
use phux_conformance::suite::{Paths, Suite};
use phux_conformance::transport::{
    BrokenInProcess, ConnKey, Connector, InProcess, Recv, RuleFlip, Transport, TransportError,
};
use phux_core::framing::FrameDecoder;
use phux_proto::command::CommandResult;
use phux_proto::event::{AgentEvent, ControlAction};
use phux_proto::frame::{DetachReason, Pong, TerminalOutput, TombstoneReason};
use phux_proto::notation::Value;
use phux_proto::{ErrorCode, Frame};

/// What a broken server does to one frame it sends: replace it with these frames.
type Mutation = fn(Frame) -> Vec<Frame>;

struct Mutant(Mutation);

impl Connector for Mutant {
    fn kind(&self) -> &'static str {
        "in-process"
    }

    fn describe(&self) -> String {
        "mutant".into()
    }
    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(MutantTransport {
            inner: InProcess.open()?,
            mutation: self.0,
            decoders: BTreeMap::new(),
        }))
    }
}

struct MutantTransport {
    inner: Box<dyn Transport>,
    mutation: Mutation,
    decoders: BTreeMap<ConnKey, FrameDecoder>,
}

impl Transport for MutantTransport {
    fn virtual_time(&self) -> bool {
        self.inner.virtual_time()
    }
    fn max_connections(&self) -> Option<usize> {
        self.inner.max_connections()
    }
    fn vars(&self) -> Vec<(String, Value)> {
        self.inner.vars()
    }
    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        self.inner.connect()
    }
    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        self.inner.send(conn, bytes)
    }
    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        match self.inner.recv(conn, wait)? {
            Recv::Bytes(bytes) => {
                let decoder = self.decoders.entry(conn).or_default();
                decoder.push(&bytes);
                let mut out = Vec::new();
                while let Ok(Some(frame)) = decoder.poll_frame() {
                    for f in (self.mutation)(frame) {
                        out.extend_from_slice(&f.to_bytes());
                    }
                }
                Ok(if out.is_empty() {
                    Recv::Nothing
                } else {
                    Recv::Bytes(out)
                })
            }
            other => Ok(other),
        }
    }
    fn disconnect(&mut self, conn: ConnKey) {
        self.inner.disconnect(conn);
    }
    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        self.inner.set_reading(conn, reading)
    }
    fn advance(&mut self, by: Duration) {
        self.inner.advance(by);
    }
}

/// Runs case `id` against the mutant; asserts FAIL on a step citing `clause`.
fn fails_on(mutation: Mutation, id: &str, clause: &str) {
    fails_against(&Mutant(mutation), id, clause);
}

/// Runs case `id` against a broken server; asserts FAIL on a step citing `clause`, and PASS
/// against the untouched one.
fn fails_against(broken: &dyn Connector, id: &str, clause: &str) {
    let suite = Suite::load(&Paths::default()).unwrap();
    let cases = suite.run(broken, Some(id), Duration::from_secs(1)).unwrap();
    let [case] = cases.as_slice() else {
        panic!("{id}: {} cases", cases.len())
    };
    assert_eq!(case.outcome, Outcome::Fail, "{id}: {:?}", case.failure);
    let failure = case.failure.as_ref().unwrap();
    assert!(
        failure.clauses.iter().any(|c| c == clause),
        "{id} failed on {:?}, not on [{clause}]: {failure:?}",
        failure.clauses
    );
    // And the untouched server passes the same case.
    let clean = suite
        .run(&InProcess, Some(id), Duration::from_secs(1))
        .unwrap();
    assert_eq!(
        clean[0].outcome,
        Outcome::Pass,
        "{id}: {:?}",
        clean[0].failure
    );
}

#[test]
fn pong_with_another_nonce_fails_ping_echo() {
    fails_on(
        |f| match f {
            Frame::Pong(p) => vec![Frame::Pong(Pong { nonce: p.nonce ^ 1 })],
            f => vec![f],
        },
        "handshake/001",
        "PING.ECHO.1",
    );
}

#[test]
fn detach_answered_with_the_wrong_reason_fails_detach_request() {
    fails_on(
        |f| match f {
            Frame::Detached(mut d) if d.reason == Some(DetachReason::REQUESTED) => {
                d.reason = Some(DetachReason::PROTOCOL_ERROR);
                vec![Frame::Detached(d)]
            }
            f => vec![f],
        },
        "handshake/013",
        "DETACH.REQUEST.1",
    );
}

#[test]
fn framing_violation_with_the_wrong_code_fails_frame_violation() {
    fails_on(
        |f| match f {
            Frame::Error(mut e) if e.code == ErrorCode::FRAME_TOO_LARGE => {
                e.code = ErrorCode::MALFORMED_MESSAGE;
                vec![Frame::Error(e)]
            }
            f => vec![f],
        },
        "framing/001",
        "FRAME.VIOLATION.1",
    );
}

#[test]
fn release_not_broadcast_fails_lease_release() {
    fails_on(
        |f| match &f {
            Frame::Event(e) if matches!(&e.event, AgentEvent::TerminalControl(c) if c.action == ControlAction::Released) =>
            {
                vec![]
            }
            _ => vec![f],
        },
        "lease/004",
        "LEASE.RELEASE.1",
    );
}

#[test]
fn retried_input_written_twice_fails_dedupe() {
    // Output repeated: what a server that wrote a retried operation again would show.
    fails_on(
        |f| match &f {
            Frame::TerminalOutput(o) if o.bytes == b"q1" => vec![f.clone(), f],
            _ => vec![f],
        },
        "input/003",
        "INPUT.DEDUPE.2",
    );
}

#[test]
fn route_input_accepted_under_anothers_lease_fails_lease_gate() {
    fails_on(
        |f| match f {
            Frame::CommandResult(mut r) if matches!(&r.result, CommandResult::Error { code, .. } if *code == ErrorCode::INPUT_LEASE_HELD) =>
            {
                r.result = CommandResult::Ok;
                vec![Frame::CommandResult(r)]
            }
            f => vec![f],
        },
        "lease/008",
        "LEASE.GATE.2",
    );
}

#[test]
fn a_server_that_writes_retries_again_fails_dedupe() {
    // Not a tampered frame: the server's driver really writes the job a second time.
    fails_against(
        &BrokenInProcess(RuleFlip::RewriteRetries),
        "input/003",
        "INPUT.DEDUPE.2",
    );
}

#[test]
fn output_of_a_bootstrap_after_its_outbound_gap_tombstone_fails_queue_output() {
    fails_on(
        |f| match f {
            Frame::BootstrapTombstone(t) if t.reason == TombstoneReason::OutboundGap => {
                let late = Frame::TerminalOutput(TerminalOutput {
                    terminal: t.terminal.clone(),
                    seq: t.last_valid_seq + 1,
                    bytes: b"late".to_vec(),
                    stream: t.stream,
                    bootstrap: t.bootstrap,
                });
                vec![Frame::BootstrapTombstone(t), late]
            }
            f => vec![f],
        },
        "queue/001",
        "QUEUE.OUTPUT.1",
    );
}

#[test]
fn a_bell_dropped_for_a_client_that_did_not_read_fails_queue_control() {
    fails_on(
        |f| match f {
            Frame::Bell(_) => vec![],
            f => vec![f],
        },
        "queue/001",
        "QUEUE.CONTROL.1",
    );
}
