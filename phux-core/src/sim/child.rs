//! Child models: what the program on a simulated PTY does with the bytes it reads.
//!
//! A [`SimPty`](super::SimPty) owns everything that is the kernel's and the driver's — the
//! writer and its canonical-line guard, the bounded input buffer, stalls, the slow reader,
//! lost completions, the process group's stop, continue and fatal signals — once. The child
//! is a [`ChildModel`]: it starts, hears what it read (after its line discipline), the signals
//! that reached it, a resize and its own timer, and answers through a [`ChildIo`] (output,
//! terminal settings, exit). The models here are the engine tests' children; the conformance
//! runner plugs its probe and its `cat` in the same way.

use std::collections::VecDeque;
use std::fmt;

use phux_proto::command::Signal;

use crate::time::Instant;
use crate::writer::Termios;

/// The simulated program on a PTY.
///
/// Each call gets the current virtual time and a [`ChildIo`]; a model never reads a clock.
/// Only the first method is required: a model that ignores signals, resizes and time is a
/// plain filter from what it reads to what it writes.
pub trait ChildModel: fmt::Debug {
    /// The child read `bytes` from the terminal (the PTY has already appended them to its
    /// read log).
    fn on_input(&mut self, now: Instant, bytes: &[u8], io: &mut ChildIo<'_>);

    /// The child starts, as process `pid`, before it reads anything (a program's banner, its
    /// terminal settings).
    fn on_start(&mut self, _now: Instant, _pid: u32, _io: &mut ChildIo<'_>) {}

    /// The signals that end the child under its dispositions (the PTY applies them: at once,
    /// or at RESUME for a stopped group; KILL always ends it). The others reach
    /// [`ChildModel::on_signal`].
    fn fatal_signals(&self) -> &'static [Signal] {
        &[Signal::Terminate, Signal::Kill]
    }

    /// The line discipline: one byte the master accepted, before the child can read it (the
    /// kernel's echo, ICRNL, ISIG's signal characters). By default the byte is queued as is.
    fn on_receive(&mut self, _now: Instant, byte: u8, _io: &mut ChildIo<'_>) -> Received {
        Received::Queue(byte)
    }

    /// How many of the queued bytes the child's next read takes (0: it does not read now, or
    /// a canonical line is not complete). By default, everything.
    fn read_len(&self, queued: &VecDeque<u8>) -> usize {
        queued.len()
    }

    /// A signal reached the child's process group and did not end it (the PTY applies stop,
    /// continue and the fatal signals itself).
    fn on_signal(&mut self, _now: Instant, _signal: Signal, _io: &mut ChildIo<'_>) {}

    /// The terminal was resized (the kernel's SIGWINCH).
    fn on_resize(&mut self, _now: Instant, _cols: u16, _rows: u16, _io: &mut ChildIo<'_>) {}

    /// When the child next acts on its own, if it will.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// Its timer is due; spurious calls must do nothing.
    fn handle_timeout(&mut self, _now: Instant, _io: &mut ChildIo<'_>) {}
}

/// What the line discipline makes of one byte written to the master.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Received {
    /// Queue this byte (maybe translated) for the child to read.
    Queue(u8),
    /// Send this signal to the process group instead (ISIG).
    Signal(Signal),
    /// Drop the byte (IGNCR).
    Drop,
}

/// What a [`ChildModel`] may do to its PTY while it handles a call.
#[derive(Debug)]
pub struct ChildIo<'a> {
    pub(super) termios: &'a mut Termios,
    pub(super) output: &'a mut Vec<u8>,
    pub(super) exit: &'a mut Option<ExitKind>,
}

impl ChildIo<'_> {
    /// The child writes `bytes` to the terminal (the engine hears them as PTY output at the
    /// end of the PTY's poll).
    pub fn write(&mut self, bytes: &[u8]) {
        if self.exit.is_none() {
            self.output.extend_from_slice(bytes);
        }
    }

    /// The terminal's current settings.
    pub fn termios(&self) -> Termios {
        *self.termios
    }

    /// The child changes the terminal's settings (`tcsetattr`); the writer's guard reads them
    /// before the next job.
    pub fn set_termios(&mut self, termios: Termios) {
        *self.termios = termios;
    }

    /// The child ends (`_exit(code)`, or killed by a signal it does not catch).
    pub fn exit(&mut self, kind: ExitKind) {
        self.exit.get_or_insert(kind);
    }
}

/// The engine tests' children, by name (see [`ChildMode::model`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ChildMode {
    /// Writes back every byte it reads, at once, as output ([`Echo`]).
    Echo,
    /// Keeps what it reads (see [`SimPty::read_log`](super::SimPty::read_log)) and writes
    /// nothing ([`Record`]).
    Record,
    /// Like `cat` on a terminal ([`Cat`]).
    Cat,
}

impl ChildMode {
    /// A fresh model of this child.
    pub fn model(self) -> Box<dyn ChildModel> {
        match self {
            Self::Echo => Box::new(Echo),
            Self::Record => Box::new(Record),
            Self::Cat => Box::new(Cat::default()),
        }
    }
}

/// Writes back every byte it reads, at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo;

impl ChildModel for Echo {
    fn on_input(&mut self, _now: Instant, bytes: &[u8], io: &mut ChildIo<'_>) {
        io.write(bytes);
    }
}

/// Reads and writes nothing back (the PTY's read log keeps what it read).
#[derive(Clone, Copy, Debug, Default)]
pub struct Record;

impl ChildModel for Record {
    fn on_input(&mut self, _now: Instant, _bytes: &[u8], _io: &mut ChildIo<'_>) {}
}

/// Like `cat` on a terminal: in canonical mode echoes each complete line when its terminator
/// arrives (LF, or CR under ICRNL); in raw mode echoes at once.
#[derive(Clone, Debug, Default)]
pub struct Cat {
    line: Vec<u8>,
}

impl ChildModel for Cat {
    fn on_input(&mut self, _now: Instant, bytes: &[u8], io: &mut ChildIo<'_>) {
        let termios = io.termios();
        if !termios.icanon {
            io.write(bytes);
            return;
        }
        for &b in bytes {
            self.line.push(b);
            if b == b'\n' || (termios.icrnl && b == b'\r') {
                io.write(&self.line);
                self.line.clear();
            }
        }
    }
}

/// How the child ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ExitKind {
    /// `_exit(code)`.
    Code(i32),
    /// Killed by a signal.
    Signal(Signal),
}

impl ExitKind {
    /// The status TERMINAL_CLOSED carries: the code, or none for a signal.
    pub fn exit_status(self) -> Option<i32> {
        match self {
            Self::Code(code) => Some(code),
            Self::Signal(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sim::{PtyEvent, SimPty};
    use crate::writer::{JobId, WriteOutcome};

    /// Upper-cases what it reads, says `tick` 10 ms after its last input, exits on `q`.
    #[derive(Debug, Default)]
    struct Shouter {
        tick_at: Option<Instant>,
        winch: Vec<(u16, u16)>,
    }

    impl ChildModel for Shouter {
        fn on_input(&mut self, now: Instant, bytes: &[u8], io: &mut ChildIo<'_>) {
            if bytes.contains(&b'q') {
                io.exit(ExitKind::Code(3));
                return;
            }
            io.write(&bytes.to_ascii_uppercase());
            self.tick_at = Some(now + Duration::from_millis(10));
        }

        fn on_resize(&mut self, _now: Instant, cols: u16, rows: u16, _io: &mut ChildIo<'_>) {
            self.winch.push((cols, rows));
        }

        fn poll_timeout(&self) -> Option<Instant> {
            self.tick_at
        }

        fn handle_timeout(&mut self, now: Instant, io: &mut ChildIo<'_>) {
            if self.tick_at.is_some_and(|at| at <= now) {
                self.tick_at = None;
                io.write(b"tick");
            }
        }
    }

    #[test]
    fn a_custom_model_reads_writes_ticks_and_exits() {
        let mut p = SimPty::with_child(Box::new(Shouter::default()), 7);
        p.write(JobId(1), b"ab".to_vec());
        let ev = p.poll(Instant::ZERO);
        assert!(ev.contains(&PtyEvent::Output(b"AB".to_vec())), "{ev:?}");
        assert_eq!(p.poll_timeout(), Some(Instant::from_millis(10)));
        let ev = p.poll(Instant::from_millis(10));
        assert_eq!(ev, vec![PtyEvent::Output(b"tick".to_vec())]);
        p.resize(100, 30);
        p.poll(Instant::from_millis(11));
        p.write(JobId(2), b"q".to_vec());
        p.write(JobId(3), b"never".to_vec());
        let ev = p.poll(Instant::from_millis(12));
        assert!(ev.contains(&PtyEvent::WriteDone {
            job: JobId(2),
            outcome: WriteOutcome::Written
        }));
        assert_eq!(ev.last(), Some(&PtyEvent::Exited(ExitKind::Code(3))));
        assert!(p.is_gone());
    }

    #[test]
    fn the_child_may_change_the_termios_the_guard_reads() {
        #[derive(Debug)]
        struct GoesCooked;
        impl ChildModel for GoesCooked {
            fn on_input(&mut self, _now: Instant, _bytes: &[u8], io: &mut ChildIo<'_>) {
                io.set_termios(Termios::COOKED);
            }
        }
        let mut p = SimPty::with_child(Box::new(GoesCooked), 7);
        assert!(!p.is_canonical());
        p.write(JobId(1), b"x".to_vec());
        p.poll(Instant::ZERO);
        assert!(p.is_canonical());
        p.write(JobId(2), vec![b'y'; 5000]);
        let ev = p.poll(Instant::ZERO);
        assert!(ev.contains(&PtyEvent::WriteDone {
            job: JobId(2),
            outcome: WriteOutcome::CanonicalRefused { limit: 4095 }
        }));
    }
}
