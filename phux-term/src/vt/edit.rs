//! Erase, insert, delete and scroll.

use super::Vt;
use crate::grid::{
    BG_ATTR_MASK, Cell, DOUBLE_UNDERLINE, INVERSE, Pen, Row, STRIKETHROUGH, UNDERLINE,
};

impl Vt {
    /// Erases cells `start..end` of row `y`, leaving them the [`Self::erase_pen`]. A wide
    /// character cut by either edge goes entirely.
    /// What erased cells keep of the pen: the background colour only. [xterm] `ClearCells`
    /// clears every attribute of the cells it erases (inverse, underline and the rest) and keeps
    /// the colours; the foreground of a blank cell shows nowhere, so it is not kept either.
    pub(super) fn erase_pen(&self) -> Pen {
        Pen {
            fg: 0,
            bg: self.pen.bg & !BG_ATTR_MASK,
        }
    }

    /// Whether erasing leaves a background colour (otherwise new blanks are already right).
    #[inline]
    pub(super) fn erase_coloured(&self) -> bool {
        self.pen.bg & !BG_ATTR_MASK != 0
    }

    /// [xterm] Rows `from..to` that scrolling, line insertion or a cleared screen brought in are
    /// erased as ED
    /// erases (`ClearCells` with the background colour): only when there is one to keep.
    // Cold: a background colour is rare when rows scroll in, and this keeps `linefeed` small
    // enough to stay inlined in the text loop.
    #[cold]
    #[inline(never)]
    pub(super) fn colour_new_rows(&mut self, from: u16, to: u16) {
        if self.erase_coloured() {
            for y in from..to.min(self.rows) {
                self.erase_cells(y, 0, self.cols);
            }
        }
    }

    pub(super) fn erase_cells(&mut self, y: u16, start: u16, end: u16) {
        if start >= end {
            return;
        }
        let pen = self.erase_pen();
        let (s, e) = (usize::from(start), usize::from(end));
        {
            let cells = &self.screen.row(y).cells;
            if (s > 0 && cells[s].is_wide_cont()) || cells.get(e).is_some_and(|c| c.is_wide_cont())
            {
                // Alacritty leaves the half outside the range as it was.
                self.hazard();
            }
        }
        let row = self.screen.row_mut(y);
        let style = row.intern(pen, start, end);
        // [xterm] `ClearRight` / `ClearLeft` clear the rest of a wide character the range cuts
        // (`DamagedCurCells`, `ClearInLine2`) as they clear the range: in the pen's colours.
        if row.cells[s].is_wide_cont() && s > 0 {
            row.cells[s - 1] = Cell::erased(style);
            row.drop_marks(start - 1, start);
        }
        if row.cells[e - 1].is_wide() && e < row.cells.len() {
            row.cells[e] = Cell::erased(style);
        }
        row.fill(start, end, Cell::erased(style));
    }

    /// EL. [xterm] Only `ClearRight` (EL 0) ends the row's soft wrap ("with the right part
    /// cleared, we can't be wrapping"); `ClearLeft` (EL 1) and `ClearLine` (EL 2) leave it.
    pub(super) fn erase_line(&mut self, mode: u16) {
        self.reset_wrap();
        let (x, y) = (self.cur.x, self.cur.y);
        match mode {
            0 => self.erase_right(x, self.cols),
            1 => self.erase_cells(y, 0, x + 1),
            2 => self.erase_cells(y, 0, self.cols),
            _ => {}
        }
    }

    /// Erases whole rows `from..to`, which no longer soft-wrap. [xterm] `ClearBufRows` clears
    /// `LINEWRAPPED` of each row it clears.
    fn erase_rows(&mut self, from: u16, to: u16) {
        for r in from..to {
            self.erase_cells(r, 0, self.cols);
            self.screen.row_mut(r).wrapped = false;
        }
    }

    /// EL 0 and ECH: erases the cursor's row from `x` to `end`, and the row no longer
    /// soft-wraps. [xterm] `ClearRight` ends with `LineClrWrapped` whatever it erased.
    pub(super) fn erase_right(&mut self, x: u16, end: u16) {
        let y = self.cur.y;
        self.erase_cells(y, x, end);
        self.screen.row_mut(y).wrapped = false;
    }

    pub(super) fn erase_display(&mut self, mode: u16) {
        self.reset_wrap();
        let (x, y) = (self.cur.x, self.cur.y);
        // [xterm] `ClearBelow` is `ClearRight` and `ClearBufRows`, `ClearAbove` is
        // `ClearBufRows` and `ClearLeft` (which leaves the cursor row's soft wrap).
        match mode {
            0 => {
                self.erase_right(x, self.cols);
                self.erase_rows(y + 1, self.rows);
            }
            1 => {
                self.erase_rows(0, y);
                self.erase_cells(y, 0, x + 1);
            }
            2 => self.erase_rows(0, self.rows),
            // [SCREEN.JSON.3] ED 3 erases the retained history; the alternate screen has none.
            3 if !self.alt_active => self.history.clear(),
            _ => {}
        }
    }

    pub(super) fn insert_chars(&mut self, n: u16) {
        self.reset_wrap();
        let (x, y) = (self.cur.x, self.cur.y);
        let cols = self.cols;
        let n = n.min(cols - x);
        // The row's soft wrap stays: [xterm] neither `InsertChar` nor `ScrnInsertChar` clears
        // `LINEWRAPPED` (`ScrnDeleteChar` does, and so does DCH here).
        if n == 0 {
            return;
        }
        // [xterm] `InsertChar`: a wide character the cursor is inside of, and one the shift
        // would cut at the right margin, become blanks first (`DamagedCurCells`,
        // `ClearInLine`: the pen's colours).
        let edge = cols - n;
        // (Alacritty moves the halves apart: hazards.)
        if x > 0 && self.screen.row(y).cells[usize::from(x)].is_wide_cont() {
            self.hazard();
            self.erase_cells(y, x - 1, x + 1);
        }
        if edge > x && self.screen.row(y).cells[usize::from(edge)].is_wide_cont() {
            self.hazard();
            self.erase_cells(y, edge - 1, edge + 1);
        }
        let (xi, ni) = (usize::from(x), usize::from(n));
        let row = self.screen.row_mut(y);
        row.cells[xi..].rotate_right(ni);
        row.cells[xi..xi + ni].fill(Cell::BLANK);
        row.shift_marks_right(x, n);
        let used = row.used().saturating_add(n);
        row.touch(used);
        // [xterm] `InsertChar` clears the inserted cells with `ClearCells`: the background
        // colour shows in them.
        if self.erase_coloured() {
            self.erase_cells(y, x, x + n);
        }
    }

    pub(super) fn delete_chars(&mut self, n: u16) {
        self.reset_wrap();
        let x = self.cur.x;
        let row = self.screen.row_mut(self.cur.y);
        let cols = row.cols();
        let end = x.saturating_add(n).min(cols);
        row.wrapped = false;
        if x >= end {
            return;
        }
        let (from, to) = (usize::from(x), usize::from(end));
        // A wide character cut by either edge loses its other half: [xterm] `DeleteChar`
        // clears it first (`DamagedCurCells`, `ClearInLine`: the pen's colours).
        let cut_head = from > 0 && row.cells[from].is_wide_cont();
        let cut_tail = row.cells[to - 1].is_wide() && to < row.cells.len();
        if cut_head || cut_tail {
            // Alacritty leaves the other half as it was.
            self.hazard();
            let erase = self.erase_pen();
            let row = self.screen.row_mut(self.cur.y);
            if cut_head {
                let style = row.intern(erase, x - 1, x);
                row.cells[from - 1] = Cell::erased(style);
                row.drop_marks(x - 1, x);
            }
            if cut_tail {
                let style = row.intern(erase, end, end + 1);
                row.cells[to] = Cell::erased(style);
                row.drop_marks(end, end + 1);
            }
        }
        let row = self.screen.row_mut(self.cur.y);
        let count = to - from;
        row.cells[from..to].fill(Cell::BLANK);
        row.cells[from..].rotate_left(count);
        row.delete_marks(x, end);
        // The blanks came in at the end; nothing past the old extent moved in.
        let used = row.used();
        if used > x {
            let shrunk = used.saturating_sub(end - x).max(x);
            row.fill(shrunk, used, Cell::BLANK);
        }
        // [xterm] `DeleteChar` clears the cells that came in at the end with `ClearCells`.
        if self.erase_coloured() {
            self.erase_cells(self.cur.y, cols - (end - x), cols);
        }
    }

    /// IL (`CSI Ps L`). [xterm] `CASE_IL` moves the cursor to the left margin (the first
    /// column: no DECSLRM here) before `InsertLine`, inside the scroll region or not; ECMA-48
    /// IL moves the active position to the line home position too.
    pub(super) fn insert_lines(&mut self, n: u16) {
        if !self.home_for_line_edit() {
            return;
        }
        let y = self.cur.y;
        self.screen.scroll_down(y, self.bottom, n);
        self.screen.row_mut(self.bottom).wrapped = false;
        self.colour_new_rows(y, y.saturating_add(n).min(self.bottom + 1));
    }

    /// DL (`CSI Ps M`). [xterm] `CASE_DL` moves the cursor to the left margin before
    /// `DeleteLine`, as `CASE_IL` does; ECMA-48 DL likewise.
    pub(super) fn delete_lines(&mut self, n: u16) {
        if !self.home_for_line_edit() {
            return;
        }
        let y = self.cur.y;
        self.screen.scroll_up(y, self.bottom, n, |_| {});
        let bottom = self.bottom + 1;
        self.colour_new_rows(bottom.saturating_sub(n).max(y), bottom);
    }

    /// What IL and DL do first: the cursor to the first column, and whether the edit applies
    /// (the cursor's row is inside the scroll region). [xterm] `set_cur_col(screen,
    /// ScrnLeftMargin(xw))` runs whatever the row; `InsertLine` / `DeleteLine` then return at
    /// once outside the region, and only inside it reset the wrap (`ResetWrap`). Outside the
    /// region xterm leaves `do_wrap` set, a wrap pending over the first column; we drop it, as
    /// a pending wrap is kept only on the last column (the bootstrap rebuilds it by writing
    /// there), and keep xterm's `char_was_written` for a combining mark.
    fn home_for_line_edit(&mut self) -> bool {
        self.cur.x = 0;
        if self.cur.y < self.top || self.cur.y > self.bottom {
            self.cur.pending = false;
            return false;
        }
        self.reset_wrap();
        true
    }

    /// Scrolls the region up; rows leaving the top of the main screen go to history.
    #[inline]
    pub(super) fn scroll_up(&mut self, n: u16) {
        let keep = !self.alt_active && self.top == 0;
        let (top, bottom) = (self.top, self.bottom);
        if !keep {
            self.recycled_wrap_hazard();
        }
        let Self {
            screen, history, ..
        } = self;
        screen.scroll_up(top, bottom, n, |row: &Row| {
            if keep {
                history.push(row);
            }
        });
        if self.erase_coloured() {
            self.colour_new_rows((bottom + 1).saturating_sub(n).max(top), bottom + 1);
        }
    }

    /// The region scrolls up without its rows going to history (the alternate screen, a region
    /// below the top): the reference reuses the rows that leave as the new blank ones with
    /// their soft-wrap marks, and drops the marks of a region's rows it moves (a hazard when
    /// a row of the region has one).
    #[inline]
    #[allow(clippy::unused_self)]
    pub(super) fn recycled_wrap_hazard(&mut self) {
        #[cfg(any(test, feature = "generator"))]
        {
            if (self.top..=self.bottom).any(|y| self.screen.row(y).wrapped) {
                self.reference_hazard(super::ReferenceHazard::RecycledWrap);
            }
        }
    }

    pub(super) fn scroll_down(&mut self, n: u16) {
        self.screen.scroll_down(self.top, self.bottom, n);
        self.screen.row_mut(self.bottom).wrapped = false;
        let top = self.top;
        self.colour_new_rows(top, top.saturating_add(n).min(self.bottom + 1));
    }
}

/// Whether a blank cell in `a` shows as one in `b` does: the same background colour, and the
/// same of the attributes a blank shows (underline, double underline, inverse, strikethrough).
pub(super) fn looks_like(a: Pen, b: Pen) -> bool {
    const SHOWN_FG: u32 = UNDERLINE | INVERSE;
    const SHOWN_BG: u32 = DOUBLE_UNDERLINE | STRIKETHROUGH;
    let bg_colour = |p: Pen| p.bg & !BG_ATTR_MASK;
    bg_colour(a) == bg_colour(b)
        && a.fg & SHOWN_FG == b.fg & SHOWN_FG
        && a.bg & SHOWN_BG == b.bg & SHOWN_BG
}
