//! The input lease table: who may write to each terminal (ADR-0033, plus our R13 TTL).
//!
//! A terminal is open (anyone may write) or held by one client (only the holder may write).
//! A cooperative acquire succeeds only on an open terminal or one the caller already holds; a
//! seize always succeeds and preempts the holder. A lease ends by its holder's release, the
//! holder's disconnect, or — beyond phux, R13 — its TTL: `ttl_ms > 0` expires the lease
//! `ttl_ms` after the (latest) acquire.
//!
//! Every holder change comes out as exactly one [`LeaseChange`], which the engine turns into a
//! `terminal_control` event with [`LeaseChange::to_control`]. Nothing is reported when nothing
//! changed (a release by a non-holder).
//!
//! The table does not know which terminals exist; a terminal it has no entry for is open. The
//! engine checks existence (TERMINAL_NOT_FOUND) first and calls `remove_terminal` when a
//! terminal goes away.
//!
//! # Expiry
//!
//! `poll_timeout` is the next expiry; `handle_timeout(now)` releases what has expired and
//! reports each release (action RELEASED, actor absent). A lease whose expiry has passed but
//! has not been handled yet no longer gates anything: `check_input` and `acquire` take `now`
//! and treat it as open. The engine should call `handle_timeout(now)` before other lease calls
//! at a `now` past `poll_timeout()`, so the RELEASED event goes out before whatever follows.
//! If it does not, the lapsed lease is ended by the next call that changes the holder, which
//! reports that one transition (see [`LeaseTable::acquire`]).

use std::collections::BTreeMap;
use std::time::Duration;

use phux_proto::event::{ControlAction, Lifecycle, TerminalControl};
use phux_proto::{ClientId, ErrorCode, TerminalId};

use crate::time::Instant;

/// How ACQUIRE_INPUT treats a lease held by someone else: the wire type, one definition.
pub use phux_proto::command::AcquireMode;

/// A terminal's lease as the table records it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LeaseState {
    /// Nobody holds the lease: every client may write.
    Open,
    /// One client holds the lease: only it may write.
    Held {
        /// The holder.
        holder: ClientId,
        /// The mode of the holder's latest acquire.
        mode: AcquireMode,
        /// When the lease expires; `None` never (ttl 0).
        expires_at: Option<Instant>,
    },
}

/// One change of a terminal's lease; the engine adds the lifecycle to make a
/// `terminal_control` event.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct LeaseChange {
    /// The terminal.
    pub terminal: TerminalId,
    /// The holder after the change.
    pub holder: Option<ClientId>,
    /// ACQUIRED, SEIZED or RELEASED.
    pub action: ControlAction,
    /// The client that caused the change; `None` for a server-driven release (expiry).
    pub actor: Option<ClientId>,
    /// The holder recorded before the change: the caller itself for a renewal, the preempted
    /// client for SEIZED, the releasing or lapsed holder for RELEASED.
    pub prior_holder: Option<ClientId>,
}

impl LeaseChange {
    /// The `terminal_control` event body for this change, given the terminal's lifecycle.
    pub fn to_control(&self, lifecycle: Lifecycle, exit_status: Option<i32>) -> TerminalControl {
        TerminalControl {
            lifecycle,
            exit_status,
            input_holder: self.holder,
            action: self.action,
            actor: self.actor,
        }
    }

    /// Whether the holder changed (false for a renewal by the holder itself).
    pub fn is_transition(&self) -> bool {
        self.holder != self.prior_holder
    }
}

/// Refusal: another client holds the terminal's live lease (INPUT_LEASE_HELD, 204).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[error("input lease held by client {holder}")]
#[non_exhaustive]
pub struct LeaseHeld {
    /// The holder. ACQUIRE_INPUT's error message names it (phux 0.8 section 5.1).
    pub holder: ClientId,
}

impl LeaseHeld {
    /// The wire error code.
    pub fn code(self) -> ErrorCode {
        ErrorCode::INPUT_LEASE_HELD
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
struct Held {
    holder: ClientId,
    mode: AcquireMode,
    expires_at: Option<Instant>,
}

impl Held {
    // [LEASE.TTL.2] at `expires_at` the lease is over, whether or not it was handled yet.
    fn live_at(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

/// Per-terminal input leases. See the [module docs](self).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LeaseTable {
    // Only held leases have an entry. A BTreeMap so multi-lease results (disconnect, expiry)
    // come out in a deterministic order.
    leases: BTreeMap<TerminalId, Held>,
}

impl LeaseTable {
    /// An empty table: every terminal open.
    pub fn new() -> Self {
        Self::default()
    }

    // ---- getters ----

    /// The lease as recorded. A lease past its expiry stays recorded until `handle_timeout`
    /// (or a release, disconnect or acquire) ends it, matching the events sent so far.
    pub fn state(&self, terminal: &TerminalId) -> LeaseState {
        match self.leases.get(terminal) {
            None => LeaseState::Open,
            Some(h) => LeaseState::Held {
                holder: h.holder,
                mode: h.mode,
                expires_at: h.expires_at,
            },
        }
    }

    /// The recorded holder (see [`LeaseTable::state`] on lapsed leases).
    pub fn holder(&self, terminal: &TerminalId) -> Option<ClientId> {
        self.leases.get(terminal).map(|h| h.holder)
    }

    /// When the terminal's lease expires, if it is held with a TTL.
    pub fn expires_at(&self, terminal: &TerminalId) -> Option<Instant> {
        self.leases.get(terminal).and_then(|h| h.expires_at)
    }

    /// How many terminals have a recorded holder.
    pub fn len(&self) -> usize {
        self.leases.len()
    }

    /// Whether every terminal is open.
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// Input gating: may `client` write to `terminal` at `now`?
    ///
    /// Anyone may write to an open terminal, or one whose lease has lapsed; only the holder
    /// may write to a held one.
    pub fn check_input(
        &self,
        now: Instant,
        terminal: &TerminalId,
        client: ClientId,
    ) -> Result<(), LeaseHeld> {
        match self.leases.get(terminal) {
            // [LEASE.GATE.1] a live lease held by another client refuses every input path.
            Some(h) if h.live_at(now) && h.holder != client => Err(LeaseHeld { holder: h.holder }),
            _ => Ok(()),
        }
    }

    // ---- timers ----

    /// The earliest lease expiry, if any lease has a TTL.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // A linear scan: a server has few terminals, and this keeps one source of truth.
        self.leases.values().filter_map(|h| h.expires_at).min()
    }

    /// Releases every lease that has expired by `now`, earliest first. Spurious calls are
    /// harmless and return nothing.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<LeaseChange> {
        let mut expired: Vec<(Instant, TerminalId)> = self
            .leases
            .iter()
            .filter_map(|(t, h)| {
                h.expires_at
                    .filter(|&at| at <= now)
                    .map(|at| (at, t.clone()))
            })
            .collect();
        expired.sort();
        expired
            .into_iter()
            .filter_map(|(_, terminal)| {
                let held = self.leases.remove(&terminal)?;
                // [LEASE.TTL.3] an expiry is a server-driven release: RELEASED, actor absent.
                Some(LeaseChange {
                    terminal,
                    holder: None,
                    action: ControlAction::Released,
                    actor: None,
                    prior_holder: Some(held.holder),
                })
            })
            .collect()
    }

    // ---- commands ----

    /// ACQUIRE_INPUT: makes `client` the holder, or refuses a cooperative acquire of a lease
    /// another client holds.
    ///
    /// `ttl_ms > 0` makes the lease expire `ttl_ms` after `now`; 0 never. A re-acquire by the
    /// holder renews the lease with the new mode and TTL and reports ACQUIRED with
    /// `prior_holder` = itself (the reference broadcasts this too). A seize of another
    /// client's live lease reports SEIZED with the preempted client as `prior_holder`.
    ///
    /// A lease that has lapsed but was not handled yet counts as open; the grant then is the
    /// one change reported for the transition: ACQUIRED, `prior_holder` = the lapsed holder.
    pub fn acquire(
        &mut self,
        now: Instant,
        terminal: TerminalId,
        client: ClientId,
        mode: AcquireMode,
        ttl_ms: u32,
    ) -> Result<LeaseChange, LeaseHeld> {
        let recorded = self.leases.get(&terminal).copied();
        let live_other = recorded.filter(|h| h.live_at(now) && h.holder != client);
        let action = match (live_other, mode) {
            // [LEASE.ACQUIRE.2] cooperative never preempts another client's live lease.
            (Some(h), AcquireMode::Cooperative) => return Err(LeaseHeld { holder: h.holder }),
            // [LEASE.SEIZE.1] a seize preempts the holder, and the event says so.
            (Some(_), AcquireMode::Seize) => ControlAction::Seized,
            // [LEASE.ACQUIRE.1] open, lapsed or already ours: granted as ACQUIRED.
            (None, _) => ControlAction::Acquired,
        };
        // [LEASE.TTL.1] ttl 0 never expires; otherwise now + ttl, renewed by each acquire.
        let expires_at = (ttl_ms > 0).then(|| now + Duration::from_millis(u64::from(ttl_ms)));
        self.leases.insert(
            terminal.clone(),
            Held {
                holder: client,
                mode,
                expires_at,
            },
        );
        Ok(LeaseChange {
            terminal,
            holder: Some(client),
            action,
            actor: Some(client),
            prior_holder: recorded.map(|h| h.holder),
        })
    }

    /// RELEASE_INPUT: ends `client`'s lease. A release by anyone else (or of an open
    /// terminal) is a no-op that reports nothing; the command still replies OK.
    pub fn release(&mut self, terminal: &TerminalId, client: ClientId) -> Option<LeaseChange> {
        // [LEASE.RELEASE.2] only the holder releases; anyone else changes nothing.
        if self.holder(terminal) != Some(client) {
            return None;
        }
        self.leases.remove(terminal);
        // [LEASE.RELEASE.1] RELEASED, actor = the releasing holder.
        Some(LeaseChange {
            terminal: terminal.clone(),
            holder: None,
            action: ControlAction::Released,
            actor: Some(client),
            prior_holder: Some(client),
        })
    }

    /// The client disconnected: releases every lease it holds, in terminal order.
    pub fn disconnect(&mut self, client: ClientId) -> Vec<LeaseChange> {
        let mut changes = Vec::new();
        // [LEASE.DISCONNECT.1] a departing holder's leases end; actor = the departing client.
        self.leases.retain(|terminal, held| {
            if held.holder != client {
                return true;
            }
            changes.push(LeaseChange {
                terminal: terminal.clone(),
                holder: None,
                action: ControlAction::Released,
                actor: Some(client),
                prior_holder: Some(client),
            });
            false
        });
        changes
    }

    /// The terminal is gone: forgets its lease without an event (TERMINAL_CLOSED says it all).
    /// Returns the holder it had.
    pub fn remove_terminal(&mut self, terminal: &TerminalId) -> Option<ClientId> {
        self.leases.remove(terminal).map(|h| h.holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ClientId = ClientId(1);
    const B: ClientId = ClientId(2);

    fn term(n: u32) -> TerminalId {
        TerminalId::Local(n)
    }

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn lease_acquire_1_open_or_own_lease_is_granted_as_acquired() {
        let mut l = LeaseTable::new();
        let c = l
            .acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(
            c,
            LeaseChange {
                terminal: term(1),
                holder: Some(A),
                action: ControlAction::Acquired,
                actor: Some(A),
                prior_holder: None,
            }
        );
        assert!(c.is_transition());
        // Again by the holder: still ACQUIRED, a renewal rather than a transition.
        let again = l
            .acquire(ms(1), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(again.action, ControlAction::Acquired);
        assert_eq!(again.prior_holder, Some(A));
        assert!(!again.is_transition());
        // A seize of an open terminal is ACQUIRED too.
        let s = l.acquire(ms(2), term(2), B, AcquireMode::Seize, 0).unwrap();
        assert_eq!(s.action, ControlAction::Acquired);
        assert_eq!(l.holder(&term(1)), Some(A));
        assert_eq!(l.holder(&term(2)), Some(B));
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn lease_acquire_2_cooperative_refused_while_another_holds() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        let err = l
            .acquire(ms(1), term(1), B, AcquireMode::Cooperative, 0)
            .unwrap_err();
        assert_eq!(err, LeaseHeld { holder: A });
        assert_eq!(err.code(), ErrorCode::INPUT_LEASE_HELD);
        assert_eq!(err.to_string(), "input lease held by client 1");
        assert_eq!(l.holder(&term(1)), Some(A));
    }

    #[test]
    fn lease_seize_1_seize_preempts_and_reports_prior_holder() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        let c = l.acquire(ms(1), term(1), B, AcquireMode::Seize, 0).unwrap();
        assert_eq!(c.action, ControlAction::Seized);
        assert_eq!(c.holder, Some(B));
        assert_eq!(c.actor, Some(B));
        assert_eq!(c.prior_holder, Some(A));
        assert_eq!(
            l.state(&term(1)),
            LeaseState::Held {
                holder: B,
                mode: AcquireMode::Seize,
                expires_at: None
            }
        );
        // The event: input_holder and actor are both the new holder.
        assert_eq!(
            c.to_control(Lifecycle::Running, None),
            TerminalControl {
                lifecycle: Lifecycle::Running,
                exit_status: None,
                input_holder: Some(B),
                action: ControlAction::Seized,
                actor: Some(B),
            }
        );
    }

    #[test]
    fn lease_release_1_holder_release_reports_released() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        let c = l.release(&term(1), A).unwrap();
        assert_eq!(c.action, ControlAction::Released);
        assert_eq!(c.holder, None);
        assert_eq!(c.actor, Some(A));
        assert_eq!(l.state(&term(1)), LeaseState::Open);
        assert!(l.is_empty());
    }

    #[test]
    fn lease_release_2_non_holder_release_is_a_silent_no_op() {
        let mut l = LeaseTable::new();
        assert_eq!(l.release(&term(1), A), None);
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(l.release(&term(1), B), None);
        assert_eq!(l.holder(&term(1)), Some(A));
    }

    #[test]
    fn lease_release_3_disconnect_releases_all_with_departing_actor() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(3), A, AcquireMode::Cooperative, 0)
            .unwrap();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        l.acquire(ms(0), term(2), B, AcquireMode::Cooperative, 0)
            .unwrap();
        let changes = l.disconnect(A);
        let terminals: Vec<_> = changes.iter().map(|c| c.terminal.clone()).collect();
        assert_eq!(terminals, [term(1), term(3)]);
        for c in &changes {
            assert_eq!(c.action, ControlAction::Released);
            assert_eq!(c.actor, Some(A));
            assert_eq!(c.holder, None);
        }
        assert_eq!(l.holder(&term(2)), Some(B));
        assert!(l.disconnect(A).is_empty());
    }

    #[test]
    fn lease_ttl_1_zero_never_expires_and_reacquire_renews() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(l.poll_timeout(), None);
        assert!(l.handle_timeout(Instant::MAX).is_empty());
        l.acquire(ms(0), term(2), A, AcquireMode::Cooperative, 100)
            .unwrap();
        assert_eq!(l.expires_at(&term(2)), Some(ms(100)));
        // The holder renews from the new acquire, with a new ttl.
        l.acquire(ms(80), term(2), A, AcquireMode::Cooperative, 50)
            .unwrap();
        assert_eq!(l.expires_at(&term(2)), Some(ms(130)));
        assert!(l.handle_timeout(ms(100)).is_empty());
        // And ttl 0 turns expiry off.
        l.acquire(ms(90), term(2), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(l.expires_at(&term(2)), None);
        assert_eq!(l.poll_timeout(), None);
    }

    #[test]
    fn lease_ttl_2_lapsed_lease_does_not_gate_before_it_is_handled() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 10)
            .unwrap();
        assert_eq!(
            l.check_input(ms(9), &term(1), B),
            Err(LeaseHeld { holder: A })
        );
        assert_eq!(l.check_input(ms(10), &term(1), B), Ok(()));
        // A cooperative acquire succeeds over the lapsed lease: one change for A -> B.
        let c = l
            .acquire(ms(11), term(1), B, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(c.action, ControlAction::Acquired);
        assert_eq!(c.prior_holder, Some(A));
        assert!(l.handle_timeout(ms(11)).is_empty());
    }

    #[test]
    fn lease_ttl_3_expiry_releases_with_actor_absent_earliest_first() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 30)
            .unwrap();
        l.acquire(ms(0), term(2), B, AcquireMode::Seize, 20)
            .unwrap();
        assert_eq!(l.poll_timeout(), Some(ms(20)));
        assert!(l.handle_timeout(ms(19)).is_empty(), "spurious call");
        let changes = l.handle_timeout(ms(40));
        assert_eq!(
            changes,
            [
                LeaseChange {
                    terminal: term(2),
                    holder: None,
                    action: ControlAction::Released,
                    actor: None,
                    prior_holder: Some(B),
                },
                LeaseChange {
                    terminal: term(1),
                    holder: None,
                    action: ControlAction::Released,
                    actor: None,
                    prior_holder: Some(A),
                },
            ]
        );
        assert_eq!(
            changes[0].to_control(Lifecycle::Frozen, None).actor,
            None,
            "a server-driven release is visible to all with no actor"
        );
        assert!(l.is_empty());
        assert_eq!(l.poll_timeout(), None);
    }

    #[test]
    fn lease_gate_1_open_admits_all_held_admits_only_holder() {
        let mut l = LeaseTable::new();
        assert_eq!(l.check_input(ms(0), &term(1), A), Ok(()));
        assert_eq!(l.check_input(ms(0), &term(1), B), Ok(()));
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 0)
            .unwrap();
        assert_eq!(l.check_input(ms(0), &term(1), A), Ok(()));
        assert_eq!(
            l.check_input(ms(0), &term(1), B),
            Err(LeaseHeld { holder: A })
        );
        // Other terminals are unaffected.
        assert_eq!(l.check_input(ms(0), &term(2), B), Ok(()));
    }

    #[test]
    fn remove_terminal_forgets_the_lease_silently() {
        let mut l = LeaseTable::new();
        l.acquire(ms(0), term(1), A, AcquireMode::Cooperative, 5)
            .unwrap();
        assert_eq!(l.remove_terminal(&term(1)), Some(A));
        assert_eq!(l.remove_terminal(&term(1)), None);
        assert_eq!(l.poll_timeout(), None);
        assert_eq!(l.state(&term(1)), LeaseState::Open);
    }
}
