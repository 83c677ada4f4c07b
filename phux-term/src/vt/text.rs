//! Text: the ASCII fast path, characters wide and narrow, combining marks, autowrap and REP.

use unicode_width::UnicodeWidthChar as _;

use super::{MAX_CELL_BYTES, ReferenceHazard, Vt};
use crate::grid::{Cell, Pen};

impl Vt {
    /// A character follows a pending wrap: it wraps, or, with DECAWM reset since, it is written
    /// over the last column. [xterm] `DECRST 7` leaves `do_wrap` as it is (`srm_DECAWM` only
    /// changes the flag), and the write that finds `do_wrap` set wraps only under WRAPAROUND.
    fn take_pending_wrap(&mut self) {
        if self.autowrap {
            self.wrap();
        } else {
            self.cur.pending = false;
        }
    }

    /// A wide character about to wrap from the last column, which xterm leaves as it is and
    /// alacritty overwrites with a blank in the pen (its `LEADING_WIDE_CHAR_SPACER`, not
    /// compared while it keeps that flag, but a later write can take the flag away): a hazard
    /// unless the cell already shows as that blank would.
    fn wide_wrap_hazard(&mut self) {
        let row = self.screen.row(self.cur.y);
        let cell = row.cells[usize::from(self.cols - 1)];
        // Nor does alacritty shift the next row for IRM then (it decides before wrapping).
        if self.insert
            || cell.has_contents()
            || cell.is_wide_cont()
            || !super::edit::looks_like(row.pen(cell), self.pen)
        {
            self.hazard();
        }
    }

    /// IRM text shifting the row by `n` at once: alacritty shifts one character at a time,
    /// cutting a wide character that passes the right margin on the way (xterm shifts the run
    /// at once, as we do): a hazard when one would.
    #[cold]
    #[inline(never)]
    fn insert_run_hazard(&mut self, n: u16) {
        let (x, cols) = (self.cur.x, self.cols);
        let row = self.screen.row(self.cur.y);
        let from = x.max(cols.saturating_sub(n + 1));
        if (from..cols.saturating_sub(1)).any(|p| row.cells[usize::from(p)].is_wide()) {
            self.hazard();
            // (The reference too.)
            self.reference_hazard(ReferenceHazard::InsertRun);
        }
    }

    /// Wraps to the start of the next row, marking the row soft-wrapped when the cursor really
    /// moves on. [xterm] `WrapLine` marks the row it leaves (`LINEWRAPPED`) whatever its last
    /// cell holds: a wide character that did not fit the last column wraps its row too.
    fn wrap(&mut self) {
        let y = self.cur.y;
        let moves = y == self.bottom || y + 1 < self.rows;
        if !moves {
            // (xterm marks the row all the same: a mark that points at no next row, which the
            // bootstrap could not rebuild.)
            self.reference_hazard(ReferenceHazard::WrapInPlace);
        }
        self.screen.row_mut(y).wrapped = moves && self.rows > 1;
        self.linefeed();
        self.cur.x = 0;
    }

    /// Writes a run of printable ASCII bytes as the character sets show them: unmapped (one
    /// flag tested per run) unless GL holds another set or a single shift is pending.
    #[inline]
    pub(super) fn print_text(&mut self, run: &[u8]) {
        if self.charsets.active() {
            self.print_mapped(run);
        } else {
            self.print_ascii(run);
        }
    }

    /// [`print_text`](Self::print_text) through the sets: the first byte in a single shift's
    /// set, the rest in GL's, runs of bytes the set leaves as they are still in one go.
    #[inline(never)]
    fn print_mapped(&mut self, mut run: &[u8]) {
        if self.charsets.single != 0
            && let Some((&b, rest)) = run.split_first()
        {
            let set = self.charsets.next();
            self.print(set.map(b));
            // REP repeats the byte as written, mapped again then (see `repeat`).
            self.last_char = Some(char::from(b));
            run = rest;
        }
        let set = self.charsets.gl_set();
        while !run.is_empty() {
            let same = run
                .iter()
                .position(|&b| set.map(b) != char::from(b))
                .unwrap_or(run.len());
            if same > 0 {
                self.print_ascii(&run[..same]);
                run = &run[same..];
            } else {
                self.print(set.map(run[0]));
                self.last_char = Some(char::from(run[0]));
                run = &run[1..];
            }
        }
    }

    /// A character decoded from UTF-8 (or a replacement character): shown as it is, though it
    /// still ends a single shift (xterm applies the shift to the next character, whatever it
    /// is, and maps only GL bytes).
    pub(super) fn print_decoded(&mut self, c: char) {
        if self.charsets.single != 0 {
            self.charsets.next();
        }
        self.print(c);
    }

    /// Writes a run of printable ASCII: each row's share in one pass over its cells.
    #[inline]
    pub(super) fn print_ascii(&mut self, mut run: &[u8]) {
        let cols = self.cols;
        while let [.., last] = run {
            if self.cur.pending {
                self.take_pending_wrap();
            }
            let (x, y) = (self.cur.x, self.cur.y);
            let room = usize::from(cols - x);
            if !self.autowrap && run.len() > room {
                // Without autowrap the last column is overwritten again and again: only the
                // final character stays there. IRM: the characters before it pushed the row's
                // rest right (each one after it inserts at the last column, moving nothing
                // on), which also ends the row's soft wrap, however the run was split.
                if self.insert {
                    self.insert_run_hazard(room as u16);
                    self.insert_chars(room as u16 - 1);
                }
                self.put_ascii(y, x, &run[..room - 1]);
                self.put_ascii(y, cols - 1, std::slice::from_ref(last));
                self.cur.x = cols - 1;
                self.cur.pending = true;
                self.last_char = Some(char::from(*last));
                self.written = true;
                self.last_written = (cols - 1, y);
                return;
            }
            let (now, rest) = run.split_at(room.min(run.len()));
            if self.insert {
                // IRM: the row's rest moves right first; what passes the margin is lost.
                self.insert_run_hazard(now.len() as u16);
                self.insert_chars(now.len() as u16);
            }
            self.put_ascii(y, x, now);
            let nx = x + now.len() as u16;
            if nx >= cols {
                self.cur.x = cols - 1;
                self.cur.pending = true;
            } else {
                self.cur.x = nx;
            }
            run = rest;
            if run.is_empty() {
                self.last_char = now.last().map(|&b| char::from(b));
                self.written = true;
                self.last_written = (nx - 1, y);
            }
        }
    }

    /// Writes narrow characters at `x..x + text.len()` of row `y` (all within the row), with
    /// the pen (read here rather than passed: an argument fewer is a few instructions less per
    /// call, and `yes` makes a call per line).
    #[inline]
    fn put_ascii(&mut self, y: u16, x: u16, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let (start, end) = (usize::from(x), usize::from(x) + text.len());
        let cut = {
            let cells = &self.screen.row(y).cells;
            cells[start].is_wide_cont() || cells.get(end).is_some_and(|c| c.is_wide_cont())
        };
        if cut {
            self.blank_cut_halves(y, x, end as u16, true);
        }
        let pen = self.pen;
        let row = self.screen.row_mut(y);
        let style = row.intern(pen, x, end as u16);
        let cells = &mut row.cells[start..end];
        // A run of one (`yes`, an echoed key) is common enough to skip the unrolled loop's
        // set-up: about 3% of ingesting `yes`.
        if let [b] = text {
            cells[0] = Cell::ascii(*b, style);
        } else {
            for (cell, &b) in cells.iter_mut().zip(text) {
                *cell = Cell::ascii(b, style);
            }
        }
        row.drop_marks(x, end as u16);
        row.touch(end as u16);
    }

    /// Before cells `x..end` of row `y` are written: the other half of a wide character the
    /// write cuts becomes a blank. [xterm] `WriteText` finds them with `DamagedCurCells` and
    /// clears them with `ClearInLine` (`ClearCells`: the pen's colours, no attributes), except
    /// when the write starts at the last column, where `DamagedCells` finds nothing
    /// (`nn` is 0) and `ScrnWriteText` makes the first half a space that keeps its own style.
    #[cold]
    #[inline(never)]
    fn blank_cut_halves(&mut self, y: u16, x: u16, end: u16, narrow: bool) {
        let cols = self.cols;
        let erase = self.erase_pen();
        let row = self.screen.row(y);
        let (xi, ei) = (usize::from(x), usize::from(end));
        let lead = (x > 0 && row.cells[xi].is_wide_cont()).then(|| row.pen(row.cells[xi - 1]));
        let tail = (ei < row.cells.len() && row.cells[ei].is_wide_cont())
            .then(|| row.pen(row.cells[ei - 1]));
        // Alacritty keeps the wide character's own style on the half it leaves: a hazard
        // wherever that shows differently from the blank xterm leaves.
        for pen in [lead.filter(|_| x + 1 < cols), tail].into_iter().flatten() {
            if !super::edit::looks_like(pen, erase) {
                self.hazard();
            }
        }
        // The reference leaves a blank in the pen's colours where xterm keeps the first
        // half's own style (a write at the last column): a hazard where that shows.
        if let Some(pen) = lead.filter(|_| x + 1 == cols)
            && !super::edit::looks_like(pen, erase)
        {
            self.reference_hazard(ReferenceHazard::LastColumnCut);
        }
        let row = self.screen.row_mut(y);
        if lead.is_some() {
            if x + 1 == cols {
                row.cells[xi - 1] = row.cells[xi - 1].space_in_its_style();
            } else {
                let style = row.intern(erase, x - 1, x);
                row.cells[xi - 1] = Cell::erased(style);
            }
            row.drop_marks(x - 1, x);
        }
        if tail.is_some() {
            let style = row.intern(erase, end, end + 1);
            // `ClearCells` writes a space; we keep one where a narrow write cut the character
            // and empty the cell after a wide one (as vt100). Either way the row's soft wrap
            // stays: [xterm] neither `WriteText` nor `ClearInLine` touches `LINEWRAPPED`.
            if narrow {
                row.cells[ei] = Cell::new(' ', style);
            } else {
                row.cells[ei] = Cell::erased(style);
            }
            row.touch(end + 1);
        }
    }

    /// Prints one character (any width).
    pub(super) fn print(&mut self, c: char) {
        let Some(width) = c.width() else {
            // C0 / C1 controls never reach here as text; nothing to draw.
            return;
        };
        let width = width.min(2) as u16;
        if width == 0 {
            self.combine(c);
            return;
        }
        if width > self.cols {
            return;
        }
        let was_pending = self.cur.pending;
        if was_pending {
            self.take_pending_wrap();
        }
        if self.cur.x + width > self.cols {
            // A wide character at the last column. [xterm] `dotext` fits nothing there: with
            // DECAWM it wraps first (`force_wrap`), leaving the last column as it was; without,
            // the character is dropped and no wrap is pending.
            if self.autowrap {
                self.wide_wrap_hazard();
                let row = self.screen.row(self.cur.y);
                let last = row.cells[usize::from(self.cols - 1)];
                if last.has_contents()
                    || last.is_wide_cont()
                    || last.styled()
                    || self.pen != Pen::default()
                {
                    // (The reference blanks the column.)
                    self.reference_hazard(ReferenceHazard::WideWrapOver);
                }
                if self.insert {
                    // (The reference writes over the next row instead of inserting.)
                    self.reference_hazard(ReferenceHazard::WideWrapInsert);
                }
                self.wrap();
            } else {
                // Alacritty leaves a wrap pending; so does the reference when one was pending
                // and the character is as wide as the screen.
                self.hazard();
                if was_pending && width == self.cols {
                    self.reference_hazard(ReferenceHazard::WideDroppedPending);
                }
                self.last_char = Some(c);
                // (`dotext` still sets `char_was_written`, the column where it was.)
                self.written = true;
                return;
            }
        }
        if self.insert {
            // (Alacritty's shift by two turns a wide character it moves round: a hazard.)
            self.insert_run_hazard(width);
            self.insert_chars(width);
        }
        let (x, y) = (self.cur.x, self.cur.y);
        let end = x + width;
        let cut = {
            let cells = &self.screen.row(y).cells;
            cells[usize::from(x)].is_wide_cont()
                || cells
                    .get(usize::from(end))
                    .is_some_and(|c| c.is_wide_cont())
        };
        if cut {
            self.blank_cut_halves(y, x, end, width == 1);
        }
        let cols = self.cols;
        let pen = self.pen;
        let row = self.screen.row_mut(y);
        let style = row.intern(pen, x, end);
        let xi = usize::from(x);
        if width == 2 {
            row.cells[xi] = Cell::wide(c, style);
            row.cells[xi + 1] = Cell::WIDE_CONT;
        } else {
            row.cells[xi] = Cell::new(c, style);
        }
        row.drop_marks(x, end);
        row.touch(end);
        self.last_char = Some(c);
        self.written = true;
        self.last_written = (end - 1, y);
        let nx = x + width;
        if nx >= cols {
            self.cur.x = cols - 1;
            self.cur.pending = true;
        } else {
            self.cur.x = nx;
        }
    }

    /// The cell a combining mark joins: [xterm] the combining path of `doparsing` uses
    /// `last_written_col` / `last_written_row` while `char_was_written` (a character was
    /// written and no cursor motion or edit came since: `ResetWrap` clears it; a tab does
    /// not), else the cell under the cursor. Either way the first half of a wide character.
    pub(crate) fn mark_target(&self) -> (u16, u16) {
        let (x, y) = if self.written {
            self.last_written
        } else {
            (self.cur.x, self.cur.y)
        };
        let (x, y) = (x.min(self.cols - 1), y.min(self.rows - 1));
        let cells = &self.screen.row(y).cells;
        if x > 0 && cells[usize::from(x)].is_wide_cont() {
            (x - 1, y)
        } else {
            (x, y)
        }
    }

    /// A zero-width character joins a cell (see [`mark_target`](Self::mark_target)). One
    /// under the cursor that holds nothing gets it on a blank: xterm attaches it to a cell
    /// an erase left (a space there), but writes it as a character of its own (the cursor
    /// moving on) in a cell never written, which we do not tell apart; decided for the former
    /// (see `differential`, "a deliberate deviation").
    fn combine(&mut self, c: char) {
        // [xterm] The combining path of `doparsing` leaves `lastchar` as it was (it goes on
        // to the next character before the line that sets it): REP after a mark repeats the
        // character before it.
        let (base, y) = self.mark_target();
        let row = self.screen.row_mut(y);
        let bytes = row.cells[usize::from(base)].ch().len_utf8() + row.marks_len(base);
        if bytes >= MAX_CELL_BYTES {
            return;
        }
        let cell = &mut row.cells[usize::from(base)];
        if !cell.has_contents() {
            cell.set_ch(' ');
        }
        row.push_mark(base, c);
        row.touch(base + 1);
    }

    /// REP: the last graphic character `n` more times. [xterm] `CASE_REP` prints it `n` times
    /// (the count is already at most 65,535, as xterm caps parameters); the screen and history
    /// here end exactly as if it did, but the work is bounded by the screen's cells plus the
    /// history rows it pushes, not by `n`:
    ///
    /// once the character fills every row it can reach (at most the screen twice over), the
    /// state (screen and cursor) no longer changes from one row's worth of characters to the
    /// next, apart from the row each may push into history. One such row's worth is written
    /// and the state compared with the one before it: if equal, the remaining whole rows'
    /// worth would only push that same row again, so they become copies in the history
    /// (themselves bounded by its capacity) and only the remainder is written. If not (no case
    /// is known), the rest is written out: still at most 65,535 characters.
    pub(super) fn repeat(&mut self, n: u16) {
        let Some(raw) = self.last_char else {
            return;
        };
        // [xterm] `CASE_REP` passes `lastchar`, the character as the program wrote it, to
        // `dotext` with GL's set: a character a single shift mapped is repeated through GL.
        let c = match u8::try_from(raw) {
            Ok(b @ 0x20..=0x7e) => self.charsets.gl_set().map(b),
            _ => raw,
        };
        self.repeat_char(c, n);
        self.last_char = Some(raw);
    }

    fn repeat_char(&mut self, c: char, n: u16) {
        let width = match c.width() {
            Some(w @ 1..) => w.min(2) as u16,
            _ => return,
        };
        if width > self.cols {
            // Never drawn (see `print`): nothing to repeat.
            return;
        }
        let mut left = usize::from(n);
        let per_row = usize::from(self.cols / width);
        // Rows' worth of characters until every row the repetition can reach holds only `c`:
        // from a row in (or above) the region, down to its bottom and then the whole region
        // scrolled through, plus the rows begun and ended part-way; from below the region, the
        // cursor's row, rewritten in place.
        let (y, top, bottom) = (self.cur.y, self.top, self.bottom);
        let warm_rows = if y > bottom {
            2
        } else {
            usize::from(bottom - y) + usize::from(bottom - top) + 3
        };
        let warm = warm_rows * per_row;
        if left > warm + 2 * per_row {
            self.put_repeated(c, warm);
            left -= warm;
            let (screen, cur, pushed) = (self.screen.clone(), self.cur, self.history.pushed());
            self.put_repeated(c, per_row);
            left -= per_row;
            let periods = left / per_row;
            if self.cur == cur && self.screen.same_contents(&screen) {
                #[cfg(test)]
                {
                    self.rep_skipped += periods * per_row;
                }
                left -= periods * per_row;
                // The row a period pushes is the top row (the state is unchanged, so the row
                // that left the top was the same as the one now there).
                if self.history.pushed() != pushed {
                    self.history.push_copies(self.screen.top_row(), periods);
                }
            }
        }
        self.put_repeated(c, left);
    }

    /// Writes `c` `n` times.
    fn put_repeated(&mut self, c: char, n: usize) {
        if c.is_ascii() {
            let mut buf = [0u8; 256];
            buf.fill(c as u8);
            let mut left = n;
            while left > 0 {
                let k = left.min(buf.len());
                self.print_ascii(&buf[..k]);
                left -= k;
            }
        } else {
            let width = c.width().map_or(1, |w| w.clamp(1, 2)) as u16;
            let mut left = n;
            while left > 0 {
                // IRM: the characters that fit in the row push its rest right together, in one
                // shift of the row instead of one per character (the same cells result).
                let fit = usize::from(self.cols.saturating_sub(self.cur.x) / width);
                if self.insert && !self.cur.pending && fit > 1 {
                    let k = fit.min(left);
                    self.insert_run_hazard(k as u16 * width);
                    self.insert_chars(k as u16 * width);
                    self.insert = false;
                    for _ in 0..k {
                        self.print(c);
                    }
                    self.insert = true;
                    left -= k;
                } else {
                    self.print(c);
                    left -= 1;
                }
            }
        }
    }
}
