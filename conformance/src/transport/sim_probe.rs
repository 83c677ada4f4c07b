//! A simulated PTY with the probe child behind it, for the in-process transport.
//!
//! This is a host for [`ProbeMachine`] that follows the contract in the probe's module doc,
//! with the kernel's part simulated: a bounded input queue (a stalled probe stops reading, so a
//! large write cannot complete), the line discipline's canonical mode (lines, ICRNL, VEOF,
//! ISIG's ^C, echo), termios, the window size, the process group and its signals (SIGSTOP and
//! SIGKILL applied here), and the grandchild (it shares the probe's group, so it sees every
//! signal the group gets).
//!
//! It does no I/O and reads no clock: the owner calls it with the virtual time and hands the
//! [`Effect`]s it returns to the server engine, in order.

use std::collections::VecDeque;

use phux_core::Instant;
use phux_core::writer::{JobId, PortWrite, PtyPort, PtyWriter, Step, Termios, WriteOutcome};
use phux_proto::command::Signal;

use crate::probe::{
    Answer, GrandchildEvent, ProbeAction, ProbeEvent, ProbeMachine, ProbeSignal, ProcessReport,
    Query, TermiosReport,
};

/// The simulated kernel input queue: Linux's n_tty read buffer is 4 KiB, so a writer blocks
/// once a stalled reader leaves that much unread.
pub(crate) const INPUT_QUEUE_CAP: usize = 4096;

/// The line discipline's interrupt character (VINTR, ^C) and end-of-file (VEOF, ^D).
const VINTR: u8 = 0x03;
const VEOF: u8 = 0x04;

/// What the engine must be told, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
    /// The probe (or the line discipline's echo) wrote these bytes.
    Output(Vec<u8>),
    /// A write job finished.
    WriteDone(JobId, WriteOutcome),
    /// The child is gone: `Some(code)` exited, `None` killed by a signal.
    Exited(Option<i32>),
}

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

/// One probe terminal: the PTY's slave side and the processes on it.
#[derive(Debug)]
pub(crate) struct SimProbe {
    machine: ProbeMachine,
    pid: u32,
    process: SimProcess,
    cols: u16,
    rows: u16,
    termios: TermiosReport,
    /// Bytes the line discipline holds for the probe to read.
    input: VecDeque<u8>,
    /// Write jobs not yet wholly in `input`, oldest first, and the canonical-line guard.
    writer: PtyWriter,
    alive: bool,
    /// SIGSTOP: the group is stopped until SIGCONT.
    stopped: bool,
    /// Signals that arrived while stopped; delivered on SIGCONT, as the kernel keeps them pending.
    held: Vec<ProbeSignal>,
    stall_until: Option<Instant>,
    effects: Vec<Effect>,
}

impl SimProbe {
    /// Starts the probe on a fresh PTY of `cols` × `rows` (canonical, echo on, ICRNL, ISIG).
    pub(crate) fn spawn(now: Instant, pid: u32, process: SimProcess, cols: u16, rows: u16) -> Self {
        let mut probe = Self {
            machine: ProbeMachine::new(),
            pid,
            process,
            cols,
            rows,
            termios: TermiosReport {
                canonical: true,
                echo: true,
                isig: true,
                icrnl: true,
            },
            input: VecDeque::new(),
            writer: PtyWriter::new(),
            alive: true,
            stopped: false,
            held: Vec::new(),
            stall_until: None,
            effects: Vec::new(),
        };
        let actions = probe.machine.start();
        probe.perform(now, actions);
        probe
    }

    /// What happened since the last call, in order.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// A `Write` action: the job's bytes go into the input queue as room allows.
    pub(crate) fn write(&mut self, now: Instant, job: JobId, bytes: Vec<u8>) {
        if !self.alive {
            self.effects
                .push(Effect::WriteDone(job, WriteOutcome::NotWritten));
            return;
        }
        self.writer.push(job, bytes);
        self.pump(now);
    }

    /// A `Signal` action: the signal goes to the probe's process group.
    pub(crate) fn signal(&mut self, now: Instant, signal: Signal) {
        if !self.alive {
            return;
        }
        match signal {
            Signal::Interrupt => self.deliver(now, ProbeSignal::Int),
            Signal::Terminate => self.deliver(now, ProbeSignal::Term),
            // SIGKILL and SIGSTOP never reach the machine: the host applies them.
            Signal::Kill => self.die(None),
            Signal::Freeze => self.stopped = true,
            Signal::Resume => {
                self.stopped = false;
                for held in std::mem::take(&mut self.held) {
                    self.deliver(now, held);
                }
                self.deliver(now, ProbeSignal::Cont);
            }
        }
        self.pump(now);
    }

    /// A `Resize` action: the kernel sends SIGWINCH to the group when the size changes.
    pub(crate) fn resize(&mut self, now: Instant, cols: u16, rows: u16) {
        if (cols, rows) == (self.cols, self.rows) {
            return;
        }
        self.cols = cols;
        self.rows = rows;
        if self.alive {
            self.deliver(now, ProbeSignal::Winch);
            self.pump(now);
        }
    }

    /// A `Kill` action (KILL_TERMINAL): the master closes and the group gets SIGKILL.
    pub(crate) fn kill(&mut self) {
        if self.alive {
            self.die(None);
        }
    }

    /// When the stall timer runs out (a stopped process's timer waits for SIGCONT here).
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        if self.alive && !self.stopped {
            self.stall_until
        } else {
            None
        }
    }

    /// Fires the stall timer if it is due; spurious calls do nothing.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|at| at <= now) {
            self.stall_until = None;
            let actions = self.machine.handle(ProbeEvent::StallElapsed);
            self.perform(now, actions);
            self.pump(now);
        }
    }

    /// Moves job bytes into the input queue and input into the probe until neither can move.
    fn pump(&mut self, now: Instant) {
        loop {
            let mut progress = self.fill_input(now);
            if self.alive
                && !self.stopped
                && self.machine.wants_input()
                && let Some(read) = self.next_read()
            {
                let actions = match read {
                    Some(bytes) => self.machine.feed(&bytes),
                    None => self.machine.handle(ProbeEvent::Eof),
                };
                self.perform(now, actions);
                progress = true;
            }
            if !progress || !self.alive {
                return;
            }
        }
    }

    /// Copies queued job bytes into the input queue while it has room. Whether anything moved.
    fn fill_input(&mut self, now: Instant) -> bool {
        // The writer is the real server's; the probe's line discipline is its port.
        let mut writer = std::mem::take(&mut self.writer);
        let mut progress = false;
        while self.alive {
            let mut port = ProbePort {
                probe: self,
                now,
                accepted: 0,
            };
            let step = writer.step(&mut port);
            progress |= port.accepted > 0;
            match step {
                Step::Done(id, outcome) => {
                    self.effects.push(Effect::WriteDone(id, outcome));
                    progress = true;
                }
                Step::Blocked | Step::Idle => break,
            }
        }
        if !self.alive {
            // The child died under the write: what it never took was not written, a job it
            // took part of is in doubt.
            let mut done = Vec::new();
            writer.abandon(&mut done);
            for (id, outcome) in done {
                self.effects.push(Effect::WriteDone(id, outcome));
            }
        }
        self.writer = writer;
        progress
    }

    /// One byte arriving at the line discipline.
    fn receive(&mut self, now: Instant, b: u8) {
        let t = self.termios;
        if t.isig && b == VINTR {
            // ^C under ISIG is SIGINT to the foreground group, not input.
            self.deliver(now, ProbeSignal::Int);
            return;
        }
        let b = if t.icrnl && b == b'\r' { b'\n' } else { b };
        if t.echo {
            self.effects.push(Effect::Output(vec![b]));
        }
        self.input.push_back(b);
    }

    /// What one read(2) would return: `Some(bytes)`, `None` for end of input (VEOF at the start
    /// of a canonical line), or nothing to read yet (outer `None`).
    #[allow(clippy::option_option)]
    fn next_read(&mut self) -> Option<Option<Vec<u8>>> {
        if self.input.is_empty() {
            return None;
        }
        if !self.termios.canonical {
            return Some(Some(self.input.drain(..).collect()));
        }
        // Canonical: one line per read, up to and including LF; VEOF ends a line unseen.
        let end = self.input.iter().position(|&b| b == b'\n' || b == VEOF)?;
        let mut line: Vec<u8> = self.input.drain(..=end).collect();
        if line.last() == Some(&VEOF) {
            line.pop();
            if line.is_empty() {
                return Some(None);
            }
        }
        Some(Some(line))
    }

    /// A signal to the process group (probe and grandchild).
    fn deliver(&mut self, now: Instant, sig: ProbeSignal) {
        if !self.alive {
            return;
        }
        if self.stopped && sig != ProbeSignal::Cont {
            self.held.push(sig);
            return;
        }
        self.deliver_now(now, sig);
    }

    fn deliver_now(&mut self, now: Instant, sig: ProbeSignal) {
        let actions = self.machine.handle(ProbeEvent::Signal(sig));
        self.perform(now, actions);
        if self.alive && self.machine.has_grandchild() {
            let actions = self
                .machine
                .handle(ProbeEvent::Grandchild(GrandchildEvent::Signal(sig)));
            self.perform(now, actions);
        }
    }

    /// Carries out the machine's actions in order; answers queries at once.
    fn perform(&mut self, now: Instant, actions: Vec<ProbeAction>) {
        let mut work: VecDeque<ProbeAction> = actions.into();
        while let Some(action) = work.pop_front() {
            match action {
                ProbeAction::Write(bytes) => self.effects.push(Effect::Output(bytes)),
                ProbeAction::SetRaw(raw) => {
                    // cfmakeraw clears ICANON, ISIG and ICRNL; the original mode has them.
                    self.termios.canonical = !raw;
                    self.termios.isig = !raw;
                    self.termios.icrnl = !raw;
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
                ProbeAction::Exit(code) => {
                    self.die(Some(i32::from(code)));
                    return;
                }
                ProbeAction::DieBySignal(_) => {
                    self.die(None);
                    return;
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

    /// The child is gone: a job part-way into the queue may or may not have been read, one not
    /// started was not written, and unread input is lost.
    fn die(&mut self, status: Option<i32>) {
        if !self.alive {
            return;
        }
        self.alive = false;
        self.stall_until = None;
        self.input.clear();
        let mut done = Vec::new();
        self.writer.abandon(&mut done);
        for (id, outcome) in done {
            self.effects.push(Effect::WriteDone(id, outcome));
        }
        self.effects.push(Effect::Exited(status));
    }
}

/// The probe's PTY as its writer sees it: the line discipline takes bytes while the input
/// queue has room.
struct ProbePort<'a> {
    probe: &'a mut SimProbe,
    now: Instant,
    accepted: usize,
}

impl PtyPort for ProbePort<'_> {
    fn termios(&mut self) -> Option<Termios> {
        let t = self.probe.termios;
        Some(Termios {
            icanon: t.canonical,
            icrnl: t.icrnl,
            igncr: false,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> PortWrite {
        if !self.probe.alive {
            return PortWrite::Failed;
        }
        let room = INPUT_QUEUE_CAP.saturating_sub(self.probe.input.len());
        let n = room.min(bytes.len());
        if n == 0 {
            return PortWrite::Full;
        }
        for &b in &bytes[..n] {
            self.probe.receive(self.now, b);
        }
        self.accepted += n;
        PortWrite::Accepted(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(effects: &[Effect]) -> String {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Output(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            })
            .collect()
    }

    fn probe() -> SimProbe {
        let process = SimProcess {
            argv: vec![
                b"phux-conformance".to_vec(),
                b"probe".to_vec(),
                b"x".to_vec(),
            ],
            cwd: Some(b"/".to_vec()),
            environ: vec![b"TERM=vt100".to_vec(), b"A=1".to_vec()],
        };
        let mut p = SimProbe::spawn(Instant::ZERO, 42, process, 80, 24);
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
