//! Runs transcripts against a server through a transport and decides each case's outcome.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use phux_core::framing::FrameDecoder;
use phux_proto::Frame;
use phux_proto::notation::Value;

use crate::pattern::{self, Bindings, Templates};
use crate::spec::Spec;
use crate::transcript::{CheckOp, Level, Repeat, Step, StepKind, Transcript, Until};
use crate::transport::{ConnKey, Connector, Recv, Transport, TransportError};

/// How a case ended.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// Every step held.
    Pass,
    /// A step citing a MUST clause failed.
    Fail,
    /// A step citing only SHOULD (or MAY) clauses failed.
    NonStrict,
    /// The server does not advertise a feature the case needs, or the transport cannot do it.
    Unsupported(String),
    /// Listed in the expectations file, with the reason given there; not run.
    Disabled(String),
    /// The runner or the transport failed (a transcript bug, an I/O error).
    Error(String),
}

impl Outcome {
    /// The report's name for it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Fail => "FAIL",
            Self::NonStrict => "NON_STRICT",
            Self::Unsupported(_) => "UNSUPPORTED",
            Self::Disabled(_) => "DISABLED",
            Self::Error(_) => "ERROR",
        }
    }

    /// Whether it makes the run fail.
    pub fn is_failure(&self) -> bool {
        matches!(self, Self::Fail | Self::Error(_))
    }
}

/// What a failing step wanted and what it got.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Failure {
    /// The step's line in the transcript.
    pub line: usize,
    /// The step's text.
    pub step: String,
    /// The clauses the step cites.
    pub clauses: Vec<String>,
    /// What was expected.
    pub expected: String,
    /// What happened instead.
    pub actual: String,
}

/// The result of one transcript.
#[derive(Clone, Debug)]
pub struct CaseReport {
    /// `<area>/<NNN>`.
    pub id: String,
    /// The header's description.
    pub description: String,
    /// The header's requirement sentence.
    pub requirement: String,
    /// The header's clauses.
    pub clauses: Vec<String>,
    /// The outcome.
    pub outcome: Outcome,
    /// The failing step, for FAIL and NON_STRICT (and ERROR when a step caused it).
    pub failure: Option<Failure>,
    /// Every frame sent and received, in the transcript notation.
    pub wire: Vec<String>,
    /// How long it took (wall clock).
    pub elapsed: Duration,
}

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
    /// How long an expectation waits on a real transport.
    pub timeout: Duration,
    /// Cases not to run, with the reason.
    pub disabled: BTreeMap<String, String>,
    /// What the server advertised.
    pub server: ServerInfo,
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
        let mut transport = self.connector.open().map_err(|e| e.to_string())?;
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
                    self.server.features = flag_names(features);
                    let _ = transport.send(conn, &Frame::Detach.to_bytes());
                    return Ok(());
                }
            }
        }
    }

    /// Runs one case.
    pub fn run(&self, t: &Transcript) -> CaseReport {
        let started = Instant::now();
        let mut report = CaseReport {
            id: t.id.clone(),
            description: t.description.clone(),
            requirement: t.requirement.clone(),
            clauses: t.clauses.clone(),
            outcome: Outcome::Pass,
            failure: None,
            wire: Vec::new(),
            elapsed: Duration::ZERO,
        };
        if let Some(reason) = self.disabled.get(&t.id) {
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
                    StepError::Failed { expected, actual } => {
                        (self.failure_outcome(t, step), expected, actual)
                    }
                    StepError::Runner(why) => (Outcome::Error(why.clone()), String::new(), why),
                };
                report.outcome = outcome;
                report.failure = Some(Failure {
                    line: step.line,
                    step: step.text.clone(),
                    clauses: step.clauses.clone(),
                    expected,
                    actual,
                });
                break;
            }
        }
        report.wire = case.wire;
        report.elapsed = started.elapsed();
        report
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
                "fresh-server" => (
                    transport.shared_server(),
                    "needs a server no other case uses (it fills the server's ledger, which \
                     would refuse other cases' operations for 600 s)",
                ),
                "virtual-time" => (
                    !transport.virtual_time(),
                    "lets minutes pass: only virtual time can, a real transport would sleep",
                ),
                _ => return None,
            })
        };
        for need in &t.requires {
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

    /// FAIL when the failing step (or, citing nothing, the transcript) is MUST, else NON_STRICT.
    fn failure_outcome(&self, t: &Transcript, step: &Step) -> Outcome {
        let level = step
            .clauses
            .iter()
            .filter_map(|c| self.spec.level(c))
            .min()
            .unwrap_or(t.level);
        if level == Level::Must {
            Outcome::Fail
        } else {
            Outcome::NonStrict
        }
    }
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
        StepKind::Advance(_) | StepKind::Check { .. } | StepKind::Restart | StepKind::Repeat(_) => {
            None
        }
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

#[derive(Debug)]
enum StepError {
    /// The server did not do what the step expects.
    Failed { expected: String, actual: String },
    /// The runner could not carry out the step.
    Runner(String),
}

impl From<TransportError> for StepError {
    fn from(e: TransportError) -> Self {
        Self::Runner(e.to_string())
    }
}

fn failed(expected: impl fmt::Display, actual: impl fmt::Display) -> StepError {
    StepError::Failed {
        expected: expected.to_string(),
        actual: actual.to_string(),
    }
}

struct ConnState {
    key: ConnKey,
    name: String,
    decoder: FrameDecoder,
    /// Received frames not yet consumed by a step, as notation values.
    inbox: VecDeque<Value>,
    closed: bool,
    /// The server sent bytes that are not a frame.
    garbage: Option<String>,
    /// `pause`d: the client reads nothing until `resume`.
    paused: bool,
    /// Bytes received so far, and how many of them had been at the last `resume`.
    received: u64,
    resumed_at: Option<u64>,
}

struct Case {
    transport: Box<dyn Transport>,
    conns: BTreeMap<String, ConnState>,
    bindings: Bindings,
    templates: Templates,
    timeout: Duration,
    wire: Vec<String>,
    /// Inside a `repeat`: how many more frames the wire log takes, and how many it left out.
    wire_budget: Option<(usize, usize)>,
    next_request: u32,
    next_nonce: u64,
    /// XORed into the high 64 bits of every operation id sent, so that cases sharing one
    /// real server never meet each other's ledger records (0 in process: each case has its
    /// own engine).
    op_salt: u64,
    /// Probe output a `probe … <` step received beyond the report it matched, by connection
    /// and terminal: the next such step looks at it first.
    probe_residue: BTreeMap<String, Vec<u8>>,
}

/// A salt no other case of this or an earlier run uses: the clock, the process and a counter.
fn fresh_salt() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    (nanos ^ (u64::from(std::process::id()) << 32) ^ n.rotate_left(48)) | 1
}

/// `value` with `salt` XORed into the high half of every `operation_id` (an id the XOR would
/// make zero is left alone).
fn salt_operation_ids(value: &Value, salt: u64) -> Value {
    match value {
        Value::Record { name, fields } => Value::Record {
            name: name.clone(),
            fields: fields
                .iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("operation_id", Value::HexInt { value, width }) => {
                            let salted = value ^ (u128::from(salt) << 64);
                            Value::HexInt {
                                value: if salted == 0 { *value } else { salted },
                                width: *width,
                            }
                        }
                        _ => salt_operation_ids(v, salt),
                    };
                    (k.clone(), v)
                })
                .collect(),
        },
        Value::List(items) => {
            Value::List(items.iter().map(|v| salt_operation_ids(v, salt)).collect())
        }
        other => other.clone(),
    }
}

/// Output frames (TERMINAL_OUTPUT and the bootstrap's): a `closed` step does not require
/// them to have been expected, since an attached connection receives them at any time.
fn is_output(frame: &Value) -> bool {
    matches!(
        name_of(frame),
        "TERMINAL_OUTPUT" | "BOOTSTRAP_BEGIN" | "BOOTSTRAP_CHUNK" | "BOOTSTRAP_READY"
    )
}

/// The record name of a frame value.
fn name_of(value: &Value) -> &str {
    match value {
        Value::Record { name, .. } => name,
        _ => "",
    }
}

fn describe_inbox(inbox: &VecDeque<Value>) -> String {
    if inbox.is_empty() {
        return "nothing".into();
    }
    inbox
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  then ")
}

impl Case {
    fn step(&mut self, step: &Step) -> Result<(), StepError> {
        match &step.kind {
            StepKind::Connect { conn } => {
                if self.conns.get(conn).is_some_and(|c| c.closed) {
                    // A reconnect: a new connection under the old name.
                    self.conns.remove(conn);
                    self.wire.push(format!("{conn} connect"));
                } else if self.conns.contains_key(conn) {
                    return Err(StepError::Runner(format!(
                        "`{conn} connect`: {conn} is open"
                    )));
                }
                self.conn(conn)?;
                Ok(())
            }
            StepKind::Restart => self.restart(),
            StepKind::Repeat(r) => self.repeat(r),
            StepKind::Send { conn, frame } => self.send(conn, frame),
            StepKind::SendRaw { conn, bytes } => {
                let key = self.conn(conn)?;
                self.wire.push(format!("{conn} > raw {}", hex(bytes)));
                self.transport.send(key, bytes)?;
                Ok(())
            }
            StepKind::Expect {
                conn,
                pattern,
                until: None,
                next,
            } => {
                let pattern = self.pattern(pattern)?;
                self.expect(conn, &pattern, self.timeout, *next)
            }
            StepKind::Expect {
                conn,
                pattern,
                until: Some(until),
                ..
            } => {
                let pattern = self.pattern(pattern)?;
                let Until {
                    field,
                    needle,
                    within,
                } = until;
                let cond = |acc: &[u8]| contains(acc, needle);
                let what = format!("{field} containing {}", Value::Str(needle.clone()));
                self.wait_accumulate(
                    conn,
                    &pattern,
                    field,
                    &cond,
                    &what,
                    within.unwrap_or(self.timeout),
                    Vec::new(),
                )
            }
            StepKind::Unordered { conn, patterns } => {
                let patterns = patterns
                    .iter()
                    .map(|p| self.pattern(p))
                    .collect::<Result<Vec<_>, _>>()?;
                self.unordered(conn, &patterns)
            }
            StepKind::Nothing { conn } => self.nothing(conn),
            StepKind::Closed { conn } => self.closed(conn),
            StepKind::Disconnect { conn } => {
                let key = self.conn(conn)?;
                self.wire.push(format!("{conn} disconnect"));
                self.transport.disconnect(key);
                if let Some(c) = self.conns.get_mut(conn) {
                    c.closed = true;
                }
                Ok(())
            }
            StepKind::Advance(by) => {
                self.wire.push(format!("~ {}ms", by.as_millis()));
                self.transport.advance(*by);
                Ok(())
            }
            StepKind::Check { left, op, right } => self.check(left, *op, right),
            StepKind::Reading { conn, on } => self.set_reading(conn, *on),
            StepKind::ExpectRun { conn, pattern } => {
                let pattern = self.pattern(pattern)?;
                self.expect_run(conn, &pattern)
            }
            StepKind::ReadBound { conn, max } => self.read_bound(conn, *max),
            StepKind::ProbeSend {
                conn,
                terminal,
                line,
            } => self.probe_send(conn, terminal, line),
            StepKind::ProbeExpect {
                conn,
                terminal,
                report,
                within,
            } => {
                let terminal =
                    pattern::substitute(terminal, &self.bindings).map_err(StepError::Runner)?;
                let residue_key = format!("{conn} {terminal}");
                let pattern = Value::record(
                    "TERMINAL_OUTPUT",
                    vec![
                        ("terminal".into(), terminal),
                        (phux_proto::notation::REST_FIELD.into(), Value::Wildcard),
                    ],
                );
                let within = within.unwrap_or(self.timeout);
                if let Some(hex_text) = report.strip_prefix("READS ") {
                    // The READ reports from here on, concatenated, must be exactly these bytes
                    // (one write may arrive in several reads, so a single READ proves little).
                    let want = parse_hex(hex_text)
                        .ok_or_else(|| StepError::Runner(format!("`READS {hex_text}`: not hex")))?;
                    let cond = |acc: &[u8]| probe_reads(acc).len() >= want.len();
                    let what = format!("READ reports adding up to {}", hex(&want));
                    // Reads start now: earlier output left over is not part of them.
                    self.probe_residue.remove(&residue_key);
                    self.wait_accumulate(
                        conn,
                        &pattern,
                        "bytes",
                        &cond,
                        &what,
                        within,
                        Vec::new(),
                    )?;
                    let got = match self.bindings.get("_") {
                        Some(v) => probe_reads(&pattern::as_bytes(v)),
                        None => Vec::new(),
                    };
                    return if got == want {
                        Ok(())
                    } else {
                        Err(failed(
                            format!("the probe reads {}", hex(&want)),
                            format!("it read {}", hex(&got)),
                        ))
                    };
                }
                let bindings = self.bindings.clone();
                let cond = |acc: &[u8]| match_probe_report(acc, report, &bindings).is_some();
                let what = format!("a probe report `PROBE <seq> {report}`");
                // Reports an earlier step received but did not match come first: one output
                // frame may carry several reports, in whichever order the probe wrote them.
                let initial = self.probe_residue.remove(&residue_key).unwrap_or_default();
                self.wait_accumulate(conn, &pattern, "bytes", &cond, &what, within, initial)?;
                let seen = self
                    .bindings
                    .get("_")
                    .map(pattern::as_bytes)
                    .unwrap_or_default();
                if let Some((b, start, end)) = match_probe_report_at(&seen, report, &self.bindings)
                {
                    let underscore = self.bindings.remove("_");
                    self.bindings = b;
                    if let Some(u) = underscore {
                        self.bindings.insert("_".into(), u);
                    }
                    let mut rest = seen[..start].to_vec();
                    rest.extend_from_slice(&seen[end..]);
                    if !rest.is_empty() {
                        self.probe_residue.insert(residue_key, rest);
                    }
                }
                Ok(())
            }
        }
    }

    /// `restart`: what arrived before is kept for later steps; then the server is replaced
    /// and every connection is closed (reopen one with `cN connect`).
    fn restart(&mut self) -> Result<(), StepError> {
        let names: Vec<String> = self.conns.keys().cloned().collect();
        for name in &names {
            while self.fill(name, Duration::ZERO)? {}
        }
        self.wire.push("restart".into());
        self.transport.restart()?;
        for c in self.conns.values_mut() {
            c.closed = true;
        }
        Ok(())
    }

    /// `repeat`: the body once per iteration, its sends running a window of iterations ahead
    /// of its expectations, so that many round trips cost little waiting. The wire log keeps
    /// the block's first frames.
    fn repeat(&mut self, r: &Repeat) -> Result<(), StepError> {
        let done = self.repeat_body(r);
        self.end_wire_budget();
        done
    }

    /// Back to logging every frame, noting how many a `repeat` left out.
    fn end_wire_budget(&mut self) {
        if let Some((_, skipped)) = self.wire_budget.take()
            && skipped > 0
        {
            self.wire
                .push(format!("… {skipped} more frames of the repeat, not logged"));
        }
    }

    fn repeat_body(&mut self, r: &Repeat) -> Result<(), StepError> {
        // Templates are expanded once: only the iteration variable changes.
        let body = r
            .body
            .iter()
            .map(|s| {
                let kind = match &s.kind {
                    StepKind::Send { conn, frame } => StepKind::Send {
                        conn: conn.clone(),
                        frame: self.pattern(frame)?,
                    },
                    StepKind::Expect {
                        conn,
                        pattern,
                        until,
                        next,
                    } => StepKind::Expect {
                        conn: conn.clone(),
                        pattern: self.pattern(pattern)?,
                        until: until.clone(),
                        next: *next,
                    },
                    other => other.clone(),
                };
                Ok((s, kind))
            })
            .collect::<Result<Vec<_>, StepError>>()?;
        // Formatting every frame of a long block would cost more than sending it.
        self.wire_budget = Some((WIRE_KEEP, 0));
        // Iteration i's sends go out while iteration i - REPEAT_WINDOW's expectations are
        // met: many round trips cost little, and the server never holds more than a window
        // of unread answers (a server MAY detach a client whose answers pile up).
        let window = REPEAT_WINDOW.min(r.count);
        for i in 0..r.count + window {
            if i < r.count {
                self.repeat_iteration(r, &body, i, true)?;
            }
            if let Some(j) = i.checked_sub(window) {
                self.repeat_iteration(r, &body, j, false)?;
            }
        }
        if let Some((name, _)) = &r.var {
            self.bindings.remove(name);
        }
        Ok(())
    }

    /// The sends (or the other steps) of iteration `i` of a `repeat`.
    fn repeat_iteration(
        &mut self,
        r: &Repeat,
        body: &[(&Step, StepKind)],
        i: u64,
        sends: bool,
    ) -> Result<(), StepError> {
        if let Some((name, start)) = &r.var {
            let value = iteration_value(start, i)
                .ok_or_else(|| StepError::Runner(format!("`{start}` + {i} overflows")))?;
            self.bindings.insert(name.clone(), value);
        }
        let is_send = |k: &StepKind| matches!(k, StepKind::Send { .. } | StepKind::SendRaw { .. });
        for (step, kind) in body.iter().filter(|(_, k)| is_send(k) == sends) {
            let done = match kind {
                StepKind::Send { conn, frame } => self.send_expanded(conn, frame),
                StepKind::Expect {
                    conn,
                    pattern,
                    next,
                    ..
                } => self.expect(conn, pattern, self.timeout, *next),
                other => self.step(&Step {
                    line: step.line,
                    text: step.text.clone(),
                    clauses: step.clauses.clone(),
                    kind: other.clone(),
                }),
            };
            done.map_err(|e| match e {
                StepError::Failed { expected, actual } => StepError::Failed {
                    expected,
                    actual: format!(
                        "{actual}\n  (iteration {i} of {}, line {}: {})",
                        r.count, step.line, step.text
                    ),
                },
                runner @ StepError::Runner(_) => runner,
            })?;
        }
        Ok(())
    }

    fn conn(&mut self, name: &str) -> Result<ConnKey, StepError> {
        if let Some(c) = self.conns.get(name) {
            return Ok(c.key);
        }
        let key = self.transport.connect()?;
        self.conns.insert(
            name.to_owned(),
            ConnState {
                key,
                name: name.to_owned(),
                decoder: FrameDecoder::new(),
                inbox: VecDeque::new(),
                closed: false,
                garbage: None,
                paused: false,
                received: 0,
                resumed_at: None,
            },
        );
        Ok(key)
    }

    /// Templates expanded; captures stay for the matcher.
    fn pattern(&self, pattern: &Value) -> Result<Value, StepError> {
        self.templates.expand(pattern).map_err(StepError::Runner)
    }

    fn send(&mut self, conn: &str, frame: &Value) -> Result<(), StepError> {
        let value = self.templates.expand(frame).map_err(StepError::Runner)?;
        self.send_expanded(conn, &value)
    }

    /// [`Self::send`] for a frame whose templates are expanded already.
    fn send_expanded(&mut self, conn: &str, value: &Value) -> Result<(), StepError> {
        let mut value = pattern::substitute(value, &self.bindings).map_err(StepError::Runner)?;
        if self.op_salt != 0 {
            value = salt_operation_ids(&value, self.op_salt);
        }
        let frame = Frame::from_value(&value)
            .map_err(|e| StepError::Runner(format!("not a frame: {e}")))?;
        let key = self.conn(conn)?;
        log_frame(&mut self.wire, &mut self.wire_budget, || {
            format!("{conn} > {frame}")
        });
        self.transport.send(key, &frame.to_bytes())?;
        Ok(())
    }

    /// Reads what has arrived on `conn`, waiting at most `wait`. Whether anything came.
    fn fill(&mut self, conn: &str, wait: Duration) -> Result<bool, StepError> {
        let key = self.conn(conn)?;
        let c = self
            .conns
            .get(conn)
            .ok_or_else(|| StepError::Runner("no such conn".into()))?;
        if c.closed && c.inbox.is_empty() {
            return Ok(false);
        }
        if c.paused {
            return Err(StepError::Runner(format!(
                "{conn} is paused: `{conn} resume` before a step that reads it"
            )));
        }
        let got = self.transport.recv(key, wait)?;
        let Some(c) = self.conns.get_mut(conn) else {
            return Ok(false);
        };
        match got {
            Recv::Bytes(bytes) => {
                c.received += bytes.len() as u64;
                c.decoder.push(&bytes);
                loop {
                    match c.decoder.poll_frame() {
                        Ok(Some(frame)) => {
                            log_frame(&mut self.wire, &mut self.wire_budget, || {
                                format!("{} < {frame}", c.name)
                            });
                            c.inbox.push_back(frame.to_value());
                        }
                        Ok(None) => break,
                        Err(e) => {
                            self.wire.push(format!("{} < undecodable: {e}", c.name));
                            c.garbage.get_or_insert_with(|| e.to_string());
                            if e.is_framing() {
                                break;
                            }
                        }
                    }
                }
                Ok(true)
            }
            Recv::Closed => {
                if !c.closed {
                    self.wire.push(format!("{} closed", c.name));
                }
                c.closed = true;
                Ok(false)
            }
            Recv::Nothing => Ok(false),
        }
    }

    /// Waits for more input; `Err` with `what` when there will be none.
    fn more(
        &mut self,
        conn: &str,
        deadline: Instant,
        what: &dyn Fn(&Self) -> StepError,
    ) -> Result<(), StepError> {
        let virtual_time = self.transport.virtual_time();
        let remaining = deadline.saturating_duration_since(Instant::now());
        let closed_before = self.conns.get(conn).is_some_and(|c| c.closed);
        if closed_before || (!virtual_time && remaining.is_zero()) {
            return Err(what(self));
        }
        let wait = if virtual_time {
            Duration::ZERO
        } else {
            remaining.min(POLL_SLICE)
        };
        let got = self.fill(conn, wait)?;
        if virtual_time && !got {
            // Virtual time: the engine is idle; waiting changes nothing.
            return Err(what(self));
        }
        Ok(())
    }

    fn garbage_error(&self, conn: &str) -> Option<StepError> {
        let g = self.conns.get(conn)?.garbage.as_ref()?;
        Some(failed(
            "frames that decode",
            format!("the server sent bytes that do not decode: {g}"),
        ))
    }

    fn inbox_text(&self, conn: &str) -> String {
        let Some(c) = self.conns.get(conn) else {
            return "nothing".into();
        };
        let mut text = describe_inbox(&c.inbox);
        if c.closed {
            text.push_str(if c.inbox.is_empty() {
                " (connection closed)"
            } else {
                "\n  then the connection closed"
            });
        }
        text
    }

    fn expect(
        &mut self,
        conn: &str,
        pattern: &Value,
        within: Duration,
        next: bool,
    ) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        if names.is_empty() {
            return Err(StepError::Runner(format!(
                "`{pattern}` is not a frame pattern"
            )));
        }
        self.conn(conn)?;
        let deadline = Instant::now() + within;
        loop {
            if let Some(c) = self.conns.get_mut(conn)
                && let Some(i) = c
                    .inbox
                    .iter()
                    .position(|f| next || names.iter().any(|n| n == name_of(f)))
            {
                let actual = c.inbox[i].clone();
                return match pattern::matches(pattern, &actual, &mut self.bindings) {
                    Ok(()) => {
                        c.inbox.remove(i);
                        Ok(())
                    }
                    Err(m) => Err(failed(pattern, format!("{actual}\n  ({m})"))),
                };
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let p = pattern.clone();
            self.more(conn, deadline, &|s| {
                failed(
                    &p,
                    format!("no such frame; received: {}", s.inbox_text(conn)),
                )
            })?;
        }
    }

    // Each argument is one part of the wait; a struct for them would be built once per call.
    #[allow(clippy::too_many_arguments)]
    fn wait_accumulate(
        &mut self,
        conn: &str,
        pattern: &Value,
        field: &str,
        cond: &dyn Fn(&[u8]) -> bool,
        what: &str,
        within: Duration,
        initial: Vec<u8>,
    ) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        self.conn(conn)?;
        let deadline = Instant::now() + within;
        let mut acc = initial;
        if !acc.is_empty() && cond(&acc) {
            self.bindings.insert("_".into(), Value::Str(acc));
            return Ok(());
        }
        loop {
            if let Some(c) = self.conns.get_mut(conn) {
                let mut i = 0;
                while i < c.inbox.len() {
                    let f = &c.inbox[i];
                    if names.iter().any(|n| n == name_of(f))
                        && pattern::matches(pattern, f, &mut self.bindings).is_ok()
                    {
                        if let Some(v) = pattern::field(f, field) {
                            acc.extend_from_slice(&pattern::as_bytes(v));
                        }
                        c.inbox.remove(i);
                        if cond(&acc) {
                            // `$_` is what this wait consumed, for a later `check`.
                            self.bindings.insert("_".into(), Value::Str(acc));
                            return Ok(());
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let expected = format!("{pattern} until {what}");
            let seen = Value::Str(acc.clone()).to_string();
            self.more(conn, deadline, &|s| {
                failed(
                    &expected,
                    format!(
                        "{field} so far: {seen}; other frames: {}",
                        s.inbox_text(conn)
                    ),
                )
            })?;
        }
    }

    fn unordered(&mut self, conn: &str, patterns: &[Value]) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let mut wanted: BTreeMap<String, usize> = BTreeMap::new();
        for p in patterns {
            let names = pattern::frame_names(p);
            let [name] = names.as_slice() else {
                return Err(StepError::Runner(format!(
                    "`{p}`: one frame type per pattern in a `{{` block"
                )));
            };
            *wanted.entry(name.clone()).or_default() += 1;
        }
        let expected = patterns
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n  and ");
        loop {
            let c = self
                .conns
                .get(conn)
                .ok_or_else(|| StepError::Runner("no conn".into()))?;
            // The first k frames of each wanted type, k = how many patterns name it.
            let mut candidates: Vec<usize> = Vec::new();
            let mut enough = true;
            for (name, k) in &wanted {
                let idx: Vec<usize> = c
                    .inbox
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| name_of(f) == name)
                    .map(|(i, _)| i)
                    .take(*k)
                    .collect();
                enough &= idx.len() == *k;
                candidates.extend(idx);
            }
            if enough {
                let frames: Vec<&Value> = candidates.iter().map(|&i| &c.inbox[i]).collect();
                let mut used = vec![false; frames.len()];
                let mut bindings = self.bindings.clone();
                if assign(patterns, &frames, &mut used, &mut bindings) {
                    self.bindings = bindings;
                    let mut remove = candidates;
                    remove.sort_unstable();
                    if let Some(c) = self.conns.get_mut(conn) {
                        for i in remove.into_iter().rev() {
                            c.inbox.remove(i);
                        }
                    }
                    return Ok(());
                }
                let got = frames
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n  and ");
                return Err(failed(
                    &expected,
                    format!("{got}\n  (no pairing of patterns and frames matches)"),
                ));
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            self.more(conn, deadline, &|s| {
                failed(&expected, format!("received: {}", s.inbox_text(conn)))
            })?;
        }
    }

    fn nothing(&mut self, conn: &str) -> Result<(), StepError> {
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let key = self.conn(conn)?;
        let ping = Frame::Ping(phux_proto::frame::Ping { nonce });
        self.wire.push(format!("{conn} > {ping}"));
        self.transport.send(key, &ping.to_bytes())?;
        let pong = Frame::Pong(phux_proto::frame::Pong { nonce }).to_value();
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(c) = self.conns.get_mut(conn)
                && let Some(i) = c.inbox.iter().position(|f| *f == pong)
            {
                let stray = (i > 0).then(|| c.inbox[0].clone());
                c.inbox.remove(i);
                return match stray {
                    None => Ok(()),
                    Some(f) => Err(failed("no frame before the PONG of a PING barrier", f)),
                };
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            self.more(conn, deadline, &|s| {
                failed(
                    format!("{pong} answering the runner's PING"),
                    s.inbox_text(conn),
                )
            })?;
        }
    }

    fn closed(&mut self, conn: &str) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            if let Some(c) = self.conns.get(conn)
                && c.closed
            {
                // Everything the server sent before closing must have been expected.
                return match c.inbox.iter().find(|f| !is_output(f)) {
                    None => Ok(()),
                    Some(f) => Err(failed("nothing more before the close", f)),
                };
            }
            let virtual_time = self.transport.virtual_time();
            let remaining = deadline.saturating_duration_since(Instant::now());
            if !virtual_time && remaining.is_zero() {
                return Err(failed(
                    "the server closes the connection",
                    format!("still open; received: {}", self.inbox_text(conn)),
                ));
            }
            let got = self.fill(
                conn,
                if virtual_time {
                    Duration::ZERO
                } else {
                    remaining.min(POLL_SLICE)
                },
            )?;
            if virtual_time && !got && !self.conns.get(conn).is_some_and(|c| c.closed) {
                return Err(failed(
                    "the server closes the connection",
                    format!("still open; received: {}", self.inbox_text(conn)),
                ));
            }
        }
    }

    /// `pause` / `resume`: the transport stops or resumes reading the connection.
    fn set_reading(&mut self, conn: &str, on: bool) -> Result<(), StepError> {
        let key = self.conn(conn)?;
        self.wire
            .push(format!("{conn} {}", if on { "resume" } else { "pause" }));
        self.transport.set_reading(key, on)?;
        if let Some(c) = self.conns.get_mut(conn) {
            c.paused = !on;
            if on {
                c.resumed_at = Some(c.received);
            }
        }
        Ok(())
    }

    /// `<*`: consumes the matching frames at the front of the queue; the first frame that
    /// does not match, or the close, ends the run (and must come).
    fn expect_run(&mut self, conn: &str, pattern: &Value) -> Result<(), StepError> {
        let names = pattern::frame_names(pattern);
        if names.is_empty() {
            return Err(StepError::Runner(format!(
                "`{pattern}` is not a frame pattern"
            )));
        }
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let mut taken = 0usize;
        loop {
            if let Some(c) = self.conns.get_mut(conn) {
                while let Some(front) = c.inbox.front() {
                    let mut trial = self.bindings.clone();
                    let fits = names.iter().any(|n| n == name_of(front))
                        && pattern::matches(pattern, front, &mut trial).is_ok();
                    if !fits {
                        return Ok(());
                    }
                    self.bindings = trial;
                    c.inbox.pop_front();
                    taken += 1;
                }
                if c.closed {
                    return Ok(());
                }
            }
            if let Some(e) = self.garbage_error(conn) {
                return Err(e);
            }
            let p = pattern.clone();
            let more = self.more(conn, deadline, &|_| {
                failed(
                    format!("frames matching {p}, then another frame or the close"),
                    format!("{taken} matched, then nothing more arrived"),
                )
            });
            // The close that came with (or instead of) more frames ends the run.
            if more.is_err() && !self.conns.get(conn).is_some_and(|c| c.closed) {
                return more;
            }
        }
    }

    /// `bytes since resume <= N`, once nothing more arrives.
    fn read_bound(&mut self, conn: &str, max: u64) -> Result<(), StepError> {
        self.conn(conn)?;
        let deadline = Instant::now() + self.timeout;
        let wait = if self.transport.virtual_time() {
            Duration::ZERO
        } else {
            POLL_SLICE
        };
        while self.fill(conn, wait)? && Instant::now() < deadline {}
        let c = self
            .conns
            .get(conn)
            .ok_or_else(|| StepError::Runner("no such conn".into()))?;
        let Some(since) = c.resumed_at else {
            return Err(StepError::Runner(format!(
                "`{conn} bytes since resume` needs an earlier `{conn} resume`"
            )));
        };
        let got = c.received - since;
        if got <= max {
            Ok(())
        } else {
            Err(failed(
                format!("at most {max} bytes on {conn} since it resumed reading"),
                format!("{got} bytes"),
            ))
        }
    }

    fn check(&self, left: &Value, op: CheckOp, right: &Value) -> Result<(), StepError> {
        let l = pattern::substitute(left, &self.bindings).map_err(StepError::Runner)?;
        let r = pattern::substitute(right, &self.bindings).map_err(StepError::Runner)?;
        let (ok, word) = match op {
            CheckOp::Eq => (pattern::normalise(&l) == pattern::normalise(&r), "=="),
            CheckOp::Ne => (pattern::normalise(&l) != pattern::normalise(&r), "!="),
            CheckOp::Contains => (
                contains(&pattern::as_bytes(&l), &pattern::as_bytes(&r)),
                "contains",
            ),
            CheckOp::NotContains => (
                !contains(&pattern::as_bytes(&l), &pattern::as_bytes(&r)),
                "!contains",
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(failed(
                format!("{left} {word} {right}"),
                format!("{l} vs {r}"),
            ))
        }
    }

    fn probe_send(&mut self, conn: &str, terminal: &Value, line: &str) -> Result<(), StepError> {
        let request_id = self.next_request;
        self.next_request += 1;
        let mut data = line.as_bytes().to_vec();
        data.push(b'\r');
        let frame = Value::record(
            "COMMAND",
            vec![
                ("request_id".into(), Value::Int(request_id.into())),
                (
                    "command".into(),
                    Value::record(
                        "ROUTE_INPUT",
                        vec![
                            ("terminal".into(), terminal.clone()),
                            (
                                "event".into(),
                                Value::record(
                                    "PASTE",
                                    vec![
                                        ("trust".into(), Value::ident("trusted")),
                                        ("data".into(), Value::Str(data)),
                                    ],
                                ),
                            ),
                        ],
                    ),
                ),
            ],
        );
        self.send(conn, &frame)?;
        let ok = Value::parse(&format!(
            "COMMAND_RESULT{{request_id={request_id} result=ok}}"
        ))
        .map_err(|e| StepError::Runner(e.to_string()))?;
        self.expect(conn, &ok, self.timeout, false)
    }
}

/// Pairs every pattern with a distinct frame (backtracking; blocks are small).
fn assign(
    patterns: &[Value],
    frames: &[&Value],
    used: &mut [bool],
    bindings: &mut Bindings,
) -> bool {
    let Some((first, rest)) = patterns.split_first() else {
        return true;
    };
    for i in 0..frames.len() {
        if used[i] {
            continue;
        }
        let mut trial = bindings.clone();
        if pattern::matches(first, frames[i], &mut trial).is_ok() {
            used[i] = true;
            if assign(rest, frames, used, &mut trial) {
                *bindings = trial;
                return true;
            }
            used[i] = false;
        }
    }
    false
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// How many iterations of a `repeat` block may be sent ahead of their expectations.
const REPEAT_WINDOW: u64 = 256;

/// How many frames of a `repeat` block the wire log shows.
const WIRE_KEEP: usize = 32;

/// Adds a frame's line to the wire log, unless a `repeat` has used up its share.
fn log_frame(
    wire: &mut Vec<String>,
    budget: &mut Option<(usize, usize)>,
    line: impl FnOnce() -> String,
) {
    match budget {
        Some((0, skipped)) => *skipped += 1,
        Some((left, _)) => {
            *left -= 1;
            wire.push(line());
        }
        None => wire.push(line()),
    }
}

/// The value of a `repeat` variable in iteration `i`: the start plus `i`, spelt as the start.
fn iteration_value(start: &Value, i: u64) -> Option<Value> {
    match start {
        Value::Int(v) => v.checked_add(i128::from(i)).map(Value::Int),
        Value::HexInt { value, width } => {
            value.checked_add(u128::from(i)).map(|value| Value::HexInt {
                value,
                width: *width,
            })
        }
        _ => None,
    }
}

/// The complete probe report lines in `out` (`PROBE <seq> <body>` CR LF): each body with the
/// span of its whole line (from the CR LF before it, when there is one, to the LF after it).
fn probe_report_lines(out: &[u8]) -> Vec<(&[u8], usize, usize)> {
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(at) = out[from..].windows(6).position(|w| w == b"PROBE ") {
        let at = from + at;
        let after = at + 6;
        let digits = out[after..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let body_at = after + digits + 1;
        if digits > 0
            && out.get(after + digits) == Some(&b' ')
            && let Some(len) = out[body_at..].iter().position(|&b| b == b'\r')
        {
            let start = if out[..at].ends_with(b"\r\n") {
                at - 2
            } else {
                at
            };
            let mut end = body_at + len + 1;
            if out.get(end) == Some(&b'\n') {
                end += 1;
            }
            lines.push((&out[body_at..body_at + len], start, end));
        }
        from = after;
    }
    lines
}

/// The first complete report in `out` that `pattern` matches, word by word from its start:
/// a literal word must be equal, `*` matches any word, `$name` binds the word (or, bound
/// already, must equal it; bound to a list, it stands for one word per element, see
/// [`list_words`]), and a last word `$` means the report has no more words. Returns the
/// bindings with the new captures.
fn match_probe_report(out: &[u8], pattern: &str, bindings: &Bindings) -> Option<Bindings> {
    match_probe_report_at(out, pattern, bindings).map(|(b, _, _)| b)
}

/// [`match_probe_report`], with the span of the matched line.
fn match_probe_report_at(
    out: &[u8],
    pattern: &str,
    bindings: &Bindings,
) -> Option<(Bindings, usize, usize)> {
    let mut want: Vec<String> = Vec::new();
    for w in pattern.split_ascii_whitespace() {
        match w.strip_prefix('$').and_then(|name| bindings.get(name)) {
            Some(Value::List(items)) => want.extend(list_words(items)),
            _ => want.push(w.to_owned()),
        }
    }
    let exact = want.last().is_some_and(|w| w == "$");
    if exact {
        want.pop();
    }
    'lines: for (body, start, end) in probe_report_lines(out) {
        let Ok(body) = std::str::from_utf8(body) else {
            continue;
        };
        let words: Vec<&str> = body.split(' ').collect();
        if words.len() < want.len() || (exact && words.len() != want.len()) {
            continue;
        }
        let mut trial = bindings.clone();
        for (w, got) in want.iter().zip(&words) {
            if *w == "*" {
                continue;
            }
            if let Some(name) = w.strip_prefix('$') {
                match trial.get(name) {
                    Some(bound) if report_word(bound) != *got => continue 'lines,
                    Some(_) => {}
                    None => {
                        trial.insert(name.to_owned(), Value::Str(got.as_bytes().to_vec()));
                    }
                }
            } else if w != got {
                continue 'lines;
            }
        }
        return Some((trial, start, end));
    }
    None
}

/// The report words a list stands for: byte strings as the probe spells them (lowercase hex,
/// `-` when empty), other values as in the notation. `$PROBE` is the probe's command words.
fn list_words(items: &[Value]) -> Vec<String> {
    use std::fmt::Write as _;
    items
        .iter()
        .map(|item| match item {
            Value::Str(b) | Value::HexStr(b) if b.is_empty() => "-".to_owned(),
            Value::Str(b) | Value::HexStr(b) => b.iter().fold(String::new(), |mut word, x| {
                let _ = write!(word, "{x:02x}");
                word
            }),
            other => other.to_string(),
        })
        .collect()
}

/// How a captured value is spelt as a report word.
fn report_word(value: &Value) -> String {
    match value {
        Value::Str(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => other.to_string(),
    }
}

/// The payload of every complete `READ <hex>` report in `out`, in order, concatenated.
fn probe_reads(out: &[u8]) -> Vec<u8> {
    probe_report_lines(out)
        .into_iter()
        .filter_map(|(body, _, _)| body.strip_prefix(b"READ "))
        .filter_map(|hex| std::str::from_utf8(hex).ok().and_then(parse_hex))
        .flatten()
        .collect()
}

/// Lowercase or uppercase hex digits, two per byte, no separators.
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reports_are_found_by_their_text_after_the_seq() {
        let found = |out: &[u8], report: &str| match_probe_report(out, report, &Bindings::new());
        assert!(found(b"x\r\nPROBE 12 EXITING 3\r\n", "EXITING 3").is_some());
        assert!(found(b"PROBE x EXITING 3\r\n", "EXITING 3").is_none());
        assert!(found(b"PROBE 1 READY\r\n", "EXITING").is_none());
        assert!(found(b"PROBE 1 READ 6162\r\n", "READ 61").is_none());
        // Still arriving: not a report yet.
        assert!(found(b"PROBE 1 READ 61", "READ 61").is_none());
        assert!(found(b"PROBE 1 TERMIOS raw -echo\r\n", "TERMIOS raw").is_some());
    }

    #[test]
    fn probe_report_words_capture_and_compare() {
        let out = b"\r\nPROBE 2 PGRP 7 7 7 9\r\n\r\nPROBE 3 PGRP 7 7 7 7\r\n";
        let b = match_probe_report(out, "PGRP $p $p $p $p", &Bindings::new()).unwrap();
        assert_eq!(b.get("p"), Some(&Value::Str(b"7".to_vec())));
        let mut bound = Bindings::new();
        bound.insert("p".into(), Value::Str(b"8".to_vec()));
        assert!(match_probe_report(out, "PGRP $p * * *", &bound).is_none());
        assert!(match_probe_report(out, "PGRP * * * 9", &Bindings::new()).is_some());
    }

    #[test]
    fn a_list_capture_is_its_words_and_a_final_dollar_ends_the_report() {
        let out = b"\r\nPROBE 4 ARGS 2f70 70726f6265 612062 -\r\n";
        let mut b = Bindings::new();
        b.insert("cmd".into(), Value::parse(r#"["/p" "probe"]"#).unwrap());
        assert!(match_probe_report(out, "ARGS $cmd 612062 - $", &b).is_some());
        assert!(match_probe_report(out, "ARGS $cmd 612062", &b).is_some());
        // Exactly these words: one fewer or one more is no match.
        assert!(match_probe_report(out, "ARGS $cmd 612062 $", &b).is_none());
        assert!(match_probe_report(out, "ARGS $cmd 612062 - - $", &b).is_none());
        b.insert("cmd".into(), Value::parse(r#"["/q" "probe"]"#).unwrap());
        assert!(match_probe_report(out, "ARGS $cmd", &b).is_none());
        assert!(match_probe_report(b"\r\nPROBE 5 ENVIRON\r\n", "ENVIRON $", &b).is_some());
    }

    #[test]
    fn reads_concatenate_across_reports() {
        let out = b"\r\nPROBE 3 READ 1b5b\r\n\r\nPROBE 4 MARK x\r\n\r\nPROBE 5 READ 41\r\n\r\nPROBE 6 READ 42";
        // The last report is incomplete (no CR yet): not counted.
        assert_eq!(probe_reads(out), b"\x1b[A");
        assert_eq!(parse_hex("1b5B41"), Some(b"\x1b[A".to_vec()));
        assert_eq!(parse_hex("1b5"), None);
    }

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
    fn repeat_values_keep_the_start_spelling() {
        let hex = Value::HexInt {
            value: 0xfe,
            width: 32,
        };
        assert_eq!(
            iteration_value(&hex, 2),
            Some(Value::HexInt {
                value: 0x100,
                width: 32
            })
        );
        assert_eq!(iteration_value(&Value::Int(-1), 3), Some(Value::Int(2)));
        let top = Value::HexInt {
            value: u128::MAX,
            width: 32,
        };
        assert_eq!(iteration_value(&top, 1), None);
        assert_eq!(iteration_value(&Value::Str(b"a".to_vec()), 0), None);
    }

    #[test]
    fn flag_names_of_a_feature_set() {
        let v = Value::parse("acknowledged_input|shutdown").unwrap();
        assert_eq!(flag_names(Some(&v)).len(), 2);
        assert!(flag_names(Some(&Value::ident("none"))).is_empty());
    }
}
