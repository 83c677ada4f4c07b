//! One client connection: its phase, its decoder and the HELLO gate that turns its bytes
//! into typed requests, and its output budgets.

use phux_proto::decode_error::DecodeError;
use phux_proto::frame::{ByteLimit, CommandFrame, FrameType, Hello, SpawnTerminal, TerminalResize};
use phux_proto::input::InputEvent;
use phux_proto::{ClientId, ErrorCode, Frame, TerminalId};

use super::{ConnId, PeerInfo};
use crate::encoder::CellGeometry;
use crate::framing::FrameDecoder;

/// Where a connection is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Phase {
    /// Only HELLO and PING are accepted.
    AwaitHello,
    /// Handshake done.
    Ready,
    /// DETACHED was queued; nothing more is sent or read.
    Closed,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// While HELLO is awaited: when the handshake times out ([SERVER.LIMIT.2]).
    pub(super) handshake_deadline: Option<crate::time::Instant>,
    /// Whole frames wait in the decoder, past this turn's budget ([SERVER.FAIR.1]).
    pub(super) backlogged: bool,
}

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
    /// SUBSCRIBE_EVENTS, server-scoped (`None`) or for one terminal.
    Subscribe(Option<TerminalId>),
    /// INPUT_KEY / INPUT_PASTE / INPUT_MOUSE / INPUT_FOCUS.
    Input(TerminalId, InputEvent),
    /// A COMMAND whose body did not decode, framing intact: answered with ERROR, the
    /// connection stays up.
    BadCommand {
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
    /// The next request in the bytes received so far, or `None` until more arrive (and
    /// always once the connection is closed).
    pub(super) fn poll_request(&mut self) -> Option<Request> {
        loop {
            if self.phase == Phase::Closed {
                // [ERROR.FATAL.2] A failed connection stays failed: later bytes are ignored.
                return None;
            }
            let request = match self.decoder.poll_frame() {
                Ok(None) => return None,
                Ok(Some(frame)) => self.gate(frame),
                Err(err) => Some(self.gate_error(&err)),
            };
            if request.is_some() {
                return request;
            }
        }
    }

    /// The HELLO gate on a decoded frame. `None`: the connection handled it itself.
    fn gate(&mut self, frame: Frame) -> Option<Request> {
        let request = match (self.phase, frame) {
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
                return None;
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
        };
        Some(request)
    }

    /// The HELLO gate on bytes that did not decode.
    fn gate_error(&self, err: &DecodeError) -> Request {
        let ready = self.phase == Phase::Ready;
        let message = err.to_string();
        let frame = err.frame();
        if ready && !err.is_framing() && frame == Some(FrameType::COMMAND) {
            // [ERROR.COMMAND.1] [ERROR.COMMAND.2] A COMMAND body that does not decode, with
            // framing intact, gets ERROR{request_id, code}; the connection stays up (R7).
            return Request::BadCommand {
                request_id: err.request_id(),
                code: err.code(),
                message,
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

    /// HELLO was admitted with these negotiated limits.
    pub(super) fn admit(&mut self, max_chunk: ByteLimit, max_history_page: ByteLimit) {
        self.max_chunk = max_chunk;
        self.max_history_page = max_history_page;
        self.phase = Phase::Ready;
    }

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
            handshake_deadline: None,
            backlogged: false,
        }
    }
}

/// Placeholder limits until HELLO negotiates real ones (checked at compile time).
pub(super) const SMALLEST_LIMIT: ByteLimit = match ByteLimit::new(ByteLimit::MIN) {
    Some(limit) => limit,
    None => panic!("ByteLimit::MIN is a valid limit"),
};
