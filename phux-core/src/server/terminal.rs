//! One terminal's engine-side state: its screen, lifecycle, viewers and subscribers.

use std::collections::{BTreeMap, VecDeque};

use phux_proto::command::TerminalEventType;
use phux_proto::event::Lifecycle;
use phux_proto::ids::{BootstrapId, StreamId};

use super::ConnId;
use super::input::JobKind;
use crate::terminal::TerminalState;
use crate::writer::JobId;

/// An attached connection's output stream for this terminal.
#[derive(Clone, Copy, Debug)]
pub(super) struct Viewer {
    pub(super) stream: StreamId,
    pub(super) bootstrap: BootstrapId,
    /// `Some(last seq sent)` while tombstoned for a slow reader; bootstrapped again when the
    /// reader catches up.
    pub(super) paused_at: Option<u64>,
}

/// A terminal-scoped event subscription.
#[derive(Clone, Debug, Default)]
pub(super) struct EventFilter {
    /// `None`: SUBSCRIBE_EVENTS scoped to the terminal (every agent event about it).
    /// `Some(types)`: SUBSCRIBE_TERMINAL_EVENTS, the per-terminal path, which carries only
    /// the listed shell-integration types (empty = all of them) and terminal_control.
    pub(super) types: Option<Vec<TerminalEventType>>,
}

impl EventFilter {
    /// Whether agent events (bell, pane_closed, ...) reach this subscriber.
    pub(super) fn agent_events(&self) -> bool {
        self.types.is_none()
    }
}

#[derive(Debug)]
pub(super) struct Terminal {
    pub(super) id: super::LocalTerminal,
    pub(super) state: TerminalState,
    pub(super) lifecycle: Lifecycle,
    pub(super) exit_status: Option<i32>,
    /// `None` until the driver reports the spawn.
    pub(super) pid: Option<u32>,
    /// Whether the last canonical check the driver reported saw ICANON.
    pub(super) canonical: Option<bool>,
    /// Who asked for the spawn and is owed TERMINAL_SPAWNED (R17).
    pub(super) spawner: Option<(ConnId, u32)>,
    pub(super) viewers: BTreeMap<ConnId, Viewer>,
    pub(super) subscribers: BTreeMap<ConnId, EventFilter>,
    /// Jobs handed to the driver and not yet reported done, in write order.
    pub(super) jobs: VecDeque<(JobId, JobKind)>,
    /// A KILL was requested; TERMINAL_CLOSED follows the driver's ChildExited.
    pub(super) killing: bool,
    /// The title last announced with title_changed.
    pub(super) last_title: Option<String>,
}

impl Terminal {
    pub(super) fn new(
        id: super::LocalTerminal,
        cols: u16,
        rows: u16,
        scrollback: usize,
        spawner: (ConnId, u32),
    ) -> Self {
        Self {
            id,
            state: TerminalState::new(cols, rows, scrollback),
            lifecycle: Lifecycle::Running,
            exit_status: None,
            pid: None,
            canonical: None,
            spawner: Some(spawner),
            viewers: BTreeMap::new(),
            subscribers: BTreeMap::new(),
            jobs: VecDeque::new(),
            killing: false,
            last_title: None,
        }
    }

    /// Spawned and not yet exited.
    pub(super) fn is_running(&self) -> bool {
        self.pid.is_some() && self.lifecycle != Lifecycle::Exited
    }

    /// Accepts input: spawned, not exited, not being killed.
    pub(super) fn accepts_input(&self) -> bool {
        self.is_running() && !self.killing
    }

    pub(super) fn forget_conn(&mut self, conn: ConnId) {
        self.viewers.remove(&conn);
        self.subscribers.remove(&conn);
        if self.spawner.is_some_and(|(c, _)| c == conn) {
            self.spawner = None;
        }
    }

    /// Every connection subscribed to this terminal in any way (R11), each once, in order.
    pub(super) fn audience(&self, server_scoped: impl Iterator<Item = ConnId>) -> Vec<ConnId> {
        let mut all: Vec<ConnId> = self
            .viewers
            .keys()
            .chain(self.subscribers.keys())
            .copied()
            .chain(server_scoped)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}
