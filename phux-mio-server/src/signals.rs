//! SIGTERM, SIGINT and SIGHUP as mio readiness.
//!
//! `signal-hook` installs an async-signal-safe handler that writes to a self-pipe;
//! `signal-hook-mio` registers the pipe's read end with our `Poll`. The event loop sees a
//! readable token and asks [`Signals::pending`] which signals arrived.
//!
//! SIGHUP shuts the server down like SIGTERM ([SERVER.SIGNAL.1]): the server has no
//! configuration to reload, and a hangup means the terminal (or SSH session) it was started
//! from is gone. Left at its default, SIGHUP would end the process at once, without DETACHED
//! for the clients, with its children orphaned and its socket left behind.

use std::io;

use mio::{Interest, Registry, Token};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// A signal that asks the server to shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShutdownSignal {
    /// SIGTERM.
    Terminate,
    /// SIGINT.
    Interrupt,
    /// SIGHUP: the terminal or session the server was started from went away.
    Hangup,
}

/// SIGTERM / SIGINT / SIGHUP delivered through the event loop. While this exists, those
/// signals no longer end the process by default.
pub struct Signals {
    inner: signal_hook_mio::v1_0::Signals,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").finish_non_exhaustive()
    }
}

impl Signals {
    /// Installs the handlers for SIGTERM, SIGINT and SIGHUP.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            // [SERVER.SIGNAL.1] SIGHUP is caught, and handled as SIGTERM is.
            inner: signal_hook_mio::v1_0::Signals::new([SIGTERM, SIGINT, SIGHUP])?,
        })
    }

    /// Registers the self-pipe for readability under `token`.
    pub fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.inner, token, Interest::READABLE)
    }

    /// Removes the self-pipe from `registry`.
    pub fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        registry.deregister(&mut self.inner)
    }

    /// The signals that arrived since the last call, in arrival order, without duplicates
    /// (a signal raised twice before this call is reported once). Never blocks.
    pub fn pending(&mut self) -> Vec<ShutdownSignal> {
        self.inner
            .pending()
            .filter_map(|sig| match sig {
                SIGTERM => Some(ShutdownSignal::Terminate),
                SIGINT => Some(ShutdownSignal::Interrupt),
                SIGHUP => Some(ShutdownSignal::Hangup),
                _ => None,
            })
            .collect()
    }
}
