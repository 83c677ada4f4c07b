//! `phux-bench`'s parts: a blocking phux client, the tmux and dtach contenders, the helper
//! roles the binary runs as copies of itself, and the measurements of each section.
//!
//! The binary (`src/main.rs`) runs the sections and prints the report; everything here is
//! usable on its own (for instance to time one contender from a test).
// Figures are statistics of timings and byte counts far below 2^52: the float conversions
// lose nothing that matters, and spelling each one out would bury the arithmetic.
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

pub mod client;
pub mod commands;
pub mod core;
pub mod error;
pub mod hostile;
pub mod hostile_ws;
pub mod latency;
pub mod payload;
pub mod procs;
pub mod report;
pub mod roles;
pub mod scale;
pub mod ssh;
pub mod stats;
pub mod throughput;
pub mod tmux;
pub mod upgrade;
pub mod upgrade_memory;
pub mod ws;
