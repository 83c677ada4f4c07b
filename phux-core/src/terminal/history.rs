//! Scrollback: a bounded ring of the rows that left the top of the main screen.
//!
//! Only a row's text and soft-wrap flag are ever read back (GET_SCREEN's `scrollback`; the
//! bootstrap rebuilds the viewport only), so a retired row is kept as its text: about one byte
//! per column instead of a cell's twelve. Rows are allocated as history grows, and once the
//! ring is full a new row reuses the buffer of the one it evicts, so steady-state scrolling
//! allocates nothing.

use std::collections::VecDeque;

use super::grid::Row;

/// One retained history row: its text (right-trimmed) and whether it continues onto the next.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HistoryRow {
    pub(crate) text: String,
    pub(crate) wrapped: bool,
}

/// A bounded ring of history rows, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    rows: VecDeque<HistoryRow>,
    capacity: usize,
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            rows: VecDeque::new(),
            capacity,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn clear(&mut self) {
        self.rows.clear();
    }

    /// The `n` newest rows (all of them if fewer are retained), oldest first.
    pub(crate) fn newest(&self, n: usize) -> impl Iterator<Item = &HistoryRow> {
        self.rows.iter().skip(self.rows.len().saturating_sub(n))
    }

    /// Retains `row`, evicting the oldest row when full.
    pub(crate) fn push(&mut self, row: &Row) {
        if self.capacity == 0 {
            return;
        }
        let mut slot = if self.rows.len() >= self.capacity {
            self.rows.pop_front().unwrap_or_default()
        } else {
            HistoryRow::default()
        };
        slot.text.clear();
        row.write_text(&mut slot.text);
        slot.wrapped = row.wrapped;
        self.rows.push_back(slot);
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.rows.capacity() * size_of::<HistoryRow>()
            + self.rows.iter().map(|r| r.text.capacity()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::{Cell, Pen};
    use super::*;

    fn row(s: &str, wrapped: bool) -> Row {
        let mut r = Row::new(8);
        for (x, ch) in s.chars().enumerate() {
            r.cells[x] = Cell::new(ch, Pen::default());
        }
        r.touch(s.len() as u16);
        r.wrapped = wrapped;
        r
    }

    fn texts(h: &History) -> Vec<(String, bool)> {
        h.newest(usize::MAX)
            .map(|r| (r.text.clone(), r.wrapped))
            .collect()
    }

    #[test]
    fn rows_keep_their_text_and_wrap_flag() {
        let mut h = History::new(10);
        h.push(&row("ab  ", false));
        h.push(&row("abcdefgh", true));
        assert_eq!(texts(&h), [("ab".into(), false), ("abcdefgh".into(), true)]);
    }

    #[test]
    fn the_ring_is_bounded_and_reuses_rows() {
        let mut h = History::new(2);
        for s in ["1", "2", "3"] {
            h.push(&row(s, false));
        }
        assert_eq!(texts(&h), [("2".into(), false), ("3".into(), false)]);
        assert_eq!(h.newest(1).count(), 1);
        let mut none = History::new(0);
        none.push(&row("x", false));
        assert_eq!(none.len(), 0);
    }
}
