//! Send buffers the driver gives back, kept for the next sends: plumbing, not a rule. A
//! driver that drops its buffers instead loses only the reuse.

use std::sync::Arc;

use super::ServerEngine;

/// How many reclaimed send buffers are kept, and the largest capacity worth keeping: enough
/// for a terminal's output fanned out to a handful of viewers without an allocation (and a
/// page fault) per frame, bounded so a burst does not pin memory.
pub(super) const SPARE_BUFFERS: usize = 32;
pub(super) const SPARE_CAPACITY: usize = 256 * 1024;

/// Emptied buffers of `Send` actions and shared frame heads whose every copy was written.
#[derive(Debug, Default)]
pub(super) struct BufferPool {
    spare: Vec<Vec<u8>>,
    heads: Vec<Arc<Vec<u8>>>,
}

impl BufferPool {
    /// An empty buffer, reused when one was given back.
    pub(super) fn take(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Keeps `buffer` for [`Self::take`], emptied, unless the pool is full or it is too large.
    pub(super) fn give_back(&mut self, mut buffer: Vec<u8>) {
        if self.spare.len() < SPARE_BUFFERS && buffer.capacity() <= SPARE_CAPACITY {
            buffer.clear();
            self.spare.push(buffer);
        }
    }

    /// A head for a frame fanned out to several connections, encoded by `encode` into a
    /// head given back when there is one.
    pub(super) fn head(&mut self, encode: impl FnOnce(&mut Vec<u8>)) -> Arc<Vec<u8>> {
        let mut head = self.heads.pop().unwrap_or_default();
        if let Some(buf) = Arc::get_mut(&mut head) {
            buf.clear();
            encode(buf);
            head
        } else {
            let mut buf = Vec::new();
            encode(&mut buf);
            Arc::new(buf)
        }
    }

    /// Keeps `head` for [`Self::head`] if this was its last share, the pool is not full and
    /// it is not too large.
    pub(super) fn give_back_head(&mut self, mut head: Arc<Vec<u8>>) {
        if self.heads.len() < SPARE_BUFFERS
            && Arc::get_mut(&mut head).is_some_and(|b| b.capacity() <= SPARE_CAPACITY)
        {
            self.heads.push(head);
        }
    }
}

impl ServerEngine {
    /// Gives back the buffer of a `Send` action once its bytes are written, so that the
    /// next sends reuse it instead of allocating. Optional: a driver that drops its buffers
    /// loses only the reuse.
    pub fn reclaim(&mut self, buffer: Vec<u8>) {
        self.pool.give_back(buffer);
    }

    /// Gives back the head of a `SendShared` frame once written. The last connection to give
    /// a head back returns it to the pool its successors are encoded into; the others just
    /// let go of their share. Optional, like [`Self::reclaim`].
    pub fn reclaim_shared(&mut self, head: Arc<Vec<u8>>) {
        self.pool.give_back_head(head);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_empty() {
        let mut pool = BufferPool::default();
        assert_eq!(pool.take().capacity(), 0);
        let mut buffer = Vec::with_capacity(4096);
        buffer.extend_from_slice(b"written");
        let at = buffer.as_ptr();
        pool.give_back(buffer);
        let again = pool.take();
        assert!(again.is_empty());
        assert_eq!((again.as_ptr(), again.capacity()), (at, 4096));
        assert_eq!(
            pool.take().capacity(),
            0,
            "one buffer given back, one taken"
        );
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_bounded_buffers() {
        let mut pool = BufferPool::default();
        pool.give_back(Vec::with_capacity(SPARE_CAPACITY + 1));
        assert_eq!(pool.take().capacity(), 0, "too large to keep");
        pool.give_back(Vec::with_capacity(SPARE_CAPACITY));
        assert_eq!(pool.take().capacity(), SPARE_CAPACITY, "the largest kept");
        for _ in 0..=SPARE_BUFFERS {
            pool.give_back(Vec::with_capacity(16));
        }
        let kept = std::iter::from_fn(|| Some(pool.take()))
            .take_while(|b| b.capacity() > 0)
            .count();
        assert_eq!(kept, SPARE_BUFFERS);
    }

    #[test]
    fn a_head_is_reused_once_its_last_share_is_given_back() {
        let mut pool = BufferPool::default();
        let head = pool.head(|b| b.extend_from_slice(b"one"));
        assert_eq!(*head, b"one");
        let share = Arc::clone(&head);
        // Given back while another connection still holds a share: let go of, not kept.
        pool.give_back_head(head);
        let fresh = pool.head(|b| b.extend_from_slice(b"two"));
        assert_ne!(fresh.as_ptr(), share.as_ptr());
        let at = share.as_ptr();
        pool.give_back_head(share);
        let reused = pool.head(|b| b.extend_from_slice(b"three"));
        assert_eq!(*reused, b"three", "emptied before it is encoded into");
        assert_eq!(reused.as_ptr(), at);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_bounded_heads() {
        let mut pool = BufferPool::default();
        pool.give_back_head(Arc::new(Vec::with_capacity(SPARE_CAPACITY + 1)));
        pool.give_back_head(Arc::new(Vec::with_capacity(SPARE_CAPACITY)));
        let head = pool.head(|_| {});
        assert_eq!(
            head.capacity(),
            SPARE_CAPACITY,
            "the largest kept, the larger not"
        );
        for _ in 0..=SPARE_BUFFERS {
            pool.give_back_head(Arc::new(Vec::with_capacity(16)));
        }
        let kept = std::iter::from_fn(|| Some(pool.head(|_| {})))
            .take_while(|h| h.capacity() > 0)
            .count();
        assert_eq!(kept, SPARE_BUFFERS);
    }

    #[test]
    fn the_engine_keeps_what_the_driver_gives_back() {
        let mut engine = ServerEngine::new(super::super::ServerConfig::new(vec![1; 16]));
        engine.reclaim(Vec::with_capacity(4096));
        assert_eq!(engine.pool.take().capacity(), 4096);
        engine.reclaim_shared(Arc::new(Vec::with_capacity(2048)));
        assert_eq!(engine.pool.head(|_| {}).capacity(), 2048);
    }
}
