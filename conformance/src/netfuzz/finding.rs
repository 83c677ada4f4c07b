//! What a session found wrong: the kind of misbehaviour (the clause it breaks, its name in
//! file names) and what showed it. The oracles (`oracle`) make them; the executor (`run`)
//! reports the first; minimisation and the transcript writer read them.

/// What kind of misbehaviour a finding is; two findings of one kind are the same bug as far
/// as minimisation is concerned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The server stopped accepting connections or closed an honest one.
    ServerDown,
    /// An honest PING was not answered in time.
    Liveness,
    /// The fuzzing connection's own PING was not answered in time (the server stalls it).
    Stalled,
    /// A reply does not decode under our strict decoder.
    Undecodable,
    /// A reply for a request id with nothing owed.
    Unsolicited,
    /// A COMMAND_RESULT where the only thing owed was the ERROR of a COMMAND our decoder
    /// refuses: the server accepted bytes the spec makes a decode error.
    AcceptedMalformed,
    /// A COMMAND (of this name) or SPAWN_TERMINAL never answered.
    MissingReply(String),
    /// A frame over the limits HELLO_OK negotiated.
    OverLimit,
    /// The server closed without DETACHED.
    ClosedWithoutDetached,
    /// The server ended a connection that broke no rule (the reason given).
    UnexpectedClose(String),
    /// The server answered a frame sent after one the spec makes fatal (DETACH included).
    ActedAfterFatal {
        /// Whether the fatal frame was DETACH.
        detach: bool,
    },
    /// More bytes held for a client that stopped reading than the queue bound.
    QueueBound,
}

impl Kind {
    /// A short name for file names and the progress line.
    pub fn slug(&self) -> String {
        match self {
            Self::ServerDown => "server-down".into(),
            Self::Liveness => "liveness".into(),
            Self::Stalled => "stalled-connection".into(),
            Self::Undecodable => "undecodable-reply".into(),
            Self::Unsolicited => "unsolicited-reply".into(),
            Self::AcceptedMalformed => "accepted-malformed-command".into(),
            Self::MissingReply(c) => format!("missing-reply-{}", c.to_lowercase()),
            Self::OverLimit => "over-limit".into(),
            Self::ClosedWithoutDetached => "closed-without-detached".into(),
            Self::UnexpectedClose(r) => format!("unexpected-close-{}", r.to_lowercase()),
            Self::ActedAfterFatal { detach: true } => "acted-after-detach".into(),
            Self::ActedAfterFatal { detach: false } => "acted-after-fatal-error".into(),
            Self::QueueBound => "queue-bound".into(),
        }
    }

    /// The clause the finding breaks.
    pub fn clause(&self) -> &'static str {
        match self {
            Self::ServerDown | Self::Liveness | Self::Stalled | Self::UnexpectedClose(_) => {
                "PING.ECHO.1"
            }
            Self::Undecodable => "FRAME.HEADER.1",
            Self::Unsolicited | Self::MissingReply(_) => "COMMAND.ENVELOPE.2",
            Self::AcceptedMalformed => "ERROR.COMMAND.1",
            Self::OverLimit => "HELLO.LIMITS.1",
            Self::ClosedWithoutDetached => "ERROR.FATAL.1",
            Self::ActedAfterFatal { detach: true } => "DETACH.REQUEST.2",
            Self::ActedAfterFatal { detach: false } => "ERROR.FATAL.2",
            Self::QueueBound => "QUEUE.BOUND.1",
        }
    }
}

/// One misbehaviour, and what showed it.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its kind.
    pub kind: Kind,
    /// What was seen.
    pub detail: String,
}

pub(super) fn finding(kind: Kind, detail: impl Into<String>) -> Finding {
    Finding {
        kind,
        detail: detail.into(),
    }
}
