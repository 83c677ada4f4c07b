//! Time as a value: microseconds since an epoch the driver chooses.
//!
//! std's `Instant` cannot be built from a number, so tests, transcripts, proptest and the
//! fuzzers could not make one. The driver's clock module is the only caller of
//! `std::time::Instant::now()`.

use std::fmt;
use std::ops::{Add, AddAssign};
use std::time::Duration;

/// A point in time: microseconds since a driver-chosen epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Self = Self(0);
    /// The latest representable instant ("never").
    pub const MAX: Self = Self(u64::MAX);

    /// An instant `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Self(micros)
    }

    /// An instant `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis.saturating_mul(1000))
    }

    /// Microseconds since the epoch.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time since `earlier`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Self {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(micros))
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        self.saturating_add(d)
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = self.saturating_add(d);
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t+{}us", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_millis(5);
        assert_eq!(t.as_micros(), 5000);
        assert_eq!(t + Duration::from_micros(1), Instant::from_micros(5001));
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(
            t.saturating_duration_since(Instant::from_millis(9)),
            Duration::ZERO
        );
        assert_eq!(
            Instant::from_millis(9).saturating_duration_since(t),
            Duration::from_millis(4)
        );
    }
}
