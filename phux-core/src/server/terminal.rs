//! One terminal's engine-side state: its screen, lifecycle, viewers and subscribers.

use std::collections::{BTreeMap, VecDeque};

use phux_proto::command::TerminalEventType;
use phux_proto::event::Lifecycle;
use phux_proto::ids::{BootstrapId, StreamId};

use phux_proto::frame::{
    BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapReady, BootstrapTombstone, OutputMode,
    TombstoneReason,
};
use phux_proto::{Frame, OperationId, TerminalId};

use super::ConnId;
use crate::terminal::TerminalState;
use crate::writer::JobId;

/// Why a job exists: who is owed an answer when it completes.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum JobKind {
    /// Fire-and-forget input (INPUT_*, ROUTE_INPUT): nobody is owed a reply.
    Unacknowledged,
    /// The terminal's own replies to the program's queries ([OUTPUT.REPLY.1]): nobody is owed
    /// an answer, and no lease or attachment gates them.
    Reply,
    /// APPLY_INPUT: the operation and the request to answer.
    Acknowledged {
        op: OperationId,
        conn: ConnId,
        request_id: u32,
    },
}

/// An attached connection's output stream for this terminal.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Viewer {
    pub(super) stream: StreamId,
    pub(super) bootstrap: BootstrapId,
    /// `Some(last seq sent)` while tombstoned for a slow reader; bootstrapped again when the
    /// reader catches up.
    pub(super) paused_at: Option<u64>,
}

/// A terminal-scoped event subscription.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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

/// What one chunk of output did to a terminal.
#[derive(Debug)]
pub(super) struct Chunk {
    /// Its sequence number.
    pub(super) seq: u64,
    /// How many BELs it rang.
    pub(super) bells: u32,
    /// The title it set, when that differs from the one last announced.
    pub(super) new_title: Option<String>,
    /// The replies to the queries it made (empty when none), to be written to the PTY.
    pub(super) replies: Vec<u8>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// The newest of `jobs`, held back while an upgrade is pending ([SERVER.UPGRADE.3]):
    /// their bytes, not yet handed to the driver.
    #[serde(with = "held_jobs")]
    pub(super) held: VecDeque<(JobId, Vec<u8>)>,
    /// A KILL was requested; TERMINAL_CLOSED follows the driver's ChildExited.
    pub(super) killing: bool,
    /// The title last announced with title_changed.
    pub(super) last_title: Option<String>,
    /// The heap its model held when last measured, and the output ingested since
    /// ([SERVER.LIMIT.6]). Not in an upgrade's image: the new image measures again.
    #[serde(skip)]
    pub(super) heap: usize,
    #[serde(skip)]
    pub(super) unmeasured: usize,
}

/// Held jobs with their bytes as byte strings.
mod held_jobs {
    use std::collections::VecDeque;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::writer::JobId;

    #[derive(Serialize, Deserialize)]
    struct Held(JobId, #[serde(with = "phux_term::bytes")] Vec<u8>);

    pub(super) fn serialize<S: Serializer>(
        held: &VecDeque<(JobId, Vec<u8>)>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(held.iter().map(|(job, bytes)| Held(*job, bytes.clone())))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<VecDeque<(JobId, Vec<u8>)>, D::Error> {
        let held = Vec::<Held>::deserialize(d)?;
        Ok(held
            .into_iter()
            .map(|Held(job, bytes)| (job, bytes))
            .collect())
    }
}

impl Terminal {
    pub(super) fn new(
        id: super::LocalTerminal,
        cols: u16,
        rows: u16,
        scrollback: usize,
        spawner: (ConnId, u32),
    ) -> Self {
        let state = TerminalState::new(cols, rows, scrollback);
        Self {
            id,
            heap: state.heap_bytes(),
            unmeasured: 0,
            state,
            lifecycle: Lifecycle::Running,
            exit_status: None,
            pid: None,
            canonical: None,
            spawner: Some(spawner),
            viewers: BTreeMap::new(),
            subscribers: BTreeMap::new(),
            jobs: VecDeque::new(),
            held: VecDeque::new(),
            killing: false,
            last_title: None,
        }
    }

    /// Measures the model's heap again; returns it.
    pub(super) fn measure(&mut self) -> usize {
        self.heap = self.state.heap_bytes();
        self.unmeasured = 0;
        self.heap
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

    /// Takes `conn`'s viewer off the terminal for a re-attach: the stream to reuse, and the
    /// TOMBSTONE its current bootstrap is owed.
    pub(super) fn reattach(&mut self, conn: ConnId) -> Option<(StreamId, Option<Frame>)> {
        let old = self.viewers.remove(&conn)?;
        // [BOOTSTRAP.TOMBSTONE.1] An already tombstoned bootstrap gets no second one.
        let tombstone = old.paused_at.is_none().then(|| {
            Frame::BootstrapTombstone(BootstrapTombstone {
                terminal: TerminalId::from(self.id),
                stream: old.stream,
                bootstrap: old.bootstrap,
                reason: TombstoneReason::ExplicitReattach,
                last_valid_seq: self.state.seq(),
            })
        });
        Some((old.stream, tombstone))
    }

    /// Makes `conn` a viewer on `stream` with bootstrap generation `bootstrap`, and returns the
    /// frames that rebuild the screen for it: BEGIN, CHUNKs of at most `chunk_limit` bytes,
    /// READY. Live output follows them.
    pub(super) fn bootstrap(
        &mut self,
        conn: ConnId,
        stream: StreamId,
        bootstrap: BootstrapId,
        chunk_limit: usize,
    ) -> Vec<Frame> {
        let (cols, rows) = self.state.size();
        let base_seq = self.state.seq();
        let payload = self.state.bootstrap();
        self.viewers.insert(
            conn,
            Viewer {
                stream,
                bootstrap,
                paused_at: None,
            },
        );
        let terminal = TerminalId::from(self.id);
        let mut frames = vec![Frame::BootstrapBegin(BootstrapBegin {
            terminal: terminal.clone(),
            stream,
            bootstrap,
            codec: BootstrapCodec::SynthesizedVtV1,
            cols,
            rows,
            output_mode: OutputMode::Raw,
            base_seq,
        })];
        // [BOOTSTRAP.CHUNK.1] Chunks respect the negotiated limit and count from 0.
        for (chunk_seq, payload) in payload.chunks(chunk_limit.max(1)).enumerate() {
            frames.push(Frame::BootstrapChunk(BootstrapChunk {
                terminal: terminal.clone(),
                stream,
                bootstrap,
                chunk_seq: u32::try_from(chunk_seq).unwrap_or(u32::MAX),
                payload: payload.to_vec(),
            }));
        }
        frames.push(Frame::BootstrapReady(BootstrapReady {
            terminal,
            stream,
            bootstrap,
            history_cursor: None,
        }));
        frames
    }

    /// [QUEUE.OUTPUT.1] `conn` fell too far behind: its bootstrap ends at `last_valid_seq`
    /// (never a silent gap) and waits to start over. The TOMBSTONE that says so.
    pub(super) fn tombstone(&mut self, conn: ConnId, last_valid_seq: u64) -> Option<Frame> {
        let viewer = self.viewers.get_mut(&conn)?;
        viewer.paused_at = Some(last_valid_seq);
        Some(Frame::BootstrapTombstone(BootstrapTombstone {
            terminal: TerminalId::from(self.id),
            stream: viewer.stream,
            bootstrap: viewer.bootstrap,
            reason: TombstoneReason::OutboundGap,
            last_valid_seq,
        }))
    }

    /// Feeds a chunk of the program's output to the screen model: its sequence number, the
    /// bells it rang and the title it set, if new. `None` once the sequence numbers are used up.
    pub(super) fn ingest(&mut self, bytes: &[u8]) -> Option<Chunk> {
        let seq = self.state.ingest(bytes).ok()?;
        let bells = self.state.take_bells();
        // Compared before copying: a shell's title is set once and then read after every
        // chunk of output.
        let new_title = (self.state.title() != self.last_title.as_deref()).then(|| {
            self.last_title = self.state.title().map(str::to_owned);
            self.last_title.clone().unwrap_or_default()
        });
        // [OUTPUT.REPLY.1] The model answers every query it knows, whoever is attached.
        let replies = self.state.take_replies();
        Some(Chunk {
            seq,
            bells,
            new_title,
            replies,
        })
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
