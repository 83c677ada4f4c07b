//! A terminal as the driver holds it: the child on its PTY, the master's and the pidfd's
//! registrations, the writer of its jobs, and the drain of its output after the child exits.
//! (The engine's side of the same terminal is `phux_core::server`'s `Terminal`, what it shows
//! `phux_core::terminal_state::TerminalState` over `phux_term::Terminal`.)

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use phux_core::server::{JobId, LocalTerminal, SpawnSpec as EngineSpawn, WriteOutcome};
use phux_core::time::Instant;
use phux_core::writer::{PtyWriter, Pump};
use phux_proto::command::Signal;
use tracing::warn;

use crate::child::{ChildExit, GroupSignal, PtyChild, SpawnSpec};
use crate::timer::{Timer, TimerTable};

/// One live terminal: its child on its PTY.
#[derive(Debug)]
pub(crate) struct PtyTerminal {
    id: LocalTerminal,
    pub(crate) child: PtyChild,
    /// The master's token while it is registered.
    master: Option<Token>,
    /// The pidfd's token while it is registered.
    pidfd: Option<Token>,
    /// The jobs waiting for the master, oldest first.
    jobs: PtyWriter,
    /// Whether `WRITABLE` is part of the master's registration: only while a job is blocked.
    writable: bool,
    /// Whether `READABLE` is: not while the PTY reader thread reads the master
    /// ([OUTPUT.READER.1]). With neither, the master is out of the poll.
    reading: bool,
    /// The child has been reaped; its exit is reported once the output ends or
    /// `Timer::ExitDrain` comes.
    exited: Option<ChildExit>,
    /// The master reported end of file: every holder of the slave closed it.
    eof: bool,
    /// Being killed: sent SIGHUP, and SIGKILLed at `Timer::KillGrace` unless it exits first.
    killing: bool,
    /// `ExitDrain`, `KillGrace`.
    pub(crate) timers: TimerTable,
    /// The working directory last reported to the engine ([SCREEN.SERVER.2]), once
    /// `cwd_reported`; not carried across an upgrade (the engine's state is; the new image
    /// reports it again).
    cwd: Option<String>,
    cwd_reported: bool,
}

impl PtyTerminal {
    /// Registers `child`'s master (readable) and pidfd. On failure the child is dropped, which
    /// kills and reaps it.
    pub(crate) fn register(
        id: LocalTerminal,
        child: PtyChild,
        master_token: Token,
        pidfd_token: Token,
        registry: &Registry,
    ) -> io::Result<Self> {
        let master_fd: Option<RawFd> = child.master_fd().map(|fd| fd.as_raw_fd());
        let pidfd = child.pidfd().as_raw_fd();
        let registered = master_fd
            .ok_or_else(|| io::Error::other("no master"))
            .and_then(|fd| registry.register(&mut SourceFd(&fd), master_token, Interest::READABLE))
            .and_then(|()| {
                registry.register(&mut SourceFd(&pidfd), pidfd_token, Interest::READABLE)
            });
        if let Err(e) = registered {
            if let Some(fd) = master_fd {
                let _ = registry.deregister(&mut SourceFd(&fd));
            }
            drop(child);
            return Err(e);
        }
        Ok(Self {
            id,
            child,
            master: Some(master_token),
            pidfd: Some(pidfd_token),
            jobs: PtyWriter::new(),
            writable: false,
            reading: true,
            exited: None,
            eof: false,
            killing: false,
            timers: TimerTable::default(),
            cwd: None,
            cwd_reported: false,
        })
    }

    /// A terminal the previous server image held (an upgrade): its master and pidfd
    /// registered by the caller already under these tokens, no job pending (the engine was
    /// quiet), its exit, drain and kill state as they were.
    pub(crate) fn adopted(id: LocalTerminal, child: PtyChild, state: Adopted) -> Self {
        let mut timers = TimerTable::default();
        if let Some(at) = state.exit_drain {
            timers.set(Timer::ExitDrain, at);
        }
        if let Some(at) = state.kill_grace {
            timers.set(Timer::KillGrace, at);
        }
        Self {
            id,
            exited: child.exit(),
            child,
            master: state.master,
            pidfd: state.pidfd,
            jobs: PtyWriter::new(),
            writable: false,
            reading: true,
            eof: state.eof,
            killing: state.killing,
            timers,
            cwd: None,
            cwd_reported: false,
        }
    }

    /// Reads the program's working directory again: whether it is not the one last reported
    /// ([`Self::cwd`] is then to be reported).
    pub(crate) fn cwd_changed(&mut self) -> bool {
        let now = self.child.current_dir();
        if self.cwd_reported && self.cwd == now {
            return false;
        }
        self.cwd = now;
        self.cwd_reported = true;
        true
    }

    /// The working directory as last read.
    pub(crate) fn cwd(&self) -> Option<String> {
        self.cwd.clone()
    }

    /// Whether no job waits for the master.
    pub(crate) fn idle(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The master's token, while it is registered.
    pub(crate) fn master_token(&self) -> Option<Token> {
        self.master
    }

    /// Whether the child has been reaped.
    pub(crate) fn exited(&self) -> Option<ChildExit> {
        self.exited
    }

    /// Whether the master reported end of file.
    pub(crate) fn eof(&self) -> bool {
        self.eof
    }

    /// The master reported end of file.
    pub(crate) fn set_eof(&mut self) {
        self.eof = true;
    }

    /// The child was reaped: its output may drain until `drain`. No SIGKILL is due any more.
    pub(crate) fn set_exited(&mut self, exit: ChildExit, drain: Instant) {
        self.exited = Some(exit);
        self.timers.stop(Timer::KillGrace);
        self.timers.set(Timer::ExitDrain, drain);
    }

    /// Whether the terminal is being killed.
    pub(crate) fn killing(&self) -> bool {
        self.killing
    }

    /// The first step of a kill: SIGHUP to the group (see [`PtyChild::hang_up`]); the child
    /// has until `grace` to exit before `Timer::KillGrace` comes. Its output is read on, and
    /// its exit reported as any other.
    pub(crate) fn hang_up(&mut self, grace: Instant) {
        self.killing = true;
        if let Err(e) = self.child.hang_up() {
            warn!(terminal = %self.id, error = %e, "hanging up failed");
        }
        self.timers.set(Timer::KillGrace, grace);
    }

    /// Queues a job for the master.
    pub(crate) fn push(&mut self, job: JobId, bytes: Vec<u8>) {
        self.jobs.push(job, bytes);
    }

    /// Writes the pending jobs as far as the master takes them, adding each finished job to
    /// `done`, and holds `WRITABLE` interest while one is blocked.
    pub(crate) fn pump(&mut self, registry: &Registry, done: &mut Vec<(JobId, WriteOutcome)>) {
        let state = self.jobs.pump(&mut self.child, done);
        let want_writable = state == Pump::Blocked;
        if want_writable != self.writable
            && let Err(e) = self.watch(registry, self.reading, want_writable)
        {
            warn!(terminal = %self.id, error = %e, "cannot change write interest");
        }
    }

    /// Whether the loop's poll watches the master for output (see [`Self::set_reading`]).
    pub(crate) fn reading(&self) -> bool {
        self.reading
    }

    /// Watches the master for output in the loop's poll, or stops (the PTY reader thread reads
    /// it meanwhile). Watched again, a master that holds output raises an event at once.
    pub(crate) fn set_reading(&mut self, registry: &Registry, reading: bool) -> io::Result<()> {
        if reading == self.reading {
            return Ok(());
        }
        self.watch(registry, reading, self.writable)
    }

    /// Registers, changes or removes the master's registration for this interest.
    fn watch(&mut self, registry: &Registry, reading: bool, writable: bool) -> io::Result<()> {
        let (Some(token), Some(fd)) = (self.master, self.child.master_fd()) else {
            return Ok(());
        };
        let fd = fd.as_raw_fd();
        let interest = match (reading, writable) {
            (true, true) => Some(Interest::READABLE | Interest::WRITABLE),
            (true, false) => Some(Interest::READABLE),
            (false, true) => Some(Interest::WRITABLE),
            (false, false) => None,
        };
        match (self.reading || self.writable, interest) {
            (true, Some(interest)) => registry.reregister(&mut SourceFd(&fd), token, interest)?,
            (false, Some(interest)) => registry.register(&mut SourceFd(&fd), token, interest)?,
            (true, None) => registry.deregister(&mut SourceFd(&fd))?,
            (false, None) => {}
        }
        self.reading = reading;
        self.writable = writable;
        Ok(())
    }

    /// Resolves every pending job as not written (the terminal is going away).
    pub(crate) fn abandon(&mut self, done: &mut Vec<(JobId, WriteOutcome)>) {
        self.jobs.abandon(done);
    }

    /// Removes the master's and the pidfd's registrations; returns the tokens they held.
    pub(crate) fn deregister(&mut self, registry: &Registry) -> [Option<Token>; 2] {
        let master = self.master.take();
        if master.is_some()
            && (self.reading || self.writable)
            && let Some(fd) = self.child.master_fd()
        {
            let _ = registry.deregister(&mut SourceFd(&fd.as_raw_fd()));
        }
        let pidfd = self.pidfd.take();
        if pidfd.is_some() {
            let _ = registry.deregister(&mut SourceFd(&self.child.pidfd().as_raw_fd()));
        }
        [master, pidfd]
    }
}

/// What an adopted terminal brings besides its child (see [`PtyTerminal::adopted`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Adopted {
    pub(crate) master: Option<Token>,
    pub(crate) pidfd: Option<Token>,
    pub(crate) eof: bool,
    pub(crate) killing: bool,
    pub(crate) exit_drain: Option<Instant>,
    pub(crate) kill_grace: Option<Instant>,
}

/// The engine's spawn request as the OS layer takes it.
pub(crate) fn os_spawn_spec(spec: &EngineSpawn) -> Result<SpawnSpec, String> {
    let (program, args) = spec
        .command
        .split_first()
        .ok_or_else(|| "empty command".to_owned())?;
    Ok(SpawnSpec {
        program: program.into(),
        args: args.iter().map(Into::into).collect(),
        env: spec.env.clone(),
        cwd: spec.cwd.as_ref().map(PathBuf::from),
        term: spec.term.clone(),
        // The engine has already replaced a 0 with its default size.
        cols: spec.cols,
        rows: spec.rows,
    })
}

/// The process-group signal a SIGNAL_TERMINAL names.
pub(crate) fn group_signal(signal: Signal) -> GroupSignal {
    match signal {
        Signal::Interrupt => GroupSignal::Interrupt,
        Signal::Freeze => GroupSignal::Freeze,
        Signal::Resume => GroupSignal::Resume,
        Signal::Terminate => GroupSignal::Terminate,
        Signal::Kill => GroupSignal::Kill,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_spec_maps_program_args_and_size() {
        let spec = EngineSpawn {
            command: vec!["sh".into(), "-c".into(), "true".into()],
            cwd: Some("/tmp".into()),
            env: Some(vec![("A".into(), "1".into())]),
            term: "xterm".into(),
            cols: 100,
            rows: 30,
        };
        let os = os_spawn_spec(&spec).expect("spec");
        assert_eq!(os.program, "sh");
        assert_eq!(os.args, ["-c", "true"]);
        assert_eq!(os.cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        assert_eq!(os.env, spec.env);
        assert_eq!((os.term.as_str(), os.cols, os.rows), ("xterm", 100, 30));
        let empty = EngineSpawn {
            command: Vec::new(),
            ..spec
        };
        assert!(os_spawn_spec(&empty).is_err());
    }

    #[test]
    fn signals_map_to_their_group_signals() {
        assert_eq!(group_signal(Signal::Interrupt).number(), 2);
        assert_eq!(group_signal(Signal::Freeze).number(), 19);
        assert_eq!(group_signal(Signal::Resume).number(), 18);
        assert_eq!(group_signal(Signal::Terminate).number(), 15);
        assert_eq!(group_signal(Signal::Kill).number(), 9);
    }
}
