//! One case in progress: its transport and connections, the bindings, the wire log, and the
//! dispatch of each step to what carries it out.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use phux_core::framing::FrameDecoder;
use phux_proto::Frame;
use phux_proto::notation::Value;

use super::POLL_SLICE;
use super::report::{
    contains, hex, match_probe_report, match_probe_report_at, parse_hex, probe_reads,
};
use crate::pattern::{self, Bindings, Templates};
use crate::transcript::{Step, StepKind, Until};
use crate::transport::{ConnKey, Recv, Transport, TransportError};

#[derive(Debug)]
pub(super) enum StepError {
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

pub(super) fn failed(expected: impl fmt::Display, actual: impl fmt::Display) -> StepError {
    StepError::Failed {
        expected: expected.to_string(),
        actual: actual.to_string(),
    }
}

pub(super) struct ConnState {
    pub(super) key: ConnKey,
    pub(super) name: String,
    pub(super) decoder: FrameDecoder,
    /// Received frames not yet consumed by a step, as notation values.
    pub(super) inbox: VecDeque<Value>,
    pub(super) closed: bool,
    /// The server sent bytes that are not a frame.
    pub(super) garbage: Option<String>,
    /// `pause`d: the client reads nothing until `resume`.
    pub(super) paused: bool,
    /// Bytes received so far, and how many of them had been at the last `resume`.
    pub(super) received: u64,
    pub(super) resumed_at: Option<u64>,
}

pub(super) struct Case {
    pub(super) transport: Box<dyn Transport>,
    pub(super) conns: BTreeMap<String, ConnState>,
    pub(super) bindings: Bindings,
    pub(super) templates: Templates,
    pub(super) timeout: Duration,
    pub(super) wire: Vec<String>,
    /// Inside a `repeat`: how many more frames the wire log takes, and how many it left out.
    pub(super) wire_budget: Option<(usize, usize)>,
    pub(super) next_request: u32,
    pub(super) next_nonce: u64,
    /// XORed into the high 64 bits of every operation id sent, so that cases sharing one
    /// real server never meet each other's ledger records (0 in process: each case has its
    /// own engine).
    pub(super) op_salt: u64,
    /// Probe output a `probe … <` step received beyond the report it matched, by connection
    /// and terminal: the next such step looks at it first.
    pub(super) probe_residue: BTreeMap<String, Vec<u8>>,
    /// Every terminal the server reported spawned, so that a run against a shared server
    /// can kill what it started.
    pub(super) spawned: Vec<Value>,
    /// The stream of the newest bootstrap each connection saw for each terminal (key as
    /// `probe_residue`'s): probe steps read that stream's output only, so a server that
    /// attaches the spawner implicitly (a second stream) does not show every report twice.
    pub(super) streams: BTreeMap<String, Value>,
    /// Under profile phux a server may attach the spawning connection implicitly (our rule
    /// [SPAWN.ATTACH.1] forbids it): the streams it opens that way are set aside, so that a
    /// case sees only the streams its own ATTACH_TERMINALs opened.
    pub(super) tolerate_implicit_attach: bool,
    /// Terminals spawned on a connection since the last step, `(conn, terminal)`.
    pub(super) fresh_spawns: Vec<(String, Value)>,
    /// `(conn, stream)` of streams the server opened without an ATTACH_TERMINAL.
    pub(super) implicit_streams: BTreeSet<(String, String)>,
    /// Whether the server sent anything (bytes or a close) on any connection of the case.
    pub(super) heard: bool,
}

/// The terminal a `TERMINAL_SPAWNED{result=ok{terminal=…}}` names.
fn spawned_terminal(frame: &Value) -> Option<&Value> {
    if name_of(frame) != "TERMINAL_SPAWNED" {
        return None;
    }
    let result = pattern::field(frame, "result")?;
    (name_of(result) == "ok")
        .then(|| pattern::field(result, "terminal"))
        .flatten()
}

/// A salt no other case of this or an earlier run uses: the clock, the process and a counter.
pub(super) fn fresh_salt() -> u64 {
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
pub(super) fn is_output(frame: &Value) -> bool {
    matches!(
        name_of(frame),
        "TERMINAL_OUTPUT" | "BOOTSTRAP_BEGIN" | "BOOTSTRAP_CHUNK" | "BOOTSTRAP_READY"
    )
}

/// The record name of a frame value.
pub(super) fn name_of(value: &Value) -> &str {
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
    pub(super) fn step(&mut self, step: &Step) -> Result<(), StepError> {
        self.fresh_spawns.clear();
        self.step_kind(step)?;
        if self.tolerate_implicit_attach {
            self.set_aside_implicit_attaches()?;
        }
        Ok(())
    }

    /// For each terminal a step saw spawned: a PING barrier on its connection (the server
    /// handled the spawn before the PING, so an implicit attach shows before the PONG), then
    /// every stream of that terminal begun before the PONG is set aside, its frames dropped.
    fn set_aside_implicit_attaches(&mut self) -> Result<(), StepError> {
        let spawns = std::mem::take(&mut self.fresh_spawns);
        for (conn, terminal) in spawns {
            if self.conns.get(&conn).is_none_or(|c| c.closed || c.paused) {
                continue;
            }
            let nonce = self.next_nonce;
            self.next_nonce += 1;
            let key = self.conn(&conn)?;
            let ping = Frame::Ping(phux_proto::frame::Ping { nonce });
            self.wire
                .push(format!("{conn} > {ping}   (implicit-attach barrier)"));
            self.transport.send(key, &ping.to_bytes())?;
            let pong = Frame::Pong(phux_proto::frame::Pong { nonce }).to_value();
            let deadline = Instant::now() + self.timeout;
            loop {
                if let Some(c) = self.conns.get_mut(&conn)
                    && let Some(i) = c.inbox.iter().position(|f| *f == pong)
                {
                    c.inbox.remove(i);
                    break;
                }
                if self.conns.get(&conn).is_some_and(|c| c.closed) {
                    // The server ended the connection: nothing to set aside on it.
                    break;
                }
                self.more(&conn, deadline, &|s| {
                    failed(
                        format!("{pong} answering the runner's PING"),
                        s.inbox_text(&conn),
                    )
                })?;
            }
            let Some(c) = self.conns.get_mut(&conn) else {
                continue;
            };
            let begun: Vec<String> = c
                .inbox
                .iter()
                .filter(|f| {
                    name_of(f) == "BOOTSTRAP_BEGIN"
                        && pattern::field(f, "terminal") == Some(&terminal)
                })
                .filter_map(|f| pattern::field(f, "stream").map(ToString::to_string))
                .collect();
            for stream in begun {
                c.inbox.retain(|f| {
                    pattern::field(f, "stream").is_none_or(|s| s.to_string() != stream)
                });
                self.wire.push(format!(
                    "{conn}: stream {stream} of {terminal} opened without ATTACH_TERMINAL: set aside"
                ));
                self.streams.remove(&format!("{conn} {terminal}"));
                self.implicit_streams.insert((conn.clone(), stream));
            }
        }
        Ok(())
    }

    pub(super) fn step_kind(&mut self, step: &Step) -> Result<(), StepError> {
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
            StepKind::Together(body) => self.together(body),
            StepKind::Send { conn, frame } => self.send(conn, frame),
            StepKind::SendRaw { conn, bytes } => {
                let key = self.conn(conn)?;
                // A long raw step (a repeat) is logged by its start and its size.
                let shown = &bytes[..bytes.len().min(64)];
                let more = if bytes.len() > shown.len() {
                    format!(" … ({} bytes)", bytes.len())
                } else {
                    String::new()
                };
                self.wire.push(format!("{conn} > raw {}{more}", hex(shown)));
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
                // The text grows by whole frames: search only what is new (and the needle's
                // length before it), not a long bootstrap again after each chunk.
                let scanned = std::cell::Cell::new(0_usize);
                let cond = |acc: &[u8]| {
                    let from = scanned.get().saturating_sub(needle.len().saturating_sub(1));
                    scanned.set(acc.len());
                    acc.get(from..).is_some_and(|new| contains(new, needle))
                };
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
                let mut fields = vec![("terminal".into(), terminal)];
                if let Some(stream) = self.streams.get(&residue_key) {
                    fields.push(("stream".into(), stream.clone()));
                }
                fields.push((phux_proto::notation::REST_FIELD.into(), Value::Wildcard));
                let pattern = Value::record("TERMINAL_OUTPUT", fields);
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

    pub(super) fn conn(&mut self, name: &str) -> Result<ConnKey, StepError> {
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
    pub(super) fn pattern(&self, pattern: &Value) -> Result<Value, StepError> {
        self.templates.expand(pattern).map_err(StepError::Runner)
    }

    pub(super) fn send(&mut self, conn: &str, frame: &Value) -> Result<(), StepError> {
        let value = self.templates.expand(frame).map_err(StepError::Runner)?;
        self.send_expanded(conn, &value)
    }

    /// [`Self::send`] for a frame whose templates are expanded already.
    pub(super) fn send_expanded(&mut self, conn: &str, value: &Value) -> Result<(), StepError> {
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
    pub(super) fn fill(&mut self, conn: &str, wait: Duration) -> Result<bool, StepError> {
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
        if got != Recv::Nothing {
            self.heard = true;
        }
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
                            let value = frame.to_value();
                            if let Some(stream) = pattern::field(&value, "stream")
                                && self
                                    .implicit_streams
                                    .contains(&(c.name.clone(), stream.to_string()))
                            {
                                self.wire.push(format!(
                                    "{} < {frame}   (implicit attach: set aside)",
                                    c.name
                                ));
                                continue;
                            }
                            if let Some(t) = spawned_terminal(&value) {
                                self.spawned.push(t.clone());
                                self.fresh_spawns.push((c.name.clone(), t.clone()));
                            }
                            if name_of(&value) == "BOOTSTRAP_BEGIN"
                                && let (Some(t), Some(stream)) = (
                                    pattern::field(&value, "terminal"),
                                    pattern::field(&value, "stream"),
                                )
                            {
                                self.streams
                                    .insert(format!("{} {t}", c.name), stream.clone());
                            }
                            c.inbox.push_back(value);
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
    pub(super) fn more(
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

    pub(super) fn garbage_error(&self, conn: &str) -> Option<StepError> {
        let g = self.conns.get(conn)?.garbage.as_ref()?;
        Some(failed(
            "frames that decode",
            format!("the server sent bytes that do not decode: {g}"),
        ))
    }

    pub(super) fn inbox_text(&self, conn: &str) -> String {
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
}

/// Adds a frame's line to the wire log, unless a `repeat` has used up its share.
pub(super) fn log_frame(
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
