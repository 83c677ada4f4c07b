//! The host's terminals: spawning (a few a turn), writing jobs to the PTY and reporting
//! their completions, the master's end, reaping, the exit drain, and killing.

use mio::Token;
use phux_core::server::{
    JobId, LocalTerminal, ServerEvent, SpawnSpec as EngineSpawn, WriteOutcome,
};
use tracing::{debug, error, info, trace, warn};

use crate::child::ChildExit;
use crate::terminal::{PtyTerminal, os_spawn_spec};
use crate::timer::{EXIT_DRAIN_BOUND, KILL_GRACE, Timer};

use super::{Host, Source};

impl Host {
    /// Starts at most `limit` of the waiting spawns, oldest first: [`SPAWNS_PER_TURN`] a turn
    /// ([SERVER.FAIR.3]).
    pub(crate) fn start_spawns(&mut self, limit: usize) {
        for _ in 0..limit {
            let Some((terminal, spec)) = self.spawns.pop_front() else {
                return;
            };
            self.spawn(terminal, &spec);
        }
    }

    pub(super) fn spawn(&mut self, terminal: LocalTerminal, spec: &EngineSpawn) {
        let spec = match os_spawn_spec(spec) {
            Ok(spec) => spec,
            Err(message) => {
                return self.report(ServerEvent::SpawnFailed { terminal, message });
            }
        };
        let child = match crate::child::spawn(&spec) {
            Ok(child) => child,
            Err(e) => {
                warn!(%terminal, program = ?spec.program, error = %e, "spawn failed");
                return self.report(ServerEvent::SpawnFailed {
                    terminal,
                    message: e.to_string(),
                });
            }
        };
        let pid = child.pid();
        let master_token = self.sources.add(Source::Master(terminal));
        let pidfd_token = self.sources.add(Source::Pidfd(terminal));
        let registry = self.poll.registry();
        let term = match PtyTerminal::register(terminal, child, master_token, pidfd_token, registry)
        {
            Ok(term) => term,
            Err(e) => {
                error!(%terminal, error = %e, "cannot register a terminal");
                self.sources.remove(master_token);
                self.sources.remove(pidfd_token);
                return self.report(ServerEvent::SpawnFailed {
                    terminal,
                    message: format!("cannot watch the terminal: {e}"),
                });
            }
        };
        info!(%terminal, pid, program = ?spec.program, cols = spec.cols, rows = spec.rows, "spawned");
        self.terminals.insert(terminal, term);
        self.report(ServerEvent::Spawned { terminal, pid });
        self.observe_cwd(terminal);
    }

    /// [SCREEN.SERVER.2] Reports `terminal`'s working directory if it changed since the last
    /// report: after the spawn, and when a burst of output ends (a shell prints its prompt
    /// after a `cd`).
    pub(crate) fn observe_cwd(&mut self, terminal: LocalTerminal) {
        if let Some(t) = self.terminals.get_mut(&terminal)
            && t.cwd_changed()
        {
            let cwd = t.cwd();
            self.report(ServerEvent::WorkingDirectory { terminal, cwd });
        }
    }

    pub(super) fn write(&mut self, terminal: LocalTerminal, job: JobId, bytes: Vec<u8>) {
        match self.terminals.get_mut(&terminal) {
            // Exited, hung up (or never started): nothing can be written.
            Some(t) if t.exited().is_none() && !t.killing() => t.push(job, bytes),
            _ => {
                return self.report(ServerEvent::WriteDone {
                    terminal,
                    job,
                    outcome: WriteOutcome::NotWritten,
                });
            }
        }
        self.pump(terminal);
    }

    /// Writes the terminal's pending jobs as far as the master takes them.
    pub(crate) fn pump(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let mut done = std::mem::take(&mut self.finished_jobs);
        t.pump(self.poll.registry(), &mut done);
        self.report_jobs(terminal, done);
    }

    pub(super) fn report_jobs(
        &mut self,
        terminal: LocalTerminal,
        mut done: Vec<(JobId, WriteOutcome)>,
    ) {
        for (job, outcome) in done.drain(..) {
            trace!(%terminal, job = job.0, ?outcome, "write done");
            self.report(ServerEvent::WriteDone {
                terminal,
                job,
                outcome,
            });
        }
        // Kept for the next write's completions: a keystroke's write allocates nothing here.
        if done.capacity() > self.finished_jobs.capacity() {
            self.finished_jobs = done;
        }
    }

    /// No more output will come: every holder of the slave closed it.
    pub(crate) fn master_eof(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        t.set_eof();
        debug!(%terminal, "terminal output ended");
        if t.exited().is_some() {
            self.finish_exit(terminal);
        } else if t.killing() {
            // A killed child's exit may have been held back until now (see `reap`).
            let _ = self.reap(terminal);
        }
        // Otherwise the child closed its terminal but runs on: its pidfd tells us of its exit.
    }

    /// The pidfd became readable: reaps the child. Returns the master's token when its output
    /// is to be read to the end before the exit is reported.
    pub(crate) fn reap(&mut self, terminal: LocalTerminal) -> Option<Token> {
        let t = self.terminals.get_mut(&terminal)?;
        if t.exited().is_some() {
            return None;
        }
        // [SERVER.SIGNAL.2] A killed child that exited within its grace while its terminal is
        // still open (something else in its group holds it) is left a zombie for now: the
        // zombie keeps its pid, so the SIGKILL at the grace's end reaches exactly the members
        // of its group that ignored the SIGHUP, never a group that reused the number. The end
        // of the output (`master_eof`) or of the grace (`on_deadlines`) reaps it.
        if t.killing() && t.timers.is_set(Timer::KillGrace) && !t.eof() {
            return None;
        }
        let exit = match t.child.try_wait() {
            Ok(Some(exit)) => exit,
            Ok(None) => return None,
            Err(e) => {
                error!(%terminal, error = %e, "waiting for the child failed");
                return None;
            }
        };
        debug!(%terminal, pid = t.child.pid(), %exit, "child exited");
        let drain = self.clock.now() + EXIT_DRAIN_BOUND;
        t.set_exited(exit, drain);
        let (eof, master) = (t.eof(), t.master_token());
        self.nearest.note(drain);
        if eof {
            self.finish_exit(terminal);
            return None;
        }
        master
    }

    /// The child is reaped and its output drained (or the drain bound passed): resolve its
    /// jobs, drop its OS state and tell the engine.
    pub(super) fn finish_exit(&mut self, terminal: LocalTerminal) {
        let Some(mut t) = self.terminals.remove(&terminal) else {
            return;
        };
        self.trim_soon();
        let (exit, t_killed) = (t.exited(), t.killing());
        self.deregister_terminal(&mut t);
        let mut done = Vec::new();
        t.abandon(&mut done);
        // Drop closes the master and reaps the child if that has not happened.
        drop(t);
        self.report_jobs(terminal, done);
        if t_killed {
            info!(%terminal, exit = exit.map(tracing::field::display), "terminal killed");
        } else {
            info!(%terminal, exit = exit.map(tracing::field::display), "terminal closed");
        }
        self.report(ServerEvent::ChildExited {
            terminal,
            exit_status: exit.and_then(ChildExit::code),
        });
    }

    /// KILL_TERMINAL (or shutdown): SIGHUP, and let the child exit on its own; SIGKILL comes
    /// only when `Timer::KillGrace` does. Never waits: the exit is reported, as any other, when
    /// the pidfd says the child is gone.
    pub(super) fn kill(&mut self, terminal: LocalTerminal) {
        // Killed before it started: it never will (the engine has already answered its
        // spawner).
        if let Some(at) = self.spawns.iter().position(|(t, _)| *t == terminal) {
            self.spawns.remove(at);
            return;
        }
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        if t.killing() {
            return;
        }
        let mut done = Vec::new();
        t.abandon(&mut done);
        if t.exited().is_some() {
            // Reaped already, its output still draining: nothing left to signal.
            self.report_jobs(terminal, done);
            return self.finish_exit(terminal);
        }
        // [SERVER.SIGNAL.2] SIGHUP first, as a closing terminal emulator does; SIGKILL only
        // after KILL_GRACE, from `on_deadlines`. The loop goes on meanwhile.
        let grace = self.clock.now() + KILL_GRACE;
        let pid = t.child.pid();
        t.hang_up(grace);
        self.nearest.note(grace);
        self.report_jobs(terminal, done);
        info!(%terminal, pid, "sent SIGHUP; SIGKILL follows unless it exits");
    }

    pub(super) fn deregister_terminal(&mut self, t: &mut PtyTerminal) {
        if let Some(token) = t.master_token() {
            self.reader.forget(token);
        }
        for token in t.deregister(self.poll.registry()).into_iter().flatten() {
            self.sources.remove(token);
        }
        let sources = &self.sources;
        self.again.retain(|&tok| sources.get(tok).is_some());
    }
}
