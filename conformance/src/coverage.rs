//! Which spec clauses the transcripts check: the table `phux-conformance coverage` prints and
//! the test that fails when a wire-checkable MUST clause has no transcript step citing it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::spec::Spec;
use crate::transcript::{Level, Transcript};

/// A clause the transcripts cannot check on the wire, with why and where it is tested.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Exemption {
    /// The clause.
    pub id: String,
    /// Why the wire cannot show it.
    pub reason: String,
    /// The test that covers it instead.
    pub covered_by: String,
}

/// Parses `not-wire-checkable.txt`: `ID | reason | covering test` per line, `#` comments.
pub fn parse_exemptions(text: &str) -> Result<Vec<Exemption>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split_once('#').map_or(line, |(code, _)| code).trim();
        if line.is_empty() {
            continue;
        }
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let [id, reason, covered_by] = parts.as_slice() else {
            return Err(format!(
                "line {}: expected `ID | reason | covering test`",
                i + 1
            ));
        };
        if reason.is_empty() || covered_by.is_empty() {
            return Err(format!(
                "line {}: a reason and a covering test are required",
                i + 1
            ));
        }
        out.push(Exemption {
            id: (*id).to_owned(),
            reason: (*reason).to_owned(),
            covered_by: (*covered_by).to_owned(),
        });
    }
    Ok(out)
}

/// Transcript ids whose steps cite each clause.
pub fn citations(transcripts: &[Transcript]) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in transcripts {
        for step in &t.steps {
            for clause in &step.clauses {
                out.entry(clause.clone()).or_default().insert(t.id.clone());
            }
        }
    }
    out
}

/// The coverage of the spec by the transcripts.
#[derive(Clone, Debug)]
pub struct Coverage {
    /// Per clause: level, citing transcripts, exemption.
    pub rows: Vec<Row>,
    /// Clauses cited by a step that are not in the spec.
    pub unknown_citations: Vec<String>,
    /// Exempted clauses that are not in the spec.
    pub unknown_exemptions: Vec<String>,
}

/// One clause's line of the table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The clause.
    pub id: String,
    /// Its level.
    pub level: Level,
    /// Transcripts with a step citing it.
    pub transcripts: Vec<String>,
    /// Why it is not wire-checkable, if it is exempt.
    pub exemption: Option<Exemption>,
}

impl Coverage {
    /// Computes the table.
    pub fn new(spec: &Spec, transcripts: &[Transcript], exemptions: &[Exemption]) -> Self {
        let cites = citations(transcripts);
        let rows = spec
            .clauses
            .values()
            .map(|c| Row {
                id: c.id.clone(),
                level: c.level,
                transcripts: cites
                    .get(&c.id)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default(),
                exemption: exemptions.iter().find(|e| e.id == c.id).cloned(),
            })
            .collect();
        Self {
            rows,
            unknown_citations: cites
                .keys()
                .filter(|id| !spec.clauses.contains_key(*id))
                .cloned()
                .collect(),
            unknown_exemptions: exemptions
                .iter()
                .filter(|e| !spec.clauses.contains_key(&e.id))
                .map(|e| e.id.clone())
                .collect(),
        }
    }

    /// MUST clauses with no citing step and no exemption.
    pub fn uncovered_must(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.level == Level::Must && r.transcripts.is_empty() && r.exemption.is_none())
            .collect()
    }

    /// The printed table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{:<28} {:<6} covered by", "clause", "level");
        for r in &self.rows {
            let by = if !r.transcripts.is_empty() {
                r.transcripts.join(" ")
            } else if let Some(e) = &r.exemption {
                format!(
                    "(not on the wire: {}; tested by {})",
                    e.reason, e.covered_by
                )
            } else {
                "-".to_owned()
            };
            let _ = writeln!(out, "{:<28} {:<6} {by}", r.id, r.level.to_string());
        }
        let must = self.rows.iter().filter(|r| r.level == Level::Must).count();
        let cited = self
            .rows
            .iter()
            .filter(|r| r.level == Level::Must && !r.transcripts.is_empty())
            .count();
        let exempt = self
            .rows
            .iter()
            .filter(|r| r.level == Level::Must && r.transcripts.is_empty() && r.exemption.is_some())
            .count();
        let _ = writeln!(
            out,
            "\nMUST clauses: {must}; cited by a transcript step: {cited}; not wire-checkable: \
             {exempt}; uncovered: {}",
            self.uncovered_must().len()
        );
        if !self.unknown_citations.is_empty() {
            let _ = writeln!(
                out,
                "cited but not in the spec: {}",
                self.unknown_citations.join(" ")
            );
        }
        out
    }
}

/// Every `[CLAUSE.ID]` cited in `text` (as in a Rust comment or test).
pub fn cited_in_source(text: &str) -> Vec<String> {
    crate::transcript::cited_clauses(text)
}
