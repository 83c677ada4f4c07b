//! Rows and screens as data, for a server that carries its terminals across an in-place
//! upgrade: a row is written as its used cells (the cells past `used` are blank by the row's
//! invariant), its marks and its style table; reading one back checks every invariant the
//! row's code relies on, so a row that deserializes is a valid row.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Cell, Cells, Extra, LINEAR_STYLES, Pen, Row, pen_key, style_bound};

#[derive(Serialize)]
struct RowOut<'a> {
    cols: u16,
    used: u16,
    hint: u16,
    wrapped: bool,
    cells: CellsOut<'a>,
    extra: Option<ExtraOut<'a>>,
}

#[derive(Serialize)]
struct ExtraOut<'a> {
    marks: &'a BTreeMap<u16, String>,
    styles: &'a [Pen],
}

/// Cells as (code word, style id) pairs.
struct CellsOut<'a>(&'a [Cell]);

impl Serialize for CellsOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| {
            let (code, style) = (c.code, c.style);
            (code, style)
        }))
    }
}

#[derive(Deserialize)]
struct RowIn {
    cols: u16,
    used: u16,
    hint: u16,
    wrapped: bool,
    cells: Vec<(u32, u16)>,
    extra: Option<ExtraIn>,
}

#[derive(Deserialize)]
struct ExtraIn {
    marks: BTreeMap<u16, String>,
    styles: Vec<Pen>,
}

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RowOut {
            cols: self.cols(),
            used: self.used,
            hint: self.hint,
            wrapped: self.wrapped,
            cells: CellsOut(&self.cells[..usize::from(self.used)]),
            extra: self.extra.as_deref().map(|e| ExtraOut {
                marks: &e.marks,
                styles: &e.styles,
            }),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = RowIn::deserialize(d)?;
        Self::from_parts(r).map_err(D::Error::custom)
    }
}

impl Row {
    fn from_parts(r: RowIn) -> Result<Self, &'static str> {
        if r.cols == 0 || r.used > r.cols || r.cells.len() != usize::from(r.used) {
            return Err("row: cells do not match its width");
        }
        let styles = r.extra.as_ref().map_or(0, |e| e.styles.len());
        if styles > style_bound(r.cols) {
            return Err("row: style table over its bound");
        }
        if r.cells
            .iter()
            .any(|&(_, style)| usize::from(style) > styles)
        {
            return Err("row: a cell names a style the row does not have");
        }
        if r.extra.as_ref().is_some_and(|e| {
            e.marks.keys().any(|&x| x >= r.used) || e.styles.contains(&Pen::default())
        }) {
            return Err("row: a mark past the used cells, or the default pen in the table");
        }
        let written = r
            .cells
            .into_iter()
            .map(|(code, style)| Cell { code, style });
        let cells = Cells::from_written(r.cols, written);
        let extra = r.extra.map(|e| {
            // The pen index is derived: rebuilt whenever the table is long enough to want it.
            let index = (e.styles.len() > LINEAR_STYLES).then(|| {
                let ids = e.styles.iter().enumerate();
                Box::new(ids.map(|(i, &p)| (pen_key(p), i as u16 + 1)).collect())
            });
            Box::new(Extra {
                marks: e.marks,
                styles: e.styles,
                index,
            })
        });
        Ok(Self {
            cells,
            extra,
            used: r.used,
            hint: r.hint,
            wrapped: r.wrapped,
        })
    }
}
