//! The operating-system layer of the phux reference server: pseudo-terminals and their
//! children, the Unix socket, shutdown signals and the server id. The mio event loop and the
//! protocol driver build on these; nothing here knows the protocol.
//!
//! `unsafe` appears once, in [`child::spawn`]'s `pre_exec` hook, where std offers no safe way
//! to make the slave the child's controlling terminal.

pub mod child;
pub mod clock;
pub mod config;
pub mod conn;
pub mod pty;
pub mod rand;
pub mod signals;
pub mod socket;
pub mod writer;

pub use child::{ChildExit, GroupSignal, PtyChild, SpawnError, SpawnSpec, spawn};
pub use pty::{PtyRead, PtyWrite, TermiosFlags};
pub use rand::server_id;
pub use signals::{ShutdownSignal, Signals};
pub use socket::{
    DirPolicy, PeerError, ServerSocket, SocketError, check_peer, peer_uid, socket_path,
};
