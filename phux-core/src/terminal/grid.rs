//! The cell grid: compact cells, rows with a "used" bound, and a ring of rows per screen.
//!
//! Built for throughput: a cell is 12 bytes (a `char` and two packed colour/attribute words),
//! every row knows how far it may hold anything but blanks (`used`) so clearing or retiring a
//! row touches only that much, and the screen is a ring of rows so scrolling the whole screen
//! is a rotation of the ring's start, not a move of the grid.

/// Colour kinds, in bits 24-25 of a colour word.
const KIND_SHIFT: u32 = 24;
const KIND_IDX: u32 = 1 << KIND_SHIFT;
const KIND_RGB: u32 = 2 << KIND_SHIFT;
const KIND_MASK: u32 = 3 << KIND_SHIFT;
/// The colour proper: the kind plus an index or 24-bit RGB value.
pub(crate) const COLOR_MASK: u32 = KIND_MASK | 0x00ff_ffff;

// Text attributes, in the foreground word above its colour.
pub(crate) const BOLD: u32 = 1 << 26;
pub(crate) const DIM: u32 = 1 << 27;
pub(crate) const ITALIC: u32 = 1 << 28;
pub(crate) const UNDERLINE: u32 = 1 << 29;
pub(crate) const INVERSE: u32 = 1 << 30;
pub(crate) const ATTR_MASK: u32 = BOLD | DIM | ITALIC | UNDERLINE | INVERSE;

// Cell shape flags, in the background word above its colour.
/// The left half of a double-width character.
pub(crate) const WIDE: u32 = 1 << 26;
/// The right half of a double-width character (holds no character of its own).
pub(crate) const WIDE_CONT: u32 = 1 << 27;

/// A colour as the GET_SCREEN document and the bootstrap see it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Color {
    Default,
    Idx(u8),
    Rgb(u8, u8, u8),
}

impl Color {
    pub(crate) fn pack(self) -> u32 {
        match self {
            Self::Default => 0,
            Self::Idx(i) => KIND_IDX | u32::from(i),
            Self::Rgb(r, g, b) => {
                KIND_RGB | (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b)
            }
        }
    }

    pub(crate) fn unpack(word: u32) -> Self {
        match word & KIND_MASK {
            KIND_IDX => Self::Idx(word as u8),
            KIND_RGB => Self::Rgb((word >> 16) as u8, (word >> 8) as u8, word as u8),
            _ => Self::Default,
        }
    }
}

/// The pen: colours and attributes applied to what is written next.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Pen {
    /// Foreground colour plus [`ATTR_MASK`] bits.
    pub(crate) fg: u32,
    /// Background colour.
    pub(crate) bg: u32,
}

impl Pen {
    pub(crate) fn has(self, attr: u32) -> bool {
        self.fg & attr != 0
    }
}

/// One screen cell. `ch == '\0'` is a cell nothing was written to (or one that was erased):
/// it shows as a blank, but unlike a written space it has no contents.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Cell {
    pub(crate) ch: char,
    /// Foreground colour and text attributes.
    pub(crate) fg: u32,
    /// Background colour and the [`WIDE`] / [`WIDE_CONT`] flags.
    pub(crate) bg: u32,
}

impl Cell {
    /// Never written, default style.
    pub(crate) const BLANK: Self = Self {
        ch: '\0',
        fg: 0,
        bg: 0,
    };

    pub(crate) fn new(ch: char, pen: Pen) -> Self {
        Self {
            ch,
            fg: pen.fg,
            bg: pen.bg,
        }
    }

    /// An erased cell: no contents, the given style (erases keep the pen, as in vt100).
    pub(crate) fn erased(pen: Pen) -> Self {
        Self::new('\0', pen)
    }

    pub(crate) fn pen(self) -> Pen {
        Pen {
            fg: self.fg,
            bg: self.bg & COLOR_MASK,
        }
    }

    pub(crate) fn is_wide(self) -> bool {
        self.bg & WIDE != 0
    }

    pub(crate) fn is_wide_cont(self) -> bool {
        self.bg & WIDE_CONT != 0
    }

    pub(crate) fn has_contents(self) -> bool {
        self.ch != '\0'
    }

    /// Whether any style differs from the default.
    pub(crate) fn styled(self) -> bool {
        self.fg != 0 || self.bg & COLOR_MASK != 0
    }
}

/// A combining mark: the column of the cell it belongs to and the mark.
pub(crate) type Mark = (u16, char);

/// One row of cells.
///
/// Invariant: `cells.len()` is the grid's width, and every cell at or after `used` is
/// [`Cell::BLANK`] with no marks, so clearing a row or retiring it into history costs `used`,
/// not the width.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) cells: Vec<Cell>,
    used: u16,
    /// The text continues on the next row (it was wrapped, not ended by a line break).
    pub(crate) wrapped: bool,
    /// Combining marks, rare enough to keep outside the cells; in no particular order.
    pub(crate) marks: Vec<Mark>,
}

impl Row {
    pub(crate) fn new(cols: u16) -> Self {
        Self {
            cells: vec![Cell::BLANK; usize::from(cols)],
            used: 0,
            wrapped: false,
            marks: Vec::new(),
        }
    }

    pub(crate) fn cols(&self) -> u16 {
        self.cells.len() as u16
    }

    /// How far cells may be non-blank: cells at or after this are [`Cell::BLANK`].
    pub(crate) fn used(&self) -> u16 {
        self.used
    }

    /// Back to a fresh row, touching only the used cells.
    #[inline]
    pub(crate) fn reset(&mut self) {
        let used = usize::from(self.used);
        // Short rows (`yes`, a progress bar's line) are common: no call to memset for them.
        match used {
            0 => {}
            1 => self.cells[0] = Cell::BLANK,
            2 => {
                self.cells[0] = Cell::BLANK;
                self.cells[1] = Cell::BLANK;
            }
            _ => self.cells[..used].fill(Cell::BLANK),
        }
        self.used = 0;
        self.wrapped = false;
        self.marks.clear();
    }

    /// Declares that cells up to `end` (exclusive) may now be written.
    #[inline]
    pub(crate) fn touch(&mut self, end: u16) {
        if end > self.used {
            self.used = end.min(self.cols());
        }
    }

    /// Drops the marks of the cells in `start..end`.
    #[inline]
    pub(crate) fn drop_marks(&mut self, start: u16, end: u16) {
        if !self.marks.is_empty() {
            self.marks.retain(|&(col, _)| col < start || col >= end);
        }
    }

    /// The marks of the cell at `col`, in the order they were written.
    pub(crate) fn marks_at(&self, col: u16) -> impl Iterator<Item = char> + '_ {
        self.marks
            .iter()
            .filter(move |&&(c, _)| c == col)
            .map(|&(_, m)| m)
    }

    /// Sets cells `start..end` to `cell` (with their marks dropped).
    pub(crate) fn fill(&mut self, start: u16, end: u16, cell: Cell) {
        let end = end.min(self.cols());
        if start >= end {
            return;
        }
        self.drop_marks(start, end);
        if cell == Cell::BLANK {
            // Nothing past `used` needs writing, and a fill reaching it shrinks it.
            let stop = end.min(self.used);
            if start < stop {
                self.cells[usize::from(start)..usize::from(stop)].fill(cell);
            }
            if end >= self.used && start < self.used {
                self.used = start;
            }
        } else {
            self.cells[usize::from(start)..usize::from(end)].fill(cell);
            self.touch(end);
        }
    }

    /// Changes the width, keeping the cells that still fit.
    pub(crate) fn resize(&mut self, cols: u16) {
        self.cells.resize(usize::from(cols), Cell::BLANK);
        self.used = self.used.min(cols);
        self.marks.retain(|&(col, _)| col < cols);
        // A wide character cut in half by the new edge becomes a blank, marks and all.
        if let Some(last) = self.cells.last_mut()
            && last.is_wide()
        {
            *last = Cell::erased(last.pen());
            self.drop_marks(cols - 1, cols);
        }
        self.wrapped = false;
    }

    /// The row's text as UTF-8: empty cells as spaces, continuation halves skipped, marks
    /// after their cell, trailing spaces removed. Appends to `out`.
    #[inline]
    pub(crate) fn write_text(&self, out: &mut Vec<u8>) {
        let cells = &self.cells[..usize::from(self.used)];
        let put = |out: &mut Vec<u8>, c: char| {
            if c.is_ascii() {
                out.push(c as u8);
            } else {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
        };
        if !self.marks.is_empty() {
            let mut text = String::new();
            for (col, cell) in cells.iter().enumerate() {
                if !cell.is_wide_cont() {
                    text.push(if cell.has_contents() { cell.ch } else { ' ' });
                    text.extend(self.marks_at(col as u16));
                }
            }
            text.trim_end_matches(' ').chars().for_each(|c| put(out, c));
            return;
        }
        // Without marks a trailing blank is a blank cell: trim before writing.
        let end = cells
            .iter()
            .rposition(|c| !matches!(c.ch, ' ' | '\0') || c.is_wide_cont())
            .map_or(0, |i| i + 1);
        // Rows of printable ASCII are most of any output (a wide character's halves are never
        // ASCII, a blank is '\0'): copied cell by cell into place, with none of `push`'s
        // length bookkeeping per byte; anything else takes the general path below.
        let start = out.len();
        out.resize(start + end, 0);
        let mut ascii = true;
        for (byte, cell) in out[start..].iter_mut().zip(&cells[..end]) {
            *byte = cell.ch as u8;
            ascii &= matches!(cell.ch, ' '..='~');
        }
        if ascii {
            return;
        }
        out.truncate(start);
        for cell in &cells[..end] {
            if !cell.is_wide_cont() {
                put(out, if cell.has_contents() { cell.ch } else { ' ' });
            }
        }
    }

    /// The row's text (see [`write_text`](Self::write_text)).
    pub(crate) fn text(&self) -> String {
        let mut bytes = Vec::new();
        self.write_text(&mut bytes);
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// The heap bytes this row holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.cells.capacity() * size_of::<Cell>() + self.marks.capacity() * size_of::<Mark>()
    }
}

/// One screen's rows as a ring: visual row `y` is `rows[(top + y) % len]`.
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    rows: Vec<Row>,
    top: usize,
    cols: u16,
}

impl Grid {
    pub(crate) fn new(cols: u16, rows: u16) -> Self {
        Self {
            rows: (0..rows).map(|_| Row::new(cols)).collect(),
            top: 0,
            cols,
        }
    }

    pub(crate) fn cols(&self) -> u16 {
        self.cols
    }

    pub(crate) fn rows(&self) -> u16 {
        self.rows.len() as u16
    }

    #[inline]
    fn index(&self, y: u16) -> usize {
        let i = self.top + usize::from(y);
        if i >= self.rows.len() {
            i - self.rows.len()
        } else {
            i
        }
    }

    pub(crate) fn row(&self, y: u16) -> &Row {
        &self.rows[self.index(y)]
    }

    #[inline]
    pub(crate) fn row_mut(&mut self, y: u16) -> &mut Row {
        let i = self.index(y);
        &mut self.rows[i]
    }

    /// Visual rows top to bottom.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Row> {
        let (tail, head) = self.rows.split_at(self.top);
        head.iter().chain(tail)
    }

    /// The top visual row.
    #[inline]
    pub(crate) fn top_row(&self) -> &Row {
        &self.rows[self.top]
    }

    /// Scrolls the whole screen up by one: the top row becomes the (reset) bottom row. O(1)
    /// apart from the reset, which touches only the row's used cells. `retire` sees the top row
    /// before it is reset.
    #[inline]
    pub(crate) fn rotate_up(&mut self, retire: impl FnOnce(&Row)) {
        let top = self.top;
        retire(&self.rows[top]);
        self.rows[top].reset();
        self.top = if top + 1 == self.rows.len() {
            0
        } else {
            top + 1
        };
    }

    /// Scrolls rows `top..=bottom` up by `n`: the rows leaving the top are passed to `retire`
    /// (oldest first) and come back blank at the bottom.
    #[inline]
    pub(crate) fn scroll_up(
        &mut self,
        top: u16,
        bottom: u16,
        n: u16,
        mut retire: impl FnMut(&Row),
    ) {
        let span = bottom - top + 1;
        let n = n.min(span);
        if top == 0 && bottom + 1 == self.rows() {
            for _ in 0..n {
                self.rotate_up(&mut retire);
            }
            return;
        }
        for y in top..top + n {
            retire(self.row(y));
            self.row_mut(y).reset();
        }
        self.rotate_range(top, bottom, n, true);
    }

    /// Scrolls rows `top..=bottom` down by `n`: blank rows come in at the top.
    pub(crate) fn scroll_down(&mut self, top: u16, bottom: u16, n: u16) {
        let span = bottom - top + 1;
        let n = n.min(span);
        for y in bottom + 1 - n..=bottom {
            self.row_mut(y).reset();
        }
        self.rotate_range(top, bottom, n, false);
    }

    /// Rotates the visual rows `top..=bottom` by `n` (left = towards the top).
    fn rotate_range(&mut self, top: u16, bottom: u16, n: u16, left: bool) {
        let span = usize::from(bottom - top + 1);
        let n = usize::from(n) % span.max(1);
        if n == 0 {
            return;
        }
        // Rows are swapped, never copied: a swap moves three words per Vec.
        let idx = |g: &Self, k: usize| g.index(top + k as u16);
        let rot = if left { n } else { span - n };
        // Rotation by successive reversals: rev(0..rot), rev(rot..span), rev(0..span).
        let reverse = |g: &mut Self, mut a: usize, mut b: usize| {
            while a + 1 < b {
                let (i, j) = (idx(g, a), idx(g, b - 1));
                g.rows.swap(i, j);
                a += 1;
                b -= 1;
            }
        };
        reverse(self, 0, rot);
        reverse(self, rot, span);
        reverse(self, 0, span);
    }

    /// Resizes to `cols` x `rows`. Rows leaving the top are passed to `retire`; `keep_bottom`
    /// says how many rows may go from the bottom first (those below the cursor).
    pub(crate) fn resize(
        &mut self,
        cols: u16,
        rows: u16,
        below_cursor: u16,
        mut retire: impl FnMut(&Row),
    ) -> u16 {
        // Straighten the ring so visual order is storage order.
        self.rows.rotate_left(self.top);
        self.top = 0;
        let old = self.rows();
        let mut pushed = 0;
        if rows < old {
            let excess = old - rows;
            let from_bottom = excess.min(below_cursor);
            self.rows.truncate(usize::from(old - from_bottom));
            pushed = excess - from_bottom;
            for row in self.rows.drain(..usize::from(pushed)) {
                retire(&row);
            }
        } else {
            self.rows.resize_with(usize::from(rows), || Row::new(cols));
        }
        for row in &mut self.rows {
            if row.cols() != cols {
                row.resize(cols);
            }
        }
        if let Some(last) = self.rows.last_mut() {
            last.wrapped = false;
        }
        self.cols = cols;
        pushed
    }

    /// Every row reset.
    pub(crate) fn clear(&mut self) {
        for row in &mut self.rows {
            row.reset();
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<Row>()
            + self.rows.iter().map(Row::heap_bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(g: &Grid) -> Vec<String> {
        g.iter().map(Row::text).collect()
    }

    fn put(g: &mut Grid, y: u16, s: &str) {
        let row = g.row_mut(y);
        for (x, ch) in s.chars().enumerate() {
            row.cells[x] = Cell::new(ch, Pen::default());
        }
        row.touch(s.len() as u16);
    }

    #[test]
    fn colours_pack_and_unpack() {
        for c in [
            Color::Default,
            Color::Idx(0),
            Color::Idx(255),
            Color::Rgb(1, 2, 255),
        ] {
            assert_eq!(Color::unpack(c.pack()), c);
        }
        assert_eq!(size_of::<Cell>(), 12, "cells stay compact");
    }

    #[test]
    fn full_screen_scroll_rotates_and_region_scroll_swaps() {
        let mut g = Grid::new(4, 4);
        for (y, s) in ["a", "b", "c", "d"].iter().enumerate() {
            put(&mut g, y as u16, s);
        }
        let mut gone = Vec::new();
        g.scroll_up(0, 3, 1, |r| gone.push(r.text()));
        assert_eq!(gone, ["a"]);
        assert_eq!(text(&g), ["b", "c", "d", ""]);
        g.scroll_up(1, 2, 1, |_| {});
        assert_eq!(text(&g), ["b", "d", "", ""]);
        g.scroll_down(0, 2, 2);
        assert_eq!(text(&g), ["", "", "b", ""]);
        g.scroll_down(0, 3, 9);
        assert_eq!(text(&g), ["", "", "", ""]);
    }

    #[test]
    fn blank_fills_shrink_used() {
        let mut r = Row::new(10);
        r.fill(0, 6, Cell::new('x', Pen::default()));
        assert_eq!(r.used(), 6);
        r.fill(3, 10, Cell::BLANK);
        assert_eq!(r.used(), 3);
        r.fill(5, 8, Cell::erased(Pen { fg: 0, bg: 4 }));
        assert_eq!(r.used(), 8);
        assert_eq!(r.text(), "xxx");
    }
}
