//! The client side of the protocol, sans-IO: the [`ClientEngine`], its durable
//! [`Outbox`] of acknowledged input, and the [`retry`] policy.
//!
//! # Driving a `ClientEngine`
//!
//! As the server engine is driven (the crate's drive contract): report each event with
//! [`ClientEngine::handle`] and issue commands ([`ClientEngine::command`],
//! [`ClientEngine::apply_input`], ...), then drain [`ClientEngine::poll_action`] until `None`,
//! then read [`ClientEngine::poll_timeout`]. A [`ClientAction::Journal`] record is made durable
//! before any later [`ClientAction::Transmit`] is written: the engine yields every waiting
//! record before any notice or byte, so an operation's record always reaches the journal
//! before its bytes reach the socket.
//!
//! With a journal, `now` must come from a clock whose epoch survives a restart (microseconds
//! since the Unix epoch): a restored operation's age decides whether resending it is safe.
//!
//! Input is submitted only on a connection whose handshake completed: each operation is
//! addressed to that server incarnation and its terminal, and is sent nowhere else. After a
//! restart of the server, what was never sent is reported
//! [`outbox::Resolution::NotSent`]; an operation is also never sent once
//! [`retry::OPERATION_HORIZON`] has passed since its submission. A [`outbox::Scope`] limits
//! which restored operations a run touches.

mod action;
mod batch;
mod event;
pub mod journal;
pub mod outbox;
pub mod retry;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, HelloOk, ProtocolVersion, ServerFeatures,
};
use phux_proto::input::{InputEvent, PasteTrust};
use phux_proto::{
    Command, CommandResult, DecodeError, DecodeErrorKind, ErrorCode, Frame, FrameType, OperationId,
    TerminalId,
};

use crate::framing::FrameDecoder;
use crate::lane::COMPLETION_BOUND;
use crate::time::Instant;
use journal::{Incarnation, JournalError, JournalRecord};
use outbox::{Input, Outbox, OutboxConfig, OutboxError, Resolution, Scope};

pub use action::{ClientAction, ClientNotice, RedialReason};
pub use event::ClientEvent;

/// How long past the server's 5 s completion bound an operation may go unanswered before
/// the connection is presumed half-open: the server answers every APPLY_INPUT within the
/// bound (205 at worst), so 4 s more is transit and scheduling slack.
pub const HALF_OPEN_MARGIN: Duration = Duration::from_secs(4);

/// The default half-open deadline, measured from an operation's send: 9 s.
pub const DEFAULT_HALF_OPEN_AFTER: Duration = COMPLETION_BOUND.saturating_add(HALF_OPEN_MARGIN);

/// The client's name in HELLO by default.
pub const DEFAULT_CLIENT_NAME: &str = concat!("phux-rs/", env!("CARGO_PKG_VERSION"));

/// ClientEngine settings.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClientConfig {
    /// HELLO field 1.
    pub client_name: String,
    /// HELLO field 5 (the default offers SynthesizedVtRaw with 256 KiB / 1 MiB limits).
    pub capabilities: ClientCapabilities,
    /// How long a sent operation may go unanswered before the engine asks for a redial.
    pub half_open_after: Duration,
    /// Outbox settings (ceiling, journaling).
    pub outbox: OutboxConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            client_name: DEFAULT_CLIENT_NAME.to_owned(),
            capabilities: ClientCapabilities::default(),
            half_open_after: DEFAULT_HALF_OPEN_AFTER,
            outbox: OutboxConfig::default(),
        }
    }
}

/// A server that broke a rule.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerMisbehaved {
    /// Its bytes do not decode.
    #[error("undecodable server bytes: {0}")]
    Undecodable(DecodeError),
    /// HELLO_OK names a protocol version we cannot speak.
    #[error("server speaks protocol {major}.{minor}")]
    VersionIncompatible {
        /// Its major version.
        major: u16,
        /// Its minor version.
        minor: u16,
    },
    /// A second HELLO_OK on one connection.
    #[error("HELLO_OK twice")]
    HelloOkTwice,
    /// A frame only a client sends.
    #[error("client-direction frame {0} from the server")]
    ClientFrame(FrameType),
}

/// A driver bug: a call the engine's state does not allow. Nothing changed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// The handshake has not completed (or there is no connection).
    #[error("not connected (no HELLO_OK yet)")]
    NotReady,
    /// APPLY_INPUT goes through `apply_input` / `paste`, so the outbox orders and retries it.
    #[error("send APPLY_INPUT with apply_input or paste")]
    UseApplyInput,
    /// COMMAND frames go through `command`, which correlates the answer.
    #[error("send commands with command()")]
    UseCommand,
    /// HELLO is the engine's own.
    #[error("the engine sends HELLO itself")]
    Hello,
    /// A frame a client does not send.
    #[error("{0} is a server-direction frame")]
    ServerFrame(FrameType),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Conn {
    Down,
    Handshaking,
    Ready {
        incarnation: Incarnation,
        acked_input: bool,
    },
    Failed,
}

/// The whole client protocol for one logical session across reconnects: handshake, request
/// correlation, and acknowledged input through the outbox and the retry policy.
#[derive(Debug)]
pub struct ClientEngine {
    config: ClientConfig,
    conn: Conn,
    decoder: FrameDecoder,
    transmit: VecDeque<Vec<u8>>,
    /// What to hand the application.
    notices: VecDeque<ClientNotice>,
    outbox: Outbox,
    next_request_id: u32,
    /// User commands awaiting an answer on this connection.
    commands: HashSet<u32>,
    /// APPLY_INPUT request ids on this connection → their operations.
    op_requests: HashMap<u32, OperationId>,
    /// When each in-flight operation was sent on this connection.
    op_sent: HashMap<OperationId, Instant>,
    redial_requested: bool,
    server_id: Option<Vec<u8>>,
}

impl ClientEngine {
    /// An engine with an empty outbox.
    pub fn new(config: ClientConfig) -> Self {
        let outbox = Outbox::new(config.outbox);
        Self::with_outbox(config, outbox)
    }

    /// An engine whose outbox is rebuilt from journal records (after a client restart). The
    /// restored operations are sent or reported after the first HELLO_OK.
    pub fn restore(
        config: ClientConfig,
        records: impl IntoIterator<Item = JournalRecord>,
    ) -> Result<Self, JournalError> {
        let outbox = Outbox::rebuild(config.outbox, records)?;
        Ok(Self::with_outbox(config, outbox))
    }

    /// [`ClientEngine::restore`] for a journal that had damage cut out of it: records that
    /// no longer fit are skipped and returned ([`Outbox::rebuild_salvaging`]).
    pub fn restore_salvaging(
        config: ClientConfig,
        records: impl IntoIterator<Item = JournalRecord>,
    ) -> (Self, Vec<JournalError>) {
        let (outbox, skipped) = Outbox::rebuild_salvaging(config.outbox, records);
        (Self::with_outbox(config, outbox), skipped)
    }

    fn with_outbox(config: ClientConfig, outbox: Outbox) -> Self {
        Self {
            config,
            conn: Conn::Down,
            decoder: FrameDecoder::new(),
            transmit: VecDeque::new(),
            notices: VecDeque::new(),
            outbox,
            next_request_id: 1,
            commands: HashSet::new(),
            op_requests: HashMap::new(),
            op_sent: HashMap::new(),
            redial_requested: false,
            server_id: None,
        }
    }

    // ---- getters ----

    /// The outbox (pending operations, compaction).
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The `server_id` of the last HELLO_OK.
    pub fn server_id(&self) -> Option<&[u8]> {
        self.server_id.as_deref()
    }

    /// Limits which pending operations the engine sends, resends, decides and expires (see
    /// [`Scope`]); the others stay in the outbox and its journal untouched.
    /// Operations that come into the scope while connected are settled against the
    /// connected incarnation at once (those addressed elsewhere are resolved), and those a
    /// journal showed to follow a failed part of their submission are resolved not sent,
    /// connected or not.
    pub fn set_scope(&mut self, now: Instant, scope: Scope) {
        self.outbox.set_scope(scope);
        // [CLIENT.SUBMIT.2] A part that follows a failed one is settled at once, connected
        // or not.
        let blocked = self.outbox.settle_blocked();
        self.report(blocked);
        if let Conn::Ready { incarnation, .. } = self.conn {
            let resolved = self.outbox.settle_foreign(incarnation);
            self.report(resolved);
        }
        self.pump(now);
    }

    /// The user gives up pending operations that are not awaiting an answer; each resolves
    /// (not sent, or unknown if a send is in doubt) as a [`ClientNotice::OperationResolved`].
    pub fn drop_operations(&mut self, ops: &[OperationId]) {
        let resolved = self.outbox.drop_pending(ops);
        self.report(resolved);
    }

    /// Whether the handshake is complete on a live connection.
    pub fn is_ready(&self) -> bool {
        matches!(self.conn, Conn::Ready { .. })
    }

    // ---- handle ----

    /// Reports one event. Drain [`ClientEngine::poll_action`] afterwards.
    pub fn handle(&mut self, now: Instant, event: ClientEvent<'_>) {
        match event {
            ClientEvent::Connected => self.on_connected(),
            ClientEvent::Received { bytes } => self.on_received(now, bytes),
            ClientEvent::Disconnected => self.on_disconnected(),
            ClientEvent::Timeout => self.on_timeout(now),
        }
    }

    fn on_connected(&mut self) {
        if self.conn != Conn::Down {
            self.on_disconnected();
        }
        self.conn = Conn::Handshaking;
        let hello = Frame::Hello(Hello {
            client_name: self.config.client_name.clone(),
            version: ProtocolVersion::CURRENT,
            capabilities: self.config.capabilities.clone(),
        });
        self.transmit.push_back(hello.to_bytes());
    }

    fn on_received(&mut self, now: Instant, bytes: &[u8]) {
        if matches!(self.conn, Conn::Down | Conn::Failed) {
            return;
        }
        self.decoder.push(bytes);
        loop {
            match self.decoder.poll_frame() {
                Ok(Some(frame)) => self.on_frame(now, frame),
                Ok(None) => break,
                // A type byte we do not speak: the frame was whole and is skipped, so a newer
                // server's extra frames do not cost the connection.
                Err(e) if matches!(e.kind(), DecodeErrorKind::UnknownFrameType { .. }) => {}
                Err(e) => {
                    self.fail(PeerMisbehaved::Undecodable(e));
                    break;
                }
            }
            if self.conn == Conn::Failed {
                break;
            }
        }
        self.pump(now);
    }

    fn on_disconnected(&mut self) {
        if self.conn == Conn::Down {
            return;
        }
        self.conn = Conn::Down;
        self.outbox.handle_disconnected();
        let mut abandoned: Vec<u32> = self.commands.drain().collect();
        abandoned.sort_unstable();
        for request_id in abandoned {
            self.notices
                .push_back(ClientNotice::CommandAbandoned { request_id });
        }
        self.op_requests.clear();
        self.op_sent.clear();
        self.transmit.clear();
        self.decoder = FrameDecoder::new();
        self.redial_requested = false;
    }

    fn on_timeout(&mut self, now: Instant) {
        if !self.is_ready() {
            return;
        }
        if !self.redial_requested {
            // [CLIENT.HALFOPEN.1] An operation unanswered past the deadline means the
            // connection is presumed half-open: ask the driver to redial.
            let oldest = self.op_sent.iter().min_by_key(|(op, at)| (**at, **op));
            if let Some((&op, &at)) = oldest
                && at + self.config.half_open_after <= now
            {
                self.redial_requested = true;
                self.notices.push_back(ClientNotice::Redial {
                    reason: RedialReason::HalfOpen {
                        op,
                        waited: now.saturating_duration_since(at),
                    },
                });
            }
        }
        self.pump(now);
    }

    // ---- commands ----

    /// Sends a command; its answer arrives as [`ClientNotice::CommandResult`] with the
    /// returned request id (results may come back in any order).
    pub fn command(&mut self, command: Command) -> Result<u32, ApiMisuse> {
        if matches!(command, Command::ApplyInput(_)) {
            return Err(ApiMisuse::UseApplyInput);
        }
        if !self.is_ready() {
            return Err(ApiMisuse::NotReady);
        }
        let request_id = self.allocate_request_id();
        self.commands.insert(request_id);
        self.transmit.push_back(
            Frame::Command(CommandFrame {
                request_id,
                command,
            })
            .to_bytes(),
        );
        Ok(request_id)
    }

    /// Sends a frame that needs no correlation (INPUT_*, SPAWN_TERMINAL, TERMINAL_RESIZE,
    /// SUBSCRIBE_EVENTS, PING, DETACH, ...). PING is allowed during the handshake.
    pub fn send(&mut self, frame: &Frame) -> Result<(), ApiMisuse> {
        match frame {
            Frame::Hello(_) => return Err(ApiMisuse::Hello),
            Frame::Command(_) => return Err(ApiMisuse::UseCommand),
            f if !f.frame_type().is_client_originated() => {
                return Err(ApiMisuse::ServerFrame(f.frame_type()));
            }
            Frame::Ping(_) if self.conn == Conn::Handshaking => {}
            _ if !self.is_ready() => return Err(ApiMisuse::NotReady),
            _ => {}
        }
        self.transmit.push_back(frame.to_bytes());
        Ok(())
    }

    /// Submits acknowledged input: recorded in the outbox (split into in-limit operations if
    /// needed) and sent in order when the connection allows. Returns the operation ids;
    /// each resolves as one [`ClientNotice::OperationResolved`].
    pub fn apply_input(
        &mut self,
        now: Instant,
        terminal: TerminalId,
        events: Vec<InputEvent>,
        new_id: impl FnMut() -> OperationId,
    ) -> Result<Vec<OperationId>, OutboxError> {
        let ids = self.outbox.submit(
            now,
            self.addressee()?,
            terminal,
            Input::Events(events),
            new_id,
        )?;
        self.pump(now);
        Ok(ids)
    }

    /// Submits a paste as acknowledged input (split at UTF-8 boundaries if large).
    pub fn paste(
        &mut self,
        now: Instant,
        terminal: TerminalId,
        data: Vec<u8>,
        trust: PasteTrust,
        new_id: impl FnMut() -> OperationId,
    ) -> Result<Vec<OperationId>, OutboxError> {
        let ids = self.outbox.submit(
            now,
            self.addressee()?,
            terminal,
            Input::Paste { data, trust },
            new_id,
        )?;
        self.pump(now);
        Ok(ids)
    }

    /// [CLIENT.BIND.1] The incarnation input is addressed to: the live connection's.
    fn addressee(&self) -> Result<Incarnation, OutboxError> {
        match self.conn {
            Conn::Ready {
                incarnation,
                acked_input: true,
            } => Ok(incarnation),
            // [CLIENT.FEATURE.1]
            Conn::Ready { .. } => Err(OutboxError::NotSupported),
            _ => Err(OutboxError::NotConnected),
        }
    }

    // ---- poll_* ----

    /// The next thing to do, or `None` when there is nothing left: journal records first,
    /// then notices, then bytes.
    pub fn poll_action(&mut self) -> Option<ClientAction> {
        if let Some(record) = self.outbox.poll_journal() {
            return Some(ClientAction::Journal(record));
        }
        if let Some(notice) = self.notices.pop_front() {
            return Some(ClientAction::Notify(notice));
        }
        // [CLIENT.OUTBOX.1] Nothing is sent before the records that describe it are out: the
        // journal is empty here.
        self.transmit.pop_front().map(ClientAction::Transmit)
    }

    /// When to report [`ClientEvent::Timeout`] next, if ever.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.is_ready() {
            return None;
        }
        let half_open = (!self.redial_requested)
            .then(|| self.op_sent.values().min().copied())
            .flatten()
            .map(|at| at + self.config.half_open_after);
        let backoff = self
            .outbox
            .poll_timeout()
            .filter(|_| !self.redial_requested);
        [half_open, backoff].into_iter().flatten().min()
    }

    // ---- internals ----

    fn fail(&mut self, why: PeerMisbehaved) {
        self.conn = Conn::Failed;
        self.notices.push_back(ClientNotice::ConnectionFailed(why));
    }

    fn allocate_request_id(&mut self) -> u32 {
        loop {
            let id = self.next_request_id;
            self.next_request_id = self.next_request_id.wrapping_add(1).max(1);
            if id != 0 && !self.commands.contains(&id) && !self.op_requests.contains_key(&id) {
                return id;
            }
        }
    }

    fn on_frame(&mut self, now: Instant, frame: Frame) {
        match frame {
            Frame::HelloOk(hello_ok) => self.on_hello_ok(now, hello_ok),
            Frame::CommandResult(f) => self.on_answer(now, f.request_id, f.result, None),
            Frame::Error(f) => match f.request_id {
                Some(request_id) => self.on_answer(
                    now,
                    request_id,
                    CommandResult::Error {
                        code: f.code,
                        message: f.message.clone(),
                    },
                    Some(Frame::Error(f)),
                ),
                None => self.notices.push_back(ClientNotice::Frame(Frame::Error(f))),
            },
            Frame::Detached(d) => self.notices.push_back(ClientNotice::Detached {
                reason: d.known_reason(),
                message: d.message,
            }),
            f if f.frame_type().is_client_originated() => {
                self.fail(PeerMisbehaved::ClientFrame(f.frame_type()));
            }
            other => self.notices.push_back(ClientNotice::Frame(other)),
        }
    }

    fn on_hello_ok(&mut self, now: Instant, hello_ok: HelloOk) {
        if self.conn != Conn::Handshaking {
            self.fail(PeerMisbehaved::HelloOkTwice);
            return;
        }
        if !hello_ok.version.is_compatible() {
            self.fail(PeerMisbehaved::VersionIncompatible {
                major: hello_ok.version.major,
                minor: hello_ok.version.minor,
            });
            return;
        }
        let incarnation = Incarnation::of(&hello_ok.server_id);
        let acked_input = hello_ok
            .capabilities
            .features
            .contains(ServerFeatures::ACKNOWLEDGED_INPUT);
        self.conn = Conn::Ready {
            incarnation,
            acked_input,
        };
        self.server_id = Some(hello_ok.server_id.clone());
        self.notices.push_back(ClientNotice::HelloOk(hello_ok));
        // [CLIENT.RETRY.2] Operations in doubt are decided against this incarnation.
        let resolved = self.outbox.handle_reconnected(now, incarnation);
        self.report(resolved);
        if !acked_input {
            // A client must not send APPLY_INPUT unless the server advertises it.
            let resolved = self.outbox.refuse_all(
                ErrorCode::INVALID_COMMAND,
                "the server does not advertise ACKNOWLEDGED_INPUT",
            );
            self.report(resolved);
        }
    }

    fn report(&mut self, resolved: Vec<(phux_proto::command::ApplyInput, Resolution)>) {
        for (input, resolution) in resolved {
            self.notices.push_back(ClientNotice::OperationResolved {
                op: input.operation_id,
                terminal: input.terminal,
                resolution,
            });
        }
    }

    fn on_answer(
        &mut self,
        now: Instant,
        request_id: u32,
        result: CommandResult,
        frame: Option<Frame>,
    ) {
        if let Some(op) = self.op_requests.remove(&request_id) {
            self.op_sent.remove(&op);
            let resolved = self.outbox.handle_answer(now, op, result);
            self.report(resolved);
        } else if self.commands.remove(&request_id) {
            self.notices
                .push_back(ClientNotice::CommandResult { request_id, result });
        } else {
            // Uncorrelated: surface the frame as it came.
            let frame = frame.unwrap_or(Frame::CommandResult(
                phux_proto::frame::CommandResultFrame { request_id, result },
            ));
            self.notices.push_back(ClientNotice::Frame(frame));
        }
    }

    /// Sends every operation that is due.
    fn pump(&mut self, now: Instant) {
        let Conn::Ready {
            incarnation,
            acked_input: true,
        } = self.conn
        else {
            return;
        };
        // After a redial request the connection is presumed dead: send nothing more on it.
        if self.redial_requested {
            return;
        }
        let expired = self.outbox.expire(now);
        self.report(expired);
        while let Some(input) = self.outbox.poll_send(now, incarnation) {
            let request_id = self.allocate_request_id();
            let op = input.operation_id;
            self.op_requests.insert(request_id, op);
            self.op_sent.insert(op, now);
            self.transmit.push_back(
                Frame::Command(CommandFrame {
                    request_id,
                    command: Command::ApplyInput(input),
                })
                .to_bytes(),
            );
        }
    }
}
