//! `PtyWriter`: one terminal's queue of write jobs, and the canonical-line guard.
//!
//! Every byte that goes to a terminal's PTY goes through its writer, one job at a time, in
//! the order the engine handed the jobs off ([SERVER.PTY.1]): acknowledged APPLY_INPUT
//! batches and plain input alike. The driver owns one writer per terminal and gives it a
//! [`PtyPort`], its handle on the real (or simulated) master; the writer decides everything
//! else and reports one [`WriteOutcome`] per job, which the driver passes to the engine as
//! `ServerEvent::WriteDone`.
//!
//! # The canonical-line guard
//!
//! In canonical (cooked) mode the line discipline holds the line being typed until a
//! terminator arrives. Linux's N_TTY buffer takes 4095 bytes of content plus the terminator;
//! past that it discards input without telling anyone, so input that was acknowledged OK
//! would be lost. The guard refuses a job, before its first byte, when the line it would
//! leave pending is longer than that: the part of a line that earlier jobs left unterminated
//! counts too, so two batches that each fit can no longer add up to a cut line. An OK
//! therefore means the program can read every byte of the batch.
//!
//! The writer counts the bytes it wrote since the last terminator, so it reads the termios
//! (a syscall) only for a job that could overflow the line: a keystroke far from the limit
//! costs no `tcgetattr`.
//!
//! What the guard does not model, on purpose: VEOF, VEOL and VEOL2 end a line in the kernel
//! but are counted here as content, and INLCR is ignored. Nor can it know when the program
//! switched modes between two reads of the termios, so bytes written since it last saw raw
//! mode count as pending. Each of these can only make the guard count a line as longer than
//! it is (a refusal the client can split), never shorter.

use std::collections::VecDeque;

use phux_proto::ErrorCode;
use phux_proto::command::CommandResult;

/// The longest unterminated run of content bytes Linux's N_TTY line buffer accepts: its 4096
/// bytes hold 4095 bytes of content plus the terminator.
pub const LINUX_CANONICAL_LIMIT: usize = 4095;

/// Names one PTY write job, echoed back by the driver in `WriteDone`.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
pub struct JobId(pub u64);

/// What happened to a job's bytes: the one outcome type of the writer, the engine and the
/// dedupe ledger (which caches it as an operation's final result).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum WriteOutcome {
    /// Every byte was accepted by the PTY master (COMMAND_RESULT OK).
    Written,
    /// No byte was written (INPUT_NOT_WRITTEN, 207).
    NotWritten,
    /// Some bytes may have been written: the write failed part way, the terminal went away
    /// with the job in progress, or no completion came in time (INPUT_DELIVERY_UNKNOWN, 205).
    Unknown,
    /// The canonical-line guard refused the job; no byte was written
    /// (CANONICAL_LIMIT_EXCEEDED, 206).
    CanonicalRefused {
        /// The line limit the guard applied, in bytes.
        limit: u32,
    },
}

impl WriteOutcome {
    /// The wire error code an APPLY_INPUT with this outcome is answered with, if any.
    pub fn code(self) -> Option<ErrorCode> {
        match self {
            Self::Written => None,
            Self::NotWritten => Some(ErrorCode::INPUT_NOT_WRITTEN),
            Self::Unknown => Some(ErrorCode::INPUT_DELIVERY_UNKNOWN),
            Self::CanonicalRefused { .. } => Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED),
        }
    }

    /// The COMMAND_RESULT an APPLY_INPUT with this outcome is answered with (fresh, or
    /// replayed from the ledger to a retry).
    pub fn to_result(self) -> CommandResult {
        let message = match self {
            Self::Written => return CommandResult::Ok,
            Self::Unknown => "PTY input delivery could not be confirmed".to_owned(),
            Self::CanonicalRefused { limit } => format!(
                "the terminal is in canonical (cooked) mode and this batch's encoded PTY bytes \
                 would leave a line longer than {limit} bytes with no line terminator (counting \
                 what is already pending on the line); split it"
            ),
            Self::NotWritten => {
                "PTY input was not written; the terminal's writer never received it".to_owned()
            }
        };
        let code = self.code().unwrap_or(ErrorCode::INTERNAL_ERROR);
        CommandResult::Error { code, message }
    }
}

/// The line discipline's settings the guard needs, read by the driver (`tcgetattr`) when the
/// writer asks for them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Termios {
    /// `ICANON`: the line discipline assembles lines (and bounds their length).
    pub icanon: bool,
    /// `ICRNL`: CR on input is translated to NL, so it ends a line.
    pub icrnl: bool,
    /// `IGNCR`: CR on input is dropped (it neither ends a line nor takes room in it).
    pub igncr: bool,
}

impl Termios {
    /// A fresh terminal's settings (`stty sane`): canonical, CR mapped to NL.
    pub const COOKED: Self = Self {
        icanon: true,
        icrnl: true,
        igncr: false,
    };

    /// A raw-mode terminal's settings (`cfmakeraw`).
    pub const RAW: Self = Self {
        icanon: false,
        icrnl: false,
        igncr: false,
    };

    fn cr(self) -> Cr {
        // [INPUT.CANON.3] LF always ends a line; IGNCR drops CR before ICRNL could map it.
        if self.igncr {
            Cr::Dropped
        } else if self.icrnl {
            Cr::EndsLine
        } else {
            Cr::Content
        }
    }
}

/// What the line discipline makes of a CR byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cr {
    EndsLine,
    Dropped,
    Content,
}

/// What one non-blocking write to the master did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PortWrite {
    /// The master took this many bytes (a prefix of those offered).
    Accepted(usize),
    /// The master's input queue is full (EAGAIN): call [`PtyWriter::pump`] again once it is
    /// writable.
    Full,
    /// The write failed, or the terminal is hung up: nobody will read these bytes.
    Failed,
}

/// A terminal's PTY master as the writer uses it. The driver implements it over the real
/// master (non-blocking `write`, `tcgetattr`) or a simulated one.
pub trait PtyPort {
    /// The line discipline's settings now; `None` when they cannot be read.
    fn termios(&mut self) -> Option<Termios>;
    /// One non-blocking write of (a prefix of) `bytes`.
    fn write(&mut self, bytes: &[u8]) -> PortWrite;
}

/// Whether the writer has more to do once the master is writable.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pump {
    /// Every job is resolved.
    Idle,
    /// The master is full; pump again when it is writable.
    Blocked,
}

/// What one [`PtyWriter::step`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// The oldest job is resolved.
    Done(JobId, WriteOutcome),
    /// The master is full; step again when it is writable.
    Blocked,
    /// No job is pending.
    Idle,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Job {
    id: JobId,
    #[serde(with = "phux_term::bytes")]
    bytes: Vec<u8>,
    written: usize,
    /// The guard has passed this job since its last wait, so its first byte may go.
    cleared: bool,
}

/// One terminal's pending write jobs, oldest first, and what they left on the current line.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PtyWriter {
    jobs: VecDeque<Job>,
    line: PendingLine,
}

impl PtyWriter {
    /// No jobs, nothing pending on the line.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a job after every earlier one.
    pub fn push(&mut self, id: JobId, bytes: Vec<u8>) {
        self.jobs.push_back(Job {
            id,
            bytes,
            written: 0,
            cleared: false,
        });
    }

    /// How many jobs are unresolved.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether every job is resolved.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Writes jobs in order until every one is resolved or the master is full, pushing each
    /// resolved job onto `done`.
    pub fn pump(&mut self, port: &mut impl PtyPort, done: &mut Vec<(JobId, WriteOutcome)>) -> Pump {
        loop {
            match self.step(port) {
                Step::Done(job, outcome) => done.push((job, outcome)),
                Step::Blocked => return Pump::Blocked,
                Step::Idle => return Pump::Idle,
            }
        }
    }

    /// Writes the oldest job as far as the master takes it: for a driver that must hear of
    /// each completion before the next job's bytes go (a simulated child that reacts to them).
    pub fn step(&mut self, port: &mut impl PtyPort) -> Step {
        let Some(job) = self.jobs.front_mut() else {
            return Step::Idle;
        };
        let Some(outcome) = Self::advance(job, &mut self.line, port) else {
            return Step::Blocked;
        };
        let id = job.id;
        self.jobs.pop_front();
        Step::Done(id, outcome)
    }

    /// Resolves every pending job because the terminal is gone: a job with no byte written
    /// is `NotWritten`, a partly written one `Unknown`.
    pub fn abandon(&mut self, done: &mut Vec<(JobId, WriteOutcome)>) {
        for job in self.jobs.drain(..) {
            done.push((job.id, partial(job.written)));
        }
        self.line = PendingLine::default();
    }

    /// Writes one job as far as it goes. `None`: blocked, the job stays at the front.
    fn advance(
        job: &mut Job,
        line: &mut PendingLine,
        port: &mut impl PtyPort,
    ) -> Option<WriteOutcome> {
        if job.written == 0 && !job.cleared {
            if let Some(limit) = line.refusal(&job.bytes, port) {
                // [INPUT.CANON.4] Refused: not one byte is written.
                return Some(WriteOutcome::CanonicalRefused { limit });
            }
            job.cleared = true;
        }
        // [SERVER.PTY.1] In order; a full master waits for writability. [SERVER.PTY.2] A
        // failure is NotWritten before the first byte, Unknown after.
        loop {
            let Some(rest) = job.bytes.get(job.written..).filter(|r| !r.is_empty()) else {
                return Some(WriteOutcome::Written);
            };
            match port.write(rest) {
                PortWrite::Accepted(n) if n > 0 => {
                    let n = n.min(rest.len());
                    line.feed(&rest[..n]);
                    job.written += n;
                }
                PortWrite::Accepted(_) | PortWrite::Full => {
                    // [INPUT.CANON.1] A job that has not started is checked again after the
                    // wait: the program may switch modes meanwhile.
                    if job.written == 0 {
                        job.cleared = false;
                    }
                    return None;
                }
                PortWrite::Failed => return Some(partial(job.written)),
            }
        }
    }
}

fn partial(written: usize) -> WriteOutcome {
    if written == 0 {
        WriteOutcome::NotWritten
    } else {
        WriteOutcome::Unknown
    }
}

/// The unterminated line the writer's bytes left in the line discipline, counted under each
/// reading of CR, since which applies is known only when the termios is read.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct PendingLine {
    /// Bytes since the last LF (CR as content: the longest reading).
    since_lf: usize,
    /// CR bytes among them (dropped under IGNCR).
    crs: usize,
    /// Bytes since the last LF or CR (CR ends a line under ICRNL).
    since_cr: usize,
}

impl PendingLine {
    /// The limit, when `bytes` must not be written now.
    fn refusal(&mut self, bytes: &[u8], port: &mut impl PtyPort) -> Option<u32> {
        // Under any termios the line is at most `since_lf` long and a CR ends nothing, so a
        // job that fits even then cannot overflow: no need to read the termios.
        if longest_line(self.since_lf, bytes, Cr::Content) <= LINUX_CANONICAL_LIMIT {
            return None;
        }
        // [INPUT.CANON.1] The mode is read right before the first byte, not when the job was
        // admitted. [INPUT.CANON.6] When it cannot be read the job is written unguarded.
        let termios = port.termios()?;
        if !termios.icanon {
            // No line buffer: what was pending is readable now (switching to canonical mode
            // later starts a new line).
            *self = Self::default();
            return None;
        }
        let cr = termios.cr();
        // [INPUT.CANON.2] [INPUT.CANON.7] A line of more than 4095 unterminated bytes, counting what earlier
        // jobs left pending, is refused and nothing is written; 4095 fits.
        (longest_line(self.pending(cr), bytes, cr) > LINUX_CANONICAL_LIMIT)
            .then(|| u32::try_from(LINUX_CANONICAL_LIMIT).unwrap_or(u32::MAX))
    }

    fn pending(self, cr: Cr) -> usize {
        match cr {
            Cr::Content => self.since_lf,
            Cr::Dropped => self.since_lf - self.crs,
            Cr::EndsLine => self.since_cr,
        }
    }

    /// Counts bytes the master accepted.
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'\n' => *self = Self::default(),
                b'\r' => {
                    self.since_lf = self.since_lf.saturating_add(1);
                    self.crs = self.crs.saturating_add(1);
                    self.since_cr = 0;
                }
                _ => {
                    self.since_lf = self.since_lf.saturating_add(1);
                    self.since_cr = self.since_cr.saturating_add(1);
                }
            }
        }
    }
}

/// The longest line `bytes` would leave or pass through, when `pending` bytes of an
/// unterminated line precede them.
fn longest_line(pending: usize, bytes: &[u8], cr: Cr) -> usize {
    let mut run = pending;
    let mut longest = run;
    for &b in bytes {
        match (b, cr) {
            (b'\n', _) | (b'\r', Cr::EndsLine) => run = 0,
            (b'\r', Cr::Dropped) => {}
            _ => {
                run = run.saturating_add(1);
                longest = longest.max(run);
            }
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A scripted master: each write takes what the next script entry allows; the line
    /// discipline is modelled as N_TTY's in canonical mode (content past 4095 is discarded).
    struct Scripted {
        script: VecDeque<PortWrite>,
        got: Vec<u8>,
        termios: Option<Termios>,
        termios_reads: usize,
    }

    impl Scripted {
        fn new(script: Vec<PortWrite>) -> Self {
            Self {
                script: script.into(),
                got: Vec::new(),
                termios: Some(Termios::COOKED),
                termios_reads: 0,
            }
        }

        fn free() -> Self {
            Self::new(vec![PortWrite::Accepted(usize::MAX); 1000])
        }
    }

    impl PtyPort for Scripted {
        fn termios(&mut self) -> Option<Termios> {
            self.termios_reads += 1;
            self.termios
        }

        fn write(&mut self, bytes: &[u8]) -> PortWrite {
            let next = self.script.pop_front().unwrap_or(PortWrite::Full);
            if let PortWrite::Accepted(n) = next {
                let n = n.min(bytes.len());
                self.got.extend_from_slice(&bytes[..n]);
                return PortWrite::Accepted(n);
            }
            next
        }
    }

    fn x(n: usize) -> Vec<u8> {
        vec![b'x'; n]
    }

    fn run(w: &mut PtyWriter, port: &mut Scripted) -> (Pump, Vec<(JobId, WriteOutcome)>) {
        let mut done = Vec::new();
        let pump = w.pump(port, &mut done);
        (pump, done)
    }

    const REFUSED: WriteOutcome = WriteOutcome::CanonicalRefused { limit: 4095 };

    #[test]
    fn jobs_complete_in_order_across_short_writes_and_a_full_master() {
        let mut port = Scripted::new(vec![
            PortWrite::Accepted(2),
            PortWrite::Full,
            PortWrite::Accepted(100),
            PortWrite::Accepted(100),
        ]);
        let mut w = PtyWriter::new();
        w.push(JobId(1), b"abcd".to_vec());
        w.push(JobId(2), b"ef".to_vec());
        // Two bytes of four: not done, and the second job waits behind it.
        assert_eq!(run(&mut w, &mut port), (Pump::Blocked, vec![]));
        assert_eq!(
            run(&mut w, &mut port),
            (
                Pump::Idle,
                vec![
                    (JobId(1), WriteOutcome::Written),
                    (JobId(2), WriteOutcome::Written)
                ]
            )
        );
        assert_eq!(port.got, b"abcdef");
    }

    #[test]
    fn failure_before_any_byte_is_not_written_and_after_some_is_unknown() {
        let mut port = Scripted::new(vec![
            PortWrite::Failed,
            PortWrite::Accepted(1),
            PortWrite::Failed,
            PortWrite::Accepted(3),
        ]);
        let mut w = PtyWriter::new();
        w.push(JobId(1), b"xy".to_vec());
        w.push(JobId(2), b"zw".to_vec());
        w.push(JobId(3), b"end".to_vec());
        let (_, done) = run(&mut w, &mut port);
        assert_eq!(
            done,
            [
                (JobId(1), WriteOutcome::NotWritten),
                (JobId(2), WriteOutcome::Unknown),
                (JobId(3), WriteOutcome::Written)
            ]
        );
    }

    #[test]
    fn abandon_is_honest_about_partial_jobs() {
        let mut port = Scripted::new(vec![PortWrite::Accepted(1), PortWrite::Full]);
        let mut w = PtyWriter::new();
        w.push(JobId(1), b"ab".to_vec());
        w.push(JobId(2), b"cd".to_vec());
        assert_eq!(run(&mut w, &mut port).0, Pump::Blocked);
        let mut done = Vec::new();
        w.abandon(&mut done);
        assert_eq!(
            done,
            [
                (JobId(1), WriteOutcome::Unknown),
                (JobId(2), WriteOutcome::NotWritten)
            ]
        );
        assert!(w.is_empty());
    }

    // [INPUT.CANON.2] The boundary: 4095 content bytes pass, 4096 do not; a refused job
    // writes nothing and the next job proceeds ([INPUT.CANON.4]).
    #[test]
    fn a_line_over_the_limit_is_refused_unwritten() {
        let mut port = Scripted::free();
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(4096));
        w.push(JobId(2), b"ok\r".to_vec());
        w.push(JobId(3), x(4095));
        let (_, done) = run(&mut w, &mut port);
        assert_eq!(
            done,
            [
                (JobId(1), REFUSED),
                (JobId(2), WriteOutcome::Written),
                (JobId(3), WriteOutcome::Written)
            ]
        );
        let mut want = b"ok\r".to_vec();
        want.extend(x(4095));
        assert_eq!(port.got, want);
    }

    // [INPUT.CANON.7] Two batches that fit alone but not together: the second is refused,
    // since the program would otherwise read only 4095 of their bytes.
    #[test]
    fn the_line_left_pending_by_earlier_jobs_counts() {
        let mut port = Scripted::free();
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(3000));
        w.push(JobId(2), x(1096));
        w.push(JobId(3), x(1095));
        w.push(JobId(4), b"\n".to_vec());
        w.push(JobId(5), x(4095));
        let (_, done) = run(&mut w, &mut port);
        assert_eq!(
            done,
            [
                (JobId(1), WriteOutcome::Written),
                (JobId(2), REFUSED),
                (JobId(3), WriteOutcome::Written),
                (JobId(4), WriteOutcome::Written),
                (JobId(5), WriteOutcome::Written)
            ]
        );
        assert_eq!(port.got.len(), 3000 + 1095 + 1 + 4095);
    }

    // [INPUT.CANON.3] CR ends a line only under ICRNL without IGNCR; under IGNCR it takes
    // no room either.
    #[test]
    fn cr_is_read_as_the_termios_says() {
        let job = || {
            let mut bytes = x(3000);
            bytes.push(b'\r');
            bytes.extend(x(1095));
            bytes
        };
        for (termios, want) in [
            (Termios::COOKED, WriteOutcome::Written),
            (
                Termios {
                    icrnl: false,
                    ..Termios::COOKED
                },
                REFUSED,
            ),
            (
                Termios {
                    igncr: true,
                    ..Termios::COOKED
                },
                WriteOutcome::Written,
            ),
            (Termios::RAW, WriteOutcome::Written),
        ] {
            let mut port = Scripted::free();
            port.termios = Some(termios);
            let mut w = PtyWriter::new();
            w.push(JobId(1), job());
            assert_eq!(run(&mut w, &mut port).1, [(JobId(1), want)], "{termios:?}");
        }
        // Under IGNCR the CRs of an earlier job take no room on the line either.
        let mut port = Scripted::free();
        port.termios = Some(Termios {
            igncr: true,
            ..Termios::COOKED
        });
        let mut w = PtyWriter::new();
        let mut crs = x(3000);
        crs.extend([b'\r'; 2000]);
        w.push(JobId(1), crs);
        w.push(JobId(2), x(1095));
        w.push(JobId(3), x(1));
        let (_, done) = run(&mut w, &mut port);
        assert_eq!(done[1], (JobId(2), WriteOutcome::Written));
        assert_eq!(done[2], (JobId(3), REFUSED));
    }

    // [INPUT.CANON.1] Raw mode has no line: nothing is refused, and what was pending when
    // the writer saw raw mode is readable, so it no longer counts.
    #[test]
    fn raw_mode_never_refuses_and_clears_the_pending_line() {
        let mut port = Scripted::free();
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(3000));
        run(&mut w, &mut port);
        port.termios = Some(Termios::RAW);
        w.push(JobId(2), x(100_000));
        w.push(JobId(3), b"\r".to_vec());
        let (_, done) = run(&mut w, &mut port);
        assert!(done.iter().all(|(_, o)| *o == WriteOutcome::Written));
        port.termios = Some(Termios::COOKED);
        w.push(JobId(4), x(4095));
        assert_eq!(
            run(&mut w, &mut port).1,
            [(JobId(4), WriteOutcome::Written)]
        );
    }

    // Bytes written after the writer last saw raw mode may have landed after the program
    // switched back to canonical mode: they count, and the guard errs on the side of a
    // refusal the client can split rather than a line the kernel cuts.
    #[test]
    fn bytes_written_since_the_last_look_count_whatever_the_mode_was() {
        let mut port = Scripted::free();
        port.termios = Some(Termios::RAW);
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(5000));
        run(&mut w, &mut port);
        port.termios = Some(Termios::COOKED);
        w.push(JobId(2), x(10));
        assert_eq!(run(&mut w, &mut port).1, [(JobId(2), REFUSED)]);
    }

    // Keystrokes far from the limit cost no tcgetattr; the termios is read only near it,
    // and again after a wait before the first byte ([INPUT.CANON.1]).
    #[test]
    fn the_termios_is_read_only_when_the_line_could_overflow() {
        let mut port = Scripted::free();
        let mut w = PtyWriter::new();
        for i in 0..100 {
            w.push(JobId(i), b"k".to_vec());
        }
        w.push(JobId(100), x(4000));
        run(&mut w, &mut port);
        assert_eq!(
            port.termios_reads, 1,
            "only the job that reaches the limit reads it"
        );

        let mut port = Scripted::new(vec![PortWrite::Full, PortWrite::Accepted(usize::MAX)]);
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(5000));
        port.termios = Some(Termios::RAW);
        assert_eq!(run(&mut w, &mut port).0, Pump::Blocked);
        // The program went back to canonical mode while the master was full.
        port.termios = Some(Termios::COOKED);
        assert_eq!(run(&mut w, &mut port).1, [(JobId(1), REFUSED)]);
        assert!(port.got.is_empty());
    }

    // [INPUT.CANON.6] An unreadable termios lets the job through.
    #[test]
    fn an_unreadable_termios_writes_unguarded() {
        let mut port = Scripted::free();
        port.termios = None;
        let mut w = PtyWriter::new();
        w.push(JobId(1), x(5000));
        assert_eq!(
            run(&mut w, &mut port).1,
            [(JobId(1), WriteOutcome::Written)]
        );
    }

    #[test]
    fn every_outcome_maps_to_its_wire_code() {
        assert_eq!(WriteOutcome::Written.to_result(), CommandResult::Ok);
        for (outcome, code) in [
            (WriteOutcome::NotWritten, ErrorCode::INPUT_NOT_WRITTEN),
            (WriteOutcome::Unknown, ErrorCode::INPUT_DELIVERY_UNKNOWN),
            (REFUSED, ErrorCode::CANONICAL_LIMIT_EXCEEDED),
        ] {
            assert!(
                matches!(outcome.to_result(), CommandResult::Error { code: c, .. } if c == code)
            );
        }
    }

    /// N_TTY in canonical mode, as far as the guard cares: what a program reading lines gets
    /// of the bytes written, with content past 4095 on one line discarded.
    fn n_tty(written: &[u8], termios: Termios) -> usize {
        let mut read = 0;
        let mut line = 0;
        for &b in written {
            match (b, termios.cr()) {
                (b'\n', _) | (b'\r', Cr::EndsLine) => {
                    read += line + 1;
                    line = 0;
                }
                (b'\r', Cr::Dropped) => {}
                _ if line < LINUX_CANONICAL_LIMIT => line += 1,
                _ => {}
            }
        }
        read + line
    }

    fn bytes_of(b: u8) -> u8 {
        match b % 8 {
            0 => b'\n',
            1 => b'\r',
            _ => b'x',
        }
    }

    proptest! {
        // Whatever the jobs and the termios, every byte of every job answered Written is
        // kept by the line discipline (nothing written is discarded), and a refused job
        // writes nothing.
        #[test]
        fn written_jobs_are_never_cut_by_the_line_discipline(
            jobs in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..40), 0usize..6000),
                1..12,
            ),
            icrnl in any::<bool>(),
            igncr in any::<bool>(),
        ) {
            let termios = Termios { icanon: true, icrnl, igncr };
            let mut port = Scripted::new(vec![PortWrite::Accepted(usize::MAX); 1000]);
            port.termios = Some(termios);
            let mut w = PtyWriter::new();
            let mut sent = Vec::new();
            for (i, (head, run)) in jobs.iter().enumerate() {
                let mut bytes: Vec<u8> = head.iter().map(|b| bytes_of(*b)).collect();
                bytes.extend(x(*run));
                sent.push(bytes.clone());
                w.push(JobId(i as u64), bytes);
            }
            let (_, done) = run(&mut w, &mut port);
            let mut written = Vec::new();
            for (JobId(i), outcome) in done {
                if outcome == WriteOutcome::Written {
                    written.extend_from_slice(&sent[i as usize]);
                }
            }
            prop_assert_eq!(&port.got, &written);
            let kept = n_tty(&written, termios);
            let dropped_crs = if igncr { written.split(|b| *b == b'\r').count() - 1 } else { 0 };
            prop_assert_eq!(kept + dropped_crs, written.len());
        }

        // The fast path (no termios read) agrees with a full check.
        #[test]
        fn longest_line_matches_split(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a')], 0..300),
            pending in 0usize..50,
        ) {
            let mut with_pending = x(pending);
            with_pending.extend_from_slice(&bytes);
            for (cr, split_on_cr) in [(Cr::EndsLine, true), (Cr::Content, false)] {
                let want = with_pending
                    .split(|b| *b == b'\n' || (split_on_cr && *b == b'\r'))
                    .map(<[u8]>::len)
                    .max()
                    .unwrap_or(0);
                prop_assert_eq!(longest_line(pending, &bytes, cr), want);
            }
        }
    }
}
