//! Runs transcripts against a server through a transport and decides each case's outcome.
//!
//! [`Runner`] holds the run-wide settings and runs one transcript at a time; the outcome
//! types it reports are in `outcome`. Inside, a case is a `Case` (`case`: the connections and
//! the step dispatch), whose steps are sent and checked by `expect` (what arrives), `repeat`
//! (blocks run a window ahead) and `probe` (the probe child's reports).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use phux_core::framing::FrameDecoder;
use phux_proto::Frame;
use phux_proto::notation::Value;

use crate::expectations::Expectations;
use crate::pattern::{self, Bindings, Templates};
use crate::spec::{Profile, Spec};
use crate::transcript::{Level, Step, StepKind, Transcript};
use crate::transport::{Connector, Recv, Transport};

mod case;
mod expect;
mod outcome;
mod probe;
mod repeat;
mod report;

use case::{Case, StepError, fresh_salt};
pub use outcome::{CaseReport, Failure, Outcome};

/// What the runner learnt from a first handshake with the server.
#[derive(Clone, Debug, Default)]
pub struct ServerInfo {
    /// HELLO_OK's feature names (`acknowledged_input`, `shutdown`, …).
    pub features: BTreeSet<String>,
}

/// Run-wide settings.
pub struct Runner<'a> {
    /// Opens a transport per case.
    pub connector: &'a dyn Connector,
    /// The prelude's templates.
    pub templates: Templates,
    /// The spec, for clause levels.
    pub spec: &'a Spec,
    /// phux's own sentences traced to our clauses, cited in a failure's requirement lines.
    pub matrix: &'a crate::matrix::Matrix,
    /// How long an expectation waits on a real transport.
    pub timeout: Duration,
    /// Cases not to run and the peer's known deviations.
    pub expectations: &'a Expectations,
    /// What the server advertised.
    pub server: ServerInfo,
    /// Which rules the run checks; under `phux` the runner also tolerates what only our
    /// rules forbid (an implicit attach of the spawner).
    pub profile: Profile,
}

/// Request ids the runner uses for its own commands (probe input), out of the transcripts' way.
const RUNNER_REQUEST_BASE: u32 = 0xf000_0000;
/// The nonce base of the runner's own PINGs (`c1 < nothing`).
const RUNNER_NONCE_BASE: u64 = 0x00c0_ffee_0000_0000;
/// How long one `recv` on a real transport waits before the runner looks at its deadline.
const POLL_SLICE: Duration = Duration::from_millis(50);

impl Runner<'_> {
    /// Connects once, sends the prelude's `Hello`, and reads the server's features.
    pub fn discover(&mut self) -> Result<(), String> {
        self.server.features = self.handshake()?;
        Ok(())
    }

    /// Whether the server still completes a handshake (HELLO answered by HELLO_OK on a new
    /// connection); `Err` says what happened instead.
    pub fn handshake(&self) -> Result<BTreeSet<String>, String> {
        let mut transport = self.connector.open().map_err(|e| e.to_string())?;
        self.handshake_on(transport.as_mut())
            .map_err(|e| match transport.server_stderr() {
                Some(stderr) => format!("{e}; the server's stderr:\n{stderr}"),
                None => e,
            })
    }

    fn handshake_on(&self, transport: &mut dyn Transport) -> Result<BTreeSet<String>, String> {
        let hello = self.templates.expand(&Value::ident("Hello"))?;
        let frame = Frame::from_value(&hello).map_err(|e| format!("prelude Hello: {e}"))?;
        let conn = transport.connect().map_err(|e| e.to_string())?;
        transport
            .send(conn, &frame.to_bytes())
            .map_err(|e| e.to_string())?;
        let mut decoder = FrameDecoder::new();
        let deadline = Instant::now() + self.timeout;
        loop {
            match transport
                .recv(conn, POLL_SLICE)
                .map_err(|e| e.to_string())?
            {
                Recv::Bytes(b) => decoder.push(&b),
                Recv::Closed => {
                    return Err("the server closed the connection before HELLO_OK".into());
                }
                Recv::Nothing if transport.virtual_time() || Instant::now() > deadline => {
                    return Err("no HELLO_OK".into());
                }
                Recv::Nothing => {}
            }
            while let Some(frame) = decoder.poll_frame().map_err(|e| e.to_string())? {
                if let Frame::HelloOk(_) = frame {
                    let value = frame.to_value();
                    let features = pattern::field(&value, "capabilities")
                        .and_then(|c| pattern::field(c, "features"));
                    let _ = transport.send(conn, &Frame::Detach.to_bytes());
                    return Ok(flag_names(features));
                }
            }
        }
    }

    /// The report of a case not run because the server stopped answering (`why` says since
    /// when).
    pub fn not_run(&self, t: &Transcript, why: String) -> CaseReport {
        let mut report = blank_report(t);
        report.outcome = Outcome::NotRun(why);
        report
    }

    /// The report of a case the run's profile leaves out.
    pub fn skipped(&self, t: &Transcript, why: String) -> CaseReport {
        let mut report = blank_report(t);
        report.outcome = Outcome::Skipped(why);
        report
    }

    /// Runs one case, then holds its outcome against the peer's known deviations: a listed
    /// case that fails is KNOWN, one that passes is KNOWN_PASSED (the list is stale).
    pub fn run(&self, t: &Transcript) -> CaseReport {
        let mut report = self.run_case(t);
        if let Some(known) = self.expectations.known_for(&t.id, self.connector.kind()) {
            let listed = format!("{} (phux: {})", known.why, known.phux);
            report.outcome = match report.outcome {
                Outcome::Fail | Outcome::NonStrict | Outcome::Error(_) => Outcome::Known(listed),
                Outcome::Pass => Outcome::KnownPassed(format!(
                    "listed as a known deviation but passed: {listed}"
                )),
                other => other,
            };
        }
        report
    }

    fn run_case(&self, t: &Transcript) -> CaseReport {
        let started = Instant::now();
        let mut report = blank_report(t);
        if let Some(reason) = self.expectations.disabled.get(&t.id) {
            report.outcome = Outcome::Disabled(reason.clone());
            return report;
        }
        let transport = match self.connector.open() {
            Ok(t) => t,
            Err(e) => {
                report.outcome = Outcome::Error(e.to_string());
                return report;
            }
        };
        if let Some(reason) = self.unsupported(t, transport.as_ref()) {
            report.outcome = Outcome::Unsupported(reason);
            return report;
        }
        let mut templates = self.templates.clone();
        for (name, value) in &t.defines {
            templates.define(name, value.clone());
        }
        let mut case = Case {
            transport,
            conns: BTreeMap::new(),
            bindings: Bindings::new(),
            templates,
            timeout: self.timeout,
            wire: Vec::new(),
            wire_budget: None,
            next_request: RUNNER_REQUEST_BASE,
            next_nonce: RUNNER_NONCE_BASE,
            op_salt: 0,
            probe_residue: BTreeMap::new(),
            spawned: Vec::new(),
            streams: BTreeMap::new(),
            tolerate_implicit_attach: self.profile == Profile::Phux,
            fresh_spawns: Vec::new(),
            implicit_streams: BTreeSet::new(),
            heard: false,
        };
        if !case.transport.virtual_time() {
            case.op_salt = fresh_salt();
        }
        for (name, value) in case.transport.vars() {
            case.bindings.insert(name, value);
        }
        for step in &t.steps {
            if let Err(e) = case.step(step) {
                let (outcome, expected, actual) = match e {
                    StepError::Failed { expected, actual } if probe_did_not_start(t, &actual) => (
                        Outcome::Error(
                            "the server could not start the probe child (see `--probe` and \
                             the README's probe section)"
                                .into(),
                        ),
                        expected,
                        actual,
                    ),
                    StepError::Failed { expected, actual } if step.clauses.is_empty() => (
                        Outcome::Error(format!(
                            "setup failed at line {}: the step checks no clause, so the \
                             case could not get to what it checks",
                            step.line
                        )),
                        expected,
                        actual,
                    ),
                    StepError::Failed { expected, actual } => {
                        (self.failure_outcome(step), expected, actual)
                    }
                    StepError::Runner(why) => (Outcome::Error(why.clone()), String::new(), why),
                };
                report.outcome = outcome;
                report.failure = Some(Failure {
                    line: step.line,
                    step: step.text.clone(),
                    clauses: step.clauses.clone(),
                    requirements: step
                        .clauses
                        .iter()
                        .map(|c| {
                            let phux = self.matrix.cites(c);
                            let phux = if phux.is_empty() {
                                String::new()
                            } else {
                                format!(" (phux: {})", phux.join(", "))
                            };
                            match self.spec.text(c) {
                                Some(text) => format!("[{c}] {text}{phux}"),
                                None => format!("[{c}] (not in the spec)"),
                            }
                        })
                        .collect(),
                    expected,
                    actual,
                });
                break;
            }
        }
        if report.outcome != Outcome::Pass {
            report.server_stderr = case.transport.server_stderr();
        }
        let shared = case.transport.shared_server();
        drop(case.transport);
        if shared && !case.spawned.is_empty() {
            // A shared server outlives the run: end every terminal the case started (a
            // terminal the case killed already is refused, which is fine).
            if let Err(e) = self.kill_terminals(&case.spawned) {
                case.wire.push(format!("cleanup: {e}"));
            }
        }
        report.wire = case.wire;
        report.heard_from_server = case.heard;
        report.elapsed = started.elapsed();
        report
    }

    /// Kills `terminals` over a connection of its own: KILL_TERMINAL one by one (KILL_TERMINALS
    /// with an id already gone is refused by some servers and skipped by others), then waits
    /// until every terminal it killed is reported closed (`pane_closed` on a server-scoped
    /// subscription), so that no later case sees events of this one's terminals.
    fn kill_terminals(&self, terminals: &[Value]) -> Result<(), String> {
        let parse = |text: &str| -> Result<Vec<u8>, String> {
            let value = Value::parse(text).map_err(|e| e.to_string())?;
            Ok(Frame::from_value(&value)
                .map_err(|e| e.to_string())?
                .to_bytes())
        };
        let mut transport = self.connector.open().map_err(|e| e.to_string())?;
        let conn = transport.connect().map_err(|e| e.to_string())?;
        let hello = self.templates.expand(&Value::ident("Hello"))?;
        let mut bytes = Frame::from_value(&hello)
            .map_err(|e| format!("prelude Hello: {e}"))?
            .to_bytes();
        bytes.extend(parse("SUBSCRIBE_EVENTS{}")?);
        for (i, terminal) in terminals.iter().enumerate() {
            let request_id = RUNNER_REQUEST_BASE + u32::try_from(i).unwrap_or(0);
            bytes.extend(parse(&format!(
                "COMMAND{{request_id={request_id} command=KILL_TERMINAL{{terminal={terminal}}}}}"
            ))?);
        }
        bytes.extend(parse("PING{nonce=0xc1ea}")?);
        transport.send(conn, &bytes).map_err(|e| e.to_string())?;
        let mut decoder = FrameDecoder::new();
        let deadline = Instant::now() + self.timeout;
        // Terminals whose kill was answered OK, and those reported closed since.
        let mut killed = 0usize;
        let mut closed = 0usize;
        let mut ponged = false;
        while Instant::now() < deadline {
            match transport
                .recv(conn, POLL_SLICE)
                .map_err(|e| e.to_string())?
            {
                Recv::Bytes(b) => decoder.push(&b),
                Recv::Closed => return Err("the server closed the cleanup connection".into()),
                Recv::Nothing => {}
            }
            while let Some(frame) = decoder.poll_frame().map_err(|e| e.to_string())? {
                let value = frame.to_value();
                match case::name_of(&value) {
                    "PONG" => ponged = true,
                    // COMMAND_RESULT's `ok` is a bare word, not a record.
                    "COMMAND_RESULT"
                        if pattern::field(&value, "result")
                            .is_some_and(|r| matches!(r, Value::Ident(w) if w == "ok")) =>
                    {
                        killed += 1;
                    }
                    "EVENT"
                        if pattern::field(&value, "event")
                            .is_some_and(|e| case::name_of(e) == "pane_closed")
                            && pattern::field(&value, "terminal")
                                .is_some_and(|t| terminals.contains(t)) =>
                    {
                        closed += 1;
                    }
                    _ => {}
                }
            }
            // The PONG comes after every kill's answer.
            if ponged && closed >= killed {
                let _ = transport.send(conn, &Frame::Detach.to_bytes());
                return Ok(());
            }
        }
        Err(format!(
            "cleanup: {closed} of the {killed} terminals killed were reported closed in time"
        ))
    }

    /// Why a case cannot run here, if it cannot.
    fn unsupported(&self, t: &Transcript, transport: &dyn Transport) -> Option<String> {
        // Runner capabilities: whether this transport lacks each, and why that matters.
        let lacking = |need: &str| -> Option<(bool, &str)> {
            Some(match need {
                "local-socket" => (
                    !transport.local_socket(),
                    "not a local-socket peer: the server MAY refuse this here",
                ),
                "own-server" => (
                    transport.shared_server(),
                    "would end a server that other cases share",
                ),
                "probe" => (
                    !transport.vars().iter().any(|(k, _)| k == "PROBE"),
                    "no probe child on this transport",
                ),
                "restart" => (
                    !transport.can_restart(),
                    "the runner does not own this server's process: it cannot restart it",
                ),
                "upgrade" => (
                    !transport.can_upgrade(),
                    "this transport cannot carry the server over to a new image in place",
                ),
                "fresh-server" => (
                    transport.shared_server(),
                    "needs a server no other case uses (it fills the server's ledger, which \
                     would refuse other cases' operations for 600 s)",
                ),
                "virtual-time" => (
                    !transport.virtual_time(),
                    "lets minutes pass: only virtual time can, a real transport would sleep",
                ),
                "byte-stream" => (
                    !transport.byte_stream(),
                    "cuts a frame across writes: over a WebSocket each message carries exactly \
                     one whole frame (spec/websocket.md, WS.FRAME.1)",
                ),
                "same-turn" => (
                    !transport.same_turn(),
                    "checks the order of the server's turns: only in process do a `together` \
                     block's frames surely reach the server before its next turn",
                ),
                _ => return None,
            })
        };
        for need in &t.requires {
            // `!feature`: the case is for servers that do not advertise it.
            if let Some(feature) = need.strip_prefix('!') {
                if self.server.features.contains(feature) {
                    return Some(format!(
                        "the server advertises `{feature}` in HELLO_OK; the case is for servers \
                         that do not"
                    ));
                }
                continue;
            }
            match lacking(need) {
                Some((true, why)) => return Some(why.into()),
                Some((false, _)) => {}
                // Not a runner capability: a feature the server advertises in HELLO_OK.
                None if !self.server.features.contains(need) => {
                    return Some(format!(
                        "the server does not advertise `{need}` in HELLO_OK"
                    ));
                }
                None => {}
            }
        }
        let needed = connections_needed(&t.steps);
        if let Some(max) = transport.max_connections()
            && needed > max
        {
            return Some(format!(
                "needs {needed} connections; this transport carries {max}"
            ));
        }
        None
    }

    /// FAIL when a clause the failing step cites is MUST, else NON_STRICT (a step that cites
    /// none is setup, an ERROR, decided before this).
    fn failure_outcome(&self, step: &Step) -> Outcome {
        let level = step
            .clauses
            .iter()
            .filter_map(|c| self.spec.level(c))
            .min()
            .unwrap_or(Level::Must);
        if level == Level::Must {
            Outcome::Fail
        } else {
            Outcome::NonStrict
        }
    }
}

fn blank_report(t: &Transcript) -> CaseReport {
    CaseReport {
        id: t.id.clone(),
        description: t.description.clone(),
        requirement: t.requirement.clone(),
        clauses: t.clauses.clone(),
        outcome: Outcome::Pass,
        failure: None,
        wire: Vec::new(),
        elapsed: Duration::ZERO,
        server_stderr: None,
        heard_from_server: false,
    }
}

/// Whether a failed step's actual frames show the server refusing to spawn the probe: then
/// the case could not run (ERROR), whatever clause the step cites.
fn probe_did_not_start(t: &Transcript, actual: &str) -> bool {
    t.requires.iter().any(|r| r == "probe")
        && actual.contains("TERMINAL_SPAWNED")
        && actual.contains("result=error")
}

fn step_conn(kind: &StepKind) -> Option<&str> {
    match kind {
        StepKind::Send { conn, .. }
        | StepKind::SendRaw { conn, .. }
        | StepKind::Expect { conn, .. }
        | StepKind::Unordered { conn, .. }
        | StepKind::Nothing { conn }
        | StepKind::Closed { conn }
        | StepKind::Disconnect { conn }
        | StepKind::Connect { conn }
        | StepKind::ProbeSend { conn, .. }
        | StepKind::ProbeExpect { conn, .. }
        | StepKind::Reading { conn, .. }
        | StepKind::ExpectRun { conn, .. }
        | StepKind::ReadBound { conn, .. } => Some(conn),
        StepKind::Advance(_)
        | StepKind::Check { .. }
        | StepKind::Restart
        | StepKind::Repeat(_)
        | StepKind::Together(_) => None,
    }
}

/// The most connections one server incarnation sees: each name's first use, and each
/// `connect` of a name used before (a reconnect), counted afresh after every `restart`.
fn connections_needed(steps: &[Step]) -> usize {
    #[derive(Default)]
    struct Count<'a> {
        /// Names used since the last restart.
        used: BTreeSet<&'a str>,
        /// Names used at all.
        ever: BTreeSet<&'a str>,
        opened: usize,
        max: usize,
    }
    fn walk<'a>(steps: &'a [Step], n: &mut Count<'a>) {
        for step in steps {
            match &step.kind {
                StepKind::Restart => {
                    n.used.clear();
                    n.opened = 0;
                }
                StepKind::Repeat(r) => walk(&r.body, n),
                StepKind::Together(body) => walk(body, n),
                StepKind::Connect { conn } if n.ever.contains(conn.as_str()) => {
                    n.used.insert(conn);
                    n.opened += 1;
                }
                // Closing a connection opens none.
                StepKind::Closed { conn } | StepKind::Disconnect { conn }
                    if n.ever.contains(conn.as_str()) => {}
                kind => {
                    if let Some(conn) = step_conn(kind)
                        && n.used.insert(conn)
                    {
                        n.ever.insert(conn);
                        n.opened += 1;
                    }
                }
            }
            n.max = n.max.max(n.opened);
        }
    }
    let mut n = Count::default();
    walk(steps, &mut n);
    n.max
}

/// The names in a flag-set value (`a|b`, `a`, `none`).
fn flag_names(value: Option<&Value>) -> BTreeSet<String> {
    match value {
        Some(Value::Ident(name)) if name != "none" => [name.clone()].into(),
        Some(Value::Union(parts)) => parts.iter().map(ToString::to_string).collect(),
        _ => BTreeSet::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(body: &str) -> Vec<Step> {
        let text = format!("id: a/001\nlevel: MUST\ndescription: d\nrequirement: r\n---\n{body}");
        crate::transcript::parse("x", &text).unwrap().steps
    }

    #[test]
    fn connections_are_counted_per_incarnation_with_reconnects() {
        let needed = |body: &str| connections_needed(&steps(body));
        assert_eq!(needed("c1 > PING{nonce=1}\nc1 < PONG{nonce=1}\n"), 1);
        assert_eq!(needed("c1 > PING{nonce=1}\nc2 > PING{nonce=1}\n"), 2);
        // A reconnect to the same server is a second connection to it ...
        assert_eq!(needed("c1 > PING{nonce=1}\nc1 disconnect\nc1 connect\n"), 2);
        // ... but not across a restart, and closing one opens none.
        assert_eq!(
            needed("c1 > PING{nonce=1}\nrestart\nc1 closed\nc1 connect\nc1 > PING{nonce=1}\n"),
            1
        );
        assert_eq!(
            needed("repeat 3 {\nc1 > PING{nonce=1}\nc2 > PING{nonce=1}\n}\n"),
            2
        );
    }

    #[test]
    fn flag_names_of_a_feature_set() {
        let v = Value::parse("acknowledged_input|shutdown").unwrap();
        assert_eq!(flag_names(Some(&v)).len(), 2);
        assert!(flag_names(Some(&Value::ident("none"))).is_empty());
    }
}
