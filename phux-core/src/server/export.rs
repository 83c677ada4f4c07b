//! The engine's whole state as data ([`EngineState`]), for an in-place upgrade: exported when
//! quiet, restored into a new engine that goes on exactly where the old one stopped.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::connection::Connection;
use super::pending_upgrade::PendingUpgrade;
use super::summary::{
    DeclaredViewport, StateSummary, TerminalCwd, check_connection, check_cwds, check_terminal,
    check_viewports,
};
use super::terminal::Terminal;
use super::{ConnId, LocalTerminal, ServerConfig, ServerEngine};
use crate::lane::AckLane;
use crate::lease::LeaseTable;
use crate::ledger::OperationLedger;
use crate::time::Instant;

/// Everything a [`ServerEngine`] knows, as plain data ([SERVER.UPGRADE.STATE.1]): every
/// connection (phase, HELLO state, the bytes its decoder holds, its queued bytes by budget,
/// negotiated limits, cell geometry, subscriptions, paused streams, handshake deadline), every
/// terminal (the VT model exactly, output seq, lifecycle, viewers with their stream and
/// bootstrap ids, subscribers, jobs in progress and held, the spawner owed a reply), the
/// dedupe ledger, the leases with their deadlines, the acknowledged-input lane, the id
/// counters, a pending upgrade's requester and the configuration, `server_id` included.
///
/// Instants are as the engine holds them (microseconds since the driver's epoch): the new
/// image must keep the same clock epoch.
///
/// Laid out in parts: what every state version holds ([`BaseState`], as version 1 laid it
/// out), then what version 4 added (the viewports the connections declared), then what version
/// 5 added (the terminals' working directories). Postcard writes a struct as its fields one
/// after the other, so a state of an earlier version is the parts it knew, in order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineState {
    base: BaseState,
    /// [SERVER.UPGRADE.STATE.6] Each connection's declared viewport, in connection id order.
    viewports: Vec<DeclaredViewport>,
    /// [SERVER.UPGRADE.STATE.7] Each terminal's working directory, in terminal id order.
    cwds: Vec<TerminalCwd>,
}

/// The part of [`EngineState`] every state version holds, in version 1's layout.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct BaseState {
    config: ServerConfig,
    conns: Vec<Connection>,
    queued: usize,
    handshakes: Vec<(Instant, ConnId)>,
    terminals: Vec<Terminal>,
    ledger: OperationLedger,
    leases: LeaseTable,
    lane: AckLane,
    next_client: u32,
    next_terminal: u32,
    next_stream: u64,
    next_job: u64,
    shutting_down: bool,
    upgrade: Option<PendingUpgrade>,
}

impl EngineState {
    /// A state read part by part from an image whose version knew fewer parts: those it did
    /// not know are empty (no connection declared a viewport, no terminal's directory is
    /// known until the driver reads it again).
    pub(crate) fn from_parts(
        base: BaseState,
        viewports: Vec<DeclaredViewport>,
        cwds: Vec<TerminalCwd>,
    ) -> Self {
        Self {
            base,
            viewports,
            cwds,
        }
    }
}

/// Why the engine cannot be exported now.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotQuiet {
    /// Actions wait to be drained by the driver.
    #[error("{count} actions are not drained")]
    ActionsQueued {
        /// How many.
        count: usize,
    },
    /// A write job is with the driver and not reported done.
    #[error("terminal {terminal} has input in progress")]
    WriteInProgress {
        /// The terminal.
        terminal: LocalTerminal,
    },
}

/// Why a state cannot become an engine.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The configuration names another server id: the incarnation must not change.
    #[error("the configuration's server id differs from the state's")]
    ServerIdChanged,
    /// The state breaks an invariant the engine relies on.
    #[error("inconsistent state: {0}")]
    Inconsistent(&'static str),
}

impl EngineState {
    /// The configuration the exporting engine ran with (its `server_id` is the one a restored
    /// engine must keep).
    pub fn config(&self) -> &ServerConfig {
        &self.base.config
    }

    /// The incarnation id.
    pub fn server_id(&self) -> &[u8] {
        &self.base.config.server_id
    }

    /// The connections, in id order.
    pub fn connections(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.base.conns.iter().map(Connection::id)
    }

    /// The terminals with their child's pid (`None` while the spawn is unanswered), in id
    /// order.
    pub fn terminals(&self) -> impl Iterator<Item = (LocalTerminal, Option<u32>)> + '_ {
        self.base.terminals.iter().map(|t| (t.id(), t.pid()))
    }

    /// The operations the dedupe ledger holds.
    pub fn ledger_len(&self) -> usize {
        self.base.ledger.len()
    }

    /// What a trial adoption keeps of it: the configuration, the ids, the pids, the ledger's
    /// size ([`StateSummary`], which an image is also read into one element at a time).
    pub fn summary(&self) -> StateSummary {
        let mut terminals: Vec<_> = self.terminals().collect();
        terminals.sort_unstable();
        let mut conns: Vec<_> = self.connections().collect();
        conns.sort_unstable();
        StateSummary::of(
            self.base.config.clone(),
            conns,
            terminals,
            self.base.ledger.len(),
        )
    }

    /// Whether an upgrade was pending at export (it is, for a state exported to upgrade).
    pub fn is_upgrading(&self) -> bool {
        self.base.upgrade.is_some()
    }
}

/// [`EngineState`] borrowed from a live engine: the same fields in the same order, so it
/// serializes to the same bytes without copying the engine first.
#[derive(Serialize)]
pub(crate) struct EngineStateRef<'a> {
    base: BaseStateRef<'a>,
    viewports: Vec<DeclaredViewport>,
    cwds: Vec<TerminalCwd>,
}

/// [`BaseState`] borrowed from a live engine.
#[derive(Serialize)]
struct BaseStateRef<'a> {
    config: &'a ServerConfig,
    conns: Vec<&'a Connection>,
    queued: usize,
    handshakes: &'a BTreeSet<(Instant, ConnId)>,
    terminals: Vec<&'a Terminal>,
    ledger: &'a OperationLedger,
    leases: &'a LeaseTable,
    lane: &'a AckLane,
    next_client: u32,
    next_terminal: u32,
    next_stream: u64,
    next_job: u64,
    shutting_down: bool,
    upgrade: &'a Option<PendingUpgrade>,
}

impl ServerEngine {
    /// Checks that the engine is quiet ([SERVER.UPGRADE.STATE.4]).
    pub(crate) fn check_quiet(&self) -> Result<(), NotQuiet> {
        if !self.actions.is_empty() {
            return Err(NotQuiet::ActionsQueued {
                count: self.actions.len(),
            });
        }
        if let Some(t) = self.terminals.values().find(|t| !t.is_quiet()) {
            return Err(NotQuiet::WriteInProgress { terminal: t.id() });
        }
        Ok(())
    }

    /// The live terminals, then the exited ones kept for their screen: an image holds both in
    /// one list (an exited one tells itself apart by its lifecycle).
    fn all_terminals(&self) -> impl Iterator<Item = &Terminal> + '_ {
        self.terminals.values().chain(self.remains.terminals())
    }

    /// The state borrowed from the engine, serialized as [`EngineState`] is.
    pub(crate) fn state_ref(&self) -> EngineStateRef<'_> {
        EngineStateRef {
            base: self.base_ref(),
            viewports: self.declared_viewports(),
            cwds: self.working_directories(),
        }
    }

    fn base_ref(&self) -> BaseStateRef<'_> {
        BaseStateRef {
            config: &self.config,
            conns: self.conns.values().collect(),
            queued: self.queued,
            handshakes: &self.handshakes,
            terminals: self.all_terminals().collect(),
            ledger: &self.ledger,
            leases: &self.leases,
            lane: &self.lane,
            next_client: self.next_client,
            next_terminal: self.next_terminal,
            next_stream: self.next_stream,
            next_job: self.next_job,
            shutting_down: self.shutting_down,
            upgrade: &self.upgrade,
        }
    }

    /// The whole state, once quiet: no action queued, no write job with the driver
    /// ([SERVER.UPGRADE.STATE.4]). Jobs held back by a pending upgrade are part of the state.
    pub fn export_state(&self) -> Result<EngineState, NotQuiet> {
        self.check_quiet()?;
        let base = BaseState {
            config: self.config.clone(),
            conns: self.conns.values().cloned().collect(),
            queued: self.queued,
            handshakes: self.handshakes.iter().copied().collect(),
            terminals: self.all_terminals().cloned().collect(),
            ledger: self.ledger.clone(),
            leases: self.leases.clone(),
            lane: self.lane.clone(),
            next_client: self.next_client,
            next_terminal: self.next_terminal,
            next_stream: self.next_stream,
            next_job: self.next_job,
            shutting_down: self.shutting_down,
            upgrade: self.upgrade.clone(),
        };
        Ok(EngineState {
            base,
            viewports: self.declared_viewports(),
            cwds: self.working_directories(),
        })
    }

    /// [SERVER.UPGRADE.STATE.7] The terminals' working directories, in id order.
    fn working_directories(&self) -> Vec<TerminalCwd> {
        let mut cwds: Vec<TerminalCwd> = self
            .all_terminals()
            .filter_map(|t| {
                Some(TerminalCwd {
                    terminal: t.id(),
                    cwd: t.cwd()?.to_owned(),
                })
            })
            .collect();
        cwds.sort_unstable_by_key(|c| c.terminal);
        cwds
    }

    /// [SERVER.UPGRADE.STATE.6] The viewports the connections declared, in id order.
    fn declared_viewports(&self) -> Vec<DeclaredViewport> {
        self.conns
            .values()
            .filter_map(|c| {
                let (cols, rows) = c.viewport()?;
                Some(DeclaredViewport {
                    conn: c.id(),
                    cols,
                    rows,
                })
            })
            .collect()
    }

    /// An engine that goes on exactly where the one that exported `state` stopped: every
    /// later event gives the same actions, byte for byte ([SERVER.UPGRADE.STATE.2]).
    /// `config` is the new image's; its `server_id` must be the state's.
    pub fn from_state(config: ServerConfig, state: EngineState) -> Result<Self, StateError> {
        let EngineState {
            base,
            viewports,
            cwds,
        } = state;
        if config.server_id != base.config.server_id {
            return Err(StateError::ServerIdChanged);
        }
        let mut conns = BTreeMap::new();
        for conn in base.conns {
            check_connection(&conn)?;
            if conns.insert(conn.id(), conn).is_some() {
                return Err(StateError::Inconsistent("a connection appears twice"));
            }
        }
        check_viewports(&viewports, |id| conns.contains_key(&id))?;
        for v in viewports {
            if let Some(conn) = conns.get_mut(&v.conn) {
                conn.restore_viewport(v.cols, v.rows);
            }
        }
        let ids: BTreeSet<LocalTerminal> = base.terminals.iter().map(Terminal::id).collect();
        check_cwds(&cwds, |id| ids.contains(&id))?;
        let mut cwds: BTreeMap<LocalTerminal, String> =
            cwds.into_iter().map(|c| (c.terminal, c.cwd)).collect();
        let mut terminals = BTreeMap::new();
        let mut remains = super::remains::Remains::default();
        for mut term in base.terminals {
            term.set_cwd(cwds.remove(&term.id()));
            // [TERMINAL.REMAIN.1] An exited terminal in the image is one kept for its screen
            // (a live one leaves the table the moment its child exits). The image says not
            // when it exited: its age restarts now.
            if term.lifecycle() == phux_proto::event::Lifecycle::Exited {
                if terminals.contains_key(&term.id()) || remains.contains(term.id()) {
                    return Err(StateError::Inconsistent("a terminal appears twice"));
                }
                term.measure();
                remains.restore(term);
                continue;
            }
            check_terminal(&term)?;
            term.measure();
            if remains.contains(term.id()) || terminals.insert(term.id(), term).is_some() {
                return Err(StateError::Inconsistent("a terminal appears twice"));
            }
        }
        let handshakes: BTreeSet<(Instant, ConnId)> = base.handshakes.into_iter().collect();
        Ok(Self {
            config,
            conns,
            queued: base.queued,
            shedding: false,
            handshakes,
            terminals,
            remains,
            ledger: base.ledger,
            leases: base.leases,
            lane: base.lane,
            actions: VecDeque::new(),
            next_client: base.next_client,
            next_terminal: base.next_terminal,
            next_stream: base.next_stream,
            next_job: base.next_job,
            shutting_down: base.shutting_down,
            upgrade: base.upgrade,
            pool: super::pool::BufferPool::default(),
            fanout_scratch: Vec::new(),
            models_budget: usize::MAX,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::summary::{Parts, SummaryFault, TerminalCwd, read_summary};
    use super::*;
    use crate::server::{PeerInfo, ServerEvent};

    const ALL: Parts = Parts {
        viewports: true,
        cwds: true,
    };

    fn read(state: &EngineState) -> Result<StateSummary, SummaryFault> {
        let bytes = postcard::to_stdvec(state).expect("serialize");
        let (summary, rest) = read_summary(&bytes, ALL)?;
        assert!(rest.is_empty());
        Ok(summary)
    }

    /// The state of a quiet engine with connections 1 and 2 and nothing else.
    fn two_connections() -> EngineState {
        let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
        let now = Instant::from_micros(0);
        for conn in [ConnId(1), ConnId(2)] {
            let peer = PeerInfo::local();
            engine.handle(now, ServerEvent::Connected { conn, peer });
        }
        while engine.poll_action().is_some() {}
        engine.export_state().expect("quiet")
    }

    #[test]
    fn a_state_read_one_element_at_a_time_gets_from_states_verdict() {
        // [SERVER.UPGRADE.EXEC.12] The trial's reader keeps the ids and counts, and refuses
        // what `from_state` refuses, for the same reason.
        let state = two_connections();
        let summary = read(&state).expect("a good state");
        let whole = state.summary();
        assert_eq!(
            summary.connections().collect::<Vec<_>>(),
            [ConnId(1), ConnId(2)]
        );
        assert_eq!(
            summary.connections().collect::<Vec<_>>(),
            whole.connections().collect::<Vec<_>>()
        );
        assert_eq!(summary.ledger_len(), whole.ledger_len());
        assert_eq!(summary.config().server_id, [7; 16]);

        let mut twice = state.clone();
        twice.base.conns.push(twice.base.conns[0].clone());
        let why = StateError::Inconsistent("a connection appears twice");
        assert_eq!(read(&twice).err(), Some(SummaryFault::State(why.clone())));
        let config = twice.base.config.clone();
        assert_eq!(ServerEngine::from_state(config, twice).err(), Some(why));

        let mut bytes = postcard::to_stdvec(&state).expect("serialize");
        bytes.truncate(bytes.len() - 1);
        assert!(matches!(
            read_summary(&bytes, ALL),
            Err(SummaryFault::Corrupt(_))
        ));
    }

    #[test]
    fn declared_viewports_are_read_and_refused_alike_by_both_readers() {
        // [SERVER.UPGRADE.STATE.6] [SERVER.UPGRADE.EXEC.12]
        let mut state = two_connections();
        assert!(state.viewports.is_empty());
        let v = |conn, cols, rows| DeclaredViewport {
            conn: ConnId(conn),
            cols,
            rows,
        };
        state.viewports = vec![v(1, 80, 24), v(2, 100, 30)];
        assert!(read(&state).is_ok());
        let config = state.base.config.clone();
        let restored = ServerEngine::from_state(config.clone(), state.clone()).expect("restores");
        assert_eq!(
            restored.export_state().expect("quiet").viewports,
            state.viewports
        );
        // Without its viewports (a version 1 to 3 image), the base part reads alone.
        let base = postcard::to_stdvec(&state.base).expect("serialize");
        let (summary, rest) = read_summary(
            &base,
            Parts {
                viewports: false,
                cwds: false,
            },
        )
        .expect("the base part");
        assert!(rest.is_empty());
        assert_eq!(summary.connections().count(), 2);

        for (bad, why) in [
            (
                vec![v(3, 80, 24)],
                "a declared viewport names an unknown connection",
            ),
            (vec![v(1, 0, 24)], "a declared viewport is empty"),
            (
                vec![v(2, 80, 24), v(1, 80, 24)],
                "declared viewports are not one per connection in id order",
            ),
            (
                vec![v(1, 80, 24), v(1, 80, 24)],
                "declared viewports are not one per connection in id order",
            ),
        ] {
            let mut broken = state.clone();
            broken.viewports = bad;
            let why = StateError::Inconsistent(why);
            assert_eq!(read(&broken).err(), Some(SummaryFault::State(why.clone())));
            let refused = ServerEngine::from_state(config.clone(), broken).err();
            assert_eq!(refused, Some(why));
        }
    }

    #[test]
    fn working_directories_are_carried_and_refused_alike_by_both_readers() {
        // [SERVER.UPGRADE.STATE.7] [SCREEN.SERVER.2]
        let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
        let now = Instant::from_micros(0);
        let terminal = LocalTerminal(1);
        let mut term = Terminal::new(terminal, 20, 6, 0, (ConnId(1), 1));
        assert!(term.spawned(42));
        term.set_cwd(Some("/spawned/here".into()));
        engine.terminals.insert(terminal, term);
        let state = engine.export_state().expect("quiet");
        let cwd = |terminal, cwd: &str| TerminalCwd {
            terminal: LocalTerminal(terminal),
            cwd: cwd.into(),
        };
        assert_eq!(state.cwds, [cwd(1, "/spawned/here")]);
        engine.handle(
            now,
            ServerEvent::WorkingDirectory {
                terminal,
                cwd: Some("/moved".into()),
            },
        );
        let state = engine.export_state().expect("quiet");
        assert_eq!(state.cwds, [cwd(1, "/moved")]);
        assert!(read(&state).is_ok());
        let config = state.base.config.clone();
        let restored = ServerEngine::from_state(config.clone(), state.clone()).expect("restores");
        assert_eq!(
            restored.snapshot().terminals[0].cwd.as_deref(),
            Some("/moved")
        );

        let long = "/".repeat(crate::server::MAX_CWD_LEN + 1);
        for (bad, why) in [
            (
                vec![cwd(2, "/x")],
                "a working directory names an unknown terminal",
            ),
            (vec![cwd(1, &long)], "a working directory is too long"),
            (
                vec![cwd(1, "/x"), cwd(1, "/y")],
                "working directories are not one per terminal in id order",
            ),
        ] {
            let mut broken = state.clone();
            broken.cwds = bad;
            let why = StateError::Inconsistent(why);
            assert_eq!(read(&broken).err(), Some(SummaryFault::State(why.clone())));
            let refused = ServerEngine::from_state(config.clone(), broken).err();
            assert_eq!(refused, Some(why));
        }
    }
}
