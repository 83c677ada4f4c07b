//! A terminal's life: spawn, resize, signals, kill, exit and removal.

use phux_proto::command::{CommandResult, Signal};
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle, TerminalControl};
use phux_proto::frame::{
    EventFrame, SpawnError, SpawnResult, SpawnTerminal, TerminalClosed, TerminalResize,
    TerminalSpawned,
};
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::terminal::{Kill, Terminal};
use super::{ConnId, LocalTerminal, ServerAction, ServerEngine, SpawnSpec};
use crate::time::Instant;

/// The longest `agent_session` SPAWN_TERMINAL accepts.
const MAX_AGENT_SESSION_LEN: usize = 4096;

/// The widest terminal we model: far beyond any real screen, and a bound on the grid's memory.
pub(super) const MAX_COLS: u16 = 1024;
/// The tallest terminal we model.
pub(super) const MAX_ROWS: u16 = 512;

/// The only terminal group (phux 0.8's reference server has one).
const THE_GROUP: u32 = 1;

impl ServerEngine {
    pub(super) fn on_spawn(&mut self, id: ConnId, spawn: SpawnTerminal) {
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
        // [SERVER.REMAIN.3] Exited terminals kept for their screen make room first.
        while !self.screens_fit(cols, rows, None) && self.remains.dismiss_oldest().is_some() {}
        // [SERVER.LIMIT.7] No new model unless the most its screens can hold fits beside what
        // the others hold.
        if !self.screens_fit(cols, rows, None) {
            refuse(
                self,
                SpawnError::SpawnFailed(format!(
                    "the terminals' memory budget cannot hold a {cols}x{rows} terminal more"
                )),
            );
            return;
        }
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

    pub(super) fn allocate_terminal_id(&mut self) -> LocalTerminal {
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
        if !t.spawned(pid) {
            return;
        }
        if let Some((conn, rid)) = t.take_spawner() {
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
        let Some(mut t) = self.terminals.remove(&terminal) else {
            return;
        };
        if let Some((conn, rid)) = t.take_spawner() {
            self.send(
                conn,
                &Frame::TerminalSpawned(TerminalSpawned {
                    request_id: rid,
                    result: SpawnResult::Err(SpawnError::SpawnFailed(message.to_owned())),
                }),
            );
        }
    }

    pub(super) fn on_resize(&mut self, resize: &TerminalResize) {
        // [TERMINAL.RESIZE.1] Unknown terminals are ignored; 0 clamps to 1.
        let Some(local) =
            LocalTerminal::of(&resize.terminal).filter(|t| self.terminals.contains_key(t))
        else {
            return;
        };
        self.set_size(local, resize.size.cols, resize.size.rows);
    }

    pub(super) fn cmd_kill(&mut self, id: ConnId, rid: u32, targets: &[TerminalId]) {
        // [TERMINAL.KILLALL.2] All or nothing: one unknown id and nothing is killed (R9).
        let mut locals = Vec::with_capacity(targets.len());
        for target in targets {
            match self.lookup_view(target) {
                Ok(t) => locals.push(t),
                Err(e) => return self.send_lookup_error(id, rid, &e),
            }
        }
        for t in locals {
            // [TERMINAL.REMAIN.4] An exited terminal kept for its screen is dismissed: its
            // TERMINAL_CLOSED was sent when it exited.
            if self.remains.dismiss(t) {
                continue;
            }
            let Some(kill) = self.terminals.get_mut(&t).map(Terminal::kill) else {
                continue;
            };
            if let Kill::NotStarted { spawner } = kill {
                // Not started yet: the spawn is abandoned (the driver kills what it started),
                // and the spawner still gets its one TERMINAL_SPAWNED ([SPAWN.REPLY.1]).
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
            } else if kill == Kill::Signal {
                self.actions.push_back(ServerAction::Kill { terminal: t });
            }
        }
        self.send_result(id, rid, CommandResult::Ok);
    }

    pub(super) fn cmd_signal(
        &mut self,
        id: ConnId,
        rid: u32,
        terminal: &TerminalId,
        signal: Signal,
    ) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let Some(client) = self.client_of(id) else {
            return;
        };
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        let Some((action, lifecycle)) = term.signal(signal) else {
            // [SIGNAL.REPLY.1] A terminal without a live child has no process group to signal.
            return self.send_error_result(
                id,
                rid,
                ErrorCode::INTERNAL_ERROR,
                "the terminal has no running child",
            );
        };
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

    pub(super) fn on_child_exited(
        &mut self,
        now: Instant,
        terminal: LocalTerminal,
        exit_status: Option<i32>,
    ) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        t.exited(exit_status);
        let viewers = t.viewer_ids();
        let server_scoped = super::subscriptions::server_subscribers(&self.conns);
        let audience = t.audience(server_scoped.iter().copied());
        let listeners = Self::listeners_of(t, server_scoped);
        // Jobs the driver never reported: their bytes may or may not have reached the child.
        self.resolve_orphaned_jobs(terminal);
        let tid = TerminalId::from(terminal);
        // [LEASE.EXIT.1] The lease ends with the child, without a RELEASED event.
        self.leases.remove_terminal(&tid);
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
        // [TERMINAL.CLOSED.4] From here on the id is unknown, but for the reads and the
        // dismissal of a terminal kept with its last screen.
        if let Some(mut t) = self.remove_terminal(terminal).filter(|t| !t.was_killed()) {
            // [TERMINAL.REMAIN.1] A program's own exit (a signal's included) leaves its screen.
            t.retire();
            self.remains.keep(now, t, self.config.remain_on_exit);
        }
    }

    /// Forgets a terminal (its jobs resolved, its lease and lane entry gone); the terminal.
    pub(super) fn remove_terminal(&mut self, terminal: LocalTerminal) -> Option<Terminal> {
        self.resolve_orphaned_jobs(terminal);
        let removed = self.terminals.remove(&terminal);
        let tid = TerminalId::from(terminal);
        self.leases.remove_terminal(&tid);
        self.lane.remove_terminal(&tid);
        removed
    }
}
