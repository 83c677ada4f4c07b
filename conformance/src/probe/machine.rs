//! [`ProbeMachine`]: the probe's behaviour as a pure state machine (no I/O, no clock).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::command::Command;
use super::grandchild::GrandchildEvent;

/// A `:` line longer than this (the `:` included) is not a command: it is released as payload,
/// so a payload line that merely starts with `:` is never held for ever.
const MAX_COMMAND: usize = 256;

/// The longest canonical payload line held before it is reported anyway: Linux's line buffer
/// (4,095 bytes plus the terminator), so a real tty never makes the probe split a line.
const MAX_LINE: usize = 4096;

/// The longest message a `FAILED` report carries: it comes from the OS through the host.
const MAX_MESSAGE: usize = 200;

const CR: u8 = b'\r';
const LF: u8 = b'\n';

/// The signals the probe can catch and name. SIGKILL and SIGSTOP cannot be caught, so they
/// never reach the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeSignal {
    /// SIGINT: a server's INTERRUPT.
    Int,
    /// SIGTERM: a server's TERMINATE.
    Term,
    /// SIGHUP: the terminal hung up.
    Hup,
    /// SIGUSR1: ends a stall (for local tests; a server cannot send it).
    Usr1,
    /// SIGUSR2.
    Usr2,
    /// SIGCONT: a server's RESUME; ends a stall.
    Cont,
    /// SIGWINCH: the window size changed.
    Winch,
}

impl ProbeSignal {
    /// Every signal the probe knows, in report-name order.
    pub const ALL: [Self; 7] = [
        Self::Int,
        Self::Term,
        Self::Hup,
        Self::Usr1,
        Self::Usr2,
        Self::Cont,
        Self::Winch,
    ];

    /// The name used in commands and reports (`INT`, `TERM`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "INT",
            Self::Term => "TERM",
            Self::Hup => "HUP",
            Self::Usr1 => "USR1",
            Self::Usr2 => "USR2",
            Self::Cont => "CONT",
            Self::Winch => "WINCH",
        }
    }

    /// The signal with this report name; case-sensitive, without a `SIG` prefix.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the OS default disposition ends the process (CONT and WINCH are ignored).
    pub fn is_fatal_by_default(self) -> bool {
        !matches!(self, Self::Cont | Self::Winch)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What the probe does with one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disposition {
    Default,
    Ignore,
    Handle,
}

/// A fact the machine needs from the host (the OS, or a simulator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Query {
    /// The tty's current termios, as [`Answer::Termios`].
    Termios,
    /// Process ids, as [`Answer::Process`].
    Process,
    /// The tty's window size, as [`Answer::Size`].
    Size,
    /// The probe's argument vector, as [`Answer::Args`].
    Args,
    /// The probe's working directory, as [`Answer::Cwd`].
    Cwd,
    /// The probe's environment, as [`Answer::Environ`].
    Environ,
}

impl Query {
    fn name(self) -> &'static str {
        match self {
            Self::Termios => "termios",
            Self::Process => "pgrp",
            Self::Size => "size",
            Self::Args => "args",
            Self::Cwd => "cwd",
            Self::Environ => "environ",
        }
    }
}

/// The termios bits a `TERMIOS` report names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermiosReport {
    /// ICANON.
    pub canonical: bool,
    /// ECHO.
    pub echo: bool,
    /// ISIG.
    pub isig: bool,
    /// ICRNL.
    pub icrnl: bool,
}

/// The ids a `PGRP` report names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessReport {
    /// The probe's pid.
    pub pid: u32,
    /// Its process group.
    pub pgrp: u32,
    /// Its session.
    pub sid: u32,
    /// The tty's foreground process group, `None` when it cannot be read.
    pub foreground: Option<u32>,
}

/// The host's answer to a [`Query`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// For [`Query::Termios`].
    Termios(TermiosReport),
    /// For [`Query::Process`].
    Process(ProcessReport),
    /// For [`Query::Size`].
    Size {
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// For [`Query::Args`]: every element of the argument vector, the program name first.
    Args(Vec<Vec<u8>>),
    /// For [`Query::Cwd`]: the working directory's path.
    Cwd(Vec<u8>),
    /// For [`Query::Environ`]: every environment entry, `NAME=VALUE`, in any order.
    Environ(Vec<Vec<u8>>),
    /// The query could not be answered; the message is reported (sanitised) in `FAILED`.
    Failed(String),
}

/// Something that happened to the probe, other than input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeEvent {
    /// A read returned end of input (0 bytes).
    Eof,
    /// A catchable signal arrived.
    Signal(ProbeSignal),
    /// The timer of a `Stall(Some(..))` ran out. Spurious calls are ignored.
    StallElapsed,
    /// The answer to the last [`ProbeAction::Query`].
    Answer(Answer),
    /// News from (or about) the grandchild.
    Grandchild(GrandchildEvent),
}

/// What the host must do, in order.
///
/// Deliberately not `#[non_exhaustive]`: a new action must break every host at compile time
/// rather than be ignored by a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeAction {
    /// Write these bytes to the terminal (the probe's stdout), unchanged.
    Write(Vec<u8>),
    /// `true`: raw mode (cfmakeraw). `false`: the terminal's original mode. Either way echo
    /// stays as last set by [`ProbeAction::SetEcho`].
    SetRaw(bool),
    /// Turn ECHO on or off.
    SetEcho(bool),
    /// Answer with [`ProbeEvent::Answer`]; until then the machine reads no input.
    Query(Query),
    /// Stop reading input; `Some(d)`: send [`ProbeEvent::StallElapsed`] after `d`.
    Stall(Option<Duration>),
    /// The stall is over (cancel its timer); reading may resume.
    Resume,
    /// Start the grandchild in the probe's process group and report its lines as
    /// [`ProbeEvent::Grandchild`] (its first is [`GrandchildEvent::Ready`]).
    SpawnGrandchild,
    /// Exit with this status. The machine is finished.
    Exit(u8),
    /// Die by this signal, as its default disposition would. The machine is finished.
    DieBySignal(ProbeSignal),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Stalled { timed: bool },
    AwaitingAnswer(Query),
    AwaitingGrandchild,
    Exited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grandchild {
    None,
    Starting,
    Ready,
}

/// The probe's behaviour: input bytes and events in, [`ProbeAction`]s out. See the module doc
/// for the host contract, the command language and the report grammar.
#[derive(Debug, Clone)]
pub struct ProbeMachine {
    /// The sequence number of the next report.
    seq: u64,
    started: bool,
    raw: bool,
    echo: bool,
    state: State,
    /// Input read but not yet processed (while stalled or waiting).
    pending: VecDeque<u8>,
    /// End of input was read after `pending`.
    eof_pending: bool,
    at_line_start: bool,
    /// A `:` line being collected (the `:` included).
    held_command: Option<Vec<u8>>,
    /// The last command ended with CR: an LF right after it belongs to that terminator.
    swallow_lf: bool,
    /// Payload not yet reported.
    payload: Vec<u8>,
    /// The last payload byte was CR (so an LF after it does not count another line).
    prev_payload_cr: bool,
    dispositions: [Disposition; ProbeSignal::ALL.len()],
    grandchild: Grandchild,
    payload_bytes: u64,
    payload_lines: u64,
    hasher: Sha256,
    hashed: u64,
    /// The variable a pending [`Query::Environ`] is for (`:report env NAME`); `None`: all.
    env_wanted: Option<String>,
}

impl Default for ProbeMachine {
    fn default() -> Self {
        Self::new()
    }
}

impl ProbeMachine {
    /// A probe that has not started: call [`ProbeMachine::start`] next.
    pub fn new() -> Self {
        Self {
            seq: 0,
            started: false,
            raw: false,
            echo: true,
            state: State::Running,
            pending: VecDeque::new(),
            eof_pending: false,
            at_line_start: true,
            held_command: None,
            swallow_lf: false,
            payload: Vec::new(),
            prev_payload_cr: false,
            dispositions: [Disposition::Default; ProbeSignal::ALL.len()],
            grandchild: Grandchild::None,
            payload_bytes: 0,
            payload_lines: 0,
            hasher: Sha256::new(),
            hashed: 0,
            env_wanted: None,
        }
    }

    /// The start-up actions: echo off, then `PROBE 0 READY`. Later calls return nothing.
    pub fn start(&mut self) -> Vec<ProbeAction> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            self.echo = false;
            out.push(ProbeAction::SetEcho(false));
            self.report(&mut out, "READY");
        }
        out
    }

    /// Bytes one read returned. While the probe does not want input they are kept and
    /// processed once it does, in order.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<ProbeAction> {
        let mut out = Vec::new();
        if self.state != State::Exited {
            self.pending.extend(bytes);
            self.process(&mut out);
        }
        out
    }

    /// Something other than input happened.
    pub fn handle(&mut self, event: ProbeEvent) -> Vec<ProbeAction> {
        let mut out = Vec::new();
        if self.state == State::Exited {
            return out;
        }
        match event {
            ProbeEvent::Eof => {
                self.eof_pending = true;
                self.process(&mut out);
            }
            ProbeEvent::Signal(sig) => self.signal(sig, &mut out),
            ProbeEvent::StallElapsed => {
                if self.state == (State::Stalled { timed: true }) {
                    self.report(&mut out, "RESUMED timer");
                    self.resume(&mut out);
                }
            }
            ProbeEvent::Answer(answer) => {
                if let State::AwaitingAnswer(query) = self.state {
                    let body = match answer {
                        Answer::Termios(t) => format!(
                            "TERMIOS {} {}echo {}isig {}icrnl",
                            if t.canonical { "canon" } else { "raw" },
                            flag(t.echo),
                            flag(t.isig),
                            flag(t.icrnl),
                        ),
                        Answer::Process(p) => format!(
                            "PGRP {} {} {} {}",
                            p.pid,
                            p.pgrp,
                            p.sid,
                            p.foreground
                                .map_or_else(|| "-".to_owned(), |fg| fg.to_string()),
                        ),
                        Answer::Size { cols, rows } => format!("SIZE {cols} {rows}"),
                        Answer::Args(args) => words("ARGS", args.iter().map(Vec::as_slice)),
                        Answer::Cwd(path) => format!("CWD {}", byte_word(&path)),
                        Answer::Environ(entries) => {
                            if let Some(name) = self.env_wanted.take() {
                                env_report(&name, &entries)
                            } else {
                                let mut sorted: Vec<&[u8]> =
                                    entries.iter().map(Vec::as_slice).collect();
                                sorted.sort_unstable();
                                words("ENVIRON", sorted.into_iter())
                            }
                        }
                        Answer::Failed(why) => {
                            format!("FAILED {} {}", query.name(), sanitize(&why))
                        }
                    };
                    self.report(&mut out, &body);
                    self.state = State::Running;
                    self.process(&mut out);
                }
            }
            ProbeEvent::Grandchild(news) => self.grandchild_news(news, &mut out),
        }
        out
    }

    /// Whether the host should read input now.
    pub fn wants_input(&self) -> bool {
        self.state == State::Running
    }

    /// Whether the probe last asked for raw mode.
    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// Whether the probe last asked for echo.
    pub fn echo(&self) -> bool {
        self.echo
    }

    /// Whether a grandchild is starting or running.
    pub fn has_grandchild(&self) -> bool {
        self.grandchild != Grandchild::None
    }

    /// Whether the probe has exited or died: it will act no more.
    pub fn is_finished(&self) -> bool {
        self.state == State::Exited
    }

    /// The sequence number the next report will carry.
    pub fn next_seq(&self) -> u64 {
        self.seq
    }

    /// Processes pending input while running, then end of input if it was read.
    fn process(&mut self, out: &mut Vec<ProbeAction>) {
        while self.state == State::Running {
            let Some(b) = self.pending.pop_front() else {
                break;
            };
            self.byte(b, out);
        }
        if self.state != State::Running {
            return;
        }
        // Raw mode reports per read; canonical payload waits for its line end.
        if self.raw {
            self.flush_payload(out);
        }
        if self.eof_pending {
            self.eof_pending = false;
            self.flush_payload(out);
            self.report(out, "EOF");
            self.report(out, "EXITING 0");
            self.exit(0, out);
        }
    }

    fn byte(&mut self, b: u8, out: &mut Vec<ProbeAction>) {
        if let Some(line) = &mut self.held_command {
            if b == CR || b == LF {
                let line = std::mem::take(line);
                self.held_command = None;
                self.at_line_start = true;
                self.swallow_lf = b == CR;
                self.command(&line, out);
            } else {
                line.push(b);
                if line.len() > MAX_COMMAND {
                    let line = std::mem::take(line);
                    self.held_command = None;
                    for b in line {
                        self.payload_byte(b, out);
                    }
                }
            }
            return;
        }
        if std::mem::take(&mut self.swallow_lf) && b == LF {
            return;
        }
        if self.at_line_start && b == b':' {
            self.flush_payload(out);
            self.prev_payload_cr = false;
            self.held_command = Some(vec![b]);
            return;
        }
        self.payload_byte(b, out);
    }

    fn payload_byte(&mut self, b: u8, out: &mut Vec<ProbeAction>) {
        self.payload.push(b);
        match b {
            LF => {
                if !self.prev_payload_cr {
                    self.payload_lines += 1;
                }
                self.prev_payload_cr = false;
                self.at_line_start = true;
                if !self.raw {
                    self.flush_payload(out);
                }
            }
            CR => {
                self.payload_lines += 1;
                self.prev_payload_cr = true;
                self.at_line_start = true;
            }
            _ => {
                self.prev_payload_cr = false;
                self.at_line_start = false;
            }
        }
        if self.payload.len() >= MAX_LINE {
            self.flush_payload(out);
        }
    }

    fn flush_payload(&mut self, out: &mut Vec<ProbeAction>) {
        if self.payload.is_empty() {
            return;
        }
        let payload = std::mem::take(&mut self.payload);
        self.hasher.update(&payload);
        let len = payload.len() as u64;
        self.hashed += len;
        self.payload_bytes += len;
        self.report(out, &format!("READ {}", hex(&payload)));
    }

    fn command(&mut self, line: &[u8], out: &mut Vec<ProbeAction>) {
        let Some(command) = line.get(1..).and_then(Command::parse) else {
            self.report(out, &format!("BADCMD {}", hex(line)));
            return;
        };
        match command {
            Command::Raw | Command::Canon => {
                self.raw = command == Command::Raw;
                out.push(ProbeAction::SetRaw(self.raw));
                self.query(Query::Termios, out);
            }
            Command::Echo(on) => {
                self.echo = on;
                out.push(ProbeAction::SetEcho(on));
                self.query(Query::Termios, out);
            }
            Command::ReportTermios => self.query(Query::Termios, out),
            Command::ReportPgrp => self.query(Query::Process, out),
            Command::ReportSize => self.query(Query::Size, out),
            Command::ReportArgs => self.query(Query::Args, out),
            Command::ReportCwd => self.query(Query::Cwd, out),
            Command::ReportEnviron => {
                self.env_wanted = None;
                self.query(Query::Environ, out);
            }
            Command::ReportEnv(name) => {
                self.env_wanted = Some(name);
                self.query(Query::Environ, out);
            }
            Command::Stall(duration) => {
                let how =
                    duration.map_or_else(|| "forever".to_owned(), |d| d.as_millis().to_string());
                self.report(out, &format!("STALLING {how}"));
                out.push(ProbeAction::Stall(duration));
                self.state = State::Stalled {
                    timed: duration.is_some(),
                };
            }
            Command::Exit(code) => {
                self.report(out, &format!("EXITING {code}"));
                self.exit(code, out);
            }
            Command::Ignore(sig) => self.dispose(sig, Disposition::Ignore, "IGNORING", out),
            Command::Handle(sig) => self.dispose(sig, Disposition::Handle, "HANDLING", out),
            Command::Default(sig) => self.dispose(sig, Disposition::Default, "DEFAULT", out),
            Command::Grandchild => {
                if self.grandchild == Grandchild::None {
                    self.grandchild = Grandchild::Starting;
                    out.push(ProbeAction::SpawnGrandchild);
                    self.state = State::AwaitingGrandchild;
                } else {
                    self.report(out, "FAILED grandchild already running");
                }
            }
            Command::Count => {
                let body = format!("COUNT {} {}", self.payload_bytes, self.payload_lines);
                self.report(out, &body);
            }
            Command::Checksum => {
                let digest = self.hasher.clone().finalize();
                let body = format!("CHECKSUM {} {}", hex(&digest), self.hashed);
                self.report(out, &body);
            }
            Command::ChecksumReset => {
                self.hasher = Sha256::new();
                self.hashed = 0;
                self.report(out, "CHECKSUM-RESET");
            }
            Command::Print(bytes) => {
                let body = format!("PRINTED {}", bytes.len());
                out.push(ProbeAction::Write(bytes));
                self.report(out, &body);
            }
            Command::Flood(n) => {
                out.push(ProbeAction::Write(flood_text(n)));
                self.report(out, &format!("FLOODED {n}"));
            }
            Command::Mark(word) => self.report(out, &format!("MARK {word}")),
        }
    }

    fn query(&mut self, query: Query, out: &mut Vec<ProbeAction>) {
        out.push(ProbeAction::Query(query));
        self.state = State::AwaitingAnswer(query);
    }

    fn dispose(
        &mut self,
        sig: ProbeSignal,
        disposition: Disposition,
        verb: &str,
        out: &mut Vec<ProbeAction>,
    ) {
        self.dispositions[sig.index()] = disposition;
        self.report(out, &format!("{verb} {}", sig.name()));
    }

    fn signal(&mut self, sig: ProbeSignal, out: &mut Vec<ProbeAction>) {
        let ends_stall = matches!(self.state, State::Stalled { .. })
            && matches!(sig, ProbeSignal::Cont | ProbeSignal::Usr1);
        match self.dispositions[sig.index()] {
            Disposition::Handle => self.report(out, &format!("SIGNAL {}", sig.name())),
            Disposition::Ignore => {}
            Disposition::Default => {
                if sig.is_fatal_by_default() && !ends_stall {
                    self.state = State::Exited;
                    out.push(ProbeAction::DieBySignal(sig));
                    return;
                }
            }
        }
        if ends_stall {
            self.report(out, &format!("RESUMED {}", sig.name()));
            self.resume(out);
        }
    }

    fn grandchild_news(&mut self, news: GrandchildEvent, out: &mut Vec<ProbeAction>) {
        let waiting = self.state == State::AwaitingGrandchild;
        match news {
            GrandchildEvent::Ready => {
                if self.grandchild == Grandchild::Starting {
                    self.grandchild = Grandchild::Ready;
                    self.report(out, "GRANDCHILD READY");
                }
            }
            GrandchildEvent::Signal(sig) => {
                if self.grandchild == Grandchild::Ready {
                    self.report(out, &format!("GRANDCHILD SIGNAL {}", sig.name()));
                }
            }
            GrandchildEvent::Gone => {
                if self.grandchild != Grandchild::None {
                    self.grandchild = Grandchild::None;
                    self.report(out, "GRANDCHILD GONE");
                }
            }
            GrandchildEvent::SpawnFailed(why) => {
                if self.grandchild == Grandchild::Starting {
                    self.grandchild = Grandchild::None;
                    self.report(out, &format!("FAILED grandchild {}", sanitize(&why)));
                }
            }
        }
        if waiting && self.grandchild != Grandchild::Starting {
            self.state = State::Running;
            self.process(out);
        }
    }

    fn resume(&mut self, out: &mut Vec<ProbeAction>) {
        out.push(ProbeAction::Resume);
        self.state = State::Running;
        self.process(out);
    }

    fn exit(&mut self, code: u8, out: &mut Vec<ProbeAction>) {
        self.state = State::Exited;
        self.pending.clear();
        out.push(ProbeAction::Exit(code));
    }

    fn report(&mut self, out: &mut Vec<ProbeAction>, body: &str) {
        let line = format!("\r\nPROBE {} {body}\r\n", self.seq);
        self.seq += 1;
        out.push(ProbeAction::Write(line.into_bytes()));
    }
}

/// A byte string as one report word: lowercase hex, or `-` when it is empty.
fn byte_word(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        "-".to_owned()
    } else {
        hex(bytes)
    }
}

/// `KIND` followed by one word per byte string.
fn words<'a>(kind: &str, items: impl Iterator<Item = &'a [u8]>) -> String {
    items.fold(kind.to_owned(), |mut body, item| {
        body.push(' ');
        body.push_str(&byte_word(item));
        body
    })
}

/// `ENV <name> <value word>`, or `ENV <name> UNSET`: the first entry named so, as getenv(3)
/// finds it.
fn env_report(name: &str, entries: &[Vec<u8>]) -> String {
    let value = entries.iter().find_map(|entry| {
        let eq = entry.iter().position(|&b| b == b'=')?;
        (entry.get(..eq) == Some(name.as_bytes())).then(|| entry.get(eq + 1..).unwrap_or_default())
    });
    match value {
        Some(value) => format!("ENV {name} {}", byte_word(value)),
        None => format!("ENV {name} UNSET"),
    }
}

/// `n` bytes of `:flood` text: the letters a to z over and over, no control characters, so a
/// terminal only prints (and wraps) them.
fn flood_text(n: usize) -> Vec<u8> {
    (b'a'..=b'z').cycle().take(n).collect()
}

fn flag(on: bool) -> &'static str {
    if on { "" } else { "-" }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// One line of printable ASCII, bounded, never empty: it ends a report line.
fn sanitize(message: &str) -> String {
    let clean: String = message
        .chars()
        .take(MAX_MESSAGE)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if clean.trim().is_empty() {
        "-".to_owned()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every report body the actions wrote, with its sequence number checked: they must count
    /// up from `first` with no gap.
    fn bodies_from(first: u64, actions: &[ProbeAction]) -> Vec<String> {
        let mut text = Vec::new();
        for action in actions {
            if let ProbeAction::Write(bytes) = action {
                text.extend_from_slice(bytes);
            }
        }
        let text = String::from_utf8(text).expect("reports are ASCII");
        let mut seq = first;
        text.split("\r\n")
            .filter(|l| !l.is_empty())
            .map(|line| {
                let rest = line.strip_prefix("PROBE ").expect("a report line");
                let (n, body) = rest.split_once(' ').expect("seq and body");
                assert_eq!(n, seq.to_string(), "sequence in {line:?}");
                seq += 1;
                body.to_owned()
            })
            .collect()
    }

    /// A started machine, with its READY consumed.
    fn started() -> ProbeMachine {
        let mut m = ProbeMachine::new();
        let actions = m.start();
        assert_eq!(actions.first(), Some(&ProbeAction::SetEcho(false)));
        assert_eq!(bodies_from(0, &actions), ["READY"]);
        m
    }

    /// Feeds and returns the report bodies, checking the sequence continues.
    fn feed(m: &mut ProbeMachine, bytes: &[u8]) -> Vec<String> {
        let first = m.next_seq();
        bodies_from(first, &m.feed(bytes))
    }

    fn handle(m: &mut ProbeMachine, event: ProbeEvent) -> Vec<ProbeAction> {
        m.handle(event)
    }

    fn termios(canonical: bool, echo: bool) -> Answer {
        Answer::Termios(TermiosReport {
            canonical,
            echo,
            isig: canonical,
            icrnl: canonical,
        })
    }

    fn raw_machine() -> ProbeMachine {
        let mut m = started();
        assert_eq!(
            m.feed(b":raw\n"),
            [
                ProbeAction::SetRaw(true),
                ProbeAction::Query(Query::Termios)
            ]
        );
        let first = m.next_seq();
        let actions = m.handle(ProbeEvent::Answer(termios(false, false)));
        assert_eq!(
            bodies_from(first, &actions),
            ["TERMIOS raw -echo -isig -icrnl"]
        );
        assert!(m.is_raw());
        m
    }

    #[test]
    fn start_turns_echo_off_and_reports_ready_once() {
        let mut m = started();
        assert!(!m.echo());
        assert!(m.wants_input());
        assert!(m.start().is_empty());
    }

    #[test]
    fn canonical_payload_is_reported_per_line_whatever_the_reads() {
        let mut m = started();
        assert!(feed(&mut m, b"hel").is_empty());
        assert_eq!(feed(&mut m, b"lo\nwor"), ["READ 68656c6c6f0a"]);
        assert_eq!(feed(&mut m, b"ld\n\n"), ["READ 776f726c640a", "READ 0a"]);
        // A ':' inside a line is payload.
        assert_eq!(feed(&mut m, b"a:b\n"), ["READ 613a620a"]);
    }

    #[test]
    fn raw_payload_is_reported_per_read() {
        let mut m = raw_machine();
        assert_eq!(feed(&mut m, b"ab"), ["READ 6162"]);
        assert_eq!(feed(&mut m, b"\x1b[A"), ["READ 1b5b41"]);
        assert_eq!(feed(&mut m, b"\r\x03"), ["READ 0d03"]);
        assert_eq!(feed(&mut m, b""), Vec::<String>::new());
    }

    #[test]
    fn commands_split_across_reads_and_their_terminators() {
        let mut m = started();
        assert!(feed(&mut m, b":co").is_empty());
        assert!(!feed(&mut m, b"un").iter().any(|b| b.starts_with("READ")));
        assert_eq!(feed(&mut m, b"t\r"), ["COUNT 0 0"]);
        // The LF of a CR LF after a command belongs to it, even in the next read.
        assert_eq!(feed(&mut m, b"\n:count\r\n"), ["COUNT 0 0"]);
        // Only one LF is swallowed: a second one is an empty payload line.
        assert_eq!(feed(&mut m, b":count\r\n\n"), ["COUNT 0 0", "READ 0a"]);
        assert_eq!(feed(&mut m, b":count\n"), ["COUNT 1 1"]);
    }

    #[test]
    fn payload_before_a_command_in_one_raw_read_is_reported_first() {
        let mut m = raw_machine();
        assert_eq!(
            feed(&mut m, b"x\r:mark m1\rtail"),
            ["READ 780d", "MARK m1", "READ 7461696c"]
        );
    }

    #[test]
    fn bad_commands_are_reported_not_run() {
        let mut m = started();
        assert_eq!(feed(&mut m, b":nope 1\n"), ["BADCMD 3a6e6f70652031"]);
        assert_eq!(feed(&mut m, b":\n"), ["BADCMD 3a"]);
        assert_eq!(feed(&mut m, b":count\n"), ["COUNT 0 0"]);
    }

    #[test]
    fn an_overlong_colon_line_is_released_as_payload() {
        let mut m = started();
        let mut line = vec![b':'];
        line.extend(std::iter::repeat_n(b'x', MAX_COMMAND));
        line.push(b'\n');
        assert_eq!(feed(&mut m, &line), [format!("READ {}", hex(&line))]);
    }

    #[test]
    fn canonical_line_longer_than_the_kernel_buffer_is_reported_in_pieces() {
        let mut m = started();
        let long = vec![b'y'; MAX_LINE + 10];
        let bodies = feed(&mut m, &long);
        assert_eq!(bodies, [format!("READ {}", hex(&long[..MAX_LINE]))]);
        assert_eq!(
            feed(&mut m, b"\n"),
            [format!("READ {}0a", hex(&long[MAX_LINE..]))]
        );
    }

    #[test]
    fn raw_canon_and_echo_change_the_tty_then_report_its_termios() {
        let mut m = raw_machine();
        // Input after a query waits for the answer: reports stay in input order.
        assert_eq!(
            m.feed(b":canon\n:count\n"),
            [
                ProbeAction::SetRaw(false),
                ProbeAction::Query(Query::Termios)
            ]
        );
        assert!(!m.wants_input());
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Answer(termios(true, false)));
        assert_eq!(
            bodies_from(first, &actions),
            ["TERMIOS canon -echo isig icrnl", "COUNT 0 0"]
        );
        assert!(!m.is_raw());
        assert_eq!(
            m.feed(b":echo on\n"),
            [
                ProbeAction::SetEcho(true),
                ProbeAction::Query(Query::Termios)
            ]
        );
        assert!(m.echo());
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Answer(termios(true, true)));
        assert_eq!(
            bodies_from(first, &actions),
            ["TERMIOS canon echo isig icrnl"]
        );
        assert_eq!(
            m.feed(b":echo off\n"),
            [
                ProbeAction::SetEcho(false),
                ProbeAction::Query(Query::Termios)
            ]
        );
        assert!(!m.echo());
    }

    #[test]
    fn reports_of_termios_pgrp_size_and_failures() {
        let mut m = started();
        assert_eq!(
            m.feed(b":report termios\n"),
            [ProbeAction::Query(Query::Termios)]
        );
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(termios(true, false)));
        assert_eq!(bodies_from(first, &a), ["TERMIOS canon -echo isig icrnl"]);

        assert_eq!(
            m.feed(b":report pgrp\n"),
            [ProbeAction::Query(Query::Process)]
        );
        let first = m.next_seq();
        let a = handle(
            &mut m,
            ProbeEvent::Answer(Answer::Process(ProcessReport {
                pid: 41,
                pgrp: 41,
                sid: 41,
                foreground: None,
            })),
        );
        assert_eq!(bodies_from(first, &a), ["PGRP 41 41 41 -"]);

        assert_eq!(m.feed(b":report size\n"), [ProbeAction::Query(Query::Size)]);
        let first = m.next_seq();
        let a = handle(
            &mut m,
            ProbeEvent::Answer(Answer::Size { cols: 80, rows: 24 }),
        );
        assert_eq!(bodies_from(first, &a), ["SIZE 80 24"]);

        assert_eq!(m.feed(b":report size\n"), [ProbeAction::Query(Query::Size)]);
        let first = m.next_seq();
        let a = handle(
            &mut m,
            ProbeEvent::Answer(Answer::Failed("Not a tty\r\n(os error 25)".into())),
        );
        assert_eq!(
            bodies_from(first, &a),
            ["FAILED size Not a tty??(os error 25)"]
        );
        // An answer nobody asked for is ignored.
        assert!(
            handle(
                &mut m,
                ProbeEvent::Answer(Answer::Size { cols: 1, rows: 1 })
            )
            .is_empty()
        );
    }

    #[test]
    fn reports_of_args_cwd_and_environment() {
        let mut m = started();
        assert_eq!(m.feed(b":report args\n"), [ProbeAction::Query(Query::Args)]);
        let first = m.next_seq();
        let args = vec![b"/bin/probe".to_vec(), b"a b".to_vec(), Vec::new()];
        let a = handle(&mut m, ProbeEvent::Answer(Answer::Args(args)));
        assert_eq!(
            bodies_from(first, &a),
            ["ARGS 2f62696e2f70726f6265 612062 -"]
        );

        assert_eq!(m.feed(b":report cwd\n"), [ProbeAction::Query(Query::Cwd)]);
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(Answer::Cwd(b"/".to_vec())));
        assert_eq!(bodies_from(first, &a), ["CWD 2f"]);

        let environ = || {
            Answer::Environ(vec![
                b"TERM=vt100".to_vec(),
                b"B=".to_vec(),
                b"A=1".to_vec(),
                b"A=2".to_vec(),
            ])
        };
        // The whole environment, sorted, so a transcript can compare it with one list.
        assert_eq!(
            m.feed(b":report environ\n"),
            [ProbeAction::Query(Query::Environ)]
        );
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(environ()));
        assert_eq!(
            bodies_from(first, &a),
            ["ENVIRON 413d31 413d32 423d 5445524d3d7674313030"]
        );
        for (name, body) in [
            ("TERM", "ENV TERM 7674313030"),
            ("A", "ENV A 31"),
            ("B", "ENV B -"),
            ("C", "ENV C UNSET"),
            ("TER", "ENV TER UNSET"),
        ] {
            let line = format!(":report env {name}\n");
            assert_eq!(
                m.feed(line.as_bytes()),
                [ProbeAction::Query(Query::Environ)]
            );
            let first = m.next_seq();
            let a = handle(&mut m, ProbeEvent::Answer(environ()));
            assert_eq!(bodies_from(first, &a), [body]);
        }
        // After a single variable, `environ` reports everything again.
        m.feed(b":report environ\n");
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(Answer::Environ(Vec::new())));
        assert_eq!(bodies_from(first, &a), ["ENVIRON"]);
        m.feed(b":report args\n");
        let first = m.next_seq();
        let a = handle(&mut m, ProbeEvent::Answer(Answer::Failed("gone".into())));
        assert_eq!(bodies_from(first, &a), ["FAILED args gone"]);
    }

    #[test]
    fn a_timed_stall_holds_input_until_its_timer() {
        let mut m = raw_machine();
        let first = m.next_seq();
        let actions = m.feed(b":stall 250\rabc");
        assert_eq!(
            actions.last(),
            Some(&ProbeAction::Stall(Some(Duration::from_millis(250))))
        );
        assert_eq!(bodies_from(first, &actions), ["STALLING 250"]);
        assert!(!m.wants_input());
        // A host that reads anyway only adds to what is held.
        assert!(m.feed(b"def").is_empty());
        // Signals that do not end a stall are still handled.
        assert!(feed(&mut m, b"").is_empty());
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::StallElapsed);
        assert!(actions.contains(&ProbeAction::Resume));
        assert_eq!(
            bodies_from(first, &actions),
            ["RESUMED timer", "READ 616263646566"]
        );
        assert!(m.wants_input());
        // A late or spurious timer does nothing.
        assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
    }

    #[test]
    fn an_endless_stall_ends_by_sigcont_or_sigusr1_only() {
        for sig in [ProbeSignal::Cont, ProbeSignal::Usr1] {
            let mut m = started();
            let first = m.next_seq();
            let actions = m.feed(b":stall\n:mark after\n");
            assert_eq!(actions.last(), Some(&ProbeAction::Stall(None)));
            assert_eq!(bodies_from(first, &actions), ["STALLING forever"]);
            assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
            assert!(!m.wants_input());
            // SIGUSR1's default would kill; ending a stall it does not.
            let first = m.next_seq();
            let actions = handle(&mut m, ProbeEvent::Signal(sig));
            assert_eq!(
                bodies_from(first, &actions),
                [format!("RESUMED {}", sig.name()), "MARK after".to_owned()]
            );
            assert!(m.wants_input());
        }
    }

    #[test]
    fn a_handled_stall_signal_is_reported_before_the_resume() {
        let mut m = started();
        feed(&mut m, b":handle CONT\n:stall 10000\n");
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Signal(ProbeSignal::Cont));
        assert_eq!(
            bodies_from(first, &actions),
            ["SIGNAL CONT", "RESUMED CONT"]
        );
        // The stall's timer was cancelled with it.
        assert!(handle(&mut m, ProbeEvent::StallElapsed).is_empty());
    }

    #[test]
    fn exit_reports_then_exits_and_the_machine_goes_quiet() {
        let mut m = started();
        let first = m.next_seq();
        let actions = m.feed(b":exit 3\n:count\n");
        assert_eq!(actions.last(), Some(&ProbeAction::Exit(3)));
        assert_eq!(bodies_from(first, &actions), ["EXITING 3"]);
        assert!(m.is_finished());
        assert!(!m.wants_input());
        assert!(m.feed(b":count\n").is_empty());
        assert!(handle(&mut m, ProbeEvent::Signal(ProbeSignal::Int)).is_empty());
        let mut m = started();
        assert_eq!(m.feed(b":exit\n").last(), Some(&ProbeAction::Exit(0)));
    }

    #[test]
    fn end_of_input_flushes_the_line_and_exits_zero() {
        let mut m = started();
        assert!(feed(&mut m, b"partial").is_empty());
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Eof);
        assert_eq!(
            bodies_from(first, &actions),
            ["READ 7061727469616c", "EOF", "EXITING 0"]
        );
        assert_eq!(actions.last(), Some(&ProbeAction::Exit(0)));
    }

    #[test]
    fn end_of_input_during_a_stall_waits_for_the_held_input() {
        let mut m = started();
        feed(&mut m, b":stall 5\nlast\n");
        assert!(handle(&mut m, ProbeEvent::Eof).is_empty());
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::StallElapsed);
        assert_eq!(
            bodies_from(first, &actions),
            ["RESUMED timer", "READ 6c6173740a", "EOF", "EXITING 0"]
        );
    }

    #[test]
    fn signal_dispositions_default_ignore_and_handle() {
        // [SIGNAL.MAP.1] the probe names what arrived, so transcripts can check the mapping.
        for sig in ProbeSignal::ALL {
            let mut m = started();
            let actions = handle(&mut m, ProbeEvent::Signal(sig));
            if sig.is_fatal_by_default() {
                assert_eq!(actions, [ProbeAction::DieBySignal(sig)], "{sig:?}");
                assert!(m.is_finished());
            } else {
                assert!(actions.is_empty(), "{sig:?}");
                assert!(m.wants_input());
            }

            let mut m = started();
            let name = sig.name();
            assert_eq!(
                feed(&mut m, format!(":ignore {name}\n").as_bytes()),
                [format!("IGNORING {name}")]
            );
            assert!(handle(&mut m, ProbeEvent::Signal(sig)).is_empty());
            assert!(!m.is_finished());

            assert_eq!(
                feed(&mut m, format!(":handle {name}\n").as_bytes()),
                [format!("HANDLING {name}")]
            );
            let first = m.next_seq();
            let actions = handle(&mut m, ProbeEvent::Signal(sig));
            assert_eq!(bodies_from(first, &actions), [format!("SIGNAL {name}")]);

            assert_eq!(
                feed(&mut m, format!(":default {name}\n").as_bytes()),
                [format!("DEFAULT {name}")]
            );
            let dies = handle(&mut m, ProbeEvent::Signal(sig)) == [ProbeAction::DieBySignal(sig)];
            assert_eq!(dies, sig.is_fatal_by_default(), "{sig:?}");
        }
    }

    #[test]
    fn grandchild_reports_are_relayed_in_sequence() {
        // [SIGNAL.GROUP.1] a grandchild in the group reports what the group received.
        let mut m = started();
        assert_eq!(
            m.feed(b":grandchild\n:mark m\n"),
            [ProbeAction::SpawnGrandchild]
        );
        assert!(m.has_grandchild());
        assert!(!m.wants_input());
        // Nothing is relayed before READY.
        let gc = |e| ProbeEvent::Grandchild(e);
        assert!(handle(&mut m, gc(GrandchildEvent::Signal(ProbeSignal::Int))).is_empty());
        let first = m.next_seq();
        let actions = handle(&mut m, gc(GrandchildEvent::Ready));
        assert_eq!(bodies_from(first, &actions), ["GRANDCHILD READY", "MARK m"]);
        let first = m.next_seq();
        let actions = handle(&mut m, gc(GrandchildEvent::Signal(ProbeSignal::Term)));
        assert_eq!(bodies_from(first, &actions), ["GRANDCHILD SIGNAL TERM"]);
        assert_eq!(
            feed(&mut m, b":grandchild\n"),
            ["FAILED grandchild already running"]
        );
        let first = m.next_seq();
        let actions = handle(&mut m, gc(GrandchildEvent::Gone));
        assert_eq!(bodies_from(first, &actions), ["GRANDCHILD GONE"]);
        assert!(!m.has_grandchild());
        assert!(handle(&mut m, gc(GrandchildEvent::Gone)).is_empty());
    }

    #[test]
    fn a_grandchild_that_cannot_start_is_reported_and_input_goes_on() {
        let mut m = started();
        m.feed(b":grandchild\n:count\n");
        let first = m.next_seq();
        let actions = handle(
            &mut m,
            ProbeEvent::Grandchild(GrandchildEvent::SpawnFailed(String::new())),
        );
        assert_eq!(
            bodies_from(first, &actions),
            ["FAILED grandchild -", "COUNT 0 0"]
        );
        assert!(!m.has_grandchild());
        // One that dies before READY ends the wait too.
        m.feed(b":grandchild\n:mark x\n");
        let first = m.next_seq();
        let actions = handle(&mut m, ProbeEvent::Grandchild(GrandchildEvent::Gone));
        assert_eq!(bodies_from(first, &actions), ["GRANDCHILD GONE", "MARK x"]);
    }

    #[test]
    fn count_and_checksum_cover_payload_only() {
        let mut m = started();
        feed(&mut m, b"abc\n:mark x\n");
        assert_eq!(feed(&mut m, b":count\n"), ["COUNT 4 1"]);
        // SHA-256("abc\n").
        assert_eq!(
            feed(&mut m, b":checksum\n"),
            ["CHECKSUM edeaaff3f1774ad2888673770c6d64097e391bc362d7d6fb34982ddf0efd18cb 4"]
        );
        assert_eq!(feed(&mut m, b":checksum-reset\n"), ["CHECKSUM-RESET"]);
        // SHA-256 of nothing.
        assert_eq!(
            feed(&mut m, b":checksum\n"),
            ["CHECKSUM e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0"]
        );
        // Counts are since the start; the reset touched only the checksum.
        feed(&mut m, b"de\n");
        assert_eq!(feed(&mut m, b":count\n"), ["COUNT 7 2"]);
    }

    #[test]
    fn lines_count_lf_and_lone_cr_once_each() {
        let mut m = raw_machine();
        feed(&mut m, b"a\r\nb\rc\n\r");
        feed(&mut m, b"\n");
        // a CRLF, b CR, c LF, CR + LF split across reads: four lines.
        assert_eq!(feed(&mut m, b":count\r"), ["COUNT 9 4"]);
    }

    #[test]
    fn print_writes_the_bytes_before_its_report_and_mark_echoes_a_word() {
        let mut m = started();
        let first = m.next_seq();
        let actions = m.feed(b":print 1b5b3f323030346800\n");
        assert_eq!(
            actions.first(),
            Some(&ProbeAction::Write(b"\x1b[?2004h\x00".to_vec()))
        );
        assert_eq!(bodies_from(first, &actions[1..]), ["PRINTED 9"]);
        assert_eq!(feed(&mut m, b":mark step-2\n"), ["MARK step-2"]);
    }

    #[test]
    fn flood_writes_that_much_plain_text_before_its_report() {
        let mut m = started();
        let first = m.next_seq();
        let actions = m.feed(b":flood 60\n");
        let Some(ProbeAction::Write(text)) = actions.first() else {
            panic!("{actions:?}")
        };
        assert_eq!(text.len(), 60);
        assert!(text.starts_with(b"abcdefghijklmnopqrstuvwxyzabc"));
        assert!(text.iter().all(u8::is_ascii_lowercase));
        assert_eq!(bodies_from(first, &actions[1..]), ["FLOODED 60"]);
        assert_eq!(feed(&mut m, b":flood 0\n"), ["FLOODED 0"]);
    }

    #[test]
    fn signal_names_round_trip() {
        for sig in ProbeSignal::ALL {
            assert_eq!(ProbeSignal::from_name(sig.name()), Some(sig));
        }
        assert_eq!(ProbeSignal::from_name("int"), None);
        assert_eq!(ProbeSignal::from_name("SIGINT"), None);
    }

    /// Input made of payload lines and a few side-effect-free commands.
    fn script() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..12),
            Just(b"\n:count\n".to_vec()),
            Just(b"\r:checksum\r\n".to_vec()),
            Just(b"\n:mark m\r".to_vec()),
            Just(b"\n:bad\n".to_vec()),
            Just(b"\r\n".to_vec()),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    fn cut(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut at = 0;
        for p in points.into_iter().chain([bytes.len()]) {
            chunks.push(bytes[at..p].to_vec());
            at = p;
        }
        chunks
    }

    fn run_chunks(raw: bool, chunks: &[Vec<u8>]) -> Vec<String> {
        let mut m = if raw { raw_machine() } else { started() };
        let mut bodies = Vec::new();
        for chunk in chunks {
            bodies.extend(feed(&mut m, chunk));
        }
        bodies.extend(feed(&mut m, b"\n:count\n:checksum\n"));
        bodies
    }

    proptest! {
        /// Canonical mode: how the input is split into reads never changes a single report.
        #[test]
        fn canonical_reports_do_not_depend_on_read_boundaries(
            input in script(),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let whole = run_chunks(false, std::slice::from_ref(&input));
            let split = run_chunks(false, &cut(&input, &cuts));
            prop_assert_eq!(whole, split);
        }

        /// Raw mode: reads may split READs, but the payload they carry, every other report,
        /// the count and the checksum stay the same.
        #[test]
        fn raw_payload_and_summaries_do_not_depend_on_read_boundaries(
            input in script(),
            cuts in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let merge = |bodies: Vec<String>| {
                let mut merged: Vec<String> = Vec::new();
                for body in bodies {
                    match (merged.last_mut(), body.strip_prefix("READ ")) {
                        (Some(last), Some(hex)) if last.starts_with("READ ") => last.push_str(hex),
                        _ => merged.push(body),
                    }
                }
                merged
            };
            let whole = merge(run_chunks(true, std::slice::from_ref(&input)));
            let split = merge(run_chunks(true, &cut(&input, &cuts)));
            prop_assert_eq!(whole, split);
        }
    }
}
