//! The operation ledger against a naive model: a `Vec` of records, linear scans, no queue.
//! Used by the proptest below and by the `ledger_model` fuzz target.

use std::time::Duration;

use phux_proto::OperationId;

use crate::ledger::{
    Admission, LedgerEntry, LedgerMisuse, LedgerRefusal, OperationLedger, OperationState, Owner,
    PayloadDigest,
};
use crate::time::Instant;
use crate::writer::WriteOutcome;

/// A ledger with small limits and a list of calls to make on it and on the model.
#[derive(Clone, Debug, arbitrary::Arbitrary)]
pub struct LedgerScenario {
    /// Records held at most (normalised to `1..=4`).
    pub capacity: u8,
    /// The horizon in microseconds (normalised to `1..=119`).
    pub horizon_us: u8,
    /// Records one owner may hold (normalised to `1..=4`).
    pub share: u8,
    /// The calls, in order.
    pub steps: Vec<LedgerStep>,
}

/// One call. Values are normalised into small ranges (ids `1..=6`, digests `0..3`, owners
/// `1..=2`, advances `0..40` µs) so that collisions, retries and expiry are common; the normalisation is the
/// identity on those ranges, so a proptest can generate them directly.
#[derive(Clone, Debug, arbitrary::Arbitrary)]
pub enum LedgerStep {
    /// `admit(now, owner, id, digest)`.
    Admit(u128, u8, u8),
    /// `handed_off(id)`.
    HandedOff(u128),
    /// `complete(id, result)`; the result is [`final_result`] of the two numbers.
    Complete(u128, u8, u32),
    /// `release(id)`.
    Release(u128),
    /// `forget(id)`.
    Forget(u128),
    /// Move the clock forward.
    Advance(u64),
    /// `handle_timeout(now)`.
    HandleTimeout,
    /// `get(id)`.
    Lookup(u128),
    /// `poll_timeout()` and `len()`.
    Poll,
}

/// The result a `Complete` step reports: kind `0..4` (Ok, DeliveryUnknown, Canonical, NotWritten)
/// and a canonical limit `0..3`.
pub fn final_result(kind: u8, limit: u32) -> WriteOutcome {
    match kind % 4 {
        0 => WriteOutcome::Written,
        1 => WriteOutcome::Unknown,
        2 => WriteOutcome::CanonicalRefused { limit: limit % 3 },
        _ => WriteOutcome::NotWritten,
    }
}

fn op(id: u128) -> OperationId {
    let n = 1 + id.wrapping_sub(1) % 6;
    OperationId::from_u128(n).unwrap_or_else(|| unreachable!("1..=6 is non-zero"))
}

fn owner(o: u8) -> Owner {
    Owner(1 + u32::from(o % 2))
}

fn dg(d: u8) -> PayloadDigest {
    PayloadDigest([d % 3; 32])
}

fn advance(us: u64) -> Duration {
    Duration::from_micros(us % 40)
}

#[derive(Clone, Copy, Debug)]
struct Record {
    digest: PayloadDigest,
    owner: Owner,
    admitted_at: Instant,
    state: OperationState,
    overdue: bool,
}

/// The naive reference ledger.
#[derive(Debug, Default)]
pub struct LedgerModel {
    records: Vec<(OperationId, Record)>,
    capacity: usize,
    share: usize,
    horizon: Duration,
    clock: Instant,
}

/// What one step returned, from either implementation.
#[derive(PartialEq, Debug)]
pub enum LedgerOut {
    /// `admit`.
    Admit(Result<Admission, LedgerRefusal>),
    /// `handed_off`, `complete`, `release`.
    Unit(Result<(), LedgerMisuse>),
    /// `get`.
    Lookup(Option<LedgerEntry>),
    /// `poll_timeout` and `len`.
    Poll(Option<Instant>, usize),
    /// Nothing to compare.
    None,
}

impl LedgerModel {
    /// A model with these limits.
    pub fn new(capacity: usize, share: usize, horizon: Duration) -> Self {
        Self {
            capacity,
            share,
            horizon,
            ..Self::default()
        }
    }

    fn prune(&mut self) {
        let (clock, horizon) = (self.clock, self.horizon);
        for (_, r) in &mut self.records {
            if !r.overdue && r.admitted_at + horizon <= clock {
                r.overdue = true;
            }
        }
        self.records
            .retain(|(_, r)| !r.overdue || r.state == OperationState::InFlight);
    }

    fn find(&mut self, id: OperationId) -> Option<&mut Record> {
        self.records
            .iter_mut()
            .find(|(i, _)| *i == id)
            .map(|(_, r)| r)
    }

    fn admit(&mut self, o: Owner, id: OperationId, d: PayloadDigest) -> LedgerOut {
        self.prune();
        let full = self.records.len() >= self.capacity;
        let share_full = self.records.len() >= self.capacity / 2
            && self.records.iter().filter(|(_, r)| r.owner == o).count() >= self.share;
        let clock = self.clock;
        LedgerOut::Admit(match self.find(id) {
            Some(r) if r.digest != d => Err(LedgerRefusal::DigestMismatch),
            Some(r) => Ok(match r.state {
                OperationState::Bound => Admission::Rebound,
                OperationState::InFlight => Admission::InFlight,
                OperationState::Final(x) => Admission::Cached(x),
            }),
            None if full => Err(LedgerRefusal::Full),
            None if share_full => Err(LedgerRefusal::ShareFull),
            None => {
                self.records.push((
                    id,
                    Record {
                        digest: d,
                        owner: o,
                        admitted_at: clock,
                        state: OperationState::Bound,
                        overdue: false,
                    },
                ));
                Ok(Admission::Fresh)
            }
        })
    }

    /// Applies one step to the model.
    pub fn step(&mut self, s: &LedgerStep) -> LedgerOut {
        match *s {
            LedgerStep::Admit(id, d, o) => self.admit(owner(o), op(id), dg(d)),
            LedgerStep::HandedOff(id) => {
                let id = op(id);
                LedgerOut::Unit(match self.find(id) {
                    None => Err(LedgerMisuse::Unknown { id }),
                    Some(r) if r.state == OperationState::Bound => {
                        r.state = OperationState::InFlight;
                        Ok(())
                    }
                    Some(r) => Err(LedgerMisuse::NotBound { id, state: r.state }),
                })
            }
            LedgerStep::Complete(id, kind, limit) => {
                let id = op(id);
                LedgerOut::Unit(match self.find(id) {
                    None => Err(LedgerMisuse::Unknown { id }),
                    Some(r) if r.state == OperationState::InFlight => {
                        r.state = OperationState::Final(final_result(kind, limit));
                        if r.overdue {
                            self.records.retain(|(i, _)| *i != id);
                        }
                        Ok(())
                    }
                    Some(r) => Err(LedgerMisuse::NotInFlight { id, state: r.state }),
                })
            }
            LedgerStep::Release(id) => {
                let id = op(id);
                LedgerOut::Unit(match self.find(id) {
                    None => Err(LedgerMisuse::Unknown { id }),
                    Some(r) if r.state == OperationState::Bound => Ok(()),
                    Some(r) => Err(LedgerMisuse::NotBound { id, state: r.state }),
                })
            }
            LedgerStep::Forget(id) => {
                let id = op(id);
                LedgerOut::Unit(match self.find(id) {
                    None => Err(LedgerMisuse::Unknown { id }),
                    Some(r) if r.state == OperationState::Bound => {
                        self.records.retain(|(i, _)| *i != id);
                        Ok(())
                    }
                    Some(r) => Err(LedgerMisuse::NotBound { id, state: r.state }),
                })
            }
            LedgerStep::Advance(us) => {
                self.clock = self.clock.saturating_add(advance(us));
                LedgerOut::None
            }
            LedgerStep::HandleTimeout => {
                self.prune();
                LedgerOut::None
            }
            LedgerStep::Lookup(id) => {
                let e = self.find(op(id)).map(|r| LedgerEntry {
                    digest: r.digest,
                    admitted_at: r.admitted_at,
                    state: r.state,
                });
                LedgerOut::Lookup(e)
            }
            LedgerStep::Poll => {
                let min = self
                    .records
                    .iter()
                    .filter(|(_, r)| !r.overdue)
                    .map(|(_, r)| r.admitted_at + self.horizon)
                    .min();
                LedgerOut::Poll(min, self.records.len())
            }
        }
    }
}

/// Applies one step to the real ledger, with the driver's clock.
fn real_step(l: &mut OperationLedger, clock: &mut Instant, s: &LedgerStep) -> LedgerOut {
    match *s {
        LedgerStep::Admit(id, d, o) => LedgerOut::Admit(l.admit(*clock, owner(o), op(id), dg(d))),
        LedgerStep::HandedOff(id) => LedgerOut::Unit(l.handed_off(op(id))),
        LedgerStep::Complete(id, kind, limit) => {
            LedgerOut::Unit(l.complete(op(id), final_result(kind, limit)))
        }
        LedgerStep::Release(id) => LedgerOut::Unit(l.release(op(id))),
        LedgerStep::Forget(id) => LedgerOut::Unit(l.forget(op(id))),
        LedgerStep::Advance(us) => {
            *clock = clock.saturating_add(advance(us));
            LedgerOut::None
        }
        LedgerStep::HandleTimeout => {
            l.handle_timeout(*clock);
            LedgerOut::None
        }
        LedgerStep::Lookup(id) => LedgerOut::Lookup(l.get(&op(id))),
        LedgerStep::Poll => LedgerOut::Poll(l.poll_timeout(), l.len()),
    }
}

/// Runs the scenario against the ledger and the model; panics at the first step where they
/// disagree or the ledger holds more than its capacity.
///
/// [INPUT.DEDUPE.1]-[INPUT.DEDUPE.9] and [INPUT.DEDUPE.12], step by step.
pub fn run_ledger(scenario: &LedgerScenario) {
    let capacity = 1 + usize::from(scenario.capacity.wrapping_sub(1) % 4);
    let horizon = Duration::from_micros(1 + u64::from(scenario.horizon_us.wrapping_sub(1) % 119));
    let share = 1 + usize::from(scenario.share.wrapping_sub(1) % 4);
    let mut real = OperationLedger::with_limits(capacity, horizon).with_share(share);
    let mut model = LedgerModel::new(capacity, share, horizon);
    let mut clock = Instant::ZERO;
    for (i, s) in scenario.steps.iter().enumerate() {
        let want = model.step(s);
        let got = real_step(&mut real, &mut clock, s);
        assert_eq!(got, want, "step {i} {s:?}");
        assert!(
            real.len() <= capacity,
            "step {i}: {} > {capacity}",
            real.len()
        );
        for o in [owner(0), owner(1)] {
            let held = model.records.iter().filter(|(_, r)| r.owner == o).count();
            assert_eq!(real.owned_by(o), held, "step {i}: {o:?}'s records");
            // Past its share only while the ledger was under half full when it admitted.
            assert!(
                held <= share.max(capacity / 2),
                "step {i}: {o:?} holds {held}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{LedgerScenario, LedgerStep, run_ledger};

    // The real ledger against the model, step by step: here, beside the model, as the
    // fuzz target runs it.

    fn step_strategy() -> impl Strategy<Value = LedgerStep> {
        let id = 1u128..=6;
        prop_oneof![
            4 => (id.clone(), 0u8..3, 0u8..2).prop_map(|(i, d, o)| LedgerStep::Admit(i, d, o)),
            2 => id.clone().prop_map(LedgerStep::HandedOff),
            2 => (id.clone(), 0u8..4, 0u32..3).prop_map(|(i, k, l)| LedgerStep::Complete(i, k, l)),
            1 => id.clone().prop_map(LedgerStep::Release),
            1 => id.clone().prop_map(LedgerStep::Forget),
            2 => (0u64..40).prop_map(LedgerStep::Advance),
            1 => Just(LedgerStep::HandleTimeout),
            1 => id.prop_map(LedgerStep::Lookup),
            1 => Just(LedgerStep::Poll),
        ]
    }

    proptest! {
        // [INPUT.DEDUPE.1]-[INPUT.DEDUPE.9] and [INPUT.DEDUPE.12] checked step by step against the naive model.
        #[test]
        fn ledger_matches_naive_model(
            capacity in 1u8..5,
            horizon_us in 1u8..120,
            share in 1u8..5,
            steps in proptest::collection::vec(step_strategy(), 1..200),
        ) {
            run_ledger(&LedgerScenario { capacity, horizon_us, share, steps });
        }
    }
}
