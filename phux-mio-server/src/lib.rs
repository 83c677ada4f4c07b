//! The phux reference server: the operating-system layer (pseudo-terminals and their
//! children, the Unix socket, shutdown signals, the server id) and the mio [`driver`] that
//! runs a `phux_core::server::ServerEngine` on it. Only the engine knows the protocol.
//!
//! The event loop, by concern:
//!
//! - [`driver`]: the loop itself: poll, route readiness, feed each event to the engine (the one
//!   caller of `ServerEngine::handle`), flush, compute the next timeout.
//! - `host`: everything the engine's actions are performed on, and the one place they are
//!   performed; what it observes meanwhile it queues for the driver to feed.
//! - [`conn`] (a connection: transport, registration, write queue, closing state, with the
//!   queue itself in `queue`) and `terminal` (a terminal: its [`PtyChild`], registrations,
//!   `PtyWriter`, exit drain).
//! - `reader`: the one other thread, which reads the masters of the terminals in a burst of
//!   output while the loop feeds the engine and writes the clients (the loop's side of it is
//!   `driver`'s `burst.rs`).
//! - `flush`: the flush policy, when a connection's queue is written; `timer`: the driver's
//!   own deadlines; [`clock`]: the only reader of the OS clock.
//! - [`memory`]: the heap given back to the system after a load.
//! - [`bridge`]: not the loop: `phux-mio-server bridge` joins stdio to a running server,
//!   by handing its stdin and stdout to it ([`handoff`]) or by copying.
//! - [`nofile`]: the descriptor limit, raised for the server at start and given back to its
//!   children.
//!
//! `unsafe` appears in four places: in [`child::spawn`]'s `pre_exec` hook and the reset of
//! signal dispositions it calls (libc's `sigaction`), where std offers no safe way to make the
//! slave the child's controlling terminal nor to give the child default dispositions; in
//! [`memory::trim`], glibc's
//! `malloc_trim`, which neither std nor rustix offers; in [`upgrade`], where the new image
//! of an in-place upgrade takes ownership of the descriptors the previous image left it by
//! number (`OwnedFd::from_raw_fd`), which no safe API can do; and in [`run`], where such an
//! image removes the variable naming those descriptors from its environment
//! (`std::env::remove_var`) before it starts a thread. The crate denies `unsafe_code`,
//! and those places allow it.

#![deny(unsafe_code)]

pub mod bridge;
pub mod child;
pub mod clock;
pub mod config;
pub mod conn;
pub mod driver;
mod flush;
pub mod handoff;
mod host;
pub mod memory;
pub mod nofile;
pub mod pty;
mod queue;
pub mod rand;
mod reader;
pub mod run;
pub mod signals;
pub mod socket;
mod terminal;
mod timer;
pub mod upgrade;
pub mod ws;

pub use child::{ChildExit, GroupSignal, PtyChild, SpawnError, SpawnSpec, spawn};
pub use pty::{PtyRead, PtyWrite};
pub use rand::server_id;
pub use signals::{ServerSignal, ShutdownSignal, Signals};
pub use socket::{
    DirPolicy, PeerError, ServerSocket, SocketError, check_peer, peer_uid, socket_path,
};
