//! A terminal's input writer: a FIFO of write jobs, each written in order with non-blocking
//! writes and resolved with what was actually observed.
//!
//! The engine names each job and decides what its outcome means for the protocol; this
//! module only reports what happened to the bytes. A job is `Written` only once the master
//! accepted its last byte; a failure before the first byte is `NotWritten`, after some bytes
//! `Unknown`. `EAGAIN` and `EINTR` are never failures: the job waits for writability.

use std::collections::VecDeque;
use std::io;

use crate::child::PtyChild;
use crate::pty::{PtyWrite, TermiosFlags};

/// What happened to one job's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    /// The master accepted every byte.
    Written,
    /// No byte reached the master.
    NotWritten,
    /// Some bytes reached the master, then writing failed or the terminal went away.
    Unknown,
    /// The canonical-line guard refused the job before its first byte.
    CanonicalRefused {
        /// The line limit the guard applied.
        limit: u32,
    },
}

/// Where a terminal's writes go: the PTY master, as far as this module needs it.
pub trait PtyInput {
    /// One non-blocking write (see [`PtyChild::write`]).
    fn write(&self, buf: &[u8]) -> io::Result<PtyWrite>;
    /// The line discipline's flags, read now (see [`PtyChild::termios_flags`]).
    fn termios_flags(&self) -> io::Result<TermiosFlags>;
}

impl PtyInput for PtyChild {
    fn write(&self, buf: &[u8]) -> io::Result<PtyWrite> {
        Self::write(self, buf)
    }

    fn termios_flags(&self) -> io::Result<TermiosFlags> {
        Self::termios_flags(self)
    }
}

/// Whether the writer has more to do once the master is writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pump {
    /// Every job is resolved.
    Idle,
    /// The master's input queue is full; call [`JobQueue::pump`] again when it is writable.
    Blocked,
}

#[derive(Debug)]
struct Job<J> {
    id: J,
    bytes: Vec<u8>,
    written: usize,
    canonical_check: bool,
}

/// One terminal's pending write jobs, oldest first.
#[derive(Debug)]
pub struct JobQueue<J> {
    jobs: VecDeque<Job<J>>,
}

impl<J: Copy> JobQueue<J> {
    /// No jobs.
    pub fn new() -> Self {
        Self {
            jobs: VecDeque::new(),
        }
    }

    /// Queues a job after every earlier one.
    pub fn push(&mut self, id: J, bytes: Vec<u8>, canonical_check: bool) {
        self.jobs.push_back(Job {
            id,
            bytes,
            written: 0,
            canonical_check,
        });
    }

    /// Whether no job is pending.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Writes jobs in order until they are all resolved or the master is full, pushing each
    /// resolved job onto `done`.
    ///
    /// `refuse(bytes, flags)` is the canonical-line guard: it runs right before a checked
    /// job's first byte (again after a wait, while no byte is written yet, since the child
    /// may switch modes meanwhile) and returns the limit when the job must not be written.
    pub fn pump(
        &mut self,
        pty: &impl PtyInput,
        refuse: impl Fn(&[u8], TermiosFlags) -> Option<u32>,
        done: &mut Vec<(J, JobOutcome)>,
    ) -> Pump {
        while let Some(job) = self.jobs.front_mut() {
            let Some(outcome) = Self::advance(job, pty, &refuse) else {
                return Pump::Blocked;
            };
            done.push((job.id, outcome));
            self.jobs.pop_front();
        }
        Pump::Idle
    }

    /// Resolves every pending job because the terminal is gone: a job with no byte written
    /// is `NotWritten`, a partly written one `Unknown`.
    pub fn abandon(&mut self, done: &mut Vec<(J, JobOutcome)>) {
        for job in self.jobs.drain(..) {
            let outcome = if job.written == 0 {
                JobOutcome::NotWritten
            } else {
                JobOutcome::Unknown
            };
            done.push((job.id, outcome));
        }
    }

    /// Writes one job as far as it goes. `None`: blocked, the job stays at the front.
    fn advance(
        job: &mut Job<J>,
        pty: &impl PtyInput,
        refuse: &impl Fn(&[u8], TermiosFlags) -> Option<u32>,
    ) -> Option<JobOutcome> {
        if job.written == 0 && job.canonical_check {
            // [INPUT.CANON.1] The mode is read right before the first byte, not when the job
            // was admitted: the child may have switched modes since. [INPUT.CANON.6] When
            // the termios cannot be read the job is written unguarded.
            if let Ok(flags) = pty.termios_flags()
                && let Some(limit) = refuse(&job.bytes, flags)
            {
                // [INPUT.CANON.4] Refused: not one byte is written.
                return Some(JobOutcome::CanonicalRefused { limit });
            }
        }
        // [SERVER.PTY.1] In order; WouldBlock waits for writability (EINTR is retried below
        // us). [SERVER.PTY.2] A failure is NotWritten before the first byte, Unknown after.
        loop {
            let Some(rest) = job.bytes.get(job.written..).filter(|r| !r.is_empty()) else {
                return Some(JobOutcome::Written);
            };
            match pty.write(rest) {
                Ok(PtyWrite::Written(n)) => job.written += n.min(rest.len()),
                Ok(PtyWrite::WouldBlock) => return None,
                Ok(PtyWrite::Gone) | Err(_) => {
                    return Some(if job.written == 0 {
                        JobOutcome::NotWritten
                    } else {
                        JobOutcome::Unknown
                    });
                }
            }
        }
    }
}

impl<J: Copy> Default for JobQueue<J> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// A scripted master: each write takes what the next script entry allows.
    struct Scripted {
        script: RefCell<VecDeque<io::Result<PtyWrite>>>,
        got: RefCell<Vec<u8>>,
        flags: TermiosFlags,
    }

    impl Scripted {
        fn new(script: Vec<io::Result<PtyWrite>>) -> Self {
            Self {
                script: RefCell::new(script.into()),
                got: RefCell::new(Vec::new()),
                flags: TermiosFlags {
                    icanon: true,
                    icrnl: true,
                    igncr: false,
                },
            }
        }
    }

    impl PtyInput for Scripted {
        fn write(&self, buf: &[u8]) -> io::Result<PtyWrite> {
            let next = self
                .script
                .borrow_mut()
                .pop_front()
                .unwrap_or(Ok(PtyWrite::WouldBlock));
            if let Ok(PtyWrite::Written(n)) = next {
                let n = n.min(buf.len());
                self.got.borrow_mut().extend_from_slice(&buf[..n]);
                return Ok(PtyWrite::Written(n));
            }
            next
        }
        fn termios_flags(&self) -> io::Result<TermiosFlags> {
            Ok(self.flags)
        }
    }

    fn never(_: &[u8], _: TermiosFlags) -> Option<u32> {
        None
    }

    #[test]
    fn jobs_complete_in_order_across_short_writes_and_would_block() {
        let pty = Scripted::new(vec![
            Ok(PtyWrite::Written(2)),
            Ok(PtyWrite::WouldBlock),
            Ok(PtyWrite::Written(100)),
            Ok(PtyWrite::Written(100)),
        ]);
        let mut q = JobQueue::new();
        q.push(1, b"abcd".to_vec(), false);
        q.push(2, b"ef".to_vec(), false);
        let mut done = Vec::new();
        assert_eq!(q.pump(&pty, never, &mut done), Pump::Blocked);
        // Two bytes of four: not done, and the second job waits behind it.
        assert!(done.is_empty());
        assert_eq!(q.pump(&pty, never, &mut done), Pump::Idle);
        assert_eq!(done, [(1, JobOutcome::Written), (2, JobOutcome::Written)]);
        assert_eq!(&*pty.got.borrow(), b"abcdef");
    }

    #[test]
    fn failure_before_any_byte_is_not_written_and_after_some_is_unknown() {
        let pty = Scripted::new(vec![
            Err(io::ErrorKind::Other.into()),
            Ok(PtyWrite::Written(1)),
            Ok(PtyWrite::Gone),
            Ok(PtyWrite::Written(3)),
        ]);
        let mut q = JobQueue::new();
        q.push(1, b"xy".to_vec(), false);
        q.push(2, b"zw".to_vec(), false);
        q.push(3, b"end".to_vec(), false);
        let mut done = Vec::new();
        assert_eq!(q.pump(&pty, never, &mut done), Pump::Idle);
        assert_eq!(
            done,
            [
                (1, JobOutcome::NotWritten),
                (2, JobOutcome::Unknown),
                (3, JobOutcome::Written)
            ]
        );
    }

    #[test]
    fn canonical_refusal_writes_nothing_and_the_next_job_proceeds() {
        // [INPUT.CANON.4] A refused job leaves the terminal untouched.
        let pty = Scripted::new(vec![Ok(PtyWrite::Written(100))]);
        let mut q = JobQueue::new();
        q.push(1, vec![b'x'; 5000], true);
        q.push(2, b"ok\r".to_vec(), true);
        let refuse =
            |bytes: &[u8], f: TermiosFlags| (f.icanon && bytes.len() > 4095).then_some(4095);
        let mut done = Vec::new();
        assert_eq!(q.pump(&pty, refuse, &mut done), Pump::Idle);
        assert_eq!(
            done,
            [
                (1, JobOutcome::CanonicalRefused { limit: 4095 }),
                (2, JobOutcome::Written)
            ]
        );
        assert_eq!(&*pty.got.borrow(), b"ok\r");
    }

    #[test]
    fn abandon_is_honest_about_partial_jobs() {
        let pty = Scripted::new(vec![Ok(PtyWrite::Written(1)), Ok(PtyWrite::WouldBlock)]);
        let mut q = JobQueue::new();
        q.push(1, b"ab".to_vec(), false);
        q.push(2, b"cd".to_vec(), false);
        let mut done = Vec::new();
        assert_eq!(q.pump(&pty, never, &mut done), Pump::Blocked);
        q.abandon(&mut done);
        assert_eq!(
            done,
            [(1, JobOutcome::Unknown), (2, JobOutcome::NotWritten)]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn a_real_pty_takes_a_job_and_the_child_echoes_it() {
        use std::os::fd::AsRawFd;
        use std::time::{Duration, Instant};

        let child = crate::child::spawn(&crate::child::SpawnSpec::new("cat")).expect("spawn cat");
        let mut q = JobQueue::new();
        q.push(7u64, b"ping\r".to_vec(), true);
        let mut done = Vec::new();
        assert_eq!(q.pump(&child, never, &mut done), Pump::Idle);
        assert_eq!(done, [(7, JobOutcome::Written)]);

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
            while let Ok(crate::pty::PtyRead::Data(n)) = child.read(&mut buf) {
                out.extend_from_slice(&buf[..n]);
            }
            poll.poll(&mut events, Some(Duration::from_millis(200)))
                .expect("poll");
        }
        let _ = child.kill_and_reap();
    }
}
