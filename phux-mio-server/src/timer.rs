//! The driver's own deadlines, in the quinn style: an enum of kinds, a table of one optional
//! instant per kind, and the nearest deadline is the minimum.
//!
//! The engine keeps its protocol timers itself (`ServerEngine::poll_timeout`); these are the
//! operating system's: how long output may wait to be written, how long a closing connection
//! may take to drain, how long an exited child's terminal may keep its output open, how long
//! shutdown may take. Each connection and each terminal owns a [`TimerTable`]; the host owns
//! one more for shutdown. [`Nearest`] is a lower bound over all the per-connection and
//! per-terminal tables, lowered as a timer is set and worked out afresh only once it comes due,
//! so a wake-up scans every connection and terminal only when one of their deadlines is due,
//! not on every event.

use std::time::Duration;

use phux_core::time::Instant;

/// How long a closing connection may take to drain its queue before it is dropped.
pub use phux_core::server::CLOSE_BOUND;
/// How long after a child's exit we wait for its terminal's output to end (a background job
/// may still hold the slave open) before reporting the exit anyway.
pub const EXIT_DRAIN_BOUND: Duration = Duration::from_secs(2);

/// How long a terminal being killed (KILL_TERMINAL, shutdown) has after its SIGHUP to exit on
/// its own before its process group gets SIGKILL ([SERVER.SIGNAL.2]). A closing terminal
/// emulator's hangup gives a program the chance to clean up (vim removes its swap file, a
/// shell saves its history); that takes milliseconds, and 2 s covers a loaded machine without
/// letting a program that ignores SIGHUP hold up KILL_TERMINAL or shutdown for long.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// Once the server is stopping (shutdown has flushed every client, or the `--stdio` client
/// left), how long past [`KILL_GRACE`] the loop waits for the last children's exits. Whatever
/// has not been reaped by then is SIGKILLed and reaped, blocking, as the server exits.
pub const REAP_BOUND: Duration = Duration::from_secs(1);

/// How long the listener rests after `accept` failed for want of a descriptor (EMFILE,
/// ENFILE) or of kernel memory before it tries again. The queued peer raises no new event
/// (readiness is edge-triggered and its edge was spent), so without the retry it would wait
/// for the next connect; 100 ms lets a closing connection free its descriptor without the
/// loop spinning on a limit that has not moved.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// What a deadline is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// A connection's held-back bulk output is written by then (see [`crate::flush`]).
    HeldOutput = 0,
    /// A closing connection that has not drained its queue by then is dropped
    /// ([`CLOSE_BOUND`]).
    Closing = 1,
    /// An exited child's terminal whose output has not ended by then is reported exited anyway
    /// ([`EXIT_DRAIN_BOUND`]).
    ExitDrain = 2,
    /// After the engine's `Shutdown`, the connections still open by then are closed
    /// ([`CLOSE_BOUND`]).
    Shutdown = 3,
    /// A terminal hung up by a kill whose child has not exited by then gets SIGKILL
    /// ([`KILL_GRACE`]).
    KillGrace = 4,
    /// The server is stopping: once this passes it exits even if some child has not been
    /// reaped yet ([`KILL_GRACE`] + [`REAP_BOUND`]).
    Reap = 5,
    /// `accept` failed (for want of descriptors, mostly): the listener is tried again then,
    /// whether or not a new peer arrives ([`ACCEPT_RETRY`], [SERVER.LIMIT.4]).
    AcceptRetry = 6,
    /// Terminals or connections went away: the heap is trimmed then
    /// ([`crate::memory::TRIM_DELAY`], [SERVER.MEMORY.1]).
    Trim = 7,
}

impl Timer {
    const COUNT: usize = 8;
}

/// One optional deadline per [`Timer`] kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TimerTable {
    data: [Option<Instant>; Timer::COUNT],
}

impl TimerTable {
    /// Sets `timer` to `at`, replacing any earlier setting.
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.data[timer as usize] = Some(at);
    }

    /// The deadline `timer` is set to; when unset, sets it to `at()` first. A deadline once set
    /// is not pushed back by asking again.
    pub(crate) fn get_or_set(&mut self, timer: Timer, at: impl FnOnce() -> Instant) -> Instant {
        *self.data[timer as usize].get_or_insert_with(at)
    }

    /// The deadline `timer` is set to, if it is set.
    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.data[timer as usize]
    }

    /// Whether `timer` is set.
    pub(crate) fn is_set(&self, timer: Timer) -> bool {
        self.get(timer).is_some()
    }

    /// Unsets `timer`.
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.data[timer as usize] = None;
    }

    /// Whether `timer` is set and its deadline is `now` or earlier.
    pub(crate) fn is_expired(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// The nearest deadline of the table: the minimum of those set.
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.data.iter().flatten().copied().min()
    }
}

/// A lower bound on the next timeout of many tables: no deadline of theirs falls before it
/// (`None`: none is set). Lowered by [`Self::note`] as each timer is set; a stopped timer leaves
/// it where it was, which at worst costs one early wake-up and one [`Self::recompute`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Nearest {
    due: Option<Instant>,
}

impl Nearest {
    /// A timer of one of the tables was set for `at`.
    pub(crate) fn note(&mut self, at: Instant) {
        self.due = Some(self.due.map_or(at, |due| due.min(at)));
    }

    /// The bound, for the poll timeout.
    pub(crate) fn get(&self) -> Option<Instant> {
        self.due
    }

    /// Whether the bound has come: some table may hold an expired timer.
    pub(crate) fn is_due(&self, now: Instant) -> bool {
        self.due.is_some_and(|due| due <= now)
    }

    /// Works the bound out afresh from every table, once their expired timers are handled.
    pub(crate) fn recompute<'a>(&mut self, tables: impl IntoIterator<Item = &'a TimerTable>) {
        self.due = tables
            .into_iter()
            .filter_map(TimerTable::next_timeout)
            .min();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn the_next_timeout_is_the_minimum_of_the_kinds_set() {
        let mut table = TimerTable::default();
        assert_eq!(table.next_timeout(), None);
        table.set(Timer::Closing, at(50));
        table.set(Timer::HeldOutput, at(7));
        table.set(Timer::ExitDrain, at(20));
        assert_eq!(table.next_timeout(), Some(at(7)));
        table.stop(Timer::HeldOutput);
        assert_eq!(table.next_timeout(), Some(at(20)));
        assert!(!table.is_set(Timer::HeldOutput));
        assert_eq!(table.get(Timer::Closing), Some(at(50)));
    }

    #[test]
    fn a_timer_expires_at_its_deadline_not_before_and_an_unset_one_never() {
        let mut table = TimerTable::default();
        assert!(!table.is_expired(Timer::Shutdown, Instant::MAX));
        table.set(Timer::Shutdown, at(10));
        assert!(!table.is_expired(Timer::Shutdown, at(9)));
        assert!(table.is_expired(Timer::Shutdown, at(10)));
        assert!(table.is_expired(Timer::Shutdown, at(11)));
        // Other kinds are independent.
        assert!(!table.is_expired(Timer::Closing, at(11)));
    }

    #[test]
    fn get_or_set_keeps_the_first_deadline() {
        let mut table = TimerTable::default();
        assert_eq!(table.get_or_set(Timer::Closing, || at(5)), at(5));
        // Asking again (a second Close, the peer's EOF after Close) does not push it back.
        let later = table.get_or_set(Timer::Closing, || panic!("already set"));
        assert_eq!(later, at(5));
        // `set` does replace it.
        table.set(Timer::Closing, at(9));
        assert_eq!(table.get(Timer::Closing), Some(at(9)));
    }

    #[test]
    fn nearest_is_lowered_by_each_note_and_worked_out_afresh_on_recompute() {
        let mut nearest = Nearest::default();
        assert_eq!(nearest.get(), None);
        assert!(!nearest.is_due(Instant::MAX));
        nearest.note(at(30));
        nearest.note(at(10));
        nearest.note(at(20));
        assert_eq!(nearest.get(), Some(at(10)));
        assert!(!nearest.is_due(at(9)));
        assert!(nearest.is_due(at(10)));

        let mut a = TimerTable::default();
        let mut b = TimerTable::default();
        a.set(Timer::Closing, at(40));
        b.set(Timer::ExitDrain, at(25));
        b.set(Timer::HeldOutput, at(35));
        nearest.recompute([&a, &b]);
        assert_eq!(nearest.get(), Some(at(25)));
        nearest.recompute([&TimerTable::default()]);
        assert_eq!(nearest.get(), None);
    }
}
