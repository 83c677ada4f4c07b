//! The operation ledger: APPLY_INPUT dedupe by operation id.
//!
//! A client names every acknowledged input operation with a random 128-bit
//! [`OperationId`] and may send it again after a timeout or a reconnect. The ledger makes the
//! retry safe: it binds each id to the digest of its canonical payload at first admission and
//! remembers the final result, so a retry never writes twice and a reused id with another
//! payload is refused. Records live for [`HORIZON`] from their first admission; at most
//! [`CAPACITY`] are kept, and a full ledger refuses unseen ids rather than forget a live one.
//!
//! So that one client cannot take the whole ledger from the others, a record counts against
//! the share of the client whose request created it ([`SHARE`] records at most once the
//! ledger is half full), and a request refused before its job reached a terminal leaves no
//! record ([`OperationLedger::forget`]).
//!
//! The caller computes the digest (SHA-256 of the canonical `{terminal_id, events}` payload);
//! the ledger only compares digests.
//!
//! # Life of a record
//!
//! ```text
//!  admit ─Fresh─▶ Bound ──handed_off──▶ InFlight ──complete──▶ Final(result)
//!                  ▲  │                                          │
//!    admit ─Rebound┘  ├─release (pre-handoff refusal, kept)        └─ admit ─▶ Cached(result)
//!                     └─forget (pre-handoff refusal of a fresh id: no record)
//! ```
//!
//! Every record is pruned [`HORIZON`] after its first admission, lazily, in admission order,
//! by `admit` and `handle_timeout` (the driver calls the latter at `poll_timeout()`). A record
//! still in flight at its horizon is kept until its completion arrives, then dropped: forgetting
//! it earlier would let a retry write the same bytes a second time.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use phux_proto::{ErrorCode, OperationId};

use crate::writer::WriteOutcome;

use crate::time::Instant;

/// How long a record lives, measured from the operation's first admission (phux 0.8: 600 s).
pub const HORIZON: Duration = Duration::from_mins(10);

/// How many records the ledger holds at most (phux 0.8: 65,536 live entries).
pub const CAPACITY: usize = 65_536;

/// How many records the requests of one client may hold once the ledger is half full: an
/// eighth of it, some 14 operations a second for the whole horizon. Below half, a client may
/// take more, so one client can hold half the ledger at most and never the whole.
pub const SHARE: usize = CAPACITY / 8;

/// Who created a record: the engine's id for the client, counted against [`SHARE`].
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
pub struct Owner(pub u32);

/// SHA-256 of an operation's canonical payload. Computed by the caller, compared here.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct PayloadDigest(pub [u8; 32]);

/// Where one operation stands.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum OperationState {
    /// Bound to its digest without a result: not handed off yet, or refused before handoff.
    Bound,
    /// Handed to the PTY writer; the result is pending.
    InFlight,
    /// Decided; the result is replayed to every retry.
    Final(WriteOutcome),
}

/// A copy of one record, for inspection.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct LedgerEntry {
    /// The payload digest the id is bound to.
    pub digest: PayloadDigest,
    /// The first admission; the horizon counts from here.
    pub admitted_at: Instant,
    /// Where the operation stands.
    pub state: OperationState,
}

/// What an admitted operation should do next.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Admission {
    /// An unseen id, now bound: evaluate and, if accepted, hand off.
    Fresh,
    /// A known id with the same payload and no result (refused before handoff last time):
    /// evaluate again from scratch.
    Rebound,
    /// A known id whose job is with the writer: write nothing; the result is still pending.
    InFlight,
    /// A known id with a final result: reply with it verbatim and write nothing.
    Cached(WriteOutcome),
}

/// Why an admission was refused. Neither refusal is cached.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerRefusal {
    /// The id is bound to a different payload.
    #[error("APPLY_INPUT operation id reused with a different payload")]
    DigestMismatch,
    /// The id is unseen and the ledger holds `capacity` unexpired records.
    #[error("acknowledged-input dedupe cache is full")]
    Full,
    /// The id is unseen and the requesting client's records fill its share.
    #[error("this client's share of the acknowledged-input dedupe cache is full")]
    ShareFull,
}

impl LedgerRefusal {
    /// The wire error code for the COMMAND_RESULT.
    pub fn code(self) -> ErrorCode {
        match self {
            Self::DigestMismatch => ErrorCode::INVALID_COMMAND,
            Self::Full | Self::ShareFull => ErrorCode::RESOURCE_EXHAUSTED,
        }
    }
}

/// A call the ledger's state does not allow: a bug in the caller, never a peer's doing.
///
/// The ledger is left unchanged by a refused call, so the first result recorded wins.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerMisuse {
    /// No record for this id (never admitted, or pruned).
    #[error("operation {id} is not in the ledger")]
    Unknown {
        /// The operation.
        id: OperationId,
    },
    /// `handed_off` or `release` on an operation that is no longer merely bound.
    #[error("operation {id} is {state:?}, not bound")]
    NotBound {
        /// The operation.
        id: OperationId,
        /// Where it stands.
        state: OperationState,
    },
    /// `complete` on an operation that is not in flight: a duplicate or late completion.
    #[error("operation {id} is {state:?}, not in flight")]
    NotInFlight {
        /// The operation.
        id: OperationId,
        /// Where it stands.
        state: OperationState,
    },
}

/// The APPLY_INPUT dedupe ledger. See the [module docs](self).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct OperationLedger {
    // SipHash with a per-process key: ids are chosen by peers, so a keyed hash keeps a client
    // from flooding one bucket. Iteration order never leaves this type.
    #[serde(with = "sorted_map")]
    records: HashMap<OperationId, Record>,
    // Every record that still has a horizon to reach, in admission order (oldest first).
    // Records only leave from the front, so the queue and the map never disagree.
    order: VecDeque<(Instant, OperationId)>,
    // Records held per owner; an owner with none has no entry.
    #[serde(with = "sorted_map")]
    owned: HashMap<Owner, usize>,
    capacity: usize,
    share: usize,
    horizon: Duration,
    // The latest `now` seen. Admission times never go backwards, which keeps `order` sorted.
    clock: Instant,
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Record {
    digest: PayloadDigest,
    owner: Owner,
    admitted_at: Instant,
    state: OperationState,
    // Past its horizon while in flight: no longer in `order`, dropped at completion.
    overdue: bool,
}

impl Default for OperationLedger {
    fn default() -> Self {
        Self::new()
    }
}

impl OperationLedger {
    /// A ledger with the phux limits: [`CAPACITY`] records, [`HORIZON`] retention, and our
    /// [`SHARE`] per client.
    pub fn new() -> Self {
        Self::with_limits(CAPACITY, HORIZON).with_share(SHARE)
    }

    /// A ledger with other limits (tests use small ones), one owner may take every record.
    /// Nothing is allocated up front.
    pub fn with_limits(capacity: usize, horizon: Duration) -> Self {
        Self {
            records: HashMap::new(),
            order: VecDeque::new(),
            owned: HashMap::new(),
            capacity,
            share: capacity,
            horizon,
            clock: Instant::ZERO,
        }
    }

    /// The same ledger with at most `share` records per owner.
    #[must_use]
    pub fn with_share(mut self, share: usize) -> Self {
        self.share = share;
        self
    }

    /// How many records one owner may hold.
    pub fn share(&self) -> usize {
        self.share
    }

    /// How many records `owner` holds.
    pub fn owned_by(&self, owner: Owner) -> usize {
        self.owned.get(&owner).copied().unwrap_or(0)
    }

    // ---- getters ----

    /// How many records are held (bound, in flight, final, or in flight past the horizon).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The most records this ledger holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How long a record lives after its first admission.
    pub fn horizon(&self) -> Duration {
        self.horizon
    }

    /// The record for `id`, if held. Pruning is lazy: a record past its horizon is still
    /// reported until the next `admit` or `handle_timeout`.
    pub fn get(&self, id: &OperationId) -> Option<LedgerEntry> {
        self.records.get(id).map(|r| LedgerEntry {
            digest: r.digest,
            admitted_at: r.admitted_at,
            state: r.state,
        })
    }

    /// An estimate of the heap bytes held by the ledger's tables, from their allocated
    /// capacities (hashbrown: one control byte per bucket plus a group of trailing bytes).
    pub fn heap_bytes(&self) -> usize {
        let map_items = self.records.capacity();
        let map_bytes = if map_items == 0 {
            0
        } else {
            // hashbrown keeps at most 7/8 of its buckets full; bucket counts are powers of two.
            let buckets = (map_items.saturating_mul(8) / 7).next_power_of_two();
            let slot = size_of::<(OperationId, Record)>() + 1;
            buckets.saturating_mul(slot) + 16
        };
        let order_bytes = self
            .order
            .capacity()
            .saturating_mul(size_of::<(Instant, OperationId)>());
        map_bytes + order_bytes
    }

    // ---- timers ----

    /// When the oldest record reaches its horizon; call `handle_timeout` then.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.order.front().map(|&(at, _)| at + self.horizon)
    }

    /// Prunes every record whose horizon has passed. Spurious calls are harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clock = self.clock.max(now);
        self.prune();
    }

    // ---- commands ----

    /// Admits an APPLY_INPUT operation: binds an unseen id, or says what a retry should do.
    pub fn admit(
        &mut self,
        now: Instant,
        owner: Owner,
        id: OperationId,
        digest: PayloadDigest,
    ) -> Result<Admission, LedgerRefusal> {
        self.clock = self.clock.max(now);
        // [INPUT.DEDUPE.4] expired records go first, so an id past its horizon is unseen again
        // and a full ledger frees what it may before refusing.
        self.prune();
        let full = self.records.len() >= self.capacity;
        // Shares bind only once the ledger is half full: a busy client on a quiet server is
        // not held back, and however many records one client took before, the others find
        // at least half of the ledger theirs.
        let pressed = self.records.len() >= self.capacity / 2;
        let slot = match self.records.entry(id) {
            Entry::Occupied(known) => {
                let record = known.get();
                // [INPUT.DEDUPE.3] an id is bound to one payload for its whole horizon.
                if record.digest != digest {
                    return Err(LedgerRefusal::DigestMismatch);
                }
                // [INPUT.DEDUPE.2] a known id never writes again: replay, wait, or re-evaluate.
                return Ok(match record.state {
                    OperationState::Bound => Admission::Rebound,
                    OperationState::InFlight => Admission::InFlight,
                    OperationState::Final(result) => Admission::Cached(result),
                });
            }
            Entry::Vacant(slot) => slot,
        };
        // [INPUT.DEDUPE.5] no eviction: an unseen id waits for a record to expire.
        if full {
            return Err(LedgerRefusal::Full);
        }
        let owned = self.owned.entry(owner).or_insert(0);
        // [INPUT.DEDUPE.12] one client's requests hold at most its share of the records.
        if pressed && *owned >= self.share {
            if *owned == 0 {
                self.owned.remove(&owner);
            }
            return Err(LedgerRefusal::ShareFull);
        }
        *owned += 1;
        // [INPUT.DEDUPE.1] the binding is made at first admission; the horizon counts from here.
        let admitted_at = self.clock;
        slot.insert(Record {
            digest,
            owner,
            admitted_at,
            state: OperationState::Bound,
            overdue: false,
        });
        self.order.push_back((admitted_at, id));
        Ok(Admission::Fresh)
    }

    /// Records that a bound operation's job was handed to the PTY writer.
    pub fn handed_off(&mut self, id: OperationId) -> Result<(), LedgerMisuse> {
        let record = self
            .records
            .get_mut(&id)
            .ok_or(LedgerMisuse::Unknown { id })?;
        match record.state {
            OperationState::Bound => {
                record.state = OperationState::InFlight;
                Ok(())
            }
            state => Err(LedgerMisuse::NotBound { id, state }),
        }
    }

    /// Records the writer's final result for an in-flight operation.
    ///
    /// Only an in-flight operation completes. A second completion (for example the writer's
    /// late report after the completion deadline already recorded `DeliveryUnknown`) is
    /// refused as [`LedgerMisuse::NotInFlight`] and changes nothing: the first result stands.
    pub fn complete(&mut self, id: OperationId, result: WriteOutcome) -> Result<(), LedgerMisuse> {
        let record = self
            .records
            .get_mut(&id)
            .ok_or(LedgerMisuse::Unknown { id })?;
        if record.state != OperationState::InFlight {
            return Err(LedgerMisuse::NotInFlight {
                id,
                state: record.state,
            });
        }
        if record.overdue {
            // Past its horizon: it was kept only so retries could not write while in flight.
            self.remove(id);
        } else {
            // [INPUT.DEDUPE.7] OK, 205, 206 and writer-side 207 are final and replayed.
            record.state = OperationState::Final(result);
        }
        Ok(())
    }

    /// Records that the evaluation `admit` started ended in a refusal before handoff.
    ///
    /// [INPUT.DEDUPE.6] only the id→digest binding remains, so the same payload is evaluated
    /// again later and another payload under the id is refused. The record is already bound,
    /// so this changes nothing; it exists so every admission's outcome is stated, and it
    /// catches a release of a job the writer already holds (only `complete` resolves that).
    pub fn release(&mut self, id: OperationId) -> Result<(), LedgerMisuse> {
        let record = self.records.get(&id).ok_or(LedgerMisuse::Unknown { id })?;
        match record.state {
            OperationState::Bound => Ok(()),
            state => Err(LedgerMisuse::NotBound { id, state }),
        }
    }

    /// Undoes the admission of an unseen id (`admit` said [`Admission::Fresh`]) whose request
    /// was refused before its job reached a terminal: no record remains, as if the id had
    /// never been seen, so refused requests occupy nothing ([INPUT.DEDUPE.9]).
    pub fn forget(&mut self, id: OperationId) -> Result<(), LedgerMisuse> {
        let record = self.records.get(&id).ok_or(LedgerMisuse::Unknown { id })?;
        if record.state != OperationState::Bound {
            return Err(LedgerMisuse::NotBound {
                id,
                state: record.state,
            });
        }
        let entry = (record.admitted_at, id);
        self.remove(id);
        // Admitted last, the record is the queue's last entry whenever the engine forgets it,
        // so the search from the back ends at once.
        if let Some(i) = self.order.iter().rposition(|e| *e == entry) {
            self.order.remove(i);
        }
        Ok(())
    }

    /// Drops a record and its owner's count.
    fn remove(&mut self, id: OperationId) {
        let Some(record) = self.records.remove(&id) else {
            return;
        };
        if let Entry::Occupied(mut owned) = self.owned.entry(record.owner) {
            *owned.get_mut() -= 1;
            if *owned.get() == 0 {
                owned.remove();
            }
        }
    }

    // [INPUT.DEDUPE.4] FIFO by admission: the queue is sorted, so stop at the first live one.
    fn prune(&mut self) {
        while let Some(&(at, id)) = self.order.front() {
            if at + self.horizon > self.clock {
                break;
            }
            self.order.pop_front();
            match self.records.get_mut(&id) {
                Some(record) if record.state == OperationState::InFlight => record.overdue = true,
                Some(_) => self.remove(id),
                None => {}
            }
        }
    }
}

/// `#[serde(with = "sorted_map")]` for a `HashMap`: written in key order, so
/// the same state always makes the same image (a hash map's order differs between processes).
mod sorted_map {
    use std::collections::HashMap;
    use std::hash::Hash;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<K, V, S>(map: &HashMap<K, V>, s: S) -> Result<S::Ok, S::Error>
    where
        K: Serialize + Ord,
        V: Serialize,
        S: Serializer,
    {
        let mut entries: Vec<(&K, &V)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        entries.serialize(s)
    }

    pub(super) fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let entries = Vec::<(K, V)>::deserialize(d)?;
        let len = entries.len();
        let map: HashMap<K, V> = entries.into_iter().collect();
        if map.len() == len {
            Ok(map)
        } else {
            Err(D::Error::custom("a key appears twice"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Owner = Owner(1);

    fn op(n: u128) -> OperationId {
        OperationId::from_u128(n).unwrap()
    }

    fn dg(n: u8) -> PayloadDigest {
        PayloadDigest([n; 32])
    }

    fn t(secs: u64) -> Instant {
        Instant::from_millis(secs * 1000)
    }

    #[test]
    fn input_dedupe_1_first_admission_binds_fresh() {
        let mut l = OperationLedger::new();
        assert_eq!(l.admit(t(0), ME, op(1), dg(1)), Ok(Admission::Fresh));
        assert_eq!(
            l.get(&op(1)),
            Some(LedgerEntry {
                digest: dg(1),
                admitted_at: t(0),
                state: OperationState::Bound
            })
        );
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn input_dedupe_2_retry_replays_final_result_and_waits_while_in_flight() {
        let mut l = OperationLedger::new();
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        l.handed_off(op(1)).unwrap();
        assert_eq!(l.admit(t(1), ME, op(1), dg(1)), Ok(Admission::InFlight));
        l.complete(op(1), WriteOutcome::Written).unwrap();
        assert_eq!(
            l.admit(t(2), ME, op(1), dg(1)),
            Ok(Admission::Cached(WriteOutcome::Written))
        );
        // Every final result is replayed verbatim, including the limit of a 206.
        for (n, result) in [
            (2, WriteOutcome::Unknown),
            (3, WriteOutcome::CanonicalRefused { limit: 4096 }),
            (4, WriteOutcome::NotWritten),
        ] {
            l.admit(t(3), ME, op(n), dg(1)).unwrap();
            l.handed_off(op(n)).unwrap();
            l.complete(op(n), result).unwrap();
            assert_eq!(
                l.admit(t(4), ME, op(n), dg(1)),
                Ok(Admission::Cached(result))
            );
        }
    }

    #[test]
    fn input_dedupe_3_same_id_other_payload_is_invalid_command() {
        let mut l = OperationLedger::new();
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        let refusal = l.admit(t(1), ME, op(1), dg(2)).unwrap_err();
        assert_eq!(refusal, LedgerRefusal::DigestMismatch);
        assert_eq!(refusal.code(), ErrorCode::INVALID_COMMAND);
        // Also once final: the binding outlives the result's replay.
        l.handed_off(op(1)).unwrap();
        l.complete(op(1), WriteOutcome::Written).unwrap();
        assert_eq!(
            l.admit(t(2), ME, op(1), dg(2)),
            Err(LedgerRefusal::DigestMismatch)
        );
        // The refusal did not disturb the record.
        assert_eq!(
            l.admit(t(3), ME, op(1), dg(1)),
            Ok(Admission::Cached(WriteOutcome::Written))
        );
    }

    #[test]
    fn input_dedupe_4_horizon_counts_from_first_admission() {
        let mut l = OperationLedger::new();
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        assert_eq!(l.poll_timeout(), Some(t(600)));
        // A rebind does not extend the horizon.
        assert_eq!(l.admit(t(599), ME, op(1), dg(1)), Ok(Admission::Rebound));
        assert_eq!(l.poll_timeout(), Some(t(600)));
        l.handle_timeout(t(599));
        assert_eq!(l.len(), 1);
        l.handle_timeout(t(600));
        assert!(l.is_empty());
        assert_eq!(l.poll_timeout(), None);
        // Past the horizon the id is unseen: a new payload under it is fresh, not a mismatch.
        assert_eq!(l.admit(t(601), ME, op(1), dg(2)), Ok(Admission::Fresh));
    }

    #[test]
    fn input_dedupe_4_pruning_is_fifo_and_lazy_at_admit() {
        let mut l = OperationLedger::with_limits(10, Duration::from_secs(10));
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        l.admit(t(5), ME, op(2), dg(1)).unwrap();
        assert_eq!(l.poll_timeout(), Some(t(10)));
        // No handle_timeout: the next admission prunes.
        l.admit(t(12), ME, op(3), dg(1)).unwrap();
        assert_eq!(l.get(&op(1)), None);
        assert!(l.get(&op(2)).is_some());
        assert_eq!(l.poll_timeout(), Some(t(15)));
    }

    #[test]
    fn input_dedupe_4_in_flight_record_outlives_horizon_until_completion() {
        let mut l = OperationLedger::with_limits(10, Duration::from_secs(10));
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        l.handed_off(op(1)).unwrap();
        l.handle_timeout(t(20));
        // A retry must not write while the first job may still be written.
        assert_eq!(l.admit(t(21), ME, op(1), dg(1)), Ok(Admission::InFlight));
        assert_eq!(l.poll_timeout(), None);
        l.complete(op(1), WriteOutcome::Written).unwrap();
        assert_eq!(l.get(&op(1)), None);
        assert_eq!(l.admit(t(22), ME, op(1), dg(1)), Ok(Admission::Fresh));
    }

    #[test]
    fn input_dedupe_5_full_ledger_refuses_unseen_ids_without_eviction() {
        let mut l = OperationLedger::with_limits(2, Duration::from_secs(10));
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        l.admit(t(1), ME, op(2), dg(1)).unwrap();
        let refusal = l.admit(t(2), ME, op(3), dg(1)).unwrap_err();
        assert_eq!(refusal, LedgerRefusal::Full);
        assert_eq!(refusal.code(), ErrorCode::RESOURCE_EXHAUSTED);
        // Known ids still resolve when full.
        assert_eq!(l.admit(t(3), ME, op(1), dg(1)), Ok(Admission::Rebound));
        assert_eq!(
            l.admit(t(3), ME, op(2), dg(9)),
            Err(LedgerRefusal::DigestMismatch)
        );
        assert_eq!(l.len(), 2);
        // Once the oldest expires, an unseen id fits.
        assert_eq!(l.admit(t(10), ME, op(3), dg(1)), Ok(Admission::Fresh));
        assert_eq!(l.get(&op(1)), None);
        assert!(l.get(&op(2)).is_some());
    }

    #[test]
    fn input_dedupe_5_default_limits() {
        let l = OperationLedger::default();
        assert_eq!(l.capacity(), 65_536);
        assert_eq!(l.horizon(), Duration::from_mins(10));
    }

    #[test]
    fn input_dedupe_6_pre_handoff_refusal_keeps_binding_only() {
        let mut l = OperationLedger::new();
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        // e.g. the lease was held by another client (204): not cached.
        l.release(op(1)).unwrap();
        assert_eq!(l.admit(t(1), ME, op(1), dg(1)), Ok(Admission::Rebound));
        assert_eq!(
            l.admit(t(1), ME, op(1), dg(2)),
            Err(LedgerRefusal::DigestMismatch)
        );
        // The re-evaluation may succeed this time.
        l.handed_off(op(1)).unwrap();
        l.complete(op(1), WriteOutcome::Written).unwrap();
        assert_eq!(
            l.admit(t(2), ME, op(1), dg(1)),
            Ok(Admission::Cached(WriteOutcome::Written))
        );
    }

    #[test]
    fn input_dedupe_9_forget_leaves_no_record() {
        let mut l = OperationLedger::with_limits(1, Duration::from_secs(10));
        assert_eq!(l.admit(t(0), ME, op(1), dg(1)), Ok(Admission::Fresh));
        l.forget(op(1)).unwrap();
        assert!(l.is_empty());
        assert_eq!(l.owned_by(ME), 0);
        assert_eq!(l.poll_timeout(), None);
        // Another payload under the id is fresh, and the one slot is free for it.
        assert_eq!(l.admit(t(1), ME, op(1), dg(2)), Ok(Admission::Fresh));
        assert_eq!(l.admit(t(1), ME, op(2), dg(1)), Err(LedgerRefusal::Full));
        // Only a merely bound record is forgotten.
        l.handed_off(op(1)).unwrap();
        assert_eq!(
            l.forget(op(1)),
            Err(LedgerMisuse::NotBound {
                id: op(1),
                state: OperationState::InFlight
            })
        );
        assert_eq!(l.forget(op(2)), Err(LedgerMisuse::Unknown { id: op(2) }));
    }

    #[test]
    fn input_dedupe_12_one_owner_holds_at_most_its_share() {
        let other = Owner(2);
        let mut l = OperationLedger::with_limits(4, Duration::from_secs(10)).with_share(1);
        // Below half full the share does not bind.
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        l.admit(t(1), ME, op(2), dg(1)).unwrap();
        let refusal = l.admit(t(2), ME, op(3), dg(1)).unwrap_err();
        assert_eq!(refusal, LedgerRefusal::ShareFull);
        assert_eq!(refusal.code(), ErrorCode::RESOURCE_EXHAUSTED);
        // Known ids still resolve for the owner, whoever asks.
        assert_eq!(l.admit(t(2), ME, op(1), dg(1)), Ok(Admission::Rebound));
        assert_eq!(l.admit(t(2), other, op(2), dg(1)), Ok(Admission::Rebound));
        // Others keep their own share.
        assert_eq!(l.admit(t(3), other, op(3), dg(1)), Ok(Admission::Fresh));
        assert_eq!(l.owned_by(ME), 2);
        assert_eq!(l.owned_by(other), 1);
        // Half full again (the other's record and one of ours): still over the share.
        l.handle_timeout(t(10));
        assert_eq!(l.owned_by(ME), 1);
        assert_eq!(
            l.admit(t(10), ME, op(4), dg(1)),
            Err(LedgerRefusal::ShareFull)
        );
        // Below half, it may take more.
        l.handle_timeout(t(11));
        assert_eq!(l.len(), 1);
        assert_eq!(l.admit(t(11), ME, op(4), dg(1)), Ok(Admission::Fresh));
    }

    #[test]
    fn default_share_is_an_eighth() {
        assert_eq!(OperationLedger::new().share(), 8192);
    }

    #[test]
    fn input_dedupe_7_final_result_codes() {
        assert_eq!(WriteOutcome::Written.code(), None);
        assert_eq!(
            WriteOutcome::Unknown.code(),
            Some(ErrorCode::INPUT_DELIVERY_UNKNOWN)
        );
        assert_eq!(
            WriteOutcome::CanonicalRefused { limit: 1 }.code(),
            Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED)
        );
        assert_eq!(
            WriteOutcome::NotWritten.code(),
            Some(ErrorCode::INPUT_NOT_WRITTEN)
        );
    }

    #[test]
    fn misuse_is_typed_and_changes_nothing() {
        let mut l = OperationLedger::new();
        assert_eq!(
            l.handed_off(op(1)),
            Err(LedgerMisuse::Unknown { id: op(1) })
        );
        l.admit(t(0), ME, op(1), dg(1)).unwrap();
        assert_eq!(
            l.complete(op(1), WriteOutcome::Written),
            Err(LedgerMisuse::NotInFlight {
                id: op(1),
                state: OperationState::Bound
            })
        );
        l.handed_off(op(1)).unwrap();
        assert_eq!(
            l.handed_off(op(1)),
            Err(LedgerMisuse::NotBound {
                id: op(1),
                state: OperationState::InFlight
            })
        );
        assert_eq!(
            l.release(op(1)),
            Err(LedgerMisuse::NotBound {
                id: op(1),
                state: OperationState::InFlight
            })
        );
        l.complete(op(1), WriteOutcome::Unknown).unwrap();
        // The writer's late report after the deadline: the first result stands.
        assert_eq!(
            l.complete(op(1), WriteOutcome::Written),
            Err(LedgerMisuse::NotInFlight {
                id: op(1),
                state: OperationState::Final(WriteOutcome::Unknown)
            })
        );
        assert_eq!(
            l.admit(t(1), ME, op(1), dg(1)),
            Ok(Admission::Cached(WriteOutcome::Unknown))
        );
    }

    #[test]
    fn clock_going_backwards_does_not_break_fifo() {
        let mut l = OperationLedger::with_limits(10, Duration::from_secs(10));
        l.admit(t(5), ME, op(1), dg(1)).unwrap();
        // A driver bug: an earlier `now`. Treated as the latest time seen.
        l.admit(t(1), ME, op(2), dg(1)).unwrap();
        assert_eq!(l.get(&op(2)).unwrap().admitted_at, t(5));
        l.handle_timeout(t(15));
        assert!(l.is_empty());
    }
}
