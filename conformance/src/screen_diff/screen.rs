//! A GET_SCREEN reply read as phux's own client reads it (L1.md §6.1; phux-core's
//! `ScreenState` at 16f2ffdf): the keys it requires are required here too, the ones it ignores
//! are ignored, so a reply that parses here is one phux's client can read. Then the screens'
//! differences, field by field.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// A ScreenState as phux defines it, minus what a comparison never reads (`pane`,
/// `truncated`).
#[derive(Deserialize)]
struct Wire {
    schema_version: u32,
    cols: u16,
    rows: u16,
    cursor: Option<Cursor>,
    lines: Vec<String>,
    #[serde(default)]
    scrollback: Vec<String>,
    #[serde(default)]
    cells: Option<Vec<WireCell>>,
    #[serde(default)]
    soft_wrap: Option<SoftWrap>,
    #[serde(default)]
    title: Option<String>,
}

#[derive(Deserialize)]
struct WireCell {
    col: u16,
    row: u16,
    style: Style,
}

/// The cursor: column, row, DECTCEM.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct Cursor {
    /// Column, 0-based.
    pub x: u16,
    /// Row, 0-based.
    pub y: u16,
    /// Shown (DECTCEM).
    pub visible: bool,
}

/// A cell's style as phux's `CellStyle` has it: every key required.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // the SGR attributes, one bool each, as on the wire
pub struct Style {
    /// SGR 1.
    pub bold: bool,
    /// SGR 2.
    pub faint: bool,
    /// SGR 3.
    pub italic: bool,
    /// SGR 4 (any underline).
    pub underline: bool,
    /// SGR 5.
    pub blink: bool,
    /// SGR 7.
    pub inverse: bool,
    /// SGR 8.
    pub invisible: bool,
    /// SGR 9.
    pub strikethrough: bool,
    /// SGR 53.
    pub overline: bool,
    /// Foreground.
    pub fg: Color,
    /// Background.
    pub bg: Color,
}

/// phux's `CellColor`, tagged by `kind`.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Color {
    /// The terminal's default.
    #[default]
    Default,
    /// A palette index.
    Palette {
        /// The index.
        index: u8,
    },
    /// A direct colour.
    Rgb {
        /// Red.
        r: u8,
        /// Green.
        g: u8,
        /// Blue.
        b: u8,
    },
}

#[derive(Deserialize, Clone, PartialEq, Eq, Debug, Default)]
struct SoftWrap {
    #[serde(default)]
    lines: Vec<u32>,
    #[serde(default)]
    scrollback: Vec<u32>,
}

/// One terminal's screen as the comparison sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Screen {
    /// Columns and rows.
    pub size: (u16, u16),
    /// The cursor, or `None` when the server said it has none on the screen.
    pub cursor: Option<Cursor>,
    /// The viewport's rows, right-trimmed.
    pub lines: Vec<String>,
    /// The history rows, oldest first.
    pub scrollback: Vec<String>,
    /// Viewport rows that continue on the next (`None`: not reported).
    pub wrapped_lines: Option<Vec<u32>>,
    /// Styled cells by (row, column); a cell not here has the default style.
    pub styles: BTreeMap<(u16, u16), Style>,
    /// The OSC 0 / 2 title.
    pub title: Option<String>,
}

impl Screen {
    /// Reads a GET_SCREEN reply (with `cells`) as phux's client would.
    ///
    /// # Errors
    ///
    /// What phux's client would refuse: JSON that does not parse, a missing required key (a
    /// cell without its `style`, say), the wrong schema version, no `cells`.
    pub fn parse(json: &str) -> Result<Self, String> {
        let wire: Wire = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if wire.schema_version != 3 {
            return Err(format!("schema_version {}", wire.schema_version));
        }
        let cells = wire.cells.ok_or("no cells, though they were asked for")?;
        let mut styles = BTreeMap::new();
        for cell in cells {
            // phux lists cells "with a non-default style": a default one listed says nothing.
            if cell.style != Style::default()
                && styles.insert((cell.row, cell.col), cell.style).is_some()
            {
                return Err(format!("cell ({}, {}) listed twice", cell.col, cell.row));
            }
        }
        Ok(Self {
            size: (wire.cols, wire.rows),
            cursor: wire.cursor,
            lines: wire.lines,
            scrollback: wire.scrollback,
            wrapped_lines: wire.soft_wrap.map(|w| w.lines),
            styles,
            title: wire.title,
        })
    }
}

/// One way two screens differ.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Difference {
    /// Columns and rows.
    Size((u16, u16), (u16, u16)),
    /// The cursor.
    Cursor(Option<Cursor>, Option<Cursor>),
    /// A viewport row's text.
    Line(usize, String, String),
    /// The history.
    Scrollback(Vec<String>, Vec<String>),
    /// Which viewport rows soft-wrap.
    SoftWrap(Option<Vec<u32>>, Option<Vec<u32>>),
    /// A cell's style, (row, column).
    Style((u16, u16), Style, Style),
    /// The title.
    Title(Option<String>, Option<String>),
}

impl Difference {
    /// A short name of the field, for counting.
    pub fn field(&self) -> &'static str {
        match self {
            Self::Size(..) => "size",
            Self::Cursor(..) => "cursor",
            Self::Line(..) => "lines",
            Self::Scrollback(..) => "scrollback",
            Self::SoftWrap(..) => "soft_wrap",
            Self::Style(..) => "cells",
            Self::Title(..) => "title",
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Size(ours, theirs) => write!(f, "size: ours {ours:?}, reference {theirs:?}"),
            Self::Cursor(ours, theirs) => {
                write!(f, "cursor: ours {ours:?}, reference {theirs:?}")
            }
            Self::Line(row, ours, theirs) => {
                write!(f, "row {row}: ours {ours:?}, reference {theirs:?}")
            }
            Self::Scrollback(ours, theirs) => {
                write!(f, "scrollback: ours {ours:?}, reference {theirs:?}")
            }
            Self::SoftWrap(ours, theirs) => {
                write!(f, "soft-wrapped rows: ours {ours:?}, reference {theirs:?}")
            }
            Self::Style((row, col), ours, theirs) => write!(
                f,
                "style of cell ({col}, {row}): ours {ours:?}, reference {theirs:?}"
            ),
            Self::Title(ours, theirs) => write!(f, "title: ours {ours:?}, reference {theirs:?}"),
        }
    }
}

/// Every difference between `ours` and `theirs`, field by field.
pub fn differences(ours: &Screen, theirs: &Screen) -> Vec<Difference> {
    let mut out = Vec::new();
    if ours.size != theirs.size {
        out.push(Difference::Size(ours.size, theirs.size));
    }
    if ours.cursor != theirs.cursor {
        out.push(Difference::Cursor(ours.cursor, theirs.cursor));
    }
    let rows = ours.lines.len().max(theirs.lines.len());
    for y in 0..rows {
        let (a, b) = (ours.lines.get(y), theirs.lines.get(y));
        if a != b {
            out.push(Difference::Line(
                y,
                a.cloned().unwrap_or_default(),
                b.cloned().unwrap_or_default(),
            ));
        }
    }
    if ours.scrollback != theirs.scrollback {
        out.push(Difference::Scrollback(
            ours.scrollback.clone(),
            theirs.scrollback.clone(),
        ));
    }
    if ours.wrapped_lines != theirs.wrapped_lines {
        out.push(Difference::SoftWrap(
            ours.wrapped_lines.clone(),
            theirs.wrapped_lines.clone(),
        ));
    }
    let cells: std::collections::BTreeSet<_> =
        ours.styles.keys().chain(theirs.styles.keys()).collect();
    for &at in cells {
        let a = ours.styles.get(&at).copied().unwrap_or_default();
        let b = theirs.styles.get(&at).copied().unwrap_or_default();
        if a != b {
            out.push(Difference::Style(at, a, b));
        }
    }
    if ours.title != theirs.title {
        out.push(Difference::Title(ours.title.clone(), theirs.title.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE_REPLY: &str = r#"{"schema_version":3,"pane":2,"cols":20,"rows":2,
        "cursor":{"x":2,"y":1,"visible":true},"lines":["abcde\u4e2d"," x"],"scrollback":[],
        "cells":[{"col":2,"row":0,"style":{"bold":true,"faint":false,"italic":false,
        "underline":false,"blink":false,"inverse":false,"invisible":false,
        "strikethrough":false,"overline":false,"fg":{"kind":"palette","index":1},
        "bg":{"kind":"default"}}}],"soft_wrap":{"lines":[],"scrollback":[]},"title":"done"}"#;

    #[test]
    fn a_reference_reply_parses() {
        let s = Screen::parse(REFERENCE_REPLY).unwrap();
        assert_eq!(s.size, (20, 2));
        assert_eq!(s.lines[1], " x");
        assert_eq!(s.styles[&(0, 2)].fg, Color::Palette { index: 1 });
        assert!(s.styles[&(0, 2)].bold);
        assert_eq!(s.title.as_deref(), Some("done"));
    }

    #[test]
    fn a_cell_without_its_style_is_refused_as_phux_s_client_refuses_it() {
        let old = r#"{"schema_version":3,"pane":1,"cols":2,"rows":1,"cursor":null,
            "lines":[""],"scrollback":[],"cells":[{"row":0,"col":0,"text":"B","bold":true}]}"#;
        let e = Screen::parse(old).unwrap_err();
        assert!(e.contains("style"), "{e}");
    }

    #[test]
    fn differences_name_each_field() {
        let a = Screen::parse(REFERENCE_REPLY).unwrap();
        let mut b = a.clone();
        b.lines[1] = " y".into();
        b.styles.clear();
        b.cursor = None;
        let d = differences(&a, &b);
        let fields: Vec<_> = d.iter().map(Difference::field).collect();
        assert_eq!(fields, ["cursor", "lines", "cells"]);
        assert!(differences(&a, &a).is_empty());
    }
}
