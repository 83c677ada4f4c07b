//! Terminals whose program exited, kept for a while with their last screen and exit status
//! ([TERMINAL.REMAIN.1], tmux's `remain-on-exit`, abduco's exited sessions): read with
//! GET_SCREEN and GET_TERMINAL_STATE, listed by GET_STATE, shown by ATTACH_TERMINAL (its screen,
//! then TERMINAL_CLOSED again) and dismissed by KILL_TERMINAL. Everything else treats the id
//! as gone ([TERMINAL.CLOSED.4]). Bounded in number and age ([SERVER.REMAIN.1],
//! [SERVER.REMAIN.2]), and counted in the models budget, where they give way first
//! ([SERVER.REMAIN.3]).

use std::collections::BTreeMap;
use std::time::Duration;

use super::LocalTerminal;
use super::terminal::Terminal;
use crate::time::Instant;

/// The exited terminals kept, by id, each with when it exited.
#[derive(Clone, Debug, Default)]
pub(super) struct Remains {
    kept: BTreeMap<LocalTerminal, Kept>,
}

#[derive(Clone, Debug)]
struct Kept {
    terminal: Terminal,
    /// When it exited; `None` when it came through an upgrade's image, which does not carry
    /// it: stamped with the first `now` the new engine sees ([`Remains::stamp`]).
    since: Option<Instant>,
}

impl Remains {
    /// Keeps `terminal` (exited at `now`); then, past `max`, dismisses the oldest.
    pub(super) fn keep(&mut self, now: Instant, terminal: Terminal, max: usize) {
        if max == 0 {
            return;
        }
        self.kept.insert(
            terminal.id(),
            Kept {
                terminal,
                since: Some(now),
            },
        );
        // [SERVER.REMAIN.1] The oldest give way to the newest.
        while self.kept.len() > max {
            if self.dismiss_oldest().is_none() {
                break;
            }
        }
    }

    /// Terminals restored from an upgrade's image, their exit time unknown until [`Self::stamp`].
    pub(super) fn restore(&mut self, terminal: Terminal) {
        self.kept.insert(
            terminal.id(),
            Kept {
                terminal,
                since: None,
            },
        );
    }

    /// Gives those restored from an image the exit time `now`: their age restarts at an
    /// upgrade rather than being guessed.
    pub(super) fn stamp(&mut self, now: Instant) {
        for kept in self.kept.values_mut() {
            kept.since.get_or_insert(now);
        }
    }

    pub(super) fn get(&self, id: LocalTerminal) -> Option<&Terminal> {
        self.kept.get(&id).map(|k| &k.terminal)
    }

    pub(super) fn get_mut(&mut self, id: LocalTerminal) -> Option<&mut Terminal> {
        self.kept.get_mut(&id).map(|k| &mut k.terminal)
    }

    pub(super) fn contains(&self, id: LocalTerminal) -> bool {
        self.kept.contains_key(&id)
    }

    /// KILL_TERMINAL of a kept terminal: it is dismissed. Whether it was kept.
    pub(super) fn dismiss(&mut self, id: LocalTerminal) -> bool {
        self.kept.remove(&id).is_some()
    }

    /// Dismisses the one that exited first (by id among equals); its id.
    pub(super) fn dismiss_oldest(&mut self) -> Option<LocalTerminal> {
        let oldest = self
            .kept
            .iter()
            .min_by_key(|(id, k)| (k.since, **id))
            .map(|(id, _)| *id)?;
        self.kept.remove(&oldest);
        Some(oldest)
    }

    /// The kept terminals, in id order.
    pub(super) fn terminals(&self) -> impl Iterator<Item = &Terminal> + '_ {
        self.kept.values().map(|k| &k.terminal)
    }

    pub(super) fn len(&self) -> usize {
        self.kept.len()
    }

    /// When the first one is due to be dismissed for its age (`keep_for` after it exited).
    pub(super) fn poll_timeout(&self, keep_for: Duration) -> Option<Instant> {
        self.kept
            .values()
            .filter_map(|k| k.since)
            .min()
            .map(|since| since.saturating_add(keep_for))
    }

    /// [SERVER.REMAIN.2] Dismisses every one kept `keep_for` or longer.
    pub(super) fn handle_timeout(&mut self, now: Instant, keep_for: Duration) {
        self.kept.retain(|_, k| {
            k.since
                .is_none_or(|since| now.saturating_duration_since(since) < keep_for)
        });
    }
}
