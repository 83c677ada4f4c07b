//! SIGTERM, SIGINT, SIGHUP and SIGUSR2 as mio readiness.
//!
//! `signal-hook` installs an async-signal-safe handler that writes to a self-pipe;
//! `signal-hook-mio` registers the pipe's read end with our `Poll`. The event loop sees a
//! readable token and asks [`Signals::pending`] which signals arrived.
//!
//! SIGHUP shuts the server down like SIGTERM ([SERVER.SIGNAL.1]): the server has no
//! configuration to reload, and a hangup means the terminal (or SSH session) it was started
//! from is gone. Left at its default, SIGHUP would end the process at once, without DETACHED
//! for the clients, with its children orphaned and its socket left behind.
//!
//! SIGUSR2 asks for an in-place upgrade to the server's own binary ([SERVER.UPGRADE.EXEC.1]),
//! as nginx uses it.

use std::io;

use mio::{Interest, Registry, Token};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR2};

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

/// A signal the server acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerSignal {
    /// Shut down.
    Shutdown(ShutdownSignal),
    /// SIGUSR2: upgrade in place to the server's own binary.
    Upgrade,
}

/// SIGTERM / SIGINT / SIGHUP / SIGUSR2 delivered through the event loop. While this exists, those
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
    /// Installs the handlers for SIGTERM, SIGINT, SIGHUP and SIGUSR2.
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            // [SERVER.SIGNAL.1] SIGHUP is caught, and handled as SIGTERM is.
            inner: signal_hook_mio::v1_0::Signals::new([SIGTERM, SIGINT, SIGHUP, SIGUSR2])?,
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
    pub fn pending(&mut self) -> Vec<ServerSignal> {
        self.inner
            .pending()
            .filter_map(|sig| match sig {
                SIGTERM => Some(ServerSignal::Shutdown(ShutdownSignal::Terminate)),
                SIGINT => Some(ServerSignal::Shutdown(ShutdownSignal::Interrupt)),
                SIGHUP => Some(ServerSignal::Shutdown(ShutdownSignal::Hangup)),
                SIGUSR2 => Some(ServerSignal::Upgrade),
                _ => None,
            })
            .collect()
    }
}
