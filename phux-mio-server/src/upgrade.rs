//! The in-place upgrade's operating-system side: asking a new binary whether it reads our
//! state, the image in a memfd, the descriptors that cross the exec, the exec itself, and
//! taking the descriptors back on the other side.
//!
//! The protocol side (what UPGRADE means, the engine's whole state as data) is phux-core's;
//! the driver (`driver.rs`) sequences the steps:
//!
//! 1. **check**: `BIN --check-upgrade VERSION` runs as a child ([`Checker`]) while the loop
//!    serves on; it must exit 0 and print [`check_line`] within [`CHECK_TIMEOUT`]
//!    ([SERVER.UPGRADE.EXEC.2]);
//! 2. **quiesce**: the engine starts no new PTY write; once no job is in progress
//!    (bounded by [`QUIESCE_BOUND`]) ...
//! 3. **commit**: the engine's state and the [`HostImage`] go into a memfd ([`memfd_image`]),
//!    every descriptor to keep loses `FD_CLOEXEC` ([`Inherit`]), and the process execs the new
//!    binary in place ([`exec`]): the same pid, so the PTY children stay our children;
//! 4. **adopt**: the new image takes the descriptors back ([`adopt_fd`]), rebuilds the engine
//!    and the host, and answers the requester; if it cannot, it execs the previous binary
//!    (kept open as a descriptor, [`open_own_exe`]) with the same image and the reason.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use phux_core::server::ServerConfig;
use rustix::fs::{MemfdFlags, Mode, OFlags};
use rustix::io::FdFlags;
use serde::{Deserialize, Serialize};

/// How long `BIN --check-upgrade` may take before it is killed and the upgrade refused: a
/// binary that hangs must not hold the upgrade (or the requester) for long, and starting a
/// program that prints one line takes milliseconds, even on a loaded machine.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the engine may take to become quiet (no PTY write job in progress) once the
/// check passed. A job in progress is a write a child is not reading; 2 s is long enough for
/// any child that reads its input, and short enough that one that does not fails the upgrade
/// quickly ([SERVER.UPGRADE.EXEC.3]).
pub const QUIESCE_BOUND: Duration = Duration::from_secs(2);

/// The most of the check's output kept for the reason of a refusal.
const CHECK_OUTPUT_MAX: usize = 512;

/// The line `--check-upgrade VERSION` prints on stdout when this binary reads state version
/// `version`. Requiring it (and not only exit status 0) keeps a program that is not a
/// phux-mio-server at all, or that exits 0 at once, from being exec'd ([SERVER.UPGRADE.EXEC.2]).
pub fn check_line(version: u32) -> String {
    format!("phux-mio-server reads upgrade state version {version}")
}

/// The host's half of the image: everything the driver holds that must cross the exec. The
/// engine's half is `phux_core::server::EngineState`; both travel in one envelope
/// (`phux_core::upgrade`). Descriptors are numbers: the descriptors themselves cross the
/// exec because `FD_CLOEXEC` is cleared on each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Every connection the host holds.
    pub conns: Vec<ConnImage>,
    /// Every terminal the host holds.
    pub terminals: Vec<TermImage>,
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnImage {
    /// The engine's id for it.
    pub id: u64,
    /// What carries it.
    pub transport: ConnTransport,
    /// Bytes the engine queued that were not written yet: written first after the exec.
    pub pending: Vec<u8>,
    /// Reads ended (EOF or error).
    pub read_done: bool,
    /// The engine was told it disconnected.
    pub reported: bool,
    /// Closing: dropped unflushed at this instant (micros on the clock's epoch).
    pub closing: Option<u64>,
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
    /// `--check-upgrade` did not answer in time; it was killed.
    #[error("{binary} did not answer --check-upgrade within {secs} s; killed", secs = CHECK_TIMEOUT.as_secs())]
    CheckTimedOut {
        /// The binary.
        binary: PathBuf,
    },
    /// The engine did not become quiet in time.
    #[error("{0}")]
    NotQuiet(String),
    /// Another upgrade is in progress.
    #[error("an upgrade is already in progress")]
    Busy,
    /// A signal arrived while the state was being handed over: it is acted on by this image
    /// instead (a shutdown must not be lost in the exec).
    #[error("a signal arrived during the handover")]
    Interrupted(Vec<crate::signals::ServerSignal>),
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

/// A running `BIN --check-upgrade VERSION`: its child, its pidfd (readable once it exits, for
/// the poll) and its combined output.
#[derive(Debug)]
pub struct Checker {
    /// The binary asked.
    pub binary: PathBuf,
    child: Child,
    pidfd: OwnedFd,
    output: OwnedFd,
    version: u32,
}

impl Checker {
    /// Starts `binary --check-upgrade version` with stdin from /dev/null and stdout and
    /// stderr into one non-blocking pipe.
    pub fn start(binary: &Path, version: u32) -> Result<Self, UpgradeError> {
        let fail = |source: io::Error| UpgradeError::Binary {
            binary: binary.to_owned(),
            source,
        };
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
            .map_err(|e| fail(e.into()))?;
        let stderr = write.try_clone().map_err(fail)?;
        let child = Command::new(binary)
            .arg("--check-upgrade")
            .arg(version.to_string())
            .stdin(Stdio::null())
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
            binary: binary.to_owned(),
            child,
            pidfd,
            output: read,
            version,
        })
    }

    /// The pidfd, for the poll: readable once the check exits.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// The verdict once the check has exited: `None` while it runs.
    pub fn verdict(&mut self) -> Option<Result<(), UpgradeError>> {
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
        let output = self.read_output();
        let confirmed = output.lines().any(|l| l.trim() == check_line(self.version));
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
        Some(Err(UpgradeError::Refused {
            binary: self.binary.clone(),
            version: self.version,
            detail,
        }))
    }

    /// Kills and reaps the check (it took too long).
    pub fn kill(mut self) -> UpgradeError {
        let _ = self.child.kill();
        let _ = self.child.wait();
        UpgradeError::CheckTimedOut {
            binary: self.binary,
        }
    }

    /// What the check printed, up to [`CHECK_OUTPUT_MAX`] bytes, lossily as text.
    fn read_output(&self) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        while out.len() < CHECK_OUTPUT_MAX {
            match rustix::io::read(&self.output, &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
            }
        }
        out.truncate(CHECK_OUTPUT_MAX);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The image in a memfd (not close-on-exec: it crosses the exec), its offset at 0.
pub fn memfd_image(bytes: &[u8]) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create("phux-mio-upgrade", MemfdFlags::empty())?;
    let mut rest = bytes;
    while !rest.is_empty() {
        match rustix::io::write(&fd, rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::fs::seek(&fd, rustix::fs::SeekFrom::Start(0))?;
    Ok(fd)
}

/// Reads a whole image from its memfd, from the start (a fallback reads it a second time).
pub fn read_image(fd: &OwnedFd) -> io::Result<Vec<u8>> {
    rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(0))?;
    // Sized once from the file (tens of MB for a large state), not grown by doubling; the
    // size is only a hint, what the read finds is what counts.
    let size = rustix::fs::fstat(fd).map_or(0, |st| usize::try_from(st.st_size).unwrap_or(0));
    let mut file = std::fs::File::from(fd.try_clone()?);
    let mut bytes = Vec::with_capacity(size);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Opens the binary this process runs (`/proc/self/exe`), not close-on-exec, so that a new
/// image that cannot adopt the state can exec it again even if its file was replaced or
/// removed since ([SERVER.UPGRADE.EXEC.6]).
pub fn open_own_exe() -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/self/exe",
        OFlags::RDONLY,
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

/// Replaces the process image with `binary args…`. Returns only on failure. The environment,
/// the pid, the children and every descriptor without `FD_CLOEXEC` stay.
pub fn exec(binary: &Path, args: &[OsString]) -> io::Error {
    let error = Command::new(binary).args(args).exec();
    // std resets SIGPIPE to its default disposition before execve; the exec failed and we
    // serve on, where a peer that went away must be an EPIPE, not the end of the server.
    if let Err(e) = ignore_sigpipe() {
        tracing::error!(error = %e, "cannot ignore SIGPIPE again after a failed exec");
    }
    error
}

/// SIGPIPE caught by a handler that does nothing: a write to a closed socket fails with
/// EPIPE, as std's start-up ignoring made it.
fn ignore_sigpipe() -> io::Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    signal_hook::flag::register(
        signal_hook::consts::SIGPIPE,
        Arc::new(AtomicBool::new(false)),
    )
    .map(drop)
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
    // and runs before any other descriptor is opened or adopted), so the OwnedFd is its one
    // owner.
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

    #[test]
    fn an_image_written_to_a_memfd_reads_back_whole_and_twice() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let fd = memfd_image(&bytes).expect("memfd");
        // It crosses the exec.
        let flags = rustix::io::fcntl_getfd(&fd).expect("getfd");
        assert!(!flags.contains(FdFlags::CLOEXEC));
        assert_eq!(read_image(&fd).expect("read"), bytes);
        assert_eq!(read_image(&fd).expect("read again"), bytes);
    }

    #[test]
    fn inherit_clears_cloexec_and_puts_it_back_when_dropped() {
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        let cloexec = |fd: &std::os::unix::net::UnixStream| {
            rustix::io::fcntl_getfd(fd)
                .expect("getfd")
                .contains(FdFlags::CLOEXEC)
        };
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
        let fd = memfd_image(b"x").expect("memfd");
        let raw = fd.as_raw_fd();
        assert!(adopt_fds(&[raw, raw]).is_err());
        // One owner: hand it over, then adopt it back.
        let raw = {
            use std::os::fd::IntoRawFd;
            fd.into_raw_fd()
        };
        let mut adopted = adopt_fds(&[raw]).expect("adopt");
        let fd = adopted.pop().expect("one");
        assert_eq!(read_image(&fd).expect("read"), b"x");
    }

    #[test]
    fn a_check_that_exits_at_once_or_says_no_is_a_refusal_naming_why() {
        let mut silent = Checker::start(Path::new("/bin/true"), 1).expect("start");
        let verdict = wait(&mut silent);
        let text = verdict.expect_err("refused").to_string();
        assert!(text.contains("without confirming"), "{text}");

        let mut failing = Checker::start(Path::new("/bin/false"), 1).expect("start");
        let text = wait(&mut failing).expect_err("refused").to_string();
        assert!(text.contains("exit status: 1"), "{text}");

        assert!(matches!(
            Checker::start(Path::new("/nonexistent/phux-no-such-binary"), 1),
            Err(UpgradeError::Binary { .. })
        ));
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
