//! One client connection's protocol state.

use phux_proto::ClientId;
use phux_proto::frame::ByteLimit;

use super::{ConnId, PeerInfo};
use crate::encoder::CellGeometry;
use crate::framing::FrameDecoder;

/// Where a connection is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// Only HELLO and PING are accepted.
    AwaitHello,
    /// Handshake done.
    Ready,
    /// DETACHED was queued; nothing more is sent or read.
    Closed,
}

#[derive(Debug)]
pub(super) struct Connection {
    pub(super) id: ConnId,
    pub(super) client: ClientId,
    pub(super) peer: PeerInfo,
    pub(super) phase: Phase,
    pub(super) decoder: FrameDecoder,
    /// Negotiated at HELLO: min(client, server).
    pub(super) max_chunk: ByteLimit,
    pub(super) max_history_page: ByteLimit,
    /// The cell size for mouse encoding, from the last VIEWPORT_RESIZE (R16).
    pub(super) cells: CellGeometry,
    /// SUBSCRIBE_EVENTS without a terminal: server-scoped events.
    pub(super) server_events: bool,
    /// Bytes handed to the driver and not yet reported sent, by budget.
    pub(super) outbound: Outbound,
    /// Terminals whose stream to this connection was tombstoned for falling behind and waits
    /// to start over ([QUEUE.OUTPUT.1]). An index, so that a `Sent` report need not look at
    /// every terminal: the viewer's `paused_at` stays the truth, and an entry whose viewer was
    /// since replaced or removed is dropped when next looked at.
    pub(super) paused: Vec<super::LocalTerminal>,
}

/// Which budget a queued frame counts against ([QUEUE.BOUND.1]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Budget {
    /// TERMINAL_OUTPUT and BOOTSTRAP_BEGIN / CHUNK / READY: may be tombstoned.
    Output,
    /// Everything else: never dropped; overflow detaches the client.
    Control,
}

/// Unsent bytes in queue order, so the driver's `Sent{n}` reports (which know nothing of
/// frames) can be charged back to the right budget.
#[derive(Debug, Default)]
pub(super) struct Outbound {
    segments: std::collections::VecDeque<(Budget, usize)>,
    pub(super) output: usize,
    pub(super) control: usize,
}

impl Outbound {
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

impl Connection {
    pub(super) fn new(id: ConnId, client: ClientId, peer: PeerInfo) -> Self {
        let limit = SMALLEST_LIMIT;
        Self {
            id,
            client,
            peer,
            phase: Phase::AwaitHello,
            decoder: FrameDecoder::new(),
            max_chunk: limit,
            max_history_page: limit,
            cells: CellGeometry::default(),
            server_events: false,
            outbound: Outbound::default(),
            paused: Vec::new(),
        }
    }
}

/// Placeholder limits until HELLO negotiates real ones (checked at compile time).
pub(super) const SMALLEST_LIMIT: ByteLimit = match ByteLimit::new(ByteLimit::MIN) {
    Some(limit) => limit,
    None => panic!("ByteLimit::MIN is a valid limit"),
};
