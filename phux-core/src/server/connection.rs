//! One client connection: its phase, its decoder and the HELLO gate that turns its bytes
//! into typed requests, its handshake deadline, its outbound queue (counted against the
//! budgets [`Outbound`] keeps), its detach/fail state and the API that queues frames to it.
//! The engine looks a connection up once per event and calls these methods; every field is
//! private.

use std::collections::VecDeque;

use phux_proto::decode_error::DecodeError;
use phux_proto::frame::{
    ByteLimit, CommandFrame, DetachReason, Detached, FrameType, Hello, SpawnTerminal,
    TerminalResize,
};
use phux_proto::input::InputEvent;
use phux_proto::{ClientId, ErrorCode, Frame, TerminalId};

use super::outbound::{Budget, Outbound};
use super::pool::BufferPool;
use super::{ConnId, LocalTerminal, PeerInfo, ServerAction, SharedFrame};
use crate::encoder::CellGeometry;
use crate::framing::FrameDecoder;
use crate::time::Instant;

/// Where a connection is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
enum Phase {
    /// Only HELLO and PING are accepted.
    AwaitHello,
    /// Handshake done.
    Ready,
    /// DETACHED was queued; nothing more is sent or read.
    Closed,
}

/// One client connection. Its fields (and their order: an upgrade's image holds them) are
/// private; see the module docs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Connection {
    id: ConnId,
    client: ClientId,
    peer: PeerInfo,
    phase: Phase,
    decoder: FrameDecoder,
    /// Negotiated at HELLO: min(client, server).
    max_chunk: ByteLimit,
    max_history_page: ByteLimit,
    /// The cell size for mouse encoding, from the last VIEWPORT_RESIZE (R16).
    cells: CellGeometry,
    /// The size of the client's own screen, from its last VIEWPORT_RESIZE ([SERVER.SIZE.1]).
    /// Outside the fields above, whose layout state versions 1 to 3 pinned: an upgrade image
    /// carries it beside the connections ([SERVER.UPGRADE.STATE.6]).
    #[serde(skip)]
    viewport: Option<(u16, u16)>,
    /// SUBSCRIBE_EVENTS without a terminal: server-scoped events.
    server_events: bool,
    /// Bytes handed to the driver and not yet reported sent, by budget.
    outbound: Outbound,
    /// Terminals whose stream to this connection was tombstoned for falling behind and waits
    /// to start over ([QUEUE.OUTPUT.1]). An index, so that a `Sent` report need not look at
    /// every terminal: the viewer's `paused_at` stays the truth, and an entry whose viewer was
    /// since replaced or removed is dropped when next looked at.
    paused: Vec<LocalTerminal>,
    /// While HELLO is awaited: when the handshake times out ([SERVER.LIMIT.2]).
    handshake_deadline: Option<Instant>,
    /// Whole frames wait in the decoder, past this turn's budget ([SERVER.FAIR.1]).
    backlogged: bool,
}

/// What became of a frame queued to a connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Queued {
    /// The connection is closed: nothing was queued.
    Closed,
    /// Queued, this many bytes.
    Bytes(usize),
    /// Queued, this many bytes, but the control frames queued ahead of it were already past
    /// the control budget ([QUEUE.CONTROL.2]): the connection must be detached.
    ControlOverflow(usize),
}

impl Queued {
    /// The bytes queued.
    pub(super) fn len(self) -> usize {
        match self {
            Self::Closed => 0,
            Self::Bytes(n) | Self::ControlOverflow(n) => n,
        }
    }
}

/// How a connection's turn at its received bytes ended ([`Connection::end_turn`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct TurnEnd {
    /// A frame under way grew past [`UNFRAMED_WATCH`]: the server-wide budget is to be
    /// counted in full ([SERVER.LIMIT.5]).
    pub(super) unframed_grew: bool,
    /// More unframed bytes than [`MAX_PRE_HELLO_BYTES`] before HELLO ([SERVER.LIMIT.1]): the
    /// buffer was dropped and the connection is to be failed.
    pub(super) too_many_before_hello: bool,
}

/// phux 0.8's INPUT_TERMINAL_REPLY (input.md §6): allocated but outside the subset we speak,
/// and the one unimplemented type after which phux says the connection goes on.
const INPUT_TERMINAL_REPLY: FrameType = FrameType(0x17);

/// The most unframed bytes a connection may have buffered before HELLO is admitted
/// ([SERVER.LIMIT.1]). A HELLO is well under 1 KiB and nothing but HELLO and PING may come
/// first, so a peer past this bound is not doing a handshake: it is making the server hold
/// memory (up to a 16 MiB frame per connection) for someone who never said who it is.
pub(super) const MAX_PRE_HELLO_BYTES: usize = 64 * 1024;

/// Unframed bytes of one connection from which the server-wide budget is checked after a
/// read ([SERVER.LIMIT.5]): one read's worth. Only a frame under way of more than that makes
/// the count that walks every connection, and the bytes under it (a read each, up to the
/// connection cap) are what the reads themselves hold.
pub(super) const UNFRAMED_WATCH: usize = 64 * 1024;

/// What a connection's next frame asks of the server, once the HELLO gate admitted it.
#[derive(Debug)]
pub(super) enum Request {
    /// PING, answered in any phase.
    Ping(u64),
    /// The handshake, in the phase that awaits it.
    Hello(Hello),
    /// DETACH.
    Detach,
    /// A COMMAND that decoded.
    Command(CommandFrame),
    /// SPAWN_TERMINAL.
    Spawn(SpawnTerminal),
    /// TERMINAL_RESIZE.
    Resize(TerminalResize),
    /// VIEWPORT_RESIZE, already recorded on the connection: the terminals it views may take
    /// another size ([SERVER.SIZE.1]).
    Viewport,
    /// SUBSCRIBE_EVENTS, server-scoped (`None`) or for one terminal.
    Subscribe(Option<TerminalId>),
    /// INPUT_KEY / INPUT_PASTE / INPUT_MOUSE / INPUT_FOCUS.
    Input(TerminalId, InputEvent),
    /// A frame answered with ERROR while the connection stays up: a COMMAND whose body did
    /// not decode (framing intact), or an INPUT_TERMINAL_REPLY, which we do not advertise.
    Refused {
        /// The request id, when it could be read.
        request_id: Option<u32>,
        /// Why, as a wire code.
        code: ErrorCode,
        /// Why, for people.
        message: String,
    },
    /// A violation that ends the connection: ERROR, DETACHED, close.
    Fatal {
        /// Why, as a wire code.
        code: ErrorCode,
        /// Why, for people.
        message: String,
    },
}

/// What a request costs a connection's turn ([SERVER.FAIR.1]), in the units of
/// [`ServerConfig::frames_per_receive`](super::ServerConfig::frames_per_receive): most are
/// one; those that may take a millisecond or more (a fork and exec, a screen's reflow, a
/// bootstrap or a screen document built) count as [`COSTLY`].
pub(super) const COSTLY: usize = 8;

/// The reply bytes that cost a connection's turn one more unit ([SERVER.FAIR.1]): a request
/// whose replies take megabytes (a GET_SCREEN of a 1024x512 screen of combining marks, 9 MB,
/// about 30 ms to build) uses up the turn by itself.
pub(super) const REPLY_BYTES_PER_UNIT: usize = 64 * 1024;

impl Request {
    pub(super) fn cost(&self) -> usize {
        use phux_proto::command::Command;
        match self {
            Self::Spawn(_) | Self::Resize(_) => COSTLY,
            Self::Command(frame) => match frame.command {
                Command::AttachTerminal { .. }
                | Command::GetScreen { .. }
                | Command::GetTerminalState { .. }
                | Command::KillTerminals { .. } => COSTLY,
                _ => 1,
            },
            _ => 1,
        }
    }
}

impl Request {
    fn fatal(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Fatal {
            code,
            message: message.into(),
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
            viewport: None,
            server_events: false,
            outbound: Outbound::default(),
            paused: Vec::new(),
            handshake_deadline: None,
            backlogged: false,
        }
    }

    // ---- getters ------------------------------------------------------------------------

    pub(super) fn id(&self) -> ConnId {
        self.id
    }

    /// What the driver said of the peer when it connected.
    pub(super) fn peer(&self) -> PeerInfo {
        self.peer
    }

    pub(super) fn client(&self) -> ClientId {
        self.client
    }

    /// Whether the peer is on the server's local socket (SHUTDOWN and UPGRADE come only
    /// from there).
    pub(super) fn is_local(&self) -> bool {
        self.peer.local_socket
    }

    /// The cell size for mouse encoding.
    pub(super) fn cells(&self) -> CellGeometry {
        self.cells
    }

    /// The size of the client's screen, as its last VIEWPORT_RESIZE said (`None` before one):
    /// what it counts for in the size of the terminals it is attached to ([SERVER.SIZE.1]).
    pub(super) fn viewport(&self) -> Option<(u16, u16)> {
        self.viewport
    }

    /// A viewport carried across an upgrade ([SERVER.UPGRADE.STATE.6]).
    pub(super) fn restore_viewport(&mut self, cols: u16, rows: u16) {
        self.viewport = Some((cols, rows));
    }

    /// The negotiated bootstrap chunk limit.
    pub(super) fn max_chunk(&self) -> ByteLimit {
        self.max_chunk
    }

    /// The negotiated history page.
    pub(super) fn max_history_page(&self) -> ByteLimit {
        self.max_history_page
    }

    /// HELLO is still awaited.
    pub(super) fn awaits_hello(&self) -> bool {
        self.phase == Phase::AwaitHello
    }

    /// DETACHED was queued: nothing more is sent or read.
    pub(super) fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Admitted by HELLO and subscribed to server-scoped events.
    pub(super) fn hears_server_events(&self) -> bool {
        self.server_events && self.phase == Phase::Ready
    }

    /// What is queued for it and not yet sent, by budget.
    pub(super) fn outbound(&self) -> &Outbound {
        &self.outbound
    }

    /// Bytes it sent that are buffered and not yet framed.
    pub(super) fn buffered(&self) -> usize {
        self.decoder.buffered()
    }

    /// What it holds of the server's memory: queued for it, and received and not yet framed
    /// ([SERVER.LIMIT.5]).
    pub(super) fn held(&self) -> usize {
        self.outbound.total() + self.decoder.buffered()
    }

    /// Whole frames wait past this turn's budget, on an open connection.
    pub(super) fn is_backlogged(&self) -> bool {
        // A connection closed since (failed, detached, shed) has nothing left to handle.
        self.backlogged && self.phase != Phase::Closed
    }

    // ---- the handshake ------------------------------------------------------------------

    /// HELLO is due by `at` ([SERVER.LIMIT.2]).
    pub(super) fn set_handshake_deadline(&mut self, at: Instant) {
        self.handshake_deadline = Some(at);
    }

    /// The handshake deadline, stopped (admitted, closed or gone).
    pub(super) fn take_handshake_deadline(&mut self) -> Option<Instant> {
        self.handshake_deadline.take()
    }

    /// SUBSCRIBE_EVENTS without a terminal.
    pub(super) fn subscribe_server_events(&mut self) {
        self.server_events = true;
    }

    // ---- receiving ----------------------------------------------------------------------

    /// Takes bytes the peer sent, for [`Self::poll_request`]. `false` (and nothing kept) once
    /// the connection is closed.
    pub(super) fn receive(&mut self, bytes: &[u8]) -> bool {
        if self.phase == Phase::Closed {
            // [ERROR.FATAL.2] A failed connection stays failed: later bytes are ignored.
            return false;
        }
        self.decoder.push(bytes);
        self.backlogged = false;
        true
    }

    /// The next request in the bytes received so far, or `None` until more arrive (and
    /// always once the connection is closed).
    pub(super) fn poll_request(&mut self) -> Option<Request> {
        if self.phase == Phase::Closed {
            // [ERROR.FATAL.2] A failed connection stays failed: later bytes are ignored.
            return None;
        }
        match self.decoder.poll_frame() {
            Ok(None) => None,
            Ok(Some(frame)) => Some(self.gate(frame)),
            Err(err) => Some(self.gate_error(&err)),
        }
    }

    /// The HELLO gate on a decoded frame.
    fn gate(&mut self, frame: Frame) -> Request {
        match (self.phase, frame) {
            // [PING.ECHO.1] PING is answered at any time, before HELLO too.
            (_, Frame::Ping(ping)) => Request::Ping(ping.nonce),
            (Phase::AwaitHello, Frame::Hello(hello)) => Request::Hello(hello),
            // [HELLO.ORDER.2] Nothing but HELLO and PING before HELLO.
            (Phase::AwaitHello, _) => Request::fatal(
                ErrorCode::VERSION_INCOMPATIBLE,
                "HELLO required before any stateful frame",
            ),
            // [HELLO.ORDER.3] A second HELLO is a protocol error.
            (_, Frame::Hello(_)) => Request::fatal(
                ErrorCode::INVALID_COMMAND,
                "HELLO already completed on this connection",
            ),
            (_, Frame::Detach) => Request::Detach,
            (_, Frame::Command(command)) => Request::Command(command),
            (_, Frame::SpawnTerminal(spawn)) => Request::Spawn(spawn),
            (_, Frame::TerminalResize(resize)) => Request::Resize(resize),
            (_, Frame::SubscribeEvents(sub)) => Request::Subscribe(sub.terminal),
            (_, Frame::ViewportResize(resize)) => {
                let v = resize.viewport;
                // [INPUT.ATOM.1] The cell size for mouse encoding comes from the last viewport
                // that carried both pixel sizes; one without them leaves it as it was.
                if let (Some(_), Some(_)) = (v.pixel_w, v.pixel_h) {
                    self.cells = CellGeometry::from_viewport(v.cols, v.rows, v.pixel_w, v.pixel_h);
                }
                self.viewport = Some((v.cols.max(1), v.rows.max(1)));
                Request::Viewport
            }
            (_, Frame::InputKey(f)) => Request::Input(f.terminal, InputEvent::Key(f.event)),
            (_, Frame::InputPaste(f)) => Request::Input(f.terminal, InputEvent::Paste(f.event)),
            (_, Frame::InputMouse(f)) => Request::Input(f.terminal, InputEvent::Mouse(f.event)),
            (_, Frame::InputFocus(f)) => Request::Input(f.terminal, InputEvent::Focus(f.event)),
            // [FRAME.TYPE.2] A server-direction frame from a client is a protocol error.
            (_, server_frame) => Request::fatal(
                ErrorCode::INVALID_COMMAND,
                format!(
                    "{:?} is a server-to-client frame",
                    server_frame.frame_type()
                ),
            ),
        }
    }

    /// The HELLO gate on bytes that did not decode.
    fn gate_error(&self, err: &DecodeError) -> Request {
        let ready = self.phase == Phase::Ready;
        let message = err.to_string();
        let frame = err.frame();
        if ready && !err.is_framing() && frame == Some(FrameType::COMMAND) {
            // [ERROR.COMMAND.1] [ERROR.COMMAND.2] A COMMAND body that does not decode, with
            // framing intact, gets ERROR{request_id, code}; the connection stays up (R7).
            return Request::Refused {
                request_id: err.request_id(),
                code: err.code(),
                message,
            };
        }
        if ready && !err.is_framing() && frame == Some(INPUT_TERMINAL_REPLY) {
            // [FRAME.TYPE.5] phux input.md §6: a server that did not advertise TERMINAL_REPLY
            // discards the frame, answers an uncorrelated UNKNOWN_MESSAGE_TYPE and goes on.
            return Request::Refused {
                request_id: None,
                code: ErrorCode::UNKNOWN_MESSAGE_TYPE,
                message: "INPUT_TERMINAL_REPLY is not offered (no TERMINAL_REPLY feature); \
                          discarded, nothing written"
                    .to_owned(),
            };
        }
        let known_before_hello = matches!(frame, Some(FrameType::HELLO | FrameType::PING));
        if !ready
            && !err.is_framing()
            && !known_before_hello
            && err.code() != ErrorCode::UNKNOWN_MESSAGE_TYPE
        {
            // [HELLO.ORDER.2] Anything but HELLO and PING before HELLO.
            return Request::fatal(
                ErrorCode::VERSION_INCOMPATIBLE,
                "HELLO required before any stateful frame",
            );
        }
        // [FRAME.VIOLATION.1] [FRAME.TYPE.3] [FRAME.DECODE.1] [HELLO.DECODE.1] Framing errors,
        // unknown frame types, a bad HELLO and other malformed frames are fatal.
        Request::fatal(err.code(), message)
    }

    /// The turn's requests were taken: whether whole frames still wait ([SERVER.FAIR.1]),
    /// and what the bytes left unframed mean for the budgets.
    pub(super) fn end_turn(&mut self) -> TurnEnd {
        self.backlogged = self.phase != Phase::Closed && self.decoder.has_frame();
        // [SERVER.LIMIT.5] A frame under way of megabytes counts against the server-wide
        // budget: many connections each within the frame limit could hold gigabytes.
        let unframed_grew = self.decoder.buffered() >= UNFRAMED_WATCH;
        // Checked after the frames were taken, so that a HELLO followed by pipelined requests
        // in one read is admitted first and its followers are not counted; whole frames
        // waiting their turn are not unframed bytes (and the driver reads no more meanwhile).
        let too_many_before_hello = self.phase == Phase::AwaitHello
            && !self.backlogged
            && self.decoder.buffered() > MAX_PRE_HELLO_BYTES;
        if too_many_before_hello {
            // [SERVER.LIMIT.1] Unframed bytes before HELLO are bounded; the buffer is dropped
            // at once (the connection is then failed, so nothing is pushed again;
            // [ERROR.FATAL.2]).
            self.decoder = FrameDecoder::new();
        }
        TurnEnd {
            unframed_grew,
            too_many_before_hello,
        }
    }

    /// HELLO was admitted with these negotiated limits.
    pub(super) fn admit(&mut self, max_chunk: ByteLimit, max_history_page: ByteLimit) {
        self.max_chunk = max_chunk;
        self.max_history_page = max_history_page;
        self.phase = Phase::Ready;
    }

    // ---- sending ------------------------------------------------------------------------

    /// Queues the frame `encode` appends, counted against `budget`, coalesced with the `Send`
    /// to this connection at the back of `actions` if there is one (else in a buffer from
    /// `pool`).
    pub(super) fn send_encoded(
        &mut self,
        actions: &mut VecDeque<ServerAction>,
        pool: &mut BufferPool,
        budget: Budget,
        control_budget: usize,
        encode: impl FnOnce(&mut Vec<u8>),
    ) -> Queued {
        if self.phase == Phase::Closed {
            return Queued::Closed;
        }
        let id = self.id;
        let bytes = match actions.back_mut() {
            Some(ServerAction::Send { conn: last, bytes }) if *last == id => bytes,
            _ => {
                actions.push_back(ServerAction::Send {
                    conn: id,
                    bytes: pool.take(),
                });
                let Some(ServerAction::Send { bytes, .. }) = actions.back_mut() else {
                    return Queued::Closed;
                };
                bytes
            }
        };
        let before = bytes.len();
        let overflow = self.outbound.control_overflows(budget, control_budget);
        encode(bytes);
        let added = bytes.len() - before;
        self.outbound.push(budget, added);
        if overflow {
            Queued::ControlOverflow(added)
        } else {
            Queued::Bytes(added)
        }
    }

    /// Queues a frame whose head other connections share, counted against the output budget.
    pub(super) fn send_shared(
        &mut self,
        actions: &mut VecDeque<ServerAction>,
        frame: SharedFrame,
    ) -> Queued {
        if self.phase == Phase::Closed {
            return Queued::Closed;
        }
        let len = frame.len();
        self.outbound.push(Budget::Output, len);
        actions.push_back(ServerAction::SendShared {
            conn: self.id,
            frame,
        });
        Queued::Bytes(len)
    }

    /// Queues DETACHED and the close, and closes: nothing more is sent or read. The bytes
    /// queued, `None` when it was closed already.
    pub(super) fn detach(
        &mut self,
        actions: &mut VecDeque<ServerAction>,
        reason: DetachReason,
        message: &str,
    ) -> Option<usize> {
        if self.phase == Phase::Closed {
            return None;
        }
        let frame = Frame::Detached(Detached {
            reason: Some(reason),
            message: message.to_owned(),
        });
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        self.phase = Phase::Closed;
        // [ERROR.FATAL.2] Nothing it sent from now on is read: a frame under way is
        // dropped at once, not held until the close ([SERVER.LIMIT.5]).
        self.decoder = FrameDecoder::new();
        let len = bytes.len();
        self.outbound.push(Budget::Control, len);
        actions.push_back(ServerAction::Send {
            conn: self.id,
            bytes,
        });
        actions.push_back(ServerAction::Close { conn: self.id });
        Some(len)
    }

    /// The driver wrote `bytes` of what is queued; the bytes that left the queue.
    pub(super) fn sent(&mut self, bytes: usize) -> usize {
        let before = self.outbound.total();
        self.outbound.sent(bytes);
        before - self.outbound.total()
    }

    // ---- paused streams -----------------------------------------------------------------

    /// The stream of terminal `t` to it is paused until its queue drains ([QUEUE.OUTPUT.1]).
    pub(super) fn pause(&mut self, t: LocalTerminal) {
        if !self.paused.contains(&t) {
            self.paused.push(t);
        }
    }

    /// The paused streams to start over, once its queue has drained far enough
    /// ([BOOTSTRAP.TOMBSTONE.4]); none otherwise.
    pub(super) fn take_resumable(&mut self, output_budget: usize) -> Vec<LocalTerminal> {
        if self.phase == Phase::Ready
            && !self.paused.is_empty()
            && self.outbound.may_resume(output_budget)
        {
            std::mem::take(&mut self.paused)
        } else {
            Vec::new()
        }
    }
}

/// Placeholder limits until HELLO negotiates real ones (checked at compile time).
pub(super) const SMALLEST_LIMIT: ByteLimit = match ByteLimit::new(ByteLimit::MIN) {
    Some(limit) => limit,
    None => panic!("ByteLimit::MIN is a valid limit"),
};
