//! The flush policy: when a connection's queued bytes are handed to the kernel.
//!
//! Performing the engine's `Send` only queues bytes on the connection. Writing each frame at
//! once would cost a syscall per frame and a wake-up per frame for every viewer of a program
//! streaming output; writing late would delay an echo someone is waiting for. The policy tells
//! the two apart by the PTY read that led to the bytes:
//!
//! - The master is read until it is empty, and consecutive reads are gathered into one chunk
//!   while another read fits ([`FlushPolicy::read_on`]). A first read shorter than
//!   [`FlushPolicy::INTERACTIVE_READ`] (an echo, a prompt) is its own chunk, and so is a chunk
//!   whose last read was that short (the end of a burst): either is written as soon as its
//!   events have been fed. After a first read shorter than [`FlushPolicy::ECHO_READ`] (a
//!   keystroke's echo) the master is not read again until an event says there is more.
//! - A read of at least [`FlushPolicy::BULK_READ`] is bulk output, more is on its way: its
//!   frames are [`Output::Bulk`] and may wait. A connection whose queue holds nothing else is
//!   written once it holds [`FlushPolicy::HOLD_BYTES`], or [`FlushPolicy::HOLD`] after the
//!   first of them was held, whichever comes first.
//! - Between two bulk reads, the connection holding the most output is written once it holds
//!   [`FlushPolicy::RIPE_BYTES`]: one write between two reads (see [`FlushPolicy::ripest`]).
//! - Anything else (a reply, an event, an echo, the short read that ends a burst) is
//!   [`Output::Urgent`] and is written at the next flush, with whatever bulk output is queued
//!   ahead of it.
//!
//! The policy also picks how a queue is written: a queue of one chunk (a keystroke's echo, a
//! reply) takes a plain `write`, cheaper in the kernel than a vectored one
//! ([`FlushPolicy::plain_write`]).

use std::time::Duration;

use phux_core::server::ServerEvent;
use phux_core::time::Instant;

/// What the bytes an event leads to are, for the flush policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Bulk output: frames of a long PTY read, with more on its way. May wait for more.
    Bulk,
    /// Anything else: written at the next flush.
    Urgent,
}

/// What to do with one connection's queue at a flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Write it now.
    Write,
    /// Leave it for more output to join it, until this deadline (the connection's
    /// `Timer::HeldOutput`).
    Hold {
        /// When it must be written at the latest.
        until: Instant,
    },
}

/// One connection's queue as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Queued {
    /// Bytes queued.
    pub(crate) len: usize,
    /// Something [`Output::Urgent`] was queued since the last write.
    pub(crate) urgent: bool,
    /// The connection waits for writability: the kernel had no room at the last write.
    pub(crate) awaiting_writable: bool,
    /// The deadline its held output already has, if any.
    pub(crate) held_until: Option<Instant>,
}

/// The rules above, as a type of its own: the driver asks, the policy answers, and nothing
/// else in the driver decides when a connection is written.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FlushPolicy;

impl FlushPolicy {
    /// A PTY read shorter than this is an echo or a prompt: flushed at once.
    pub(crate) const INTERACTIVE_READ: usize = 512;
    /// A PTY read at least this long is bulk output. The master hands out at most
    /// [`Self::MASTER_READ`] per read.
    pub(crate) const BULK_READ: usize = 2048;
    /// The most a PTY master hands out per read (its line discipline's buffer): bulk reads
    /// are gathered into one chunk while another of these fits the engine's limit.
    pub(crate) const MASTER_READ: usize = 4096;
    /// Bulk output waits at most this long for more to join it before it is written...
    pub(crate) const HOLD: Duration = Duration::from_millis(1);
    /// ...or until this much is queued for the connection: fewer, larger writes, so fewer
    /// syscalls for the server and fewer wake-ups for each viewer of a streaming program.
    pub(crate) const HOLD_BYTES: usize = 64 * 1024;
    /// After each bulk read, the connection holding the most output is written once it holds
    /// this much: one write between two reads. The PTY holds only a few KiB ahead of our
    /// reads, so writing every viewer at the end of a wake-up stalled the program for all of
    /// those writes, and the reads that then found the master empty waited idle inside the
    /// kernel for its refill; a write between reads overlaps that refill. With N viewers each
    /// gets a write every N reads (8 viewers of a stream: 32 KiB each, one write per 4 KiB
    /// read).
    pub(crate) const RIPE_BYTES: usize = 32 * 1024;

    /// What the frames of a PTY read of `n` bytes are.
    pub(crate) fn pty_read(n: usize) -> Output {
        if n >= Self::BULK_READ {
            Output::Bulk
        } else {
            Output::Urgent
        }
    }

    /// What the frames `event` leads to are (and those of every event that follows from
    /// performing its actions): bulk only for a long PTY read.
    pub(crate) fn output_of(event: &ServerEvent<'_>) -> Output {
        match event {
            ServerEvent::PtyOutput { bytes, .. } => Self::pty_read(bytes.len()),
            _ => Output::Urgent,
        }
    }

    /// Whether the frames of a chunk whose last PTY read was `n` bytes are written as soon as
    /// they are queued.
    pub(crate) fn flush_after_read(n: usize) -> bool {
        n < Self::INTERACTIVE_READ
    }

    /// A first read shorter than this is a keystroke's echo (a few bytes, an escape sequence):
    /// it is sent, and the master is not read again until an event says there is more. After a
    /// longer short read it is: more may be behind it.
    pub(crate) const ECHO_READ: usize = 64;

    /// Whether a short first read of `n` bytes is taken for an echo ([`Self::ECHO_READ`]).
    pub(crate) fn is_echo(n: usize) -> bool {
        n < Self::ECHO_READ
    }

    /// [OUTPUT.GATHER.1] Whether a chunk of `gathered` bytes, of at most `limit`, is read on
    /// into: while another read of the master fits. Whatever the last read's size: a bulk read
    /// says more is on its way, and a short one after the first may be a piece of a burst (to
    /// a reader that keeps up, the kernel hands a program's large write over a few hundred
    /// bytes at a time). The read that finds the master empty ends the chunk.
    pub(crate) fn read_on(gathered: usize, limit: usize) -> bool {
        gathered + Self::MASTER_READ <= limit
    }

    /// At a flush: write the connection's queue now, or hold it.
    pub(crate) fn decide(queued: Queued, now: Instant) -> Decision {
        // A connection waiting for writability is written when the kernel has room anyway.
        if queued.urgent || queued.awaiting_writable || queued.len >= Self::HOLD_BYTES {
            return Decision::Write;
        }
        let until = queued.held_until.unwrap_or(now + Self::HOLD);
        if now < until {
            Decision::Hold { until }
        } else {
            Decision::Write
        }
    }

    /// Between bulk reads: of `candidates` (position, bytes queued), the position of the one
    /// to write now, if any: the one holding the most (the last of equals), once it holds
    /// [`Self::RIPE_BYTES`]. The caller leaves out connections waiting for writability.
    pub(crate) fn ripest(candidates: impl IntoIterator<Item = (usize, usize)>) -> Option<usize> {
        let (i, len) = candidates.into_iter().max_by_key(|&(_, len)| len)?;
        (len >= Self::RIPE_BYTES).then_some(i)
    }

    /// The single-write fast path: whether a queue of `chunks` chunks is written with a plain
    /// `write` rather than a vectored one.
    pub(crate) fn plain_write(chunks: usize) -> bool {
        chunks == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_core::server::{ConnId, LocalTerminal};

    fn at(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    fn bulk(len: usize) -> Queued {
        Queued {
            len,
            urgent: false,
            awaiting_writable: false,
            held_until: None,
        }
    }

    #[test]
    fn reads_are_sorted_by_size() {
        assert_eq!(FlushPolicy::pty_read(1), Output::Urgent);
        assert_eq!(FlushPolicy::pty_read(2047), Output::Urgent);
        assert_eq!(FlushPolicy::pty_read(2048), Output::Bulk);
        assert_eq!(FlushPolicy::pty_read(4096), Output::Bulk);
        assert!(FlushPolicy::flush_after_read(0));
        assert!(FlushPolicy::flush_after_read(511));
        // Between the two: neither held nor flushed before the next read.
        assert!(!FlushPolicy::flush_after_read(512));
        assert!(!FlushPolicy::flush_after_read(2047));
        // A keystroke's echo, even an escape sequence, is shorter than a burst's pieces.
        assert!(FlushPolicy::is_echo(1));
        assert!(FlushPolicy::is_echo(b"\x1b[1;5A".len()));
        assert!(!FlushPolicy::is_echo(FlushPolicy::ECHO_READ));
    }

    // [OUTPUT.GATHER.1]
    #[test]
    fn a_chunk_is_read_on_into_while_another_read_fits() {
        let limit = 32 * 1024;
        // After a short read as after a bulk one: the next read says whether more is behind.
        assert!(FlushPolicy::read_on(1, limit));
        assert!(FlushPolicy::read_on(
            limit - FlushPolicy::MASTER_READ,
            limit
        ));
        assert!(!FlushPolicy::read_on(
            limit - FlushPolicy::MASTER_READ + 1,
            limit
        ));
        // A viewer that takes chunks smaller than one read: each read is its own chunk.
        assert!(!FlushPolicy::read_on(1, 1024));
        assert!(!FlushPolicy::read_on(0, 0));
    }

    #[test]
    fn only_a_long_pty_read_is_bulk_output() {
        let terminal = LocalTerminal(1);
        let long = vec![b'x'; FlushPolicy::BULK_READ];
        let event = ServerEvent::PtyOutput {
            terminal,
            bytes: &long,
        };
        assert_eq!(FlushPolicy::output_of(&event), Output::Bulk);
        let echo = ServerEvent::PtyOutput {
            terminal,
            bytes: b"a",
        };
        assert_eq!(FlushPolicy::output_of(&echo), Output::Urgent);
        // A client's bytes, however many, lead to replies: never held.
        let received = ServerEvent::Received {
            conn: ConnId(1),
            bytes: &long,
        };
        assert_eq!(FlushPolicy::output_of(&received), Output::Urgent);
        assert_eq!(
            FlushPolicy::output_of(&ServerEvent::Timeout),
            Output::Urgent
        );
    }

    #[test]
    fn urgent_bytes_a_full_queue_and_a_blocked_connection_are_written_at_once() {
        let now = at(1_000);
        let urgent = Queued {
            urgent: true,
            ..bulk(10)
        };
        assert_eq!(FlushPolicy::decide(urgent, now), Decision::Write);
        let blocked = Queued {
            awaiting_writable: true,
            ..bulk(10)
        };
        assert_eq!(FlushPolicy::decide(blocked, now), Decision::Write);
        assert_eq!(
            FlushPolicy::decide(bulk(FlushPolicy::HOLD_BYTES), now),
            Decision::Write
        );
    }

    #[test]
    fn bulk_output_is_held_from_its_first_hold_until_the_deadline() {
        let now = at(1_000);
        let until = now + FlushPolicy::HOLD;
        assert_eq!(
            FlushPolicy::decide(bulk(100), now),
            Decision::Hold { until }
        );
        // Later flushes keep the first deadline rather than pushing it back.
        let held = Queued {
            held_until: Some(until),
            ..bulk(5_000)
        };
        assert_eq!(
            FlushPolicy::decide(held, at(1_500)),
            Decision::Hold { until }
        );
        assert_eq!(FlushPolicy::decide(held, until), Decision::Write);
        assert_eq!(FlushPolicy::decide(held, at(9_999)), Decision::Write);
    }

    #[test]
    fn the_ripest_is_the_fullest_once_it_holds_enough() {
        let ripe = FlushPolicy::RIPE_BYTES;
        assert_eq!(FlushPolicy::ripest([]), None);
        assert_eq!(FlushPolicy::ripest([(0, ripe - 1), (1, 10)]), None);
        assert_eq!(FlushPolicy::ripest([(0, 10), (1, ripe), (2, 20)]), Some(1));
        assert_eq!(
            FlushPolicy::ripest([(0, ripe), (1, ripe + 1), (2, ripe)]),
            Some(1)
        );
        // Equals: the last of them, as `max_by_key` picks.
        assert_eq!(FlushPolicy::ripest([(4, ripe), (7, ripe)]), Some(7));
    }

    #[test]
    fn one_chunk_takes_a_plain_write_more_a_vectored_one() {
        assert!(FlushPolicy::plain_write(1));
        assert!(!FlushPolicy::plain_write(2));
        assert!(!FlushPolicy::plain_write(64));
    }
}
