//! The probe child: a small deterministic program that conformance transcripts run inside a
//! terminal, so that what they assert on never depends on a shell prompt.
//!
//! The probe is driven through its own input (what a server writes to the PTY) and answers on
//! its output with one report per line. It is split in two:
//!
//! - [`ProbeMachine`]: the whole behaviour, with no I/O. It is fed the bytes the probe read
//!   ([`ProbeMachine::feed`]) and the things that happened to it ([`ProbeMachine::handle`]:
//!   signals, a stall timer, answers to its queries, its grandchild's reports) and returns
//!   [`ProbeAction`]s for a host to perform in order. Every byte a transcript can observe is
//!   produced by the machine, so the in-process conformance transport can host it as a
//!   simulated child and see exactly what a real PTY shows.
//! - [`run`]: the thin driver behind `phux-conformance probe [ARGS]...` (and the server's
//!   fault tests' `fault-probe probe`), for a real tty
//!   (termios on stdin, signals, a grandchild process). Arguments after `probe` are ignored
//!   (only a leading `--grandchild` means something), so a spawner can pass any argument
//!   vector and read it back with `:report args`.
//!
//! # Host contract
//!
//! Call [`ProbeMachine::start`] once, then perform its actions. Afterwards, read input only
//! while [`ProbeMachine::wants_input`] is true (it is false while the probe is stalled, waiting
//! for a query's answer or for its grandchild, and after it exited): a host that stops reading
//! is what makes the terminal's input queue fill up. Perform the actions of each call in order
//! before making the next call. [`ProbeAction::Query`] is always the last action of a list;
//! answer it with [`ProbeEvent::Answer`] before anything else. Signals may be handed over at
//! any time, also while the probe is stalled. SIGKILL and SIGSTOP never reach the machine: the
//! host applies them itself (the child dies with signal 9, or stops being fed until SIGCONT).
//! A host simulating the grandchild hands every signal the group receives to the machine as
//! [`ProbeEvent::Signal`] and, while [`ProbeMachine::has_grandchild`], also as
//! `ProbeEvent::Grandchild(GrandchildEvent::Signal(..))`.
//!
//! It is a crate of its own because two crates run it and one of them tests the other: the
//! conformance suite (`phux-conformance probe`, and as a simulated child in process) and the
//! reference server's fault tests (`phux-mio-server`'s `fault-probe` example), which must not
//! link the suite that tests the server.
//!
//! The command language and the reports are specified in `PROBE.md`, included here:
#![doc = include_str!("../PROBE.md")]
#![forbid(unsafe_code)]

mod command;
mod driver;
mod grandchild;
mod machine;
mod signal;

pub use driver::{ProbeArgs, run};
pub use machine::{
    Answer, GrandchildEvent, ProbeAction, ProbeEvent, ProbeMachine, ProcessReport, Query,
    TermiosReport,
};
pub use signal::ProbeSignal;
