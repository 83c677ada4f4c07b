//! The oracles: what a session's replies must be, judged frame by frame as they arrive
//! ([`Runner::on_frame`]), the honest side connection's liveness, and the end of a session
//! (owed replies, the legitimacy of a close). The executor that sends is `run`.

use std::time::{Duration, Instant};

use phux_proto::Frame;
use phux_proto::frame::{DetachReason, Ping};

use super::run::{CLEANUP_REQUEST, Recorded, Runner, Step};

/// Bounds the oracles use.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// An honest connection's PING must be answered within this.
    pub liveness: Duration,
    /// How long replies still owed may take at the end of a session.
    pub grace: Duration,
    /// The most bytes a client that stopped reading may find waiting when it reads again.
    pub queue_bound: usize,
    /// Actions between two liveness checks.
    pub batch: usize,
    /// Clamp the sizes sessions ask for to the spec's bound (1024 x 512, [TERMINAL.RESIZE.3]):
    /// for fuzzing on past a server known not to clamp, which a huge size takes gigabytes.
    pub clamp_sizes: bool,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            liveness: Duration::from_secs(2),
            grace: Duration::from_secs(10),
            queue_bound: 8 * 1024 * 1024,
            batch: 8,
            clamp_sizes: false,
        }
    }
}

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

impl Runner<'_> {
    pub(super) fn on_frame(&mut self, side: bool, frame: Frame) -> Step {
        let c = if side {
            self.side.as_mut().unwrap_or_else(|| unreachable!())
        } else {
            &mut self.main
        };
        match &frame {
            Frame::Pong(p) => c.pongs.push(p.nonce),
            Frame::HelloOk(h) => c.max_chunk = Some(h.max_chunk_bytes.get()),
            Frame::Detached(d) => {
                let reason = d.reason.unwrap_or(DetachReason::REQUESTED);
                c.detached = Some(reason);
                if reason == DetachReason::SERVER_SHUTDOWN {
                    return Err(finding(
                        Kind::UnexpectedClose("SERVER_SHUTDOWN".into()),
                        "DETACHED{SERVER_SHUTDOWN}: the server is stopping",
                    ));
                }
            }
            Frame::BootstrapChunk(b) => {
                if let Some(max) = c.max_chunk
                    && b.payload.len() > max as usize
                {
                    return Err(finding(
                        Kind::OverLimit,
                        format!(
                            "a {} byte chunk over max_chunk_bytes {max}",
                            b.payload.len()
                        ),
                    ));
                }
            }
            _ => {}
        }
        if side {
            return Ok(());
        }
        match frame {
            Frame::CommandResult(r) => self.answered(r.request_id, "COMMAND_RESULT", false),
            Frame::Error(e) => match e.request_id {
                Some(id) => self.answered(id, "ERROR", true),
                None => Ok(()),
            },
            Frame::TerminalSpawned(s) => {
                if let Some(n) = self.shadow.owed_spawns.get_mut(&s.request_id)
                    && *n > 0
                {
                    *n -= 1;
                    self.out.replies += 1;
                } else if s.request_id < CLEANUP_REQUEST {
                    return Err(
                        self.unowed(&format!("TERMINAL_SPAWNED for request {}", s.request_id))
                    );
                }
                if let phux_proto::frame::SpawnResult::Ok(id) = s.result
                    && !self.own.contains(&id)
                {
                    self.own.push(id);
                    self.out.record.push(Recorded::Spawned {
                        request_id: s.request_id,
                        k: self.own.len() - 1,
                    });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn answered(&mut self, id: u32, what: &str, error: bool) -> Step {
        if id >= CLEANUP_REQUEST {
            return Ok(());
        }
        if let Some(n) = self.shadow.owed.get_mut(&id)
            && *n > 0
        {
            *n -= 1;
            self.out.replies += 1;
            return Ok(());
        }
        if self.shadow.bad_commands > 0 {
            self.shadow.bad_commands -= 1;
            if let Some(n) = self.shadow.bad_ids.get_mut(&id) {
                *n = n.saturating_sub(1);
            }
            self.out.replies += 1;
            // An ERROR is what a COMMAND our decoder refuses may draw. A COMMAND_RESULT is
            // the server accepting it, unless a decodable request of the session had the same
            // id: a mutation may have turned one request's id into another's, and then the
            // two replies cannot be told apart (the fuzzer's doing, not the server's).
            if error || self.shadow.commands_sent.contains(&id) {
                return Ok(());
            }
            return Err(finding(
                Kind::AcceptedMalformed,
                format!(
                    "{what} for request {id}, where only the ERROR of a COMMAND that does not \
                     decode was owed"
                ),
            ));
        }
        Err(self.unowed(&format!("{what} for request {id}")))
    }

    /// A reply nothing owed: after a fatal frame, the server acted on what it must ignore.
    fn unowed(&self, what: &str) -> Finding {
        match &self.shadow.fatal {
            Some(why) => finding(
                Kind::ActedAfterFatal {
                    detach: why == "DETACH",
                },
                format!("{what}, sent after {why}"),
            ),
            None => finding(Kind::Unsolicited, format!("{what}, which nothing owed")),
        }
    }

    /// An honest connection must get PONG within the liveness bound.
    pub(super) fn liveness(&mut self) -> Step {
        let Some(side) = &self.side else {
            return Ok(());
        };
        if side.closed {
            return Err(finding(
                Kind::ServerDown,
                "the honest side connection was closed",
            ));
        }
        let key = side.key;
        let nonce = self.next_nonce();
        let _ = self.t.send(key, &Frame::Ping(Ping { nonce }).to_bytes());
        let until = Instant::now() + self.bounds.liveness;
        loop {
            self.pump(true, Duration::from_millis(20))?;
            let side = self.side.as_ref().unwrap_or_else(|| unreachable!());
            if side.pongs.contains(&nonce) {
                return Ok(());
            }
            if side.closed {
                return Err(finding(
                    Kind::ServerDown,
                    "the honest side connection was closed",
                ));
            }
            if self.t.virtual_time() || Instant::now() >= until {
                return Err(finding(
                    Kind::Liveness,
                    format!("an honest PING unanswered after {:?}", self.bounds.liveness),
                ));
            }
        }
    }

    /// End of session: owed replies within the grace, then the close's legitimacy.
    pub(super) fn finish(&mut self) -> Step {
        let until = Instant::now() + self.bounds.grace;
        let mut virtual_seconds = 0;
        while !self.main.closed && self.shadow.fatal.is_none() && !self.shadow.settled() {
            if self.t.virtual_time() {
                // Virtual time: the grace passes in one-second steps, instantly.
                if virtual_seconds >= self.bounds.grace.as_secs() {
                    break;
                }
                virtual_seconds += 1;
                self.t.advance(Duration::from_secs(1));
                self.pump(false, Duration::ZERO)?;
            } else {
                self.pump(false, Duration::from_millis(50))?;
                if Instant::now() >= until {
                    break;
                }
            }
        }
        if self.main.closed {
            self.pump(false, Duration::ZERO)?;
            if self.main.detached.is_none() && !self.paused_ever {
                return Err(finding(
                    Kind::ClosedWithoutDetached,
                    match &self.shadow.fatal {
                        Some(why) => format!("closed after {why} without DETACHED"),
                        None => "closed without DETACHED".to_owned(),
                    },
                ));
            }
            if self.shadow.fatal.is_none() && !self.paused_ever {
                let mut reason = format!(
                    "{:?}",
                    self.main.detached.unwrap_or(DetachReason::REQUESTED)
                );
                let why = if self.shadow.bad_commands > 0 {
                    "after a COMMAND that does not decode"
                } else {
                    "with no rule broken"
                };
                let kind = if self.shadow.bad_commands > 0 {
                    Kind::UnexpectedClose(format!("{reason}-after-bad-command"))
                } else {
                    Kind::UnexpectedClose(reason.clone())
                };
                reason.make_ascii_uppercase();
                return Err(finding(
                    kind,
                    format!("the server detached ({reason}) {why}"),
                ));
            }
            return Ok(());
        }
        if self.shadow.fatal.is_none()
            && let Some((id, _)) = self.shadow.owed.iter().find(|(_, n)| **n > 0)
        {
            let name = self.names.get(id).cloned().unwrap_or_default();
            return Err(finding(
                Kind::MissingReply(name.clone()),
                format!("{name} request {id} never answered"),
            ));
        }
        if self.shadow.fatal.is_none()
            && let Some((id, _)) = self.shadow.owed_spawns.iter().find(|(_, n)| **n > 0)
        {
            return Err(finding(
                Kind::MissingReply("SPAWN_TERMINAL".into()),
                format!("SPAWN_TERMINAL request {id} never answered"),
            ));
        }
        Ok(())
    }
}
