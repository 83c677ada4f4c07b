//! The web client's tests: the key table shared with the TypeScript unit tests, the committed
//! bundle against a rebuild, and the client in a real browser through a fault-injecting proxy.

mod backlog;
mod browser;
mod bundle;
mod campaign;
mod faults;
mod hostile;
mod keys_fixture;
mod lease;
mod ours;
mod support;
