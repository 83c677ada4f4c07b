//! Giving memory back to the system once a load has passed.
//!
//! The allocator keeps freed memory for reuse: after a burst (a big screen killed, a hundred
//! viewers gone) the server's RSS stays at its peak although the heap is mostly free. glibc
//! gives it back only at the top of the heap or on request; [`trim`] is that request, made
//! by the driver a moment after terminals or connections went away ([SERVER.MEMORY.1]).

/// How long after terminals or connections went away the heap is trimmed: soon enough that
/// memory comes back within seconds of a load, late enough that a burst of closes costs one
/// trim.
pub const TRIM_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// Returns the free memory at the top of the heap and in free pages inside it to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn trim() {
    // SAFETY: the declaration matches glibc's <malloc.h>.
    unsafe extern "C" {
        // glibc, <malloc.h>: int malloc_trim(size_t pad).
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: malloc_trim takes no pointer and only walks glibc's own heap under its lock; it
    // is safe to call at any time from any thread. Neither std nor rustix offers it.
    let _ = unsafe { malloc_trim(0) };
}

/// Other allocators return memory on their own schedule; nothing to ask for.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() {}
