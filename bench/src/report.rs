//! The printed table and the JSON document.

use serde_json::{Map, Value, json};

/// How a target compares a measured value with its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// value ≥ bound.
    AtLeast,
    /// value ≤ bound.
    AtMost,
}

/// One target from the issue, with what this run measured.
#[derive(Debug, Clone)]
pub struct Target {
    /// What is compared.
    pub name: String,
    /// The measured value (a ratio, KiB, or lost bytes); `None` when it could not be taken.
    pub value: Option<f64>,
    /// The comparison.
    pub op: Op,
    /// The bound.
    pub bound: f64,
}

impl Target {
    /// Whether the target is met; `None` when it was not measured.
    pub fn met(&self) -> Option<bool> {
        self.value.map(|v| match self.op {
            Op::AtLeast => v >= self.bound,
            Op::AtMost => v <= self.bound,
        })
    }

    fn verdict(&self) -> &'static str {
        match self.met() {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        }
    }
}

/// Everything measured in one run.
#[derive(Debug, Default)]
pub struct Report {
    /// Section name → figures, for `--json`.
    pub json: Map<String, Value>,
    /// The targets, in section order.
    pub targets: Vec<Target>,
    /// Skips and caveats, printed at the end.
    pub notes: Vec<String>,
}

impl Report {
    /// Adds a target.
    pub fn target(&mut self, name: impl Into<String>, value: Option<f64>, op: Op, bound: f64) {
        self.targets.push(Target {
            name: name.into(),
            value,
            op,
            bound,
        });
    }

    /// Adds a caveat (also printed at once).
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        println!("  note: {note}");
        self.notes.push(note);
    }

    /// The targets table.
    pub fn targets_table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .targets
            .iter()
            .map(|t| {
                let op = match t.op {
                    Op::AtLeast => "≥",
                    Op::AtMost => "≤",
                };
                vec![
                    t.name.clone(),
                    t.value
                        .map_or_else(|| "-".to_owned(), |v| format!("{v:.3}")),
                    format!("{op} {}", t.bound),
                    t.verdict().to_owned(),
                ]
            })
            .collect();
        table(&["target", "measured", "bound", "verdict"], &rows)
    }

    /// The whole document for `--json`.
    pub fn to_json(&self) -> Value {
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "value": t.value,
                    "op": match t.op { Op::AtLeast => ">=", Op::AtMost => "<=" },
                    "bound": t.bound,
                    "met": t.met(),
                })
            })
            .collect();
        let mut doc = self.json.clone();
        doc.insert("targets".into(), Value::Array(targets));
        doc.insert("notes".into(), json!(self.notes));
        Value::Object(doc)
    }
}

/// Left-aligned first column, right-aligned others, two spaces apart.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            if let Some(w) = width.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        for (i, cell) in cells.iter().enumerate() {
            let w = width.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(cell.chars().count());
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.push('\n');
    };
    line(headers.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// `v` with `digits` decimals, or `-`.
pub fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_compare_in_their_direction() {
        let mut r = Report::default();
        r.target("a", Some(0.9), Op::AtLeast, 0.85);
        r.target("b", Some(2.0), Op::AtMost, 1.5);
        r.target("c", None, Op::AtMost, 1.0);
        let met: Vec<_> = r.targets.iter().map(Target::met).collect();
        assert_eq!(met, [Some(true), Some(false), None]);
        let text = r.targets_table();
        assert!(text.contains("MISSED") && text.contains("not measured"));
        let doc = r.to_json();
        assert_eq!(doc["targets"][1]["met"], json!(false));
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(&["name", "x"], &[vec!["long name".into(), "1".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "name       x");
        assert_eq!(lines[1], "long name  1");
    }
}
