//! `phux-conformance` as a library: the parts the binary and the conformance transports share.

pub mod probe;
