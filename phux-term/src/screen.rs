//! The GET_SCREEN document (`ScreenState`, schema version 3).

use serde_json::{Map, Value, json};

use crate::Terminal;
use crate::grid::{
    BLINK, BOLD, Cell, Color, DIM, DOUBLE_UNDERLINE, INVERSE, INVISIBLE, ITALIC, Pen,
    STRIKETHROUGH, UNDERLINE,
};

/// The `schema_version` of the documents built here.
pub const SCREEN_SCHEMA_VERSION: u32 = 3;

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
        let wanted = match request_scrollback {
            None => 0,
            Some(0) => usize::MAX,
            Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let mut scrollback = Vec::new();
        let mut wrapped_scrollback = Vec::new();
        for (i, (text, wrapped)) in vt.history.newest(wanted).enumerate() {
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
        // [SCREEN.JSON.5]
        if cells {
            doc.insert("cells".into(), self.styled_cells().into());
        }
        Value::Object(doc)
    }

    /// One object per viewport cell whose style is not the default.
    fn styled_cells(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for (y, row) in self.vt.screen.iter().enumerate() {
            for (x, &cell) in row.cells[..usize::from(row.used())].iter().enumerate() {
                if cell.is_wide_cont() || !cell.styled() {
                    continue;
                }
                let mut text = String::new();
                if cell.has_contents() {
                    text.push(cell.ch());
                    text.extend(row.marks_at(x as u16));
                }
                out.push(cell_json(y, x, cell, row.pen(cell), &text));
            }
        }
        out
    }
}

/// A styled cell as JSON. The attributes added after schema 3 was fixed (blink, invisible,
/// strikethrough, double underline) are keys present only when set: clients ignore keys they
/// do not know, and cells without them stay as they were.
fn cell_json(row: usize, col: usize, cell: Cell, pen: Pen, text: &str) -> Value {
    let mut v = json!({
        "row": row,
        "col": col,
        "text": text,
        "fg": color(Color::unpack(pen.fg)),
        "bg": color(Color::unpack(pen.bg)),
        "bold": pen.has(BOLD),
        "dim": pen.has(DIM),
        "italic": pen.has(ITALIC),
        "underline": pen.has(UNDERLINE),
        "inverse": pen.has(INVERSE),
        "wide": cell.is_wide(),
    });
    if let Value::Object(map) = &mut v {
        for (attr, key) in [
            (BLINK, "blink"),
            (INVISIBLE, "invisible"),
            (STRIKETHROUGH, "strikethrough"),
            (DOUBLE_UNDERLINE, "double_underline"),
        ] {
            if pen.has_bg(attr) {
                map.insert(key.into(), true.into());
            }
        }
    }
    v
}

/// A colour as JSON: `null` (the default), a palette index, or `"#rrggbb"`.
fn color(c: Color) -> Value {
    match c {
        Color::Default => Value::Null,
        Color::Idx(i) => i.into(),
        Color::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}").into(),
    }
}
