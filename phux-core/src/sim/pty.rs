//! `SimPty`: a simulated PTY master, kernel buffer and child process, fully deterministic.
//!
//! The writer side is the real driver's: a [`PtyWriter`] writes jobs in order and runs the
//! canonical-line guard against this PTY's termios; bytes move into a bounded kernel buffer
//! and a job is complete once its last byte is in it.
//! The child side reads from that buffer (unless stalled or frozen), at an optional rate, and
//! hands what it read to its [`ChildModel`], which decides what the program does with it.

use std::collections::VecDeque;
use std::time::Duration;

use phux_proto::command::Signal;

use super::child::{ChildIo, ChildMode, ChildModel, ExitKind, Received};
use crate::time::Instant;
use crate::writer::{JobId, PortWrite, PtyPort, PtyWriter, Termios, WriteOutcome};

/// The kernel's PTY input buffer, in bytes: writes beyond it wait for the child to read.
pub const DEFAULT_KERNEL_BUFFER: usize = 4096;

/// Something the simulated PTY reports to the engine.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PtyEvent {
    /// A job finished (becomes `ServerEvent::WriteDone`).
    WriteDone {
        /// The job.
        job: JobId,
        /// What happened to it.
        outcome: WriteOutcome,
    },
    /// The child wrote output (becomes `ServerEvent::PtyOutput`).
    Output(Vec<u8>),
    /// The child is gone and its output drained (becomes `ServerEvent::ChildExited`).
    Exited(ExitKind),
}

/// A simulated PTY and its child.
#[derive(Debug)]
pub struct SimPty {
    child: Box<dyn ChildModel>,
    termios: Termios,
    stalled: bool,
    frozen: bool,
    /// Bytes per millisecond the child reads; `None` = as fast as bytes arrive.
    read_rate: Option<u64>,
    /// When the slow reader last read.
    last_read: Option<Instant>,
    kernel: Kernel,
    writer: PtyWriter,
    /// Jobs whose completion was handed over and not reported yet, oldest first.
    pending: VecDeque<JobId>,
    lose_next_completions: usize,
    /// Signals that reached the child and did not end it, and resizes, for its model in
    /// order; held while the group is stopped, as the kernel keeps them pending.
    child_events: VecDeque<ChildEvent>,
    /// The child's model has been started ([`ChildModel::on_start`]).
    started: bool,
    read_log: Vec<u8>,
    output: Vec<u8>,
    signals: Vec<Signal>,
    fatal_signals: Vec<Signal>,
    pending_fatal: Option<Signal>,
    exit: Option<ExitKind>,
    exit_reported: bool,
    pid: u32,
    /// Jobs whose completion this PTY will never report.
    lost: Vec<JobId>,
    /// Jobs are not written: they wait here until the driver completes them
    /// ([`SimPty::script_writes`]).
    scripted: Option<VecDeque<JobId>>,
}

impl SimPty {
    /// A running child in `mode`, raw (non-canonical) mode with ICRNL set, reading freely.
    pub fn new(mode: ChildMode, pid: u32) -> Self {
        Self::with_child(mode.model(), pid)
    }

    /// A running `child`, raw (non-canonical) mode with ICRNL set, reading freely.
    pub fn with_child(child: Box<dyn ChildModel>, pid: u32) -> Self {
        Self {
            fatal_signals: child.fatal_signals().to_vec(),
            child,
            termios: Termios {
                icrnl: true,
                ..Termios::RAW
            },
            stalled: false,
            frozen: false,
            read_rate: None,
            last_read: None,
            kernel: Kernel {
                capacity: DEFAULT_KERNEL_BUFFER,
                bytes: VecDeque::new(),
                written_log: Vec::new(),
            },
            writer: PtyWriter::new(),
            pending: VecDeque::new(),
            lose_next_completions: 0,
            child_events: VecDeque::new(),
            started: false,
            read_log: Vec::new(),
            output: Vec::new(),
            signals: Vec::new(),
            pending_fatal: None,
            exit: None,
            exit_reported: false,
            pid,
            lost: Vec::new(),
            scripted: None,
        }
    }

    /// The child's process id (what the harness reported as `Spawned{pid}`).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The child's model.
    pub fn child(&self) -> &dyn ChildModel {
        self.child.as_ref()
    }

    /// Changes what the child does with its input from now on.
    pub fn set_mode(&mut self, mode: ChildMode) {
        self.set_child(mode.model());
    }

    /// Replaces the child's model from now on.
    pub fn set_child(&mut self, child: Box<dyn ChildModel>) {
        self.child = child;
    }

    /// Sets ICANON (what the canonical-line guard reads before each job's first byte).
    pub fn set_canonical(&mut self, canonical: bool) {
        self.termios.icanon = canonical;
    }

    /// Whether ICANON is set.
    pub fn is_canonical(&self) -> bool {
        self.termios.icanon
    }

    /// Sets ICRNL (CR counts as a line terminator for the guard and for `Cat`).
    pub fn set_icrnl(&mut self, icrnl: bool) {
        self.termios.icrnl = icrnl;
    }

    /// The child stops reading: writes fill the kernel buffer, then wait.
    pub fn stall(&mut self) {
        self.stalled = true;
    }

    /// The child reads again.
    pub fn unstall(&mut self) {
        self.stalled = false;
    }

    /// Whether the child is stalled (by [`SimPty::stall`]).
    pub fn is_stalled(&self) -> bool {
        self.stalled
    }

    /// The child reads at most `bytes_per_ms` bytes per millisecond (`0` = as fast as
    /// bytes arrive).
    pub fn slow_reader(&mut self, bytes_per_ms: u64) {
        self.read_rate = (bytes_per_ms > 0).then_some(bytes_per_ms);
        self.last_read = None;
    }

    /// Sets the kernel input buffer size (default [`DEFAULT_KERNEL_BUFFER`]).
    pub fn set_kernel_buffer(&mut self, bytes: usize) {
        self.kernel.capacity = bytes.max(1);
    }

    /// The next `n` jobs that complete will never be reported (lost completions). Their
    /// bytes are still written.
    pub fn lose_next_completions(&mut self, n: usize) {
        self.lose_next_completions = n;
    }

    /// Which signals end the child (default TERMINATE and KILL; KILL always does).
    pub fn set_fatal_signals(&mut self, signals: &[Signal]) {
        self.fatal_signals = signals.to_vec();
    }

    /// Queues output the child writes at the next step.
    pub fn script(&mut self, output: &[u8]) {
        if self.exit.is_none() {
            self.output.extend_from_slice(output);
        }
    }

    /// The child calls `_exit(code)`.
    pub fn exit(&mut self, code: i32) {
        self.exit.get_or_insert(ExitKind::Code(code));
    }

    /// The child is killed by `signal`.
    pub fn kill(&mut self, signal: Signal) {
        self.exit.get_or_insert(ExitKind::Signal(signal));
    }

    /// Every byte the child ever read, in order.
    pub fn read_log(&self) -> &[u8] {
        &self.read_log
    }

    /// Every byte the PTY master accepted (written into the kernel buffer), in order: the
    /// child has read it or would read it next.
    pub fn written_log(&self) -> &[u8] {
        &self.kernel.written_log
    }

    /// How often `needle` occurs in [`SimPty::read_log`] (non-overlapping).
    pub fn read_count(&self, needle: &[u8]) -> usize {
        count(&self.read_log, needle)
    }

    /// Every signal the child's process group received, in order.
    pub fn signals(&self) -> &[Signal] {
        &self.signals
    }

    /// Whether the process group is stopped (FREEZE without RESUME).
    pub fn is_frozen(&self) -> bool {
        self.frozen
    }

    /// How the child ended, once it has.
    pub fn exit_kind(&self) -> Option<ExitKind> {
        self.exit
    }

    /// Whether the child is gone and the exit reported.
    pub fn is_gone(&self) -> bool {
        self.exit_reported
    }

    /// Bytes in the kernel buffer that the child has not read.
    pub fn kernel_buffered(&self) -> usize {
        self.kernel.bytes.len()
    }

    /// Jobs handed over and not yet complete, oldest first.
    pub fn pending_jobs(&self) -> Vec<JobId> {
        self.pending.iter().copied().collect()
    }

    /// Jobs whose completion was (or will be) lost, in order.
    pub fn lost_completions(&self) -> &[JobId] {
        &self.lost
    }

    /// A `Write` action: queue the job behind every earlier one.
    pub fn write(&mut self, job: JobId, bytes: Vec<u8>) {
        self.pending.push_back(job);
        if let Some(scripted) = &mut self.scripted {
            scripted.push_back(job);
            return;
        }
        self.writer.push(job, bytes);
        if self.lose_next_completions > 0 {
            self.lose_next_completions -= 1;
            self.lost.push(job);
        }
    }

    /// From now on (`true`), jobs are not written: each waits until
    /// [`SimPty::complete_next`] hands it back for the driver to report with an outcome of its
    /// choosing (a fuzzer's, a benchmark's). Jobs still waiting when the child ends are not
    /// written.
    pub fn script_writes(&mut self, scripted: bool) {
        if scripted {
            self.scripted.get_or_insert_with(VecDeque::new);
        } else {
            self.scripted = None;
        }
    }

    /// The oldest job waiting for a scripted completion, removed (see
    /// [`SimPty::script_writes`]).
    pub fn complete_next(&mut self) -> Option<JobId> {
        let job = self.scripted.as_mut()?.pop_front()?;
        self.pending.retain(|j| *j != job);
        Some(job)
    }

    /// Forgets every job waiting for a scripted completion: none will be reported.
    pub fn forget_scripted(&mut self) {
        if let Some(scripted) = &mut self.scripted {
            for job in scripted.drain(..) {
                self.pending.retain(|j| *j != job);
            }
        }
    }

    /// A `Signal` action, with process-group semantics: a stopped group reads nothing; a
    /// fatal signal to a stopped group (other than KILL) takes effect when it is resumed.
    pub fn signal(&mut self, signal: Signal) {
        self.signals.push(signal);
        match signal {
            Signal::Freeze => self.frozen = true,
            Signal::Resume => {
                self.frozen = false;
                if let Some(pending) = self.pending_fatal.take() {
                    self.kill(pending);
                }
            }
            Signal::Kill => self.kill(Signal::Kill),
            other if self.fatal_signals.contains(&other) => {
                if self.frozen {
                    self.pending_fatal = Some(other);
                } else {
                    self.kill(other);
                }
                return;
            }
            _ => {}
        }
        if signal != Signal::Kill {
            self.child_events.push_back(ChildEvent::Signal(signal));
        }
    }

    /// A `Resize` action: the child's model hears it (the kernel's SIGWINCH) at the next poll.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.child_events.push_back(ChildEvent::Resize(cols, rows));
    }

    /// When this PTY next has something to do on its own (a slow reader's next read, or the
    /// child's own timer).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.exit_reported {
            return None;
        }
        let child = if self.frozen || self.exit.is_some() {
            None
        } else {
            self.child.poll_timeout()
        };
        self.reader_timeout().into_iter().chain(child).min()
    }

    fn reader_timeout(&self) -> Option<Instant> {
        if self.stalled || self.frozen || self.kernel.bytes.is_empty() {
            return None;
        }
        let last = self.last_read?;
        self.read_rate?;
        Some(last + Duration::from_millis(1))
    }

    /// Runs `f` on the child's model with this PTY's I/O.
    fn call_child(&mut self, f: impl FnOnce(&mut dyn ChildModel, &mut ChildIo<'_>)) {
        let mut io = ChildIo {
            termios: &mut self.termios,
            output: &mut self.output,
            exit: &mut self.exit,
        };
        f(self.child.as_mut(), &mut io);
    }

    /// Starts the child's model, then tells it about signals, resizes and its due timer,
    /// unless the group is stopped. Whether it told it anything.
    fn notify_child(&mut self, now: Instant) -> bool {
        let mut told = false;
        if !self.started {
            self.started = true;
            let pid = self.pid;
            self.call_child(|child, io| child.on_start(now, pid, io));
            told = true;
        }
        if self.frozen {
            return told;
        }
        while self.exit.is_none()
            && let Some(event) = self.child_events.pop_front()
        {
            told = true;
            match event {
                ChildEvent::Signal(signal) => {
                    self.call_child(|child, io| child.on_signal(now, signal, io));
                }
                ChildEvent::Resize(cols, rows) => {
                    self.call_child(|child, io| child.on_resize(now, cols, rows, io));
                }
            }
        }
        if self.exit.is_none() && self.child.poll_timeout().is_some_and(|at| at <= now) {
            told = true;
            self.call_child(|child, io| child.handle_timeout(now, io));
        }
        told
    }

    /// Runs the PTY up to `now`; returns what the engine must hear, in order.
    pub fn poll(&mut self, now: Instant) -> Vec<PtyEvent> {
        let mut events = Vec::new();
        if self.exit_reported {
            return events;
        }
        // Writer and reader alternate until neither can make progress, so a job larger than
        // the kernel buffer flows through a freely reading child within one poll; the child
        // hears its signals and timer in between.
        loop {
            let told = self.exit.is_none() && self.notify_child(now);
            if self.exit.is_some() {
                return self.finish(events);
            }
            let wrote = self.pump_writer(now, &mut events);
            let read = self.pump_reader(now);
            if self.exit.is_some() {
                // The child ended on what it read.
                return self.finish(events);
            }
            let due = !self.frozen && !self.child_events.is_empty();
            if !told && !wrote && !read && !due {
                break;
            }
        }
        if !self.output.is_empty() {
            events.push(PtyEvent::Output(std::mem::take(&mut self.output)));
        }
        events
    }

    fn finish(&mut self, mut events: Vec<PtyEvent>) -> Vec<PtyEvent> {
        // The PTY is gone: jobs that wrote nothing were not written; a job cut part way is
        // in doubt. Completions the sim was told to lose stay lost.
        let mut done = Vec::new();
        self.writer.abandon(&mut done);
        if let Some(scripted) = &mut self.scripted {
            done.extend(
                scripted
                    .drain(..)
                    .map(|job| (job, WriteOutcome::NotWritten)),
            );
        }
        self.report(&mut events, done);
        if !self.output.is_empty() {
            events.push(PtyEvent::Output(std::mem::take(&mut self.output)));
        }
        self.kernel.bytes.clear();
        self.exit_reported = true;
        if let Some(kind) = self.exit {
            events.push(PtyEvent::Exited(kind));
        }
        events
    }

    /// Moves job bytes through the line discipline into the kernel buffer; `true` if anything
    /// changed.
    fn pump_writer(&mut self, now: Instant, events: &mut Vec<PtyEvent>) -> bool {
        let before = (self.kernel.written_log.len(), self.writer.len());
        let mut done = Vec::new();
        let mut signals = Vec::new();
        let mut port = Master {
            kernel: &mut self.kernel,
            child: self.child.as_mut(),
            io: ChildIo {
                termios: &mut self.termios,
                output: &mut self.output,
                exit: &mut self.exit,
            },
            signals: &mut signals,
            now,
        };
        self.writer.pump(&mut port, &mut done);
        self.report(events, done);
        // A signal character (ISIG's ^C) went to the process group.
        for signal in signals {
            self.signal(signal);
        }
        before != (self.kernel.written_log.len(), self.writer.len())
    }

    /// Reports completions, except those the sim was told to lose.
    fn report(&mut self, events: &mut Vec<PtyEvent>, done: Vec<(JobId, WriteOutcome)>) {
        for (job, outcome) in done {
            self.pending.retain(|j| *j != job);
            if !self.lost.contains(&job) {
                events.push(PtyEvent::WriteDone { job, outcome });
            }
        }
    }

    /// The child reads what it may; `true` if it read anything.
    fn pump_reader(&mut self, now: Instant) -> bool {
        if self.stalled || self.frozen || self.kernel.bytes.is_empty() {
            return false;
        }
        let allowance = match self.read_rate {
            None => usize::MAX,
            Some(rate) => {
                let last = *self.last_read.get_or_insert(now);
                let ms = now.saturating_duration_since(last).as_millis();
                if ms == 0 {
                    return false;
                }
                self.last_read = Some(now);
                usize::try_from(u128::from(rate).saturating_mul(ms)).unwrap_or(usize::MAX)
            }
        };
        let n = allowance
            .min(self.child.read_len(&self.kernel.bytes))
            .min(self.kernel.bytes.len());
        if n == 0 {
            return false;
        }
        let bytes: Vec<u8> = self.kernel.bytes.drain(..n).collect();
        self.read_log.extend_from_slice(&bytes);
        self.call_child(|child, io| child.on_input(now, &bytes, io));
        n > 0
    }
}

/// What the child's model hears besides its input, in order.
#[derive(Clone, Copy, Debug)]
enum ChildEvent {
    Signal(Signal),
    Resize(u16, u16),
}

/// The kernel's input buffer: what the line discipline queued for the child to read.
#[derive(Debug)]
struct Kernel {
    capacity: usize,
    bytes: VecDeque<u8>,
    /// Every byte the master accepted, in order.
    written_log: Vec<u8>,
}

/// The master as the writer sees it: each accepted byte goes through the child's line
/// discipline ([`ChildModel::on_receive`]) into the kernel buffer while it has room.
struct Master<'a> {
    kernel: &'a mut Kernel,
    child: &'a mut dyn ChildModel,
    io: ChildIo<'a>,
    signals: &'a mut Vec<Signal>,
    now: Instant,
}

impl PtyPort for Master<'_> {
    fn termios(&mut self) -> Option<Termios> {
        Some(self.io.termios())
    }

    fn write(&mut self, bytes: &[u8]) -> PortWrite {
        let take = self
            .kernel
            .capacity
            .saturating_sub(self.kernel.bytes.len())
            .min(bytes.len());
        if take == 0 {
            return PortWrite::Full;
        }
        for &b in &bytes[..take] {
            match self.child.on_receive(self.now, b, &mut self.io) {
                Received::Queue(b) => self.kernel.bytes.push_back(b),
                Received::Signal(signal) => self.signals.push(signal),
                Received::Drop => {}
            }
        }
        self.kernel.written_log.extend_from_slice(&bytes[..take]);
        PortWrite::Accepted(take)
    }
}

/// Non-overlapping occurrences of `needle` in `hay`.
pub fn count(hay: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() || hay.len() < needle.len() {
        return 0;
    }
    let mut n = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if &hay[i..i + needle.len()] == needle {
            n += 1;
            i += needle.len();
        } else {
            i += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(events: &[PtyEvent]) -> Vec<(JobId, WriteOutcome)> {
        events
            .iter()
            .filter_map(|e| match e {
                PtyEvent::WriteDone { job, outcome } => Some((*job, *outcome)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn echo_writes_back_and_completes_in_order() {
        let mut p = SimPty::new(ChildMode::Echo, 1);
        p.write(JobId(1), b"ab".to_vec());
        p.write(JobId(2), b"cd".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert_eq!(
            done(&ev),
            vec![
                (JobId(1), WriteOutcome::Written),
                (JobId(2), WriteOutcome::Written)
            ]
        );
        assert!(ev.contains(&PtyEvent::Output(b"abcd".to_vec())));
        assert_eq!(p.read_log(), b"abcd");
    }

    #[test]
    fn stalled_child_delays_completion_past_the_kernel_buffer_never_loses_it() {
        let mut p = SimPty::new(ChildMode::Record, 1);
        p.set_kernel_buffer(8);
        p.stall();
        p.write(JobId(1), b"0123".to_vec());
        p.write(JobId(2), b"456789ab".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert_eq!(done(&ev), vec![(JobId(1), WriteOutcome::Written)]);
        assert_eq!(p.kernel_buffered(), 8);
        assert!(done(&p.poll(Instant::from_millis(10))).is_empty());
        p.unstall();
        let ev = p.poll(Instant::from_millis(20));
        assert_eq!(done(&ev), vec![(JobId(2), WriteOutcome::Written)]);
        assert_eq!(p.read_log(), b"0123456789ab");
    }

    #[test]
    fn canonical_guard_runs_before_the_first_byte() {
        let mut p = SimPty::new(ChildMode::Record, 1);
        p.set_canonical(true);
        p.write(JobId(1), vec![b'x'; 5000]);
        p.write(JobId(2), vec![b'x'; 4095]);
        let ev = p.poll(Instant::ZERO);
        assert_eq!(
            done(&ev),
            vec![
                (JobId(1), WriteOutcome::CanonicalRefused { limit: 4095 }),
                (JobId(2), WriteOutcome::Written)
            ]
        );
        assert_eq!(p.read_log().len(), 4095);
    }

    #[test]
    fn slow_reader_reads_at_its_rate() {
        let mut p = SimPty::new(ChildMode::Record, 1);
        p.slow_reader(2);
        p.write(JobId(1), b"abcdef".to_vec());
        p.poll(Instant::ZERO);
        assert_eq!(p.read_log(), b"");
        assert_eq!(p.poll_timeout(), Some(Instant::from_millis(1)));
        p.poll(Instant::from_millis(2));
        assert_eq!(p.read_log(), b"abcd");
    }

    #[test]
    fn frozen_group_reads_nothing_and_exit_resolves_pending_jobs() {
        let mut p = SimPty::new(ChildMode::Record, 1);
        p.set_kernel_buffer(2);
        p.signal(Signal::Freeze);
        p.write(JobId(1), b"abcd".to_vec());
        p.write(JobId(2), b"ef".to_vec());
        assert!(done(&p.poll(Instant::ZERO)).is_empty());
        assert_eq!(p.read_log(), b"");
        p.signal(Signal::Terminate);
        assert_eq!(p.exit_kind(), None, "SIGTERM waits for SIGCONT");
        p.signal(Signal::Resume);
        let ev = p.poll(Instant::ZERO);
        assert_eq!(
            done(&ev),
            vec![
                (JobId(1), WriteOutcome::Unknown),
                (JobId(2), WriteOutcome::NotWritten)
            ]
        );
        assert_eq!(
            ev.last(),
            Some(&PtyEvent::Exited(ExitKind::Signal(Signal::Terminate)))
        );
    }

    #[test]
    fn cat_echoes_whole_lines_in_canonical_mode() {
        let mut p = SimPty::new(ChildMode::Cat, 1);
        p.set_canonical(true);
        p.write(JobId(1), b"ab".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert!(!ev.iter().any(|e| matches!(e, PtyEvent::Output(_))));
        p.write(JobId(2), b"c\rd".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert!(ev.contains(&PtyEvent::Output(b"abc\r".to_vec())));
    }

    #[test]
    fn lost_completion_still_writes() {
        let mut p = SimPty::new(ChildMode::Record, 1);
        p.lose_next_completions(1);
        p.write(JobId(1), b"ab".to_vec());
        p.write(JobId(2), b"cd".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert_eq!(done(&ev), vec![(JobId(2), WriteOutcome::Written)]);
        assert_eq!(p.read_log(), b"abcd");
    }
}
