//! The phux protocol as pure state machines.
//!
//! No I/O, no clocks, no randomness: events go in (with `now`), actions come out, and
//! `poll_timeout` says when to call back. Drivers (the mio server, the conformance runner,
//! the fuzzers, the tests) carry out the actions.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod digest;
pub mod encoder;
pub mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod lane;
pub mod lease;
pub mod ledger;
pub mod modes;
pub mod server;
#[cfg(feature = "sim")]
pub mod sim;
pub mod terminal;
pub mod time;
pub mod writer;

pub use time::Instant;
