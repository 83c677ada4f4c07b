//! The requirements matrix of phux 0.8 itself: every normative sentence of phux's own
//! documents (`docs/spec/L1.md`, `proto.md`, `input.md`, the appendices, and the decisions of
//! ADR-0053, ADR-0033 and ADR-0032, at phall1/phux 16f2ffdf), each with a stable id of phux's
//! section, traced to the clauses of our spec that state it and so to the cases that check
//! it, or to a stated reason why no case can.
//!
//! The matrix is `conformance/phux-requirements.toml`, written by hand; `PHUX-REQUIREMENTS.md`
//! is generated from it (`phux-conformance matrix --markdown`) and a test keeps the two in step.
//! A row's id is `<document> §<section>/<n>`: the n-th traced sentence of that section, in
//! document order, numbered once and never renumbered (a sentence found later takes the next
//! free number of its section).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::json;

use crate::spec::Spec;
use crate::transcript::Transcript;

/// Why a sentence has no case, by key. A row names one of these or maps to clauses.
pub const REASONS: &[(&str, &str)] = &[
    (
        "consumer",
        "a rule for clients and consumers: the suite checks servers (client rules of ours are \
         tested by phux-ctl's and phux-core's own tests)",
    ),
    (
        "transport",
        "below the frames: the transport's own setup (QUIC, the relay, SSH, socket \
         permissions), which no frame exchange over an established stream can show",
    ),
    (
        "native",
        "NativeState, SynthesizedVtStateSync, FRAME_ACK and history pages: profiles a server \
         may decline; the suite offers SynthesizedVtRaw only, so a server never selects them",
    ),
    (
        "layer3",
        "layer 3 (metadata, sessions, windows, ATTACH and its roles): optional, and not spoken \
         by phux-rs, so no case can require it",
    ),
    (
        "federation",
        "a federation hub's relaying: a hub needs satellites the suite does not provide (a \
         server without a hub link answers satellite ids, which cases check)",
    ),
    (
        "optional-feature",
        "a frame or command gated on a feature bit phux-rs does not advertise (MOVE_TERMINAL, \
         PUT_FILE, INPUT_TERMINAL_REPLY, REPORT_AGENT_STATE): a case would be UNSUPPORTED on a \
         server without it",
    ),
    (
        "editorial",
        "a rule for the spec's authors (how the wire may grow, what a proposal says), not for \
         a peer on the wire",
    ),
    (
        "internal",
        "how a server is built inside (locks, threads, write calls, memory): the wire shows \
         only the outcome, which other rows trace",
    ),
    (
        "unobservable",
        "a freedom or an outcome no peer can tell apart on the wire (timing, a MAY, what a \
         server retains without showing it)",
    ),
    ("todo", "wire-checkable, and no case checks it yet"),
];

/// How strongly a traced sentence binds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    /// MUST, MUST NOT, SHALL, SHALL NOT, REQUIRED.
    Must,
    /// SHOULD, SHOULD NOT, RECOMMENDED.
    Should,
    /// A numbered decision of an ADR.
    Decision,
    /// A sentence without a key word that states behaviour our clauses rest on (traced so
    /// that every phux-profile clause cites phux's text).
    States,
}

impl Kind {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "MUST" => Self::Must,
            "SHOULD" => Self::Should,
            "DECISION" => Self::Decision,
            "STATES" => Self::States,
            _ => return None,
        })
    }

    /// The name in the matrix.
    pub fn name(self) -> &'static str {
        match self {
            Self::Must => "MUST",
            Self::Should => "SHOULD",
            Self::Decision => "DECISION",
            Self::States => "STATES",
        }
    }

    /// Whether the sentence is normative (counts toward the matrix's figures).
    pub fn normative(self) -> bool {
        self != Self::States
    }
}

/// One traced sentence of phux's documents.
#[derive(Clone, Debug)]
pub struct Requirement {
    /// `proto.md §5/2`.
    pub id: String,
    /// How strongly it binds.
    pub kind: Kind,
    /// The sentence, as phux writes it (the thing traced).
    pub text: String,
    /// Our clauses that state it.
    pub clauses: Vec<String>,
    /// Why no case can check it, a key of [`REASONS`].
    pub reason: Option<String>,
    /// A short remark (which part a clause covers, why a reason applies).
    pub note: Option<String>,
}

/// The matrix as read from its file.
#[derive(Clone, Debug, Default)]
pub struct Matrix {
    /// Where phux's text comes from (`phall1/phux 16f2ffdf`).
    pub source: String,
    /// Every row, in file order.
    pub rows: Vec<Requirement>,
}

impl Matrix {
    /// Parses `phux-requirements.toml`, checking each row's shape.
    pub fn parse(text: &str) -> Result<Self, String> {
        let doc: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
        let source = doc
            .get("source")
            .and_then(toml::Value::as_str)
            .ok_or("`source` is missing")?
            .to_owned();
        let mut rows = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, row) in doc
            .get("req")
            .and_then(toml::Value::as_array)
            .ok_or("no [[req]] rows")?
            .iter()
            .enumerate()
        {
            let at = |what: &str| format!("row {}: {what}", i + 1);
            let text_of = |key: &str| {
                row.get(key)
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned)
            };
            let id = text_of("id").ok_or_else(|| at("no id"))?;
            if !is_requirement_id(&id) {
                return Err(at(&format!("`{id}` is not `<doc> §<section>/<n>`")));
            }
            if !seen.insert(id.clone()) {
                return Err(at(&format!("`{id}` appears twice")));
            }
            let kind = text_of("level")
                .as_deref()
                .and_then(Kind::parse)
                .ok_or_else(|| at("level is not MUST, SHOULD, DECISION or STATES"))?;
            let clauses: Vec<String> = match row.get("clauses") {
                None => Vec::new(),
                Some(v) => v
                    .as_array()
                    .ok_or_else(|| at("clauses is not a list"))?
                    .iter()
                    .map(|c| {
                        c.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| at("a clause is not a string"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            let reason = text_of("reason");
            if let Some(r) = &reason
                && !REASONS.iter().any(|(k, _)| k == r)
            {
                return Err(at(&format!("unknown reason `{r}`")));
            }
            if clauses.is_empty() && reason.is_none() {
                return Err(at(&format!("`{id}` needs clauses, a reason, or both")));
            }
            rows.push(Requirement {
                id,
                kind,
                text: text_of("text").ok_or_else(|| at("no text"))?,
                clauses,
                reason,
                note: text_of("note"),
            });
        }
        Ok(Self { source, rows })
    }

    /// Our clauses each row names, by clause: the rows that trace them.
    pub fn rows_by_clause(&self) -> BTreeMap<&str, Vec<&Requirement>> {
        let mut out: BTreeMap<&str, Vec<&Requirement>> = BTreeMap::new();
        for row in &self.rows {
            for c in &row.clauses {
                out.entry(c.as_str()).or_default().push(row);
            }
        }
        out
    }

    /// The ids of the rows that trace `clause`, for reports (`proto.md §5/2`).
    pub fn cites(&self, clause: &str) -> Vec<&str> {
        self.rows
            .iter()
            .filter(|r| r.clauses.iter().any(|c| c == clause))
            .map(|r| r.id.as_str())
            .collect()
    }
}

/// `<doc> §<section>/<n>`: a document name without spaces, a section, a number from 1.
fn is_requirement_id(id: &str) -> bool {
    let Some((doc, rest)) = id.split_once(" §") else {
        return false;
    };
    let Some((section, n)) = rest.rsplit_once('/') else {
        return false;
    };
    !doc.is_empty()
        && !doc.contains(' ')
        && !section.is_empty()
        && n.parse::<u32>().is_ok_and(|n| n > 0)
        && !n.starts_with('0')
}

/// Where a row stands against the suite.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Status {
    /// Checked by cases that run under `--profile phux` (their ids).
    Phux(Vec<String>),
    /// Checked only by cases outside profile phux (they cite or assume a rule of ours).
    PhuxRsOnly(Vec<String>),
    /// Our clauses state it, no case cites them, and the row names no reason: an error of the
    /// matrix (the coverage test refuses it).
    ClausesOnly,
    /// Not checked, for the reason named.
    Reason(String),
}

impl Status {
    fn label(&self) -> &'static str {
        match self {
            Self::Phux(_) => "checked",
            Self::PhuxRsOnly(_) => "phux-rs only",
            Self::ClausesOnly => "clauses, no case",
            Self::Reason(_) => "reason",
        }
    }
}

/// The matrix held against the spec and the transcripts.
#[derive(Clone, Debug)]
pub struct Report<'a> {
    /// The matrix.
    pub matrix: &'a Matrix,
    /// Each row's status, in row order.
    pub status: Vec<Status>,
    /// Clause ids rows name that the spec lacks.
    pub unknown_clauses: Vec<String>,
}

impl<'a> Report<'a> {
    /// Holds `matrix` against `spec` and `transcripts`; `outside_phux` says which cases profile
    /// phux skips (they cite or assume a rule of ours).
    pub fn new(
        matrix: &'a Matrix,
        spec: &Spec,
        transcripts: &[Transcript],
        outside_phux: &dyn Fn(&Transcript) -> bool,
    ) -> Self {
        let mut by_clause: BTreeMap<&str, BTreeSet<(&str, bool)>> = BTreeMap::new();
        for t in transcripts {
            let phux = !outside_phux(t);
            for step in &t.steps {
                for c in &step.clauses {
                    by_clause
                        .entry(c.as_str())
                        .or_default()
                        .insert((t.id.as_str(), phux));
                }
            }
        }
        let mut unknown = BTreeSet::new();
        let status = matrix
            .rows
            .iter()
            .map(|row| {
                let mut phux = BTreeSet::new();
                let mut rs = BTreeSet::new();
                for c in &row.clauses {
                    if !spec.clauses.contains_key(c) {
                        unknown.insert(c.clone());
                    }
                    for (case, in_phux) in by_clause.get(c.as_str()).into_iter().flatten() {
                        if *in_phux {
                            phux.insert((*case).to_owned());
                        } else {
                            rs.insert((*case).to_owned());
                        }
                    }
                }
                if !phux.is_empty() {
                    Status::Phux(phux.into_iter().collect())
                } else if !rs.is_empty() {
                    Status::PhuxRsOnly(rs.into_iter().collect())
                } else if let Some(r) = &row.reason {
                    // Our clauses may state it and still no case can check it (a client's
                    // rule, the transport's setup): the reason says why.
                    Status::Reason(r.clone())
                } else {
                    Status::ClausesOnly
                }
            })
            .collect();
        Self {
            matrix,
            status,
            unknown_clauses: unknown.into_iter().collect(),
        }
    }

    fn normative(&self) -> impl Iterator<Item = (&Requirement, &Status)> {
        self.matrix
            .rows
            .iter()
            .zip(&self.status)
            .filter(|(r, _)| r.kind.normative())
    }

    /// `(normative sentences, checked under profile phux)`.
    pub fn figures(&self) -> (usize, usize) {
        let all = self.normative().count();
        let phux = self
            .normative()
            .filter(|(_, s)| matches!(s, Status::Phux(_)))
            .count();
        (all, phux)
    }

    /// How many normative sentences have each status label and each reason.
    pub fn breakdown(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for (_, s) in self.normative() {
            let key = match s {
                Status::Reason(r) => format!("reason: {r}"),
                other => other.label().to_owned(),
            };
            *out.entry(key).or_insert(0) += 1;
        }
        out
    }

    /// The summary `phux-conformance coverage` prints.
    pub fn summary(&self) -> String {
        let (all, phux) = self.figures();
        let mut out = format!(
            "phux 0.8 requirements ({}): {all} normative sentences; checked by a case under \
             --profile phux: {phux} ({:.1} %)\n",
            self.matrix.source,
            percent(phux, all)
        );
        for (label, n) in self.breakdown() {
            let _ = writeln!(out, "  {label}: {n}");
        }
        out
    }

    /// The published table (`conformance/PHUX-REQUIREMENTS.md`).
    pub fn markdown(&self) -> String {
        let (all, phux) = self.figures();
        let mut out = String::new();
        let _ = writeln!(out, "# phux 0.8 requirements matrix\n");
        let _ = writeln!(
            out,
            "Generated by `phux-conformance matrix --markdown` from \
             [phux-requirements.toml](phux-requirements.toml) (do not edit by hand). Every \
             normative sentence of phux's own documents ({}: `docs/spec/L1.md`, `proto.md`, \
             `input.md`, `appendix-encoding.md`, `appendix-reserved.md`, and the decisions of \
             ADR-0053, ADR-0033 and ADR-0032), traced to the clauses of [our spec](../spec/) \
             that state it and the cases that check them, or to the reason no case can. \
             STATES rows trace prose without a key word that our clauses rest on; they are \
             not counted below.\n",
            self.matrix.source
        );
        let _ = writeln!(
            out,
            "**{all} normative sentences; {phux} ({:.1} %) checked by at least one case that \
             runs under `--profile phux`.**\n",
            percent(phux, all)
        );
        let _ = writeln!(out, "| Status | Sentences |\n|---|---:|");
        for (label, n) in self.breakdown() {
            let _ = writeln!(out, "| {label} | {n} |");
        }
        let _ = writeln!(out, "\nReasons:\n");
        for (key, why) in REASONS {
            let _ = writeln!(out, "- `{key}`: {why}.");
        }
        let mut doc = "";
        for (row, status) in self.matrix.rows.iter().zip(&self.status) {
            let this_doc = row.id.split(" §").next().unwrap_or("");
            if this_doc != doc {
                doc = this_doc;
                let _ = writeln!(
                    out,
                    "\n## {doc}\n\n| Id | Level | Sentence | Our clauses | Checked by |\n|---|---|---|---|---|"
                );
            }
            let checked = match status {
                Status::Phux(cases) => cases.join(" "),
                Status::PhuxRsOnly(cases) => format!("phux-rs only: {}", cases.join(" ")),
                Status::ClausesOnly => "no case (the clauses are tested off the wire)".to_owned(),
                Status::Reason(r) => format!("— ({r})"),
            };
            let note = row
                .note
                .as_ref()
                .map(|n| format!(" *{}*", cell(n)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}{note} | {checked} |",
                row.id,
                row.kind.name(),
                cell(&row.text),
                row.clauses.join(" ")
            );
        }
        out
    }

    /// The matrix as JSON (for machines).
    pub fn json(&self) -> serde_json::Value {
        let (all, phux) = self.figures();
        json!({
            "source": self.matrix.source,
            "normative": all,
            "checked_under_profile_phux": phux,
            "rows": self.matrix.rows.iter().zip(&self.status).map(|(r, s)| json!({
                "id": r.id, "level": r.kind.name(), "clauses": r.clauses,
                "reason": r.reason, "status": s.label(),
                "cases": match s { Status::Phux(c) | Status::PhuxRsOnly(c) => c.clone(), _ => Vec::new() },
            })).collect::<Vec<_>>(),
        })
    }
}

fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        #[allow(clippy::cast_precision_loss)]
        let p = n as f64 * 100.0 / of as f64;
        p
    }
}

/// Text fit for one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The sentences of one of phux's documents that hold a key word (MUST, SHALL, REQUIRED,
/// SHOULD, RECOMMENDED), as `(section, level, sentence)`, in document order: for checking that
/// the matrix misses none (`phux-conformance matrix --against DIR`). Fenced code is skipped;
/// list items and table rows are paragraphs of their own.
pub fn keyword_sentences(text: &str) -> Vec<(String, Kind, String)> {
    let mut out = Vec::new();
    let mut section = String::from("top");
    let mut para = String::new();
    let mut fenced = false;
    let flush = |para: &mut String, section: &str, out: &mut Vec<(String, Kind, String)>| {
        for sentence in sentences(para) {
            if let Some(kind) = keyword_kind(&sentence) {
                out.push((section.to_owned(), kind, sentence));
            }
        }
        para.clear();
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            flush(&mut para, &section, &mut out);
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(heading) = trimmed.strip_prefix('#') {
            flush(&mut para, &section, &mut out);
            section = section_of(heading.trim_start_matches('#').trim());
            continue;
        }
        let starts_item = trimmed.starts_with("- ")
            || trimmed.starts_with('|')
            || trimmed
                .split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if trimmed.is_empty() || starts_item {
            flush(&mut para, &section, &mut out);
        }
        if !trimmed.is_empty() {
            para.push(' ');
            para.push_str(trimmed.trim_start_matches('>').trim());
        }
    }
    flush(&mut para, &section, &mut out);
    out
}

/// `5.` → `5`, `6.2.1 APPLY_INPUT` → `6.2.1`, `Conventions` → `Conventions`.
fn section_of(heading: &str) -> String {
    let first = heading.split_whitespace().next().unwrap_or("");
    let number = first.trim_end_matches('.');
    if !number.is_empty() && number.split('.').all(|p| p.parse::<u32>().is_ok()) {
        number.to_owned()
    } else {
        heading.to_owned()
    }
}

fn keyword_kind(sentence: &str) -> Option<Kind> {
    let words: Vec<&str> = sentence
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    if words
        .iter()
        .any(|w| matches!(*w, "MUST" | "SHALL" | "REQUIRED"))
    {
        Some(Kind::Must)
    } else if words.iter().any(|w| matches!(*w, "SHOULD" | "RECOMMENDED")) {
        Some(Kind::Should)
    } else {
        None
    }
}

/// A paragraph split into sentences at `. `, `? ` or `! ` before a capital, a backtick or an
/// opening bracket or quote.
fn sentences(para: &str) -> Vec<String> {
    let text = para.trim();
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for i in 0..bytes.len().saturating_sub(2) {
        if matches!(bytes[i], b'.' | b'?' | b'!')
            && bytes[i + 1] == b' '
            && (bytes[i + 2].is_ascii_uppercase() || matches!(bytes[i + 2], b'`' | b'(' | b'"' | b'*' | b'['))
            // "e.g. X", "i.e. X": not a sentence end.
            && !text[..=i].ends_with("e.g.")
            && !text[..=i].ends_with("i.e.")
        {
            out.push(text[start..=i].trim().to_owned());
            start = i + 2;
        }
    }
    if start < text.len() {
        out.push(text[start..].trim().to_owned());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Normalised for comparing a sentence found in phux's text with the matrix's copy.
pub fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['*', '`'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_sentences_are_found_per_section() {
        let doc = "# T\n\n## 5. Framing\n\nA frame is bytes. A peer MUST close it.\n\
                   Then it SHOULD log.\n\n```\nX MUST not count\n```\n\n\
                   - a list item that is REQUIRED.\n\n### 6.2.1 APPLY_INPUT (0x14)\n\n\
                   Nothing here, e.g. MAY only. It MUST NOT (\"no\") fail.\n";
        let found = keyword_sentences(doc);
        let got: Vec<(&str, Kind, &str)> = found
            .iter()
            .map(|(s, k, t)| (s.as_str(), *k, t.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("5", Kind::Must, "A peer MUST close it."),
                ("5", Kind::Should, "Then it SHOULD log."),
                ("5", Kind::Must, "- a list item that is REQUIRED."),
                ("6.2.1", Kind::Must, "It MUST NOT (\"no\") fail."),
            ]
        );
    }

    #[test]
    fn rows_need_a_trace_and_well_formed_ids() {
        let ok = "source = \"x\"\n[[req]]\nid = \"proto.md §5/1\"\nlevel = \"MUST\"\n\
                  text = \"t\"\nclauses = [\"FRAME.LENGTH.2\"]\n";
        assert_eq!(Matrix::parse(ok).unwrap().rows.len(), 1);
        let neither =
            "source = \"x\"\n[[req]]\nid = \"proto.md §5/1\"\nlevel = \"MUST\"\ntext = \"t\"\n";
        assert!(Matrix::parse(neither).is_err());
        let bad_id = ok.replace("§5/1", "§5/01");
        assert!(Matrix::parse(&bad_id).is_err());
        let bad_reason = neither.to_owned() + "reason = \"because\"\n";
        assert!(Matrix::parse(&bad_reason).is_err());
        let both = ok.to_owned() + "reason = \"consumer\"\n";
        assert_eq!(
            Matrix::parse(&both).unwrap().rows[0].reason.as_deref(),
            Some("consumer")
        );
        let twice = format!("{ok}{}", &ok["source = \"x\"\n".len()..]);
        assert!(Matrix::parse(&twice).is_err());
    }
}
