//! What the driver tells the engine, and the names both use for connections and terminals.

use std::fmt;

use super::{JobId, WriteOutcome};
use phux_proto::TerminalId;

/// A connection, as the driver names it. The driver picks the values; they must be unique
/// among open connections.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
pub struct ConnId(pub u64);

/// A terminal of this server, as the engine and its driver name it: the `N` of the wire's
/// `local:N`. Like every terminal id it means something only within one server incarnation.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
pub struct LocalTerminal(pub u32);

impl LocalTerminal {
    /// The local terminal a wire id names, if it names one of this server's.
    pub fn of(id: &TerminalId) -> Option<Self> {
        id.local().map(Self)
    }
}

impl From<LocalTerminal> for TerminalId {
    fn from(terminal: LocalTerminal) -> Self {
        Self::Local(terminal.0)
    }
}

impl fmt::Display for LocalTerminal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "local:{}", self.0)
    }
}

/// What the driver knows about a peer when it connects.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct PeerInfo {
    /// Whether the peer is on the server's local Unix socket (SHUTDOWN is accepted only there).
    pub local_socket: bool,
    /// Whether the peer's credentials passed the driver's check (same uid as the server).
    pub authorized: bool,
}

impl PeerInfo {
    /// An authorized peer on the local socket.
    pub fn local() -> Self {
        Self {
            local_socket: true,
            authorized: true,
        }
    }

    /// An authorized peer on any other transport (stdio over SSH, say).
    pub fn remote() -> Self {
        Self {
            local_socket: false,
            authorized: true,
        }
    }

    /// A peer on the local socket whose uid differs from the server's.
    pub fn foreign() -> Self {
        Self {
            local_socket: true,
            authorized: false,
        }
    }
}

/// What happened, as the driver reports it.
#[derive(Debug)]
pub enum ServerEvent<'a> {
    /// A peer connected.
    Connected {
        /// The new connection.
        conn: ConnId,
        /// What the driver knows about the peer.
        peer: PeerInfo,
    },
    /// Bytes arrived on a connection.
    Received {
        /// The connection.
        conn: ConnId,
        /// The bytes, in stream order.
        bytes: &'a [u8],
    },
    /// The driver handed this many of a connection's queued bytes to the transport.
    Sent {
        /// The connection.
        conn: ConnId,
        /// How many bytes left the queue.
        bytes: usize,
    },
    /// The connection is gone (peer closed, error, or after a `Close` action).
    Disconnected {
        /// The connection.
        conn: ConnId,
    },
    /// A `Spawn` action succeeded.
    Spawned {
        /// The terminal the action named.
        terminal: LocalTerminal,
        /// The child's process id.
        pid: u32,
    },
    /// A `Spawn` action failed.
    SpawnFailed {
        /// The terminal the action named.
        terminal: LocalTerminal,
        /// Why, for the spawner.
        message: String,
    },
    /// The terminal's program wrote output.
    PtyOutput {
        /// The terminal.
        terminal: LocalTerminal,
        /// The bytes read from the PTY master.
        bytes: &'a [u8],
    },
    /// A `Write` action finished.
    WriteDone {
        /// The terminal.
        terminal: LocalTerminal,
        /// The job the action named.
        job: JobId,
        /// What happened to its bytes.
        outcome: WriteOutcome,
    },
    /// The terminal's child exited and its remaining output has been reported.
    ChildExited {
        /// The terminal.
        terminal: LocalTerminal,
        /// `_exit` status, or `None` when killed by a signal.
        exit_status: Option<i32>,
    },
    /// The working directory of the program in a terminal, as the driver last read it
    /// ([SCREEN.SERVER.2]): `None` when it cannot be read or is not UTF-8.
    WorkingDirectory {
        /// The terminal.
        terminal: LocalTerminal,
        /// Its absolute path, at most [`MAX_CWD_LEN`](super::MAX_CWD_LEN) bytes.
        cwd: Option<String>,
    },
    /// The driver was asked to stop (SIGTERM, SIGINT).
    ShutdownRequested,
    /// The driver was asked to upgrade by a signal (SIGUSR2): as UPGRADE, with nobody to
    /// answer. Ignored while an upgrade is pending.
    UpgradeRequested {
        /// The new binary's path; `None` = the server's own.
        binary: Option<String>,
    },
    /// The driver could not carry out an `Upgrade` action (the new binary refused the state
    /// version, did not start, did not adopt): the old engine keeps serving, writes resume.
    UpgradeFailed {
        /// Why, for the requester.
        reason: String,
    },
    /// Reported to the engine restored from the state ([`ServerEngine::from_state`]) once the
    /// new image serves every connection and terminal: the requester is answered OK, writes
    /// resume.
    ///
    /// [`ServerEngine::from_state`]: super::ServerEngine::from_state
    UpgradeDone,
    /// A wake-up at or after [`ServerEngine::poll_timeout`](super::ServerEngine::poll_timeout).
    Timeout,
}
