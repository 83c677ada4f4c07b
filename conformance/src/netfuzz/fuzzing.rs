//! The `netfuzz_session` cargo-fuzz target's body: the session generator drawing its choices
//! from the fuzzer's input, run against our in-process engine (virtual time, deterministic)
//! with the campaign's oracles. Coverage of the engine steers libFuzzer; any finding panics,
//! with the session and what the oracle saw. The committed corpus is replayed by a stable test
//! (`conformance/tests/it/netfuzz.rs`).

use super::rng::Rng;
use super::run::{Bounds, run_session};
use super::session::{Shape, generate_from};
use crate::transport::InProcess;

/// Runs the session `data` chooses against our engine; panics on a finding.
pub fn session(data: &[u8]) {
    let shape = Shape {
        // A flood renders megabytes of screens: rare, so executions stay fast.
        flood: 0.01,
        ..Shape::default()
    };
    let actions = generate_from(&mut Rng::from_data(data), &shape);
    let out = run_session(&InProcess, &actions, &Bounds::default());
    if let Some(f) = out.finding {
        panic!(
            "netfuzz finding {:?}: {}\nsession: {actions:#?}",
            f.kind, f.detail
        );
    }
}
