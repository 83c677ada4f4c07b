//! The network fuzzer (`phux-conformance fuzz`): it finds three deliberately broken servers,
//! each within a bounded number of sessions, minimises each finding to a transcript that
//! fails against the broken server and passes against ours, and finds nothing in our engine
//! or our real server over a fixed-seed campaign.
//!
//! The broken servers are our in-process engine behind a wrapper transport, each with one bug
//! of a different kind: a crash on one field value, a missing reply, and an unbounded queue
//! (the wrapper keeps reading the engine for a client that stopped reading, so the engine
//! never sees backpressure and the held bytes grow without bound).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io;
use std::time::Duration;

use phux_conformance::netfuzz::replay::Replay;
use phux_conformance::netfuzz::run::{Bounds, Kind};
use phux_conformance::netfuzz::{Campaign, Report, campaign, write_findings};
use phux_conformance::runner::Outcome;
use phux_conformance::suite::{Paths, Suite};
use phux_conformance::transport::{
    ConnKey, Connector, InProcess, Recv, SocketConnector, Transport, TransportError,
};
use phux_core::framing::FrameDecoder;
use phux_proto::Frame;
use phux_proto::command::{Command, Signal};
use phux_proto::notation::Value;

use crate::suite::Server;

/// The bug a [`Broken`] server has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bug {
    /// Dies (every connection closed, no more accepted) on a GET_TERMINAL_STATE asking for
    /// 65,535 history rows.
    CrashOnField,
    /// Never answers SIGNAL_TERMINAL{RESUME}.
    MissingReply,
    /// Holds everything for a client that stopped reading.
    UnboundedQueue,
}

struct Broken(Bug);

impl Connector for Broken {
    fn describe(&self) -> String {
        format!("in-process, broken: {:?}", self.0)
    }
    fn kind(&self) -> &'static str {
        "in-process"
    }
    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(BrokenTransport {
            inner: InProcess.open()?,
            bug: self.0,
            dead: false,
            client: BTreeMap::new(),
            server: BTreeMap::new(),
            unanswered: BTreeSet::new(),
            paused: BTreeMap::new(),
            ready: BTreeMap::new(),
        }))
    }
}

struct BrokenTransport {
    inner: Box<dyn Transport>,
    bug: Bug,
    dead: bool,
    client: BTreeMap<ConnKey, FrameDecoder>,
    server: BTreeMap<ConnKey, FrameDecoder>,
    /// Request ids whose result the server drops.
    unanswered: BTreeSet<u32>,
    /// What a paused connection's server side has taken from the engine (unbounded).
    paused: BTreeMap<ConnKey, VecDeque<u8>>,
    /// Held bytes a resumed connection gets on its next `recv`.
    ready: BTreeMap<ConnKey, Vec<u8>>,
}

impl BrokenTransport {
    /// The client frames in `bytes` (for deciding what the bug does).
    fn client_frames(&mut self, conn: ConnKey, bytes: &[u8]) -> Vec<Frame> {
        let d = self.client.entry(conn).or_default();
        d.push(bytes);
        let mut out = Vec::new();
        while let Ok(Some(f)) = d.poll_frame() {
            out.push(f);
        }
        out
    }
}

impl Transport for BrokenTransport {
    fn virtual_time(&self) -> bool {
        true
    }
    fn max_connections(&self) -> Option<usize> {
        None
    }
    fn vars(&self) -> Vec<(String, Value)> {
        self.inner.vars()
    }
    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        if self.dead {
            return Err(TransportError::Io {
                context: "connect".into(),
                source: io::Error::from(io::ErrorKind::ConnectionRefused),
            });
        }
        self.inner.connect()
    }
    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        if self.dead {
            return Ok(());
        }
        for f in self.client_frames(conn, bytes) {
            match (self.bug, f) {
                (Bug::CrashOnField, Frame::Command(c))
                    if matches!(
                        c.command,
                        Command::GetTerminalState {
                            max_scrollback_lines: u16::MAX,
                            ..
                        }
                    ) =>
                {
                    self.dead = true;
                    return Ok(());
                }
                (Bug::MissingReply, Frame::Command(c))
                    if matches!(
                        c.command,
                        Command::SignalTerminal {
                            signal: Signal::Resume,
                            ..
                        }
                    ) =>
                {
                    self.unanswered.insert(c.request_id);
                }
                _ => {}
            }
        }
        self.inner.send(conn, bytes)
    }
    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        if self.dead {
            return Ok(Recv::Closed);
        }
        let got = self.inner.recv(conn, wait)?;
        let got = self.drop_results(conn, got);
        if let Some(held) = self.paused.get_mut(&conn) {
            if let Recv::Bytes(b) = got {
                held.extend(b);
            }
            return Ok(Recv::Nothing);
        }
        let Some(mut ready) = self.ready.remove(&conn) else {
            return Ok(got);
        };
        match got {
            Recv::Bytes(b) => ready.extend(b),
            // A close comes on the next call, after what was held.
            Recv::Closed | Recv::Nothing => {}
        }
        Ok(Recv::Bytes(ready))
    }
    fn disconnect(&mut self, conn: ConnKey) {
        self.inner.disconnect(conn);
    }
    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        if self.bug != Bug::UnboundedQueue {
            return self.inner.set_reading(conn, reading);
        }
        // The engine is never paused: this server's writer takes everything into a queue of
        // its own, which grows for as long as the client does not read.
        if reading {
            let held: Vec<u8> = self.paused.remove(&conn).unwrap_or_default().into();
            if !held.is_empty() {
                self.ready.insert(conn, held);
            }
        } else {
            self.paused.insert(conn, VecDeque::new());
        }
        Ok(())
    }
    fn advance(&mut self, by: Duration) {
        self.inner.advance(by);
        let conns: Vec<ConnKey> = self.paused.keys().copied().collect();
        for c in conns {
            let _ = self.recv(c, Duration::ZERO);
        }
    }
}

impl BrokenTransport {
    /// A [`Bug::MissingReply`] server leaves out the results it will not send.
    fn drop_results(&mut self, conn: ConnKey, got: Recv) -> Recv {
        let Recv::Bytes(bytes) = got else {
            return got;
        };
        if self.bug != Bug::MissingReply {
            return Recv::Bytes(bytes);
        }
        let d = self.server.entry(conn).or_default();
        d.push(&bytes);
        let mut out = Vec::new();
        while let Ok(Some(f)) = d.poll_frame() {
            if let Frame::CommandResult(r) = &f
                && self.unanswered.remove(&r.request_id)
            {
                continue;
            }
            f.encode(&mut out);
        }
        if out.is_empty() {
            Recv::Nothing
        } else {
            Recv::Bytes(out)
        }
    }
}

/// A campaign that stops at its first finding, within `sessions` sessions.
fn hunt(connector: &dyn Connector, sessions: u64) -> Report {
    let c = Campaign {
        seed: 26,
        duration: Duration::from_hours(1),
        max_sessions: Some(sessions),
        stop_at_first: true,
        ..Campaign::default()
    };
    campaign(connector, &c)
}

/// The finding's transcript, loaded as a suite from a scratch directory.
fn finding_suite(report: &Report) -> (Suite, tempdir::Dir) {
    let dir = tempdir::Dir::new("netfuzz");
    write_findings(&dir.0, report).unwrap();
    let paths = Paths {
        transcripts: dir.0.clone(),
        ..Paths::default()
    };
    (Suite::load(&paths).unwrap(), dir)
}

/// A scratch directory removed on drop.
mod tempdir {
    use std::path::PathBuf;

    pub(super) struct Dir(pub(super) PathBuf);

    impl Dir {
        pub(super) fn new(tag: &str) -> Self {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos();
            let dir =
                std::env::temp_dir().join(format!("phux-{tag}-{}-{nanos}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The bug is found within the bound, minimised, and its transcript fails against the broken
/// server and passes against ours.
fn found_and_minimised(bug: Bug, kind: &Kind, sessions: u64) {
    let report = hunt(&Broken(bug), sessions);
    let [r] = report.findings.as_slice() else {
        panic!(
            "{bug:?}: {} findings in {} sessions",
            report.findings.len(),
            report.sessions
        );
    };
    assert_eq!(&r.finding.kind, kind, "{bug:?}: {:?}", r.finding);
    assert!(
        r.minimised.len() < r.original.len() && r.minimised.len() <= 8,
        "{bug:?}: {} actions minimised to {:?} in {} runs",
        r.original.len(),
        r.minimised,
        r.minimise_runs
    );
    println!(
        "{bug:?}: found in session {} of {}, {} actions minimised to {} in {} runs
{}",
        r.session,
        report.sessions,
        r.original.len(),
        r.minimised.len(),
        r.minimise_runs,
        r.transcript
    );
    // Checked both ways before it was written ...
    assert_eq!(r.replay, Replay::Confirmed, "{bug:?}:\n{}", r.transcript);
    // ... and the file written replays so: it FAILs (a cited step, not setup) against the
    // broken server and PASSes against ours.
    let (suite, _dir) = finding_suite(&report);
    assert_eq!(
        suite.transcripts.len(),
        1,
        "{bug:?}: the finding was not written as a case"
    );
    let timeout = Duration::from_secs(5);
    let broken = suite.run(&Broken(bug), None, timeout).unwrap();
    assert!(
        broken
            .iter()
            .all(|c| matches!(c.outcome, Outcome::Fail | Outcome::NonStrict)),
        "{broken:?}"
    );
    let honest = suite.run(&InProcess, None, timeout).unwrap();
    assert!(
        honest.iter().all(|c| c.outcome == Outcome::Pass),
        "{honest:?}"
    );
}

#[test]
fn finds_a_crash_on_a_field_value() {
    found_and_minimised(Bug::CrashOnField, &Kind::ServerDown, 2000);
}

#[test]
fn finds_a_missing_reply() {
    found_and_minimised(
        Bug::MissingReply,
        &Kind::MissingReply("SIGNAL_TERMINAL".into()),
        2000,
    );
}

#[test]
fn finds_an_unbounded_queue() {
    found_and_minimised(Bug::UnboundedQueue, &Kind::QueueBound, 2000);
}

/// A fixed-seed campaign finds nothing in our engine.
#[test]
fn our_engine_survives_a_fixed_seed_campaign() {
    let c = Campaign {
        seed: 0x7068_7578,
        max_sessions: Some(1500),
        duration: Duration::from_hours(1),
        ..Campaign::default()
    };
    let report = campaign(&InProcess, &c);
    let found: Vec<_> = report.findings.iter().map(|r| &r.transcript).collect();
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(report.sessions, 1500);
}

/// A short fixed-seed campaign finds nothing in our real server over its socket.
#[test]
fn our_server_survives_a_short_fixed_seed_campaign() {
    let server = Server::start();
    let connector = SocketConnector {
        path: server.socket.clone(),
        probe: None,
    };
    let c = Campaign {
        seed: 0x7068_7578,
        max_sessions: Some(40),
        duration: Duration::from_mins(10),
        // Generous: a loaded 2-core machine can take seconds to schedule the server.
        bounds: Bounds {
            liveness: Duration::from_secs(10),
            grace: Duration::from_secs(20),
            ..Bounds::default()
        },
        ..Campaign::default()
    };
    let report = campaign(&connector, &c);
    let found: Vec<_> = report.findings.iter().map(|r| &r.transcript).collect();
    assert!(found.is_empty(), "{found:#?}");
    assert_eq!(report.sessions, 40);
    // Every session killed the terminals it spawned (a kill takes up to the 2 s hangup grace).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = live_terminals(&connector);
        if left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{left} terminals left running"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// How many terminals the server has (GET_STATE on a fresh connection).
fn live_terminals(connector: &SocketConnector) -> usize {
    use phux_conformance::netfuzz::run::hello;
    use phux_proto::command::{CommandResult, CommandValue, StateScope};
    use phux_proto::frame::CommandFrame;

    let mut t = connector.open().unwrap();
    let c = t.connect().unwrap();
    let mut bytes = hello().to_bytes();
    Frame::Command(CommandFrame {
        request_id: 1,
        command: Command::GetState {
            scope: StateScope::Server,
        },
    })
    .encode(&mut bytes);
    t.send(c, &bytes).unwrap();
    let mut d = FrameDecoder::default();
    loop {
        match t.recv(c, Duration::from_secs(10)).unwrap() {
            Recv::Bytes(b) => d.push(&b),
            other => panic!("no GET_STATE result: {other:?}"),
        }
        while let Some(f) = d.poll_frame().unwrap() {
            if let Frame::CommandResult(r) = f
                && let CommandResult::OkWith(CommandValue::State(s)) = r.result
            {
                return s.terminals.len();
            }
        }
    }
}

/// The `netfuzz_session` cargo-fuzz target's committed corpus and every minimised crash it
/// found (`fuzz/regressions/netfuzz_session/`, when there are any), replayed through its body
/// on stable: every input is a session our engine must pass.
#[test]
fn the_fuzz_corpus_and_regressions_replay_clean() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut files = 0;
    for dir in ["corpus", "regressions"] {
        let dir = fuzz.join(dir).join("netfuzz_session");
        // Only the corpus must exist: a target may have found nothing yet.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            assert!(
                dir.ends_with("regressions/netfuzz_session"),
                "no corpus in {}",
                dir.display()
            );
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            phux_conformance::netfuzz::fuzzing::session(&std::fs::read(&path).unwrap());
            files += 1;
        }
    }
    assert!(files >= 5, "{files} inputs in {}", fuzz.display());
}
