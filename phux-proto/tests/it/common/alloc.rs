//! A counting global allocator for the tests that bound what decoding allocates.
//!
//! The counters are per thread: every test of the binary shares one global allocator and runs
//! on its own thread, so a measurement on one thread sees only the allocations of the decode
//! it wraps, never those of a test running alongside.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use phux_proto::Frame;

struct Counting;

thread_local! {
    // Bytes this thread holds (signed: a thread may free what another allocated) and the most
    // it held since the last reset. Const-initialised without a destructor, so reading them
    // never allocates and stays valid while the thread exits.
    static CURRENT: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = CURRENT.try_with(|current| {
        let now = current.get().wrapping_add(delta);
        current.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// GlobalAlloc contract holds exactly as it does for `System`; the counters are thread-local
// cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (see the impl).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size().cast_signed());
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        count(-layout.size().cast_signed());
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak bytes this thread allocated while decoding `bytes`, above what it held before.
pub(crate) fn peak_during_decode(bytes: &[u8]) -> usize {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    let result = Frame::decode(bytes);
    let peak = PEAK.with(Cell::get) - base;
    drop(result);
    peak.cast_unsigned()
}
