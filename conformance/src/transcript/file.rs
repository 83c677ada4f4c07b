//! A whole transcript file (the header, the steps, `repeat` and `together` blocks), a prelude of `define`
//! lines, and a directory of transcripts.

use std::path::Path;

use phux_proto::notation::Value;

use super::lines::{Line, cited_clauses, is_clause_id, logical_lines};
use super::step::{parse_define, parse_repeat_header, parse_step, parse_value};
use super::{Define, Level, ParseError, Repeat, Step, StepKind, Transcript};

/// The separator between a transcript's header and its steps.
const HEADER_END: &str = "---";
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
        assumes: Vec::new(),
        phux_rs_only: false,
        defines: Vec::new(),
        steps: Vec::new(),
        path: path.to_owned(),
    };
    let mut iter = lines.into_iter().peekable();
    let mut level = None;
    let mut header_done = false;
    // Where the header's `clauses:` line is, for errors about its contents.
    let mut clauses_line = 1;
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
                clauses_line = line.number;
                if value.is_empty() || value.split_whitespace().any(|w| w == "TODO") {
                    return Err(err(
                        line.number,
                        "`clauses:` is not filled in: name the clauses the case checks \
                         (a recorder draft leaves TODO here)"
                            .into(),
                    ));
                }
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
            "assumes" => t.assumes.extend(
                value
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim_matches(['[', ']']).to_owned()),
            ),
            "profile" => {
                if value != "phux-rs" {
                    return Err(err(
                        line.number,
                        format!("`profile: {value}`: the only profile a case can name is phux-rs"),
                    ));
                }
                t.phux_rs_only = true;
            }
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
    for clause in t.clauses.iter().chain(&t.assumes) {
        if !is_clause_id(clause) {
            return Err(err(clauses_line, format!("`{clause}` is not a clause id")));
        }
    }
    t.level = level.ok_or_else(|| err(1, "the header needs a level (MUST or SHOULD)".into()))?;

    while let Some(line) = iter.next() {
        if let Some(def) = parse_define(&line.code) {
            t.defines.push(def.map_err(|e| err(line.number, e))?);
            continue;
        }
        let clauses = cited_clauses(&line.comment);
        if let Some(step) = parse_block(path, &line, clauses.clone(), &mut iter, false) {
            t.steps.push(step?);
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

/// Loads `prelude.phuxt` and every `<area>/*.phuxt` under `dir`, sorted by id.
pub fn load_dir(dir: &Path) -> Result<(Vec<Define>, Vec<Transcript>), ParseError> {
    let io_err = |p: &Path, e: std::io::Error| ParseError {
        path: p.display().to_string(),
        line: 0,
        message: e.to_string(),
    };
    let mut files = Vec::new();
    let prelude_path = dir.join("prelude.phuxt");
    if prelude_path.exists() {
        let text = std::fs::read_to_string(&prelude_path).map_err(|e| io_err(&prelude_path, e))?;
        files.push(("prelude.phuxt".to_owned(), text));
    }
    let mut areas: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io_err(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    areas.sort();
    for area in areas {
        let area_name = area.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut names: Vec<_> = std::fs::read_dir(&area)
            .map_err(|e| io_err(&area, e))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "phuxt"))
            .collect();
        names.sort();
        for file in names {
            let text = std::fs::read_to_string(&file).map_err(|e| io_err(&file, e))?;
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            files.push((format!("{area_name}/{name}"), text));
        }
    }
    load_files(&files).map_err(|mut e| {
        e.path = dir.join(&e.path).display().to_string();
        e
    })
}

/// Parses a suite given as `(path, text)` pairs, paths relative to the transcripts
/// directory: `prelude.phuxt` and `<area>/<NNN>-<slug>.phuxt` (other files are ignored).
pub fn load_files(
    files: &[(String, String)],
) -> Result<(Vec<Define>, Vec<Transcript>), ParseError> {
    let mut prelude = Vec::new();
    let mut out = Vec::new();
    for (path, text) in files {
        if path == "prelude.phuxt" {
            prelude = parse_prelude(path, text)?;
            continue;
        }
        let Some((area, name)) = path.split_once('/') else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".phuxt") else {
            continue;
        };
        let t = parse(path, text)?;
        // The id must be the file's place: <area>/<NNN>-<slug>.phuxt.
        let number = stem.split('-').next().unwrap_or("");
        let want = format!("{area}/{number}");
        if t.id != want {
            return Err(ParseError {
                path: path.clone(),
                line: 1,
                message: format!("id `{}` does not match the file's place `{want}`", t.id),
            });
        }
        // One id, one case: `--filter` and a peer file's `case =` name cases by id.
        if let Some((other, _)) = out
            .iter()
            .find(|(_, o): &&(String, Transcript)| o.id == t.id)
        {
            return Err(ParseError {
                path: path.clone(),
                line: 1,
                message: format!("id `{}` is also the id of {other}", t.id),
            });
        }
        out.push((path.clone(), t));
    }
    let mut out: Vec<Transcript> = out.into_iter().map(|(_, t)| t).collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok((prelude, out))
}

/// A `repeat N … {` or `together {` block opening on `line`, parsed to its `}`; `None` when
/// the line opens neither. Inside `together` (`in_together`), a block is a `repeat` of sends.
fn parse_block(
    path: &str,
    line: &Line,
    clauses: Vec<String>,
    iter: &mut impl Iterator<Item = Line>,
    in_together: bool,
) -> Option<Result<Step, ParseError>> {
    let code = line.code.as_str();
    let repeat = code
        .strip_prefix("repeat ")
        .and_then(|h| h.strip_suffix('{'));
    if repeat.is_none() && code != "together {" {
        return None;
    }
    Some(parse_block_body(
        path,
        line,
        repeat,
        clauses,
        iter,
        in_together,
    ))
}

/// The rest of [`parse_block`]: `repeat` is the header of a `repeat` block, `None` for
/// `together`.
fn parse_block_body(
    path: &str,
    line: &Line,
    repeat: Option<&str>,
    clauses: Vec<String>,
    iter: &mut impl Iterator<Item = Line>,
    in_together: bool,
) -> Result<Step, ParseError> {
    let together = repeat.is_none();
    let err = |number, message: String| ParseError {
        path: path.to_owned(),
        line: number,
        message,
    };
    let header = match repeat {
        Some(header) => Some(parse_repeat_header(header).map_err(|e| err(line.number, e))?),
        None if in_together => {
            return Err(err(line.number, "`together` blocks do not nest".into()));
        }
        None => None,
    };
    let what = if together { "together" } else { "repeat" };
    let mut body = Vec::new();
    let mut all = clauses;
    let mut closed = false;
    while let Some(inner) = iter.next() {
        if inner.code == "}" {
            closed = true;
            break;
        }
        let cited = cited_clauses(&inner.comment);
        all.extend(cited.iter().cloned());
        if together && let Some(block) = parse_block(path, &inner, cited.clone(), iter, true) {
            body.push(block?);
            continue;
        }
        let kind = parse_step(&inner.code).map_err(|e| err(inner.number, e))?;
        let sends = matches!(kind, StepKind::Send { .. } | StepKind::SendRaw { .. });
        let allowed = sends
            || (!together && !in_together && matches!(kind, StepKind::Expect { until: None, .. }));
        if !allowed {
            let rule = if together || in_together {
                "a together block holds only `cN >` steps and `repeat` blocks of them"
            } else {
                "a repeat body holds only `cN >` and `cN <` steps (no `until`)"
            };
            return Err(err(inner.number, rule.into()));
        }
        body.push(Step {
            line: inner.number,
            text: inner.code,
            clauses: cited,
            kind,
        });
    }
    if !closed {
        return Err(err(line.number, format!("unclosed `{what}` block")));
    }
    all.sort_unstable();
    all.dedup();
    let kind = match header {
        Some((count, var)) => StepKind::Repeat(Repeat { count, var, body }),
        None => StepKind::Together(body),
    };
    Ok(Step {
        line: line.number,
        text: line.code.clone(),
        clauses: all,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::transcript::CheckOp;

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
    fn a_raw_step_repeats_a_byte() {
        let t = parse("f", &format!("{HEADER}c1 > raw 00 01 7f*3 0a0b ff*0 01\n")).unwrap();
        match &t.steps[0].kind {
            StepKind::SendRaw { bytes, .. } => {
                assert_eq!(bytes, &[0, 1, 0x7f, 0x7f, 0x7f, 0x0a, 0x0b, 1]);
            }
            other => panic!("{other:?}"),
        }
        assert!(parse("f", &format!("{HEADER}c1 > raw 7*3\n")).is_err());
        assert!(parse("f", &format!("{HEADER}c1 > raw 00*99999999999\n")).is_err());
    }

    #[test]
    fn two_files_with_one_id_do_not_load() {
        let case = "id: probe/015\nclauses: PING.ECHO.1\nlevel: MUST\ndescription: d\n\
                    requirement: r\n---\nc1 > PING{nonce=1}\n";
        let files = [
            ("probe/015-a.phuxt".to_owned(), case.to_owned()),
            ("probe/015-b.phuxt".to_owned(), case.to_owned()),
        ];
        let err = load_files(&files).expect_err("a duplicate id");
        assert_eq!(err.path, "probe/015-b.phuxt");
        assert!(err.message.contains("probe/015-a.phuxt"), "{}", err.message);
    }

    #[test]
    fn an_unfilled_clauses_header_is_an_error_at_its_line() {
        let draft = "# a recorded session\n# fill in\nid: draft/001\nclauses: TODO\nlevel: MUST\n\
                     description: d\nrequirement: r\n---\nc1 > PING{nonce=1}\n";
        let e = parse("draft.phuxt", draft).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("not filled in"), "{e}");
        let e = parse("d", &draft.replace("TODO", "PING.ECHO.1 nope")).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(parse("d", &draft.replace("TODO", "PING.ECHO.1")).is_ok());
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
    fn together_blocks_hold_sends_and_repeats_of_sends() {
        let text = format!(
            "{HEADER}together {{\nrepeat 2 as $n from 1 {{\nc1 > PING{{nonce=$n}}\n}}\n\
             c2 > PING{{nonce=9}}   # [SERVER.FAIR.1]\n}}\nc1 < PONG{{nonce=1}}\n"
        );
        let t = parse("x", &text).unwrap();
        let StepKind::Together(body) = &t.steps[0].kind else {
            panic!("{:?}", t.steps[0])
        };
        assert!(matches!(&body[0].kind, StepKind::Repeat(r) if r.count == 2 && r.body.len() == 1));
        assert!(matches!(&body[1].kind, StepKind::Send { conn, .. } if conn == "c2"));
        assert_eq!(t.steps[0].clauses, ["SERVER.FAIR.1"]);
        assert!(matches!(t.steps[1].kind, StepKind::Expect { .. }));

        let bad = |body: &str| parse("x", &format!("{HEADER}{body}")).unwrap_err();
        // Only sends: what is expected comes after the block.
        let e = bad("together {\nc1 > PING{nonce=1}\nc1 < PONG{nonce=1}\n}\n");
        assert_eq!(e.line, 8);
        assert!(e.message.contains("only `cN >`"), "{e}");
        let e = bad("together {\nrepeat 2 {\nc1 < PONG{nonce=1}\n}\n}\n");
        assert_eq!(e.line, 8);
        assert!(e.message.contains("only `cN >`"), "{e}");
        let e = bad("together {\ntogether {\n}\n}\n");
        assert!(e.message.contains("do not nest"), "{e}");
        assert!(
            bad("together {\nc1 > PING{nonce=1}\n")
                .message
                .contains("unclosed `together`")
        );
    }
}
