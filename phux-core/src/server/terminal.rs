//! One terminal's engine-side state and the rules that keep it: its screen model and the
//! memory it holds, its lifecycle (spawn, signals, kill, exit), its viewers (bootstraps, the
//! fan-out of each output chunk within every viewer's budget, tombstones) and subscribers,
//! and its queue of write jobs (held back during an upgrade, completed, expired, orphaned).
//! The engine looks a terminal up once per event and calls these methods; every field is
//! private. (What the terminal shows is its [`TerminalState`]; its child and PTY are the
//! driver's.)

use std::collections::{BTreeMap, VecDeque};

use phux_proto::command::{Signal, TerminalEventType};
use phux_proto::event::{ControlAction, Lifecycle};
use phux_proto::ids::{BootstrapId, StreamId};

use phux_proto::frame::{
    BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapReady, BootstrapTombstone, OutputMode,
    TombstoneReason,
};
use phux_proto::{Frame, OperationId, TerminalId};

use super::{ConnId, LocalTerminal, ServerAction};
use crate::modes::TerminalModes;
use crate::terminal_state::TerminalState;
use crate::writer::{JobId, WriteOutcome};

/// The most bells one output chunk rings: enough for any real use, bounded against floods.
const MAX_BELLS_PER_CHUNK: u32 = 16;

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
struct Viewer {
    stream: StreamId,
    bootstrap: BootstrapId,
    /// `Some(last seq sent)` while tombstoned for a slow reader; bootstrapped again when the
    /// reader catches up.
    paused_at: Option<u64>,
}

/// A terminal-scoped event subscription.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct EventFilter {
    /// `None`: SUBSCRIBE_EVENTS scoped to the terminal (every agent event about it).
    /// `Some(types)`: SUBSCRIBE_TERMINAL_EVENTS, the per-terminal path, which carries only
    /// the listed shell-integration types (empty = all of them) and terminal_control.
    types: Option<Vec<TerminalEventType>>,
}

impl EventFilter {
    /// Whether agent events (bell, pane_closed, ...) reach this subscriber.
    fn agent_events(&self) -> bool {
        self.types.is_none()
    }
}

/// What one output chunk owes one viewer ([`Terminal::fan_out`]).
#[derive(Clone, Debug)]
pub(super) enum Delivery {
    /// The chunk, on this stream and bootstrap.
    Output {
        stream: StreamId,
        bootstrap: BootstrapId,
    },
    /// The viewer fell too far behind: this TOMBSTONE instead, and its stream waits to start
    /// over ([QUEUE.OUTPUT.1]).
    Tombstone(Frame),
}

/// What a KILL does to a terminal ([`Terminal::kill`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kill {
    /// Not started yet: the spawn is abandoned, and the spawner, if still owed its
    /// TERMINAL_SPAWNED, gets it ([SPAWN.REPLY.1]).
    NotStarted { spawner: Option<(ConnId, u32)> },
    /// The child is to be killed; TERMINAL_CLOSED follows its exit.
    Signal,
    /// A KILL is already under way.
    AlreadyKilling,
}

/// An acknowledged job a terminal's end leaves unanswered: its operation, the request owed,
/// and what became of its bytes.
#[derive(Clone, Copy, Debug)]
pub(super) struct Orphan {
    pub(super) op: OperationId,
    pub(super) conn: ConnId,
    pub(super) request_id: u32,
    pub(super) outcome: WriteOutcome,
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

/// One terminal. Its fields (and their order: an upgrade's image holds them) are private;
/// see the module docs.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Terminal {
    id: LocalTerminal,
    state: TerminalState,
    lifecycle: Lifecycle,
    exit_status: Option<i32>,
    /// `None` until the driver reports the spawn.
    pid: Option<u32>,
    /// Whether the last canonical check the driver reported saw ICANON.
    canonical: Option<bool>,
    /// Who asked for the spawn and is owed TERMINAL_SPAWNED (R17).
    spawner: Option<(ConnId, u32)>,
    viewers: BTreeMap<ConnId, Viewer>,
    subscribers: BTreeMap<ConnId, EventFilter>,
    /// Jobs handed to the driver and not yet reported done, in write order.
    jobs: VecDeque<(JobId, JobKind)>,
    /// The newest of `jobs`, held back while an upgrade is pending ([SERVER.UPGRADE.3]):
    /// their bytes, not yet handed to the driver.
    #[serde(with = "held_jobs")]
    held: VecDeque<(JobId, Vec<u8>)>,
    /// A KILL was requested; TERMINAL_CLOSED follows the driver's ChildExited.
    killing: bool,
    /// The title last announced with title_changed.
    last_title: Option<String>,
    /// What its model holds against the terminals' memory budget ([SERVER.LIMIT.6]): the
    /// most its screens' rows can hold at its size, reserved ([SERVER.LIMIT.7]), and its
    /// history and buffers as measured after its last output. Not in an upgrade's image: the
    /// new image measures again.
    #[serde(skip)]
    charge: Charge,
}

/// A terminal's share of the models budget, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Charge {
    /// Reserved for its screens' rows at its size: the most they can come to hold.
    pub(super) screens: usize,
    /// Its history, the parser's and the title's buffers, as last measured.
    pub(super) history: usize,
}

impl Charge {
    /// What a model of `cols` x `rows` is charged for its screens ([SERVER.LIMIT.7]).
    pub(super) fn screens_of(cols: u16, rows: u16) -> usize {
        TerminalState::rows_heap_bound(cols, rows)
    }

    fn of(state: &TerminalState) -> Self {
        let (cols, rows) = state.size();
        Self {
            screens: Self::screens_of(cols, rows),
            history: state.heap_bytes_besides_rows(),
        }
    }

    pub(super) fn total(self) -> usize {
        self.screens + self.history
    }
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
        id: LocalTerminal,
        cols: u16,
        rows: u16,
        scrollback: usize,
        spawner: (ConnId, u32),
    ) -> Self {
        let state = TerminalState::new(cols, rows, scrollback);
        Self {
            id,
            charge: Charge::of(&state),
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

    // ---- getters ------------------------------------------------------------------------

    pub(super) fn id(&self) -> LocalTerminal {
        self.id
    }

    /// The child's pid, once the driver reported the spawn.
    pub(super) fn pid(&self) -> Option<u32> {
        self.pid
    }

    pub(super) fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    pub(super) fn exit_status(&self) -> Option<i32> {
        self.exit_status
    }

    /// Whether the last canonical check the driver reported saw ICANON.
    pub(super) fn canonical(&self) -> Option<bool> {
        self.canonical
    }

    /// The model, for the views (GET_STATE, GET_SCREEN, GET_TERMINAL_STATE).
    pub(super) fn state(&self) -> &TerminalState {
        &self.state
    }

    /// The input modes input is encoded under, now.
    pub(super) fn modes(&self) -> TerminalModes {
        self.state.modes()
    }

    /// Spawned and not yet exited.
    pub(super) fn is_running(&self) -> bool {
        self.pid.is_some() && self.lifecycle != Lifecycle::Exited
    }

    /// Accepts input: spawned, not exited, not being killed.
    pub(super) fn accepts_input(&self) -> bool {
        self.is_running() && !self.killing
    }

    // ---- its life -----------------------------------------------------------------------

    /// The driver started the child as `pid`; `false` when a pid was reported already (the
    /// report is ignored).
    pub(super) fn spawned(&mut self, pid: u32) -> bool {
        if self.pid.is_some() {
            return false;
        }
        self.pid = Some(pid);
        true
    }

    /// The spawner still owed TERMINAL_SPAWNED, taken.
    pub(super) fn take_spawner(&mut self) -> Option<(ConnId, u32)> {
        self.spawner.take()
    }

    /// KILL_TERMINAL(S) for this terminal.
    pub(super) fn kill(&mut self) -> Kill {
        if self.pid.is_none() {
            Kill::NotStarted {
                spawner: self.spawner.take(),
            }
        } else if self.killing {
            Kill::AlreadyKilling
        } else {
            self.killing = true;
            Kill::Signal
        }
    }

    /// SIGNAL_TERMINAL: what terminal_control reports, and the lifecycle after it; `None`
    /// without a live child ([SIGNAL.REPLY.1]).
    pub(super) fn signal(&mut self, signal: Signal) -> Option<(ControlAction, Lifecycle)> {
        if !self.is_running() {
            return None;
        }
        let action = match signal {
            Signal::Interrupt => ControlAction::Interrupted,
            Signal::Freeze => {
                self.lifecycle = Lifecycle::Frozen;
                ControlAction::Frozen
            }
            Signal::Resume => {
                self.lifecycle = Lifecycle::Running;
                ControlAction::Resumed
            }
            Signal::Terminate => ControlAction::Terminated,
            Signal::Kill => ControlAction::Killed,
        };
        Some((action, self.lifecycle))
    }

    /// The child exited with `exit_status` (`None`: killed by a signal).
    pub(super) fn exited(&mut self, exit_status: Option<i32>) {
        self.lifecycle = Lifecycle::Exited;
        self.exit_status = exit_status;
    }

    /// Whether a KILL ended it (a killed terminal is not kept, [TERMINAL.REMAIN.1]).
    pub(super) fn was_killed(&self) -> bool {
        self.killing
    }

    /// Kept after its exit: nobody views it or is subscribed to it any more (TERMINAL_CLOSED
    /// and pane_closed were their last frames of it).
    pub(super) fn retire(&mut self) {
        self.viewers.clear();
        self.subscribers.clear();
        self.spawner = None;
    }

    /// The model takes the new size (already clamped); whether the PTY is to be resized too
    /// (a running child).
    pub(super) fn resize(&mut self, cols: u16, rows: u16) -> bool {
        self.state.resize(cols, rows);
        self.measure();
        self.is_running()
    }

    // ---- the model's memory ([SERVER.LIMIT.6]) ------------------------------------------

    /// What its model holds against the budget, as last measured.
    pub(super) fn charge(&self) -> Charge {
        self.charge
    }

    /// Measures the model again (O(1): the screens' share depends on the size alone); whether
    /// its charge changed.
    pub(super) fn measure(&mut self) -> bool {
        let before = self.charge;
        self.charge = Charge::of(&self.state);
        self.charge != before
    }

    /// Drops the model's history: its charge before and after, or `None` when it has none to
    /// drop (its screens alone).
    pub(super) fn drop_history(&mut self) -> Option<(Charge, Charge)> {
        if self.state.scrollback_len() == 0 {
            return None;
        }
        let before = self.charge;
        self.state.clear_history();
        self.measure();
        Some((before, self.charge))
    }

    // ---- viewers and subscribers --------------------------------------------------------

    pub(super) fn forget_conn(&mut self, conn: ConnId) {
        self.viewers.remove(&conn);
        self.subscribers.remove(&conn);
        if self.spawner.is_some_and(|(c, _)| c == conn) {
            self.spawner = None;
        }
    }

    /// Whether `conn` is attached.
    pub(super) fn has_viewer(&self, conn: ConnId) -> bool {
        self.viewers.contains_key(&conn)
    }

    /// The attached connections, in order.
    /// The viewers whose stream is live (not paused for a slow reader).
    pub(super) fn live_viewers(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.viewers
            .iter()
            .filter(|(_, v)| v.paused_at.is_none())
            .map(|(&id, _)| id)
    }

    /// The attached connections, each with whether its stream is paused for a slow reader.
    pub(super) fn viewers_paused(&self) -> impl Iterator<Item = (ConnId, bool)> + '_ {
        self.viewers
            .iter()
            .map(|(&id, v)| (id, v.paused_at.is_some()))
    }

    pub(super) fn viewer_ids(&self) -> Vec<ConnId> {
        self.viewers.keys().copied().collect()
    }

    /// DETACH_TERMINAL: `conn` no longer views it.
    pub(super) fn remove_viewer(&mut self, conn: ConnId) {
        self.viewers.remove(&conn);
    }

    /// SUBSCRIBE_EVENTS scoped to this terminal: every agent event about it.
    pub(super) fn subscribe(&mut self, conn: ConnId) {
        self.subscribers.insert(conn, EventFilter { types: None });
    }

    /// SUBSCRIBE_TERMINAL_EVENTS: only `event_types` (empty = all of them) and
    /// terminal_control; a SUBSCRIBE_EVENTS for the terminal stays as wide as it was.
    pub(super) fn subscribe_terminal_events(
        &mut self,
        conn: ConnId,
        event_types: Vec<TerminalEventType>,
    ) {
        // A later SUBSCRIBE_EVENTS for the terminal widens the subscription again.
        let entry = self.subscribers.entry(conn).or_insert(EventFilter {
            types: Some(Vec::new()),
        });
        if entry.types.is_some() {
            entry.types = Some(event_types);
        }
    }

    /// The connections subscribed to it with SUBSCRIBE_EVENTS (agent events), in order.
    pub(super) fn agent_subscribers(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.subscribers
            .iter()
            .filter(|(_, f)| f.agent_events())
            .map(|(c, _)| *c)
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

    // ---- bootstraps, output and tombstones ----------------------------------------------

    /// Takes `conn`'s viewer off the terminal for a re-attach (or a new bootstrap after a
    /// resize, `reason`): the stream to reuse, and the TOMBSTONE its current bootstrap is owed.
    pub(super) fn reattach(
        &mut self,
        conn: ConnId,
        reason: TombstoneReason,
    ) -> Option<(StreamId, Option<Frame>)> {
        let old = self.viewers.remove(&conn)?;
        // [BOOTSTRAP.TOMBSTONE.1] An already tombstoned bootstrap gets no second one.
        let tombstone = old.paused_at.is_none().then(|| {
            Frame::BootstrapTombstone(BootstrapTombstone {
                terminal: TerminalId::from(self.id),
                stream: old.stream,
                bootstrap: old.bootstrap,
                reason,
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

    /// Makes `conn` a viewer on `stream` whose bootstrap `bootstrap` waits for its queue to
    /// drain: a paused stream, started over like a tombstoned one. None of the deferred
    /// generation's frames was sent, so no TOMBSTONE is owed for it.
    pub(super) fn defer_bootstrap(
        &mut self,
        conn: ConnId,
        stream: StreamId,
        bootstrap: BootstrapId,
    ) {
        let seq = self.state.seq();
        self.viewers.insert(
            conn,
            Viewer {
                stream,
                bootstrap,
                paused_at: Some(seq),
            },
        );
    }

    /// The stream of `conn`'s viewer if it waits to start over.
    pub(super) fn paused_stream(&self, conn: ConnId) -> Option<StreamId> {
        let viewer = self.viewers.get(&conn)?;
        viewer.paused_at.map(|_| viewer.stream)
    }

    /// Feeds a chunk of the program's output to the screen model: its sequence number, the
    /// bells it rang (at most [`MAX_BELLS_PER_CHUNK`]) and the title it set, if new. `None`
    /// once the sequence numbers are used up.
    pub(super) fn ingest(&mut self, bytes: &[u8]) -> Option<Chunk> {
        let seq = self.state.ingest(bytes).ok()?;
        // [EVENT.KIND.1] One bell per BEL, up to a bound per chunk so that a program ringing
        // in a loop cannot flood its subscribers into a control-queue overflow.
        let bells = self.state.take_bells().min(MAX_BELLS_PER_CHUNK);
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

    /// What output chunk `seq` owes each live viewer, in viewer order, into `out`: the chunk,
    /// or, for a viewer whose queue it does not fit (`fits`), a TOMBSTONE ending its bootstrap
    /// at the last seq it was sent, never a silent gap ([QUEUE.OUTPUT.1]); its stream waits to
    /// start over. Whether two or more viewers were live (they share one encoding).
    pub(super) fn fan_out(
        &mut self,
        seq: u64,
        fits: impl Fn(ConnId) -> bool,
        out: &mut Vec<(ConnId, Delivery)>,
    ) -> bool {
        out.clear();
        let live = self
            .viewers
            .values()
            .filter(|v| v.paused_at.is_none())
            .count();
        let terminal = TerminalId::from(self.id);
        for (&conn, viewer) in &mut self.viewers {
            if viewer.paused_at.is_some() {
                continue;
            }
            if fits(conn) {
                out.push((
                    conn,
                    Delivery::Output {
                        stream: viewer.stream,
                        bootstrap: viewer.bootstrap,
                    },
                ));
            } else {
                // [QUEUE.OUTPUT.1] A reader that falls too far behind loses this bootstrap of
                // its stream.
                let last_valid_seq = seq - 1;
                viewer.paused_at = Some(last_valid_seq);
                out.push((
                    conn,
                    Delivery::Tombstone(Frame::BootstrapTombstone(BootstrapTombstone {
                        terminal: terminal.clone(),
                        stream: viewer.stream,
                        bootstrap: viewer.bootstrap,
                        reason: TombstoneReason::OutboundGap,
                        last_valid_seq,
                    })),
                ));
            }
        }
        live > 1
    }

    // ---- write jobs ---------------------------------------------------------------------

    /// Whether its job queue holds `limit` jobs (a job waiting to be written, or written and
    /// not yet reported done): new input is dropped ([INPUT.FRAME.3]) or refused
    /// ([INPUT.APPLY.8]).
    pub(super) fn jobs_full(&self, limit: usize) -> bool {
        self.jobs.len() >= limit
    }

    /// Queues a job behind every earlier one (R8), numbered from `next_job`: the `Write` to
    /// hand the driver. `None` when the queue holds `limit` jobs (the job is dropped;
    /// APPLY_INPUT checks [`Self::jobs_full`] first and refuses), or while an upgrade is
    /// pending (`hold`), when it waits with its bytes ([SERVER.UPGRADE.3]).
    pub(super) fn queue_job(
        &mut self,
        next_job: &mut u64,
        limit: usize,
        hold: bool,
        bytes: Vec<u8>,
        kind: JobKind,
    ) -> Option<ServerAction> {
        if self.jobs_full(limit) {
            return None;
        }
        let job = JobId(*next_job);
        *next_job += 1;
        self.jobs.push_back((job, kind));
        if hold {
            // [SERVER.UPGRADE.3] No new write job while an upgrade is pending: it waits.
            self.held.push_back((job, bytes));
            return None;
        }
        // [INPUT.CANON.1] Every job passes the canonical-line guard in the terminal's
        // `PtyWriter`, right before its first byte.
        Some(ServerAction::Write {
            terminal: self.id,
            job,
            bytes,
        })
    }

    /// The driver reported job `job` done: who is owed an answer. `None` for a job it does not
    /// hold (unknown, reported twice, or still held back): a driver bug, ignored.
    pub(super) fn complete_job(&mut self, job: JobId, outcome: WriteOutcome) -> Option<JobKind> {
        let pos = self.jobs.iter().position(|(j, _)| *j == job)?;
        if self.held.iter().any(|(j, _)| *j == job) {
            return None; // Not handed out yet.
        }
        let (_, kind) = self.jobs.remove(pos)?;
        if let WriteOutcome::CanonicalRefused { .. } = outcome {
            self.canonical = Some(true);
        }
        Some(kind)
    }

    /// Operation `op`'s completion bound passed: its job stays queued (its bytes may still be
    /// written) and its completion will be ignored. The request owed the answer, if the job is
    /// still there.
    pub(super) fn expire_acknowledged(&mut self, op: OperationId) -> Option<(ConnId, u32)> {
        let kind = self
            .jobs
            .iter_mut()
            .map(|(_, kind)| kind)
            .find(|kind| matches!(kind, JobKind::Acknowledged { op: o, .. } if *o == op))?;
        let JobKind::Acknowledged {
            conn, request_id, ..
        } = std::mem::replace(kind, JobKind::Unacknowledged)
        else {
            return None;
        };
        Some((conn, request_id))
    }

    /// The terminal goes away with the jobs the driver never reported: every job leaves, and
    /// each acknowledged one is owed an answer, unknown (its bytes may have been written) or
    /// not written (held back, never handed out).
    pub(super) fn drain_jobs(&mut self) -> Vec<Orphan> {
        let jobs: Vec<_> = self.jobs.drain(..).collect();
        let held: Vec<JobId> = self.held.drain(..).map(|(job, _)| job).collect();
        jobs.into_iter()
            .filter_map(|(job, kind)| match kind {
                JobKind::Acknowledged {
                    op,
                    conn,
                    request_id,
                } => Some(Orphan {
                    op,
                    conn,
                    request_id,
                    // A held job never reached the driver: none of its bytes were written.
                    outcome: if held.contains(&job) {
                        WriteOutcome::NotWritten
                    } else {
                        WriteOutcome::Unknown
                    },
                }),
                _ => None,
            })
            .collect()
    }

    /// The upgrade ended: every held job, in queue order, with whether it is acknowledged
    /// (its completion bound starts now).
    pub(super) fn release_held(&mut self) -> Vec<(JobId, Vec<u8>, bool)> {
        let jobs = &self.jobs;
        self.held
            .drain(..)
            .map(|(job, bytes)| {
                let acknowledged = jobs
                    .iter()
                    .any(|(j, kind)| *j == job && matches!(kind, JobKind::Acknowledged { .. }));
                (job, bytes, acknowledged)
            })
            .collect()
    }

    /// No job is with the driver: every job handed out was reported done (held ones are the
    /// engine's).
    pub(super) fn is_quiet(&self) -> bool {
        self.jobs.len() == self.held.len()
    }

    /// The held jobs are the newest of its jobs, as queueing leaves them (a restored state's
    /// invariant).
    pub(super) fn held_are_newest(&self) -> bool {
        let tail = self.jobs.len().checked_sub(self.held.len());
        tail.is_some_and(|tail| {
            self.jobs
                .iter()
                .skip(tail)
                .map(|(job, _)| job)
                .eq(self.held.iter().map(|(job, _)| job))
        })
    }
}
