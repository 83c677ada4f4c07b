//! The in-place upgrade's operating-system side: the new binary opened once and asked whether
//! it reads our state, the image written into a sealed memfd and adopted there on trial, the
//! descriptors that cross the exec, the exec itself, and taking the descriptors back on the
//! other side.
//!
//! The protocol side (what UPGRADE means, the engine's whole state as data) is phux-core's;
//! the driver (`driver/upgrade.rs`) sequences the steps:
//!
//! 1. **check**: the binary is opened once ([`Exe`]): everything below runs that file, however
//!    its path changes meanwhile. `BIN --check-upgrade VERSION` runs as a child ([`Checker`])
//!    while the loop serves on; it must exit 0 and print [`check_line`] within
//!    [`CHECK_TIMEOUT`] ([SERVER.UPGRADE.EXEC.2]);
//! 2. **quiesce**: the engine starts no new PTY write; once no job is in progress
//!    (bounded by [`QUIESCE_BOUND`]) ...
//! 3. **trial**: the engine's state and the [`HostImage`] are written once, straight into a
//!    memfd, which is then sealed ([`image_file`], [`seal`]); a child of the new binary,
//!    `BIN --check-adopt` with the image on its stdin, reads and validates all of it as an
//!    adoption does and prints [`adopt_line`] ([SERVER.UPGRADE.EXEC.10]);
//! 4. **commit**: the shutdown and upgrade signals are blocked (`Signals::hold`), every
//!    descriptor to keep loses `FD_CLOEXEC` ([`Inherit`]), and the process execs the new
//!    binary in place ([`exec`]): the same pid, so the PTY children stay our children;
//! 5. **adopt**: the new image maps the image ([`load_image`]), takes the descriptors back
//!    ([`adopt_fds`]), rebuilds the engine and the host, answers the requester and only then
//!    unblocks the signals; if it cannot, it execs the previous binary (kept open as a
//!    descriptor, [`open_own_exe`]) with the same image and the reason.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use phux_core::server::ServerConfig;
use phux_core::upgrade::{EngineState, ImageError};
use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};
use rustix::io::FdFlags;
use serde::{Deserialize, Serialize, Serializer};

/// How long `BIN --check-upgrade` may take before it is killed and the upgrade refused: a
/// binary that hangs must not hold the upgrade (or the requester) for long, and starting a
/// program that prints one line takes milliseconds, even on a loaded machine.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the engine may take to become quiet (no PTY write job in progress) once the
/// check passed. A job in progress is a write a child is not reading; 2 s is long enough for
/// any child that reads its input, and short enough that one that does not fails the upgrade
/// quickly ([SERVER.UPGRADE.EXEC.3]).
pub const QUIESCE_BOUND: Duration = Duration::from_secs(2);

/// The most of a check's output kept for the reason of a refusal.
const CHECK_OUTPUT_MAX: usize = 512;

/// The image bytes a trial adoption is given a second for, beyond [`CHECK_TIMEOUT`]: decoding
/// runs at hundreds of MB a second, so this leaves a loaded machine a wide margin.
const TRIAL_BYTES_PER_SECOND: u64 = 32 << 20;

/// How long the trial adoption of an image of `len` bytes may take before it is killed and
/// the upgrade refused ([SERVER.UPGRADE.EXEC.10]). The server serves nothing meanwhile.
pub fn trial_timeout(len: u64) -> Duration {
    CHECK_TIMEOUT + Duration::from_secs(len / TRIAL_BYTES_PER_SECOND)
}

/// The environment variable that makes a new image (not one taking its state back) fail its
/// adoption after reading the image, as a binary that cannot adopt would: the way the tests
/// reach the way back of [SERVER.UPGRADE.EXEC.6] with a real binary. It is removed from the
/// environment of the previous binary exec'd then.
pub const TEST_FAIL_ADOPTION: &str = "PHUX_MIO_SERVER_TEST_FAIL_ADOPTION";

/// The line `--check-upgrade VERSION` prints on stdout when this binary reads state version
/// `version`. Requiring it (and not only exit status 0) keeps a program that is not a
/// phux-mio-server at all, or that exits 0 at once, from being exec'd ([SERVER.UPGRADE.EXEC.2]).
pub fn check_line(version: u32) -> String {
    format!("phux-mio-server reads upgrade state version {version}")
}

/// What an image holds, as the running server counts it and as a trial adoption finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// The image's length.
    pub bytes: u64,
    /// The terminals in the engine's state.
    pub terminals: usize,
    /// The connections in the engine's state.
    pub connections: usize,
    /// The dedupe ledger's entries.
    pub ledger: usize,
}

/// The line `--check-adopt` prints once it has read and validated an image: what it found,
/// which the server compares with what it wrote, so the line proves the image was read.
pub fn adopt_line(summary: &Summary) -> String {
    format!(
        "phux-mio-server adopts this image: {} bytes, {} terminals, {} connections, {} ledger \
         entries",
        summary.bytes, summary.terminals, summary.connections, summary.ledger
    )
}

/// The host's half of the image: everything the driver holds that must cross the exec. The
/// engine's half is `phux_core::server::EngineState`; both travel in one envelope
/// (`phux_core::upgrade`). Descriptors are numbers: the descriptors themselves cross the
/// exec because `FD_CLOEXEC` is cleared on each. This is state version 2's layout
/// ([`Self::decode`] reads version 1's too).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct HostImage {
    /// The clock's epoch, an absolute `CLOCK_MONOTONIC` reading in nanoseconds: the engine's
    /// instants (deadlines, lease expiries) continue across the exec.
    pub clock_epoch_nanos: u64,
    /// The binary the new image runs: its own binary for the next upgrade.
    pub binary: PathBuf,
    /// The binary the previous image ran, for a fallback.
    pub previous_binary: PathBuf,
    /// What rebuilds the engine's configuration and the log.
    pub launch: Launch,
    /// The listening socket, when serving one.
    pub listener: Option<ListenerImage>,
    /// `--stdio`: stdin's and stdout's file status flags as the first image found them.
    pub stdio_flags: Option<(u32, u32)>,
    /// The next connection id the host hands out.
    pub next_conn: u64,
    /// The heads of output frames several connections are sent ([`Piece::Shared`]), each
    /// once: they stay shared in the new image.
    #[serde(deserialize_with = "byte_strings")]
    pub shared: Vec<Vec<u8>>,
    /// Every connection the host holds.
    pub conns: Vec<ConnImage>,
    /// Every terminal the host holds.
    pub terminals: Vec<TermImage>,
    /// The new binary, open (it crossed the exec, for a script's interpreter to read): closed
    /// once the state is adopted.
    pub exec_fd: Option<RawFd>,
}

/// What the server was started with that is not protocol state: the engine's configuration
/// that the command line chose, and where the log goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The 16-byte server id, unchanged across upgrades ([SERVER.ID.1]).
    pub server_id: Vec<u8>,
    /// The default terminal command.
    pub default_command: Vec<String>,
    /// `--max-connections`.
    pub max_connections: usize,
    /// The terminal cap.
    pub max_terminals: usize,
    /// The log filter directive.
    pub log_directive: String,
    /// `--log-file`.
    pub log_file: Option<PathBuf>,
    /// The command-line arguments the first image was started with, after the program name:
    /// every image shows them after its own (`ps`, `pgrep -f` find the server as started).
    pub args: Vec<OsString>,
}

impl Launch {
    /// The engine's configuration from what the command line chose (the same on every image).
    pub(crate) fn engine_config(&self) -> ServerConfig {
        let mut engine_config = ServerConfig::new(self.server_id.clone());
        engine_config
            .default_command
            .clone_from(&self.default_command);
        engine_config.max_connections = self.max_connections;
        engine_config.max_terminals = self.max_terminals;
        (engine_config.remain_on_exit, engine_config.remain_for) =
            crate::config::Config::remains_of(&self.args);
        engine_config
    }
}

/// The listening socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerImage {
    /// Its descriptor.
    pub fd: RawFd,
    /// Its path, removed at shutdown.
    pub path: PathBuf,
    /// The socket file's device and inode, so that only our own file is removed.
    pub dev_ino: (u64, u64),
}

/// One connection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConnImage {
    /// The engine's id for it.
    pub id: u64,
    /// What carries it.
    pub transport: ConnTransport,
    /// What the engine queued and was not written yet, in order: written first after the exec.
    pub pending: Vec<Piece>,
    /// Reads ended (EOF or error).
    pub read_done: bool,
    /// The engine was told it disconnected.
    pub reported: bool,
    /// Closing: dropped unflushed at this instant (micros on the clock's epoch).
    pub closing: Option<u64>,
}

/// A piece of what a connection is still to be sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub enum Piece {
    /// Bytes for this connection alone.
    Bytes(#[serde(with = "phux_core::upgrade::bytes")] Vec<u8>),
    /// A whole frame head of [`HostImage::shared`], by its index there.
    Shared(u32),
}

/// What carries a connection across the exec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConnTransport {
    /// A peer on the Unix socket. `may_hand_off` while its first read, which may be a
    /// bridge's offer ([SERVER.BRIDGE.9]), has not happened yet.
    Unix {
        /// The socket.
        fd: RawFd,
        /// The first read is still to come.
        may_hand_off: bool,
    },
    /// The `--stdio` client: stdin and stdout.
    Stdio,
    /// What a bridge handed over ([SERVER.BRIDGE.9]): read from `input`, written to
    /// `output`, the bridge's socket watched; the flags are the ones to put back
    /// ([SERVER.BRIDGE.12]).
    Handoff {
        /// The bridge's stdin.
        input: RawFd,
        /// The bridge's stdout.
        output: RawFd,
        /// The bridge's socket.
        control: RawFd,
        /// `input`'s file status flags when it was handed over.
        input_flags: u32,
        /// `output`'s file status flags when it was handed over.
        output_flags: u32,
    },
}

impl ConnTransport {
    /// Its descriptors, in the order the image lists them.
    pub fn fds(&self) -> Vec<RawFd> {
        match *self {
            Self::Unix { fd, .. } => vec![fd],
            Self::Stdio => Vec::new(),
            Self::Handoff {
                input,
                output,
                control,
                ..
            } => vec![input, output, control],
        }
    }
}

/// One terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermImage {
    /// The engine's id for it (`local:N`).
    pub id: u32,
    /// The master's descriptor, while open.
    pub master: Option<RawFd>,
    /// The child's pidfd.
    pub pidfd: RawFd,
    /// The child's pid.
    pub pid: i32,
    /// The child's exit, once reaped: `(is_signal, number)`.
    pub exit: Option<(bool, i32)>,
    /// The master reported end of file.
    pub eof: bool,
    /// Being killed (SIGHUP sent).
    pub killing: bool,
    /// The exit drain's deadline, after a reaped exit.
    pub exit_drain: Option<u64>,
    /// The SIGKILL deadline of a kill.
    pub kill_grace: Option<u64>,
}

impl HostImage {
    /// Every descriptor the image names, the listener first.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut fds: Vec<RawFd> = self.listener.iter().map(|l| l.fd).collect();
        fds.extend(self.conns.iter().flat_map(|c| c.transport.fds()));
        for t in &self.terminals {
            fds.extend(t.master);
            fds.push(t.pidfd);
        }
        fds
    }

    /// The host's half of an image of state version `version`.
    pub fn decode(version: u32, bytes: &[u8]) -> Result<Self, ImageError> {
        if version == 1 {
            return phux_core::upgrade::decode_host::<v1::HostImage>(bytes).map(Into::into);
        }
        phux_core::upgrade::decode_host(bytes)
    }

    /// Checks what the image says against itself and the engine's state, as an adoption relies
    /// on it ([SERVER.UPGRADE.EXEC.10]): every descriptor named once, none a standard stream
    /// or one of `reserved` (the image's own, the previous binary's); every connection and
    /// terminal once, each known to the engine (a terminal with the same child), and every
    /// connection the engine still serves held here; every shared frame named in range.
    pub fn check(&self, state: &EngineState, reserved: &[RawFd]) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for fd in self.fds().into_iter().chain(self.exec_fd) {
            if fd <= 2 || reserved.contains(&fd) || !seen.insert(fd) {
                return Err(format!(
                    "descriptor {fd} is named twice, or is a standard stream or the image's"
                ));
            }
        }
        let engine_conns: std::collections::BTreeSet<u64> =
            state.connections().map(|c| c.0).collect();
        let mut conns = std::collections::BTreeSet::new();
        for c in &self.conns {
            if !conns.insert(c.id) {
                return Err(format!("connection {} appears twice", c.id));
            }
            if !c.reported && !engine_conns.contains(&c.id) {
                return Err(format!("connection {} is unknown to the engine", c.id));
            }
            if let Some(Piece::Shared(i)) = c
                .pending
                .iter()
                .find(|p| matches!(p, Piece::Shared(i) if *i as usize >= self.shared.len()))
            {
                return Err(format!("connection {} names shared frame {i}", c.id));
            }
            if c.id >= self.next_conn {
                return Err(format!("connection {} is past the next id", c.id));
            }
        }
        if let Some(missing) = engine_conns.difference(&conns).next() {
            return Err(format!(
                "the engine's connection {missing} has no transport"
            ));
        }
        let engine_terms: std::collections::BTreeMap<u32, Option<u32>> =
            state.terminals().map(|(t, pid)| (t.0, pid)).collect();
        let mut terms = std::collections::BTreeSet::new();
        for t in &self.terminals {
            if !terms.insert(t.id) {
                return Err(format!("terminal {} appears twice", t.id));
            }
            let pid = u32::try_from(t.pid).ok().filter(|&p| p > 0);
            match (pid, engine_terms.get(&t.id)) {
                (None, _) => return Err(format!("terminal {}: invalid pid {}", t.id, t.pid)),
                (Some(_), None) => {
                    return Err(format!("terminal {} is unknown to the engine", t.id));
                }
                (Some(p), Some(Some(q))) if p != *q => {
                    return Err(format!(
                        "terminal {}: the engine knows pid {q}, not {p}",
                        t.id
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Version 1's layout of the host's half, read so that a server of the release before can
/// upgrade to this one: each connection's unwritten bytes in one piece (shared frames came
/// over as private copies), and no binary descriptor crossed.
mod v1 {
    use super::{ConnTransport, Launch, ListenerImage, PathBuf, Piece, TermImage};

    #[derive(serde::Deserialize)]
    pub(super) struct HostImage {
        clock_epoch_nanos: u64,
        binary: PathBuf,
        previous_binary: PathBuf,
        launch: Launch,
        listener: Option<ListenerImage>,
        stdio_flags: Option<(u32, u32)>,
        next_conn: u64,
        conns: Vec<ConnImage>,
        terminals: Vec<TermImage>,
    }

    #[derive(serde::Deserialize)]
    struct ConnImage {
        id: u64,
        transport: ConnTransport,
        pending: Vec<u8>,
        read_done: bool,
        reported: bool,
        closing: Option<u64>,
    }

    impl From<HostImage> for super::HostImage {
        fn from(v1: HostImage) -> Self {
            Self {
                clock_epoch_nanos: v1.clock_epoch_nanos,
                binary: v1.binary,
                previous_binary: v1.previous_binary,
                launch: v1.launch,
                listener: v1.listener,
                stdio_flags: v1.stdio_flags,
                next_conn: v1.next_conn,
                shared: Vec::new(),
                conns: v1
                    .conns
                    .into_iter()
                    .map(|c| super::ConnImage {
                        id: c.id,
                        transport: c.transport,
                        pending: vec![Piece::Bytes(c.pending)],
                        read_done: c.read_done,
                        reported: c.reported,
                        closing: c.closing,
                    })
                    .collect(),
                terminals: v1.terminals,
                exec_fd: None,
            }
        }
    }
}

/// [`HostImage`] borrowed from the live host, serialized as it is: the queued bytes and the
/// shared frame heads go from the connections' queues into the image with no copy between.
#[derive(Debug, Serialize)]
pub(crate) struct HostImageRef<'a> {
    pub(crate) clock_epoch_nanos: u64,
    pub(crate) binary: &'a Path,
    pub(crate) previous_binary: &'a Path,
    pub(crate) launch: &'a Launch,
    pub(crate) listener: Option<ListenerImage>,
    pub(crate) stdio_flags: Option<(u32, u32)>,
    pub(crate) next_conn: u64,
    pub(crate) shared: Vec<Bytes<'a>>,
    pub(crate) conns: Vec<ConnImageRef<'a>>,
    pub(crate) terminals: Vec<TermImage>,
    pub(crate) exec_fd: Option<RawFd>,
}

/// [`ConnImage`], borrowed.
#[derive(Debug, Serialize)]
pub(crate) struct ConnImageRef<'a> {
    pub(crate) id: u64,
    pub(crate) transport: ConnTransport,
    pub(crate) pending: Vec<PieceRef<'a>>,
    pub(crate) read_done: bool,
    pub(crate) reported: bool,
    pub(crate) closing: Option<u64>,
}

/// [`Piece`], borrowed: the same variants in the same order.
#[derive(Debug, Serialize)]
pub(crate) enum PieceRef<'a> {
    Bytes(Bytes<'a>),
    Shared(u32),
}

/// A byte string, serialized as one (as `phux_core::upgrade::bytes` reads it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// Reads a sequence of byte strings, each as `phux_core::upgrade::bytes` reads one.
fn byte_strings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
    #[derive(Deserialize)]
    struct One(#[serde(with = "phux_core::upgrade::bytes")] Vec<u8>);
    Ok(Vec::<One>::deserialize(d)?
        .into_iter()
        .map(|o| o.0)
        .collect())
}

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

/// The new binary, opened once ([SERVER.UPGRADE.EXEC.11]): its checks and its exec all run
/// this file through its descriptor, so a file installed over the path meanwhile (a package
/// manager's `install`, a `mv`) is never run unchecked. The descriptor is `O_PATH` (a binary
/// without read permission still runs) and close-on-exec: no child inherits it.
#[derive(Debug)]
pub struct Exe {
    fd: OwnedFd,
    path: PathBuf,
    seen: Fingerprint,
}

/// What says a file's contents did not change: its identity, size and modification time (a
/// write in place moves it). Not its change time, which the file's replacement at its path
/// moves too (one link fewer), and a replacement is no change to the open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, u64),
}

impl Fingerprint {
    fn of(fd: BorrowedFd<'_>) -> io::Result<Self> {
        let st = rustix::fs::fstat(fd)?;
        Ok(Self {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime: (st.st_mtime, st.st_mtime_nsec),
        })
    }
}

impl Exe {
    /// Opens `path` (following symbolic links): a regular file.
    pub fn open(path: &Path) -> Result<Self, UpgradeError> {
        let fail = |source: io::Error| UpgradeError::Binary {
            binary: path.to_owned(),
            source,
        };
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| fail(e.into()))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| fail(e.into()))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(fail(io::Error::other("not a regular file")));
        }
        let seen = Fingerprint::of(fd.as_fd()).map_err(fail)?;
        Ok(Self {
            fd,
            path: path.to_owned(),
            seen,
        })
    }

    /// The path it was named by (for messages, and the new image's `argv[0]`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The path a child of ours runs it by: this process's descriptor, which the child's
    /// exec (and a script's interpreter after it) opens while we hold it.
    fn child_path(&self) -> PathBuf {
        let us = rustix::process::getpid().as_raw_nonzero();
        PathBuf::from(format!("/proc/{us}/fd/{}", self.fd.as_raw_fd()))
    }

    /// Fails when the file was written in place since it was opened: its descriptor pins the
    /// file, not its bytes.
    pub fn unchanged(&self) -> Result<(), UpgradeError> {
        match Fingerprint::of(self.fd.as_fd()) {
            Ok(now) if now == self.seen => Ok(()),
            Ok(_) => Err(UpgradeError::Changed {
                binary: self.path.clone(),
            }),
            Err(source) => Err(UpgradeError::Binary {
                binary: self.path.clone(),
                source,
            }),
        }
    }
}

/// A running check of the new binary (`--check-upgrade VERSION`, `--check-adopt`): its child,
/// its pidfd (readable once it exits, for a poll) and its combined output.
#[derive(Debug)]
pub struct Checker {
    /// The binary asked.
    pub binary: PathBuf,
    child: Child,
    pidfd: OwnedFd,
    output: OwnedFd,
    printed: Vec<u8>,
    kind: Check,
}

/// Which check, and what it must print.
#[derive(Debug, Clone)]
enum Check {
    Version(u32),
    Adopt(Summary),
}

impl Check {
    fn line(&self) -> String {
        match self {
            Self::Version(v) => check_line(*v),
            Self::Adopt(summary) => adopt_line(summary),
        }
    }
}

impl Checker {
    /// Starts `BIN --check-upgrade version` ([SERVER.UPGRADE.EXEC.2]).
    pub fn version(exe: &Exe, version: u32) -> Result<Self, UpgradeError> {
        let args = [
            OsString::from("--check-upgrade"),
            version.to_string().into(),
        ];
        Self::start(exe, &args, Stdio::null(), Check::Version(version))
    }

    /// Starts `BIN --check-adopt` with the sealed image on its stdin, read from its start; it
    /// must find `expect` in it ([SERVER.UPGRADE.EXEC.10]).
    pub fn adoption(
        exe: &Exe,
        image: BorrowedFd<'_>,
        expect: Summary,
    ) -> Result<Self, UpgradeError> {
        let fail = |source: io::Error| UpgradeError::Binary {
            binary: exe.path.clone(),
            source,
        };
        // The offset is shared with the child's copy: a reader that reads rather than maps
        // starts at the first byte.
        rustix::fs::seek(image, rustix::fs::SeekFrom::Start(0)).map_err(|e| fail(e.into()))?;
        let stdin = image.try_clone_to_owned().map_err(fail)?;
        Self::start(
            exe,
            &[OsString::from("--check-adopt")],
            Stdio::from(stdin),
            Check::Adopt(expect),
        )
    }

    /// Starts the check with `stdin`, and stdout and stderr into one non-blocking pipe.
    fn start(
        exe: &Exe,
        args: &[OsString],
        stdin: Stdio,
        kind: Check,
    ) -> Result<Self, UpgradeError> {
        let binary = exe.path.clone();
        let fail = |source: io::Error| UpgradeError::Binary {
            binary: binary.clone(),
            source,
        };
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| fail(e.into()))?;
        let stderr = write.try_clone().map_err(fail)?;
        let child = Command::new(exe.child_path())
            .arg0(&exe.path)
            .args(args)
            .stdin(stdin)
            .stdout(Stdio::from(write))
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(fail)?;
        let flags = rustix::fs::fcntl_getfl(&read).map_err(|e| fail(e.into()))?;
        rustix::fs::fcntl_setfl(&read, flags | OFlags::NONBLOCK).map_err(|e| fail(e.into()))?;
        let pid = i32::try_from(child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| fail(io::Error::other("invalid pid")))?;
        let pidfd = match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(e) => {
                let mut child = child;
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(e.into()));
            }
        };
        Ok(Self {
            binary,
            child,
            pidfd,
            output: read,
            printed: Vec::new(),
            kind,
        })
    }

    /// The pidfd, for the poll: readable once the check exits.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// The verdict once the check has exited: `None` while it runs.
    pub fn verdict(&mut self) -> Option<Result<(), UpgradeError>> {
        self.read_output();
        let status = match self.child.try_wait() {
            Ok(Some(status)) => status,
            Ok(None) => return None,
            Err(e) => {
                return Some(Err(UpgradeError::Binary {
                    binary: self.binary.clone(),
                    source: e,
                }));
            }
        };
        self.read_output();
        let output = String::from_utf8_lossy(&self.printed).into_owned();
        let want = self.kind.line();
        let confirmed = output.lines().any(|l| l.trim() == want);
        if status.success() && confirmed {
            return Some(Ok(()));
        }
        let printed = output.trim();
        let detail = match (status.code(), printed.is_empty()) {
            (Some(0), true) => "it exited 0 without confirming".to_owned(),
            (Some(0), false) => format!("it exited 0 without confirming; it said: {printed}"),
            (_, true) => format!("it ended with {status}"),
            (_, false) => format!("it ended with {status}; it said: {printed}"),
        };
        Some(Err(match self.kind {
            Check::Version(version) => UpgradeError::Refused {
                binary: self.binary.clone(),
                version,
                detail,
            },
            Check::Adopt(_) => UpgradeError::CannotAdopt {
                binary: self.binary.clone(),
                detail,
            },
        }))
    }

    /// Waits for the verdict, at most `limit`; killed and refused past it. The caller serves
    /// nothing meanwhile.
    pub fn wait(mut self, limit: Duration) -> Result<(), UpgradeError> {
        let clock = crate::clock::Clock::new();
        let until = clock.now() + limit;
        loop {
            if let Some(verdict) = self.verdict() {
                return verdict;
            }
            let left = clock.until(until);
            if left.is_zero() {
                return Err(self.kill(limit));
            }
            let timeout = rustix::event::Timespec::try_from(left).ok();
            let mut fds = [
                rustix::event::PollFd::new(&self.pidfd, rustix::event::PollFlags::IN),
                rustix::event::PollFd::new(&self.output, rustix::event::PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    let _ = self.kill(limit);
                    return Err(UpgradeError::Handover(e.into()));
                }
            }
        }
    }

    /// Kills and reaps the check (it took longer than `limit`).
    pub fn kill(mut self, limit: Duration) -> UpgradeError {
        let _ = self.child.kill();
        let _ = self.child.wait();
        UpgradeError::CheckTimedOut {
            binary: self.binary,
            what: match self.kind {
                Check::Version(_) => "--check-upgrade",
                Check::Adopt(_) => "--check-adopt",
            },
            limit,
        }
    }

    /// Reads what the check printed so far, keeping the first [`CHECK_OUTPUT_MAX`] bytes: a
    /// check that prints more never fills the pipe and blocks.
    fn read_output(&mut self) {
        let mut buf = [0u8; 4096];
        loop {
            match rustix::io::read(&self.output, &mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let room = CHECK_OUTPUT_MAX.saturating_sub(self.printed.len());
                    let got = buf.get(..n.min(room)).unwrap_or_default();
                    self.printed.extend_from_slice(got);
                }
            }
        }
    }
}

/// A new memfd for the image: close-on-exec until the exec itself ([`Inherit`]), and
/// sealable, so that once written nothing can change it under a reader's map ([`seal`]).
pub fn image_file() -> io::Result<OwnedFd> {
    Ok(rustix::fs::memfd_create(
        "phux-mio-upgrade",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?)
}

/// The seals that make an image immutable: no write, no resize, no more seals changed.
const IMAGE_SEALS: SealFlags = SealFlags::WRITE
    .union(SealFlags::GROW)
    .union(SealFlags::SHRINK)
    .union(SealFlags::SEAL);

/// Seals a written image: from now on its bytes are fixed for every reader.
pub fn seal(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::fcntl_add_seals(fd, IMAGE_SEALS)?)
}

/// An image's bytes where a reader finds them: the sealed memfd mapped (no copy), or, for an
/// image that is not sealed (one a server of version 1 wrote), read into memory.
#[derive(Debug)]
pub enum ImageBytes {
    /// The sealed file, mapped read-only.
    Mapped(Map),
    /// A copy.
    Read(Vec<u8>),
}

impl std::ops::Deref for ImageBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(map) => map.bytes(),
            Self::Read(bytes) => bytes,
        }
    }
}

/// A read-only map of a sealed memfd, unmapped when dropped.
#[derive(Debug)]
pub struct Map {
    addr: *mut std::ffi::c_void,
    len: usize,
}

impl Map {
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `addr` is the start of a live `len`-byte read-only map of a memfd sealed
        // against writes, growing and shrinking (checked in `load_image` before mapping):
        // its bytes never change and its pages never go away while the map lives, and the
        // borrow cannot outlive `self`, which unmaps it only when dropped.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len)
        }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: `addr`/`len` are the map `load_image` made, unmapped once, here; no
            // borrow of it is left (they borrow `self`).
            #[allow(unsafe_code)]
            let _ = unsafe { rustix::mm::munmap(self.addr, self.len) };
        }
    }
}

/// The image in `fd`, mapped if its file is sealed ([`seal`]), read otherwise.
pub fn load_image(fd: BorrowedFd<'_>) -> io::Result<ImageBytes> {
    let len = usize::try_from(rustix::fs::fstat(fd)?.st_size)
        .map_err(|_| io::Error::other("the image's size is negative"))?;
    let sealed = rustix::fs::fcntl_get_seals(fd).is_ok_and(|s| s.contains(IMAGE_SEALS));
    if !sealed {
        return read_image(fd).map(ImageBytes::Read);
    }
    if len == 0 {
        return Ok(ImageBytes::Mapped(Map {
            addr: std::ptr::null_mut(),
            len: 0,
        }));
    }
    // SAFETY: rustix maps only through this unsafe call. A fresh private read-only map at an
    // address the kernel picks aliases nothing of ours; the file is sealed, so the map's
    // bytes stay as they are (see `Map::bytes`).
    #[allow(unsafe_code)]
    let addr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::PRIVATE,
            fd,
            0,
        )?
    };
    Ok(ImageBytes::Mapped(Map { addr, len }))
}

/// Reads a whole image from its file, from the start.
fn read_image(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    // Sized once from the file, not grown by doubling; the size is only a hint, what the read
    // finds is what counts.
    let size = rustix::fs::fstat(fd).map_or(0, |st| usize::try_from(st.st_size).unwrap_or(0));
    let mut bytes = Vec::with_capacity(size);
    let mut offset = 0u64;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match rustix::io::pread(fd, &mut buf, offset) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(buf.get(..n).unwrap_or_default());
                offset += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Opens the binary this process runs (`/proc/self/exe`, close-on-exec but for the exec that
/// carries it to the new image, [`Inherit`]), so that a new image that cannot adopt the state
/// can exec it again even if its file was replaced or removed since ([SERVER.UPGRADE.EXEC.6]).
pub fn open_own_exe() -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/self/exe",
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The path that execs an open descriptor's file.
pub fn fd_path(fd: RawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// The descriptors that cross the exec: `FD_CLOEXEC` cleared on each while this lives, set
/// again when it is dropped (the exec failed, and the old image serves on).
#[derive(Debug)]
pub struct Inherit {
    fds: Vec<RawFd>,
}

impl Inherit {
    /// Clears `FD_CLOEXEC` on every fd of `fds` (each borrowed from what owns it).
    pub fn clear(fds: &[BorrowedFd<'_>]) -> io::Result<Self> {
        let mut kept = Self { fds: Vec::new() };
        for fd in fds {
            rustix::io::fcntl_setfd(fd, FdFlags::empty())?;
            kept.fds.push(fd.as_raw_fd());
        }
        Ok(kept)
    }
}

impl Drop for Inherit {
    fn drop(&mut self) {
        for &raw in &self.fds {
            // Still open: `Inherit` is dropped only when the exec failed, while the owners of
            // these descriptors live on in the driver.
            let _ = set_cloexec_raw(raw);
        }
    }
}

/// Sets `FD_CLOEXEC` on a descriptor this process owns, so that no child inherits it.
pub fn set_cloexec(fd: impl AsFd) -> io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC)?)
}

fn set_cloexec_raw(raw: RawFd) -> io::Result<()> {
    // The descriptor belongs to the driver for as long as this runs (see `Inherit`); the
    // borrow ends with the call.
    let fd = borrow_raw(raw)?;
    set_cloexec(fd)
}

/// Replaces the process image with `path`, run as `argv` (its `argv[0]` first), with this
/// process's environment less `drop_env`. Returns only on failure. The environment, the pid,
/// the children, the signal mask and every descriptor without `FD_CLOEXEC` stay.
///
/// Not std's `CommandExt::exec`: that empties the signal mask before `execve`, which would let
/// the shutdown and upgrade signals blocked for the exec in between the old image's handlers
/// and the new one's, where their default action ends the process ([SERVER.UPGRADE.EXEC.9]).
pub fn exec(path: &Path, argv: &[OsString], drop_env: &[&str]) -> io::Error {
    let c = |s: &OsStr| {
        CString::new(s.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let path = match c(path.as_os_str()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let argv: Result<Vec<CString>, io::Error> = argv.iter().map(|a| c(a)).collect();
    let env: Result<Vec<CString>, io::Error> = std::env::vars_os()
        .filter(|(k, _)| !drop_env.iter().any(|d| k == d))
        .map(|(k, v)| {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            c(&kv)
        })
        .collect();
    let (argv, env) = match (argv, env) {
        (Ok(a), Ok(e)) => (a, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let argv_ptrs: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let env_ptrs: Vec<*const libc::c_char> = env
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: rustix's execve is for its libc-free runtime only, so libc's. `path` is a C
    // string, and both arrays hold pointers to C strings that outlive the call, each array
    // ending with a null pointer, as execve requires. It returns only on failure, leaving the
    // process as it was.
    #[allow(unsafe_code)]
    unsafe {
        libc::execve(path.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr());
    }
    io::Error::last_os_error()
}

/// Takes ownership of a descriptor the previous image left us, checking that it is open.
/// Each number must be adopted once ([`adopt_fds`] checks).
fn adopt_fd(raw: RawFd) -> io::Result<OwnedFd> {
    // Checked open first: F_GETFD fails with EBADF on a closed number.
    let _ = borrow_raw(raw)?;
    #[allow(unsafe_code)]
    // SAFETY: `raw` is open (checked above) and was left to this image by the previous one,
    // which wrote its number into the image and owned it until the exec; nothing else in this
    // process has taken it (`adopt_fds` refuses a number named twice and the standard streams,
    // and the image's own numbers are checked against the image's names before), so the
    // OwnedFd is its one owner.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    Ok(fd)
}

/// Takes ownership of every descriptor `raws` names, in order. Refuses a number named twice
/// or a standard stream (0-2, which the process holds already), so that no descriptor gets
/// two owners.
pub fn adopt_fds(raws: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    let mut seen = std::collections::BTreeSet::new();
    for &raw in raws {
        if raw <= 2 || !seen.insert(raw) {
            return Err(io::Error::other(format!(
                "the image names descriptor {raw} twice or as a standard stream"
            )));
        }
        let _ = borrow_raw(raw)?;
    }
    raws.iter().map(|&raw| adopt_fd(raw)).collect()
}

/// Borrows a descriptor number for the length of a call, checking that it is open.
fn borrow_raw<'a>(raw: RawFd) -> io::Result<BorrowedFd<'a>> {
    if raw < 0 {
        return Err(rustix::io::Errno::BADF.into());
    }
    #[allow(unsafe_code)]
    // SAFETY: the borrow is used only for fcntl calls on a number the caller owns or is about
    // to adopt; a closed number makes fcntl fail with EBADF, which is returned below, and no
    // other thread exists to close it meanwhile (the server is single-threaded).
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    rustix::io::fcntl_getfd(fd)?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image file holding `bytes`, sealed when asked.
    fn written(bytes: &[u8], sealed: bool) -> OwnedFd {
        let fd = image_file().expect("memfd");
        rustix::io::write(&fd, bytes).expect("write");
        if sealed {
            seal(fd.as_fd()).expect("seal");
        }
        fd
    }

    fn cloexec(fd: impl AsFd) -> bool {
        rustix::io::fcntl_getfd(fd)
            .expect("getfd")
            .contains(FdFlags::CLOEXEC)
    }

    #[test]
    fn a_sealed_image_is_mapped_and_reads_back_whole_and_twice() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let fd = written(&bytes, true);
        // Close-on-exec but for the exec itself ([`Inherit`]).
        assert!(cloexec(&fd));
        // Sealed: nothing changes it under a map.
        assert!(rustix::io::write(&fd, b"more").is_err());
        let first = load_image(fd.as_fd()).expect("load");
        assert!(matches!(first, ImageBytes::Mapped(_)));
        assert_eq!(&first[..], &bytes[..]);
        let second = load_image(fd.as_fd()).expect("load again");
        assert_eq!(&second[..], &bytes[..]);
        // Not sealed (an image of version 1): read, not mapped.
        let unsealed = written(&bytes, false);
        let read = load_image(unsealed.as_fd()).expect("read");
        assert!(matches!(read, ImageBytes::Read(_)));
        assert_eq!(&read[..], &bytes[..]);
    }

    #[test]
    fn inherit_clears_cloexec_and_puts_it_back_when_dropped() {
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        assert!(cloexec(&a) && cloexec(&b));
        let kept = Inherit::clear(&[a.as_fd(), b.as_fd()]).expect("clear");
        assert!(!cloexec(&a) && !cloexec(&b));
        drop(kept);
        assert!(cloexec(&a) && cloexec(&b));
    }

    #[test]
    fn adopting_refuses_closed_repeated_and_standard_descriptors() {
        assert!(adopt_fds(&[1]).is_err());
        assert!(adopt_fds(&[-1]).is_err());
        // A number far above anything this test process has open.
        assert!(adopt_fds(&[1_000_000]).is_err());
        let fd = written(b"x", false);
        let raw = fd.as_raw_fd();
        assert!(adopt_fds(&[raw, raw]).is_err());
        // One owner: hand it over, then adopt it back.
        let raw = {
            use std::os::fd::IntoRawFd;
            fd.into_raw_fd()
        };
        let mut adopted = adopt_fds(&[raw]).expect("adopt");
        let fd = adopted.pop().expect("one");
        assert_eq!(&load_image(fd.as_fd()).expect("read")[..], b"x");
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    #[test]
    fn a_check_that_exits_at_once_or_says_no_is_a_refusal_naming_why() {
        let mut silent =
            Checker::version(&Exe::open(Path::new("/bin/true")).expect("open"), 1).expect("start");
        let text = wait(&mut silent).expect_err("refused").to_string();
        assert!(text.contains("without confirming"), "{text}");

        let mut failing =
            Checker::version(&Exe::open(Path::new("/bin/false")).expect("open"), 1).expect("start");
        let text = wait(&mut failing).expect_err("refused").to_string();
        assert!(text.contains("exit status: 1"), "{text}");

        assert!(matches!(
            Exe::open(Path::new("/nonexistent/phux-no-such-binary")),
            Err(UpgradeError::Binary { .. })
        ));
        assert!(matches!(
            Exe::open(Path::new("/")),
            Err(UpgradeError::Binary { .. })
        ));
    }

    #[test]
    fn a_trial_adoption_must_say_what_it_found_and_is_killed_when_it_hangs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let expect = Summary {
            bytes: 3,
            terminals: 1,
            connections: 2,
            ledger: 0,
        };
        let image = written(b"abc", true);
        // It read the image on its stdin, and says so.
        let honest = script(
            dir.path(),
            "honest",
            &format!(
                "[ \"$1\" = --check-adopt ] && [ \"$(cat)\" = abc ] && echo '{}'",
                adopt_line(&expect)
            ),
        );
        let exe = Exe::open(&honest).expect("open");
        Checker::adoption(&exe, image.as_fd(), expect)
            .expect("start")
            .wait(Duration::from_secs(30))
            .expect("adopts");
        // A line with other counts is not the image it was given.
        let other = Summary {
            terminals: 9,
            ..expect
        };
        let text = Checker::adoption(&exe, image.as_fd(), other)
            .expect("start")
            .wait(Duration::from_secs(30))
            .expect_err("refused")
            .to_string();
        assert!(
            text.contains("cannot adopt") && text.contains("without confirming"),
            "{text}"
        );
        let hangs = Exe::open(&script(dir.path(), "hangs", "exec sleep 100000")).expect("open");
        let text = Checker::adoption(&hangs, image.as_fd(), expect)
            .expect("start")
            .wait(Duration::from_millis(200))
            .expect_err("killed")
            .to_string();
        assert!(text.contains("did not answer --check-adopt"), "{text}");
    }

    #[test]
    fn the_opened_binary_is_the_one_run_and_a_write_in_place_is_seen() {
        // [SERVER.UPGRADE.EXEC.11]
        let dir = tempfile::tempdir().expect("tempdir");
        let path = script(dir.path(), "bin", "echo first");
        let exe = Exe::open(&path).expect("open");
        // Replaced at its path (as `install` or `mv` does): the opened file still runs.
        let other = script(dir.path(), "other", "echo second");
        std::fs::rename(&other, &path).expect("rename");
        let out = Command::new(exe.child_path()).output().expect("run");
        assert_eq!(out.stdout, b"first\n");
        exe.unchanged().expect("the opened file did not change");
        // Written in place: refused.
        let inode = Exe::open(&path).expect("open");
        std::thread::sleep(Duration::from_millis(10));
        std::fs::write(&path, "#!/bin/sh\necho third\n").expect("write in place");
        assert!(matches!(
            inode.unchanged(),
            Err(UpgradeError::Changed { .. })
        ));
    }

    fn sample() -> (HostImage, Vec<Vec<u8>>) {
        let heads = vec![b"head one".to_vec(), b"head two".to_vec()];
        let image = HostImage {
            clock_epoch_nanos: 42,
            binary: PathBuf::from("/new"),
            previous_binary: PathBuf::from("/old"),
            launch: Launch {
                server_id: vec![7; 16],
                default_command: vec!["sh".to_owned()],
                max_connections: 5,
                max_terminals: 6,
                log_directive: "info".to_owned(),
                log_file: None,
                args: vec!["--socket".into(), "/s".into()],
            },
            listener: Some(ListenerImage {
                fd: 3,
                path: PathBuf::from("/s"),
                dev_ino: (1, 2),
            }),
            stdio_flags: None,
            next_conn: 3,
            shared: heads.clone(),
            conns: vec![ConnImage {
                id: 2,
                transport: ConnTransport::Unix {
                    fd: 4,
                    may_hand_off: false,
                },
                pending: vec![
                    Piece::Bytes(b"own".to_vec()),
                    Piece::Shared(1),
                    Piece::Shared(0),
                ],
                read_done: false,
                reported: false,
                closing: Some(9),
            }],
            terminals: vec![TermImage {
                id: 1,
                master: Some(5),
                pidfd: 6,
                pid: 1234,
                exit: None,
                eof: false,
                killing: false,
                exit_drain: None,
                kill_grace: Some(11),
            }],
            exec_fd: Some(7),
        };
        (image, heads)
    }

    #[test]
    fn the_borrowed_image_reads_back_as_the_image() {
        // [SERVER.UPGRADE.STATE.1] What the host writes from its queues is what the next image
        // reads: shared heads once, each named where it is queued.
        let (image, heads) = sample();
        let borrowed = HostImageRef {
            clock_epoch_nanos: image.clock_epoch_nanos,
            binary: &image.binary,
            previous_binary: &image.previous_binary,
            launch: &image.launch,
            listener: image.listener.clone(),
            stdio_flags: image.stdio_flags,
            next_conn: image.next_conn,
            shared: heads.iter().map(|h| Bytes(h)).collect(),
            conns: vec![ConnImageRef {
                id: 2,
                transport: image.conns[0].transport.clone(),
                pending: vec![
                    PieceRef::Bytes(Bytes(b"own")),
                    PieceRef::Shared(1),
                    PieceRef::Shared(0),
                ],
                read_done: false,
                reported: false,
                closing: Some(9),
            }],
            terminals: image.terminals.clone(),
            exec_fd: image.exec_fd,
        };
        let bytes = postcard::to_stdvec(&borrowed).expect("serialize");
        assert_eq!(HostImage::decode(2, &bytes).expect("decode"), image);
    }

    #[test]
    fn a_version_1_host_half_reads_as_one_piece_per_connection() {
        // [SERVER.UPGRADE.STATE.3] What a server of the release before wrote.
        #[derive(Serialize)]
        struct V1Conn {
            id: u64,
            transport: ConnTransport,
            pending: Vec<u8>,
            read_done: bool,
            reported: bool,
            closing: Option<u64>,
        }
        let (image, _) = sample();
        let v1 = (
            image.clock_epoch_nanos,
            &image.binary,
            &image.previous_binary,
            &image.launch,
            &image.listener,
            image.stdio_flags,
            image.next_conn,
            vec![V1Conn {
                id: 2,
                transport: image.conns[0].transport.clone(),
                pending: b"everything".to_vec(),
                read_done: false,
                reported: true,
                closing: None,
            }],
            &image.terminals,
        );
        let bytes = postcard::to_stdvec(&v1).expect("serialize");
        let read = HostImage::decode(1, &bytes).expect("decode");
        assert_eq!(
            read.conns[0].pending,
            [Piece::Bytes(b"everything".to_vec())]
        );
        assert!(read.shared.is_empty() && read.exec_fd.is_none());
        assert_eq!(read.terminals, image.terminals);
    }

    #[test]
    fn an_image_that_does_not_match_its_engine_or_itself_is_refused() {
        // [SERVER.UPGRADE.EXEC.10]
        use phux_core::server::{ConnId, PeerInfo, ServerConfig, ServerEngine, ServerEvent};
        let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
        let now = phux_core::time::Instant::from_micros(0);
        engine.handle(
            now,
            ServerEvent::Connected {
                conn: ConnId(2),
                peer: PeerInfo::local(),
            },
        );
        while engine.poll_action().is_some() {}
        let state = engine.export_state().expect("quiet");
        let (image, _) = sample();
        let mut no_terminal = image.clone();
        no_terminal.terminals.clear();
        no_terminal.check(&state, &[]).expect("consistent");
        let refused = |edit: &dyn Fn(&mut HostImage), reserved: &[RawFd], why: &str| {
            let mut bad = no_terminal.clone();
            edit(&mut bad);
            let text = bad.check(&state, reserved).expect_err(why);
            assert!(text.contains(why), "{text}");
        };
        refused(&|_| {}, &[4], "descriptor 4");
        refused(&|i| i.exec_fd = Some(3), &[], "descriptor 3");
        refused(
            &|i| i.conns[0].pending.push(Piece::Shared(2)),
            &[],
            "shared frame 2",
        );
        refused(&|i| i.conns[0].id = 1, &[], "unknown to the engine");
        refused(&|i| i.conns.clear(), &[], "has no transport");
        // The engine knows no terminal: one in the image is not its own.
        refused(
            &|i| i.terminals = image.terminals.clone(),
            &[],
            "terminal 1",
        );
    }

    fn wait(checker: &mut Checker) -> Result<(), UpgradeError> {
        let end = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(v) = checker.verdict() {
                return v;
            }
            assert!(std::time::Instant::now() < end, "the check never ended");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
