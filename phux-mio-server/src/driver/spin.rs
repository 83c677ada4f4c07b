//! The loop's wait, with an optional, bounded busy-poll after a client's request
//! ([SERVER.LOOP.3]).
//!
//! A server that blocks in `epoll_wait` between two requests of a client that sends them back
//! to back sleeps on each, and on a virtual machine whose idle CPU halts (KVM's `haltpoll` with
//! no polling of its own) a sleep can cost a wake-up of a halted virtual CPU. So after a turn
//! that read a client's bytes the loop may poll without blocking for a while before it blocks,
//! as Linux's `busy_poll` does for sockets. Only a request arms it: a server with nothing to
//! do blocks as before.
//!
//! Off by default: measured on a 2-vCPU KVM guest (bench/README.md, "A busy-poll, measured"),
//! it took the server's sleeps per APPLY_INPUT from 0.5 to under 0.1 and made every latency
//! worse. A spinning server keeps its CPU busy, so the client it has just answered, and the
//! kernel worker and the child behind a PTY write, are woken on the other CPU, halted meanwhile,
//! or wait behind the spinner on this one.

use std::io;
use std::time::Duration;

use mio::{Events, Poll};
use phux_core::time::Instant;

use crate::clock::Clock;
use crate::config::DEFAULT_BUSY_POLL_US;

/// [`DEFAULT_BUSY_POLL_US`] as a duration: off (see the module doc).
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(DEFAULT_BUSY_POLL_US);

/// The busy-poll's budget and how far it runs now.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BusyPoll {
    budget: Duration,
    /// Until when the wait polls without blocking; `None` when not armed.
    until: Option<Instant>,
}

impl BusyPoll {
    /// A busy-poll of `budget` after each arming (zero: never, the wait always blocks).
    pub(crate) fn new(budget: Duration) -> Self {
        Self {
            budget,
            until: None,
        }
    }

    /// A client's request is being read: the waits that follow poll without blocking until
    /// now + the budget. Off, it does nothing, not even read the clock.
    pub(crate) fn arm(&mut self, clock: Clock) {
        if !self.budget.is_zero() {
            self.until = Some(clock.now() + self.budget);
        }
    }

    /// Waits as `poll.poll(events, timeout)` does, but while armed polls without blocking
    /// first, until an event comes, the busy-poll's end or the timeout, whichever is first.
    pub(crate) fn wait(
        &mut self,
        poll: &mut Poll,
        events: &mut Events,
        timeout: Option<Duration>,
        clock: Clock,
    ) -> io::Result<()> {
        let Some(until) = self.until else {
            return poll.poll(events, timeout);
        };
        if timeout == Some(Duration::ZERO) {
            return poll.poll(events, timeout);
        }
        let start = clock.now();
        let end = timeout.map_or(until, |t| until.min(start + t));
        let mut now = start;
        while now < end {
            poll.poll(events, Some(Duration::ZERO))?;
            if !events.is_empty() {
                return Ok(());
            }
            now = clock.now();
        }
        // [SERVER.LOOP.3] Spent: the next waits block until a request arms it again.
        if now >= until {
            self.until = None;
        }
        let spun = now.saturating_duration_since(start);
        poll.poll(events, timeout.map(|t| t.saturating_sub(spun)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_budget_never_arms() {
        let mut spin = BusyPoll::new(Duration::ZERO);
        spin.arm(Clock::new());
        assert_eq!(spin.until, None);
    }

    // [SERVER.LOOP.3]
    #[test]
    fn the_busy_poll_ends_and_then_the_wait_blocks_for_its_timeout() {
        let clock = Clock::new();
        let mut poll = Poll::new().expect("poll");
        let mut events = Events::with_capacity(4);
        let mut spin = BusyPoll::new(Duration::from_micros(200));
        spin.arm(clock);
        // Nothing is registered: the busy-poll runs out, then the wait blocks for the rest of
        // the timeout and returns with no event.
        spin.wait(
            &mut poll,
            &mut events,
            Some(Duration::from_millis(1)),
            clock,
        )
        .expect("wait");
        assert!(events.is_empty());
        assert_eq!(spin.until, None, "spent once the budget has passed");
        // Not armed again: a plain wait.
        spin.wait(&mut poll, &mut events, Some(Duration::ZERO), clock)
            .expect("wait");
        assert!(events.is_empty());
    }

    #[test]
    fn an_event_ends_the_busy_poll_and_keeps_what_is_left_of_it() {
        let clock = Clock::new();
        let mut poll = Poll::new().expect("poll");
        let waker = mio::Waker::new(poll.registry(), mio::Token(7)).expect("waker");
        waker.wake().expect("wake");
        let mut events = Events::with_capacity(4);
        let mut spin = BusyPoll::new(Duration::from_mins(1));
        spin.arm(clock);
        spin.wait(&mut poll, &mut events, None, clock)
            .expect("wait");
        assert_eq!(
            events
                .iter()
                .map(mio::event::Event::token)
                .collect::<Vec<_>>(),
            [mio::Token(7)]
        );
        assert!(spin.until.is_some(), "still armed after an early event");
    }
}
