//! Requests to handlers: what each frame a connection admitted asks for, and the terminal
//! ids commands name.

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::decode_error::DecodeError;
use phux_proto::frame::FrameType;
use phux_proto::frame::{CommandFrame, Pong};
use phux_proto::input::InputEvent;
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::connection::Phase;
use super::terminal::EventFilter;
use crate::encoder::CellGeometry;
use crate::time::Instant;
use phux_proto::frame::DetachReason;

use super::{ConnId, LocalTerminal, ServerEngine};

/// Why a terminal id in a command does not name a local terminal we have.
pub(super) enum Lookup {
    Satellite,
    NotFound,
}

impl Lookup {
    pub(super) fn code(&self) -> (ErrorCode, &'static str) {
        match self {
            // [COMMAND.SATELLITE.1] A non-hub server refuses satellite ids.
            Self::Satellite => (
                ErrorCode::UNSUPPORTED_SATELLITE_ROUTE,
                "this server does not route to satellites",
            ),
            Self::NotFound => (ErrorCode::TERMINAL_NOT_FOUND, "no such terminal"),
        }
    }
}

impl ServerEngine {
    pub(super) fn on_received(&mut self, now: Instant, id: ConnId, bytes: &[u8]) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.phase == Phase::Closed {
            // [ERROR.FATAL.2] A failed connection stays failed: later bytes are ignored.
            return;
        }
        conn.decoder.push(bytes);
        loop {
            let Some(conn) = self.conns.get_mut(&id) else {
                return;
            };
            if conn.phase == Phase::Closed {
                return;
            }
            match conn.decoder.poll_frame() {
                Ok(None) => return,
                Ok(Some(frame)) => self.on_frame(now, id, frame),
                Err(err) => self.on_decode_error(id, &err),
            }
        }
    }

    pub(super) fn on_frame(&mut self, now: Instant, id: ConnId, frame: Frame) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let phase = conn.phase;
        match (phase, frame) {
            (_, Frame::Ping(ping)) => {
                // [PING.ECHO.1] PING is answered at any time, before HELLO too.
                self.send(id, &Frame::Pong(Pong { nonce: ping.nonce }));
            }
            (Phase::AwaitHello, Frame::Hello(hello)) => self.on_hello(id, &hello),
            (Phase::AwaitHello, _) => {
                // [HELLO.ORDER.2] Nothing but HELLO and PING before HELLO.
                self.fail(
                    id,
                    ErrorCode::VERSION_INCOMPATIBLE,
                    "HELLO required before any stateful frame",
                );
            }
            (_, Frame::Hello(_)) => {
                // [HELLO.ORDER.3] A second HELLO is a protocol error.
                self.fail(
                    id,
                    ErrorCode::INVALID_COMMAND,
                    "HELLO already completed on this connection",
                );
            }
            (_, Frame::Detach) => {
                // [DETACH.REQUEST.1] DETACHED{REQUESTED}, then the server closes (our rule R12).
                self.detach(id, DetachReason::REQUESTED, "");
            }
            (_, Frame::Command(command)) => self.on_command(now, id, command),
            (_, Frame::SpawnTerminal(spawn)) => self.on_spawn(id, spawn),
            (_, Frame::TerminalResize(resize)) => self.on_resize(&resize),
            (_, Frame::SubscribeEvents(sub)) => self.on_subscribe_events(id, sub.terminal.as_ref()),
            (_, Frame::ViewportResize(resize)) => {
                let v = resize.viewport;
                // [INPUT.ATOM.1] The cell size for mouse encoding comes from the last viewport
                // that carried both pixel sizes; one without them leaves it as it was.
                if let (Some(conn), Some(_), Some(_)) =
                    (self.conns.get_mut(&id), v.pixel_w, v.pixel_h)
                {
                    conn.cells = CellGeometry::from_viewport(v.cols, v.rows, v.pixel_w, v.pixel_h);
                }
            }
            (_, Frame::InputKey(f)) => {
                self.on_fire_and_forget(now, id, &f.terminal, &InputEvent::Key(f.event));
            }
            (_, Frame::InputPaste(f)) => {
                self.on_fire_and_forget(now, id, &f.terminal, &InputEvent::Paste(f.event));
            }
            (_, Frame::InputMouse(f)) => {
                self.on_fire_and_forget(now, id, &f.terminal, &InputEvent::Mouse(f.event));
            }
            (_, Frame::InputFocus(f)) => {
                self.on_fire_and_forget(now, id, &f.terminal, &InputEvent::Focus(f.event));
            }
            (_, server_frame) => {
                // [FRAME.TYPE.2] A server-direction frame from a client is a protocol error.
                let name = server_frame.frame_type();
                self.fail(
                    id,
                    ErrorCode::INVALID_COMMAND,
                    &format!("{name:?} is a server-to-client frame"),
                );
            }
        }
    }

    pub(super) fn on_decode_error(&mut self, id: ConnId, err: &DecodeError) {
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let ready = conn.phase == Phase::Ready;
        let message = err.to_string();
        let frame = err.frame();
        if ready && !err.is_framing() && frame == Some(FrameType::COMMAND) {
            // [ERROR.COMMAND.1] [ERROR.COMMAND.2] A COMMAND body that does not decode, with
            // framing intact, gets ERROR{request_id, code}; the connection stays up (R7).
            self.send_error(id, err.request_id(), err.code(), &message);
            return;
        }
        let known_before_hello = matches!(frame, Some(FrameType::HELLO | FrameType::PING));
        if !ready
            && !err.is_framing()
            && !known_before_hello
            && err.code() != ErrorCode::UNKNOWN_MESSAGE_TYPE
        {
            // [HELLO.ORDER.2] Anything but HELLO and PING before HELLO.
            self.fail(
                id,
                ErrorCode::VERSION_INCOMPATIBLE,
                "HELLO required before any stateful frame",
            );
            return;
        }
        // [FRAME.VIOLATION.1] [FRAME.TYPE.3] [FRAME.DECODE.1] [HELLO.DECODE.1] Framing errors,
        // unknown frame types, a bad HELLO and other malformed frames are fatal.
        self.fail(id, err.code(), &message);
    }

    pub(super) fn on_command(&mut self, now: Instant, id: ConnId, frame: CommandFrame) {
        let rid = frame.request_id;
        match frame.command {
            Command::AttachTerminal { terminal } => self.cmd_attach(id, rid, &terminal),
            Command::DetachTerminal { terminal } => {
                // [TERMINAL.DETACH.1] Always OK, idempotent.
                if let Some(t) =
                    LocalTerminal::of(&terminal).and_then(|t| self.terminals.get_mut(&t))
                {
                    t.viewers.remove(&id);
                }
                self.send_result(id, rid, CommandResult::Ok);
            }
            Command::KillTerminal { terminal } => self.cmd_kill(id, rid, &[terminal]),
            Command::KillTerminals { terminals } => self.cmd_kill(id, rid, &terminals),
            Command::GetState { .. } => {
                let snapshot = self.snapshot();
                self.send_result(
                    id,
                    rid,
                    CommandResult::OkWith(CommandValue::State(snapshot)),
                );
            }
            Command::GetScreen {
                terminal,
                request_scrollback,
                cells,
            } => match self.lookup(&terminal) {
                Ok(t) => {
                    let json = self.terminals[&t]
                        .state
                        .screen_json(t.0, request_scrollback, cells);
                    self.send_result(id, rid, CommandResult::OkWith(CommandValue::Json(json)));
                }
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::GetTerminalState {
                terminal,
                include_scrollback,
                max_scrollback_lines,
            } => match self.lookup(&terminal) {
                Ok(t) => {
                    let scrollback = include_scrollback.then_some(u32::from(max_scrollback_lines));
                    let json = self.terminal_state_json(now, t, scrollback);
                    self.send_result(id, rid, CommandResult::OkWith(CommandValue::Json(json)));
                }
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::SubscribeTerminalEvents {
                terminal,
                event_types,
            } => match self.lookup(&terminal) {
                Ok(t) => {
                    if let Some(term) = self.terminals.get_mut(&t) {
                        // A later SUBSCRIBE_EVENTS for the terminal widens the subscription again.
                        let entry = term.subscribers.entry(id).or_insert(EventFilter {
                            types: Some(Vec::new()),
                        });
                        if entry.types.is_some() {
                            entry.types = Some(event_types);
                        }
                    }
                    self.send_result(id, rid, CommandResult::Ok);
                }
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::RouteInput { terminal, event } => {
                self.cmd_route_input(now, id, rid, &terminal, &event);
            }
            Command::ApplyInput(apply) => self.cmd_apply_input(now, id, rid, &apply),
            Command::AcquireInput {
                terminal,
                mode,
                ttl_ms,
            } => {
                self.cmd_acquire(now, id, rid, &terminal, mode, ttl_ms);
            }
            Command::ReleaseInput { terminal } => match self.lookup(&terminal) {
                Ok(t) => {
                    let client = self.conns[&id].client;
                    // [LEASE.RELEASE.2] Release by a non-holder is a no-op OK.
                    if let Some(change) = self.leases.release(&TerminalId::from(t), client) {
                        self.broadcast_lease_change(&change);
                    }
                    self.send_result(id, rid, CommandResult::Ok);
                }
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::SignalTerminal { terminal, signal } => {
                self.cmd_signal(id, rid, &terminal, signal);
            }
            Command::Shutdown => {
                let local = self.conns.get(&id).is_some_and(|c| c.peer.local_socket);
                if local {
                    // [SERVER.SHUTDOWN.2] OK first, then every connection is detached.
                    self.send_result(id, rid, CommandResult::Ok);
                    self.shutdown("server is shutting down");
                } else {
                    self.send_error_result(
                        id,
                        rid,
                        ErrorCode::PERMISSION_DENIED,
                        "SHUTDOWN is accepted on the local socket only",
                    );
                }
            }
            Command::Upgrade
            | Command::ReportAsked { .. }
            | Command::DetachClients { .. }
            | Command::PutFile(_)
            | Command::ReportAgentState { .. } => {
                // [COMMAND.UNSUPPORTED.1] Commands outside our subset are refused, typed.
                self.send_error_result(
                    id,
                    rid,
                    ErrorCode::INVALID_COMMAND,
                    "command not supported by this server",
                );
            }
        }
    }

    /// Resolves a wire terminal id to a live local terminal.
    pub(super) fn lookup(&self, terminal: &TerminalId) -> Result<LocalTerminal, Lookup> {
        match terminal {
            TerminalId::Satellite { .. } => Err(Lookup::Satellite),
            TerminalId::Local(t) if self.terminals.contains_key(&LocalTerminal(*t)) => {
                Ok(LocalTerminal(*t))
            }
            TerminalId::Local(_) => Err(Lookup::NotFound),
        }
    }

    pub(super) fn send_lookup_error(&mut self, id: ConnId, rid: u32, err: &Lookup) {
        let (code, message) = err.code();
        self.send_error_result(id, rid, code, message);
    }
}
