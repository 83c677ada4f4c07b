//! Frame dispatch: the handshake gate, commands, subscriptions and terminal lifecycle.

use phux_proto::command::{
    Command, CommandResult, CommandValue, SessionSnapshot, Signal, TerminalInfo,
};
use phux_proto::decode_error::DecodeError;
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle, TerminalControl};
use phux_proto::frame::FrameType;
use phux_proto::frame::{
    Bell, BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapProfiles, BootstrapReady,
    BootstrapTombstone, ByteLimit, CommandFrame, EventFrame, Hello, OutputMode, Pong, SpawnError,
    SpawnResult, SpawnTerminal, TerminalClosed, TerminalOutputRef, TerminalResize, TerminalSpawned,
    TombstoneReason,
};
use phux_proto::ids::StreamId;
use phux_proto::input::InputEvent;
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::conn::{Budget, Phase};
use super::terminal::{EventFilter, Terminal, Viewer};
use super::{ConnId, LocalTerminal, ServerAction, ServerEngine, SharedFrame, SpawnSpec};
use crate::encoder::CellGeometry;
use crate::lease::LeaseChange;
use crate::time::Instant;

/// The longest `agent_session` SPAWN_TERMINAL accepts.
const MAX_AGENT_SESSION_LEN: usize = 4096;

/// The widest terminal we model: far beyond any real screen, and a bound on the grid's memory.
pub(super) const MAX_COLS: u16 = 1024;
/// The tallest terminal we model.
pub(super) const MAX_ROWS: u16 = 512;

/// The most bells one output chunk rings: enough for any real use, bounded against floods.
const MAX_BELLS_PER_CHUNK: u32 = 16;

/// The only terminal group (phux 0.8's reference server has one).
const THE_GROUP: u32 = 1;

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
                self.detach(id, phux_proto::frame::DetachReason::REQUESTED, "");
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

    fn on_hello(&mut self, id: ConnId, hello: &Hello) {
        // [HELLO.VERSION.1] Admission needs major.minor == 0.8; the patch is free.
        if !hello.version.is_compatible() {
            let v = hello.version;
            self.fail(
                id,
                ErrorCode::VERSION_INCOMPATIBLE,
                &format!("protocol {}.{}.{} is not 0.8", v.major, v.minor, v.patch),
            );
            return;
        }
        let caps = &hello.capabilities;
        // [HELLO.PROFILE.2] We serve SynthesizedVtRaw only; a client without it cannot attach.
        if !caps
            .bootstrap_profiles
            .contains(BootstrapProfiles::SYNTHESIZED_VT_RAW)
        {
            self.fail(
                id,
                ErrorCode::CODEC_UNAVAILABLE,
                "no common bootstrap profile (need synthesized_vt_raw)",
            );
            return;
        }
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        // [HELLO.LIMITS.1] Limits are the per-axis minimum of the client's and ours.
        conn.max_chunk = caps.max_chunk_bytes.min(limit(super::SERVER_MAX_CHUNK));
        conn.max_history_page = caps
            .max_history_page_bytes
            .min(limit(super::SERVER_MAX_HISTORY_PAGE));
        conn.phase = Phase::Ready;
        let conn = &self.conns[&id];
        let ok = Frame::HelloOk(self.hello_ok(conn));
        self.send(id, &ok);
    }

    fn on_command(&mut self, now: Instant, id: ConnId, frame: CommandFrame) {
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

    fn on_spawn(&mut self, id: ConnId, spawn: SpawnTerminal) {
        let rid = spawn.request_id;
        let refuse = |engine: &mut Self, error: SpawnError| {
            engine.send(
                id,
                &Frame::TerminalSpawned(TerminalSpawned {
                    request_id: rid,
                    result: SpawnResult::Err(error),
                }),
            );
        };
        if spawn.satellite.is_some() {
            refuse(self, SpawnError::UnsupportedSatelliteRoute);
            return;
        }
        // [SPAWN.GROUP.1] Only group 1 exists.
        if spawn.group.0 != THE_GROUP {
            refuse(self, SpawnError::GroupNotFound);
            return;
        }
        if spawn
            .agent_session
            .as_ref()
            .is_some_and(|s| s.is_empty() || s.len() > MAX_AGENT_SESSION_LEN)
        {
            refuse(
                self,
                SpawnError::SpawnFailed("agent_session must be 1..=4096 bytes".to_owned()),
            );
            return;
        }
        if self.terminals.len() >= self.config.max_terminals {
            refuse(
                self,
                SpawnError::SpawnFailed("terminal limit reached".to_owned()),
            );
            return;
        }
        let command = match spawn.command {
            Some(command) if !command.is_empty() => command,
            _ => self.config.default_command.clone(),
        };
        // [SPAWN.SIZE.1] 0 on either axis means the default size.
        let (cols, rows) = match spawn.initial_size {
            Some(size) if size.cols > 0 && size.rows > 0 => {
                (size.cols.min(MAX_COLS), size.rows.min(MAX_ROWS))
            }
            _ => self.config.default_size,
        };
        let terminal = self.allocate_terminal_id();
        self.terminals.insert(
            terminal,
            Terminal::new(
                terminal,
                cols,
                rows,
                self.config.scrollback_lines,
                (id, rid),
            ),
        );
        // An absent `term` keeps the `TERM` the given environment names ([SPAWN.ENV.1]: the
        // child gets exactly that environment); only without one is it `xterm-256color`.
        let term = spawn.term.unwrap_or_else(|| {
            spawn
                .env
                .iter()
                .flatten()
                .rev()
                .find(|(name, _)| name == "TERM")
                .map_or_else(|| "xterm-256color".to_owned(), |(_, value)| value.clone())
        });
        let spec = SpawnSpec {
            command,
            cwd: spawn.cwd,
            env: spawn.env,
            term,
            cols,
            rows,
        };
        self.actions
            .push_back(ServerAction::Spawn { terminal, spec });
    }

    fn allocate_terminal_id(&mut self) -> LocalTerminal {
        loop {
            let id = LocalTerminal(self.next_terminal);
            self.next_terminal = self.next_terminal.wrapping_add(1).max(1);
            if !self.terminals.contains_key(&id) {
                return id;
            }
        }
    }

    pub(super) fn on_spawned(&mut self, terminal: LocalTerminal, pid: u32) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        if t.pid.is_some() {
            return;
        }
        t.pid = Some(pid);
        let spawner = t.spawner.take();
        if let Some((conn, rid)) = spawner {
            // [SPAWN.ORDER.1] TERMINAL_SPAWNED precedes every frame about the new terminal.
            self.send(
                conn,
                &Frame::TerminalSpawned(TerminalSpawned {
                    request_id: rid,
                    result: SpawnResult::Ok(TerminalId::from(terminal)),
                }),
            );
        }
        // [SPAWN.EVENT.1] [SUBSCRIBE.EVENTS.2] Server-scoped subscribers hear of every new terminal.
        let event = Frame::Event(EventFrame {
            terminal: Some(TerminalId::from(terminal)),
            event: AgentEvent::PaneSpawned,
        });
        for conn in self.server_subscribers() {
            self.send(conn, &event);
        }
    }

    pub(super) fn on_spawn_failed(&mut self, terminal: LocalTerminal, message: &str) {
        let Some(t) = self.terminals.remove(&terminal) else {
            return;
        };
        if let Some((conn, rid)) = t.spawner {
            self.send(
                conn,
                &Frame::TerminalSpawned(TerminalSpawned {
                    request_id: rid,
                    result: SpawnResult::Err(SpawnError::SpawnFailed(message.to_owned())),
                }),
            );
        }
    }

    fn on_resize(&mut self, resize: &TerminalResize) {
        // [TERMINAL.RESIZE.1] Unknown terminals are ignored; 0 clamps to 1.
        let Some(t) = LocalTerminal::of(&resize.terminal).and_then(|t| self.terminals.get_mut(&t))
        else {
            return;
        };
        // [TERMINAL.RESIZE.3] Clamped to the largest size we model, so one frame cannot make the
        // server allocate a 65,535 × 65,535 grid.
        let cols = resize.size.cols.clamp(1, MAX_COLS);
        let rows = resize.size.rows.clamp(1, MAX_ROWS);
        t.state.resize(cols, rows);
        if t.is_running() {
            self.actions.push_back(ServerAction::Resize {
                terminal: t.id,
                cols,
                rows,
            });
        }
    }

    fn on_subscribe_events(&mut self, id: ConnId, terminal: Option<&TerminalId>) {
        match terminal {
            None => {
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.server_events = true;
                }
            }
            Some(terminal) => match self.lookup(terminal) {
                Ok(t) => {
                    if let Some(term) = self.terminals.get_mut(&t) {
                        term.subscribers.insert(id, EventFilter { types: None });
                    }
                }
                Err(e) => {
                    // [SUBSCRIBE.EVENTS.4] No reply frame exists; a bad scope gets an ERROR.
                    let (code, message) = e.code();
                    self.send_error(id, None, code, message);
                }
            },
        }
    }

    fn cmd_attach(&mut self, id: ConnId, rid: u32, terminal: &TerminalId) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        // [TERMINAL.ATTACH.3] Re-attaching ends the current bootstrap and starts a new one
        // on the same stream.
        let old = self
            .terminals
            .get_mut(&t)
            .and_then(|term| term.viewers.remove(&id));
        let stream = match old {
            Some(old) => {
                // [BOOTSTRAP.TOMBSTONE.1] An already tombstoned bootstrap gets no second one.
                if old.paused_at.is_none() {
                    let last = self.terminals[&t].state.seq();
                    self.send(
                        id,
                        &Frame::BootstrapTombstone(BootstrapTombstone {
                            terminal: TerminalId::from(t),
                            stream: old.stream,
                            bootstrap: old.bootstrap,
                            reason: TombstoneReason::ExplicitReattach,
                            last_valid_seq: last,
                        }),
                    );
                }
                old.stream
            }
            None => self.allocate_stream(),
        };
        self.start_bootstrap(id, t, stream);
        self.send_result(id, rid, CommandResult::Ok);
    }

    /// BOOTSTRAP_BEGIN, CHUNKs and READY rebuilding the screen, then live output follows.
    pub(super) fn start_bootstrap(&mut self, id: ConnId, t: LocalTerminal, stream: StreamId) {
        let bootstrap = self.allocate_bootstrap();
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let chunk_limit = conn.max_chunk.get() as usize;
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        let (cols, rows) = term.state.size();
        let base_seq = term.state.seq();
        let payload = term.state.bootstrap();
        term.viewers.insert(
            id,
            Viewer {
                stream,
                bootstrap,
                paused_at: None,
            },
        );
        let tid = TerminalId::from(t);
        self.send(
            id,
            &Frame::BootstrapBegin(BootstrapBegin {
                terminal: tid.clone(),
                stream,
                bootstrap,
                codec: BootstrapCodec::SynthesizedVtV1,
                cols,
                rows,
                output_mode: OutputMode::Raw,
                base_seq,
            }),
        );
        // [BOOTSTRAP.CHUNK.1] Chunks respect the negotiated limit and count from 0.
        for (chunk_seq, payload) in payload.chunks(chunk_limit.max(1)).enumerate() {
            self.send(
                id,
                &Frame::BootstrapChunk(BootstrapChunk {
                    terminal: tid.clone(),
                    stream,
                    bootstrap,
                    chunk_seq: u32::try_from(chunk_seq).unwrap_or(u32::MAX),
                    payload: payload.to_vec(),
                }),
            );
        }
        self.send(
            id,
            &Frame::BootstrapReady(BootstrapReady {
                terminal: tid,
                stream,
                bootstrap,
                history_cursor: None,
            }),
        );
    }

    /// Streams paused for a slow reader start over once it has caught up.
    pub(super) fn resume_paused_streams(&mut self, id: ConnId) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let paused: Vec<(LocalTerminal, StreamId)> = std::mem::take(&mut conn.paused)
            .into_iter()
            .filter_map(|t| {
                let viewer = self.terminals.get(&t)?.viewers.get(&id)?;
                viewer.paused_at.map(|_| (t, viewer.stream))
            })
            .collect();
        for (t, stream) in paused {
            // [BOOTSTRAP.TOMBSTONE.4] A new bootstrap generation replaces the tombstoned one.
            self.start_bootstrap(id, t, stream);
        }
    }

    pub(super) fn on_pty_output(&mut self, terminal: LocalTerminal, bytes: &[u8]) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let Ok(seq) = t.state.ingest(bytes) else {
            // 2^64 output chunks cannot happen in practice; stop streaming if it ever does.
            return;
        };
        let bells = t.state.take_bells();
        // Compared before copying: a shell's title is set once and then read after every
        // chunk of output.
        let new_title = (t.state.title() != t.last_title.as_deref()).then(|| {
            t.last_title = t.state.title().map(str::to_owned);
            t.last_title.clone().unwrap_or_default()
        });
        let mut viewers = std::mem::take(&mut self.viewer_scratch);
        viewers.clear();
        viewers.extend(t.viewers.iter().map(|(c, v)| (*c, *v)));
        let tid = TerminalId::from(terminal);
        let frame_len = bytes.len() + 64;
        // Two or more viewers share one encoding of the chunk, each adding only its stream
        // and bootstrap; a lone viewer's frame joins its other sends in one buffer.
        let shared = viewers
            .iter()
            .filter(|(_, v)| v.paused_at.is_none())
            .count()
            > 1;
        let mut head = None;
        for &(conn, viewer) in &viewers {
            if viewer.paused_at.is_some() {
                continue;
            }
            let queued = self.conns.get(&conn).map_or(0, |c| c.outbound.output);
            if queued + frame_len > self.config.output_budget {
                // [QUEUE.OUTPUT.1] A reader that falls too far behind loses this bootstrap of
                // its stream: a TOMBSTONE with the last seq it was sent, never a silent gap.
                let last_valid_seq = seq - 1;
                if let Some(v) = self
                    .terminals
                    .get_mut(&terminal)
                    .and_then(|t| t.viewers.get_mut(&conn))
                {
                    v.paused_at = Some(last_valid_seq);
                }
                if let Some(c) = self.conns.get_mut(&conn)
                    && !c.paused.contains(&terminal)
                {
                    c.paused.push(terminal);
                }
                self.send(
                    conn,
                    &Frame::BootstrapTombstone(BootstrapTombstone {
                        terminal: tid.clone(),
                        stream: viewer.stream,
                        bootstrap: viewer.bootstrap,
                        reason: TombstoneReason::OutboundGap,
                        last_valid_seq,
                    }),
                );
                continue;
            }
            // [OUTPUT.SEQ.2] Live output carries contiguous seq numbers per bootstrap. The
            // chunk is encoded straight from the PTY's bytes, never copied into an owned
            // frame first.
            let out = TerminalOutputRef {
                terminal: &tid,
                seq,
                bytes,
                stream: viewer.stream,
                bootstrap: viewer.bootstrap,
            };
            if shared {
                let head = head
                    .get_or_insert_with(|| self.shared_head(|buf| out.encode_head(buf)))
                    .clone();
                self.send_shared(
                    conn,
                    SharedFrame {
                        head,
                        tail: out.tail(),
                    },
                );
            } else {
                self.send_encoded(conn, Budget::Output, |buf| out.encode(buf));
            }
        }
        self.viewer_scratch = viewers;
        // [EVENT.KIND.1] One bell per BEL, up to a bound per chunk so that a program ringing in
        // a loop cannot flood its subscribers into a control-queue overflow.
        for _ in 0..bells.min(MAX_BELLS_PER_CHUNK) {
            self.ring_bell(terminal);
        }
        if let Some(title) = new_title {
            // [EVENT.KIND.2] A new OSC 0/2 title is announced to event subscribers.
            let event = Frame::Event(EventFrame {
                terminal: Some(tid),
                event: AgentEvent::TitleChanged { title },
            });
            for conn in self.agent_event_listeners(terminal) {
                self.send(conn, &event);
            }
        }
    }

    fn ring_bell(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get(&terminal) else {
            return;
        };
        let tid = TerminalId::from(terminal);
        let viewers: Vec<ConnId> = t.viewers.keys().copied().collect();
        let listeners = self.agent_event_listeners(terminal);
        // [EVENT.KIND.1] BELL to viewers, EVENT bell to event subscribers.
        for conn in viewers {
            self.send(
                conn,
                &Frame::Bell(Bell {
                    terminal: tid.clone(),
                }),
            );
        }
        let event = Frame::Event(EventFrame {
            terminal: Some(tid),
            event: AgentEvent::Bell,
        });
        for conn in listeners {
            self.send(conn, &event);
        }
    }

    /// Who hears agent events about a terminal: server-scoped subscribers and those
    /// subscribed to it with SUBSCRIBE_EVENTS, each once.
    fn agent_event_listeners(&self, terminal: LocalTerminal) -> Vec<ConnId> {
        let mut all = self.server_subscribers();
        if let Some(t) = self.terminals.get(&terminal) {
            all.extend(
                t.subscribers
                    .iter()
                    .filter(|(_, f)| f.agent_events())
                    .map(|(c, _)| *c),
            );
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    pub(super) fn on_child_exited(&mut self, terminal: LocalTerminal, exit_status: Option<i32>) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        t.lifecycle = Lifecycle::Exited;
        t.exit_status = exit_status;
        // Jobs the driver never reported: their bytes may or may not have reached the child.
        self.resolve_orphaned_jobs(terminal);
        let tid = TerminalId::from(terminal);
        // [LEASE.EXIT.1] The lease ends with the child, without a RELEASED event.
        self.leases.remove_terminal(&tid);
        let Some(t) = self.terminals.get(&terminal) else {
            return;
        };
        let viewers: Vec<ConnId> = t.viewers.keys().copied().collect();
        let audience = t.audience(self.server_subscribers().into_iter());
        let listeners = self.agent_event_listeners(terminal);
        // [SIGNAL.EVENT.2] terminal_control EXITED with the status to every subscriber (R11),
        // then TERMINAL_CLOSED once to every viewer, then pane_closed to event subscribers.
        let control = TerminalControl {
            lifecycle: Lifecycle::Exited,
            exit_status,
            input_holder: None,
            action: ControlAction::Exited,
            actor: None,
        };
        let event = Frame::Event(EventFrame {
            terminal: Some(tid.clone()),
            event: AgentEvent::TerminalControl(control),
        });
        for conn in audience {
            self.send(conn, &event);
        }
        // [TERMINAL.CLOSED.1] Exactly once per attached connection.
        let closed = Frame::TerminalClosed(TerminalClosed {
            terminal: tid.clone(),
            exit_status,
        });
        for conn in viewers {
            self.send(conn, &closed);
        }
        // [TERMINAL.CLOSED.3]
        let pane_closed = Frame::Event(EventFrame {
            terminal: Some(tid),
            event: AgentEvent::PaneClosed { exit_status },
        });
        for conn in listeners {
            self.send(conn, &pane_closed);
        }
        // [TERMINAL.CLOSED.4] From here on the id is unknown.
        self.remove_terminal(terminal);
    }

    pub(super) fn remove_terminal(&mut self, terminal: LocalTerminal) {
        self.resolve_orphaned_jobs(terminal);
        self.terminals.remove(&terminal);
        let tid = TerminalId::from(terminal);
        self.leases.remove_terminal(&tid);
        self.lane.remove_terminal(&tid);
    }

    fn cmd_kill(&mut self, id: ConnId, rid: u32, targets: &[TerminalId]) {
        // [TERMINAL.KILLALL.2] All or nothing: one unknown id and nothing is killed (R9).
        let mut locals = Vec::with_capacity(targets.len());
        for target in targets {
            match self.lookup(target) {
                Ok(t) => locals.push(t),
                Err(e) => return self.send_lookup_error(id, rid, &e),
            }
        }
        for t in locals {
            let Some(term) = self.terminals.get_mut(&t) else {
                continue;
            };
            if term.pid.is_none() {
                // Not started yet: the spawn is abandoned (the driver kills what it started),
                // and the spawner still gets its one TERMINAL_SPAWNED ([SPAWN.REPLY.1]).
                let spawner = term.spawner.take();
                self.remove_terminal(t);
                self.actions.push_back(ServerAction::Kill { terminal: t });
                if let Some((conn, rid)) = spawner {
                    self.send(
                        conn,
                        &Frame::TerminalSpawned(TerminalSpawned {
                            request_id: rid,
                            result: SpawnResult::Err(SpawnError::SpawnFailed(
                                "killed before it started".to_owned(),
                            )),
                        }),
                    );
                }
            } else if !term.killing {
                term.killing = true;
                self.actions.push_back(ServerAction::Kill { terminal: t });
            }
        }
        self.send_result(id, rid, CommandResult::Ok);
    }

    fn cmd_acquire(
        &mut self,
        now: Instant,
        id: ConnId,
        rid: u32,
        terminal: &TerminalId,
        mode: phux_proto::command::AcquireMode,
        ttl_ms: u32,
    ) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let client = self.conns[&id].client;
        match self
            .leases
            .acquire(now, TerminalId::from(t), client, mode, ttl_ms)
        {
            Ok(change) => {
                // [LEASE.ACQUIRE.4] OK is plain; the grant is broadcast to every subscriber.
                self.send_result(id, rid, CommandResult::Ok);
                self.broadcast_lease_change(&change);
            }
            Err(held) => {
                // [LEASE.ACQUIRE.3] Cooperative acquire of a lease held by another is 204.
                self.send_error_result(
                    id,
                    rid,
                    ErrorCode::INPUT_LEASE_HELD,
                    format!("input lease held by client {}", held.holder),
                );
            }
        }
    }

    fn cmd_signal(&mut self, id: ConnId, rid: u32, terminal: &TerminalId, signal: Signal) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let client = self.conns[&id].client;
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        if !term.is_running() {
            // [SIGNAL.REPLY.1] A terminal without a live child has no process group to signal.
            return self.send_error_result(
                id,
                rid,
                ErrorCode::INTERNAL_ERROR,
                "the terminal has no running child",
            );
        }
        let action = match signal {
            Signal::Interrupt => ControlAction::Interrupted,
            Signal::Freeze => {
                term.lifecycle = Lifecycle::Frozen;
                ControlAction::Frozen
            }
            Signal::Resume => {
                term.lifecycle = Lifecycle::Running;
                ControlAction::Resumed
            }
            Signal::Terminate => ControlAction::Terminated,
            Signal::Kill => ControlAction::Killed,
        };
        let lifecycle = term.lifecycle;
        // [SIGNAL.GROUP.1] The signal goes to the terminal's process group; the terminal stays.
        self.actions.push_back(ServerAction::Signal {
            terminal: t,
            signal,
        });
        self.send_result(id, rid, CommandResult::Ok);
        let tid = TerminalId::from(t);
        let control = TerminalControl {
            lifecycle,
            exit_status: None,
            input_holder: self.leases.holder(&tid),
            action,
            actor: Some(client),
        };
        self.broadcast_control(t, control);
    }

    pub(super) fn broadcast_lease_change(&mut self, change: &LeaseChange) {
        let Some(t) = LocalTerminal::of(&change.terminal) else {
            return;
        };
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        let control = change.to_control(term.lifecycle, term.exit_status);
        self.broadcast_control(t, control);
    }

    /// [EVENT.CONTROL.1] terminal_control goes to every client subscribed to the terminal —
    /// attached, terminal-scoped or server-scoped — exactly once each (our rule R11).
    fn broadcast_control(&mut self, t: LocalTerminal, control: TerminalControl) {
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        let audience = term.audience(self.server_subscribers().into_iter());
        let event = Frame::Event(EventFrame {
            terminal: Some(TerminalId::from(t)),
            event: AgentEvent::TerminalControl(control),
        });
        for conn in audience {
            self.send(conn, &event);
        }
    }

    pub(super) fn server_subscribers(&self) -> Vec<ConnId> {
        self.conns
            .values()
            .filter(|c| c.server_events && c.phase == Phase::Ready)
            .map(|c| c.id)
            .collect()
    }

    fn snapshot(&self) -> SessionSnapshot {
        // [SCREEN.SERVER.1] L1 only: no sessions or windows, every terminal (R21).
        SessionSnapshot {
            sessions: Vec::new(),
            windows: Vec::new(),
            terminals: self
                .terminals
                .values()
                .filter(|t| t.pid.is_some())
                .map(|t| {
                    let (cols, rows) = t.state.size();
                    TerminalInfo {
                        terminal: TerminalId::from(t.id),
                        window_id: 0,
                        cols,
                        rows,
                        title: t.state.title().map(str::to_owned),
                        cwd: None,
                    }
                })
                .collect(),
            focused_session: 0,
            focused_window: 0,
            focused_pane: TerminalId::Local(0),
        }
    }

    fn terminal_state_json(
        &self,
        now: Instant,
        t: LocalTerminal,
        scrollback: Option<u32>,
    ) -> String {
        let term = &self.terminals[&t];
        let tid = TerminalId::from(t);
        let mut value = term.state.screen_value(t.0, scrollback, false);
        let modes = term.state.modes();
        let lifecycle = match term.lifecycle {
            Lifecycle::Running => "running",
            Lifecycle::Frozen => "frozen",
            Lifecycle::Exited => "exited",
        };
        let lease_ms = self.leases.expires_at(&tid).map(|at| {
            u64::try_from(at.saturating_duration_since(now).as_millis()).unwrap_or(u64::MAX)
        });
        if let Some(obj) = value.as_object_mut() {
            // [SCREEN.STATE.1] GET_TERMINAL_STATE = ScreenState plus lifecycle, lease and modes (R20).
            obj.insert("lifecycle".into(), lifecycle.into());
            obj.insert("exit_status".into(), term.exit_status.into());
            obj.insert(
                "input_holder".into(),
                self.leases.holder(&tid).map(|c| c.0).into(),
            );
            obj.insert("lease_expires_ms".into(), lease_ms.into());
            obj.insert("pid".into(), term.pid.into());
            obj.insert("canonical".into(), term.canonical.into());
            obj.insert("modes".into(), modes_json(&modes));
        }
        value.to_string()
    }
}

fn limit(value: u32) -> ByteLimit {
    ByteLimit::new(value).unwrap_or(super::conn::SMALLEST_LIMIT)
}

fn modes_json(modes: &crate::modes::TerminalModes) -> serde_json::Value {
    use crate::modes::{MouseEncoding, MouseTracking};
    let tracking = match modes.mouse_tracking {
        MouseTracking::Off => "off",
        MouseTracking::X10 => "x10",
        MouseTracking::Normal => "normal",
        MouseTracking::ButtonEvent => "button_event",
        MouseTracking::AnyEvent => "any_event",
    };
    let encoding = match modes.mouse_encoding {
        MouseEncoding::X10 => "x10",
        MouseEncoding::Utf8 => "utf8",
        MouseEncoding::Sgr => "sgr",
        MouseEncoding::Urxvt => "urxvt",
        MouseEncoding::SgrPixels => "sgr_pixels",
    };
    serde_json::json!({
        "application_cursor_keys": modes.application_cursor_keys,
        "application_keypad": modes.application_keypad,
        "backarrow_sends_backspace": modes.backarrow_sends_backspace,
        "line_feed_mode": modes.line_feed_mode,
        "bracketed_paste": modes.bracketed_paste,
        "focus_reporting": modes.focus_reporting,
        "mouse_tracking": tracking,
        "mouse_encoding": encoding,
        "kitty_flags": modes.kitty_flags.0,
        "alternate_screen": modes.alternate_screen,
    })
}
