//! Scrollback kept outside `vt100`, and the `vt100` callbacks that feed it.
//!
//! `vt100` can only read its own scrollback by moving its viewport (`&mut`), and it allocates a
//! fresh row for every line it retains. We run it with no scrollback and capture each row as it
//! leaves the top of the main screen instead: reading history never touches the live screen,
//! and once the ring is full a captured row reuses the buffer of the row it evicts.

use std::collections::VecDeque;
use std::fmt;

use vt100::capture::{BasicFormattedCaptureState, RowContents};

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

    fn push(&mut self, row: &RowContents<'_>) {
        if self.capacity == 0 {
            return;
        }
        let mut slot = if self.rows.len() >= self.capacity {
            self.rows.pop_front().unwrap_or_default()
        } else {
            HistoryRow::default()
        };
        slot.text.clear();
        // A fresh capture state starts with no newline pending, so the first write is the row
        // itself; the text sink drops the SGR sequences and keeps the characters.
        let mut state = BasicFormattedCaptureState::new();
        let mut sink = PlainText {
            out: &mut slot.text,
            in_escape: false,
        };
        // Writing to a String cannot fail.
        let _ = row.write_formatted_basic(&mut sink, &mut state);
        let trimmed = slot.text.trim_end_matches(' ').len();
        slot.text.truncate(trimmed);
        // The state now holds "newline pending" = the row does not wrap. A second write shows
        // it as a leading '\n'; the probe stops the write at its first piece.
        let mut probe = WrapProbe { newline: false };
        let _ = row.write_formatted_basic(&mut probe, &mut state);
        slot.wrapped = !probe.newline;
        self.rows.push_back(slot);
    }
}

/// Keeps the characters of a "basic formatted" row (text and SGR sequences only).
struct PlainText<'a> {
    out: &'a mut String,
    in_escape: bool,
}

impl fmt::Write for PlainText<'_> {
    // vt100 writes the blanks between cells one `write_char` at a time: keep that path short.
    fn write_char(&mut self, c: char) -> fmt::Result {
        if self.in_escape {
            self.in_escape = c != 'm';
        } else if c == '\x1b' {
            self.in_escape = true;
        } else {
            self.out.push(c);
        }
        Ok(())
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while !rest.is_empty() {
            if self.in_escape {
                let Some(end) = rest.find('m') else {
                    return Ok(());
                };
                self.in_escape = false;
                rest = &rest[end + 1..];
            } else if let Some(start) = rest.find('\x1b') {
                self.out.push_str(&rest[..start]);
                self.in_escape = true;
                rest = &rest[start + 1..];
            } else {
                self.out.push_str(rest);
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Records whether a write starts with '\n', then fails to cut the write short.
struct WrapProbe {
    newline: bool,
}

impl fmt::Write for WrapProbe {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.newline = s.starts_with('\n');
        Err(fmt::Error)
    }
}

/// What `vt100` reports through its callbacks.
#[derive(Debug, Default)]
pub(crate) struct Observer {
    pub(crate) history: History,
    pub(crate) title: Option<String>,
    pub(crate) bells: u32,
}

impl Observer {
    fn set_title(&mut self, title: &[u8]) {
        // An empty title clears it: there is nothing to show.
        self.title = if title.is_empty() {
            None
        } else {
            Some(String::from_utf8_lossy(title).into_owned())
        };
    }
}

impl vt100::Callbacks for Observer {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.bells = self.bells.saturating_add(1);
    }

    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.set_title(title);
    }

    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        // vt100 reports OSC 0 / 2 only when the title holds no ';' (it splits on them); join
        // the pieces back together for titles that do.
        if let [b"0" | b"2", pieces @ ..] = params
            && pieces.len() > 1
        {
            let joined = pieces.join(&b';');
            self.set_title(&joined);
        }
    }

    fn on_scroll(&mut self, contents: RowContents<'_>, alternate_screen: bool) {
        // The alternate screen keeps no history (as in xterm).
        if !alternate_screen {
            self.history.push(&contents);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parser(cap: usize) -> vt100::Parser<Observer> {
        let observer = Observer {
            history: History::new(cap),
            ..Observer::default()
        };
        let n = |v| std::num::NonZeroU16::new(v).unwrap();
        vt100::Parser::new_with_callbacks(n(3), n(5), 0, observer)
    }

    fn texts(h: &History) -> Vec<(String, bool)> {
        h.newest(usize::MAX)
            .map(|r| (r.text.clone(), r.wrapped))
            .collect()
    }

    #[test]
    fn rows_leaving_the_top_are_captured_with_their_wrap_flag() {
        let mut p = parser(10);
        p.process(b"\x1b[31mab\x1b[m \r\nabcdefg\r\n\r\nx\r\ny");
        let h = &p.callbacks().history;
        assert_eq!(
            texts(h),
            [
                ("ab".into(), false),
                ("abcde".into(), true),
                ("fg".into(), false)
            ]
        );
    }

    #[test]
    fn the_ring_is_bounded_and_reuses_rows() {
        let mut p = parser(2);
        p.process(b"1\r\n2\r\n3\r\n4\r\n5\r\n6");
        assert_eq!(
            texts(&p.callbacks().history),
            [("2".into(), false), ("3".into(), false)]
        );
        assert_eq!(p.callbacks().history.newest(1).count(), 1);
    }

    #[test]
    fn titles_with_semicolons_and_bells() {
        let mut p = parser(0);
        p.process(b"\x1b]2;a;b;c\x07\x07\x1b]0;plain\x1b\\\x07");
        assert_eq!(p.callbacks().title.as_deref(), Some("plain"));
        assert_eq!(p.callbacks().bells, 2);
        p.process(b"\x1b]2;x;y\x07");
        assert_eq!(p.callbacks().title.as_deref(), Some("x;y"));
        p.process(b"\x1b]2;\x07");
        assert_eq!(p.callbacks().title, None);
    }
}
