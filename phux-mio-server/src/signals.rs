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
//!
//! Across an upgrade's exec these four are blocked ([SERVER.UPGRADE.EXEC.9]): an exec resets a
//! caught signal to its default disposition, which for each of them ends the process (and,
//! through `PR_SET_PDEATHSIG`, every terminal's program). The signal mask and the pending
//! signals survive `execve`, so a signal sent meanwhile waits, and the new image takes it once
//! its handlers are in place and it serves ([`Signals::hold`], [`Signals::install`],
//! [`unblock`]).

use std::io;

use mio::{Interest, Registry, Token};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR2};

/// The signals the server catches.
const HANDLED: [i32; 4] = [SIGTERM, SIGINT, SIGHUP, SIGUSR2];

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
    /// Installs the handlers for SIGTERM, SIGINT, SIGHUP and SIGUSR2 and unblocks the four, so
    /// that a server started with any of them blocked still hears them.
    pub fn new() -> io::Result<Self> {
        let signals = Self::install()?;
        unblock()?;
        Ok(signals)
    }

    /// Installs the handlers and leaves the signal mask as it is: a new image adopting an
    /// upgrade's state keeps them blocked, as the previous image left them, until it serves
    /// ([`unblock`]); if it cannot adopt, they stay blocked across its exec of the previous
    /// binary too.
    pub fn install() -> io::Result<Self> {
        Ok(Self {
            // [SERVER.SIGNAL.1] SIGHUP is caught, and handled as SIGTERM is.
            inner: signal_hook_mio::v1_0::Signals::new(HANDLED)?,
        })
    }

    /// Blocks the four for an exec ([SERVER.UPGRADE.EXEC.9]), and raises again those caught
    /// since the loop last read the self-pipe, which does not cross the exec: they wait as
    /// pending signals for the image that runs next. Dropping the [`Held`] (the exec failed)
    /// unblocks them, and this image hears them through its handlers as usual.
    pub fn hold(&mut self) -> io::Result<Held> {
        set_blocked(Block::Block)?;
        let held = Held;
        let us = rustix::process::getpid();
        for raw in self.inner.pending() {
            if let Some(signal) = rustix::process::Signal::from_named_raw(raw) {
                // Blocked: it stays pending; it is one of our own four, so it cannot fail but
                // for a pid that is not ours.
                rustix::process::kill_process(us, signal)?;
            }
        }
        Ok(held)
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

/// The handled signals blocked, until this is dropped (see [`Signals::hold`]).
#[derive(Debug)]
#[must_use = "the signals are unblocked when this is dropped"]
pub struct Held;

impl Drop for Held {
    fn drop(&mut self) {
        if let Err(e) = unblock() {
            tracing::error!(error = %e, "cannot unblock the shutdown and upgrade signals");
        }
    }
}

/// Blocks the handled signals in the calling thread for good: a thread other than the loop's
/// (the PTY reader) never runs their handlers, so they reach the loop's thread, whose mask
/// [`Signals::hold`] sets for an exec.
pub(crate) fn block_in_this_thread() -> io::Result<()> {
    set_blocked(Block::Block)
}

/// Unblocks the handled signals: those pending are delivered to the handlers now.
pub fn unblock() -> io::Result<()> {
    set_blocked(Block::Unblock)
}

#[derive(Clone, Copy)]
enum Block {
    Block,
    Unblock,
}

fn set_blocked(how: Block) -> io::Result<()> {
    let how = match how {
        Block::Block => libc::SIG_BLOCK,
        Block::Unblock => libc::SIG_UNBLOCK,
    };
    // SAFETY: rustix offers no signal mask outside its libc-free runtime, so libc's; the set
    // is a local `sigset_t` initialised by `sigemptyset` before `sigaddset` adds valid signal
    // numbers to it, and no old mask is asked for. The mask is the calling thread's: the loop's
    // thread sets it for the process, as the one other thread blocks the four for good.
    #[allow(unsafe_code)]
    let rc = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in HANDLED {
            libc::sigaddset(&raw mut set, signal);
        }
        libc::pthread_sigmask(how, &raw const set, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocked(signal: i32) -> bool {
        // SAFETY: as in `set_blocked`; only the current mask is read.
        #[allow(unsafe_code)]
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &raw mut set);
            libc::sigismember(&raw const set, signal) == 1
        }
    }

    #[test]
    fn holding_blocks_the_four_until_dropped() {
        // In a thread of its own: the mask is the thread's, and the test harness has more.
        std::thread::spawn(|| {
            let mut signals = Signals::install().expect("install");
            let held = signals.hold().expect("hold");
            assert!(HANDLED.iter().all(|&s| blocked(s)));
            assert!(!blocked(libc::SIGUSR1));
            drop(held);
            assert!(!HANDLED.iter().any(|&s| blocked(s)));
        })
        .join()
        .expect("thread");
    }
}
