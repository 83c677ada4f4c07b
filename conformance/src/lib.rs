//! The phux conformance suite: transcripts, the runner, its transports and reports.
//!
//! A transcript (`conformance/transcripts/<area>/<NNN>-<slug>.phuxt`, format in
//! `conformance/README.md`) is a list of steps, each citing the spec clause it checks. The
//! [`runner::Runner`] replays it against a server through a [`transport::Connector`] (in
//! process, a Unix socket, or a `--stdio` child) and reports PASS, FAIL, NON_STRICT,
//! UNSUPPORTED, DISABLED or ERROR per case.

pub mod coverage;
pub mod pattern;
pub mod probe;
pub mod recorder;
pub mod report;
pub mod runner;
pub mod spec;
pub mod suite;
pub mod transcript;
pub mod transport;
