//! A trial adoption's reading of an engine's state ([`StateSummary`]): the bytes of
//! [`EngineState`] read with the real types, one connection and one terminal at a time, each
//! checked as [`ServerEngine::from_state`] checks it and then dropped, so that what a reader
//! holds is the largest single element and the ids, pids and flags it keeps, never the whole
//! state.
//!
//! [`EngineState`]: super::EngineState
//! [`ServerEngine::from_state`]: super::ServerEngine::from_state

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use phux_proto::event::Lifecycle;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};

use super::StateError;
use super::connection::Connection;
use super::pending_upgrade::PendingUpgrade;
use super::terminal::Terminal;
use super::{ConnId, LocalTerminal, ServerConfig};
use crate::lane::AckLane;
use crate::lease::LeaseTable;
use crate::ledger::OperationLedger;
use crate::time::Instant;

/// What a trial adoption keeps of an engine's state: the configuration, the connections' ids,
/// the terminals' ids and pids, and the ledger's size; read from an image by
/// [`crate::upgrade::summarize_image`] with every check an adoption makes of each element.
#[derive(Clone, Debug)]
pub struct StateSummary {
    config: ServerConfig,
    conns: Vec<ConnId>,
    terminals: Vec<(LocalTerminal, Option<u32>)>,
    ledger: usize,
}

impl StateSummary {
    /// A summary of these, as [`EngineState::summary`](super::EngineState::summary) makes one.
    pub(super) fn of(
        config: ServerConfig,
        conns: Vec<ConnId>,
        terminals: Vec<(LocalTerminal, Option<u32>)>,
        ledger: usize,
    ) -> Self {
        Self {
            config,
            conns,
            terminals,
            ledger,
        }
    }

    /// The configuration the exporting engine ran with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The connections, in id order.
    pub fn connections(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.conns.iter().copied()
    }

    /// The terminals with their child's pid (`None` while the spawn is unanswered), in id
    /// order, the exited ones kept for their screen included.
    pub fn terminals(&self) -> impl Iterator<Item = (LocalTerminal, Option<u32>)> + '_ {
        self.terminals.iter().copied()
    }

    /// The operations the dedupe ledger holds.
    pub fn ledger_len(&self) -> usize {
        self.ledger
    }
}

/// The size of its screen a connection declared with VIEWPORT_RESIZE ([SERVER.SIZE.1]), as an
/// image carries it ([SERVER.UPGRADE.STATE.6]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct DeclaredViewport {
    pub(crate) conn: ConnId,
    pub(crate) cols: u16,
    pub(crate) rows: u16,
}

/// The fields of `EngineState`'s base part, in order (postcard reads a struct as the tuple of its fields).
const FIELDS: &[&str] = &[
    "config",
    "conns",
    "queued",
    "handshakes",
    "terminals",
    "ledger",
    "leases",
    "lane",
    "next_client",
    "next_terminal",
    "next_stream",
    "next_job",
    "shutting_down",
    "upgrade",
];

/// Why [`read_summary`] could not read a summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SummaryFault {
    /// The bytes do not decode.
    Corrupt(String),
    /// They decode, and break a rule `from_state` keeps.
    State(StateError),
}

/// Reads what a trial adoption keeps of the engine's state from the start of `bytes` (an
/// image's body, laid out as `EngineState`, or as its base part alone when the image's
/// version knew no `viewports`); the bytes after it.
pub(crate) fn read_summary(
    bytes: &[u8],
    viewports: bool,
) -> Result<(StateSummary, &[u8]), SummaryFault> {
    // A broken rule is told through the decoder as a bare error (postcard keeps no text):
    // its reason waits here.
    let why = Cell::new(None);
    let mut de = postcard::Deserializer::from_bytes(bytes);
    let read = (StateSeed { why: &why })
        .deserialize(&mut de)
        .and_then(|summary| {
            if viewports {
                // [SERVER.UPGRADE.STATE.6] Read and checked as `from_state` checks them.
                let declared = Vec::<DeclaredViewport>::deserialize(&mut de)?;
                check_viewports(&declared, |id| summary.conns.binary_search(&id).is_ok())
                    .map_err(|e| broken::<postcard::Error>(&why, e))?;
            }
            Ok(summary)
        });
    match read {
        Ok(summary) => {
            let rest = de
                .finalize()
                .map_err(|e| SummaryFault::Corrupt(e.to_string()))?;
            Ok((summary, rest))
        }
        Err(e) => Err(match why.take() {
            Some(broken) => SummaryFault::State(broken),
            None => SummaryFault::Corrupt(e.to_string()),
        }),
    }
}

/// A rule `from_state` keeps for each connection: a cell size it can divide by.
pub(super) fn check_connection(conn: &Connection) -> Result<(), StateError> {
    let cells = conn.cells();
    if cells.cell_width_px == 0 || cells.cell_height_px == 0 {
        return Err(StateError::Inconsistent("a connection's cell size is zero"));
    }
    Ok(())
}

/// The rules `from_state` keeps for the declared viewports: each names a connection of the
/// state, once, in id order, with a size of at least one cell each way (as VIEWPORT_RESIZE
/// leaves it).
pub(super) fn check_viewports(
    viewports: &[DeclaredViewport],
    known: impl Fn(ConnId) -> bool,
) -> Result<(), StateError> {
    if viewports.windows(2).any(|w| w[0].conn >= w[1].conn) {
        return Err(StateError::Inconsistent(
            "declared viewports are not one per connection in id order",
        ));
    }
    for v in viewports {
        if !known(v.conn) {
            return Err(StateError::Inconsistent(
                "a declared viewport names an unknown connection",
            ));
        }
        if v.cols == 0 || v.rows == 0 {
            return Err(StateError::Inconsistent("a declared viewport is empty"));
        }
    }
    Ok(())
}

/// A rule `from_state` keeps for each terminal: a live one's held jobs are its newest (an
/// exited one kept for its screen has none to write).
pub(super) fn check_terminal(term: &Terminal) -> Result<(), StateError> {
    if term.lifecycle() != Lifecycle::Exited && !term.held_are_newest() {
        return Err(StateError::Inconsistent(
            "held jobs are not the newest of a terminal's jobs",
        ));
    }
    Ok(())
}

/// A broken rule: its reason kept for [`read_summary`], an error for the decoder.
fn broken<E: de::Error>(why: &Cell<Option<StateError>>, e: StateError) -> E {
    let text = e.to_string();
    why.set(Some(e));
    E::custom(text)
}

/// The state's layout, read into a [`StateSummary`].
struct StateSeed<'w> {
    why: &'w Cell<Option<StateError>>,
}

impl<'de> DeserializeSeed<'de> for StateSeed<'_> {
    type Value = StateSummary;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<StateSummary, D::Error> {
        d.deserialize_struct("EngineState", FIELDS, self)
    }
}

/// The next field of the state, or an error naming which one is missing.
fn field<'de, A: SeqAccess<'de>, T: Deserialize<'de>>(
    seq: &mut A,
    at: usize,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| de::Error::invalid_length(at, &"the fields of an engine's state"))
}

impl<'de> Visitor<'de> for StateSeed<'_> {
    type Value = StateSummary;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an engine's state")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StateSummary, A::Error> {
        let config: ServerConfig = field(&mut seq, 0)?;
        let conns = seq
            .next_element_seed(Conns { why: self.why })?
            .ok_or_else(|| de::Error::invalid_length(1, &"the fields of an engine's state"))?;
        let _queued: usize = field(&mut seq, 2)?;
        let _handshakes: Vec<(Instant, ConnId)> = field(&mut seq, 3)?;
        let terminals = seq
            .next_element_seed(Terminals { why: self.why })?
            .ok_or_else(|| de::Error::invalid_length(4, &"the fields of an engine's state"))?;
        // The rest is small beside the terminals and connections (the ledger is bounded by
        // its capacity): read whole, as an adoption reads it, and dropped.
        let ledger: OperationLedger = field(&mut seq, 5)?;
        let ledger = ledger.len();
        let _leases: LeaseTable = field(&mut seq, 6)?;
        let _lane: AckLane = field(&mut seq, 7)?;
        let _next_client: u32 = field(&mut seq, 8)?;
        let _next_terminal: u32 = field(&mut seq, 9)?;
        let _next_stream: u64 = field(&mut seq, 10)?;
        let _next_job: u64 = field(&mut seq, 11)?;
        let _shutting_down: bool = field(&mut seq, 12)?;
        let _upgrade: Option<PendingUpgrade> = field(&mut seq, 13)?;
        Ok(StateSummary {
            config,
            conns,
            terminals,
            ledger,
        })
    }
}

/// The connections, one at a time: checked, their id kept.
struct Conns<'w> {
    why: &'w Cell<Option<StateError>>,
}

impl<'de> DeserializeSeed<'de> for Conns<'_> {
    type Value = Vec<ConnId>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Conns<'_> {
    type Value = Vec<ConnId>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an engine's connections")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(conn) = seq.next_element::<Connection>()? {
            check_connection(&conn).map_err(|e| broken(self.why, e))?;
            if !seen.insert(conn.id()) {
                let twice = StateError::Inconsistent("a connection appears twice");
                return Err(broken(self.why, twice));
            }
        }
        Ok(seen.into_iter().collect())
    }
}

/// The terminals, one at a time: checked, their id and pid kept.
struct Terminals<'w> {
    why: &'w Cell<Option<StateError>>,
}

impl<'de> DeserializeSeed<'de> for Terminals<'_> {
    type Value = Vec<(LocalTerminal, Option<u32>)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Terminals<'_> {
    type Value = Vec<(LocalTerminal, Option<u32>)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an engine's terminals")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut seen = BTreeMap::new();
        while let Some(term) = seq.next_element::<Terminal>()? {
            check_terminal(&term).map_err(|e| broken(self.why, e))?;
            if seen.insert(term.id(), term.pid()).is_some() {
                let twice = StateError::Inconsistent("a terminal appears twice");
                return Err(broken(self.why, twice));
            }
        }
        Ok(seen.into_iter().collect())
    }
}
