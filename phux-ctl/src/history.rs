//! `phuxctl attach`'s history view (tmux's copy mode, `C-\ [`): the terminal's history and
//! screen as the server keeps them (one GET_SCREEN with every retained history row), read like
//! a pager on the local terminal while the program goes on.
//!
//! This file holds the view itself: what it shows, where the user is in it, the keys that
//! move it, and the bytes that draw it. It performs no I/O; `attach` fetches the document,
//! feeds keys, writes what [`HistoryView::render`] returns, and redraws the live screen when
//! a key says to leave ([CLIENT.ATTACH.10]).

use std::fmt::Write as _;

use phux_proto::TerminalId;
use phux_proto::input::{KeyAction, KeyEvent};
use unicode_width::UnicodeWidthChar;

use crate::keys::legacy_bytes;

/// Put before every drawing of the view: the view writes rows of plain text wherever it
/// likes, so the terminal must not wrap, insert, scroll a region or translate characters
/// however the program left it; mouse and focus reports are turned off, so the mouse selects
/// text in the local terminal, as in any pager. All of it is put back when the view closes
/// (attach redraws the live screen from scratch).
const PRELUDE: &[u8] = b"\x1b[?25l\x1b[r\x1b[?6l\x1b[4l\x1b[?7l\x1b(B\x0f\x1b[m\
\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1004l";

/// Which way a search goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Direction {
    /// Towards the newest line (`/`, C-s, `n` after `/`).
    Down,
    /// Towards the oldest line (`?`, C-r, `n` after `?`).
    Up,
}

impl Direction {
    fn reversed(self) -> Self {
        match self {
            Self::Down => Self::Up,
            Self::Up => Self::Down,
        }
    }

    fn prompt(self) -> char {
        match self {
            Self::Down => '/',
            Self::Up => '?',
        }
    }
}

/// A match on the screen: its line, and the characters it covers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Found {
    line: usize,
    start: usize,
    len: usize,
}

/// What a key asks of `attach`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ViewKey {
    /// The view changed (or not): draw it again.
    Stay,
    /// Leave the view: back to the live screen.
    Leave,
}

/// The history view of one terminal.
#[derive(Debug)]
pub struct HistoryView {
    /// The title on the status line.
    terminal: String,
    /// The history rows (oldest first), then the screen's rows.
    lines: Vec<String>,
    /// How many of `lines` are history.
    history: usize,
    /// The first line shown.
    top: usize,
    cols: u16,
    rows: u16,
    /// A search being typed: its direction and text.
    prompt: Option<(Direction, String)>,
    /// The last search, for `n` and `N`.
    last: Option<(Direction, String)>,
    found: Option<Found>,
    /// A line for the status row until the next key (`not found`, the older rows left out).
    message: Option<String>,
}

impl HistoryView {
    /// The view of a GET_SCREEN document (`scrollback` and `lines`), on a local terminal of
    /// `cols` x `rows`, scrolled to its newest line.
    pub fn new(terminal: &TerminalId, doc: &serde_json::Value, cols: u16, rows: u16) -> Self {
        let rows_of = |key: &str| -> Vec<String> {
            doc.get(key)
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .map(|l| printable(l.as_str().unwrap_or_default()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut lines = rows_of("scrollback");
        let history = lines.len();
        lines.extend(rows_of("lines"));
        let truncated = doc
            .get("scrollback_truncated")
            .and_then(serde_json::Value::as_bool)
            == Some(true);
        let mut view = Self {
            terminal: terminal.to_string(),
            lines,
            history,
            top: 0,
            cols: cols.max(1),
            rows: rows.max(1),
            prompt: None,
            last: None,
            found: None,
            message: truncated.then(|| "older rows did not fit the server's reply".to_owned()),
        };
        view.top = view.max_top();
        view
    }

    /// The local terminal changed size: the same first line, as much as still fits.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.cols = cols.max(1);
        self.rows = rows.max(1);
        self.top = self.top.min(self.max_top());
    }

    /// Rows of text (the last row of the terminal is the status line).
    fn text_rows(&self) -> usize {
        usize::from(self.rows).saturating_sub(1).max(1)
    }

    fn max_top(&self) -> usize {
        self.lines.len().saturating_sub(self.text_rows())
    }

    fn scroll_up(&mut self, n: usize) {
        self.top = self.top.saturating_sub(n);
    }

    fn scroll_down(&mut self, n: usize) {
        self.top = self.top.saturating_add(n).min(self.max_top());
    }

    /// One page towards the oldest line (PageUp; also what `C-\ PageUp` opens the view with).
    pub fn page_up(&mut self) {
        self.scroll_up(self.text_rows());
    }

    /// Takes one key; what `attach` should do next.
    pub fn key(&mut self, key: &KeyEvent) -> ViewKey {
        if key.action == KeyAction::Release {
            return ViewKey::Stay;
        }
        if self.prompt.is_some() {
            self.prompt_key(key);
            return ViewKey::Stay;
        }
        self.message = None;
        let page = self.text_rows();
        match legacy_bytes(key).as_slice() {
            // q, Escape, C-c: tmux's and less's ways out.
            b"q" | b"\x1b" | b"\x03" => return ViewKey::Leave,
            b"k" | b"\x1b[A" | b"\x10" | b"\x19" | b"y" => self.scroll_up(1),
            b"j" | b"\x1b[B" | b"\x0e" | b"\x05" | b"e" | b"\r" => self.scroll_down(1),
            b"\x1b[5~" | b"\x02" | b"b" | b"\x1bv" => self.scroll_up(page),
            b"\x1b[6~" | b"\x06" | b"f" | b" " => self.scroll_down(page),
            b"\x15" | b"u" => self.scroll_up(page / 2),
            b"\x04" | b"d" => self.scroll_down(page / 2),
            b"g" | b"<" | b"\x1b<" | b"\x1b[H" => self.top = 0,
            b"G" | b">" | b"\x1b>" | b"\x1b[F" => self.top = self.max_top(),
            b"/" | b"\x13" => self.prompt = Some((Direction::Down, String::new())),
            b"?" | b"\x12" => self.prompt = Some((Direction::Up, String::new())),
            b"n" => self.repeat(false),
            b"N" => self.repeat(true),
            _ => {}
        }
        ViewKey::Stay
    }

    /// A key while a search is typed: text, Backspace, Enter runs it, Escape or C-c drop it.
    fn prompt_key(&mut self, key: &KeyEvent) {
        let Some((direction, text)) = &mut self.prompt else {
            return;
        };
        match legacy_bytes(key).as_slice() {
            b"\r" => {
                let search = (*direction, std::mem::take(text));
                self.prompt = None;
                if !search.1.is_empty() {
                    self.last = Some(search);
                }
                self.repeat(false);
            }
            b"\x1b" | b"\x03" => self.prompt = None,
            b"\x7f" | b"\x08" => {
                text.pop();
            }
            b"\x15" => text.clear(),
            _ => {
                if let Some(typed) = &key.text
                    && !typed.chars().any(char::is_control)
                {
                    text.push_str(typed);
                }
            }
        }
    }

    /// Runs the last search again (`reverse`: the other way, `N`).
    fn repeat(&mut self, reverse: bool) {
        let Some((direction, text)) = self.last.clone() else {
            self.message = Some("no search yet: / or ? starts one".to_owned());
            return;
        };
        let direction = if reverse {
            direction.reversed()
        } else {
            direction
        };
        self.found = self.search(direction, &text);
        if let Some(found) = self.found {
            self.show_line(found.line);
        } else {
            self.message = Some(format!("not found: {text}"));
        }
    }

    /// The next line holding `text` from the current match (or the view's edge) that way,
    /// wrapping around the ends as tmux does.
    fn search(&self, direction: Direction, text: &str) -> Option<Found> {
        let n = self.lines.len();
        if n == 0 {
            return None;
        }
        // The line the search starts after: the current match while it is in view, else just
        // outside the view, so the lines in view are searched first.
        let rows = self.text_rows();
        let in_view = self
            .found
            .filter(|f| (self.top..self.top + rows).contains(&f.line));
        let from = match (in_view, direction) {
            (Some(f), _) => f.line,
            (None, Direction::Down) => (self.top + n - 1) % n,
            (None, Direction::Up) => (self.top + rows).min(n) % n,
        };
        (1..=n).find_map(|step| {
            let line = match direction {
                Direction::Down => (from + step) % n,
                Direction::Up => (from + n - step % n) % n,
            };
            let at = self.lines[line].find(text)?;
            Some(Found {
                line,
                start: self.lines[line][..at].chars().count(),
                len: text.chars().count(),
            })
        })
    }

    /// Scrolls so that `line` is in view (in the middle when it was not).
    fn show_line(&mut self, line: usize) {
        let rows = self.text_rows();
        if line < self.top || line >= self.top + rows {
            self.top = line.saturating_sub(rows / 2).min(self.max_top());
        }
    }

    /// The bytes that draw the view over the whole local terminal.
    pub fn render(&self) -> Vec<u8> {
        let mut out = String::new();
        out.push_str(std::str::from_utf8(PRELUDE).unwrap_or_default());
        let cols = usize::from(self.cols);
        for row in 0..self.text_rows() {
            let _ = write!(out, "\x1b[{};1H\x1b[2K", row + 1);
            let index = self.top + row;
            let Some(line) = self.lines.get(index) else {
                continue;
            };
            let marked = self
                .found
                .filter(|f| f.line == index)
                .map(|f| f.start..f.start + f.len);
            let mut width = 0;
            let mut inverse = false;
            for (i, c) in line.chars().enumerate() {
                let w = c.width().unwrap_or(0);
                if width + w > cols {
                    break;
                }
                let mark = marked.as_ref().is_some_and(|m| m.contains(&i));
                if mark != inverse {
                    out.push_str(if mark { "\x1b[7m" } else { "\x1b[27m" });
                    inverse = mark;
                }
                out.push(c);
                width += w;
            }
            if inverse {
                out.push_str("\x1b[27m");
            }
        }
        // The status line says that this is the history, not the program.
        let _ = write!(out, "\x1b[{};1H\x1b[2K\x1b[7m", self.text_rows() + 1);
        let status = self.status();
        let mut width = 0;
        for c in status.chars() {
            let w = c.width().unwrap_or(0);
            if width + w > cols {
                break;
            }
            out.push(c);
            width += w;
        }
        out.push_str(&" ".repeat(cols.saturating_sub(width)));
        out.push_str("\x1b[m");
        if self.prompt.is_some() {
            // The cursor after the search text being typed.
            let _ = write!(
                out,
                "\x1b[{};{}H\x1b[?25h",
                self.text_rows() + 1,
                width.min(cols)
            );
        }
        out.into_bytes()
    }

    /// The status line: what this is and where, or the search being typed, or a message.
    fn status(&self) -> String {
        if let Some((direction, text)) = &self.prompt {
            return format!("{}{text}", direction.prompt());
        }
        let shown = self
            .text_rows()
            .min(self.lines.len().saturating_sub(self.top));
        let place = if self.lines.is_empty() {
            "empty".to_owned()
        } else {
            format!("{}-{}/{}", self.top + 1, self.top + shown, self.lines.len())
        };
        let where_ = if self.top + shown <= self.history {
            " (history)"
        } else {
            ""
        };
        let tail = self.message.as_deref().map_or_else(
            || "q: back  PgUp PgDn k j g G  / ? n N: search".to_owned(),
            str::to_owned,
        );
        format!(" HISTORY {}  {place}{where_}  {tail} ", self.terminal)
    }
}

/// A row as text the view can write: control characters (C0 and C1, which a terminal might
/// act on) become `?`.
fn printable(line: &str) -> String {
    line.trim_end()
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use phux_proto::input::{ModSet, PhysicalKey};

    use super::*;
    use crate::keys::char_key;

    fn view(n: usize, rows: u16) -> HistoryView {
        let history: Vec<String> = (1..=n).map(|i| format!("line-{i}")).collect();
        let doc = serde_json::json!({
            "scrollback": history,
            "lines": ["screen-1", "screen-2", ""],
        });
        HistoryView::new(&TerminalId::Local(1), &doc, 100, rows)
    }

    /// Types `keys` into the view (`\r` is Enter); what the last one asked for.
    fn press(v: &mut HistoryView, keys: &str) -> ViewKey {
        let mut last = ViewKey::Stay;
        for c in keys.chars() {
            let key = if c == '\r' {
                KeyEvent::press(PhysicalKey::ENTER, ModSet::NONE)
            } else {
                char_key(c, ModSet::NONE)
            };
            last = v.key(&key);
        }
        last
    }

    /// The text rows the view draws, as a terminal model shows them.
    fn shown(v: &HistoryView) -> Vec<String> {
        let mut t = phux_term::Terminal::new(v.cols, v.rows, 0);
        t.advance(&v.render());
        let doc: serde_json::Value =
            serde_json::from_str(&t.screen_json(1, None, false)).expect("json");
        doc["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|l| l.as_str().unwrap_or_default().trim_end().to_owned())
            .collect()
    }

    #[test]
    fn opens_at_the_newest_line_and_pages_through_the_history() {
        let mut v = view(100, 6);
        // 103 lines, 5 of text: the last five, then the status line.
        assert_eq!(
            shown(&v)[..5],
            ["line-99", "line-100", "screen-1", "screen-2", ""]
        );
        assert!(shown(&v)[5].contains("HISTORY local:1"), "{:?}", shown(&v));
        v.key(&KeyEvent::press(PhysicalKey::PAGE_UP, ModSet::NONE));
        assert_eq!(shown(&v)[0], "line-94");
        assert!(
            shown(&v)[5].contains("94-98/103 (history)"),
            "{:?}",
            shown(&v)
        );
        press(&mut v, "kk");
        assert_eq!(shown(&v)[0], "line-92");
        press(&mut v, "g");
        assert_eq!(shown(&v)[0], "line-1");
        press(&mut v, "k");
        assert_eq!(shown(&v)[0], "line-1", "the top stays the top");
        press(&mut v, "G");
        assert_eq!(shown(&v)[4], "");
        press(&mut v, "j");
        assert_eq!(shown(&v)[2], "screen-1", "the bottom stays the bottom");
        assert_eq!(press(&mut v, "q"), ViewKey::Leave);
    }

    #[test]
    fn searches_either_way_wrapping_and_marks_the_match() {
        let mut v = view(100, 6);
        press(&mut v, "?line-5\r");
        // Upwards from the bottom: line-59 is the nearest holding it.
        assert_eq!(v.found.map(|f| f.line), Some(58));
        assert!(shown(&v).contains(&"line-59".to_owned()));
        assert!(String::from_utf8_lossy(&v.render()).contains("\x1b[7mline-5\x1b[27m9"));
        press(&mut v, "n");
        assert_eq!(v.found.map(|f| f.line), Some(57));
        press(&mut v, "N");
        assert_eq!(v.found.map(|f| f.line), Some(58));
        // Downwards from the top, wrapping past the end.
        press(&mut v, "g/screen\r");
        assert_eq!(v.found.map(|f| f.line), Some(100));
        press(&mut v, "n");
        assert_eq!(v.found.map(|f| f.line), Some(101));
        press(&mut v, "n");
        assert_eq!(
            v.found.map(|f| f.line),
            Some(100),
            "wrapped to the first again"
        );
        press(&mut v, "/nowhere\r");
        assert!(shown(&v)[5].contains("not found: nowhere"));
        // Backspace and Escape while typing.
        press(&mut v, "/ab");
        v.key(&KeyEvent::press(PhysicalKey::BACKSPACE, ModSet::NONE));
        assert!(shown(&v)[5].starts_with("/a"), "{:?}", shown(&v)[5]);
        v.key(&KeyEvent::press(PhysicalKey::ESCAPE, ModSet::NONE));
        assert_eq!(press(&mut v, "q"), ViewKey::Leave);
    }

    #[test]
    fn rows_are_cut_to_the_width_and_controls_never_reach_the_terminal() {
        let doc = serde_json::json!({
            "scrollback": ["\u{9b}31mred\u{7}", "wide: 日本語日本語日本語"],
            "lines": ["x".repeat(50)],
        });
        let v = HistoryView::new(&TerminalId::Local(2), &doc, 20, 4);
        let bytes = v.render();
        assert!(!String::from_utf8_lossy(&bytes).contains('\u{9b}'));
        let rows = shown(&v);
        assert_eq!(rows[0], "?31mred?");
        assert_eq!(rows[1], "wide: 日本語日本語日");
        assert_eq!(rows[2], "x".repeat(20));
    }
}
