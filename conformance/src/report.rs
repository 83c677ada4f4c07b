//! Reports: an h2spec-style tree for people, JSON (with each case's wire log) for machines.

use std::fmt::Write as _;

use serde_json::json;

use crate::runner::{CaseReport, Outcome};

/// The tree: cases grouped by area, a mark per case, details under every failure.
pub fn tree(transport: &str, cases: &[CaseReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "phux conformance over {transport}\n");
    let mut area = "";
    for case in cases {
        let this_area = case.id.split('/').next().unwrap_or("");
        if this_area != area {
            area = this_area;
            let _ = writeln!(out, "{area}");
        }
        let mark = match case.outcome {
            Outcome::Pass => "✔",
            Outcome::Fail | Outcome::Error(_) => "×",
            Outcome::NonStrict => "!",
            Outcome::Unsupported(_) | Outcome::Disabled(_) => "-",
        };
        let _ = writeln!(out, "  {mark} {} {}", case.id, case.description);
        match &case.outcome {
            Outcome::Unsupported(why) => {
                let _ = writeln!(out, "      UNSUPPORTED: {why}");
            }
            Outcome::Disabled(why) => {
                let _ = writeln!(out, "      DISABLED: {why}");
            }
            Outcome::Pass => {}
            other => {
                let _ = writeln!(out, "      {}", other.name());
                let _ = writeln!(out, "      requirement: {}", case.requirement);
                if let Some(f) = &case.failure {
                    let clauses = if f.clauses.is_empty() {
                        case.clauses.join(" ")
                    } else {
                        f.clauses.join(" ")
                    };
                    let _ = writeln!(out, "      clause: [{clauses}]");
                    let _ = writeln!(out, "      step: line {}: {}", f.line, f.step);
                    if !f.expected.is_empty() {
                        let _ = writeln!(out, "      expected: {}", indent(&f.expected));
                    }
                    let _ = writeln!(out, "      actual: {}", indent(&f.actual));
                }
                if let Outcome::Error(why) = other
                    && case.failure.is_none()
                {
                    let _ = writeln!(out, "      error: {why}");
                }
            }
        }
    }
    let _ = writeln!(out, "\n{}", summary(cases));
    out
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n        ")
}

/// `42 cases: 40 PASS, 1 FAIL, ...`.
pub fn summary(cases: &[CaseReport]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for case in cases {
        let name = case.outcome.name();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(n, c)| format!("{c} {n}")).collect();
    format!("{} cases: {}", cases.len(), parts.join(", "))
}

/// The JSON report: one object per case, with the wire log.
pub fn json(transport: &str, cases: &[CaseReport]) -> serde_json::Value {
    let cases: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            let reason = match &c.outcome {
                Outcome::Unsupported(r) | Outcome::Disabled(r) | Outcome::Error(r) => Some(r),
                _ => None,
            };
            json!({
                "id": c.id,
                "description": c.description,
                "requirement": c.requirement,
                "clauses": c.clauses,
                "outcome": c.outcome.name(),
                "reason": reason,
                "failure": c.failure.as_ref().map(|f| json!({
                    "line": f.line,
                    "step": f.step,
                    "clauses": f.clauses,
                    "expected": f.expected,
                    "actual": f.actual,
                })),
                "elapsed_ms": c.elapsed.as_millis() as u64,
                "wire": c.wire,
            })
        })
        .collect();
    json!({ "transport": transport, "cases": cases })
}
