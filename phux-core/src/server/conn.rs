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
pub(super) struct Conn {
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
    /// Bytes handed to the driver and not yet reported sent.
    pub(super) queued: usize,
}

impl Conn {
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
            queued: 0,
        }
    }
}

/// Placeholder limits until HELLO negotiates real ones (checked at compile time).
pub(super) const SMALLEST_LIMIT: ByteLimit = match ByteLimit::new(ByteLimit::MIN) {
    Some(limit) => limit,
    None => panic!("ByteLimit::MIN is a valid limit"),
};
