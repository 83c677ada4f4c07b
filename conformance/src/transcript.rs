//! The transcript format: a header, then one step per line (see `conformance/README.md`).
//!
//! This module only parses text into [`Transcript`]s; frames and patterns stay notation
//! [`Value`] trees here and are expanded, matched and sent by the runner.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use phux_proto::notation::Value;

/// The conformance level a clause (or a transcript) has.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Level {
    /// MUST / MUST NOT: a failure is FAIL.
    Must,
    /// SHOULD / SHOULD NOT: a failure is NON_STRICT.
    Should,
    /// MAY: never fails.
    May,
}

impl Level {
    /// Parses `MUST`, `SHOULD` or `MAY`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "MUST" => Some(Self::Must),
            "SHOULD" => Some(Self::Should),
            "MAY" => Some(Self::May),
            _ => None,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Must => "MUST",
            Self::Should => "SHOULD",
            Self::May => "MAY",
        })
    }
}

/// One parsed transcript.
#[derive(Clone, Debug)]
pub struct Transcript {
    /// `<area>/<NNN>`.
    pub id: String,
    /// The clauses the header names.
    pub clauses: Vec<String>,
    /// MUST or SHOULD (the strongest clause the transcript checks).
    pub level: Level,
    /// One line for the report.
    pub description: String,
    /// The requirement sentence, quoted from the spec.
    pub requirement: String,
    /// Server features (HELLO_OK names, e.g. `acknowledged_input`) or runner capabilities
    /// (`probe`, `connections=N`) the transcript needs; missing ones make it UNSUPPORTED.
    pub requires: Vec<String>,
    /// Declared probe terminals (documentation and a check that `spawn` steps name them).
    pub probes: Vec<String>,
    /// Templates defined in the transcript body.
    pub defines: Vec<(String, Value)>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Where it came from, for messages.
    pub path: String,
}

/// One step, with the source line it came from and the clauses it cites.
#[derive(Clone, Debug)]
pub struct Step {
    /// 1-based line number of the step's first line.
    pub line: usize,
    /// The step's source text (continuation lines joined), for reports.
    pub text: String,
    /// Clause ids cited in the step's trailing comment (`# [INPUT.DEDUPE.2]`).
    pub clauses: Vec<String>,
    /// What it does.
    pub kind: StepKind,
}

/// A connection name as the transcript writes it (`c1`, `c2`, ...).
pub type ConnName = String;

/// What a step does.
#[derive(Clone, Debug)]
pub enum StepKind {
    /// `c1 > FRAME`: send a frame (templates expanded, captures substituted).
    Send {
        /// The connection.
        conn: ConnName,
        /// The frame in the notation.
        frame: Value,
    },
    /// `c1 > raw 00 00 00 01 03`: send bytes as they are.
    SendRaw {
        /// The connection.
        conn: ConnName,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// `c1 < PATTERN`, optionally `until FIELD contains "TEXT" [within 5s]`.
    Expect {
        /// The connection.
        conn: ConnName,
        /// The pattern.
        pattern: Value,
        /// The wait condition, if any.
        until: Option<Until>,
        /// `c1 <! PATTERN`: the very next frame, of any type, must match.
        next: bool,
    },
    /// `c1 < {` … `}`: each pattern matches one of the next frames, in any order.
    Unordered {
        /// The connection.
        conn: ConnName,
        /// The patterns, one per line.
        patterns: Vec<Value>,
    },
    /// `c1 < nothing`: after a PING/PONG round trip, no frame is waiting unconsumed.
    Nothing {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 closed`: the server closes the connection.
    Closed {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 disconnect`: the client closes its end.
    Disconnect {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 connect`: open the connection now (connections otherwise open at first use).
    Connect {
        /// The connection.
        conn: ConnName,
    },
    /// `c1 pause` (the client stops reading `c1`) and `c1 resume` (it reads again).
    Reading {
        /// The connection.
        conn: ConnName,
        /// `true` for `resume`.
        on: bool,
    },
    /// `c1 <* PATTERN`: the frames at the front of `c1`'s queue that match, however many,
    /// up to the first that does not (it stays) or the close.
    ExpectRun {
        /// The connection.
        conn: ConnName,
        /// The pattern.
        pattern: Value,
    },
    /// `c1 bytes since resume <= N`: once nothing more arrives, `c1` has received at most N
    /// bytes since its last `resume`.
    ReadBound {
        /// The connection.
        conn: ConnName,
        /// The most bytes allowed.
        max: u64,
    },
    /// `~ 200ms`: advance time (virtual in process, real over a socket).
    Advance(Duration),
    /// `check $a == $b`, `check $a != $b`, `check $a contains "text"`.
    Check {
        /// The left side (usually a capture).
        left: Value,
        /// The comparison.
        op: CheckOp,
        /// The right side.
        right: Value,
    },
    /// `c1 probe $t > COMMAND ARGS`: write a probe command line to terminal `$t` (a trusted
    /// paste through ROUTE_INPUT, ending in CR).
    ProbeSend {
        /// The connection.
        conn: ConnName,
        /// The terminal (a capture).
        terminal: Value,
        /// The command line, without its terminator.
        line: String,
    },
    /// `c1 probe $t < REPORT [within 5s]`: the terminal's output on `c1` shows a probe report
    /// line `PROBE <seq> REPORT…`.
    ProbeExpect {
        /// The connection.
        conn: ConnName,
        /// The terminal (a capture).
        terminal: Value,
        /// The report text after the sequence number.
        report: String,
        /// How long to wait.
        within: Option<Duration>,
    },
    /// `restart`: the server is replaced by a new incarnation; every connection is closed.
    Restart,
    /// `repeat N [as $i from START] {` … `}`: the body N times, `$i` bound to START,
    /// START+1, … in turn (the runner sends ahead of the expectations, within a window).
    Repeat(Repeat),
}

/// A `repeat` block (see [`StepKind::Repeat`]).
#[derive(Clone, Debug)]
pub struct Repeat {
    /// How many iterations.
    pub count: u64,
    /// The iteration variable (without `$`) and its first value, an integer whose spelling
    /// (decimal, or hex with its width) the later values keep.
    pub var: Option<(String, Value)>,
    /// The steps: only `cN >` and `cN <` (no `until`).
    pub body: Vec<Step>,
}

/// A `check` comparison.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CheckOp {
    /// Equal after normalisation.
    Eq,
    /// Different after normalisation.
    Ne,
    /// The left string or bytes contain the right string.
    Contains,
    /// The left string or bytes do not contain the right string.
    NotContains,
}

/// `until FIELD contains "TEXT" within 5s`: consume matching frames, concatenating FIELD,
/// until the text appears.
#[derive(Clone, Debug)]
pub struct Until {
    /// The field of the matched frame to accumulate (`bytes`).
    pub field: String,
    /// The text that must appear.
    pub needle: Vec<u8>,
    /// How long to wait (the runner's default when absent).
    pub within: Option<Duration>,
}

/// A template definition: `define Name = VALUE`.
pub type Define = (String, Value);

/// A transcript that does not parse: file, line and why.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ParseError {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// The separator between a transcript's header and its steps.
const HEADER_END: &str = "---";

/// One logical line: the first physical line number, the code and the trailing comment.
struct Line {
    number: usize,
    code: String,
    comment: String,
}

/// Splits `text` at the first `#` outside a double-quoted string.
fn split_comment(text: &str) -> (&str, &str) {
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
        } else if c == '"' {
            in_str = true;
        } else if c == '#' {
            return (&text[..i], &text[i + 1..]);
        }
    }
    (text, "")
}

/// The clause ids cited in a comment: every `[ID]` whose content is a clause id.
pub fn cited_clauses(comment: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = comment;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else { break };
        let inner = &after[..close];
        if is_clause_id(inner) {
            out.push(inner.to_owned());
        }
        rest = &after[close..];
    }
    out
}

/// Whether `text` is a clause id: `[A-Z][A-Z_]*(\.[A-Z][A-Z_]*)+\.[1-9][0-9]*`.
pub fn is_clause_id(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    let Some((number, words)) = parts.split_last() else {
        return false;
    };
    if words.len() < 2 {
        return false;
    }
    let word_ok = |w: &&str| {
        let mut chars = w.chars();
        chars.next().is_some_and(|c| c.is_ascii_uppercase())
            && chars.all(|c| c.is_ascii_uppercase() || c == '_')
    };
    let number_ok = number
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '1'..='9'))
        && number.chars().all(|c| c.is_ascii_digit());
    number_ok && words.iter().all(word_ok)
}

/// Joins continuation lines (indented lines after a step) and strips comments. Lines inside a
/// `c1 < {` block are never joined: each is one pattern.
fn logical_lines(text: &str) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    let mut in_block = false;
    for (i, raw) in text.lines().enumerate() {
        let (code, comment) = split_comment(raw);
        let trimmed = code.trim();
        if trimmed.is_empty() {
            // A comment-only line adds its citations to nothing; skip it.
            continue;
        }
        let continuation = raw.starts_with([' ', '\t']) && !in_block && !out.is_empty();
        if continuation {
            if let Some(last) = out.last_mut() {
                last.code.push(' ');
                last.code.push_str(trimmed);
                if !comment.is_empty() {
                    last.comment.push(' ');
                    last.comment.push_str(comment);
                }
            }
            continue;
        }
        if trimmed.ends_with(" < {") || trimmed == "< {" {
            in_block = true;
        } else if trimmed == "}" {
            in_block = false;
        }
        out.push(Line {
            number: i + 1,
            code: trimmed.to_owned(),
            comment: comment.to_owned(),
        });
    }
    out
}

/// Parses a duration: `200ms`, `5s`, `1.5s`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse::<u64>().ok().map(Duration::from_millis);
    }
    let s = text.strip_suffix('s')?;
    let secs: f64 = s.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

fn parse_value(text: &str) -> Result<Value, String> {
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
    let digits: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("not hex: {digits}"))
        })
        .collect()
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

fn parse_step(code: &str) -> Result<StepKind, String> {
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
fn parse_repeat_header(text: &str) -> Result<(u64, Option<(String, Value)>), String> {
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

/// Parses a prelude file: only `define` lines (and comments).
pub fn parse_prelude(path: &str, text: &str) -> Result<Vec<(String, Value)>, ParseError> {
    let mut out = Vec::new();
    for line in logical_lines(text) {
        let err = |message| ParseError {
            path: path.to_owned(),
            line: line.number,
            message,
        };
        match parse_define(&line.code) {
            Some(Ok(def)) => out.push(def),
            Some(Err(e)) => return Err(err(e)),
            None => return Err(err("a prelude holds only `define` lines".into())),
        }
    }
    Ok(out)
}

/// Parses one transcript.
pub fn parse(path: &str, text: &str) -> Result<Transcript, ParseError> {
    let lines = logical_lines(text);
    let err = |line: usize, message: String| ParseError {
        path: path.to_owned(),
        line,
        message,
    };
    let mut t = Transcript {
        id: String::new(),
        clauses: Vec::new(),
        level: Level::Must,
        description: String::new(),
        requirement: String::new(),
        requires: Vec::new(),
        probes: Vec::new(),
        defines: Vec::new(),
        steps: Vec::new(),
        path: path.to_owned(),
    };
    let mut iter = lines.into_iter().peekable();
    let mut level = None;
    let mut header_done = false;
    for line in iter.by_ref() {
        if line.code == HEADER_END {
            header_done = true;
            break;
        }
        // Header values may contain `#`? Rejoin the comment: header lines are prose.
        let full = if line.comment.is_empty() {
            line.code.clone()
        } else {
            format!("{}#{}", line.code, line.comment)
        };
        let (key, value) = full
            .split_once(':')
            .ok_or_else(|| err(line.number, "expected `key: value` in the header".into()))?;
        let value = value.trim().to_owned();
        match key.trim() {
            "id" => t.id = value,
            "clauses" => {
                t.clauses = value
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim_matches(['[', ']']).to_owned())
                    .collect();
            }
            "level" => {
                level = Some(
                    Level::parse(&value)
                        .ok_or_else(|| err(line.number, format!("bad level `{value}`")))?,
                );
            }
            "description" => t.description = value,
            "requirement" => t.requirement = value,
            "requires" => t.requires.extend(
                value
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            ),
            "probe" => t.probes.extend(
                value
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            ),
            other => return Err(err(line.number, format!("unknown header key `{other}`"))),
        }
    }
    if !header_done {
        return Err(err(1, format!("no `{HEADER_END}` line ends the header")));
    }
    if t.id.is_empty() || t.description.is_empty() || t.requirement.is_empty() {
        return Err(err(
            1,
            "the header needs id, description and requirement".into(),
        ));
    }
    for clause in &t.clauses {
        if !is_clause_id(clause) {
            return Err(err(1, format!("`{clause}` is not a clause id")));
        }
    }
    t.level = level.ok_or_else(|| err(1, "the header needs a level (MUST or SHOULD)".into()))?;

    while let Some(line) = iter.next() {
        if let Some(def) = parse_define(&line.code) {
            t.defines.push(def.map_err(|e| err(line.number, e))?);
            continue;
        }
        let clauses = cited_clauses(&line.comment);
        if let Some(header) = line
            .code
            .strip_prefix("repeat ")
            .and_then(|h| h.strip_suffix('{'))
        {
            let (count, var) = parse_repeat_header(header).map_err(|e| err(line.number, e))?;
            let mut body = Vec::new();
            let mut all = clauses.clone();
            let mut closed = false;
            for inner in iter.by_ref() {
                if inner.code == "}" {
                    closed = true;
                    break;
                }
                let kind = parse_step(&inner.code).map_err(|e| err(inner.number, e))?;
                let allowed = matches!(
                    kind,
                    StepKind::Send { .. }
                        | StepKind::SendRaw { .. }
                        | StepKind::Expect { until: None, .. }
                );
                if !allowed {
                    return Err(err(
                        inner.number,
                        "a repeat body holds only `cN >` and `cN <` steps (no `until`)".into(),
                    ));
                }
                let cited = cited_clauses(&inner.comment);
                all.extend(cited.iter().cloned());
                body.push(Step {
                    line: inner.number,
                    text: inner.code,
                    clauses: cited,
                    kind,
                });
            }
            if !closed {
                return Err(err(line.number, "unclosed `repeat` block".into()));
            }
            all.sort_unstable();
            all.dedup();
            t.steps.push(Step {
                line: line.number,
                text: line.code.clone(),
                clauses: all,
                kind: StepKind::Repeat(Repeat { count, var, body }),
            });
            continue;
        }
        let block = line
            .code
            .strip_suffix(" < {")
            .filter(|c| c.starts_with('c'));
        let kind = if let Some(conn) = block {
            let mut patterns = Vec::new();
            let mut clauses = clauses.clone();
            let mut closed = false;
            for inner in iter.by_ref() {
                if inner.code == "}" {
                    clauses.extend(cited_clauses(&inner.comment));
                    closed = true;
                    break;
                }
                clauses.extend(cited_clauses(&inner.comment));
                patterns.push(parse_value(&inner.code).map_err(|e| err(inner.number, e))?);
            }
            if !closed {
                return Err(err(line.number, "unclosed `< {` block".into()));
            }
            t.steps.push(Step {
                line: line.number,
                text: line.code.clone(),
                clauses,
                kind: StepKind::Unordered {
                    conn: conn.to_owned(),
                    patterns,
                },
            });
            continue;
        } else {
            parse_step(&line.code).map_err(|e| err(line.number, e))?
        };
        t.steps.push(Step {
            line: line.number,
            text: line.code,
            clauses,
            kind,
        });
    }
    Ok(t)
}

/// Loads every `*.phuxt` under `dir` (one level of area directories), sorted by id, and the
/// prelude (`dir/prelude.phuxt`) if there is one.
pub fn load_dir(dir: &Path) -> Result<(Vec<Define>, Vec<Transcript>), ParseError> {
    let io_err = |p: &Path, e: std::io::Error| ParseError {
        path: p.display().to_string(),
        line: 0,
        message: e.to_string(),
    };
    let mut prelude = Vec::new();
    let mut out = Vec::new();
    let prelude_path = dir.join("prelude.phuxt");
    if prelude_path.exists() {
        let text = std::fs::read_to_string(&prelude_path).map_err(|e| io_err(&prelude_path, e))?;
        prelude = parse_prelude(&prelude_path.display().to_string(), &text)?;
    }
    let mut areas: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io_err(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    areas.sort();
    for area in areas {
        let mut files: Vec<_> = std::fs::read_dir(&area)
            .map_err(|e| io_err(&area, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "phuxt"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| io_err(&file, e))?;
            let t = parse(&file.display().to_string(), &text)?;
            // The id must be the file's place: <area>/<NNN>-<slug>.phuxt.
            let area_name = area.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let stem = file.file_stem().and_then(|n| n.to_str()).unwrap_or("");
            let number = stem.split('-').next().unwrap_or("");
            let want = format!("{area_name}/{number}");
            if t.id != want {
                return Err(ParseError {
                    path: file.display().to_string(),
                    line: 1,
                    message: format!("id `{}` does not match the file's place `{want}`", t.id),
                });
            }
            out.push(t);
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((prelude, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
id: handshake/001
clauses: PING.ECHO.1
level: MUST
description: PING before HELLO is answered
requirement: A server MUST answer every PING with a PONG.
---
# a comment line
c1 > PING{nonce=0x1}                 # [PING.ECHO.1]
c1 < PONG{nonce=1}                   # [PING.ECHO.1] [HELLO.ORDER.1]
c1 > COMMAND{request_id=1
    command=GET_STATE{scope=server}}  # [SCREEN.SERVER.1]
c1 < TERMINAL_OUTPUT{terminal=$t ..} until bytes contains \"a # b\" within 2s
c1 < {
  COMMAND_RESULT{request_id=1 result=ok}   # [LEASE.ACQUIRE.2]
  EVENT{..}
}
~ 250ms
c1 > raw 00 00 00 01 03
check $a != $b
c1 probe $t > :exit 3
c1 probe $t < EXITING 3 within 1s
c1 < nothing
c1 closed
c1 pause
c1 > PING{nonce=2}
c1 resume
c1 <* TERMINAL_OUTPUT{terminal=$t ..}
c1 bytes since resume <= 5_000
";

    #[test]
    fn parses_header_steps_citations_and_blocks() {
        let t = parse("x", SAMPLE).unwrap();
        assert_eq!(t.id, "handshake/001");
        assert_eq!(t.level, Level::Must);
        assert_eq!(t.steps.len(), 17);
        assert_eq!(t.steps[1].clauses, ["PING.ECHO.1", "HELLO.ORDER.1"]);
        assert!(matches!(t.steps[2].kind, StepKind::Send { .. }));
        assert_eq!(t.steps[2].clauses, ["SCREEN.SERVER.1"]);
        let StepKind::Expect { until: Some(u), .. } = &t.steps[3].kind else {
            panic!("{:?}", t.steps[3])
        };
        assert_eq!(u.needle, b"a # b");
        assert_eq!(u.within, Some(Duration::from_secs(2)));
        let StepKind::Unordered { patterns, .. } = &t.steps[4].kind else {
            panic!()
        };
        assert_eq!(patterns.len(), 2);
        assert_eq!(t.steps[4].clauses, ["LEASE.ACQUIRE.2"]);
        assert!(matches!(t.steps[5].kind, StepKind::Advance(d) if d == Duration::from_millis(250)));
        assert!(
            matches!(&t.steps[6].kind, StepKind::SendRaw { bytes, .. } if bytes == &[0, 0, 0, 1, 3])
        );
        assert!(matches!(
            t.steps[7].kind,
            StepKind::Check {
                op: CheckOp::Ne,
                ..
            }
        ));
        assert!(matches!(&t.steps[8].kind, StepKind::ProbeSend { line, .. } if line == ":exit 3"));
        assert!(
            matches!(&t.steps[9].kind, StepKind::ProbeExpect { report, within: Some(_), .. } if report == "EXITING 3")
        );
        assert!(matches!(t.steps[10].kind, StepKind::Nothing { .. }));
        assert!(matches!(t.steps[11].kind, StepKind::Closed { .. }));
        assert!(matches!(
            t.steps[12].kind,
            StepKind::Reading { on: false, .. }
        ));
        assert!(matches!(
            t.steps[14].kind,
            StepKind::Reading { on: true, .. }
        ));
        assert!(matches!(t.steps[15].kind, StepKind::ExpectRun { .. }));
        assert!(matches!(
            t.steps[16].kind,
            StepKind::ReadBound { max: 5000, .. }
        ));
        let e = parse("f", &SAMPLE.replace("<= 5_000", "<= lots")).unwrap_err();
        assert!(e.message.contains("not a byte count"), "{e}");
    }

    #[test]
    fn errors_name_the_line() {
        let bad = SAMPLE.replace("c1 < PONG{nonce=1}", "c1 < PONG{nonce=}");
        let e = parse("f.phuxt", &bad).unwrap_err();
        assert_eq!(e.line, 9, "{e}");
        assert!(parse("f", "id: a/001\n").is_err());
        let e = parse("f", &SAMPLE.replace("c1 closed", "x1 closed")).unwrap_err();
        assert!(e.message.contains("not a connection name"), "{e}");
    }

    #[test]
    fn clause_ids_are_recognised() {
        assert!(is_clause_id("INPUT.ENCODE.KEY.10"));
        assert!(is_clause_id("FRAME.TYPE.1"));
        assert!(!is_clause_id("FRAME.1"));
        assert!(!is_clause_id("FRAME.TYPE.0"));
        assert!(!is_clause_id("frame.type.1"));
        // `\x5b` is `[`: written so, this file does not itself cite the example ids.
        assert_eq!(
            cited_clauses("see \x5bA.B.1], [u8; 4] and \x5bC.D_E.12]"),
            ["A.B.1", "C.D_E.12"]
        );
        assert_eq!(split_comment("a \"#\" b # c"), ("a \"#\" b ", " c"));
    }

    const HEADER: &str = "id: a/001\nlevel: MUST\ndescription: d\nrequirement: r\n---\n";

    #[test]
    fn repeat_blocks_and_restart() {
        // The body's steps start lines as any step does; an indented line continues one.
        let text = format!(
            "{HEADER}restart\nrepeat 3 as $op from 0x0010 {{\nc1 > PING{{\n    nonce=$op}}\n\
             c1 < PONG{{nonce=$op}}   # [PING.ECHO.1]\n}}\nrepeat 2 {{\nc2 > PING{{nonce=1}}\n}}\n"
        );
        let t = parse("x", &text).unwrap();
        assert!(matches!(t.steps[0].kind, StepKind::Restart));
        let StepKind::Repeat(r) = &t.steps[1].kind else {
            panic!("{:?}", t.steps[1])
        };
        assert_eq!(r.count, 3);
        let (name, start) = r.var.as_ref().unwrap();
        assert_eq!(name, "op");
        assert_eq!(
            *start,
            Value::HexInt {
                value: 16,
                width: 4
            }
        );
        assert_eq!(r.body.len(), 2);
        assert_eq!((r.body[0].line, r.body[1].line), (8, 10));
        // The block cites what its body cites, for coverage and for the outcome's level.
        assert_eq!(t.steps[1].clauses, ["PING.ECHO.1"]);
        let StepKind::Repeat(r) = &t.steps[2].kind else {
            panic!()
        };
        assert!(r.var.is_none() && r.body.len() == 1);
    }

    #[test]
    fn bad_repeat_blocks_name_the_line() {
        let bad = |body: &str| parse("x", &format!("{HEADER}{body}")).unwrap_err();
        assert!(bad("repeat 0 {\n}\n").message.contains("1..="));
        assert!(
            bad("repeat 2 as op from 1 {\n}\n")
                .message
                .contains("$name")
        );
        assert!(
            bad("repeat 2 as $i from \"a\" {\n}\n")
                .message
                .contains("integer")
        );
        assert!(
            bad("repeat 2 {\nc1 > PING{nonce=1}\n")
                .message
                .contains("unclosed")
        );
        let e = bad("repeat 2 {\n~ 1s\n}\n");
        assert_eq!(e.line, 7);
        assert!(e.message.contains("only"), "{e}");
        assert!(
            bad("repeat 2 {\nc1 < X{..} until bytes contains \"a\"\n}\n")
                .message
                .contains("only")
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("5"), None);
    }
}
