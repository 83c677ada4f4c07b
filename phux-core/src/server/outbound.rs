//! The endpoint's output side: frames queued for connections, within their budgets.

use phux_proto::command::CommandResult;
use phux_proto::frame::{DetachReason, Detached, ErrorFrame};
use phux_proto::{ErrorCode, Frame};

use super::connection::{Budget, Connection, Phase};
use super::{ConnId, ServerAction, ServerEngine, SharedFrame};
use crate::framing::FrameDecoder;

impl ServerEngine {
    /// Queues one frame for a connection, coalescing with an adjacent send to it.
    pub(super) fn send(&mut self, id: ConnId, frame: &Frame) {
        let budget = match frame {
            Frame::TerminalOutput(_)
            | Frame::BootstrapBegin(_)
            | Frame::BootstrapChunk(_)
            | Frame::BootstrapReady(_) => Budget::Output,
            _ => Budget::Control,
        };
        self.send_encoded(id, budget, |bytes| frame.encode(bytes));
    }

    /// Queues the frame `encode` appends, counted against `budget`.
    pub(super) fn send_encoded(
        &mut self,
        id: ConnId,
        budget: Budget,
        encode: impl FnOnce(&mut Vec<u8>),
    ) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        let bytes = match self.actions.back_mut() {
            Some(ServerAction::Send { conn: last, bytes }) if *last == id => bytes,
            _ => {
                self.actions.push_back(ServerAction::Send {
                    conn: id,
                    bytes: self.pool.take(),
                });
                let Some(ServerAction::Send { bytes, .. }) = self.actions.back_mut() else {
                    return;
                };
                bytes
            }
        };
        let before = bytes.len();
        let control_ahead = conn.outbound.control;
        encode(bytes);
        let added = bytes.len() - before;
        conn.outbound.push(budget, added);
        self.queued += added;
        // [QUEUE.CONTROL.2] Control frames are never dropped; a client that lets them pile
        // up past the budget is detached instead of growing server memory. A frame is judged
        // by what is queued ahead of it ([QUEUE.BOUND.1]'s "one frame"), so a reply larger
        // than the whole budget (a big screen with its scrollback) reaches a client that reads.
        if budget == Budget::Control && control_ahead > self.config.control_budget {
            self.detach(
                id,
                DetachReason::PROTOCOL_ERROR,
                "outbound control queue overflow: the client is not reading",
            );
        }
        self.shed_over_budget();
    }

    /// [SERVER.LIMIT.5] While the bytes held for all connections (queued for them, and
    /// received from them but not yet framed) pass the server-wide budget, the open connection
    /// holding the most is failed (RESOURCE_EXHAUSTED, then DETACHED): the most expensive
    /// peer goes first, and the others keep their service. Checked at once when the queued
    /// bytes alone pass it; `unframed_grew` asks for the full count, which walks the
    /// connections, after a connection's unframed bytes grew large.
    pub(super) fn shed_over_budget_if(&mut self, unframed_grew: bool) {
        if self.shedding || !(unframed_grew || self.queued > self.config.queued_budget) {
            return;
        }
        self.shedding = true;
        self.shed_heaviest();
        self.shedding = false;
    }

    fn shed_over_budget(&mut self) {
        self.shed_over_budget_if(false);
    }

    fn shed_heaviest(&mut self) {
        let held = |c: &Connection| c.outbound.total() + c.decoder.buffered();
        loop {
            let open = self.conns.values().filter(|c| c.phase != Phase::Closed);
            let held_open: usize = open.clone().map(held).sum();
            // Closed connections' queues are freed by their close bound (their unframed bytes
            // at once); only open ones can still grow.
            if held_open <= self.config.queued_budget {
                return;
            }
            let Some(heaviest) = open.max_by_key(|c| held(c)).map(|c| c.id) else {
                return;
            };
            self.fail(
                heaviest,
                ErrorCode::RESOURCE_EXHAUSTED,
                "the server's memory budget is spent and this client holds the most of it",
            );
        }
    }

    /// Queues a frame whose head other connections share, counted against the output budget.
    pub(super) fn send_shared(&mut self, id: ConnId, frame: SharedFrame) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        conn.outbound.push(Budget::Output, frame.len());
        self.queued += frame.len();
        self.actions
            .push_back(ServerAction::SendShared { conn: id, frame });
        self.shed_over_budget();
    }

    pub(super) fn send_result(&mut self, id: ConnId, request_id: u32, result: CommandResult) {
        self.send(
            id,
            &Frame::CommandResult(phux_proto::frame::CommandResultFrame { request_id, result }),
        );
    }

    pub(super) fn send_error_result(
        &mut self,
        id: ConnId,
        request_id: u32,
        code: ErrorCode,
        message: impl Into<String>,
    ) {
        self.send_result(
            id,
            request_id,
            CommandResult::Error {
                code,
                message: message.into(),
            },
        );
    }

    /// An ERROR frame (connection-level; command failures go in COMMAND_RESULT).
    pub(super) fn send_error(
        &mut self,
        id: ConnId,
        request_id: Option<u32>,
        code: ErrorCode,
        message: &str,
    ) {
        self.send(
            id,
            &Frame::Error(ErrorFrame {
                request_id,
                code,
                message: message.to_owned(),
            }),
        );
    }

    /// Sends DETACHED and closes, without an ERROR.
    pub(super) fn detach(&mut self, id: ConnId, reason: DetachReason, message: &str) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            return;
        }
        self.stop_handshake_timer(id);
        // Send before marking closed, so the frame is queued; then nothing more is.
        let frame = Frame::Detached(Detached {
            reason: Some(reason),
            message: message.to_owned(),
        });
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.phase = Phase::Closed;
            // [ERROR.FATAL.2] Nothing it sent from now on is read: a frame under way is
            // dropped at once, not held until the close ([SERVER.LIMIT.5]).
            conn.decoder = FrameDecoder::new();
            conn.outbound.push(Budget::Control, bytes.len());
            self.queued += bytes.len();
        }
        self.actions
            .push_back(ServerAction::Send { conn: id, bytes });
        self.actions.push_back(ServerAction::Close { conn: id });
    }

    /// [ERROR.FATAL.1] ERROR, then DETACHED{PROTOCOL_ERROR} with the same text, then close.
    pub(super) fn fail(&mut self, id: ConnId, code: ErrorCode, message: &str) {
        self.send_error(id, None, code, message);
        self.detach(id, DetachReason::PROTOCOL_ERROR, message);
    }
}
