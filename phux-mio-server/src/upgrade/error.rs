//! Why an upgrade did not happen: one error for every step, its text the requester's.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why an upgrade did not happen. The text goes to the requester in its ERROR.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpgradeError {
    /// The new binary cannot be run or named.
    #[error("cannot run {binary}: {source}")]
    Binary {
        /// The binary.
        binary: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// `--check-upgrade` said no: it exited with a failure, or without the confirmation line.
    #[error("{binary} refused state version {version}: {detail}")]
    Refused {
        /// The binary.
        binary: PathBuf,
        /// Our state version.
        version: u32,
        /// Its exit status and what it printed.
        detail: String,
    },
    /// `--check-adopt` did not adopt the image: it exited with a failure, or without the line
    /// that says what it found ([SERVER.UPGRADE.EXEC.10]).
    #[error("{binary} cannot adopt this server's state: {detail}")]
    CannotAdopt {
        /// The binary.
        binary: PathBuf,
        /// Its exit status and what it printed.
        detail: String,
    },
    /// A check did not answer in time; it was killed.
    #[error("{binary} did not answer {what} within {} ms; killed", limit.as_millis())]
    CheckTimedOut {
        /// The binary.
        binary: PathBuf,
        /// Which check.
        what: &'static str,
        /// Its bound.
        limit: Duration,
    },
    /// The binary's file changed (in place) after it was checked.
    #[error("{binary} changed after it was checked")]
    Changed {
        /// The binary.
        binary: PathBuf,
    },
    /// The engine did not become quiet in time.
    #[error("{0}")]
    NotQuiet(String),
    /// Another upgrade is in progress.
    #[error("an upgrade is already in progress")]
    Busy,
    /// This server was started without what an upgrade needs (its own binary's path).
    #[error("this server cannot upgrade in place: it could not name its own binary at start")]
    Unavailable,
    /// Writing the image, or preparing the descriptors, failed.
    #[error("cannot hand the state over: {0}")]
    Handover(#[source] io::Error),
    /// `execve` failed.
    #[error("exec {binary} failed: {source}")]
    Exec {
        /// The binary.
        binary: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}
