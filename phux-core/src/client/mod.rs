//! The client side of the protocol: the retry policy, the durable outbox and the engine.

pub mod retry;
