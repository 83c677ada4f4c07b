//! The input lease table against a naive model: one slot per terminal, the rules written out
//! directly. Used by the proptest below and by the `lease_model` fuzz target.

use phux_proto::event::ControlAction;
use phux_proto::{ClientId, TerminalId};

use crate::lease::{AcquireMode, LeaseChange, LeaseHeld, LeaseState, LeaseTable};
use crate::time::Instant;

/// Terminals in play (`0..TERMINALS`).
pub(super) const TERMINALS: usize = 3;
/// Clients in play (`1..=CLIENTS`).
pub(super) const CLIENTS: u32 = 3;

/// One call. Values are normalised (terminal `% 3`, client into `1..=3`, ttl `% 30` ms,
/// advance `% 20 ms`); the normalisation is the identity on those ranges.
#[derive(Clone, Debug, arbitrary::Arbitrary)]
pub enum LeaseStep {
    /// `acquire(now, terminal, client, mode, ttl_ms)`; the bool is "seize".
    Acquire(usize, u32, bool, u32),
    /// `release(terminal, client)`.
    Release(usize, u32),
    /// `disconnect(client)`.
    Disconnect(u32),
    /// `remove_terminal(terminal)`.
    RemoveTerminal(usize),
    /// Move the clock forward by this many microseconds.
    Advance(u64),
    /// `handle_timeout(now)`.
    HandleTimeout,
    /// `check_input(now, terminal, client)`.
    Check(usize, u32),
}

fn term(i: usize) -> TerminalId {
    TerminalId::Local((i % TERMINALS) as u32)
}

fn slot(i: usize) -> usize {
    i % TERMINALS
}

fn client(c: u32) -> ClientId {
    ClientId(1 + c.wrapping_sub(1) % CLIENTS)
}

fn mode(seize: bool) -> AcquireMode {
    if seize {
        AcquireMode::Seize
    } else {
        AcquireMode::Cooperative
    }
}

fn ttl(ms: u32) -> u32 {
    ms % 30
}

fn advance(now: Instant, us: u64) -> Instant {
    Instant::from_micros(now.as_micros() + us % 20_000)
}

#[derive(Clone, Copy, Debug)]
struct MLease {
    holder: ClientId,
    mode: AcquireMode,
    expires: Option<Instant>,
}

/// The naive reference table.
#[derive(Debug, Default)]
pub struct LeaseModel {
    slots: [Option<MLease>; TERMINALS],
    now: Instant,
}

/// What one step returned, from either implementation.
#[derive(PartialEq, Debug)]
pub enum LeaseOut {
    /// `acquire`.
    Acquire(Result<LeaseChange, LeaseHeld>),
    /// `release`, `disconnect`, `handle_timeout`.
    Changes(Vec<LeaseChange>),
    /// `remove_terminal`.
    Holder(Option<ClientId>),
    /// `check_input`.
    Check(Result<(), LeaseHeld>),
    /// Nothing to compare.
    None,
}

fn released(i: usize, prior: ClientId, actor: Option<ClientId>) -> LeaseChange {
    LeaseChange {
        terminal: term(i),
        holder: None,
        action: ControlAction::Released,
        actor,
        prior_holder: Some(prior),
    }
}

impl LeaseModel {
    fn lapsed(&self, l: &MLease) -> bool {
        matches!(l.expires, Some(at) if at <= self.now)
    }

    /// The state the model records for terminal slot `i`.
    pub fn state(&self, i: usize) -> LeaseState {
        self.slots[slot(i)].map_or(LeaseState::Open, |l| LeaseState::Held {
            holder: l.holder,
            mode: l.mode,
            expires_at: l.expires,
        })
    }

    /// The earliest expiry the model records.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.slots.iter().flatten().filter_map(|l| l.expires).min()
    }

    /// Applies one step to the model.
    pub fn step(&mut self, s: &LeaseStep) -> LeaseOut {
        match *s {
            LeaseStep::Acquire(i, c, seize, ms) => {
                let (i, c, mode) = (slot(i), client(c), mode(seize));
                let prior = self.slots[i];
                let live = prior.filter(|l| !self.lapsed(l));
                let action = match live {
                    Some(l) if l.holder != c => {
                        if mode == AcquireMode::Cooperative {
                            return LeaseOut::Acquire(Err(LeaseHeld { holder: l.holder }));
                        }
                        ControlAction::Seized
                    }
                    _ => ControlAction::Acquired,
                };
                let ms = ttl(ms);
                let expires = (ms > 0)
                    .then(|| Instant::from_micros(self.now.as_micros() + u64::from(ms) * 1000));
                self.slots[i] = Some(MLease {
                    holder: c,
                    mode,
                    expires,
                });
                LeaseOut::Acquire(Ok(LeaseChange {
                    terminal: term(i),
                    holder: Some(c),
                    action,
                    actor: Some(c),
                    prior_holder: prior.map(|l| l.holder),
                }))
            }
            LeaseStep::Release(i, c) => {
                let (i, c) = (slot(i), client(c));
                match self.slots[i] {
                    Some(l) if l.holder == c => {
                        self.slots[i] = None;
                        LeaseOut::Changes(vec![released(i, c, Some(c))])
                    }
                    _ => LeaseOut::Changes(vec![]),
                }
            }
            LeaseStep::Disconnect(c) => {
                let c = client(c);
                let mut out = vec![];
                for i in 0..TERMINALS {
                    if self.slots[i].is_some_and(|l| l.holder == c) {
                        self.slots[i] = None;
                        out.push(released(i, c, Some(c)));
                    }
                }
                LeaseOut::Changes(out)
            }
            LeaseStep::RemoveTerminal(i) => {
                LeaseOut::Holder(self.slots[slot(i)].take().map(|l| l.holder))
            }
            LeaseStep::Advance(us) => {
                self.now = advance(self.now, us);
                LeaseOut::None
            }
            LeaseStep::HandleTimeout => {
                let mut due: Vec<(Instant, usize)> = (0..TERMINALS)
                    .filter_map(|i| {
                        let l = self.slots[i]?;
                        let at = l.expires?;
                        self.lapsed(&l).then_some((at, i))
                    })
                    .collect();
                due.sort_unstable();
                let mut out = vec![];
                for (_, i) in due {
                    if let Some(l) = self.slots[i].take() {
                        out.push(released(i, l.holder, None));
                    }
                }
                LeaseOut::Changes(out)
            }
            LeaseStep::Check(i, c) => LeaseOut::Check(match self.slots[slot(i)] {
                Some(l) if !self.lapsed(&l) && l.holder != client(c) => {
                    Err(LeaseHeld { holder: l.holder })
                }
                _ => Ok(()),
            }),
        }
    }
}

fn real_step(l: &mut LeaseTable, now: &mut Instant, s: &LeaseStep) -> LeaseOut {
    match *s {
        LeaseStep::Acquire(i, c, seize, ms) => {
            LeaseOut::Acquire(l.acquire(*now, term(i), client(c), mode(seize), ttl(ms)))
        }
        LeaseStep::Release(i, c) => {
            LeaseOut::Changes(l.release(&term(i), client(c)).into_iter().collect())
        }
        LeaseStep::Disconnect(c) => LeaseOut::Changes(l.disconnect(client(c))),
        LeaseStep::RemoveTerminal(i) => LeaseOut::Holder(l.remove_terminal(&term(i))),
        LeaseStep::Advance(us) => {
            *now = advance(*now, us);
            LeaseOut::None
        }
        LeaseStep::HandleTimeout => LeaseOut::Changes(l.handle_timeout(*now)),
        LeaseStep::Check(i, c) => LeaseOut::Check(l.check_input(*now, &term(i), client(c))),
    }
}

/// Runs the steps against the table and the model; panics at the first disagreement.
///
/// [LEASE.*]: every step equals the model; the recorded states and the next expiry agree; at
/// most one client may write to a held terminal; every holder change is reported by exactly
/// one change and none is reported when nothing changed.
pub fn run_lease(steps: &[LeaseStep]) {
    let mut real = LeaseTable::new();
    let mut model = LeaseModel::default();
    let mut now = Instant::ZERO;
    for (n, s) in steps.iter().enumerate() {
        let before: Vec<_> = (0..TERMINALS).map(|i| real.holder(&term(i))).collect();
        let want = model.step(s);
        let got = real_step(&mut real, &mut now, s);
        assert_eq!(got, want, "step {n} {s:?}");
        let after: Vec<_> = (0..TERMINALS).map(|i| real.holder(&term(i))).collect();
        for i in 0..TERMINALS {
            assert_eq!(
                real.state(&term(i)),
                model.state(i),
                "step {n} terminal {i}"
            );
        }
        assert_eq!(real.poll_timeout(), model.poll_timeout(), "step {n}");

        // [LEASE.GATE.1] At most one holder per terminal, and gating admits exactly it.
        for (i, holder) in after.iter().enumerate() {
            let admitted = (1..=CLIENTS)
                .filter(|&c| real.check_input(now, &term(i), ClientId(c)).is_ok())
                .count();
            let lapsed = real.expires_at(&term(i)).is_some_and(|at| at <= now);
            match holder {
                Some(_) if !lapsed => assert_eq!(admitted, 1, "step {n} terminal {i}"),
                _ => assert_eq!(admitted, CLIENTS as usize, "step {n} terminal {i}"),
            }
        }

        if matches!(s, LeaseStep::RemoveTerminal(_)) {
            continue; // a terminal going away is not a lease event
        }
        let changes: Vec<LeaseChange> = match got {
            LeaseOut::Acquire(Ok(c)) => vec![c],
            LeaseOut::Changes(v) => v,
            _ => vec![],
        };
        for i in 0..TERMINALS {
            let reported: Vec<_> = changes
                .iter()
                .filter(|c| c.terminal == term(i) && c.is_transition())
                .collect();
            if before[i] == after[i] {
                assert!(
                    reported.is_empty(),
                    "step {n} terminal {i} unchanged: {reported:?}"
                );
            } else {
                assert_eq!(reported.len(), 1, "step {n} terminal {i}");
                assert_eq!(reported[0].prior_holder, before[i], "step {n}");
                assert_eq!(reported[0].holder, after[i], "step {n}");
            }
        }
        // A non-transition change is only ever a renewal by the holder itself.
        for c in changes.iter().filter(|c| !c.is_transition()) {
            assert_eq!(c.action, ControlAction::Acquired, "step {n}");
            assert_eq!(c.actor, c.holder, "step {n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{LeaseStep, run_lease};

    // The real lease table against the model, step by step: here, beside the model, as the
    // fuzz target runs it.

    fn step_strategy() -> impl Strategy<Value = LeaseStep> {
        let t = 0usize..3;
        let c = 1u32..=3;
        let ttl = prop_oneof![Just(0u32), 1u32..30];
        prop_oneof![
            4 => (t.clone(), c.clone(), any::<bool>(), ttl)
                .prop_map(|(t, c, seize, ttl)| LeaseStep::Acquire(t, c, seize, ttl)),
            2 => (t.clone(), c.clone()).prop_map(|(t, c)| LeaseStep::Release(t, c)),
            1 => c.clone().prop_map(LeaseStep::Disconnect),
            1 => t.clone().prop_map(LeaseStep::RemoveTerminal),
            3 => (0u64..20).prop_map(|ms| LeaseStep::Advance(ms * 1000)),
            2 => Just(LeaseStep::HandleTimeout),
            2 => (t, c).prop_map(|(t, c)| LeaseStep::Check(t, c)),
        ]
    }

    proptest! {
        // [LEASE.*] every step equals the naive model; holder changes are reported exactly once.
        #[test]
        fn lease_table_matches_naive_model(
            steps in proptest::collection::vec(step_strategy(), 1..150),
        ) {
            run_lease(&steps);
        }
    }
}
