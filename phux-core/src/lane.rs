//! The acknowledged-input lane: one unresolved APPLY_INPUT per terminal, with a deadline.
//!
//! A terminal carries at most one acknowledged operation that is not resolved yet. A second
//! one for the same terminal is refused at once (RESOURCE_EXHAUSTED) rather than queued, and
//! operations for other terminals never wait on it. Once the job is handed to the PTY writer
//! its completion must arrive within [`COMPLETION_BOUND`]; if it does not, the operation
//! resolves as INPUT_DELIVERY_UNKNOWN and its late completion changes nothing.
//!
//! The lane only tracks admission and deadlines; the ledger holds results.

use std::collections::BTreeMap;
use std::time::Duration;

use phux_proto::{ErrorCode, OperationId, TerminalId};

use crate::time::Instant;

/// How long after handoff a job's completion may take before it resolves as
/// INPUT_DELIVERY_UNKNOWN (phux 0.8: 5 s).
pub const COMPLETION_BOUND: Duration = Duration::from_secs(5);

/// A terminal's unresolved operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct PendingOp {
    /// The operation.
    pub op: OperationId,
    /// When it resolves as delivery-unknown; `None` until it is handed off.
    pub deadline: Option<Instant>,
}

/// Refusal: the terminal already has an unresolved acknowledged operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[error("another APPLY_INPUT operation is in flight for this terminal")]
#[non_exhaustive]
pub struct LaneBusy {
    /// The operation that holds the lane.
    pub pending: OperationId,
}

impl LaneBusy {
    /// The wire error code (RESOURCE_EXHAUSTED; not cached, the client may retry).
    pub fn code(self) -> ErrorCode {
        ErrorCode::RESOURCE_EXHAUSTED
    }
}

/// A call the lane's state does not allow: a bug in the caller, never a peer's doing.
/// The lane is left unchanged.
#[derive(Clone, PartialEq, Eq, Hash, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaneMisuse {
    /// The terminal has no unresolved operation.
    #[error("no acknowledged operation is pending for terminal {terminal}")]
    Idle {
        /// The terminal.
        terminal: TerminalId,
    },
    /// The operation was already handed off: only its completion or deadline resolves it.
    #[error("operation {op} on terminal {terminal} was already handed off")]
    AlreadyHandedOff {
        /// The terminal.
        terminal: TerminalId,
        /// The pending operation.
        op: OperationId,
    },
}

/// Per-terminal admission of acknowledged operations. See the [module docs](self).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AckLane {
    // A BTreeMap so `handle_timeout` reports in a deterministic order.
    slots: BTreeMap<TerminalId, PendingOp>,
    bound: Duration,
}

impl Default for AckLane {
    fn default() -> Self {
        Self::new()
    }
}

impl AckLane {
    /// A lane with the phux completion bound, [`COMPLETION_BOUND`].
    pub fn new() -> Self {
        Self::with_bound(COMPLETION_BOUND)
    }

    /// A lane with another completion bound.
    pub fn with_bound(bound: Duration) -> Self {
        Self {
            slots: BTreeMap::new(),
            bound,
        }
    }

    // ---- getters ----

    /// The terminal's unresolved operation, if any.
    pub fn pending(&self, terminal: &TerminalId) -> Option<PendingOp> {
        self.slots.get(terminal).copied()
    }

    /// How many terminals have an unresolved operation.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no operation is unresolved.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    // ---- timers ----

    /// The earliest completion deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // A linear scan: one entry per busy terminal, and a server has few terminals.
        self.slots.values().filter_map(|p| p.deadline).min()
    }

    /// Resolves every handed-off operation whose deadline has passed, earliest first: each
    /// returned operation is INPUT_DELIVERY_UNKNOWN, and its lane is free again. Spurious
    /// calls are harmless.
    ///
    /// The PTY writer may still hold the expired job's bytes, and they may still be written
    /// after this returns. The engine must keep a later job for the same terminal behind
    /// them in its write queue (per-terminal FIFO order) and must ignore that job's eventual
    /// completion, which [`AckLane::complete`] reports as `None`.
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<(TerminalId, OperationId)> {
        let mut due: Vec<(Instant, TerminalId, OperationId)> = self
            .slots
            .iter()
            .filter_map(|(t, p)| {
                p.deadline
                    .filter(|&at| at <= now)
                    .map(|at| (at, t.clone(), p.op))
            })
            .collect();
        due.sort();
        due.into_iter()
            .map(|(_, terminal, op)| {
                // [INPUT.LANE.3] past the bound the operation is delivery-unknown; the lane
                // frees so the terminal is not wedged by one stuck job.
                self.slots.remove(&terminal);
                (terminal, op)
            })
            .collect()
    }

    // ---- commands ----

    /// Admits `op` for `terminal`, or refuses it while another is unresolved there.
    pub fn admit(&mut self, terminal: TerminalId, op: OperationId) -> Result<(), LaneBusy> {
        // [INPUT.LANE.1] one unresolved operation per terminal, refused at once, not queued.
        // [INPUT.LANE.2] the slot is per terminal: other terminals never wait on it.
        if let Some(pending) = self.slots.get(&terminal) {
            return Err(LaneBusy {
                pending: pending.op,
            });
        }
        self.slots
            .insert(terminal, PendingOp { op, deadline: None });
        Ok(())
    }

    /// The terminal's pending job was handed to the PTY writer at `now`: starts its
    /// completion deadline, which is returned.
    pub fn handed_off(
        &mut self,
        now: Instant,
        terminal: &TerminalId,
    ) -> Result<Instant, LaneMisuse> {
        let Some(pending) = self.slots.get_mut(terminal) else {
            return Err(LaneMisuse::Idle {
                terminal: terminal.clone(),
            });
        };
        if pending.deadline.is_some() {
            return Err(LaneMisuse::AlreadyHandedOff {
                terminal: terminal.clone(),
                op: pending.op,
            });
        }
        // [INPUT.LANE.3] the bound counts from handoff.
        let deadline = now + self.bound;
        pending.deadline = Some(deadline);
        Ok(deadline)
    }

    /// The writer reported `op` on `terminal` complete: returns the pending entry it resolves
    /// and frees the lane, or `None` if `op` is not the terminal's pending operation — a late
    /// completion after the deadline fired (or after `remove_terminal`), which changes nothing.
    /// The pending operation resolves whether or not `handed_off` was called for it.
    pub fn complete(&mut self, terminal: &TerminalId, op: OperationId) -> Option<PendingOp> {
        // [INPUT.LANE.4] a late completion must not resolve (or free) a newer operation.
        if self.slots.get(terminal)?.op != op {
            return None;
        }
        self.slots.remove(terminal)
    }

    /// The pending operation was refused before handoff (lease held, encoder refusal, ...):
    /// frees the lane and returns the operation. A handed-off operation cannot be abandoned.
    pub fn abandon(&mut self, terminal: &TerminalId) -> Result<OperationId, LaneMisuse> {
        match self.slots.get(terminal) {
            None => Err(LaneMisuse::Idle {
                terminal: terminal.clone(),
            }),
            Some(p) if p.deadline.is_some() => Err(LaneMisuse::AlreadyHandedOff {
                terminal: terminal.clone(),
                op: p.op,
            }),
            Some(p) => {
                let op = p.op;
                // [INPUT.LANE.4] a refusal before handoff frees the lane at once.
                self.slots.remove(terminal);
                Ok(op)
            }
        }
    }

    /// The terminal is gone: drops its slot and returns what was pending, for the engine to
    /// resolve (delivery unknown if handed off, else not written).
    pub fn remove_terminal(&mut self, terminal: &TerminalId) -> Option<PendingOp> {
        self.slots.remove(terminal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn op(n: u128) -> OperationId {
        OperationId::from_u128(n).unwrap()
    }

    fn term(n: u32) -> TerminalId {
        TerminalId::Local(n)
    }

    fn s(secs: u64) -> Instant {
        Instant::from_millis(secs * 1000)
    }

    #[test]
    fn input_lane_1_second_operation_on_a_terminal_is_refused_at_once() {
        let mut lane = AckLane::new();
        lane.admit(term(1), op(1)).unwrap();
        let busy = lane.admit(term(1), op(2)).unwrap_err();
        assert_eq!(busy, LaneBusy { pending: op(1) });
        assert_eq!(busy.code(), ErrorCode::RESOURCE_EXHAUSTED);
        // A same-id retry while the original is pending is refused the same way.
        assert_eq!(lane.admit(term(1), op(1)), Err(LaneBusy { pending: op(1) }));
        assert_eq!(
            lane.pending(&term(1)),
            Some(PendingOp {
                op: op(1),
                deadline: None
            })
        );
    }

    #[test]
    fn input_lane_2_other_terminals_never_wait() {
        let mut lane = AckLane::new();
        lane.admit(term(1), op(1)).unwrap();
        lane.handed_off(s(0), &term(1)).unwrap();
        lane.admit(term(2), op(2)).unwrap();
        lane.admit(term(3), op(3)).unwrap();
        assert_eq!(lane.len(), 3);
        assert_eq!(
            lane.complete(&term(3), op(3)).map(|p| p.op),
            Some(op(3)),
            "term 3 resolves while term 1 is still pending"
        );
    }

    #[test]
    fn input_lane_3_deadline_resolves_delivery_unknown_and_frees_the_lane() {
        let mut lane = AckLane::new();
        lane.admit(term(1), op(1)).unwrap();
        // No deadline before handoff.
        assert_eq!(lane.poll_timeout(), None);
        assert_eq!(lane.handed_off(s(10), &term(1)), Ok(s(15)));
        lane.admit(term(2), op(2)).unwrap();
        lane.handed_off(s(11), &term(2)).unwrap();
        assert_eq!(lane.poll_timeout(), Some(s(15)));
        assert!(lane.handle_timeout(s(14)).is_empty(), "spurious call");
        assert_eq!(
            lane.handle_timeout(s(20)),
            [(term(1), op(1)), (term(2), op(2))]
        );
        assert!(lane.is_empty());
        assert_eq!(lane.poll_timeout(), None);
        lane.admit(term(1), op(3)).unwrap();
    }

    #[test]
    fn input_lane_3_default_bound_is_five_seconds() {
        let mut lane = AckLane::default();
        lane.admit(term(1), op(1)).unwrap();
        assert_eq!(lane.handed_off(s(1), &term(1)), Ok(s(6)));
        assert_eq!(lane.handle_timeout(Instant::from_micros(5_999_999)), []);
        assert_eq!(lane.handle_timeout(s(6)), [(term(1), op(1))]);
    }

    #[test]
    fn input_lane_4_late_completion_changes_nothing() {
        let mut lane = AckLane::with_bound(Duration::from_secs(1));
        lane.admit(term(1), op(1)).unwrap();
        lane.handed_off(s(0), &term(1)).unwrap();
        assert_eq!(lane.handle_timeout(s(1)), [(term(1), op(1))]);
        assert_eq!(lane.complete(&term(1), op(1)), None);
        // With a newer operation pending, the old one's completion leaves it alone.
        lane.admit(term(1), op(2)).unwrap();
        lane.handed_off(s(2), &term(1)).unwrap();
        assert_eq!(lane.complete(&term(1), op(1)), None);
        assert_eq!(lane.pending(&term(1)).map(|p| p.op), Some(op(2)));
        assert_eq!(
            lane.complete(&term(1), op(2)),
            Some(PendingOp {
                op: op(2),
                deadline: Some(s(3))
            })
        );
        assert_eq!(lane.complete(&term(1), op(2)), None, "duplicate completion");
    }

    #[test]
    fn input_lane_5_abandon_before_handoff_frees_the_lane() {
        let mut lane = AckLane::new();
        assert_eq!(
            lane.abandon(&term(1)),
            Err(LaneMisuse::Idle { terminal: term(1) })
        );
        lane.admit(term(1), op(1)).unwrap();
        assert_eq!(lane.abandon(&term(1)), Ok(op(1)));
        lane.admit(term(1), op(2)).unwrap();
        lane.handed_off(s(0), &term(1)).unwrap();
        // Handed off: the writer has it, so only completion or the deadline resolves it.
        assert_eq!(
            lane.abandon(&term(1)),
            Err(LaneMisuse::AlreadyHandedOff {
                terminal: term(1),
                op: op(2)
            })
        );
        assert_eq!(
            lane.handed_off(s(1), &term(1)),
            Err(LaneMisuse::AlreadyHandedOff {
                terminal: term(1),
                op: op(2)
            })
        );
        assert_eq!(
            lane.handed_off(s(1), &term(2)),
            Err(LaneMisuse::Idle { terminal: term(2) })
        );
        assert_eq!(lane.pending(&term(1)).map(|p| p.op), Some(op(2)));
    }

    #[test]
    fn remove_terminal_returns_what_was_pending() {
        let mut lane = AckLane::new();
        lane.admit(term(1), op(1)).unwrap();
        lane.handed_off(s(0), &term(1)).unwrap();
        assert_eq!(
            lane.remove_terminal(&term(1)),
            Some(PendingOp {
                op: op(1),
                deadline: Some(s(5))
            })
        );
        assert_eq!(lane.remove_terminal(&term(1)), None);
        assert_eq!(lane.poll_timeout(), None);
        assert_eq!(lane.complete(&term(1), op(1)), None);
    }

    // ---- property test: lane invariants ----

    const TERMINALS: u32 = 3;

    #[derive(Clone, Debug)]
    enum Step {
        Admit(u32),
        HandedOff(u32),
        Complete(u32, bool),
        Abandon(u32),
        Remove(u32),
        Advance(u64),
        HandleTimeout,
    }

    fn step_strategy() -> impl Strategy<Value = Step> {
        let t = 0..TERMINALS;
        prop_oneof![
            3 => t.clone().prop_map(Step::Admit),
            2 => t.clone().prop_map(Step::HandedOff),
            2 => (t.clone(), any::<bool>()).prop_map(|(t, stale)| Step::Complete(t, stale)),
            1 => t.clone().prop_map(Step::Abandon),
            1 => t.prop_map(Step::Remove),
            2 => (0u64..400).prop_map(Step::Advance),
            2 => Just(Step::HandleTimeout),
        ]
    }

    proptest! {
        // [INPUT.LANE.1]-[INPUT.LANE.4]: one unresolved op per terminal; each admitted op
        // resolves exactly once; deadlines are exact; late completions change nothing.
        #[test]
        fn lane_invariants(steps in proptest::collection::vec(step_strategy(), 1..200)) {
            let bound = Duration::from_micros(500);
            let mut lane = AckLane::with_bound(bound);
            let mut now = Instant::ZERO;
            let mut next_op = 1u128;
            // What the lane must hold: terminal -> (op, handed off at).
            let mut open: BTreeMap<u32, (OperationId, Option<Instant>)> = BTreeMap::new();
            let mut resolved: BTreeSet<OperationId> = BTreeSet::new();
            let resolve = |op: OperationId, resolved: &mut BTreeSet<OperationId>| {
                assert!(resolved.insert(op), "{op} resolved twice");
            };
            for st in &steps {
                match *st {
                    Step::Admit(t) => {
                        let id = op(next_op);
                        next_op += 1;
                        let got = lane.admit(term(t), id);
                        if let Some(&(pending, _)) = open.get(&t) {
                            prop_assert_eq!(got, Err(LaneBusy { pending }));
                        } else {
                            prop_assert_eq!(got, Ok(()));
                            open.insert(t, (id, None));
                        }
                    }
                    Step::HandedOff(t) => {
                        let got = lane.handed_off(now, &term(t));
                        match open.get_mut(&t) {
                            Some((_, at @ None)) => {
                                prop_assert_eq!(got, Ok(now + bound));
                                *at = Some(now);
                            }
                            _ => prop_assert!(got.is_err()),
                        }
                    }
                    Step::Complete(t, stale) => {
                        // A stale completion names an op that is not pending on `t`.
                        let target = match (stale, open.get(&t)) {
                            (false, Some(&(id, _))) => Some(id),
                            _ => None,
                        };
                        let id = target.unwrap_or_else(|| op(next_op + 1000));
                        let got = lane.complete(&term(t), id);
                        if let Some(id) = target {
                            prop_assert_eq!(got.map(|p| p.op), Some(id));
                            open.remove(&t);
                            resolve(id, &mut resolved);
                        } else {
                            prop_assert_eq!(got, None);
                        }
                    }
                    Step::Abandon(t) => {
                        let got = lane.abandon(&term(t));
                        match open.get(&t) {
                            Some(&(id, None)) => {
                                prop_assert_eq!(got, Ok(id));
                                open.remove(&t);
                                resolve(id, &mut resolved);
                            }
                            _ => prop_assert!(got.is_err()),
                        }
                    }
                    Step::Remove(t) => {
                        let got = lane.remove_terminal(&term(t));
                        prop_assert_eq!(got.map(|p| p.op), open.remove(&t).map(|(id, _)| id));
                        if let Some(p) = got {
                            resolve(p.op, &mut resolved);
                        }
                    }
                    Step::Advance(us) => now += Duration::from_micros(us),
                    Step::HandleTimeout => {
                        let fired = lane.handle_timeout(now);
                        let mut want: Vec<(Instant, TerminalId, OperationId)> = open
                            .iter()
                            .filter_map(|(&t, &(id, at))| {
                                let deadline = at? + bound;
                                (deadline <= now).then(|| (deadline, term(t), id))
                            })
                            .collect();
                        want.sort();
                        let want: Vec<_> = want.into_iter().map(|(_, t, id)| (t, id)).collect();
                        prop_assert_eq!(&fired, &want);
                        for (t, id) in fired {
                            let TerminalId::Local(n) = t else { unreachable!() };
                            open.remove(&n);
                            resolve(id, &mut resolved);
                        }
                    }
                }
                // The lane holds exactly the unresolved operations, one per terminal at most.
                prop_assert_eq!(lane.len(), open.len());
                for t in 0..TERMINALS {
                    prop_assert_eq!(
                        lane.pending(&term(t)),
                        open.get(&t).map(|&(op, at)| PendingOp { op, deadline: at.map(|a| a + bound) })
                    );
                }
                prop_assert_eq!(
                    lane.poll_timeout(),
                    open.values().filter_map(|&(_, at)| at.map(|a| a + bound)).min()
                );
                for id in open.values().map(|&(id, _)| id) {
                    prop_assert!(!resolved.contains(&id));
                }
            }
        }
    }
}
