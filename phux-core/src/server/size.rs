//! A terminal's size: what TERMINAL_RESIZE asks for, and the size policy for several attached
//! clients ([SERVER.SIZE.1]): a terminal takes the smallest viewport among the connections
//! attached to it that said how large their screen is (VIEWPORT_RESIZE), as tmux's
//! `window-size smallest` does, so no attached client shows a screen larger than its own.
//! Those clients learn every new size from a fresh bootstrap ([SERVER.SIZE.3]).

use phux_proto::frame::TombstoneReason;

use super::lifecycle::{MAX_COLS, MAX_ROWS};
use super::{ConnId, LocalTerminal, ServerAction, ServerEngine};

impl ServerEngine {
    /// Resizes `local` to `cols` x `rows`, within the server's limits: the model, the PTY of a
    /// running child, and a new bootstrap for each viewer that declared a viewport.
    pub(super) fn set_size(&mut self, local: LocalTerminal, cols: u16, rows: u16) {
        let Some((now_cols, now_rows)) = self.terminals.get(&local).map(|t| t.state().size())
        else {
            return;
        };
        // [TERMINAL.RESIZE.3] Clamped to the largest size we model, so one frame cannot make the
        // server allocate a 65,535 × 65,535 grid.
        let mut cols = cols.clamp(1, MAX_COLS);
        let mut rows = rows.clamp(1, MAX_ROWS);
        while !self.screens_fit(cols, rows, Some(local)) && self.remains.dismiss_oldest().is_some()
        {
        }
        // [SERVER.LIMIT.7] Screens that would not fit grow along neither axis (what they hold
        // now fits, so a size no larger on either axis does).
        if !self.screens_fit(cols, rows, Some(local)) {
            cols = cols.min(now_cols);
            rows = rows.min(now_rows);
        }
        let Some(t) = self.terminals.get_mut(&local) else {
            return;
        };
        if t.resize(cols, rows) {
            self.actions.push_back(ServerAction::Resize {
                terminal: t.id(),
                cols,
                rows,
            });
        }
        self.enforce_models_budget();
        if (cols, rows) != (now_cols, now_rows) {
            self.bootstrap_sized_viewers(local);
        }
    }

    /// VIEWPORT_RESIZE from `id`: every terminal it is attached to is sized again.
    pub(super) fn on_viewport(&mut self, id: ConnId) {
        let viewed: Vec<LocalTerminal> = self
            .terminals
            .iter()
            .filter(|(_, t)| t.has_viewer(id))
            .map(|(&local, _)| local)
            .collect();
        for local in viewed {
            self.fit_to_viewports(local, None);
        }
    }

    /// [SERVER.SIZE.1] Sizes `local` to the smallest columns and the smallest rows among the
    /// viewports of its viewers (and of `joining`, about to be one); nothing when none of
    /// them declared a viewport ([SERVER.SIZE.2]: the size stays as it is).
    pub(super) fn fit_to_viewports(&mut self, local: LocalTerminal, joining: Option<ConnId>) {
        let Some(t) = self.terminals.get(&local) else {
            return;
        };
        let smallest = t
            .viewer_ids()
            .into_iter()
            .chain(joining)
            .filter_map(|conn| self.conns.get(&conn)?.viewport())
            .reduce(|(c1, r1), (c2, r2)| (c1.min(c2), r1.min(r2)));
        if let Some((cols, rows)) = smallest
            && (cols, rows) != t.state().size()
        {
            self.set_size(local, cols, rows);
        }
    }

    /// [SERVER.SIZE.3] A new size: each viewer that declared a viewport gets a new bootstrap
    /// at that size (after a TOMBSTONE of the current one, reason `Resize`), which is how it
    /// learns the size. Viewers that never sent VIEWPORT_RESIZE are left as phux has them.
    fn bootstrap_sized_viewers(&mut self, local: LocalTerminal) {
        let Some(t) = self.terminals.get(&local) else {
            return;
        };
        let sized: Vec<ConnId> = t
            .viewer_ids()
            .into_iter()
            .filter(|conn| self.conns.get(conn).is_some_and(|c| c.viewport().is_some()))
            .collect();
        for conn in sized {
            let Some((stream, tombstone)) = self
                .terminals
                .get_mut(&local)
                .and_then(|t| t.reattach(conn, TombstoneReason::Resize))
            else {
                continue;
            };
            if let Some(frame) = tombstone {
                self.send(conn, &frame);
            }
            self.start_bootstrap(conn, local, stream);
        }
    }
}
