//! Scrollback: a bounded ring of the rows that left the top of the main screen.
//!
//! Only a row's text and soft-wrap flag are ever read back (GET_SCREEN's `scrollback`; the
//! bootstrap rebuilds the viewport only), so a retired row is kept as its UTF-8 text, appended
//! to one contiguous byte log: about a byte per column instead of a cell's six, no
//! allocation per row, and the append stays in a few cache lines however many rows are
//! retained. Evicted rows' bytes are reclaimed by compacting the log once they are a quarter
//! of it: the log stays within 4/3 of the live text, and each byte is moved at most three
//! times on average.

use crate::grid::Row;

/// Compaction waits for at least this much dead space, so small logs are never moved.
const MIN_COMPACT: usize = 16 << 10;
/// The soft-wrap flag, in the top bit of a row's end offset.
const WRAPPED: u64 = 1 << 63;

/// A bounded ring of history rows, oldest first.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct History {
    /// Row text, back to back. `bytes[0]` is at absolute offset `origin`.
    #[serde(with = "crate::bytes")]
    bytes: Vec<u8>,
    origin: u64,
    /// Absolute offset where the oldest retained row starts.
    first: u64,
    /// Per retained row: the absolute offset where it ends, with [`WRAPPED`] set if the row
    /// continues on the next one. A ring: once full, `ends[head]` is the oldest row.
    ends: Vec<u64>,
    head: usize,
    capacity: usize,
    /// Rows ever retained (evicted ones included): a caller compares two readings to learn
    /// whether an operation pushed rows.
    pushed: u64,
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            ..Self::default()
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Rows retained since the history was made, evicted ones included.
    pub(crate) fn pushed(&self) -> u64 {
        self.pushed
    }

    pub(crate) fn clear(&mut self) {
        self.origin += self.bytes.len() as u64;
        self.first = self.origin;
        self.bytes.clear();
        self.ends.clear();
        self.head = 0;
    }

    /// The `n` newest rows (all of them if fewer are retained), oldest first, as (text,
    /// continues on the next row).
    pub(crate) fn newest(&self, n: usize) -> impl Iterator<Item = (&str, bool)> {
        let (newer, older) = self.ends.split_at(self.head);
        let skip = self.ends.len().saturating_sub(n);
        let ordered = || older.iter().chain(newer).map(|&e| e & !WRAPPED);
        let mut start = match skip.checked_sub(1) {
            None => self.first,
            Some(i) => ordered().nth(i).unwrap_or(self.first),
        };
        older.iter().chain(newer).skip(skip).map(move |&entry| {
            let end = entry & !WRAPPED;
            let (a, b) = ((start - self.origin) as usize, (end - self.origin) as usize);
            start = end;
            // Only whole characters are ever written, so this never falls back.
            let text = std::str::from_utf8(&self.bytes[a..b]).unwrap_or("");
            (text, entry & WRAPPED != 0)
        })
    }

    /// [`clear`](Self::clear), and gives the buffers' memory back too.
    pub(crate) fn release(&mut self) {
        self.clear();
        self.bytes = Vec::new();
        self.ends = Vec::new();
    }

    /// Retains `row`, evicting the oldest row when full.
    #[inline]
    pub(crate) fn push(&mut self, row: &Row) {
        if self.capacity == 0 {
            return;
        }
        row.write_text(&mut self.bytes);
        self.commit(row.wrapped);
    }

    /// Retains `k` copies of `row`, as `k` pushes would, with work bounded by the capacity:
    /// copies beyond it would be evicted by the later ones. The row's text is made once.
    pub(crate) fn push_copies(&mut self, row: &Row, k: usize) {
        if self.capacity == 0 || k == 0 {
            return;
        }
        let start = self.bytes.len();
        row.write_text(&mut self.bytes);
        let len = self.bytes.len() - start;
        self.commit(row.wrapped);
        self.pushed += (k - k.min(self.capacity)) as u64;
        for _ in 1..k.min(self.capacity) {
            // The newest row's bytes end the log (a compaction drops only older ones).
            let last = self.bytes.len() - len;
            self.bytes.extend_from_within(last..);
            self.commit(row.wrapped);
        }
    }

    /// Ends the row whose text was just appended to the log.
    #[inline]
    fn commit(&mut self, wrapped: bool) {
        self.pushed += 1;
        let entry = (self.origin + self.bytes.len() as u64) | if wrapped { WRAPPED } else { 0 };
        if self.ends.len() < self.capacity {
            self.ends.push(entry);
            return;
        }
        let oldest = std::mem::replace(&mut self.ends[self.head], entry);
        self.head += 1;
        if self.head == self.ends.len() {
            self.head = 0;
        }
        self.first = oldest & !WRAPPED;
        let dead = (self.first - self.origin) as usize;
        if dead >= MIN_COMPACT && dead * 4 >= self.bytes.len() {
            self.bytes.drain(..dead);
            self.origin = self.first;
        }
    }

    /// Whether the offsets agree with the log, as every method relies on (for a history that
    /// was read back as data).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let end = self.origin.checked_add(self.bytes.len() as u64);
        let ok = self.ends.len() <= self.capacity
            && (self.head == 0 || self.head < self.ends.len())
            && (self.head == 0 || self.ends.len() == self.capacity)
            && self.origin <= self.first
            && end.is_some_and(|end| {
                if self.first > end {
                    return false;
                }
                let (newer, older) = self.ends.split_at(self.head);
                let mut at = self.first;
                older.iter().chain(newer).all(|&e| {
                    let e = e & !WRAPPED;
                    let fine = at <= e && e <= end;
                    at = e;
                    fine
                })
            });
        if ok {
            Ok(())
        } else {
            Err("history: offsets do not match the log")
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.capacity() * size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::grid::Cell;
    use super::*;

    fn row(s: &str, wrapped: bool) -> Row {
        let mut r = Row::new(8);
        for (x, ch) in s.chars().enumerate() {
            r.cells[x] = Cell::new(ch, 0);
        }
        r.touch(s.chars().count() as u16);
        r.wrapped = wrapped;
        r
    }

    fn texts(h: &History) -> Vec<(String, bool)> {
        h.newest(usize::MAX)
            .map(|(t, w)| (t.to_owned(), w))
            .collect()
    }

    #[test]
    fn rows_keep_their_text_and_wrap_flag() {
        let mut h = History::new(10);
        h.push(&row("ab  ", false));
        h.push(&row("abcd\u{e9}fgh", true));
        h.push(&row("", false));
        assert_eq!(
            texts(&h),
            [
                ("ab".into(), false),
                ("abcd\u{e9}fgh".into(), true),
                (String::new(), false)
            ]
        );
        assert_eq!(h.newest(1).count(), 1);
        assert_eq!(h.newest(2).next(), Some(("abcd\u{e9}fgh", true)));
    }

    #[test]
    fn the_ring_is_bounded_and_compacts() {
        let mut h = History::new(2);
        for s in ["1", "2", "3"] {
            h.push(&row(s, false));
        }
        assert_eq!(texts(&h), [("2".into(), false), ("3".into(), false)]);
        // Far more rows than fit: the log stays bounded by the live rows plus slack.
        let mut h = History::new(100);
        for i in 0..100_000u32 {
            h.push(&row(&format!("{i:08}"), i % 3 == 0));
        }
        assert_eq!(h.len(), 100);
        assert!(
            h.bytes.len() <= 100 * 8 + MIN_COMPACT * 2,
            "{}",
            h.bytes.len()
        );
        let t = texts(&h);
        assert_eq!(t[0], ("00099900".into(), true));
        assert_eq!(t[99], ("00099999".into(), true));
        h.clear();
        assert_eq!(h.len(), 0);
        h.push(&row("x", false));
        assert_eq!(texts(&h), [("x".into(), false)]);
        // Copies: what as many pushes leave, the counter included.
        let mut a = History::new(3);
        let mut b = History::new(3);
        a.push(&row("x", false));
        b.push(&row("x", false));
        for _ in 0..1000 {
            a.push(&row("yz", true));
        }
        b.push_copies(&row("yz", true), 1000);
        assert_eq!(texts(&a), texts(&b));
        assert_eq!((a.pushed(), b.pushed()), (1001, 1001));
        b.push_copies(&row("w", false), 2);
        assert_eq!(
            texts(&b),
            [
                ("yz".into(), true),
                ("w".into(), false),
                ("w".into(), false)
            ]
        );
        let mut none = History::new(0);
        none.push(&row("x", false));
        assert_eq!(none.len(), 0);
    }
}
