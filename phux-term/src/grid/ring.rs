//! [`Grid`]: one screen's rows as a ring, so scrolling the whole screen is a rotation.

use super::Row;
#[cfg(test)]
use super::collect;

/// One screen's rows as a ring: visual row `y` is `rows[(top + y) % len]`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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

    /// Whether every row is `cols` wide and the ring's start names a row (for a grid that was
    /// read back as data).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let ok = u16::try_from(self.rows.len()).is_ok()
            && (self.top < self.rows.len() || (self.rows.is_empty() && self.top == 0))
            && self.rows.iter().all(|r| r.cols() == self.cols);
        if ok {
            Ok(())
        } else {
            Err("grid: rows do not match")
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

    /// Whether both grids show the same thing: the same size, and row by row the same
    /// characters, shapes, pens, marks and soft wraps (style ids and `used` bounds may differ).
    pub(crate) fn same_contents(&self, other: &Self) -> bool {
        self.cols == other.cols
            && self.rows() == other.rows()
            && self
                .iter()
                .zip(other.iter())
                .all(|(a, b)| a.same_contents(b))
    }

    /// Every row reset.
    pub(crate) fn clear(&mut self) {
        for row in &mut self.rows {
            row.reset();
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.spine_bytes() + self.rows.iter().map(Row::heap_bytes).sum::<usize>()
    }

    /// The heap of the ring itself, without what its rows hold: O(1).
    pub(crate) fn spine_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<Row>()
    }

    /// Collects every row's style table now, as a full table would be.
    #[cfg(test)]
    pub(crate) fn collect_styles_for_test(&mut self) {
        for row in &mut self.rows {
            if let Some(extra) = &mut row.extra {
                collect(
                    &mut extra.styles,
                    &mut row.cells[..usize::from(row.used)],
                    0..0,
                );
                extra.index = None;
            }
        }
    }
}
