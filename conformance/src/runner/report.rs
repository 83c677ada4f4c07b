//! The probe's `PROBE <seq> <body>` reports and other bytes found in a terminal's output:
//! pure matching, used by the steps that wait for them.

use phux_proto::notation::Value;

use crate::pattern::Bindings;
pub(super) use phux_proto::hex::to_hex_spaced as hex;

/// The complete probe report lines in `out` (`PROBE <seq> <body>` CR LF): each body with the
/// span of its whole line (from the CR LF before it, when there is one, to the LF after it).
fn probe_report_lines(out: &[u8]) -> Vec<(&[u8], usize, usize)> {
    let mut lines = Vec::new();
    let mut from = 0;
    while let Some(at) = out[from..].windows(6).position(|w| w == b"PROBE ") {
        let at = from + at;
        let after = at + 6;
        let digits = out[after..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let body_at = after + digits + 1;
        if digits > 0
            && out.get(after + digits) == Some(&b' ')
            && let Some(len) = out[body_at..].iter().position(|&b| b == b'\r')
        {
            let start = if out[..at].ends_with(b"\r\n") {
                at - 2
            } else {
                at
            };
            let mut end = body_at + len + 1;
            if out.get(end) == Some(&b'\n') {
                end += 1;
            }
            lines.push((&out[body_at..body_at + len], start, end));
        }
        from = after;
    }
    lines
}

/// The first complete report in `out` that `pattern` matches, word by word from its start:
/// a literal word must be equal, `*` matches any word, `$name` binds the word (or, bound
/// already, must equal it; bound to a list, it stands for one word per element, see
/// [`list_words`]), and a last word `$` means the report has no more words. Returns the
/// bindings with the new captures.
pub(super) fn match_probe_report(
    out: &[u8],
    pattern: &str,
    bindings: &Bindings,
) -> Option<Bindings> {
    match_probe_report_at(out, pattern, bindings).map(|(b, _, _)| b)
}

/// [`match_probe_report`], with the span of the matched line.
pub(super) fn match_probe_report_at(
    out: &[u8],
    pattern: &str,
    bindings: &Bindings,
) -> Option<(Bindings, usize, usize)> {
    let mut want: Vec<String> = Vec::new();
    for w in pattern.split_ascii_whitespace() {
        match w.strip_prefix('$').and_then(|name| bindings.get(name)) {
            Some(Value::List(items)) => want.extend(list_words(items)),
            _ => want.push(w.to_owned()),
        }
    }
    let exact = want.last().is_some_and(|w| w == "$");
    if exact {
        want.pop();
    }
    'lines: for (body, start, end) in probe_report_lines(out) {
        let Ok(body) = std::str::from_utf8(body) else {
            continue;
        };
        let words: Vec<&str> = body.split(' ').collect();
        if words.len() < want.len() || (exact && words.len() != want.len()) {
            continue;
        }
        let mut trial = bindings.clone();
        for (w, got) in want.iter().zip(&words) {
            if *w == "*" {
                continue;
            }
            if let Some(name) = w.strip_prefix('$') {
                match trial.get(name) {
                    Some(bound) if report_word(bound) != *got => continue 'lines,
                    Some(_) => {}
                    None => {
                        trial.insert(name.to_owned(), Value::Str(got.as_bytes().to_vec()));
                    }
                }
            } else if w != got {
                continue 'lines;
            }
        }
        return Some((trial, start, end));
    }
    None
}

/// The report words a list stands for: byte strings as the probe spells them (lowercase hex,
/// `-` when empty), other values as in the notation. `$PROBE` is the probe's command words.
fn list_words(items: &[Value]) -> Vec<String> {
    use std::fmt::Write as _;
    items
        .iter()
        .map(|item| match item {
            Value::Str(b) | Value::HexStr(b) if b.is_empty() => "-".to_owned(),
            Value::Str(b) | Value::HexStr(b) => b.iter().fold(String::new(), |mut word, x| {
                let _ = write!(word, "{x:02x}");
                word
            }),
            other => other.to_string(),
        })
        .collect()
}

/// How a captured value is spelt as a report word.
fn report_word(value: &Value) -> String {
    match value {
        Value::Str(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        other => other.to_string(),
    }
}

/// The payload of every complete `READ <hex>` report in `out`, in order, concatenated.
pub(super) fn probe_reads(out: &[u8]) -> Vec<u8> {
    probe_report_lines(out)
        .into_iter()
        .filter_map(|(body, _, _)| body.strip_prefix(b"READ "))
        .filter_map(|hex| std::str::from_utf8(hex).ok().and_then(parse_hex))
        .flatten()
        .collect()
}

/// Lowercase or uppercase hex digits, two per byte, no separators.
pub(super) fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if text.is_empty() || !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Whether `needle` occurs in `haystack` (an empty needle always does).
pub(super) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_reports_are_found_by_their_text_after_the_seq() {
        let found = |out: &[u8], report: &str| match_probe_report(out, report, &Bindings::new());
        assert!(found(b"x\r\nPROBE 12 EXITING 3\r\n", "EXITING 3").is_some());
        assert!(found(b"PROBE x EXITING 3\r\n", "EXITING 3").is_none());
        assert!(found(b"PROBE 1 READY\r\n", "EXITING").is_none());
        assert!(found(b"PROBE 1 READ 6162\r\n", "READ 61").is_none());
        // Still arriving: not a report yet.
        assert!(found(b"PROBE 1 READ 61", "READ 61").is_none());
        assert!(found(b"PROBE 1 TERMIOS raw -echo\r\n", "TERMIOS raw").is_some());
    }

    #[test]
    fn probe_report_words_capture_and_compare() {
        let out = b"\r\nPROBE 2 PGRP 7 7 7 9\r\n\r\nPROBE 3 PGRP 7 7 7 7\r\n";
        let b = match_probe_report(out, "PGRP $p $p $p $p", &Bindings::new()).unwrap();
        assert_eq!(b.get("p"), Some(&Value::Str(b"7".to_vec())));
        let mut bound = Bindings::new();
        bound.insert("p".into(), Value::Str(b"8".to_vec()));
        assert!(match_probe_report(out, "PGRP $p * * *", &bound).is_none());
        assert!(match_probe_report(out, "PGRP * * * 9", &Bindings::new()).is_some());
    }

    #[test]
    fn a_list_capture_is_its_words_and_a_final_dollar_ends_the_report() {
        let out = b"\r\nPROBE 4 ARGS 2f70 70726f6265 612062 -\r\n";
        let mut b = Bindings::new();
        b.insert("cmd".into(), Value::parse(r#"["/p" "probe"]"#).unwrap());
        assert!(match_probe_report(out, "ARGS $cmd 612062 - $", &b).is_some());
        assert!(match_probe_report(out, "ARGS $cmd 612062", &b).is_some());
        // Exactly these words: one fewer or one more is no match.
        assert!(match_probe_report(out, "ARGS $cmd 612062 $", &b).is_none());
        assert!(match_probe_report(out, "ARGS $cmd 612062 - - $", &b).is_none());
        b.insert("cmd".into(), Value::parse(r#"["/q" "probe"]"#).unwrap());
        assert!(match_probe_report(out, "ARGS $cmd", &b).is_none());
        assert!(match_probe_report(b"\r\nPROBE 5 ENVIRON\r\n", "ENVIRON $", &b).is_some());
    }

    #[test]
    fn reads_concatenate_across_reports() {
        let out = b"\r\nPROBE 3 READ 1b5b\r\n\r\nPROBE 4 MARK x\r\n\r\nPROBE 5 READ 41\r\n\r\nPROBE 6 READ 42";
        // The last report is incomplete (no CR yet): not counted.
        assert_eq!(probe_reads(out), b"\x1b[A");
        assert_eq!(parse_hex("1b5B41"), Some(b"\x1b[A".to_vec()));
        assert_eq!(parse_hex("1b5"), None);
    }
}
