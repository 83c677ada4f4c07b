//! [`ProbeMachine`]: the probe's behaviour as a pure state machine (no I/O, no clock).
//!
//! The machine's state and its public surface are here. What it exchanges with its host is in
//! `io` ([`ProbeEvent`] in, [`ProbeAction`] out, and the [`Query`] / [`Answer`] pairs); `input`
//! splits what it reads into payload and command lines, `commands` carries out a command, a
//! signal or a grandchild's news, and `report` writes the `PROBE <seq> …` lines.

use std::collections::VecDeque;

use sha2::{Digest, Sha256};

mod commands;
mod input;
mod io;
mod report;
#[cfg(test)]
mod tests;

use report::{byte_word, env_report, flag, sanitize, words};

pub use io::{
    Answer, GrandchildEvent, ProbeAction, ProbeEvent, ProcessReport, Query, TermiosReport,
};

use crate::signal::ProbeSignal;

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
/// What the probe does with one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disposition {
    Default,
    Ignore,
    Handle,
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
}
