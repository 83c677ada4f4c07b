//! The server's clock: the only place that reads the OS clock.
//!
//! The engine takes time as a value ([`phux_core::time::Instant`], microseconds since an
//! epoch the driver chooses). Our epoch is an absolute `CLOCK_MONOTONIC` reading, taken when
//! the server started, so values stay small, a log line's `t+...` reads as time since start,
//! and an upgraded image that is handed the same epoch continues the same instants: the
//! monotonic clock is system-wide and does not restart with an exec
//! ([SERVER.UPGRADE.EXEC.5]).

use std::time::Duration;

use phux_core::time::Instant;
use rustix::time::{ClockId, clock_gettime};

/// Maps the monotonic OS clock onto the engine's microsecond instants.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// `CLOCK_MONOTONIC` at the epoch, in nanoseconds.
    epoch_nanos: u64,
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Self {
            epoch_nanos: monotonic_nanos(),
        }
    }

    /// A clock whose epoch is `epoch_nanos` (a [`Self::epoch_nanos`] of an earlier image).
    pub fn with_epoch(epoch_nanos: u64) -> Self {
        Self { epoch_nanos }
    }

    /// The epoch as an absolute `CLOCK_MONOTONIC` reading, in nanoseconds.
    pub fn epoch_nanos(&self) -> u64 {
        self.epoch_nanos
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        let since = monotonic_nanos().saturating_sub(self.epoch_nanos);
        Instant::from_micros(since / 1000)
    }

    /// How long to wait from now until `deadline` (zero if it has passed), rounded up to a
    /// whole millisecond so the wait never ends just before the deadline (epoll's
    /// granularity) and causes a busy loop.
    pub fn until(&self, deadline: Instant) -> Duration {
        let wait = deadline.saturating_duration_since(self.now());
        let ms = wait.as_micros().div_ceil(1000);
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (it starts near boot, so it is never negative).
fn monotonic_nanos() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(t.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_monotonic_and_starts_near_zero() {
        let clock = Clock::new();
        let a = clock.now();
        let b = clock.now();
        assert!(b >= a);
        // Built a moment ago: well under a minute, whatever the machine's load.
        assert!(a.as_micros() < 60_000_000);
    }

    #[test]
    fn a_clock_with_the_same_epoch_reads_the_same_instants() {
        let first = Clock::new();
        let later = Clock::with_epoch(first.epoch_nanos());
        let a = first.now();
        let b = later.now();
        let c = first.now();
        assert!(a <= b && b <= c);
    }

    #[test]
    fn until_is_zero_for_the_past_and_rounds_up_for_the_future() {
        let clock = Clock::new();
        assert_eq!(clock.until(Instant::ZERO), Duration::ZERO);
        let later = clock.now() + Duration::from_micros(10_500);
        let wait = clock.until(later);
        // At most 11 ms (rounded up), never a fraction of a millisecond.
        assert!(wait <= Duration::from_millis(11));
        assert_eq!(wait.subsec_micros() % 1000, 0);
        assert!(clock.until(Instant::MAX).as_secs() > 1_000_000);
    }
}
