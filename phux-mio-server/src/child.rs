//! A child process on its own pseudo-terminal: spawn, signal its process group, learn its
//! exit through a pidfd, kill and reap.
//!
//! The child is a session leader whose controlling terminal is the slave, so its process
//! group id equals its pid and `killpg(pid)` reaches it and every job it started that stayed in
//! the group. Exit is observed through a pidfd (readable once the child exits), so the event
//! loop needs no SIGCHLD handler and there is no race with pid reuse.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions};

use phux_core::writer::{PortWrite, PtyPort, Termios};

use crate::pty::{PtyMaster, PtyRead, PtyWrite};

/// The `TERM` a child gets when the spawner names none.
pub const DEFAULT_TERM: &str = "xterm-256color";

/// What to run and how its terminal starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    /// The program, looked up in `PATH` when it has no slash.
    pub program: OsString,
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// `None`: inherit the server's environment. `Some(vars)`: exactly these (plus `TERM`).
    pub env: Option<Vec<(String, String)>>,
    /// Working directory; `None` keeps the server's.
    pub cwd: Option<PathBuf>,
    /// The child's `TERM`; it overrides any `TERM` in `env`.
    pub term: String,
    /// Initial columns (passed to the kernel as is; defaulting a 0 is the protocol's job).
    pub cols: u16,
    /// Initial rows.
    pub rows: u16,
}

impl SpawnSpec {
    /// A spec for `program` with no arguments, the inherited environment, the server's
    /// working directory, `TERM=xterm-256color` and an 80x24 terminal.
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: None,
            cwd: None,
            term: DEFAULT_TERM.to_owned(),
            cols: 80,
            rows: 24,
        }
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// Why a spawn failed. Each variant keeps the OS error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// Opening or configuring the pseudo-terminal failed (openpt, grantpt, unlockpt,
    /// ptsname, opening the slave, window size).
    #[error("cannot open a pseudo-terminal: {0}")]
    Pty(#[source] io::Error),
    /// The program could not be started (not found, not executable, bad cwd, setsid or
    /// TIOCSCTTY refused in the child).
    #[error("cannot start {program:?}: {source}")]
    Exec {
        /// The program that was asked for.
        program: OsString,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The child started but no pidfd could be opened for it (kernel older than 5.3); the
    /// child has been killed and reaped.
    #[error("cannot open a pidfd for the child: {0}")]
    Pidfd(#[source] io::Error),
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// It called `_exit(code)`.
    Exited(i32),
    /// A signal ended it (the signal number).
    Signaled(i32),
}

impl ChildExit {
    /// The exit code, for TERMINAL_CLOSED's optional `exit_status` (absent when a signal
    /// ended the child).
    pub fn code(self) -> Option<i32> {
        match self {
            Self::Exited(code) => Some(code),
            Self::Signaled(_) => None,
        }
    }
}

/// For the log: `0`, `3`, or `signal 9`.
impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "{code}"),
            Self::Signaled(signal) => write!(f, "signal {signal}"),
        }
    }
}

/// The signals SIGNAL_TERMINAL can send to a terminal's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupSignal {
    /// SIGINT.
    Interrupt,
    /// SIGSTOP.
    Freeze,
    /// SIGCONT.
    Resume,
    /// SIGTERM.
    Terminate,
    /// SIGKILL.
    Kill,
}

impl GroupSignal {
    fn to_signal(self) -> Signal {
        match self {
            Self::Interrupt => Signal::INT,
            Self::Freeze => Signal::STOP,
            Self::Resume => Signal::CONT,
            Self::Terminate => Signal::TERM,
            Self::Kill => Signal::KILL,
        }
    }

    /// The signal number (SIGINT = 2, ...).
    pub fn number(self) -> i32 {
        self.to_signal().as_raw()
    }
}

/// A running (or exited, not yet dropped) child on its own pseudo-terminal.
///
/// Dropping it without [`PtyChild::kill_and_reap`] still kills the group and reaps the child,
/// so no zombie is left behind.
#[derive(Debug)]
pub struct PtyChild {
    master: Option<PtyMaster>,
    pid: Pid,
    pidfd: OwnedFd,
    exit: Option<ChildExit>,
}

/// Sets every standard signal the child may catch back to its default disposition. exec
/// resets caught signals but keeps ignored ones, and a server may have been started ignoring
/// some (SIGQUIT by a shell's `&` without job control, SIGHUP under `nohup` for a caller of
/// this function that does not catch it): a child inheriting them would not quit on ^\, stop
/// on ^Z or hang up when its terminal closes. Called in the forked child, before exec
/// ([SERVER.SIGNAL.4]).
fn reset_signal_dispositions() {
    for signal in 1..32 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: sigaction is async-signal-safe; the action is a zeroed struct with the
        // SIG_DFL handler, no flags and an empty mask, and no old action is asked for. A
        // number the kernel refuses (none of 1..31 but SIGKILL and SIGSTOP) is left alone.
        #[allow(unsafe_code)]
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Starts `spec.program` on a fresh pseudo-terminal.
///
/// The child is SIGKILLed by the kernel when the thread that called this exits
/// (`PR_SET_PDEATHSIG`, see [SERVER.SIGNAL.3]): call it from a thread that outlives the child,
/// as the single-threaded server does.
pub fn spawn(spec: &SpawnSpec) -> Result<PtyChild, SpawnError> {
    let (master, slave) = PtyMaster::open(spec.cols, spec.rows).map_err(SpawnError::Pty)?;
    let stdio = |fd: &OwnedFd| fd.try_clone().map(Stdio::from).map_err(SpawnError::Pty);

    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args);
    if let Some(vars) = &spec.env {
        cmd.env_clear();
        cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    }
    cmd.env("TERM", &spec.term);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(stdio(&slave)?)
        .stdout(stdio(&slave)?)
        .stderr(stdio(&slave)?);
    let server = rustix::process::getpid();
    // Read here, in the parent: the child only makes the syscall.
    let nofile = crate::nofile::for_children();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed. It makes raw syscalls through rustix (setsid, setrlimit, ioctl TIOCSCTTY on fd 0,
    // which std has already dup2'ed from the slave; prctl PR_SET_PDEATHSIG; getppid) and
    // sigaction through libc (see `reset_signal_dispositions`), and
    // compares two pids; it allocates nothing, takes no locks and touches no state shared with
    // the parent. An error is returned as a raw errno, which std reports to the parent through
    // its exec-status pipe.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            // A new session, so the slave can become our controlling terminal and our pid
            // becomes the process group id that killpg targets.
            rustix::process::setsid()?;
            reset_signal_dispositions();
            // The descriptor limit the server was started with, not the one it raised for
            // itself (see `nofile`): lowering a soft limit is always allowed.
            if let Some(limit) = &nofile {
                let limit = rustix::process::Rlimit {
                    current: limit.current,
                    maximum: limit.maximum,
                };
                rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)?;
            }
            rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?;
            // [SERVER.SIGNAL.3] Die with the server rather than live on as an orphan. It is
            // SIGKILL because a server that dies this way (SIGKILL, a crash) gets no grace period:
            // closing its masters already hung every terminal up (SIGHUP), so a child still
            // here is one that ignores SIGHUP, and only SIGKILL cannot be ignored. The kernel
            // sends it when the *thread* that forked exits: the loop's thread forks, and it lives
            // as long as the server (the PTY reader thread forks nothing), so that is the
            // server's death. It survives exec (not a set-uid one) and reaches the
            // child only, not what the child starts (those get the terminal's hangup).
            rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            // The server may have died before the prctl: then no signal will ever come.
            if rustix::process::getppid() != Some(server) {
                return Err(Errno::SRCH.into());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|source| SpawnError::Exec {
        program: spec.program.clone(),
        source,
    })?;
    // Close every parent-side copy of the slave: otherwise the master never reports EOF.
    drop(cmd);
    drop(slave);

    let raw = child.id();
    // std hands out pids as u32; a live child's pid is always a positive i32.
    let pid = i32::try_from(raw)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| SpawnError::Pidfd(io::Error::other(format!("invalid pid {raw}"))))?;
    // `child` is dropped here without waiting: we reap through the pidfd instead. Until we
    // reap, the zombie keeps the pid (and so the pidfd's target) from being reused.
    drop(child);
    let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = rustix::process::kill_process_group(pid, Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
            return Err(SpawnError::Pidfd(e.into()));
        }
    };
    Ok(PtyChild {
        master: Some(master),
        pid,
        pidfd,
        exit: None,
    })
}

impl PtyChild {
    /// A child the previous server image started (an upgrade): the exec kept the pid, so it
    /// is still our child, reaped through its pidfd as before.
    pub(crate) fn adopt(
        master: Option<OwnedFd>,
        pid: i32,
        pidfd: OwnedFd,
        exit: Option<ChildExit>,
    ) -> io::Result<Self> {
        let pid =
            Pid::from_raw(pid).ok_or_else(|| io::Error::other(format!("invalid pid {pid}")))?;
        Ok(Self {
            master: master.map(PtyMaster::adopt),
            pid,
            pidfd,
            exit,
        })
    }

    /// The master, for `mio::unix::SourceFd` (readable: output; writable: room for input).
    /// `None` after [`PtyChild::close_master`].
    pub fn master_fd(&self) -> Option<BorrowedFd<'_>> {
        self.master.as_ref().map(AsFd::as_fd)
    }

    /// The pidfd, for `mio::unix::SourceFd`: it becomes readable when the child exits.
    pub fn pidfd(&self) -> BorrowedFd<'_> {
        self.pidfd.as_fd()
    }

    /// The child's pid, which is also its process group id and session id.
    pub fn pid(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// The working directory of the program in the terminal's foreground (its foreground
    /// process group's leader, from the master), else of the child, as `/proc/PID/cwd`
    /// says: `None` when neither reads or the path is not UTF-8 ([SCREEN.SERVER.2]).
    pub fn current_dir(&self) -> Option<String> {
        let leader = self
            .master_fd()
            .and_then(|fd| rustix::termios::tcgetpgrp(fd).ok())
            .map(|pgrp| pgrp.as_raw_nonzero().get().unsigned_abs());
        leader
            .into_iter()
            .chain([self.pid()])
            .find_map(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).ok())
            .and_then(|path| path.into_os_string().into_string().ok())
    }

    /// Reads the child's output without blocking. After the master is closed this reports
    /// [`PtyRead::Eof`].
    pub fn read(&self, buf: &mut [u8]) -> io::Result<PtyRead> {
        match &self.master {
            Some(m) => m.read(buf),
            None => Ok(PtyRead::Eof),
        }
    }

    /// Writes to the child's input without blocking. After the master is closed this reports
    /// [`PtyWrite::Gone`].
    pub fn write(&self, buf: &[u8]) -> io::Result<PtyWrite> {
        match &self.master {
            Some(m) => m.write(buf),
            None => Ok(PtyWrite::Gone),
        }
    }

    /// Sets the window size (`TIOCSWINSZ`).
    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        self.live_master()?.resize(cols, rows)
    }

    /// The window size as `(cols, rows)`.
    pub fn size(&self) -> io::Result<(u16, u16)> {
        self.live_master()?.size()
    }

    /// The slave's ICANON / ICRNL / IGNCR, read right now (for the canonical-line guard).
    pub fn termios(&self) -> io::Result<Termios> {
        self.live_master()?.termios()
    }

    /// Sends `sig` to the child's process group (the child and what it started there).
    /// Fails with `ESRCH` once the child has been reaped: its pid may then name another group.
    pub fn signal_group(&self, sig: GroupSignal) -> io::Result<()> {
        if self.exit.is_some() {
            return Err(Errno::SRCH.into());
        }
        rustix::process::kill_process_group(self.pid, sig.to_signal()).map_err(Into::into)
    }

    /// Reaps the child if it has exited, without blocking. Returns the same status on every
    /// call after the first success.
    pub fn try_wait(&mut self) -> io::Result<Option<ChildExit>> {
        if self.exit.is_none() {
            self.exit = wait_pidfd(&self.pidfd, WaitIdOptions::NOHANG)?;
        }
        Ok(self.exit)
    }

    /// How the child ended, if it has been reaped.
    pub fn exit(&self) -> Option<ChildExit> {
        self.exit
    }

    /// Closes the master (the kernel hangs up the terminal: SIGHUP to the foreground group).
    /// Deregister it from mio first.
    pub fn close_master(&mut self) {
        self.master = None;
    }

    /// The first step of a kill, the signal a closing terminal emulator's hangup sends
    /// ([SERVER.SIGNAL.2]): SIGHUP, then SIGCONT (so a stopped job can act on the SIGHUP), to
    /// the process group. Does not wait: the pidfd says when the child has exited, and
    /// [`Self::kill_group`] follows if it does not.
    ///
    /// The master stays open. Closing it now would race an end of input (and failing writes)
    /// against the SIGHUP, and a program that ends quietly on end of input would hide the
    /// hangup; kept open, the child's first news of the kill is the SIGHUP and its last output
    /// is still read. It is closed once the child is reaped, which hangs up whatever else
    /// still holds the terminal.
    pub fn hang_up(&self) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        let hup = rustix::process::kill_process_group(self.pid, Signal::HUP);
        let _ = rustix::process::kill_process_group(self.pid, Signal::CONT);
        match hup {
            // ESRCH: the group is empty but the leader may still be an unreaped zombie.
            Ok(()) | Err(Errno::SRCH) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// SIGKILLs the process group unless the child has been reaped (or the group is already
    /// empty). Does not wait.
    pub fn kill_group(&self) -> io::Result<()> {
        match self.signal_group(GroupSignal::Kill) {
            Err(e) if e.raw_os_error() == Some(Errno::SRCH.raw_os_error()) => Ok(()),
            other => other,
        }
    }

    /// SIGKILLs the process group unless the child was already reaped, closes the master and
    /// reaps the child, blocking while a SIGKILLed child finishes dying. The last resort, for
    /// a server that is exiting; the event loop kills with [`Self::hang_up`] first.
    ///
    /// SIGKILL goes first so a live child reliably reports `Signaled(9)`; closing the master
    /// first would race a SIGHUP against it.
    pub fn kill_and_reap(mut self) -> io::Result<ChildExit> {
        self.kill_and_reap_in_place()
    }

    fn kill_and_reap_in_place(&mut self) -> io::Result<ChildExit> {
        if let Some(exit) = self.exit {
            self.close_master();
            return Ok(exit);
        }
        let killed = rustix::process::kill_process_group(self.pid, Signal::KILL);
        self.close_master();
        match killed {
            // ESRCH: the group is empty but the leader may still be an unreaped zombie.
            Ok(()) | Err(Errno::SRCH) => {}
            Err(e) => return Err(e.into()),
        }
        let exit = wait_pidfd(&self.pidfd, WaitIdOptions::empty())?
            .ok_or_else(|| io::Error::other("waitid returned no status without WNOHANG"))?;
        self.exit = Some(exit);
        Ok(exit)
    }

    fn live_master(&self) -> io::Result<&PtyMaster> {
        self.master.as_ref().ok_or_else(|| Errno::BADF.into())
    }
}

impl Drop for PtyChild {
    fn drop(&mut self) {
        // Best effort: errors here have nobody to go to.
        let _ = self.kill_and_reap_in_place();
    }
}

/// `waitid(P_PIDFD, WEXITED | extra)`, retrying EINTR. `None`: not exited yet (NOHANG).
fn wait_pidfd(pidfd: &OwnedFd, extra: WaitIdOptions) -> io::Result<Option<ChildExit>> {
    loop {
        match rustix::process::waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED | extra) {
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
            Ok(None) => return Ok(None),
            Ok(Some(status)) => {
                if let Some(code) = status.exit_status() {
                    return Ok(Some(ChildExit::Exited(code)));
                }
                if let Some(sig) = status.terminating_signal() {
                    return Ok(Some(ChildExit::Signaled(sig)));
                }
                // WEXITED without stop/continue flags: only exit or death by signal remain.
                return Err(io::Error::other(
                    "waitid reported neither an exit nor a signal",
                ));
            }
        }
    }
}

/// The engine's `PtyWriter` writes a terminal's jobs through its master.
impl PtyPort for PtyChild {
    fn termios(&mut self) -> Option<Termios> {
        Self::termios(self).ok()
    }

    fn write(&mut self, bytes: &[u8]) -> PortWrite {
        // EINTR is retried below us; EIO (hung up) and any other error end the job.
        match Self::write(self, bytes) {
            Ok(PtyWrite::Written(n)) => PortWrite::Accepted(n),
            Ok(PtyWrite::WouldBlock) => PortWrite::Full,
            Ok(PtyWrite::Gone) | Err(_) => PortWrite::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_pty_takes_a_job_through_the_writer_and_the_child_echoes_it() {
        use std::os::fd::AsRawFd;
        use std::time::{Duration, Instant};

        use phux_core::writer::{JobId, PtyWriter, Pump, WriteOutcome};

        let mut child = spawn(&SpawnSpec::new("cat")).expect("spawn cat");
        let mut writer = PtyWriter::new();
        writer.push(JobId(7), b"ping\r".to_vec());
        let mut done = Vec::new();
        assert_eq!(writer.pump(&mut child, &mut done), Pump::Idle);
        assert_eq!(done, [(JobId(7), WriteOutcome::Written)]);

        let mut poll = mio::Poll::new().expect("poll");
        let fd = child.master_fd().expect("master").as_raw_fd();
        poll.registry()
            .register(
                &mut mio::unix::SourceFd(&fd),
                mio::Token(0),
                mio::Interest::READABLE,
            )
            .expect("register");
        let mut events = mio::Events::with_capacity(4);
        let end = Instant::now() + Duration::from_secs(30);
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        // The line discipline echoes "ping\r\n", then cat writes "ping\r\n" again.
        while out.windows(6).filter(|w| w == b"ping\r\n").count() < 2 {
            assert!(Instant::now() < end, "no echo: {out:?}");
            while let Ok(PtyRead::Data(n)) = child.read(&mut buf) {
                out.extend_from_slice(&buf[..n]);
            }
            // Other tests of this binary reap and signal children: a SIGCHLD may cut the wait.
            match poll.poll(&mut events, Some(Duration::from_millis(200))) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => other.expect("poll"),
            }
        }
        let _ = child.kill_and_reap();
    }

    #[test]
    fn missing_program_is_an_exec_error() {
        let err = spawn(&SpawnSpec::new("/nonexistent/phux-no-such-program")).unwrap_err();
        match err {
            SpawnError::Exec { source, .. } => {
                assert_eq!(source.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("expected Exec, got {other:?}"),
        }
    }

    #[test]
    fn missing_cwd_is_an_exec_error() {
        let mut spec = SpawnSpec::new("/bin/sh");
        spec.cwd = Some(PathBuf::from("/nonexistent/phux-no-such-dir"));
        assert!(matches!(spawn(&spec), Err(SpawnError::Exec { .. })));
    }

    #[test]
    fn child_is_a_session_and_group_leader() {
        let child = spawn(&SpawnSpec::new("sleep").args(["100"])).expect("spawn");
        let pid = Pid::from_raw(child.pid().cast_signed()).expect("pid");
        assert_eq!(rustix::process::getsid(Some(pid)).expect("getsid"), pid);
        assert_eq!(rustix::process::getpgid(Some(pid)).expect("getpgid"), pid);
        // The slave is its controlling terminal: the terminal's session is the child.
        let master = child.master_fd().expect("master");
        assert_eq!(rustix::termios::tcgetsid(master).ok(), Some(pid));
        assert_eq!(child.kill_and_reap().expect("reap"), ChildExit::Signaled(9));
    }

    #[test]
    fn exit_code_is_absent_for_a_signal() {
        assert_eq!(ChildExit::Exited(7).code(), Some(7));
        assert_eq!(ChildExit::Signaled(9).code(), None);
        assert_eq!(GroupSignal::Kill.number(), 9);
        assert_eq!(GroupSignal::Interrupt.number(), 2);
    }
}
