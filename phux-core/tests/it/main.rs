//! phux-core's integration tests, linked as one binary: one module per area (each was its own
//! test binary), so `cargo test` links the engine, the simulator and the codec once instead of
//! ten times.
//!
//! The proptest regression files of these modules live in `tests/proptest-regressions/`:
//! proptest's default persistence finds the directory holding this `main.rs` and mirrors each
//! module's path there (`engine_schedules.rs` -> `proptest-regressions/engine_schedules.txt`).

mod client_engine;
mod client_outbox;
mod client_schedules;
mod client_submissions;
mod engine_commands;
mod engine_handshake;
mod engine_input;
mod engine_leases;
mod engine_limits;
mod engine_output;
mod engine_regressions;
mod engine_replies;
mod engine_schedules;
mod engine_upgrade;
mod engine_upgrade_state;
mod fuzz_corpus;
