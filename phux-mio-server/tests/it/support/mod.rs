//! Helpers shared by the test modules: [`client`] starts the server binary and speaks frames
//! to it, [`common`] waits on PTY output and processes, [`faults`] adds what the fault-injection
//! tests need (restarts, descriptor limits, a seeded RNG, the probe child, raw frame streams),
//! [`launch`] finds example binaries and starts the server (shared with other crates' tests).

pub(crate) mod client;
pub(crate) mod common;
pub(crate) mod faults;
pub(crate) mod launch;
pub(crate) mod ws;
