//! The cell grid: compact cells, rows with a "used" bound, and a ring of rows per screen.
//!
//! Built for throughput and memory: a cell is 6 bytes (a code point, two shape flags and a
//! style id), each row interns the styles its cells use in a small table of its own (the
//! default style is id 0 and in no table, so a row of plain text allocates nothing but its
//! cells), every row knows how far it may hold anything but blanks (`used`) so clearing or
//! retiring a row touches only that much, and the screen is a ring of rows so scrolling the
//! whole screen is a rotation of the ring's start, not a move of the grid.
//!
//! Cells never move from one row to another (scrolls move whole rows, a resize keeps or cuts
//! them, nothing reflows), so a style id only ever means something within its own row.
//!
//! By concern: `cell` packs cells, colours and pens; this file holds the rows and their style
//! tables; `ring` is the screen's ring of rows.

mod cell;
mod ring;
mod state;

use std::collections::BTreeMap;

pub(crate) use cell::{
    ATTR_MASK, BG_ATTR_MASK, BLINK, BOLD, Cell, Cells, Color, DIM, DOUBLE_UNDERLINE, INVERSE,
    INVISIBLE, ITALIC, Mark, Pen, STRIKETHROUGH, UNDERLINE,
};
pub(crate) use ring::Grid;

/// About what a marked cell costs in a row's map besides its marks' bytes: the key and the
/// string's header, with a node's share of slack.
const MARK_ENTRY: usize = 2 * (size_of::<u16>() + size_of::<String>());

/// The most a cell's marks string holds: its marks are under `MAX_CELL_BYTES` (18) bytes, and
/// a string grown by pushes has a capacity of 8, 16 or 32 by then. [`Row::heap_bytes`] counts
/// this for every marked cell rather than walk them: a row's count stays O(1), and a server
/// measuring a screen of marks (half a million of them) does not stall for it.
const MARKS_CAPACITY_BOUND: usize = 32;

/// About what a pen costs in a row's index: key and id, with a node's share of slack.
const INDEX_ENTRY: usize = 2 * (size_of::<(u32, u32)>() + size_of::<u16>());

/// A style table longer than this is also indexed by pen (a linear search of this many is as
/// quick as the tree, and most rows never need one).
const LINEAR_STYLES: usize = 32;

/// Rows reset to a style table of at most this many entries' capacity: enough for a
/// coloured prompt or listing line without a reallocation, little to keep per row.
const KEEP_STYLES: usize = 16;

/// One row of cells.
///
/// Invariants: `cells.len()` is the grid's width (its cells allocated once first written, see
/// [`Cells`]); every cell at or after `used` is [`Cell::BLANK`] with no marks, so clearing a row or retiring it into history costs `used`,
/// not the width; every cell's style id is 0 or names an entry of the row's table, and the
/// table holds each pen at most once and never the default, so two cells of one row are equal
/// exactly when their characters, shapes and pens are.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub(crate) cells: Cells,
    /// Marks and styles: absent until the row has either.
    extra: Option<Box<Extra>>,
    used: u16,
    /// The id [`intern`](Self::intern) found or added last: runs of one style look it up once.
    hint: u16,
    /// The text continues on the next row (it was wrapped, not ended by a line break).
    pub(crate) wrapped: bool,
}

/// The rare parts of a row, behind one pointer so a row of plain text stays small.
#[derive(Clone, Debug, Default)]
struct Extra {
    /// Combining marks, rare enough to keep outside the cells: per column, that cell's marks
    /// in the order they were written. A map, so that finding, adding or dropping one cell's
    /// marks costs a logarithm of the row's marked cells, never a pass over them all (a
    /// 1,024-column row of marked cells is cheap to make).
    marks: BTreeMap<u16, String>,
    /// The row's styles: id `n` is `styles[n - 1]`.
    styles: Vec<Pen>,
    /// Pen to id, once the table outgrows a short linear search: without it a row of many
    /// pens (one per cell of 1,024 columns) costs a pass over the table per new pen. Boxed:
    /// one word in the rows that never need it, which are nearly all.
    #[allow(clippy::box_collection)]
    index: Option<Box<BTreeMap<(u32, u32), u16>>>,
}

impl Row {
    pub(crate) fn new(cols: u16) -> Self {
        Self {
            cells: Cells::blank(cols),
            extra: None,
            used: 0,
            hint: 0,
            wrapped: false,
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
        self.hint = 0;
        if let Some(extra) = &mut self.extra {
            extra.reset();
        }
    }

    /// Declares that cells up to `end` (exclusive) may now be written.
    #[inline]
    pub(crate) fn touch(&mut self, end: u16) {
        if end > self.used {
            self.used = end.min(self.cols());
        }
    }

    /// The pen of `cell`, one of this row's cells.
    #[inline]
    pub(crate) fn pen(&self, cell: Cell) -> Pen {
        // Id 0 (and, were the row's invariant ever broken, an id it does not know) is the
        // default pen: a wrong colour is a better failure than a server that panics.
        self.extra
            .as_deref()
            .and_then(|e| e.styles.get(usize::from(cell.style).wrapping_sub(1)))
            .copied()
            .unwrap_or_default()
    }

    /// The style id under which `pen` is written to cells `start..end` (`start < end <=
    /// cols`), which the caller then overwrites: the row's id for `pen`, added to its table if
    /// missing. A full table is collected first, without counting those cells' styles.
    #[inline]
    pub(crate) fn intern(&mut self, pen: Pen, start: u16, end: u16) -> u16 {
        if pen == Pen::default() {
            return 0;
        }
        // The hint is trusted only when the entry it names is `pen` (a pen is in the table at
        // most once), so clearing or collecting the table never needs to invalidate it.
        if let Some(extra) = &self.extra
            && extra.styles.get(usize::from(self.hint).wrapping_sub(1)) == Some(&pen)
        {
            return self.hint;
        }
        self.intern_slow(pen, start, end)
    }

    #[inline(never)]
    fn intern_slow(&mut self, pen: Pen, start: u16, end: u16) -> u16 {
        let bound = style_bound(self.cols());
        let extra = self.extra.get_or_insert_default();
        let found = match &extra.index {
            Some(index) => index.get(&pen_key(pen)).map(|&id| usize::from(id)),
            // The newest entries are the likeliest: search from the end.
            None => extra.styles.iter().rposition(|&p| p == pen).map(|i| i + 1),
        };
        let id = if let Some(id) = found {
            id
        } else {
            let styles = &mut extra.styles;
            if styles.len() >= bound {
                let used = &mut self.cells[..usize::from(self.used)];
                collect(styles, used, usize::from(start)..usize::from(end));
                // Ids were renumbered: the index is rebuilt below if still wanted.
                extra.index = None;
            }
            if styles.len() == styles.capacity() {
                // Grow as a Vec would, but never past the bound (a collection keeps the length
                // below it).
                let room = bound - styles.len();
                styles.reserve_exact(styles.len().max(4).min(room));
            }
            styles.push(pen);
            let id = styles.len();
            if id > LINEAR_STYLES {
                if let Some(index) = &mut extra.index {
                    index.insert(pen_key(pen), id as u16);
                } else {
                    let ids = styles.iter().enumerate();
                    let index = ids.map(|(i, &p)| (pen_key(p), i as u16 + 1)).collect();
                    extra.index = Some(Box::new(index));
                }
            }
            id
        };
        self.hint = id as u16;
        self.hint
    }

    /// Drops the marks of the cells in `start..end`: O(log n) per marked cell dropped.
    #[inline]
    pub(crate) fn drop_marks(&mut self, start: u16, end: u16) {
        if let Some(extra) = &mut self.extra
            && !extra.marks.is_empty()
        {
            while let Some((&col, _)) = extra.marks.range(start..end).next() {
                extra.marks.remove(&col);
            }
        }
    }

    /// Moves the marks of the cells from `from` on `n` columns right; those passing the last
    /// column go (ICH). Costs the marked cells moved.
    pub(crate) fn shift_marks_right(&mut self, from: u16, n: u16) {
        let cols = self.cols();
        if let Some(extra) = &mut self.extra
            && !extra.marks.is_empty()
        {
            let moved = extra.marks.split_off(&from);
            for (col, m) in moved {
                if let Some(to) = col.checked_add(n).filter(|&to| to < cols) {
                    extra.marks.insert(to, m);
                }
            }
        }
    }

    /// Drops the marks of the cells in `start..end` and moves those after it left into the
    /// gap (DCH). Costs the marked cells moved.
    pub(crate) fn delete_marks(&mut self, start: u16, end: u16) {
        if let Some(extra) = &mut self.extra
            && !extra.marks.is_empty()
        {
            let mut moved = extra.marks.split_off(&start);
            let after = moved.split_off(&end);
            for (col, m) in after {
                extra.marks.insert(col - (end - start), m);
            }
        }
    }

    /// Adds a mark to the cell at `col`, after its others.
    pub(crate) fn push_mark(&mut self, col: u16, mark: char) {
        let marks = &mut self.extra.get_or_insert_default().marks;
        marks.entry(col).or_default().push(mark);
    }

    /// Whether any cell of the row has marks.
    #[cfg(test)]
    pub(crate) fn has_marks(&self) -> bool {
        self.extra.as_deref().is_some_and(|e| !e.marks.is_empty())
    }

    /// Every mark of the row, by column, each cell's in the order they were written.
    pub(crate) fn marks(&self) -> impl Iterator<Item = Mark> + '_ {
        self.extra
            .as_deref()
            .into_iter()
            .flat_map(|e| &e.marks)
            .flat_map(|(&col, m)| m.chars().map(move |c| (col, c)))
    }

    /// The marks of the cell at `col`, in the order they were written: O(log n).
    pub(crate) fn marks_at(&self, col: u16) -> &str {
        self.extra
            .as_deref()
            .and_then(|e| e.marks.get(&col))
            .map_or("", String::as_str)
    }

    /// The UTF-8 length of the marks of the cell at `col`: O(log n).
    pub(crate) fn marks_len(&self, col: u16) -> usize {
        self.extra
            .as_deref()
            .and_then(|e| e.marks.get(&col))
            .map_or(0, String::len)
    }

    /// Sets cells `start..end` to `cell`, whose style is this row's (with their marks
    /// dropped).
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
        self.cells.resize(cols);
        self.used = self.used.min(cols);
        if let Some(extra) = &mut self.extra {
            extra.marks.split_off(&cols);
        }
        // A wide character cut in half by the new edge becomes a space in its style, marks
        // dropped (a space, not an erased cell: an erased cell keeps only a background, which
        // the bootstrap could not give back otherwise).
        if let Some(last) = self.cells.last().copied()
            && last.is_wide()
        {
            if let Some(edge) = self.cells.last_mut() {
                *edge = last.space_in_its_style();
            }
            self.drop_marks(cols - 1, cols);
        }
        self.wrapped = false;
    }

    /// Whether both rows show the same thing (see [`Grid::same_contents`]).
    pub(crate) fn same_contents(&self, other: &Self) -> bool {
        self.wrapped == other.wrapped
            && self.marks().eq(other.marks())
            && self.cells.len() == other.cells.len()
            && self.cells.iter().zip(other.cells.iter()).all(|(&a, &b)| {
                let (ca, cb) = (a.code, b.code);
                ca == cb && self.pen(a) == other.pen(b)
            })
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
        if let Some(extra) = self.extra.as_deref().filter(|e| !e.marks.is_empty()) {
            // One pass over the cells and the marks together (both in column order), written
            // in place; `keep` is the length up to the last thing that is not a space.
            let start = out.len();
            let mut keep = start;
            let mut marks = extra.marks.iter().peekable();
            for (col, cell) in cells.iter().enumerate() {
                if cell.is_wide_cont() {
                    continue;
                }
                let c = if cell.has_contents() { cell.ch() } else { ' ' };
                put(out, c);
                if c != ' ' {
                    keep = out.len();
                }
                while let Some(&(&at, m)) = marks.peek() {
                    match usize::from(at).cmp(&col) {
                        std::cmp::Ordering::Less => {}
                        std::cmp::Ordering::Equal => {
                            out.extend_from_slice(m.as_bytes());
                            keep = out.len();
                        }
                        std::cmp::Ordering::Greater => break,
                    }
                    marks.next();
                }
            }
            out.truncate(keep);
            return;
        }
        // Without marks a trailing blank is a blank cell: trim before writing. (A continuation
        // half's flag makes its code word neither 0 nor a space.)
        let end = cells
            .iter()
            .rposition(|c| !matches!(c.code, 0 | 0x20))
            .map_or(0, |i| i + 1);
        // Rows of printable ASCII are most of any output (a wide character's halves are never
        // ASCII, a blank is 0): copied cell by cell into place, with none of `push`'s length
        // bookkeeping per byte; anything else takes the general path below.
        let start = out.len();
        out.resize(start + end, 0);
        let mut ascii = true;
        for (byte, cell) in out[start..].iter_mut().zip(&cells[..end]) {
            let code = cell.code;
            *byte = code as u8;
            ascii &= matches!(code, 0x20..=0x7e);
        }
        if ascii {
            return;
        }
        out.truncate(start);
        for cell in &cells[..end] {
            if !cell.is_wide_cont() {
                put(out, if cell.has_contents() { cell.ch() } else { ' ' });
            }
        }
    }

    /// The row's text (see [`write_text`](Self::write_text)).
    pub(crate) fn text(&self) -> String {
        let mut bytes = Vec::new();
        self.write_text(&mut bytes);
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// The most heap a row of `cols` cells can come to hold, whatever is written to it: as
    /// [`heap_bytes`](Self::heap_bytes) counts it, every cell marked, the style table at its
    /// bound and indexed.
    pub(crate) fn heap_bound(cols: u16) -> usize {
        let cells = usize::from(cols);
        let styles = style_bound(cols);
        cells * (size_of::<Cell>() + MARK_ENTRY + MARKS_CAPACITY_BOUND)
            + size_of::<Extra>()
            + styles * (size_of::<Pen>() + INDEX_ENTRY)
            + size_of::<BTreeMap<(u32, u32), u16>>()
    }

    /// The heap bytes this row holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.cells.heap_bytes()
            + self.extra.as_deref().map_or(0, |e| {
                size_of::<Extra>()
                    + e.marks.len() * (MARK_ENTRY + MARKS_CAPACITY_BOUND)
                    + e.styles.capacity() * size_of::<Pen>()
                    + e.index.as_ref().map_or(0, |i| {
                        i.len() * INDEX_ENTRY + size_of::<BTreeMap<(u32, u32), u16>>()
                    })
            })
    }
}

impl Extra {
    /// Empty again. Kept for the row's next contents (a scrolled screen reuses its rows), but
    /// a table grown by a very colourful line shrinks back. Out of line: plain text rows have
    /// no `Extra`, and resetting them is the hot path.
    #[inline(never)]
    fn reset(&mut self) {
        // Clearing a map costs a walk even when empty, and rows with styles but no marks are
        // the common case here.
        if !self.marks.is_empty() {
            self.marks.clear();
        }
        self.styles.clear();
        self.index = None;
        if self.styles.capacity() > KEEP_STYLES {
            self.styles.shrink_to(KEEP_STYLES);
        }
    }
}

/// The most styles a row of `cols` cells keeps: its cells use at most `cols`, and collecting
/// only once the table holds about twice that leaves at least `cols` new styles between two
/// collections, so a collection's pass over the row costs O(1) per style added. Ids fit a
/// `u16`: a collection leaves fewer than `cols` entries (the cells about to be overwritten
/// keep none alive), so the id added after it is at most `cols`.
fn style_bound(cols: u16) -> usize {
    (2 * usize::from(cols) + 16).min(usize::from(u16::MAX))
}

/// A pen as the index's key.
fn pen_key(pen: Pen) -> (u32, u32) {
    (pen.fg, pen.bg)
}

/// Drops the styles no cell of `cells` outside `skip` uses, renumbering the rest in order;
/// the cells in `skip` whose style is dropped get the default (they are about to be
/// overwritten).
fn collect(styles: &mut Vec<Pen>, cells: &mut [Cell], skip: std::ops::Range<usize>) {
    // map[id]: first "in use", then the new id (0 = dropped).
    let mut map = vec![0u16; styles.len() + 1];
    let (a, b) = (skip.start.min(cells.len()), skip.end.min(cells.len()));
    for cell in cells[..a].iter().chain(&cells[b..]) {
        map[usize::from(cell.style)] = 1;
    }
    map[0] = 0;
    let mut kept = 0;
    for id in 1..map.len() {
        if map[id] != 0 {
            styles[kept] = styles[id - 1];
            kept += 1;
            map[id] = kept as u16;
        }
    }
    styles.truncate(kept);
    for cell in cells {
        cell.style = map[usize::from(cell.style)];
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
            row.cells[x] = Cell::new(ch, 0);
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
        assert_eq!(size_of::<Cell>(), 6, "cells stay compact");
        // The cells' pointer and width, the rare parts' pointer, the bounds and flags.
        assert_eq!(size_of::<Row>(), 40, "rows stay compact");
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
        r.fill(0, 6, Cell::new('x', 0));
        assert_eq!(r.used(), 6);
        r.fill(3, 10, Cell::BLANK);
        assert_eq!(r.used(), 3);
        let style = r.intern(Pen { fg: 0, bg: 4 }, 5, 8);
        r.fill(5, 8, Cell::erased(style));
        assert_eq!(r.used(), 8);
        assert_eq!(r.text(), "xxx");
    }

    /// A pen per `n`: every one distinct and none the default.
    fn nth_pen(n: usize) -> Pen {
        Pen {
            fg: Color::Idx((n % 256) as u8).pack(),
            bg: Color::Rgb((n >> 8) as u8, n as u8, 1).pack(),
        }
    }

    #[test]
    fn styles_are_interned_once_per_row_and_the_default_costs_nothing() {
        let mut r = Row::new(10);
        assert_eq!(r.intern(Pen::default(), 0, 10), 0);
        assert!(r.extra.is_none(), "plain text allocates no table");
        assert_eq!(r.heap_bytes(), 0, "no cells until one is written");
        r.fill(0, 1, Cell::new('x', 0));
        assert_eq!(r.heap_bytes(), 10 * size_of::<Cell>());
        let (a, b) = (nth_pen(1), nth_pen(2));
        assert_eq!(r.intern(a, 0, 1), 1);
        assert_eq!(r.intern(b, 1, 2), 2);
        assert_eq!(r.intern(a, 2, 3), 1, "found again, not added");
        assert_eq!(r.intern(b, 3, 4), 2);
        assert_eq!(r.pen(Cell::new('x', 2)), b);
        assert_eq!(r.pen(Cell::erased(0)), Pen::default());
        r.touch(1);
        r.reset();
        assert!(!r.has_marks());
        assert_eq!(r.intern(b, 0, 1), 1, "a reset row starts a new table");
    }

    /// Far more distinct pens than the bound, written over a row again and again: the table
    /// stays bounded and every cell keeps its own pen through the collections.
    #[test]
    fn a_full_style_table_is_collected_and_cells_keep_their_pens() {
        for cols in [1u16, 2, 5, 80] {
            let mut r = Row::new(cols);
            let mut want = vec![Pen::default(); usize::from(cols)];
            for n in 1..20 * style_bound(cols) {
                // Mostly single cells, sometimes a run, now and then the default.
                let x = (n * 7) % usize::from(cols);
                let len = if n % 5 == 0 { 3 } else { 1 };
                let end = (x + len).min(usize::from(cols));
                let pen = if n % 11 == 0 {
                    Pen::default()
                } else {
                    nth_pen(n)
                };
                let id = r.intern(pen, x as u16, end as u16);
                r.fill(x as u16, end as u16, Cell::new('x', id));
                want[x..end].fill(pen);
                let styles = &r.extra.as_ref().unwrap().styles;
                assert!(styles.len() <= style_bound(cols), "cols {cols}");
                assert!(styles.capacity() <= style_bound(cols), "cols {cols}");
                for (x, &cell) in r.cells.iter().enumerate() {
                    assert_eq!(r.pen(cell), want[x], "cols {cols}, pen {n}, cell {x}");
                }
            }
            // Every pen still in the table once at most.
            let styles = &r.extra.as_ref().unwrap().styles;
            for (i, p) in styles.iter().enumerate() {
                assert!(!styles[..i].contains(p) && *p != Pen::default());
            }
        }
    }

    /// A cell's marks string, grown mark by mark to the most a cell takes, stays within the
    /// capacity `heap_bytes` counts for it without looking.
    #[test]
    fn a_full_marks_string_stays_within_the_counted_capacity() {
        for mark in ['\u{301}', '\u{20d0}', '\u{1d165}'] {
            let mut r = Row::new(4);
            r.cells[0] = Cell::new('e', 0);
            r.touch(1);
            while 1 + r.marks_len(0) + mark.len_utf8() < 18 {
                r.push_mark(0, mark);
            }
            let cap = r.extra.as_ref().unwrap().marks[&0].capacity();
            assert!(cap <= MARKS_CAPACITY_BOUND, "{mark:?}: capacity {cap}");
        }
    }

    /// The row's text, cell by cell with a lookup per cell: what the one-pass `write_text`
    /// must give.
    fn text_cell_by_cell(r: &Row) -> String {
        let mut text = String::new();
        for (col, cell) in r.cells[..usize::from(r.used)].iter().enumerate() {
            if !cell.is_wide_cont() {
                text.push(if cell.has_contents() { cell.ch() } else { ' ' });
                text.push_str(r.marks_at(col as u16));
            }
        }
        text.trim_end_matches(' ').to_owned()
    }

    proptest::proptest! {
        /// Rows of blanks, spaces, letters and wide characters, marks on some cells: the text
        /// read in one pass over cells and marks is the one read cell by cell.
        #[test]
        fn row_text_with_marks_is_read_in_one_pass(
            kinds in proptest::collection::vec(0u8..5, 1..40),
            marked in proptest::collection::vec((0u16..40, 0u8..3), 0..12),
        ) {
            let cols = kinds.len() as u16;
            let mut r = Row::new(cols);
            let mut x = 0u16;
            for &k in &kinds {
                if x >= cols {
                    break;
                }
                match k {
                    0 => {}
                    1 => r.cells[usize::from(x)] = Cell::new(' ', 0),
                    2 => r.cells[usize::from(x)] = Cell::new('a', 0),
                    3 if x + 1 < cols => {
                        r.cells[usize::from(x)] = Cell::wide('\u{3042}', 0);
                        r.cells[usize::from(x) + 1] = Cell::WIDE_CONT;
                        x += 1;
                    }
                    _ => r.cells[usize::from(x)] = Cell::erased(0),
                }
                x += 1;
                r.touch(x);
            }
            for &(col, n) in &marked {
                let col = col % cols;
                if !r.cells[usize::from(col)].is_wide_cont() {
                    for m in ['\u{301}', '\u{302}', '\u{303}'].into_iter().take(usize::from(n) + 1) {
                        r.push_mark(col, m);
                    }
                }
            }
            proptest::prop_assert_eq!(r.text(), text_cell_by_cell(&r));
        }
    }

    /// A row whose every cell has its own pen still has an id for one more: the cells being
    /// overwritten keep nothing alive.
    #[test]
    fn a_collection_frees_the_cells_about_to_be_overwritten() {
        let cols = 3;
        let mut r = Row::new(cols);
        let mut want = [Pen::default(); 3];
        let mut n = 0;
        while r
            .extra
            .as_ref()
            .is_none_or(|e| e.styles.len() < style_bound(cols))
        {
            n += 1;
            let x = n % 3;
            let id = r.intern(nth_pen(n), x as u16, x as u16 + 1);
            r.cells[x] = Cell::new('x', id);
            r.touch(x as u16 + 1);
            want[x] = nth_pen(n);
        }
        let id = r.intern(nth_pen(n + 1), 1, 2);
        assert_eq!(id, 3, "two live styles kept, the new one after them");
        assert_eq!(
            r.cells[1].style, 0,
            "the overwritten cell's style was dropped"
        );
        assert_eq!([r.pen(r.cells[0]), r.pen(r.cells[2])], [want[0], want[2]]);
    }
}
