//! The outbound side, in one place: what each connection has queued and not yet sent,
//! counted against its two budgets ([QUEUE.BOUND.1]: [`Outbound`] decides when output is
//! tombstoned, when a bootstrap waits, when a paused stream starts over and when a control
//! overflow detaches), the server-wide budget over every connection ([SERVER.LIMIT.5], the
//! heaviest is shed), and the engine's sends by connection id. The numbers are the
//! [`ServerConfig`](super::ServerConfig)'s; a [`Connection`] queues its own frames.

use std::collections::VecDeque;

use phux_proto::command::CommandResult;
use phux_proto::frame::DetachReason;
use phux_proto::{ErrorCode, Frame};

use super::connection::{Connection, Queued};
use super::{ConnId, ServerEngine, SharedFrame};

/// Which budget a queued frame counts against ([QUEUE.BOUND.1]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Budget {
    /// TERMINAL_OUTPUT and BOOTSTRAP_BEGIN / CHUNK / READY: may be tombstoned.
    Output,
    /// Everything else: never dropped; overflow detaches the client.
    Control,
}

/// Unsent bytes in queue order, so the driver's `Sent{n}` reports (which know nothing of
/// frames) can be charged back to the right budget.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Outbound {
    segments: VecDeque<(Budget, usize)>,
    output: usize,
    control: usize,
}

impl Budget {
    /// The budget `frame` counts against.
    pub(super) fn of(frame: &Frame) -> Self {
        match frame {
            Frame::TerminalOutput(_)
            | Frame::BootstrapBegin(_)
            | Frame::BootstrapChunk(_)
            | Frame::BootstrapReady(_) => Self::Output,
            _ => Self::Control,
        }
    }
}

impl Outbound {
    /// [QUEUE.CONTROL.2] Control frames are never dropped; a client that lets them pile up
    /// past the budget is detached instead of growing server memory. A frame is judged by what
    /// is queued ahead of it ([QUEUE.BOUND.1]'s "one frame"), so a reply larger than the whole
    /// budget (a big screen with its scrollback) reaches a client that reads. Asked before the
    /// frame is queued.
    pub(super) fn control_overflows(&self, budget: Budget, control_budget: usize) -> bool {
        budget == Budget::Control && self.control > control_budget
    }

    /// [QUEUE.OUTPUT.1] Whether live output of `frame_len` bytes fits the output budget; a
    /// reader it does not fit has fallen too far behind, and its stream is tombstoned.
    pub(super) fn output_fits(&self, frame_len: usize, output_budget: usize) -> bool {
        self.output + frame_len <= output_budget
    }

    /// [QUEUE.BOOTSTRAP.1] Whether a bootstrap waits without being built: the queue is past
    /// the mark a paused stream resumes at, so a client that re-ATTACHes without reading costs
    /// neither memory nor a synthesis per request.
    pub(super) fn bootstrap_waits(&self, output_budget: usize) -> bool {
        self.output > output_budget / 2
    }

    /// [QUEUE.BOOTSTRAP.1] Whether a bootstrap of `len` bytes, once built, fits: one larger
    /// than the whole budget still reaches a connection with nothing queued ahead of it
    /// ([QUEUE.BOUND.1]'s one frame).
    pub(super) fn bootstrap_fits(&self, len: usize, output_budget: usize) -> bool {
        self.output == 0 || self.output + len <= output_budget
    }

    /// [BOOTSTRAP.TOMBSTONE.4] Whether a tombstoned stream may start over: the queue has
    /// drained to half the output budget.
    pub(super) fn may_resume(&self, output_budget: usize) -> bool {
        self.output <= output_budget / 2
    }

    pub(super) fn push(&mut self, budget: Budget, len: usize) {
        match self.segments.back_mut() {
            Some((b, n)) if *b == budget => *n += len,
            _ => self.segments.push_back((budget, len)),
        }
        *self.counter(budget) += len;
    }

    pub(super) fn sent(&mut self, mut bytes: usize) {
        while bytes > 0 {
            let Some((budget, len)) = self.segments.front_mut() else {
                return;
            };
            let take = bytes.min(*len);
            *len -= take;
            bytes -= take;
            let budget = *budget;
            if *len == 0 {
                self.segments.pop_front();
            }
            let counter = self.counter(budget);
            *counter = counter.saturating_sub(take);
        }
    }

    pub(super) fn total(&self) -> usize {
        self.output + self.control
    }

    fn counter(&mut self, budget: Budget) -> &mut usize {
        match budget {
            Budget::Output => &mut self.output,
            Budget::Control => &mut self.control,
        }
    }
}

impl ServerEngine {
    /// Queues one frame for a connection, coalescing with an adjacent send to it.
    pub(super) fn send(&mut self, id: ConnId, frame: &Frame) {
        self.send_encoded(id, Budget::of(frame), |bytes| frame.encode(bytes));
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
        let queued = conn.send_encoded(
            &mut self.actions,
            &mut self.pool,
            budget,
            self.config.control_budget,
            encode,
        );
        self.queued += queued.len();
        match queued {
            Queued::Closed => return,
            Queued::Bytes(_) => {}
            // [QUEUE.CONTROL.2] A client that lets control frames pile up is detached.
            Queued::ControlOverflow(_) => self.detach(
                id,
                DetachReason::PROTOCOL_ERROR,
                "outbound control queue overflow: the client is not reading",
            ),
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
        loop {
            let open = self.conns.values().filter(|c| !c.is_closed());
            let held_open: usize = open.clone().map(Connection::held).sum();
            // Closed connections' queues are freed by their close bound (their unframed bytes
            // at once); only open ones can still grow.
            if held_open <= self.config.queued_budget {
                return;
            }
            let Some(heaviest) = open.max_by_key(|c| c.held()).map(Connection::id) else {
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
        let queued = conn.send_shared(&mut self.actions, frame);
        if queued == Queued::Closed {
            return;
        }
        self.queued += queued.len();
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
            &Frame::Error(phux_proto::frame::ErrorFrame {
                request_id,
                code,
                message: message.to_owned(),
            }),
        );
    }

    /// Sends DETACHED and closes, without an ERROR.
    pub(super) fn detach(&mut self, id: ConnId, reason: DetachReason, message: &str) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.is_closed() {
            return;
        }
        if let Some(at) = conn.take_handshake_deadline() {
            self.handshakes.remove(&(at, id));
        }
        if let Some(len) = conn.detach(&mut self.actions, reason, message) {
            self.queued += len;
        }
    }

    /// [ERROR.FATAL.1] ERROR, then DETACHED{PROTOCOL_ERROR} with the same text, then close.
    pub(super) fn fail(&mut self, id: ConnId, code: ErrorCode, message: &str) {
        self.send_error(id, None, code, message);
        self.detach(id, DetachReason::PROTOCOL_ERROR, message);
    }
}
