//! The oracles: what a session's replies must be, judged frame by frame as they arrive
//! ([`Runner::on_frame`]), the honest side connection's liveness, and the end of a session
//! (owed replies, the legitimacy of a close). The executor that sends is `run`.

use std::time::{Duration, Instant};

use phux_proto::Frame;
use phux_proto::frame::{DetachReason, Ping};

use super::finding::{Finding, Kind, finding};
use super::run::{CLEANUP_REQUEST, Recorded, Runner, Step};

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
