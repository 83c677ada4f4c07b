//! The GET_SCREEN document (`ScreenState`, schema version 3).

use serde_json::{Map, Value, json};

use super::TerminalState;

/// The `schema_version` of the documents built here.
pub const SCREEN_SCHEMA_VERSION: u32 = 3;

impl TerminalState {
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
        let screen = self.parser.screen();
        let (cols, rows) = self.size();
        let (cursor_row, cursor_col) = screen.cursor_position();

        // [SCREEN.STATE.1] viewport rows top to bottom, right-trimmed.
        let lines: Vec<Value> = screen
            .rows(0, cols)
            .map(|row| Value::String(trim_right(row)))
            .collect();
        let wrapped_lines: Vec<Value> = (0..rows)
            .filter(|&r| screen.row_wrapped(r))
            .map(Value::from)
            .collect();

        // [SCREEN.JSON.3] absent = none, 0 = all retained, n = the n newest.
        let history = &self.parser.callbacks().history;
        let wanted = match request_scrollback {
            None => 0,
            Some(0) => usize::MAX,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let mut scrollback = Vec::new();
        let mut wrapped_scrollback = Vec::new();
        for (i, row) in history.newest(wanted).enumerate() {
            scrollback.push(Value::String(row.text.clone()));
            if row.wrapped {
                wrapped_scrollback.push(Value::from(i));
            }
        }

        let mut doc = Map::new();
        doc.insert("schema_version".into(), SCREEN_SCHEMA_VERSION.into());
        doc.insert("pane".into(), pane.into());
        doc.insert("cols".into(), cols.into());
        doc.insert("rows".into(), rows.into());
        // vt100 leaves the column one past the edge after writing the last cell (the
        // pending-wrap state); report the cell the cursor is drawn on.
        doc.insert(
            "cursor".into(),
            json!({
                "x": cursor_col.min(cols.saturating_sub(1)),
                "y": cursor_row,
                "visible": !screen.hide_cursor(),
            }),
        );
        doc.insert("lines".into(), lines.into());
        doc.insert("scrollback".into(), scrollback.into());
        if let Some(title) = self.title() {
            doc.insert("title".into(), title.into());
        }
        doc.insert(
            "soft_wrap".into(),
            json!({ "lines": wrapped_lines, "scrollback": wrapped_scrollback }),
        );
        if cells {
            doc.insert("cells".into(), self.styled_cells().into());
        }
        Value::Object(doc)
    }

    /// One object per viewport cell whose style is not the default.
    fn styled_cells(&self) -> Vec<Value> {
        let screen = self.parser.screen();
        let (cols, rows) = self.size();
        let mut out = Vec::new();
        for row in 0..rows {
            for col in 0..cols {
                let Some(cell) = screen.cell(row, col) else {
                    continue;
                };
                if cell.is_wide_continuation() || !styled(cell) {
                    continue;
                }
                out.push(json!({
                    "row": row,
                    "col": col,
                    "text": cell.contents(),
                    "fg": color(cell.fgcolor()),
                    "bg": color(cell.bgcolor()),
                    "bold": cell.bold(),
                    "dim": cell.dim(),
                    "italic": cell.italic(),
                    "underline": cell.underline(),
                    "inverse": cell.inverse(),
                    "wide": cell.is_wide(),
                }));
            }
        }
        out
    }
}

fn styled(cell: &vt100::Cell) -> bool {
    cell.fgcolor() != vt100::Color::Default
        || cell.bgcolor() != vt100::Color::Default
        || cell.bold()
        || cell.dim()
        || cell.italic()
        || cell.underline()
        || cell.inverse()
}

/// A colour as JSON: `null` (the default), a palette index, or `"#rrggbb"`.
fn color(c: vt100::Color) -> Value {
    match c {
        vt100::Color::Default => Value::Null,
        vt100::Color::Idx(i) => i.into(),
        vt100::Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}").into(),
    }
}

fn trim_right(mut s: String) -> String {
    let len = s.trim_end_matches(' ').len();
    s.truncate(len);
    s
}
