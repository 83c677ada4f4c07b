//! phux-proto's integration tests, in one binary (one link, one run): a module per concern.
//!
//! The binary installs a counting global allocator (`common::alloc`) whose counters are per
//! thread, so the allocation bounds hold however the other tests run alongside.

mod alloc_bound;
mod common;
mod fuzz_corpus;
mod props;
mod vectors;
