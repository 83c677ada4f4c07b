//! The terminal modes that change how input is encoded.
//!
//! `TerminalState` tracks them from the program's output; `InputEncoder` reads one snapshot
//! per batch. One definition, in phux-term's VT model, so the two can never disagree; it is
//! re-exported here so both sides name it from phux-core.

pub use phux_term::modes::{KittyFlags, MouseEncoding, MouseTracking, TerminalModes};
