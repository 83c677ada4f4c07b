//! Cursor motion, tab stops, line feeds, saved cursors, the alternate screen and reset.

use super::{Cursor, Saved, Vt};
use crate::grid::{Cell, Grid};

impl Vt {
    pub(super) fn set_x(&mut self, x: u16) {
        self.cur.x = x.min(self.cols - 1);
        self.reset_wrap();
    }

    /// CUP: `row` and `col` 0-based, relative to the scroll region in origin mode.
    pub(super) fn goto(&mut self, row: u16, col: u16) {
        let (lo, hi) = if self.origin {
            (self.top, self.bottom)
        } else {
            (0, self.rows - 1)
        };
        self.cur.y = lo.saturating_add(row).min(hi);
        self.set_x(col);
    }

    pub(super) fn cursor_up(&mut self, n: u16) {
        let min = if self.cur.y >= self.top { self.top } else { 0 };
        self.cur.y = self.cur.y.saturating_sub(n).max(min);
        self.reset_wrap();
    }

    pub(super) fn cursor_down(&mut self, n: u16) {
        let max = if self.cur.y <= self.bottom {
            self.bottom
        } else {
            self.rows - 1
        };
        self.cur.y = self.cur.y.saturating_add(n).min(max);
        self.reset_wrap();
    }

    pub(super) fn cursor_forward(&mut self, n: u16) {
        let x = self.cur.x.saturating_add(n);
        self.set_x(x);
    }

    /// HT and CHT. [xterm] `TabToNextStop` sets the column without resetting `do_wrap`: from
    /// the wrap-pending state the cursor stays on the last column, still pending, and the next
    /// character starts the next row.
    pub(super) fn tab_forward(&mut self, n: u16) {
        let mut x = self.cur.x;
        // Past `cols` steps the cursor is at the edge whatever the stops: bounded work.
        for _ in 0..n.min(self.cols) {
            let next = (usize::from(x) + 1..usize::from(self.cols)).find(|&c| self.tabs[c]);
            x = next.map_or(self.cols - 1, |c| c as u16);
        }
        self.cur.x = x;
    }

    pub(super) fn tab_backward(&mut self, n: u16) {
        let mut x = self.cur.x;
        for _ in 0..n.min(self.cols) {
            let prev = (0..usize::from(x)).rev().find(|&c| self.tabs[c]);
            x = prev.map_or(0, |c| c as u16);
        }
        self.set_x(x);
    }

    /// IND / LF: down one row, scrolling the region at its bottom.
    #[inline]
    pub(super) fn linefeed(&mut self) {
        let y = self.cur.y;
        if y == self.bottom {
            if self.top == 0 && y + 1 == self.rows {
                // The common case, spelled out so it compiles to a straight line: the whole
                // screen scrolls, its top row goes to history (main screen only).
                if self.alt_active {
                    self.recycled_wrap_hazard();
                } else {
                    self.history.push(self.screen.top_row());
                }
                self.screen.rotate_up(|_| {});
                if self.erase_coloured() {
                    self.colour_new_rows(y, y + 1);
                }
            } else {
                self.scroll_up(1);
            }
        } else if y + 1 < self.rows {
            self.cur.y = y + 1;
        }
        self.reset_wrap();
    }

    pub(super) fn reverse_index(&mut self) {
        if self.cur.y == self.top {
            self.scroll_down(1);
        } else {
            self.cur.y = self.cur.y.saturating_sub(1);
        }
        self.reset_wrap();
    }

    /// DECSC (and SCOSC, 1048, 1049). [xterm] `CursorSave` saves the wrap-pending flag with
    /// the position, and not DECAWM (not in `DECSC_FLAGS`).
    pub(super) fn save_cursor(&mut self) {
        self.saved[usize::from(self.alt_active)] = Saved {
            x: self.cur.x,
            y: self.cur.y,
            pending: self.cur.pending,
            pen: self.pen,
            origin: self.origin,
            charsets: self.charsets.saved(),
        };
    }

    /// DECRC. [xterm] `CursorRestore` moves with `CursorSet`, which in origin mode keeps the row
    /// at most at the bottom margin, then sets `do_wrap` from the saved flag, and leaves DECAWM
    /// as it is (a pending wrap with DECAWM off is taken as an overwrite).
    pub(super) fn restore_cursor(&mut self) {
        let s = self.saved[usize::from(self.alt_active)];
        let y = s.y.min(self.rows - 1);
        self.cur = Cursor {
            x: s.x.min(self.cols - 1),
            y: if s.origin { y.min(self.bottom) } else { y },
            pending: s.pending,
        };
        // (`CursorSet` calls `ResetWrap`; only `do_wrap` is given back.)
        self.written = false;
        self.pen = s.pen;
        self.origin = s.origin;
        self.charsets.restore(s.charsets);
    }

    /// DECALN (`ESC # 8`). [xterm] `CASE_DECALN`: resets the margins, homes the cursor and
    /// fills the screen with `E` (`ScrnFillRectangle` with no attributes).
    pub(super) fn screen_alignment(&mut self) {
        self.top = 0;
        self.bottom = self.rows - 1;
        self.goto(0, 0);
        let cols = self.cols;
        for y in 0..self.rows {
            let row = self.screen.row_mut(y);
            row.fill(0, cols, Cell::new('E', 0));
            row.wrapped = false;
        }
    }

    /// Shows the alternate (`true`) or main screen. The cursor is shared, as in xterm, but not
    /// its wrap-pending state. Where xterm differs: its `ToAlternate`, `FromAlternate` and
    /// `SwitchBufs` never touch `do_wrap`, so a bare 47 or 1047 switch keeps a pending wrap
    /// (1049 set and a 1047 reset clear the screen, and `ClearScreen` cancels it; 1049 reset
    /// restores the saved one). We drop it: the wrap would then be pending over the other
    /// screen's last column, empty as often as not, which the bootstrap could only make with a
    /// save and restore that overwrites a saved cursor.
    pub(super) fn switch_screen(&mut self, alternate: bool) {
        if alternate == self.alt_active {
            return;
        }
        if alternate && self.other.rows() != self.rows {
            self.other = Grid::new(self.cols, self.rows);
        }
        std::mem::swap(&mut self.screen, &mut self.other);
        self.alt_active = alternate;
        self.cur.pending = false;
    }

    pub(super) fn reset(&mut self) {
        let (cols, rows) = (self.cols, self.rows);
        let mut history = std::mem::take(&mut self.history);
        // [xterm] `CASE_RIS` is `VTReset(xw, True, True)`, whose `saved` flag discards the
        // saved lines (`ReallyReset`: `savedlines = 0`): the history goes with the screen.
        history.clear();
        let title = self.title.take();
        let bells = self.bells;
        let replies = std::mem::take(&mut self.replies);
        let tracker = std::mem::take(&mut self.tracker);
        *self = Self::new(cols, rows, 0);
        // The tracker applied RIS to the modes itself.
        self.tracker = tracker;
        // The history keeps its capacity; the title and unread bells stay.
        self.history = history;
        self.title = title;
        self.bells = bells;
        // Nor what it answered before the reset.
        self.replies = replies;
    }
}
