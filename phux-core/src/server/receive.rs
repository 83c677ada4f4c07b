//! A connection's bytes to handlers: the turn's budget of work ([SERVER.FAIR.1]), each request
//! a connection admitted routed to the handler that answers it, and the terminal ids commands
//! name.

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::frame::{CommandFrame, Pong};
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::connection::{Connection, REPLY_BYTES_PER_UNIT, Request};
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
        if !self
            .conns
            .get_mut(&id)
            .is_some_and(|conn| conn.receive(bytes))
        {
            return;
        }
        // [SERVER.FAIR.1] At most `frames_per_receive` units of work now (a costly request
        // counts as several); the driver comes back for the rest (an empty `Received`) after
        // the other sources had their turn.
        let mut budget = self.config.frames_per_receive;
        while budget > 0 {
            let Some(request) = self.conns.get_mut(&id).and_then(Connection::poll_request) else {
                break;
            };
            budget = budget.saturating_sub(request.cost());
            let queued = |engine: &Self| engine.conns.get(&id).map_or(0, |c| c.outbound().total());
            let before = queued(self);
            self.on_request(now, id, request);
            // A reply is work in proportion to its size (a screen document of megabytes is
            // built and copied): what the request queued counts too.
            budget =
                budget.saturating_sub(queued(self).saturating_sub(before) / REPLY_BYTES_PER_UNIT);
        }
        let Some(turn) = self.conns.get_mut(&id).map(Connection::end_turn) else {
            return;
        };
        if turn.too_many_before_hello {
            // [SERVER.LIMIT.1] FRAME_TOO_LARGE: the frame under way is larger than anything
            // this phase accepts, a framing violation that leaves no way to resynchronise
            // ([FRAME.VIOLATION.1]).
            self.fail(
                id,
                ErrorCode::FRAME_TOO_LARGE,
                "too many bytes before HELLO",
            );
            return;
        }
        self.shed_over_budget_if(turn.unframed_grew);
    }

    fn on_request(&mut self, now: Instant, id: ConnId, request: Request) {
        match request {
            Request::Ping(nonce) => self.send(id, &Frame::Pong(Pong { nonce })),
            Request::Hello(hello) => self.on_hello(id, &hello),
            // [DETACH.REQUEST.1] DETACHED{REQUESTED}, then the server closes (our rule R12).
            Request::Detach => self.detach(id, DetachReason::REQUESTED, ""),
            Request::Command(command) => self.on_command(now, id, command),
            Request::Spawn(spawn) => self.on_spawn(id, spawn),
            Request::Resize(resize) => self.on_resize(&resize),
            Request::Viewport => self.on_viewport(id),
            Request::Subscribe(terminal) => self.on_subscribe_events(id, terminal.as_ref()),
            Request::Input(terminal, event) => {
                self.on_fire_and_forget(now, id, &terminal, &event);
            }
            Request::Refused {
                request_id,
                code,
                message,
            } => self.send_error(id, request_id, code, &message),
            Request::Fatal { code, message } => self.fail(id, code, &message),
        }
    }

    pub(super) fn on_command(&mut self, now: Instant, id: ConnId, frame: CommandFrame) {
        let rid = frame.request_id;
        match frame.command {
            Command::AttachTerminal { terminal } => self.cmd_attach(id, rid, &terminal),
            Command::DetachTerminal { terminal } => {
                // [TERMINAL.DETACH.1] Always OK, idempotent.
                if let Some(local) = LocalTerminal::of(&terminal)
                    && let Some(t) = self.terminals.get_mut(&local)
                {
                    t.remove_viewer(id);
                    // [SERVER.SIZE.2] One viewer fewer: the terminal may grow back.
                    self.fit_to_viewports(local, None);
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
            } => match self.lookup_view(&terminal) {
                Ok(t) => self.cmd_get_screen(id, rid, t, request_scrollback, cells),
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::GetTerminalState {
                terminal,
                include_scrollback,
                max_scrollback_lines,
            } => match self.lookup_view(&terminal) {
                Ok(t) => {
                    let scrollback = include_scrollback.then_some(u32::from(max_scrollback_lines));
                    match self.terminal_state_json(now, id, t, scrollback) {
                        Some(json) => self.send_json_result(id, rid, json),
                        None => self.send_lookup_error(id, rid, &Lookup::NotFound),
                    }
                }
                Err(e) => self.send_lookup_error(id, rid, &e),
            },
            Command::SubscribeTerminalEvents {
                terminal,
                event_types,
            } => match self.lookup(&terminal) {
                Ok(t) => {
                    if let Some(term) = self.terminals.get_mut(&t) {
                        term.subscribe_terminal_events(id, event_types);
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
            Command::ReleaseInput { terminal } => self.cmd_release(id, rid, &terminal),
            Command::SignalTerminal { terminal, signal } => {
                self.cmd_signal(id, rid, &terminal, signal);
            }
            Command::Shutdown => {
                let local = self.conns.get(&id).is_some_and(Connection::is_local);
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
            Command::Upgrade { binary } => self.cmd_upgrade(id, rid, binary),
            Command::ReportAsked { .. }
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

    /// [`Self::lookup`], or an exited terminal kept for its screen ([TERMINAL.REMAIN.2]): for
    /// the reads, ATTACH_TERMINAL and KILL_TERMINAL alone.
    pub(super) fn lookup_view(&self, terminal: &TerminalId) -> Result<LocalTerminal, Lookup> {
        match self.lookup(terminal) {
            Err(Lookup::NotFound) => LocalTerminal::of(terminal)
                .filter(|t| self.remains.contains(*t))
                .ok_or(Lookup::NotFound),
            found => found,
        }
    }

    /// A terminal to read: live, or exited and kept.
    pub(super) fn view(&self, t: LocalTerminal) -> Option<&super::Terminal> {
        self.terminals.get(&t).or_else(|| self.remains.get(t))
    }

    pub(super) fn send_lookup_error(&mut self, id: ConnId, rid: u32, err: &Lookup) {
        let (code, message) = err.code();
        self.send_error_result(id, rid, code, message);
    }
}
