//! Helpers shared by the real-PTY tests: wait for output or exit through a mio `Poll`, or
//! poll an arbitrary condition, always against a generous deadline and never a fixed sleep.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use phux_mio_server::{ChildExit, PtyChild, PtyRead};

/// Generous on purpose: a loaded 2-core machine can take seconds to schedule a child.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
/// Upper bound on one wait for readiness, so a missed edge cannot hang a test.
const RECHECK: Duration = Duration::from_millis(200);

/// Collects a child's output, waiting for it through a mio `Poll` on the master.
pub(crate) struct Output {
    poll: Poll,
    events: Events,
    /// Everything read so far.
    pub(crate) bytes: Vec<u8>,
    /// The master reported EOF.
    pub(crate) eof: bool,
}

impl Output {
    pub(crate) fn new(child: &PtyChild) -> Self {
        let poll = Poll::new().expect("poll");
        let fd = child.master_fd().expect("master").as_raw_fd();
        poll.registry()
            .register(&mut SourceFd(&fd), Token(0), Interest::READABLE)
            .expect("register master");
        Self {
            poll,
            events: Events::with_capacity(8),
            bytes: Vec::new(),
            eof: false,
        }
    }

    /// Reads until `WouldBlock` or EOF (readiness is edge-triggered).
    pub(crate) fn drain(&mut self, child: &PtyChild) {
        let mut buf = [0u8; 4096];
        while !self.eof {
            match child.read(&mut buf).expect("read master") {
                PtyRead::Data(n) => self.bytes.extend_from_slice(&buf[..n]),
                PtyRead::WouldBlock => break,
                PtyRead::Eof => self.eof = true,
            }
        }
    }

    /// Waits until `pred(all output so far)` holds; false on deadline.
    pub(crate) fn wait_until(
        &mut self,
        child: &PtyChild,
        mut pred: impl FnMut(&[u8]) -> bool,
    ) -> bool {
        let end = Instant::now() + DEADLINE;
        loop {
            self.drain(child);
            if pred(&self.bytes) {
                return true;
            }
            let now = Instant::now();
            if now >= end || self.eof {
                return false;
            }
            self.poll
                .poll(&mut self.events, Some((end - now).min(RECHECK)))
                .expect("poll");
        }
    }

    /// Waits until the output contains `needle`.
    pub(crate) fn wait_for(&mut self, child: &PtyChild, needle: &str) -> bool {
        self.wait_until(child, |b| contains(b, needle.as_bytes()))
    }

    /// Waits for EOF, collecting output on the way.
    pub(crate) fn wait_eof(&mut self, child: &PtyChild) -> bool {
        let end = Instant::now() + DEADLINE;
        loop {
            self.drain(child);
            if self.eof {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            self.poll
                .poll(&mut self.events, Some((end - now).min(RECHECK)))
                .expect("poll");
        }
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// Waits for the child's exit through its pidfd registered with mio, then reaps it.
pub(crate) fn wait_exit(child: &mut PtyChild) -> ChildExit {
    let mut poll = Poll::new().expect("poll");
    let fd = child.pidfd().as_raw_fd();
    poll.registry()
        .register(&mut SourceFd(&fd), Token(1), Interest::READABLE)
        .expect("register pidfd");
    let mut events = Events::with_capacity(4);
    let end = Instant::now() + DEADLINE;
    loop {
        // The pidfd is readable from the moment the child exits; check before waiting in case
        // it already has.
        if let Some(exit) = child.try_wait().expect("try_wait") {
            return exit;
        }
        let now = Instant::now();
        assert!(
            now < end,
            "child {} did not exit within {DEADLINE:?}",
            child.pid()
        );
        poll.poll(&mut events, Some((end - now).min(RECHECK)))
            .expect("poll");
    }
}

/// Polls `cond` every few milliseconds until it holds; false on deadline. For conditions no
/// file descriptor reports (a process's state in /proc).
pub(crate) fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + DEADLINE;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A process's state letter from /proc (`R`, `S`, `T`, `Z`, ...); `None` once it is gone.
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: the state follows the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.trim_start().chars().next()
}

/// Dead means gone or a zombie (our container's init may never reap orphans).
pub(crate) fn is_dead(pid: u32) -> bool {
    matches!(proc_state(pid), None | Some('Z' | 'X'))
}

/// A scratch directory created 0700 (tempfile's default follows the umask, usually 0755).
pub(crate) fn private_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .expect("tempdir")
}

/// The uid of `nobody`, whom the cross-user tests run their peer as.
pub(crate) const NOBODY: u32 = 65534;

/// Whether `tool` is on the PATH.
pub(crate) fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A command that runs `perl -e script` as `nobody`, or why there cannot be one here (these
/// tests need root and `setpriv` or `runuser`, and record a skip otherwise).
pub(crate) fn perl_as_nobody(script: &str) -> Result<std::process::Command, &'static str> {
    use std::process::Command;
    if !rustix::process::geteuid().is_root() {
        return Err("not root: cannot run a peer as another uid");
    }
    if !have("perl") {
        return Err("perl not found for the test peer");
    }
    let mut cmd = if have("setpriv") {
        let mut c = Command::new("setpriv");
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "perl",
        ]);
        c
    } else if have("runuser") {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--", "perl"]);
        c
    } else {
        return Err("neither setpriv nor runuser found");
    };
    cmd.args(["-e", script]);
    Ok(cmd)
}
