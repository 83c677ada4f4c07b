//! Asking the new binary: opened once ([`Exe`]), then run as a child ([`Checker`]) to say
//! whether it reads our state version (`--check-upgrade`) and whether it adopts the very image
//! we wrote (`--check-adopt`), each with the line it must print and the time it is given.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

use super::error::UpgradeError;

/// How long `BIN --check-upgrade` may take before it is killed and the upgrade refused: a
/// binary that hangs must not hold the upgrade (or the requester) for long, and starting a
/// program that prints one line takes milliseconds, even on a loaded machine.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

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

    /// Whether the check printed `line`, as a line of its own.
    pub fn said(&self, line: &str) -> bool {
        String::from_utf8_lossy(&self.printed)
            .lines()
            .any(|l| l.trim() == line)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::memfd::written;

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
