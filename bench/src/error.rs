//! What can stop a measurement.

use std::io;

/// Why a measurement could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused something (spawn, socket, PTY, read, write).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A peer (the server, tmux, a relay) said something we did not expect.
    #[error("unexpected reply: {0}")]
    Protocol(String),
    /// The server sent bytes that are not a phux frame.
    #[error("undecodable frame: {0}")]
    Decode(#[from] phux_proto::decode_error::DecodeError),
    /// A peer went quiet for longer than the deadline.
    #[error("timed out waiting for {0}")]
    Timeout(String),
}

/// A result whose error says which step failed.
pub type Result<T> = std::result::Result<T, Error>;

/// Attaches a description to an I/O error.
pub trait Context<T> {
    /// Wraps the error with `what`.
    fn context(self, what: impl Into<String>) -> Result<T>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.map_err(|source| Error::Io {
            what: what.into(),
            source,
        })
    }
}

impl<T> Context<T> for rustix::io::Result<T> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.map_err(|e| Error::Io {
            what: what.into(),
            source: e.into(),
        })
    }
}
