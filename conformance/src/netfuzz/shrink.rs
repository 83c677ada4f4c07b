//! Minimisation: delta debugging (Zeller's ddmin, complements only) over a session's actions,
//! then over the body bytes of each mutated frame that is left.

use std::time::{Duration, Instant};

use super::mutate::reframe;
use super::run::{Bounds, Kind, run_session};
use super::session::Action;
use crate::transport::Connector;
use phux_proto::framing::HEADER_LEN;

/// What minimisation did.
#[derive(Clone, Debug)]
pub struct Minimised {
    /// The smallest session found that still shows the finding.
    pub actions: Vec<Action>,
    /// Sessions run to find it.
    pub runs: usize,
}

struct Oracle<'a> {
    connector: &'a dyn Connector,
    kind: &'a Kind,
    bounds: &'a Bounds,
    runs: usize,
    budget: usize,
    deadline: Instant,
    /// What to call the finding in a progress line once a second, if anything.
    progress: Option<&'a str>,
    last_progress: Instant,
}

impl Oracle<'_> {
    fn spent(&self) -> bool {
        self.runs >= self.budget || Instant::now() >= self.deadline
    }

    fn reproduces(&mut self, actions: &[Action]) -> bool {
        if self.spent() {
            return false;
        }
        if let Some(label) = self.progress
            && self.last_progress.elapsed() >= Duration::from_secs(1)
        {
            self.last_progress = Instant::now();
            eprintln!(
                "netfuzz: minimising {label}: {} runs, {} actions in this candidate, {:.0}s left",
                self.runs,
                actions.len(),
                self.deadline
                    .saturating_duration_since(Instant::now())
                    .as_secs_f64()
            );
        }
        self.runs += 1;
        run_session(self.connector, actions, self.bounds)
            .finding
            .is_some_and(|f| &f.kind == self.kind)
    }
}

/// ddmin over a list: the smallest list (1-minimal as far as the budget allows) for which
/// `test` still holds.
fn ddmin<T: Clone>(mut cur: Vec<T>, test: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut n = 2usize;
    while cur.len() >= 2 {
        let chunk = cur.len().div_ceil(n);
        let smaller = (0..n)
            .map(|i| i * chunk)
            .filter(|&from| from < cur.len())
            .find_map(|from| {
                let to = (from + chunk).min(cur.len());
                let mut candidate = cur[..from].to_vec();
                candidate.extend_from_slice(&cur[to..]);
                test(&candidate).then_some(candidate)
            });
        if let Some(candidate) = smaller {
            cur = candidate;
            n = (n - 1).max(2);
        } else {
            if n >= cur.len() {
                break;
            }
            n = (n * 2).min(cur.len());
        }
    }
    cur
}

/// Minimises `actions`, which showed a finding of `kind`, in at most `budget` sessions and
/// `time`.
pub fn minimise(
    connector: &dyn Connector,
    actions: &[Action],
    kind: &Kind,
    bounds: &Bounds,
    budget: usize,
    time: Duration,
    progress: Option<&str>,
) -> Minimised {
    let mut o = Oracle {
        connector,
        kind,
        bounds,
        runs: 0,
        budget,
        deadline: Instant::now() + time,
        progress,
        last_progress: Instant::now(),
    };
    // What came after the finding showed played no part: cut it first.
    let acted = run_session(connector, actions, bounds).acted.max(1);
    let mut cur = actions[..acted.min(actions.len())].to_vec();
    if !o.reproduces(&cur) {
        cur = actions.to_vec();
    }
    cur = ddmin(cur, &mut |c: &[Action]| o.reproduces(c));
    // Then each mutated frame: first as the bytes it was, then with fewer body bytes.
    for i in 0..cur.len() {
        if o.spent() {
            break;
        }
        if !matches!(cur[i], Action::Mutated(..)) {
            continue;
        }
        let out = run_session(connector, &cur, bounds);
        o.runs += 1;
        let Some(bytes) = out.per_action.get(i).cloned() else {
            continue;
        };
        let mut candidate = cur.clone();
        candidate[i] = Action::Raw(bytes.clone());
        if !o.reproduces(&candidate) {
            continue;
        }
        cur = candidate;
        let true_header = bytes.len() >= HEADER_LEN
            && u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize
                == bytes.len() - 4;
        let shrunk = if true_header {
            let frame_type = bytes[4];
            let body = ddmin(bytes[HEADER_LEN..].to_vec(), &mut |b: &[u8]| {
                let mut c = cur.clone();
                c[i] = Action::Raw(reframe(frame_type, b));
                o.reproduces(&c)
            });
            reframe(frame_type, &body)
        } else {
            ddmin(bytes, &mut |b: &[u8]| {
                let mut c = cur.clone();
                c[i] = Action::Raw(b.to_vec());
                o.reproduces(&c)
            })
        };
        cur[i] = Action::Raw(shrunk);
    }
    Minimised {
        actions: cur,
        runs: o.runs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_needed_elements() {
        let list: Vec<u32> = (0..40).collect();
        let mut runs = 0;
        let min = ddmin(list, &mut |c: &[u32]| {
            runs += 1;
            c.contains(&7) && c.contains(&31)
        });
        assert_eq!(min, vec![7, 31]);
        assert!(runs < 100, "{runs}");
    }
}
