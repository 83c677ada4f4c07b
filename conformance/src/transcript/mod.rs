//! The transcript format: a header, then one step per line (see `conformance/README.md`).
//!
//! This module only parses text into [`Transcript`]s; frames and patterns stay notation
//! [`Value`] trees here and are expanded, matched and sent by the runner.
//!
//! The types of a parsed transcript are here; `lines` splits the text into logical lines and
//! finds the clause citations in their comments, `step` parses one step, and `file` parses a
//! whole transcript (header, steps, `repeat` blocks), a prelude and a directory of them.

use std::fmt;
use std::time::Duration;

use phux_proto::notation::Value;

mod file;
mod lines;
mod step;

pub use file::{load_dir, load_files, parse, parse_prelude};
pub use lines::{cited_clauses, is_clause_id};
pub use step::{parse_define, parse_duration};

/// The conformance level a clause (or a transcript) has.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Level {
    /// MUST / MUST NOT: a failure is FAIL.
    Must,
    /// SHOULD / SHOULD NOT: a failure is NON_STRICT.
    Should,
    /// MAY: never fails.
    May,
}

impl Level {
    /// Parses `MUST`, `SHOULD` or `MAY`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "MUST" => Some(Self::Must),
            "SHOULD" => Some(Self::Should),
            "MAY" => Some(Self::May),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Must => "MUST",
            Self::Should => "SHOULD",
            Self::May => "MAY",
        })
    }
}

/// One parsed transcript.
#[derive(Clone, Debug)]
pub struct Transcript {
    /// `<area>/<NNN>`.
    pub id: String,
    /// The clauses the header names.
    pub clauses: Vec<String>,
    /// MUST or SHOULD (the strongest clause the transcript checks).
    pub level: Level,
    /// One line for the report.
    pub description: String,
    /// The requirement sentence, quoted from the spec.
    pub requirement: String,
    /// Server features (HELLO_OK names, e.g. `acknowledged_input`) or runner capabilities
    /// (`probe`, `connections=N`) the transcript needs; missing ones make it UNSUPPORTED, as
    /// does an advertised feature named `!feature`.
    pub requires: Vec<String>,
    /// Declared probe terminals (documentation and a check that `spawn` steps name them).
    pub probes: Vec<String>,
    /// Rules of phux-rs the case's setup relies on without checking them (`assumes:`): it
    /// belongs to the phux-rs profile, as a case citing them does.
    pub assumes: Vec<String>,
    /// `profile: phux-rs`: the case checks the part of its clauses that is our choice (the
    /// transcript says why), so it belongs to the phux-rs profile only.
    pub phux_rs_only: bool,
    /// Templates defined in the transcript body.
    pub defines: Vec<(String, Value)>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Where it came from, for messages.
    pub path: String,
}

/// One step, with the source line it came from and the clauses it cites.
#[derive(Clone, Debug)]
pub struct Step {
    /// 1-based line number of the step's first line.
    pub line: usize,
    /// The step's source text (continuation lines joined), for reports.
    pub text: String,
    /// Clause ids cited in the step's trailing comment (`# [INPUT.DEDUPE.2]`).
    pub clauses: Vec<String>,
    /// What it does.
    pub kind: StepKind,
}

/// A connection name as the transcript writes it (`c1`, `c2`, ...).
pub type ConnName = String;

/// What a step does.
#[derive(Clone, Debug)]
pub enum StepKind {
    /// `c1 > FRAME`: send a frame (templates expanded, captures substituted).
    Send {
        /// The connection.
        conn: ConnName,
        /// The frame in the notation.
        frame: Value,
    },
    /// `c1 > raw 00 00 00 01 03`: send bytes as they are.
    SendRaw {
        /// The connection.
        conn: ConnName,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// `c1 < PATTERN`, optionally `until FIELD contains "TEXT" [within 5s]`.
    Expect {
        /// The connection.
        conn: ConnName,
        /// The pattern.
        pattern: Value,
        /// The wait condition, if any.
        until: Option<Until>,
        /// `c1 <! PATTERN`: the very next frame, of any type, must match.
        next: bool,
    },
    /// `c1 < {` … `}`: each pattern matches one of the next frames, in any order.
    Unordered {
        /// The connection.
        conn: ConnName,
        /// The patterns, one per line.
        patterns: Vec<Value>,
    },
    /// `c1 < nothing`: after a PING/PONG round trip, no frame is waiting unconsumed.
    Nothing {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 closed`: the server closes the connection.
    Closed {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 disconnect`: the client closes its end.
    Disconnect {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 connect`: open the connection now (connections otherwise open at first use).
    Connect {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 pause` (the client stops reading `c1`) and `c1 resume` (it reads again).
    Reading {
        /// The connection.
        conn: ConnName,
        /// `true` for `resume`.
        on: bool,
    },
    /// `c1 <* PATTERN`: the frames at the front of `c1`'s queue that match, however many,
    /// up to the first that does not (it stays) or the close.
    ExpectRun {
        /// The connection.
        conn: ConnName,
        /// The pattern.
        pattern: Value,
    },
    /// `c1 bytes since resume <= N`: once nothing more arrives, `c1` has received at most N
    /// bytes since its last `resume`.
    ReadBound {
        /// The connection.
        conn: ConnName,
        /// The most bytes allowed.
        max: u64,
    },
    /// `~ 200ms`: advance time (virtual in process, real over a socket).
    Advance(Duration),
    /// `check $a == $b`, `check $a != $b`, `check $a contains "text"`.
    Check {
        /// The left side (usually a capture).
        left: Value,
        /// The comparison.
        op: CheckOp,
        /// The right side.
        right: Value,
    },
    /// `c1 probe $t > COMMAND ARGS`: write a probe command line to terminal `$t` (a trusted
    /// paste through ROUTE_INPUT, ending in CR).
    ProbeSend {
        /// The connection.
        conn: ConnName,
        /// The terminal (a capture).
        terminal: Value,
        /// The command line, without its terminator.
        line: String,
    },
    /// `c1 probe $t < REPORT [within 5s]`: the terminal's output on `c1` shows a probe report
    /// line `PROBE <seq> REPORT…`.
    ProbeExpect {
        /// The connection.
        conn: ConnName,
        /// The terminal (a capture).
        terminal: Value,
        /// The report text after the sequence number.
        report: String,
        /// How long to wait.
        within: Option<Duration>,
    },
    /// `restart`: the server is replaced by a new incarnation; every connection is closed.
    Restart,
    /// `repeat N [as $i from START] {` … `}`: the body N times, `$i` bound to START,
    /// START+1, … in turn (the runner sends ahead of the expectations, within a window).
    Repeat(Repeat),
    /// `together {` … `}`: the sends in it (`cN >` steps and `repeat` blocks of them) reach
    /// the server before it takes its next turn, where the transport can do that.
    Together(Vec<Step>),
}

/// A `repeat` block (see [`StepKind::Repeat`]).
#[derive(Clone, Debug)]
pub struct Repeat {
    /// How many iterations.
    pub count: u64,
    /// The iteration variable (without `$`) and its first value, an integer whose spelling
    /// (decimal, or hex with its width) the later values keep.
    pub var: Option<(String, Value)>,
    /// The steps: only `cN >` and `cN <` (no `until`).
    pub body: Vec<Step>,
}

/// A `check` comparison.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CheckOp {
    /// Equal after normalisation.
    Eq,
    /// Different after normalisation.
    Ne,
    /// The left string or bytes contain the right string.
    Contains,
    /// The left string or bytes do not contain the right string.
    NotContains,
}

/// `until FIELD contains "TEXT" within 5s`: consume matching frames, concatenating FIELD,
/// until the text appears.
#[derive(Clone, Debug)]
pub struct Until {
    /// The field of the matched frame to accumulate (`bytes`).
    pub field: String,
    /// The text that must appear.
    pub needle: Vec<u8>,
    /// How long to wait (the runner's default when absent).
    pub within: Option<Duration>,
}

/// A template definition: `define Name = VALUE`.
pub type Define = (String, Value);

/// A transcript that does not parse: file, line and why.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ParseError {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}
