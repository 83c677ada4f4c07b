//! A connection's outbound queue.
//!
//! The engine hands the driver whole encoded frames; the driver only has to move them to the
//! peer without blocking, in order, and say how many bytes left. [`WriteQueue`] keeps the
//! frames as they came (no copying into one big buffer) with an offset into the first.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::Arc;

use phux_core::server::SharedFrame;
use phux_proto::frame::TerminalOutputTail;

use crate::flush::FlushPolicy;

/// Bytes waiting to be written to one peer.
#[derive(Debug, Default)]
pub struct WriteQueue {
    chunks: VecDeque<Chunk>,
    /// How much of the first chunk has already been written.
    offset: usize,
    /// Unwritten bytes in total.
    len: usize,
    /// Chunks written out, kept for [`Self::drain_spent`] so their buffers can be reused.
    spent: Vec<Chunk>,
}

/// One piece of what a connection is to be sent.
#[derive(Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Frames encoded for this connection alone.
    Owned(Vec<u8>),
    /// The head of a frame other connections are sent too ([`SharedFrame`]).
    Shared(Arc<Vec<u8>>),
    /// This connection's end of the frame whose head precedes it.
    Tail(TerminalOutputTail),
}

impl Chunk {
    /// Its bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Owned(bytes) => bytes,
            Self::Shared(head) => head,
            Self::Tail(tail) => tail.as_bytes(),
        }
    }
}

/// How a [`WriteQueue::flush_to`] call ended.
#[derive(Debug)]
pub enum FlushState {
    /// Everything queued was written.
    Drained,
    /// The peer cannot take more now; wait for writability.
    Blocked,
    /// The transport failed; the rest of the queue will never be delivered.
    Failed(io::Error),
}

impl WriteQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes after everything already queued.
    pub fn push(&mut self, bytes: Vec<u8>) {
        self.push_chunk(Chunk::Owned(bytes));
    }

    /// Appends a frame whose head other connections share: the head is queued, not copied.
    pub fn push_shared(&mut self, frame: SharedFrame) {
        self.push_chunk(Chunk::Shared(frame.head));
        self.push_chunk(Chunk::Tail(frame.tail));
    }

    fn push_chunk(&mut self, chunk: Chunk) {
        let len = chunk.bytes().len();
        if len == 0 {
            return;
        }
        self.len += len;
        self.chunks.push_back(chunk);
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Unwritten bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends a frame head other connections are sent too (an upgrade's image gives the
    /// shared heads back, each once).
    pub fn push_head(&mut self, head: Arc<Vec<u8>>) {
        self.push_chunk(Chunk::Shared(head));
    }

    /// Every chunk not yet written, in order, with where its unwritten bytes begin (for an
    /// upgrade's image: a shared head whole stays shared).
    pub fn pieces(&self) -> impl Iterator<Item = (&Chunk, usize)> {
        self.chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| (chunk, if i == 0 { self.offset } else { 0 }))
    }

    /// Forgets everything queued (the peer is gone).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.spent.clear();
        self.offset = 0;
        self.len = 0;
    }

    /// Writes as much as the transport takes without blocking. Returns how many bytes left
    /// the queue (also when it then failed) and why it stopped. `EINTR` is retried.
    pub fn flush_to(&mut self, w: &mut impl Write) -> (usize, FlushState) {
        let mut sent = 0;
        while !self.chunks.is_empty() {
            let written = match self.chunks.front() {
                // One chunk (a keystroke's echo, a reply): the policy's single-write fast path.
                Some(only) if FlushPolicy::plain_write(self.chunks.len()) => {
                    w.write(only.bytes().get(self.offset..).unwrap_or_default())
                }
                _ => self.write_chunks(w),
            };
            match written {
                Ok(0) => {
                    return (sent, FlushState::Failed(io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => {
                    let n = n.min(self.len);
                    sent += n;
                    self.consume(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return (sent, FlushState::Blocked);
                }
                Err(e) => return (sent, FlushState::Failed(e)),
            }
        }
        (sent, FlushState::Drained)
    }

    /// One vectored write for many queued frames: a viewer of a busy terminal gets a burst
    /// of output frames per wake-up, and a syscall each would dominate.
    fn write_chunks(&self, w: &mut impl Write) -> io::Result<usize> {
        let mut slices = [io::IoSlice::new(&[]); WRITE_SLICES];
        let mut used = 0;
        for (slot, chunk) in slices.iter_mut().zip(&self.chunks) {
            let from = if used == 0 { self.offset } else { 0 };
            *slot = io::IoSlice::new(chunk.bytes().get(from..).unwrap_or_default());
            used += 1;
        }
        w.write_vectored(slices.get(..used).unwrap_or_default())
    }

    /// Drops `n` (at most [`Self::len`]) written bytes from the front of the queue.
    fn consume(&mut self, mut n: usize) {
        self.len -= n;
        while n > 0 {
            let Some(front) = self.chunks.front() else {
                return;
            };
            let rest = front.bytes().len() - self.offset;
            if n < rest {
                self.offset += n;
                return;
            }
            n -= rest;
            if let Some(done) = self.chunks.pop_front() {
                self.spent.push(done);
            }
            self.offset = 0;
        }
    }

    /// The chunks written out since the last call, for their buffers to be reused.
    pub fn drain_spent(&mut self) -> std::vec::Drain<'_, Chunk> {
        self.spent.drain(..)
    }
}

/// How many queued chunks one vectored write hands the kernel (well under `IOV_MAX`).
const WRITE_SLICES: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `room` bytes, then blocks, optionally failing afterwards.
    struct Limited {
        got: Vec<u8>,
        room: usize,
        per_call: usize,
        fail_when_full: bool,
    }

    impl Write for Limited {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(if self.fail_when_full {
                    io::ErrorKind::BrokenPipe.into()
                } else {
                    io::ErrorKind::WouldBlock.into()
                });
            }
            let n = buf.len().min(self.room).min(self.per_call);
            self.got.extend_from_slice(&buf[..n]);
            self.room -= n;
            Ok(n)
        }
        /// Like `writev`: takes up to `per_call` bytes across the slices, in order.
        fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
            if self.room == 0 {
                // Full: the same error a plain write gives.
                return self.write(&[]);
            }
            let mut budget = self.per_call;
            let mut total = 0;
            for buf in bufs {
                if budget == 0 || self.room == 0 {
                    break;
                }
                let take = buf.len().min(budget);
                let n = self.write(&buf[..take])?;
                total += n;
                budget -= n;
                if n < buf.len() {
                    break;
                }
            }
            Ok(total)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn partial_writes_resume_in_order_and_count_what_left() {
        let mut q = WriteQueue::new();
        q.push(b"hello ".to_vec());
        q.push(Vec::new());
        q.push(b"world".to_vec());
        assert_eq!(q.len(), 11);
        let mut w = Limited {
            got: Vec::new(),
            room: 4,
            per_call: 3,
            fail_when_full: false,
        };
        let (sent, state) = q.flush_to(&mut w);
        assert_eq!(sent, 4);
        assert!(matches!(state, FlushState::Blocked));
        assert_eq!(q.len(), 7);
        w.room = 100;
        let (sent, state) = q.flush_to(&mut w);
        assert_eq!(sent, 7);
        assert!(matches!(state, FlushState::Drained));
        assert!(q.is_empty());
        assert_eq!(w.got, b"hello world");
    }

    #[test]
    fn many_frames_leave_in_order_across_partial_vectored_writes() {
        let mut q = WriteQueue::new();
        let frames: Vec<Vec<u8>> = (0..200u8)
            .map(|i| vec![i; 1 + usize::from(i % 7)])
            .collect();
        for f in &frames {
            q.push(f.clone());
        }
        let want: Vec<u8> = frames.concat();
        let mut w = Limited {
            got: Vec::new(),
            room: 0,
            per_call: 13,
            fail_when_full: false,
        };
        let mut sent = 0;
        let mut spent = Vec::new();
        // Room appears a little at a time; every flush takes what fits and blocks after it.
        while !q.is_empty() {
            w.room += 50;
            let (n, state) = q.flush_to(&mut w);
            sent += n;
            assert!(matches!(state, FlushState::Blocked | FlushState::Drained));
            assert_eq!(q.len(), want.len() - sent);
            spent.extend(q.drain_spent());
        }
        assert_eq!(w.got, want);
        // Every buffer comes back once written, for reuse.
        assert_eq!(
            spent,
            frames.into_iter().map(Chunk::Owned).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_shared_frame_leaves_as_head_then_this_queues_tail_between_owned_frames() {
        use phux_proto::ids::{BootstrapId, StreamId};
        let id = |n| StreamId::new(n).expect("nonzero");
        let boot = |n| BootstrapId::new(n).expect("nonzero");
        let head = Arc::new(b"<head shared by every viewer>".to_vec());
        let tails = [
            TerminalOutputTail::new(id(1), boot(7)),
            TerminalOutputTail::new(id(2), boot(9)),
        ];
        let mut queues = [WriteQueue::new(), WriteQueue::new()];
        for (q, tail) in queues.iter_mut().zip(tails) {
            q.push(b"before ".to_vec());
            q.push_shared(SharedFrame {
                head: Arc::clone(&head),
                tail,
            });
            q.push(b" after".to_vec());
        }
        // Two queues hold the head, not two copies of it.
        assert_eq!(Arc::strong_count(&head), 3);
        for (q, tail) in queues.iter_mut().zip(tails) {
            let want = [&b"before "[..], &head, tail.as_bytes(), b" after"].concat();
            assert_eq!(q.len(), want.len());
            let mut w = Limited {
                got: Vec::new(),
                room: 1000,
                per_call: 5,
                fail_when_full: false,
            };
            let (sent, state) = q.flush_to(&mut w);
            assert!(matches!(state, FlushState::Drained));
            assert_eq!((sent, w.got), (want.len(), want));
            let spent: Vec<Chunk> = q.drain_spent().collect();
            assert!(matches!(&spent[..], [
                Chunk::Owned(_),
                Chunk::Shared(h),
                Chunk::Tail(t),
                Chunk::Owned(_)
            ] if Arc::ptr_eq(h, &head) && *t == tail));
        }
    }

    #[test]
    fn the_pieces_are_what_is_left_after_a_partial_write() {
        let mut q = WriteQueue::new();
        q.push(b"hello ".to_vec());
        q.push(b"world".to_vec());
        let mut w = Limited {
            got: Vec::new(),
            room: 8,
            per_call: 100,
            fail_when_full: false,
        };
        let _ = q.flush_to(&mut w);
        let unwritten: Vec<u8> = q
            .pieces()
            .flat_map(|(chunk, from)| chunk.bytes()[from..].to_vec())
            .collect();
        assert_eq!(unwritten, b"rld");
        assert_eq!(unwritten.len(), q.len());
    }

    #[test]
    fn a_failure_reports_the_bytes_sent_before_it() {
        let mut q = WriteQueue::new();
        q.push(vec![1; 10]);
        let mut w = Limited {
            got: Vec::new(),
            room: 6,
            per_call: 100,
            fail_when_full: true,
        };
        let (sent, state) = q.flush_to(&mut w);
        assert_eq!(sent, 6);
        assert!(matches!(state, FlushState::Failed(e) if e.kind() == io::ErrorKind::BrokenPipe));
        assert_eq!(q.len(), 4);
    }
}
