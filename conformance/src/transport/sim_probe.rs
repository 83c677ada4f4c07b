//! The probe child as a [`ChildModel`] of the harness's simulated PTY, for the in-process
//! transport.
//!
//! This is a host for [`ProbeMachine`] that follows the contract in the probe's module doc.
//! The kernel's part is the harness's [`SimPty`](phux_core::sim::SimPty): the bounded input
//! queue (a stalled probe stops reading, so a large write cannot complete), the writer and its
//! canonical-line guard, the process group's SIGSTOP, SIGCONT and SIGKILL (signals to a stopped
//! group wait for SIGCONT). This model adds what is the probe's own: the line discipline's
//! canonical mode (lines, ICRNL, VEOF, ISIG's ^C, echo), the full termios it reports, the window
//! size, the signals the machine handles, and the grandchild (it shares the probe's group, so it
//! sees every signal the group gets).
//!
//! It does no I/O and reads no clock: the PTY calls it with the virtual time.

use std::collections::VecDeque;

use phux_core::Instant;
use phux_core::sim::{ChildIo, ChildModel, ExitKind, Received};
use phux_core::writer::Termios;
use phux_proto::command::Signal;

use crate::probe::{
    Answer, GrandchildEvent, ProbeAction, ProbeEvent, ProbeMachine, ProbeSignal, ProcessReport,
    Query, TermiosReport,
};

/// The line discipline's interrupt character (VINTR, ^C) and end-of-file (VEOF, ^D).
const VINTR: u8 = 0x03;
const VEOF: u8 = 0x04;

/// What the probe process was started with, as an `execve` would have given it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SimProcess {
    /// The argument vector, the program name first.
    pub(crate) argv: Vec<Vec<u8>>,
    /// The working directory; `None` when the host could not tell.
    pub(crate) cwd: Option<Vec<u8>>,
    /// The environment, `NAME=VALUE` each.
    pub(crate) environ: Vec<Vec<u8>>,
}

/// The probe on one terminal: its line discipline and the processes on it.
#[derive(Debug)]
pub(crate) struct SimProbe {
    machine: ProbeMachine,
    pid: u32,
    process: SimProcess,
    cols: u16,
    rows: u16,
    termios: TermiosReport,
    stall_until: Option<Instant>,
    /// The machine exited (or died): it does nothing more.
    gone: bool,
}

impl SimProbe {
    /// The probe about to start on a fresh PTY of `cols` × `rows` (canonical, echo on, ICRNL,
    /// ISIG).
    pub(crate) fn new(process: SimProcess, cols: u16, rows: u16) -> Self {
        Self {
            machine: ProbeMachine::new(),
            pid: 0,
            process,
            cols,
            rows,
            termios: TermiosReport {
                canonical: true,
                echo: true,
                isig: true,
                icrnl: true,
            },
            stall_until: None,
            gone: false,
        }
    }

    /// The PTY's settings as the writer's guard reads them.
    fn pty_termios(&self) -> Termios {
        Termios {
            icanon: self.termios.canonical,
            icrnl: self.termios.icrnl,
            igncr: false,
        }
    }

    /// A signal to the process group (probe and grandchild); the PTY holds it while the
    /// group is stopped.
    fn deliver(&mut self, now: Instant, sig: ProbeSignal, io: &mut ChildIo<'_>) {
        let actions = self.machine.handle(ProbeEvent::Signal(sig));
        self.perform(now, actions, io);
        if !self.gone && self.machine.has_grandchild() {
            let actions = self
                .machine
                .handle(ProbeEvent::Grandchild(GrandchildEvent::Signal(sig)));
            self.perform(now, actions, io);
        }
    }

    /// Carries out the machine's actions in order; answers queries at once.
    fn perform(&mut self, now: Instant, actions: Vec<ProbeAction>, io: &mut ChildIo<'_>) {
        let mut work: VecDeque<ProbeAction> = actions.into();
        while let Some(action) = work.pop_front() {
            if self.gone {
                return;
            }
            match action {
                ProbeAction::Write(bytes) => io.write(&bytes),
                ProbeAction::SetRaw(raw) => {
                    // cfmakeraw clears ICANON, ISIG and ICRNL; the original mode has them.
                    self.termios.canonical = !raw;
                    self.termios.isig = !raw;
                    self.termios.icrnl = !raw;
                    io.set_termios(self.pty_termios());
                }
                ProbeAction::SetEcho(on) => self.termios.echo = on,
                ProbeAction::Query(query) => {
                    let answer = self.answer(query);
                    work.extend(self.machine.handle(ProbeEvent::Answer(answer)));
                }
                ProbeAction::Stall(duration) => self.stall_until = duration.map(|d| now + d),
                ProbeAction::Resume => self.stall_until = None,
                ProbeAction::SpawnGrandchild => {
                    work.extend(
                        self.machine
                            .handle(ProbeEvent::Grandchild(GrandchildEvent::Ready)),
                    );
                }
                ProbeAction::Exit(code) => self.die(io, ExitKind::Code(i32::from(code))),
                ProbeAction::DieBySignal(sig) => {
                    let signal = match sig {
                        ProbeSignal::Int => Signal::Interrupt,
                        ProbeSignal::Term => Signal::Terminate,
                        _ => Signal::Kill,
                    };
                    self.die(io, ExitKind::Signal(signal));
                }
            }
        }
    }

    fn answer(&self, query: Query) -> Answer {
        match query {
            Query::Termios => Answer::Termios(self.termios),
            // The child leads its own session and group, which is the tty's foreground group.
            Query::Process => Answer::Process(ProcessReport {
                pid: self.pid,
                pgrp: self.pid,
                sid: self.pid,
                foreground: Some(self.pid),
            }),
            Query::Size => Answer::Size {
                cols: self.cols,
                rows: self.rows,
            },
            Query::Args => Answer::Args(self.process.argv.clone()),
            Query::Cwd => match &self.process.cwd {
                Some(dir) => Answer::Cwd(dir.clone()),
                None => Answer::Failed("no working directory".into()),
            },
            Query::Environ => Answer::Environ(self.process.environ.clone()),
        }
    }

    /// The child is gone: the PTY resolves its jobs (a job part-way into the queue may or may
    /// not have been read, one not started was not written) and drops unread input.
    fn die(&mut self, io: &mut ChildIo<'_>, kind: ExitKind) {
        self.gone = true;
        self.stall_until = None;
        io.exit(kind);
    }
}

impl ChildModel for SimProbe {
    fn on_start(&mut self, now: Instant, pid: u32, io: &mut ChildIo<'_>) {
        self.pid = pid;
        io.set_termios(self.pty_termios());
        let actions = self.machine.start();
        self.perform(now, actions, io);
    }

    /// SIGKILL ends it; every other signal reaches the machine, which has its dispositions.
    fn fatal_signals(&self) -> &'static [Signal] {
        &[Signal::Kill]
    }

    /// One byte arriving at the line discipline.
    fn on_receive(&mut self, _now: Instant, b: u8, io: &mut ChildIo<'_>) -> Received {
        let t = self.termios;
        if t.isig && b == VINTR {
            // ^C under ISIG is SIGINT to the foreground group, not input.
            return Received::Signal(Signal::Interrupt);
        }
        let b = if t.icrnl && b == b'\r' { b'\n' } else { b };
        if t.echo {
            io.write(&[b]);
        }
        Received::Queue(b)
    }

    /// What one read(2) takes: everything in raw mode; in canonical mode one line, up to and
    /// including LF or VEOF, once it is complete; nothing while the machine does not read.
    fn read_len(&self, queued: &VecDeque<u8>) -> usize {
        if self.gone || !self.machine.wants_input() {
            return 0;
        }
        if !self.termios.canonical {
            return queued.len();
        }
        queued
            .iter()
            .position(|&b| b == b'\n' || b == VEOF)
            .map_or(0, |end| end + 1)
    }

    /// VEOF ends a canonical line unseen; alone at the start of one it is end of input.
    fn on_input(&mut self, now: Instant, bytes: &[u8], io: &mut ChildIo<'_>) {
        let mut line = bytes.to_vec();
        let actions = if self.termios.canonical && line.last() == Some(&VEOF) {
            line.pop();
            if line.is_empty() {
                self.machine.handle(ProbeEvent::Eof)
            } else {
                self.machine.feed(&line)
            }
        } else {
            self.machine.feed(&line)
        };
        self.perform(now, actions, io);
    }

    fn on_signal(&mut self, now: Instant, signal: Signal, io: &mut ChildIo<'_>) {
        match signal {
            Signal::Interrupt => self.deliver(now, ProbeSignal::Int, io),
            Signal::Terminate => self.deliver(now, ProbeSignal::Term, io),
            // The PTY applies SIGSTOP and SIGKILL; the machine hears only the continue.
            Signal::Freeze | Signal::Kill => {}
            Signal::Resume => self.deliver(now, ProbeSignal::Cont, io),
        }
    }

    /// The kernel sends SIGWINCH to the group when the size changes.
    fn on_resize(&mut self, now: Instant, cols: u16, rows: u16, io: &mut ChildIo<'_>) {
        if (cols, rows) == (self.cols, self.rows) {
            return;
        }
        self.cols = cols;
        self.rows = rows;
        self.deliver(now, ProbeSignal::Winch, io);
    }

    /// When the stall timer runs out (the PTY holds it while the group is stopped).
    fn poll_timeout(&self) -> Option<Instant> {
        self.stall_until
    }

    /// Fires the stall timer if it is due; spurious calls do nothing.
    fn handle_timeout(&mut self, now: Instant, io: &mut ChildIo<'_>) {
        if self.stall_until.is_some_and(|at| at <= now) {
            self.stall_until = None;
            let actions = self.machine.handle(ProbeEvent::StallElapsed);
            self.perform(now, actions, io);
        }
    }
}

#[cfg(test)]
mod tests {
    use phux_core::sim::{DEFAULT_KERNEL_BUFFER, PtyEvent, SimPty};
    use phux_core::writer::{JobId, WriteOutcome};

    use super::*;

    /// The kernel input queue the probe's PTY has.
    const INPUT_QUEUE_CAP: usize = DEFAULT_KERNEL_BUFFER;

    /// What the engine is told, in order (the PTY's events, as these tests name them).
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Effect {
        Output(Vec<u8>),
        WriteDone(JobId, WriteOutcome),
        Exited(Option<i32>),
    }

    /// The probe on a simulated PTY, polled after every call as the harness would.
    struct Probe {
        pty: SimPty,
        effects: Vec<Effect>,
    }

    impl Probe {
        fn poll(&mut self, now: Instant) {
            for event in self.pty.poll(now) {
                self.effects.push(match event {
                    PtyEvent::Output(bytes) => Effect::Output(bytes),
                    PtyEvent::WriteDone { job, outcome } => Effect::WriteDone(job, outcome),
                    PtyEvent::Exited(kind) => Effect::Exited(kind.exit_status()),
                });
            }
        }

        fn take_effects(&mut self) -> Vec<Effect> {
            std::mem::take(&mut self.effects)
        }

        fn write(&mut self, now: Instant, job: JobId, bytes: Vec<u8>) {
            self.pty.write(job, bytes);
            self.poll(now);
        }

        fn signal(&mut self, now: Instant, signal: Signal) {
            self.pty.signal(signal);
            self.poll(now);
        }

        fn resize(&mut self, now: Instant, cols: u16, rows: u16) {
            self.pty.resize(cols, rows);
            self.poll(now);
        }

        fn poll_timeout(&self) -> Option<Instant> {
            self.pty.poll_timeout()
        }

        fn handle_timeout(&mut self, now: Instant) {
            self.poll(now);
        }
    }

    fn output(effects: &[Effect]) -> String {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Output(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect()
    }

    fn probe() -> Probe {
        let process = SimProcess {
            argv: vec![
                b"phux-conformance".to_vec(),
                b"probe".to_vec(),
                b"x".to_vec(),
            ],
            cwd: Some(b"/".to_vec()),
            environ: vec![b"TERM=vt100".to_vec(), b"A=1".to_vec()],
        };
        let child = SimProbe::new(process, 80, 24);
        let mut p = Probe {
            pty: SimPty::with_child(Box::new(child), 42),
            effects: Vec::new(),
        };
        p.poll(Instant::ZERO);
        assert!(output(&p.take_effects()).contains("PROBE 0 READY"));
        p
    }

    #[test]
    fn canonical_lines_are_read_with_cr_as_lf() {
        let mut p = probe();
        p.write(Instant::ZERO, JobId(1), b"ab\rcd".to_vec());
        let effects = p.take_effects();
        assert!(output(&effects).contains("READ 61620a"), "{effects:?}");
        assert!(effects.contains(&Effect::WriteDone(JobId(1), WriteOutcome::Written)));
        // "cd" waits for its line end.
        assert!(!output(&effects).contains("6364"));
    }

    #[test]
    fn a_stalled_probe_fills_the_queue_and_the_write_waits() {
        let mut p = probe();
        p.write(Instant::ZERO, JobId(1), b":raw\r:stall\r".to_vec());
        p.take_effects();
        p.write(Instant::ZERO, JobId(2), vec![b'x'; INPUT_QUEUE_CAP + 10]);
        let effects = p.take_effects();
        assert!(
            !effects
                .iter()
                .any(|e| matches!(e, Effect::WriteDone(JobId(2), _)))
        );
        p.signal(Instant::ZERO, Signal::Resume);
        let effects = p.take_effects();
        assert!(output(&effects).contains("RESUMED CONT"));
        assert!(effects.contains(&Effect::WriteDone(JobId(2), WriteOutcome::Written)));
    }

    #[test]
    fn queries_answer_from_the_simulated_state() {
        let mut p = probe();
        p.write(Instant::ZERO, JobId(1), b":report pgrp\r".to_vec());
        assert!(output(&p.take_effects()).contains("PGRP 42 42 42 42"));
        p.resize(Instant::ZERO, 100, 30);
        p.write(Instant::ZERO, JobId(2), b":report size\r".to_vec());
        assert!(output(&p.take_effects()).contains("SIZE 100 30"));
        p.write(Instant::ZERO, JobId(3), b":report args\r".to_vec());
        let out = output(&p.take_effects());
        assert!(
            out.contains("ARGS 706875782d636f6e666f726d616e6365 70726f6265 78\r"),
            "{out}"
        );
        p.write(Instant::ZERO, JobId(4), b":report cwd\r".to_vec());
        assert!(output(&p.take_effects()).contains("CWD 2f\r"));
        p.write(Instant::ZERO, JobId(5), b":report environ\r".to_vec());
        let out = output(&p.take_effects());
        assert!(
            out.contains("ENVIRON 413d31 5445524d3d7674313030\r"),
            "{out}"
        );
    }

    #[test]
    fn signals_reach_the_grandchild_and_kill_fails_an_unfinished_job() {
        let mut p = probe();
        p.write(
            Instant::ZERO,
            JobId(1),
            b":handle INT\r:grandchild\r".to_vec(),
        );
        p.take_effects();
        p.signal(Instant::ZERO, Signal::Interrupt);
        let out = output(&p.take_effects());
        assert!(
            out.contains("SIGNAL INT") && out.contains("GRANDCHILD SIGNAL INT"),
            "{out}"
        );
        p.write(Instant::ZERO, JobId(2), b":raw\r:stall\r".to_vec());
        p.write(Instant::ZERO, JobId(3), vec![b'y'; INPUT_QUEUE_CAP + 1]);
        p.take_effects();
        p.signal(Instant::ZERO, Signal::Kill);
        let effects = p.take_effects();
        assert!(effects.contains(&Effect::WriteDone(JobId(3), WriteOutcome::Unknown)));
        assert_eq!(effects.last(), Some(&Effect::Exited(None)));
    }

    #[test]
    fn a_timed_stall_ends_at_its_instant() {
        let mut p = probe();
        p.write(Instant::ZERO, JobId(1), b":stall 200\r".to_vec());
        p.take_effects();
        assert_eq!(p.poll_timeout(), Some(Instant::from_millis(200)));
        p.handle_timeout(Instant::from_millis(199));
        assert!(!output(&p.take_effects()).contains("RESUMED"));
        p.handle_timeout(Instant::from_millis(200));
        assert!(output(&p.take_effects()).contains("RESUMED timer"));
    }
}
