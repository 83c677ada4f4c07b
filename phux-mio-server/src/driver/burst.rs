//! The masters in a burst of output, read by the PTY reader thread ([OUTPUT.READER.1],
//! `crate::reader`): handing one over at a bulk read, feeding the engine what the thread read,
//! in order, and taking masters back (found empty, ended, before an upgrade's image, or when the
//! thread failed).

use std::collections::BTreeMap;
use std::time::Duration;

use mio::{Token, Waker};
use phux_core::server::{LocalTerminal, ServerEngine};
use phux_core::time::Instant;
use tracing::warn;

use super::{Driver, READER};
use crate::flush::FlushPolicy;
use crate::host::Source;
use crate::reader::End;

/// The longest the loop holds back a terminal's output for a viewer that is behind
/// ([OUTPUT.READER.5]) before it feeds on and the output budget decides ([QUEUE.OUTPUT.1]).
pub(crate) const PACE_BOUND: Duration = Duration::from_millis(500);

/// The terminals whose output is held back for a viewer that is behind ([OUTPUT.READER.5]).
#[derive(Debug, Default)]
pub(super) struct Paces {
    held: BTreeMap<LocalTerminal, Pace>,
}

#[derive(Debug, Clone, Copy)]
struct Pace {
    token: Token,
    since: Instant,
    /// Held back for [`PACE_BOUND`] already: fed on until the viewer catches up.
    spent: bool,
}

impl Paces {
    /// When the next hold ends.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.held
            .values()
            .filter(|p| !p.spent)
            .map(|p| p.since + PACE_BOUND)
            .min()
    }
}

/// The longest an upgrade waits for the reader thread to give its masters back: it waits
/// nowhere but in its poll, which the request ends.
const RECALL_BOUND: Duration = Duration::from_secs(1);

impl Driver {
    /// Whether a master that gave a bulk read goes to the reader thread.
    pub(super) fn reader_may_take(&self) -> bool {
        self.host.reader.available() && !self.upgrade.quiescing()
    }

    /// Hands `terminal`'s master to the reader thread: the loop stops watching it first.
    /// Returns whether the thread holds it now (if not, the loop reads it as before).
    pub(super) fn hand_to_reader(&mut self, terminal: LocalTerminal, token: Token) -> bool {
        let host = &mut self.host;
        let Some(t) = host.terminals.get_mut(&terminal) else {
            return false;
        };
        if t.eof() || !t.reading() {
            return false;
        }
        let registry = host.poll.registry();
        if let Err(e) = t.set_reading(registry, false) {
            warn!(%terminal, error = %e, "cannot stop watching a master");
            return false;
        }
        let Some(fd) = t.child.master_fd() else {
            return false;
        };
        let gather = gather_of(&self.engine, terminal);
        match host
            .reader
            .take(token, fd, gather, || Waker::new(registry, READER))
        {
            Ok(()) => true,
            Err(e) => {
                warn!(%terminal, error = %e, "cannot hand a master to the reader thread");
                if let Err(e) = t.set_reading(registry, true) {
                    warn!(%terminal, error = %e, "cannot watch a master again");
                }
                false
            }
        }
    }

    /// The reader thread's wake-up: what it read goes to the engine, master by master.
    pub(super) fn on_reader(&mut self) {
        let mut news = std::mem::take(&mut self.host.reader.news_list);
        let failed = self.host.reader.news(&mut news);
        for token in news.drain(..) {
            if let Some(Source::Master(terminal)) = self.host.sources.get(token) {
                self.collect_reader(terminal, token);
            }
        }
        self.host.reader.news_list = news;
        if failed {
            self.reader_failed();
        }
    }

    /// Feeds the engine what the thread read from `terminal`'s master, then acts on the
    /// master's return or end. Returns whether the thread still holds the master.
    pub(super) fn collect_reader(&mut self, terminal: LocalTerminal, token: Token) -> bool {
        if !self.host.reader.holds(token) {
            return false;
        }
        if self.pace(terminal, token) {
            return true;
        }
        let mut bytes = std::mem::take(&mut self.host.reader.bytes);
        let gather = gather_of(&self.engine, terminal);
        let collected = self.host.reader.collect(token, &mut bytes, gather);
        self.feed_read(terminal, &bytes, collected.last_read);
        bytes.clear();
        self.host.reader.bytes = bytes;
        if let Some(end) = collected.end {
            if let End::Failed(e) = end {
                warn!(%terminal, error = %e, "reading the terminal failed");
            }
            self.host.master_eof(terminal);
            return false;
        }
        if collected.returned {
            self.watch_again(terminal);
        }
        self.host.reader.holds(token)
    }

    /// [OUTPUT.READER.5] Whether `terminal`'s output is held back now: a live viewer holds
    /// more than half its output budget and reads on, the child runs, and the hold is younger
    /// than [`PACE_BOUND`]. The bytes stay with the thread, which stops at its bound, so the
    /// program waits for the viewer as it waits for a reader that is slow.
    fn pace(&mut self, terminal: LocalTerminal, token: Token) -> bool {
        let running = self
            .host
            .terminals
            .get(&terminal)
            .is_some_and(|t| t.exited().is_none() && !t.killing());
        if !running || self.upgrade.quiescing() || !self.engine.output_behind(terminal) {
            self.paces.held.remove(&terminal);
            return false;
        }
        let now = self.host.clock.now();
        let pace = self.paces.held.entry(terminal).or_insert(Pace {
            token,
            since: now,
            spent: false,
        });
        if !pace.spent && now < pace.since + PACE_BOUND {
            return true;
        }
        pace.spent = true;
        false
    }

    /// The held terminals whose viewer caught up or whose hold ran out: fed now.
    pub(super) fn pace_check(&mut self) {
        if self.paces.held.is_empty() {
            return;
        }
        let terminals = &self.host.terminals;
        self.paces.held.retain(|t, _| terminals.contains_key(t));
        if self.paces.held.values().all(|p| p.spent) {
            return;
        }
        let held: Vec<(LocalTerminal, Token)> = self
            .paces
            .held
            .iter()
            .filter(|(_, p)| !p.spent)
            .map(|(&t, p)| (t, p.token))
            .collect();
        for (terminal, token) in held {
            if !self.collect_reader(terminal, token) {
                self.paces.held.remove(&terminal);
            }
        }
        self.feed_observed();
        self.flush();
    }

    /// Hands the engine bytes read ahead, in chunks of at most the engine's limit: every chunk
    /// bulk output but the last, which is as the last read was.
    fn feed_read(&mut self, terminal: LocalTerminal, bytes: &[u8], last_read: usize) {
        let mut pieces = bytes.chunks(gather_of(&self.engine, terminal)).peekable();
        while let Some(piece) = pieces.next() {
            let read = if pieces.peek().is_some() {
                FlushPolicy::BULK_READ
            } else {
                last_read
            };
            self.feed_output(terminal, piece, read);
        }
    }

    /// The loop reads `terminal`'s master again: watched in its poll, which reports at once
    /// what it holds.
    fn watch_again(&mut self, terminal: LocalTerminal) {
        let host = &mut self.host;
        if let Some(t) = host.terminals.get_mut(&terminal)
            && !t.eof()
            && let Err(e) = t.set_reading(host.poll.registry(), true)
        {
            warn!(%terminal, error = %e, "cannot watch a master again");
        }
    }

    /// [OUTPUT.READER.3] Before an upgrade's image: every master back from the reader thread,
    /// every byte it read fed. Returns whether it holds none now.
    pub(super) fn recall_reader(&mut self) -> bool {
        if !self.host.reader.holds_any() {
            return true;
        }
        if !self.host.reader.recall_all(RECALL_BOUND) {
            warn!("the PTY reader thread did not give its masters back in time");
        }
        self.on_reader();
        for token in self.host.reader.held() {
            if let Some(Source::Master(terminal)) = self.host.sources.get(token) {
                self.collect_reader(terminal, token);
            }
        }
        !self.host.reader.holds_any()
    }

    /// [OUTPUT.READER.4] The thread failed: the loop takes every master back, with the bytes
    /// read for it, and reads them itself from now on.
    fn reader_failed(&mut self) {
        for (token, bytes) in self.host.reader.abandon() {
            if let Some(Source::Master(terminal)) = self.host.sources.get(token) {
                self.feed_read(terminal, &bytes, 0);
                self.watch_again(terminal);
            }
        }
    }
}

/// The engine's chunk for `terminal`'s output: what the thread gathers before it tells the
/// loop, and what the loop feeds at a time ([OUTPUT.GATHER.1]).
fn gather_of(engine: &ServerEngine, terminal: LocalTerminal) -> usize {
    engine
        .output_gather_limit(terminal)
        .max(FlushPolicy::MASTER_READ)
}
