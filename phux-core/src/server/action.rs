//! What the engine asks the driver to do.

use std::sync::Arc;
use std::time::Duration;

use super::{ConnId, JobId, LocalTerminal, SpawnSpec};
use phux_proto::command::Signal;
use phux_proto::frame::TerminalOutputTail;

/// How long a connection the engine closed may take to read what is queued for it (the
/// DETACHED it is owed, say) before the driver drops it ([QUEUE.CONTROL.3]): a peer that stops
/// reading cannot hold its socket and queue forever.
pub const CLOSE_BOUND: Duration = Duration::from_secs(5);

/// What the engine asks the driver to do, in order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ServerAction {
    /// Queue bytes (whole frames) on a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// Encoded frames.
        bytes: Vec<u8>,
    },
    /// Queue one frame whose head other connections are sent too: a chunk of output fanned
    /// out to several viewers is encoded once, not once per viewer. After any earlier `Send`.
    SendShared {
        /// The connection.
        conn: ConnId,
        /// The frame.
        frame: SharedFrame,
    },
    /// Flush what is queued for the connection, then close it; drop it unflushed once
    /// [`CLOSE_BOUND`] has passed.
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Start a terminal; answer with `Spawned` or `SpawnFailed`.
    Spawn {
        /// The id the engine gave it.
        terminal: LocalTerminal,
        /// What to run.
        spec: SpawnSpec,
    },
    /// Queue one job's bytes on the terminal's [`crate::writer::PtyWriter`], after every
    /// earlier job for it, and report its outcome with `WriteDone`.
    Write {
        /// The terminal.
        terminal: LocalTerminal,
        /// Echo it in `WriteDone`.
        job: JobId,
        /// The bytes, in order, as one job.
        bytes: Vec<u8>,
    },
    /// Set the PTY's window size.
    Resize {
        /// The terminal.
        terminal: LocalTerminal,
        /// Columns (≥ 1).
        cols: u16,
        /// Rows (≥ 1).
        rows: u16,
    },
    /// Send a signal to the terminal's process group.
    Signal {
        /// The terminal.
        terminal: LocalTerminal,
        /// Which signal.
        signal: Signal,
    },
    /// Close the PTY master, kill the process group and reap the child; report `ChildExited`.
    Kill {
        /// The terminal.
        terminal: LocalTerminal,
    },
    /// Every connection has been told; stop once the queued bytes are flushed.
    Shutdown,
    /// Upgrade in place: check that the binary reads this state version, wait for
    /// [`ServerEngine::upgrade_quiet`], export the state and exec the binary; report
    /// `UpgradeFailed` if anything fails. No write job is handed out until then.
    ///
    /// [`ServerEngine::upgrade_quiet`]: super::ServerEngine::upgrade_quiet
    Upgrade {
        /// The new binary's path; `None` = the binary the server was started from.
        binary: Option<String>,
    },
}

/// A TERMINAL_OUTPUT frame sent to several viewers: the head (everything through the output
/// bytes) is one buffer all of them share; the tail (stream and bootstrap) is this viewer's.
/// Its bytes are `head` followed by `tail`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SharedFrame {
    /// The frame through its output bytes, the same for every viewer of the chunk. Give it
    /// back with [`ServerEngine::reclaim_shared`](super::ServerEngine::reclaim_shared) once written.
    pub head: Arc<Vec<u8>>,
    /// This viewer's stream and bootstrap fields.
    pub tail: TerminalOutputTail,
}

impl SharedFrame {
    /// The frame's length in bytes.
    pub fn len(&self) -> usize {
        self.head.len() + TerminalOutputTail::LEN
    }

    /// Never: a frame has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Appends the frame's bytes, for a driver that keeps one buffer per connection.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(self.tail.as_bytes());
    }

    /// The frame's bytes in a buffer of their own.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        self.append_to(&mut bytes);
        bytes
    }
}
