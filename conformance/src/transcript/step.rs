//! One step of a transcript: its grammar, and the values, strings, bytes and durations in it.

use std::time::Duration;

use phux_proto::notation::Value;

use super::{CheckOp, StepKind, Until};

/// Parses a duration: `200ms`, `5s`, `1.5s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse::<u64>().ok().map(Duration::from_millis);
    }
    let s = text.strip_suffix('s')?;
    let secs: f64 = s.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

pub(super) fn parse_value(text: &str) -> Result<Value, String> {
    Value::parse(text).map_err(|e| e.to_string())
}

/// Parses one quoted string with the notation's escapes.
fn parse_string(text: &str) -> Result<Vec<u8>, String> {
    match parse_value(text.trim())? {
        Value::Str(bytes) | Value::HexStr(bytes) => Ok(bytes),
        other => Err(format!(
            "expected a quoted string, found {}",
            other.describe()
        )),
    }
}

fn parse_hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut digits = String::new();
    for token in text.split_whitespace() {
        if let Some((byte, count)) = token.split_once('*') {
            push_hex_digits(&mut out, &std::mem::take(&mut digits))?;
            let byte = u8::from_str_radix(byte, 16)
                .ok()
                .filter(|_| byte.len() == 2)
                .ok_or_else(|| format!("`{token}`: a repeat is one hex byte, `*`, a count"))?;
            let count: usize = count
                .parse()
                .ok()
                .filter(|&n| n <= MAX_RAW_REPEAT)
                .ok_or_else(|| format!("`{token}`: a count of at most {MAX_RAW_REPEAT}"))?;
            out.resize(out.len() + count, byte);
        } else {
            digits.push_str(token);
        }
    }
    push_hex_digits(&mut out, &digits)?;
    Ok(out)
}

/// The largest repeat in a `raw` step (`00*65536`): one maximum frame and its header.
const MAX_RAW_REPEAT: usize = 16 * 1024 * 1024 + 5;

fn push_hex_digits(out: &mut Vec<u8>, digits: &str) -> Result<(), String> {
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    for i in (0..digits.len()).step_by(2) {
        let byte = digits
            .get(i..i + 2)
            .and_then(|pair| u8::from_str_radix(pair, 16).ok())
            .ok_or_else(|| format!("not hex: {digits}"))?;
        out.push(byte);
    }
    Ok(())
}

/// Splits `pattern until FIELD contains "TEXT" [within D]`.
fn split_until(text: &str) -> Result<(String, Option<Until>), String> {
    // `until` outside quotes and brackets.
    let mut depth = 0i32;
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ' ' if depth == 0 && text[i..].starts_with(" until ") => {
                let pattern = text[..i].trim().to_owned();
                let rest = text[i + " until ".len()..].trim();
                let (field, rest) = rest
                    .split_once(" contains ")
                    .ok_or("expected `until FIELD contains \"TEXT\"`")?;
                let (needle, within) = match rest.rfind(" within ") {
                    Some(at) if !rest[at..].contains('"') => {
                        let d = rest[at + " within ".len()..].trim();
                        let d = parse_duration(d).ok_or_else(|| format!("bad duration `{d}`"))?;
                        (&rest[..at], Some(d))
                    }
                    _ => (rest, None),
                };
                return Ok((
                    pattern,
                    Some(Until {
                        field: field.trim().to_owned(),
                        needle: parse_string(needle)?,
                        within,
                    }),
                ));
            }
            _ => {}
        }
    }
    Ok((text.trim().to_owned(), None))
}

fn parse_within(text: &str) -> Result<(String, Option<Duration>), String> {
    match text.rfind(" within ") {
        Some(at) => {
            let d = text[at + " within ".len()..].trim();
            let d = parse_duration(d).ok_or_else(|| format!("bad duration `{d}`"))?;
            Ok((text[..at].trim().to_owned(), Some(d)))
        }
        None => Ok((text.trim().to_owned(), None)),
    }
}

pub(super) fn parse_step(code: &str) -> Result<StepKind, String> {
    if code == "restart" {
        return Ok(StepKind::Restart);
    }
    if let Some(d) = code.strip_prefix('~') {
        let d = d.trim();
        return parse_duration(d)
            .map(StepKind::Advance)
            .ok_or_else(|| format!("bad duration `{d}` (write 200ms or 5s)"));
    }
    if let Some(rest) = code.strip_prefix("check ") {
        for (word, op) in [
            (" == ", CheckOp::Eq),
            (" != ", CheckOp::Ne),
            (" !contains ", CheckOp::NotContains),
            (" contains ", CheckOp::Contains),
        ] {
            if let Some((l, r)) = rest.split_once(word) {
                return Ok(StepKind::Check {
                    left: parse_value(l)?,
                    op,
                    right: parse_value(r)?,
                });
            }
        }
        return Err("expected `check A == B`, `A != B`, `A contains B` or `A !contains B`".into());
    }
    let (conn, rest) = code
        .split_once(' ')
        .ok_or("expected `cN > FRAME`, `cN < PATTERN`, `~ DURATION` or `check …`")?;
    if !conn.starts_with('c') || !conn[1..].chars().all(|c| c.is_ascii_digit()) || conn.len() < 2 {
        return Err(format!("`{conn}` is not a connection name (c1, c2, …)"));
    }
    let conn = conn.to_owned();
    let rest = rest.trim();
    if let Some(kind) = parse_reading_step(&conn, rest) {
        return kind;
    }
    match rest {
        "closed" => return Ok(StepKind::Closed { conn }),
        "disconnect" => return Ok(StepKind::Disconnect { conn }),
        "connect" => return Ok(StepKind::Connect { conn }),
        "< nothing" => return Ok(StepKind::Nothing { conn }),
        _ => {}
    }
    if let Some(probe) = rest.strip_prefix("probe ") {
        let (terminal, rest) = probe
            .trim()
            .split_once(' ')
            .ok_or("expected `cN probe $t > COMMAND` or `cN probe $t < REPORT`")?;
        let terminal = parse_value(terminal)?;
        let rest = rest.trim();
        if let Some(line) = rest.strip_prefix('>') {
            return Ok(StepKind::ProbeSend {
                conn,
                terminal,
                line: line.trim().to_owned(),
            });
        }
        if let Some(report) = rest.strip_prefix('<') {
            let (report, within) = parse_within(report)?;
            return Ok(StepKind::ProbeExpect {
                conn,
                terminal,
                report,
                within,
            });
        }
        return Err("expected `>` or `<` after the probe terminal".into());
    }
    if let Some(frame) = rest.strip_prefix('>') {
        let frame = frame.trim();
        if let Some(hex) = frame.strip_prefix("raw ") {
            return Ok(StepKind::SendRaw {
                conn,
                bytes: parse_hex_bytes(hex)?,
            });
        }
        return Ok(StepKind::Send {
            conn,
            frame: parse_value(frame)?,
        });
    }
    if let Some(pattern) = rest.strip_prefix('<') {
        let (next, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        let (pattern, until) = split_until(pattern.trim())?;
        if next && until.is_some() {
            return Err("`<!` and `until` do not combine".into());
        }
        return Ok(StepKind::Expect {
            conn,
            pattern: parse_value(&pattern)?,
            until,
            next,
        });
    }
    Err(format!("unknown step `{rest}`"))
}

/// The steps about a client that stops reading: `pause`, `resume`, `<* PATTERN` and
/// `bytes since resume <= N`.
fn parse_reading_step(conn: &str, rest: &str) -> Option<Result<StepKind, String>> {
    let conn = conn.to_owned();
    Some(match rest {
        "pause" => Ok(StepKind::Reading { conn, on: false }),
        "resume" => Ok(StepKind::Reading { conn, on: true }),
        _ => {
            if let Some(pattern) = rest.strip_prefix("<*") {
                parse_value(pattern.trim()).map(|pattern| StepKind::ExpectRun { conn, pattern })
            } else if let Some(max) = rest.strip_prefix("bytes since resume <=") {
                let max = max.trim().replace('_', "");
                max.parse()
                    .map(|max| StepKind::ReadBound { conn, max })
                    .map_err(|_| format!("`{max}` is not a byte count"))
            } else {
                return None;
            }
        }
    })
}

/// The most iterations a `repeat` may ask for: a bound on what one case can send.
const MAX_REPEAT: u64 = 1 << 20;

/// Parses a `repeat N [as $i from START] {` header (the `{` already stripped).
pub(super) fn parse_repeat_header(text: &str) -> Result<(u64, Option<(String, Value)>), String> {
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    let count = |w: &str| {
        w.parse::<u64>()
            .ok()
            .filter(|n| (1..=MAX_REPEAT).contains(n))
            .ok_or_else(|| format!("`{w}`: a repeat count is 1..={MAX_REPEAT}"))
    };
    match words.as_slice() {
        [n] => Ok((count(n)?, None)),
        [n, "as", var, "from", start] => {
            let name = var
                .strip_prefix('$')
                .filter(|v| {
                    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
                .ok_or_else(|| format!("`{var}`: the iteration variable is `$name`"))?;
            let start = parse_value(start)?;
            if !matches!(start, Value::Int(_) | Value::HexInt { .. }) {
                return Err(format!("`{start}`: a repeat starts from an integer"));
            }
            Ok((count(n)?, Some((name.to_owned(), start))))
        }
        _ => Err("expected `repeat N {` or `repeat N as $i from START {`".into()),
    }
}

/// Parses `define NAME = VALUE`.
pub fn parse_define(code: &str) -> Option<Result<(String, Value), String>> {
    let rest = code.strip_prefix("define ")?;
    Some(match rest.split_once('=') {
        Some((name, value)) => {
            let name = name.trim();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                Err(format!("bad template name `{name}`"))
            } else {
                parse_value(value).map(|v| (name.to_owned(), v))
            }
        }
        None => Err("expected `define Name = VALUE`".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5"), None);
    }
}
