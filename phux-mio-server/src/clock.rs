//! The server's clock: the only place that reads `std::time::Instant::now()`.
//!
//! The engine takes time as a value ([`phux_core::time::Instant`], microseconds since an
//! epoch the driver chooses). Our epoch is the moment the clock was made, so values stay
//! small and a log line's `t+...` reads as time since start.

use std::time::{Duration, Instant as StdInstant};

use phux_core::time::Instant;

/// Maps the monotonic OS clock onto the engine's microsecond instants.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: StdInstant,
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        Self {
            epoch: StdInstant::now(),
        }
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        // Whole seconds and the microseconds within one, without `as_micros`'s 128-bit
        // division: this runs several times per keystroke.
        let since = self.epoch.elapsed();
        let micros = since
            .as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(since.subsec_micros()));
        Instant::from_micros(micros)
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
