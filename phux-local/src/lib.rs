//! Whom a phux process on this machine may talk to, shared by the server
//! (`phux-mio-server`, which binds and accepts by these rules), its bridge and `phuxctl`
//! (which dial by them): no protocol, no engine, so a client need not link the server.
//!
//! - [`socket`]: where the socket lives (the default path), the rules for its directory and
//!   file (owner and mode), and the peer's uid (SO_PEERCRED), with the server's error texts.
//! - [`verify`]: the client's side of the same rules, checked before it sends a byte
//!   (spec/client.md, CLIENT.PEER.N), with the client's error texts.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod socket;
pub mod verify;

pub use socket::{DirPolicy, PeerError, SocketError, socket_path};
pub use verify::{Target, TrustError};
