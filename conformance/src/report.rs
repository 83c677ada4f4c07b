//! Reports: an h2spec-style tree for people (printed case by case as the run goes, then a
//! summary), JSON (with each case's wire log) and JUnit XML for machines.

use std::fmt::Write as _;

use serde_json::json;

use crate::runner::{CaseReport, Outcome};

/// What a report says about the run as a whole.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// The transport, as the connector describes it.
    pub transport: String,
    /// The profile checked (`phux`, `phux-rs`).
    pub profile: String,
    /// The peer the expectations file names, if any.
    pub peer: Option<String>,
    /// When the run started, RFC 3339 in UTC.
    pub started: String,
}

impl RunInfo {
    /// A run over `transport` under `profile`, starting now.
    pub fn now(transport: &str, profile: &str) -> Self {
        Self {
            transport: transport.to_owned(),
            profile: profile.to_owned(),
            peer: None,
            started: rfc3339_utc(std::time::SystemTime::now()),
        }
    }
}

/// The report's first line.
pub fn header(info: &RunInfo) -> String {
    let peer = info
        .peer
        .as_ref()
        .map(|p| format!(", expectations of {p}"))
        .unwrap_or_default();
    format!(
        "phux conformance over {}, profile {}{peer}\n\n",
        info.transport, info.profile
    )
}

/// One case's lines: its area's heading when `previous` was of another area, its mark, and
/// the details of anything but a PASS.
pub fn case(previous: Option<&CaseReport>, case: &CaseReport) -> String {
    let mut out = String::new();
    let area = |c: &CaseReport| c.id.split('/').next().unwrap_or("").to_owned();
    if previous.is_none_or(|p| area(p) != area(case)) {
        let _ = writeln!(out, "{}", area(case));
    }
    let mark = match case.outcome {
        Outcome::Pass => "✔",
        Outcome::Fail | Outcome::Error(_) | Outcome::KnownPassed(_) | Outcome::NotRun(_) => "×",
        Outcome::NonStrict => "!",
        Outcome::Known(_) => "~",
        Outcome::Unsupported(_) | Outcome::Disabled(_) | Outcome::Skipped(_) => "-",
    };
    let _ = writeln!(out, "  {mark} {} {}", case.id, case.description);
    match &case.outcome {
        Outcome::Pass => {}
        Outcome::Unsupported(why)
        | Outcome::Disabled(why)
        | Outcome::Skipped(why)
        | Outcome::Known(why)
        | Outcome::NotRun(why) => {
            let _ = writeln!(out, "      {}: {why}", case.outcome.name());
        }
        other => {
            let _ = writeln!(out, "      {}", other.name());
            if let Some(f) = &case.failure {
                // What the failing step checks, not what the case is about: a case checks
                // several clauses, and a setup step (citing none) checks nothing.
                if f.clauses.is_empty() {
                    let _ = writeln!(out, "      requirement: none (a setup step)");
                } else {
                    for r in &f.requirements {
                        let _ = writeln!(out, "      requirement: {r}");
                    }
                    let _ = writeln!(out, "      clause: [{}]", f.clauses.join(" "));
                }
                let _ = writeln!(out, "      step: line {}: {}", f.line, f.step);
                if !f.expected.is_empty() {
                    let _ = writeln!(out, "      expected: {}", indent(&f.expected));
                }
                let _ = writeln!(out, "      actual: {}", indent(&f.actual));
            }
            if let Outcome::Error(why) | Outcome::KnownPassed(why) = other
                && (case.failure.is_none() || matches!(other, Outcome::KnownPassed(_)))
            {
                let _ = writeln!(out, "      error: {why}");
            }
            if let Some(stderr) = &case.server_stderr {
                let _ = writeln!(out, "      server stderr:\n        {}", indent(stderr));
            }
        }
    }
    out
}

/// The whole tree at once: the header, every case, the summary.
pub fn tree(transport: &str, cases: &[CaseReport]) -> String {
    let mut out = header(&RunInfo {
        transport: transport.to_owned(),
        profile: String::from("-"),
        peer: None,
        started: String::new(),
    });
    let mut previous = None;
    for c in cases {
        out.push_str(&case(previous, c));
        previous = Some(c);
    }
    let _ = writeln!(out, "\n{}", summary(cases));
    out
}

fn indent(text: &str) -> String {
    text.replace('\n', "\n        ")
}

/// How many cases had each outcome, in a fixed order (outcomes with none left out).
pub fn counts(cases: &[CaseReport]) -> Vec<(&'static str, usize)> {
    const ORDER: [&str; 10] = [
        "PASS",
        "FAIL",
        "ERROR",
        "NOT_RUN",
        "KNOWN_PASSED",
        "NON_STRICT",
        "KNOWN",
        "UNSUPPORTED",
        "SKIPPED",
        "DISABLED",
    ];
    ORDER
        .iter()
        .map(|&name| {
            (
                name,
                cases.iter().filter(|c| c.outcome.name() == name).count(),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// `42 cases: 40 PASS, 1 FAIL, ...`.
pub fn summary(cases: &[CaseReport]) -> String {
    let parts: Vec<String> = counts(cases)
        .iter()
        .map(|(n, c)| format!("{c} {n}"))
        .collect();
    format!("{} cases: {}", cases.len(), parts.join(", "))
}

/// The JSON report: the run's summary, then one object per case with the wire log.
pub fn json(info: &RunInfo, cases: &[CaseReport]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "description": c.description,
                "requirement": c.requirement,
                "clauses": c.clauses,
                "outcome": c.outcome.name(),
                "reason": c.outcome.reason(),
                "failure": c.failure.as_ref().map(|f| json!({
                    "line": f.line,
                    "step": f.step,
                    "clauses": f.clauses,
                    "requirements": f.requirements,
                    "expected": f.expected,
                    "actual": f.actual,
                })),
                "server_stderr": c.server_stderr,
                "elapsed_ms": u64::try_from(c.elapsed.as_millis()).unwrap_or(u64::MAX),
                "wire": c.wire,
            })
        })
        .collect();
    let summary: serde_json::Map<String, serde_json::Value> = counts(cases)
        .into_iter()
        .map(|(name, n)| (name.to_owned(), json!(n)))
        .collect();
    json!({
        "tool": "phux-conformance",
        "version": env!("CARGO_PKG_VERSION"),
        "transport": info.transport,
        "profile": info.profile,
        "peer": info.peer,
        "started": info.started,
        "summary": {
            "cases": cases.len(),
            "outcomes": summary,
            "failed": cases.iter().any(|c| c.outcome.is_failure()),
        },
        "cases": list,
    })
}

/// JUnit XML: one `testcase` per case, classname its area; FAIL, ERROR and KNOWN_PASSED are
/// failures, the outcomes that did not run (or ran as expected to fail) are skipped.
pub fn junit(info: &RunInfo, cases: &[CaseReport]) -> String {
    let failures = cases.iter().filter(|c| c.outcome.is_failure()).count();
    let skipped = cases
        .iter()
        .filter(|c| {
            matches!(
                c.outcome,
                Outcome::Unsupported(_)
                    | Outcome::Disabled(_)
                    | Outcome::Skipped(_)
                    | Outcome::Known(_)
            )
        })
        .count();
    let total: f64 = cases.iter().map(|c| c.elapsed.as_secs_f64()).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuite name=\"phux-conformance ({})\" tests=\"{}\" failures=\"{failures}\" \
         errors=\"0\" skipped=\"{skipped}\" time=\"{total:.3}\" timestamp=\"{}\">",
        xml(&format!("{}, profile {}", info.transport, info.profile)),
        cases.len(),
        xml(&info.started),
    );
    for c in cases {
        let area = c.id.split('/').next().unwrap_or("");
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{} {}\" time=\"{:.3}\"",
            xml(area),
            xml(&c.id),
            xml(&c.description),
            c.elapsed.as_secs_f64()
        );
        let detail = || {
            let mut text = case(None, c);
            if let Some(f) = &c.failure {
                let _ = write!(text, "\nclauses: {}", f.clauses.join(" "));
            }
            xml(&text)
        };
        match &c.outcome {
            Outcome::Pass | Outcome::NonStrict => out.push_str("/>\n"),
            o if o.is_failure() => {
                let _ = writeln!(
                    out,
                    ">\n    <failure type=\"{}\" message=\"{}\">{}</failure>\n  </testcase>",
                    o.name(),
                    xml(o.reason().unwrap_or(&c.requirement)),
                    detail()
                );
            }
            o => {
                let _ = writeln!(
                    out,
                    ">\n    <skipped message=\"{}: {}\"/>\n  </testcase>",
                    o.name(),
                    xml(o.reason().unwrap_or(""))
                );
            }
        }
    }
    out.push_str("</testsuite>\n");
    out
}

/// Text escaped for XML attributes and content (control characters other than tab and line
/// ends are not allowed in XML 1.0 and become `?`).
fn xml(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\t' | '\n' | '\r' => c.to_string(),
            c if c.is_control() => "?".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// `2026-12-03T19:09:41Z`.
pub fn rfc3339_utc(at: std::time::SystemTime) -> String {
    let secs = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_325_381);
        assert_eq!(rfc3339_utc(t), "2026-12-03T19:16:21Z");
        let leap = UNIX_EPOCH + Duration::from_hours(264_384);
        assert_eq!(rfc3339_utc(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn junit_escapes_and_classifies() {
        let mk = |id: &str, outcome| CaseReport {
            id: id.into(),
            description: "a <b> & \"c\"".into(),
            requirement: "r".into(),
            clauses: vec![],
            outcome,
            failure: None,
            wire: vec![],
            elapsed: Duration::ZERO,
            server_stderr: None,
            heard_from_server: true,
        };
        let cases = [
            mk("a/001", Outcome::Pass),
            mk("a/002", Outcome::Fail),
            mk("b/001", Outcome::Known("peer bug".into())),
        ];
        let info = RunInfo::now("socket s", "phux");
        let x = junit(&info, &cases);
        assert!(x.contains("tests=\"3\" failures=\"1\""), "{x}");
        assert!(x.contains("skipped=\"1\""), "{x}");
        assert!(x.contains("a &lt;b&gt; &amp; &quot;c&quot;"), "{x}");
        assert!(!x.contains("<b>"), "{x}");
        let j = json(&info, &cases);
        assert_eq!(j["summary"]["outcomes"]["PASS"], 1);
        assert_eq!(j["summary"]["outcomes"]["KNOWN"], 1);
        assert_eq!(j["profile"], "phux");
    }
}
