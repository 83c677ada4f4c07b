//! The integration tests of phux-conformance, in one test binary (one link, one process to
//! start): one module per concern.
//!
//! Nothing here invokes cargo. The probe child is this crate's own binary
//! (`CARGO_BIN_EXE_phux-conformance`); the real server is this package's example
//! `conformance-test-server` (`examples/conformance-test-server.rs`), which `cargo test` builds
//! before it runs the tests.

#[path = "../../../phux-mio-server/tests/it/support/launch.rs"]
mod launch;

mod coverage;
mod keydiff;
mod module_circles;
mod mutants;
mod netfuzz;
mod paste_reference;
mod peer;
mod probe_canonical;
mod probe_raw;
mod probe_signals;
mod probe_stall;
mod probe_util;
mod record_cli;
mod run_cli;
mod runner_blame;
mod screen_diff;
mod suite;
mod wire_cli;
mod workspace;
