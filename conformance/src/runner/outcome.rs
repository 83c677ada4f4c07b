//! What the runner reports per case: the outcome, the failing step, the wire log.

use std::time::Duration;

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
    /// Outside the run's profile: the case checks rules of phux-rs only (named here).
    Skipped(String),
    /// Failed as the peer's expectations file says it does (the deviation's text here).
    Known(String),
    /// Listed as a known deviation of the peer, but it passed: the list is out of date.
    KnownPassed(String),
    /// Not run: the server stopped completing handshakes before this case (the reason names
    /// the case after which it stopped). It fails the run, but blames no clause.
    NotRun(String),
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
            Self::Skipped(_) => "SKIPPED",
            Self::Known(_) => "KNOWN",
            Self::KnownPassed(_) => "KNOWN_PASSED",
            Self::NotRun(_) => "NOT_RUN",
        }
    }

    /// Whether it makes the run fail.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Self::Fail | Self::Error(_) | Self::KnownPassed(_) | Self::NotRun(_)
        )
    }

    /// The reason it carries, for outcomes that have one.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Unsupported(r)
            | Self::Disabled(r)
            | Self::Error(r)
            | Self::Skipped(r)
            | Self::Known(r)
            | Self::KnownPassed(r)
            | Self::NotRun(r) => Some(r),
            Self::Pass | Self::Fail | Self::NonStrict => None,
        }
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
    /// What those clauses require: `[ID] sentence` each, from the spec (empty for a step
    /// that cites none: a setup step, whose failure is an ERROR).
    pub requirements: Vec<String>,
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
    /// The tail of the server's standard error, when the case did not pass and the transport
    /// started the server (or its bridge).
    pub server_stderr: Option<String>,
    /// Whether the server sent the case anything at all (a byte or a close).
    pub heard_from_server: bool,
}
