//! What the probe machine and its host exchange: the queries it asks and their answers, the
//! events it is handed (signals among them, `crate::signal`) and the actions it asks for.

use std::time::Duration;

use crate::signal::ProbeSignal;

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
    pub(super) fn name(self) -> &'static str {
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

/// News from (or about) the grandchild, for [`ProbeEvent::Grandchild`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrandchildEvent {
    /// It runs and catches every [`ProbeSignal`]: signals sent from now on are reported.
    Ready,
    /// It received this signal.
    Signal(ProbeSignal),
    /// It is gone (its output ended) while the probe lives.
    Gone,
    /// It could not be started.
    SpawnFailed(String),
}

impl GrandchildEvent {
    /// Parses one line the grandchild wrote, without its LF. `None` for anything else.
    pub fn parse_line(line: &[u8]) -> Option<Self> {
        if line == b"READY" {
            return Some(Self::Ready);
        }
        let name = line.strip_prefix(b"SIGNAL ")?;
        let name = std::str::from_utf8(name).ok()?;
        ProbeSignal::from_name(name).map(Self::Signal)
    }
}
