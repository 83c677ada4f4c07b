//! Why a run fails, and the exit status of each failure and verdict.

use std::path::PathBuf;

use phux_core::client::PeerMisbehaved;
use phux_local::verify;
use phux_proto::ErrorCode;
use phux_proto::frame::SpawnError;

use crate::outbox_store::StoreError;

/// Success (for `send` and `paste`: delivered).
pub const EXIT_OK: u8 = 0;
/// A local failure: the outbox, the tty, input that cannot be sent, an unusable answer.
pub const EXIT_LOCAL: u8 = 1;
/// Bad usage (clap's own code).
pub const EXIT_USAGE: u8 = 2;
/// Input whose delivery is unknown (it may or may not have been written).
pub const EXIT_UNKNOWN: u8 = 3;
/// Refused by the server (for input: nothing was written).
pub const EXIT_REFUSED: u8 = 4;
/// The server could not be reached, or the connection failed.
pub const EXIT_CONNECTION: u8 = 5;
/// The input was delivered (its verdict printed is the server's), but the outbox journal
/// could not be brought up to date afterwards ([CLIENT.VERDICT.1]).
pub const EXIT_BOOKKEEPING: u8 = 6;
/// Test-only: the [`crate::conn::TEST_EXIT_AFTER_SEND`] hook fired.
pub const EXIT_TEST_HOOK: i32 = 86;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CtlError {
    /// The socket could not be dialled.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The `--exec` command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Exec {
        /// The command line.
        command: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The connection ended early.
    #[error("{0}")]
    ConnectionLost(String),
    /// The server broke the protocol.
    #[error("the server broke the protocol: {0}")]
    Protocol(PeerMisbehaved),
    /// The server did not answer in time.
    #[error(
        "no answer from the server in time (waiting for {0}); it may be stopped or overloaded \
         (--timeout SECS sets the wait)"
    )]
    Timeout(&'static str),
    /// The server refused a command.
    #[error("refused: {code} {message}")]
    Refused {
        /// The wire code.
        code: ErrorCode,
        /// The server's text.
        message: String,
    },
    /// SPAWN_TERMINAL failed.
    #[error("spawn failed: {0}")]
    SpawnFailed(String),
    /// The outbox journal.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The outbox journal could not record input before its send ([CLIENT.JOURNAL.11]):
    /// nothing it did not record was sent; `detail` says what stays queued and what is gone.
    #[error("{source}; so nothing more was sent. {detail}")]
    Unjournaled {
        /// Why the journal could not record it.
        #[source]
        source: StoreError,
        /// Each operation concerned, and what became of it.
        detail: String,
    },
    /// Input the outbox does not take (empty, too large).
    #[error("cannot send that input: {0}")]
    Input(String),
    /// Anything else local.
    #[error("{0}")]
    Local(String),
    /// The socket is not the user's own (CLIENT.PEER.N): nothing was sent.
    #[error(transparent)]
    Untrusted(Box<verify::TrustError>),
    /// The server answered OK but did not do what was asked (another client's lease stays
    /// held): exit 4, as a refusal.
    #[error("{0}")]
    NotDone(String),
    /// Bad usage found after parsing (clap's exit status).
    #[error("{0}")]
    Usage(String),
}

impl CtlError {
    /// The exit status for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Connect { .. }
            | Self::Exec { .. }
            | Self::ConnectionLost(_)
            | Self::Protocol(_)
            | Self::Timeout(_)
            | Self::Untrusted(_) => EXIT_CONNECTION,
            Self::Refused { .. } | Self::SpawnFailed(_) | Self::NotDone(_) => EXIT_REFUSED,
            Self::Store(_) | Self::Unjournaled { .. } | Self::Input(_) | Self::Local(_) => {
                EXIT_LOCAL
            }
            Self::Usage(_) => EXIT_USAGE,
        }
    }
}

/// The exit status of a verb that ends with the terminal's program (`attach`, `watch`): the
/// program's own status (its low 8 bits, as a shell sees it), or 1 when a signal ended it and
/// so the protocol carries no status.
pub fn program_exit_code(status: Option<i32>) -> u8 {
    status.map_or(EXIT_LOCAL, |s| u8::try_from(s & 0xff).unwrap_or(EXIT_LOCAL))
}

/// A TERMINAL_SPAWNED refusal in words.
pub fn spawn_error_text(error: &SpawnError) -> String {
    match error {
        SpawnError::GroupNotFound => "the server has no such group".to_owned(),
        SpawnError::SpawnFailed(why) => why.clone(),
        SpawnError::UnsupportedSatelliteRoute => {
            "this server does not route to satellites".to_owned()
        }
        SpawnError::SatelliteUnreachable(why) => format!("the satellite is unreachable: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn exit_codes_are_distinct() {
        let codes = [
            EXIT_OK,
            EXIT_LOCAL,
            EXIT_USAGE,
            EXIT_UNKNOWN,
            EXIT_REFUSED,
            EXIT_CONNECTION,
            EXIT_BOOKKEEPING,
        ];
        let set: HashSet<u8> = codes.into_iter().collect();
        assert_eq!(set.len(), codes.len());
    }
}
