//! The GET_SCREEN document (`ScreenState`, schema version 3).

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::Terminal;
use crate::grid::{
    BLINK, BOLD, Cell, Color, DIM, DOUBLE_UNDERLINE, INVERSE, INVISIBLE, ITALIC, Pen,
    STRIKETHROUGH, UNDERLINE,
};

/// The `schema_version` of the documents built here.
pub const SCREEN_SCHEMA_VERSION: u32 = 3;

/// Bounds on one screen document, so that its reply frame stays under the frame cap however
/// large the screen and its history are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScreenLimits {
    /// JSON bytes the `scrollback` rows may take: the newest requested rows that fit are kept
    /// and `scrollback_truncated` says that older ones were left out.
    pub scrollback_bytes: usize,
    /// JSON bytes the `cells` array may take: a larger one is not built.
    pub cells_bytes: usize,
}

/// The `cells` array of a screen would take more bytes than its limit allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellsTooLarge;

impl std::fmt::Display for CellsTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the styled cells of the screen exceed the reply limit")
    }
}

impl std::error::Error for CellsTooLarge {}

impl Terminal {
    /// The GET_SCREEN reply as JSON text; see [`screen_value`](Self::screen_value).
    pub fn screen_json(&self, pane: u32, request_scrollback: Option<u32>, cells: bool) -> String {
        self.screen_value(pane, request_scrollback, cells)
            .to_string()
    }

    /// The GET_SCREEN reply as a JSON value, so GET_TERMINAL_STATE can add its keys.
    ///
    /// `request_scrollback`: `None` returns no history, `Some(0)` all that is retained,
    /// `Some(n)` the `n` newest rows. `cells` adds the sparse `cells` array.
    pub fn screen_value(&self, pane: u32, request_scrollback: Option<u32>, cells: bool) -> Value {
        let mut doc = self.document(pane, wanted_rows(request_scrollback));
        // [SCREEN.JSON.5]
        if cells {
            doc.insert(
                "cells".into(),
                self.styled_cells().collect::<Vec<_>>().into(),
            );
        }
        Value::Object(doc)
    }

    /// The GET_SCREEN reply as JSON text within `limits`: the history rows are the newest
    /// requested ones whose JSON fits `limits.scrollback_bytes` (with `"scrollback_truncated":
    /// true` when some were left out), and a `cells` array larger than `limits.cells_bytes`
    /// is refused, having been built only up to that bound.
    pub fn screen_json_within(
        &self,
        pane: u32,
        request_scrollback: Option<u32>,
        cells: bool,
        limits: ScreenLimits,
    ) -> Result<String, CellsTooLarge> {
        let array = if cells {
            Some(self.styled_cells_within(limits.cells_bytes)?)
        } else {
            None
        };
        let mut text = self
            .screen_value_within(pane, request_scrollback, limits.scrollback_bytes)
            .to_string();
        if let Some(array) = array {
            // The document is an object: `cells` joins it before its closing brace.
            text.pop();
            text.push_str(",\"cells\":");
            text.push_str(&array);
            text.push('}');
        }
        Ok(text)
    }

    /// The GET_SCREEN document without cells, its history bounded as in
    /// [`screen_json_within`](Self::screen_json_within), so GET_TERMINAL_STATE can add its keys.
    pub fn screen_value_within(
        &self,
        pane: u32,
        request_scrollback: Option<u32>,
        scrollback_bytes: usize,
    ) -> Value {
        let wanted = wanted_rows(request_scrollback).min(self.history_above());
        let fitting = self.newest_rows_fitting(wanted, scrollback_bytes);
        let mut doc = self.document(pane, fitting);
        if fitting < wanted {
            doc.insert("scrollback_truncated".into(), true.into());
        }
        Value::Object(doc)
    }

    /// The history rows above the screen shown: none above the alternate screen, which keeps
    /// no history (phux L1.md §6.1 reads "history above the viewport", and ScreenState's
    /// soft wraps join the last history row to the first viewport row).
    fn history_above(&self) -> usize {
        if self.vt.alt_active {
            0
        } else {
            self.vt.history.len()
        }
    }

    /// How many of the `wanted` newest history rows fit in `budget` bytes of JSON strings
    /// (each with its separating comma), counted from the newest back.
    fn newest_rows_fitting(&self, wanted: usize, budget: usize) -> usize {
        let lens: Vec<usize> = self
            .vt
            .history
            .newest(wanted)
            .map(|(text, _)| json_string_len(text) + 1)
            .collect();
        let mut used = 0usize;
        lens.iter()
            .rev()
            .take_while(|&&len| {
                used = used.saturating_add(len);
                used <= budget
            })
            .count()
    }

    /// Every key but `cells`, with the `history_rows` newest history rows.
    fn document(&self, pane: u32, history_rows: usize) -> Map<String, Value> {
        let vt = &self.vt;
        let (cols, rows) = self.size();

        // [SCREEN.JSON.2] exactly `rows` viewport rows top to bottom, right-trimmed.
        let mut lines = Vec::with_capacity(usize::from(rows));
        let mut wrapped_lines = Vec::new();
        for (y, row) in vt.screen.iter().enumerate() {
            lines.push(Value::String(row.text()));
            if row.wrapped {
                wrapped_lines.push(Value::from(y));
            }
        }

        // [SCREEN.JSON.3] absent = none, 0 = all retained, n = the n newest, oldest first.
        let mut scrollback = Vec::new();
        let mut wrapped_scrollback = Vec::new();
        let history_rows = history_rows.min(self.history_above());
        for (i, (text, wrapped)) in vt.history.newest(history_rows).enumerate() {
            scrollback.push(Value::String(text.to_owned()));
            if wrapped {
                wrapped_scrollback.push(Value::from(i));
            }
        }

        // [SCREEN.JSON.1]
        let mut doc = Map::new();
        doc.insert("schema_version".into(), SCREEN_SCHEMA_VERSION.into());
        doc.insert("pane".into(), pane.into());
        doc.insert("cols".into(), cols.into());
        doc.insert("rows".into(), rows.into());
        // In the wrap-pending state the cursor is drawn on the last column, where it is kept.
        doc.insert(
            "cursor".into(),
            json!({
                "x": vt.cur.x,
                "y": vt.cur.y,
                "visible": !vt.cursor_hidden,
            }),
        );
        doc.insert("lines".into(), lines.into());
        doc.insert("scrollback".into(), scrollback.into());
        // [SCREEN.JSON.4]
        if let Some(title) = self.title() {
            doc.insert("title".into(), title.into());
        }
        doc.insert(
            "soft_wrap".into(),
            json!({ "lines": wrapped_lines, "scrollback": wrapped_scrollback }),
        );
        doc
    }

    /// The `cells` array as JSON text, or `Err` as soon as it passes `limit` bytes: a
    /// refused array costs no more than an accepted one.
    fn styled_cells_within(&self, limit: usize) -> Result<String, CellsTooLarge> {
        let mut out = String::from("[");
        for (i, cell) in self.styled_cells().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // Writing to a String cannot fail.
            let _ = write!(out, "{cell}");
            if out.len() >= limit {
                return Err(CellsTooLarge);
            }
        }
        out.push(']');
        Ok(out)
    }

    /// One object per viewport cell whose style is not the default, top to bottom.
    fn styled_cells(&self) -> impl Iterator<Item = Value> + '_ {
        self.vt.screen.iter().enumerate().flat_map(|(y, row)| {
            row.cells[..usize::from(row.used())]
                .iter()
                .enumerate()
                .filter(|(_, cell)| !cell.is_wide_cont() && cell.styled())
                .map(move |(x, &cell)| {
                    let mut text = String::new();
                    if cell.has_contents() {
                        text.push(cell.ch());
                        text.push_str(row.marks_at(x as u16));
                    }
                    cell_json(y, x, cell, row.pen(cell), &text)
                })
        })
    }
}

/// The rows `request_scrollback` asks for: none, all (0) or the n newest.
fn wanted_rows(request_scrollback: Option<u32>) -> usize {
    match request_scrollback {
        None => 0,
        Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

/// The length of `s` as a JSON string as serde_json writes it: quotes, two-byte escapes for
/// `"`, `\\` and the named controls, six bytes for the other controls.
fn json_string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// A styled cell as JSON, in the shape phux's L1.md §6.1 fixes: `{col, row, style}`, the style
/// holding every attribute as a bool and `fg` / `bg` as `{"kind": ...}` objects. phux's own
/// client reads `style` and each of its keys as required, so none may be left out. Beyond
/// phux, a cell also carries its `text` and `wide`, and a doubly underlined style says so with
/// `double_underline` (phux's `underline` means any underline).
fn cell_json(row: usize, col: usize, cell: Cell, pen: Pen, text: &str) -> Value {
    let double = pen.has_bg(DOUBLE_UNDERLINE);
    let mut style = json!({
        "bold": pen.has(BOLD),
        "faint": pen.has(DIM),
        "italic": pen.has(ITALIC),
        "underline": pen.has(UNDERLINE) || double,
        "blink": pen.has_bg(BLINK),
        "inverse": pen.has(INVERSE),
        "invisible": pen.has_bg(INVISIBLE),
        "strikethrough": pen.has_bg(STRIKETHROUGH),
        // SGR 53 is not kept: xterm has no overline, and neither has our model.
        "overline": false,
        "fg": color(Color::unpack(pen.fg)),
        "bg": color(Color::unpack(pen.bg)),
    });
    if double && let Value::Object(map) = &mut style {
        map.insert("double_underline".into(), true.into());
    }
    json!({
        "col": col,
        "row": row,
        "style": style,
        "text": text,
        "wide": cell.is_wide(),
    })
}

/// A colour as JSON, tagged as phux's `CellColor` is: `{"kind": "default"}`, `{"kind":
/// "palette", "index": n}` or `{"kind": "rgb", "r": .., "g": .., "b": ..}`.
fn color(c: Color) -> Value {
    match c {
        Color::Default => json!({"kind": "default"}),
        Color::Idx(i) => json!({"kind": "palette", "index": i}),
        Color::Rgb(r, g, b) => json!({"kind": "rgb", "r": r, "g": g, "b": b}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const UNBOUNDED: ScreenLimits = ScreenLimits {
        scrollback_bytes: usize::MAX,
        cells_bytes: usize::MAX,
    };

    fn history_of(rows: usize) -> Terminal {
        let mut t = Terminal::new(20, 3, 100);
        for i in 0..rows {
            t.advance(format!("row {i}\r\n").as_bytes());
        }
        t
    }

    proptest! {
        #[test]
        fn json_string_len_is_serde_json_s(s in "\\PC*|[\\x00-\\x7f]*") {
            prop_assert_eq!(json_string_len(&s), Value::String(s.clone()).to_string().len());
        }
    }

    #[test]
    fn within_unbounded_limits_is_the_plain_document() {
        let mut t = history_of(30);
        t.advance(b"\x1b[1;31mred\x1b[m");
        let bounded: Value =
            serde_json::from_str(&t.screen_json_within(4, Some(0), true, UNBOUNDED).unwrap())
                .unwrap();
        assert_eq!(bounded, t.screen_value(4, Some(0), true));
    }

    #[test]
    fn history_keeps_the_newest_rows_that_fit() {
        let t = history_of(30);
        let all = t.screen_value(1, Some(0), false);
        let rows = all["scrollback"].as_array().unwrap().len();
        // Each row is `"row NN",`: 9 bytes; room for exactly 5 of them.
        let v = t.screen_value_within(1, Some(0), 5 * 9);
        let kept = v["scrollback"].as_array().unwrap();
        assert_eq!(kept.len(), 5);
        assert_eq!(kept[..], all["scrollback"].as_array().unwrap()[rows - 5..]);
        assert_eq!(v["scrollback_truncated"], true);
        // Everything fits: no flag.
        let v = t.screen_value_within(1, Some(0), usize::MAX);
        assert_eq!(v["scrollback"], all["scrollback"]);
        assert!(v.get("scrollback_truncated").is_none());
        // A request for fewer rows than retained is not a truncation.
        let v = t.screen_value_within(1, Some(3), 5 * 9);
        assert_eq!(v["scrollback"].as_array().unwrap().len(), 3);
        assert!(v.get("scrollback_truncated").is_none());
    }

    #[test]
    fn cells_over_the_limit_are_refused() {
        let mut t = Terminal::new(80, 24, 0);
        t.advance(b"\x1b[7m");
        t.advance(&[b'x'; 80 * 24]);
        let limits = ScreenLimits {
            scrollback_bytes: usize::MAX,
            cells_bytes: 4096,
        };
        assert_eq!(
            t.screen_json_within(1, None, true, limits),
            Err(CellsTooLarge)
        );
        // Without cells the same screen is answered.
        assert!(t.screen_json_within(1, None, false, limits).is_ok());
    }
}
