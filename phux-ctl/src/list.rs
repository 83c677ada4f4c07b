//! `phuxctl list`: what the server says about each terminal (GET_STATE for the ids, sizes and
//! titles, GET_TERMINAL_STATE for the pid, lifecycle and lease holder) plus what this host's
//! /proc says about the pid (the command line and the process's age). The protocol names no
//! command, start time or attached clients; the server runs on this host, so /proc gives the
//! first two, and the attached clients are not known to a client at all.

use std::io::Write;

use serde_json::{Value, json};

use phux_proto::command::StateScope;
use phux_proto::{Command, CommandValue, ErrorCode, TerminalId};

use crate::conn::Session;
use crate::error::{CtlError, EXIT_OK};

/// One terminal as `list` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The terminal.
    pub id: TerminalId,
    /// Its name (`new -s`, `spawn -s`), kept by phuxctl.
    pub name: Option<String>,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// The OSC title, when set.
    pub title: Option<String>,
    /// The working directory, when the server knows it.
    pub cwd: Option<String>,
    /// The program's pid.
    pub pid: Option<u32>,
    /// `running`, `frozen` or `exited`.
    pub lifecycle: Option<String>,
    /// An exited program's status (`None` while it runs, or when a signal ended it).
    pub exit_status: Option<i64>,
    /// The client holding the input lease.
    pub lease_holder: Option<u64>,
    /// The program's command line (from /proc).
    pub command: Option<Vec<String>>,
    /// Seconds since the program started (from /proc).
    pub age_secs: Option<u64>,
}

/// `list`: the rows as a table (a header on a terminal) or as JSON, each terminal named as
/// `name_of` says (the names phuxctl keeps, `names`).
pub(crate) fn print<'a>(
    session: &mut Session,
    json: bool,
    name_of: impl Fn(&TerminalId) -> Option<&'a str>,
) -> Result<u8, CtlError> {
    let mut rows = collect(session)?;
    for row in &mut rows {
        row.name = name_of(&row.id).map(str::to_owned);
    }
    let mut out = std::io::stdout().lock();
    let text = if json {
        to_json(&rows)
    } else {
        to_table(&rows, std::io::IsTerminal::is_terminal(&std::io::stdout()))
    };
    let _ = write!(out, "{text}");
    Ok(EXIT_OK)
}

/// The terminals' ids and sizes (GET_STATE).
fn server_state(session: &mut Session) -> Result<Vec<phux_proto::command::TerminalInfo>, CtlError> {
    let value = session.command_ok(Command::GetState {
        scope: StateScope::Server,
    })?;
    let Some(CommandValue::State(state)) = value else {
        return Err(CtlError::Local(
            "the server answered GET_STATE without a state".to_owned(),
        ));
    };
    Ok(state.terminals)
}

/// The ids of the live terminals.
pub fn terminal_ids(session: &mut Session) -> Result<Vec<TerminalId>, CtlError> {
    Ok(server_state(session)?
        .into_iter()
        .map(|t| t.terminal)
        .collect())
}

/// One terminal's GET_STATE entry, `None` when there is no such terminal.
pub fn terminal(
    session: &mut Session,
    id: &TerminalId,
) -> Result<Option<phux_proto::command::TerminalInfo>, CtlError> {
    Ok(server_state(session)?
        .into_iter()
        .find(|t| t.terminal == *id))
}

/// GET_TERMINAL_STATE's JSON document, `None` for a terminal that went away meanwhile.
pub fn terminal_state(session: &mut Session, id: &TerminalId) -> Result<Option<Value>, CtlError> {
    let value = match session.command_ok(Command::GetTerminalState {
        terminal: id.clone(),
        include_scrollback: false,
        max_scrollback_lines: 0,
    }) {
        Err(CtlError::Refused { code, .. }) if code == ErrorCode::TERMINAL_NOT_FOUND => {
            return Ok(None);
        }
        other => other?,
    };
    let Some(CommandValue::Json(text)) = value else {
        return Err(CtlError::Local(
            "the server answered GET_TERMINAL_STATE without a document".to_owned(),
        ));
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| CtlError::Local(format!("GET_TERMINAL_STATE's JSON does not parse: {e}")))
}

/// The client holding `id`'s input lease.
pub fn lease_holder(session: &mut Session, id: &TerminalId) -> Result<Option<u64>, CtlError> {
    let state = terminal_state(session, id)?.ok_or_else(|| CtlError::Refused {
        code: ErrorCode::TERMINAL_NOT_FOUND,
        message: format!("no terminal {id}"),
    })?;
    Ok(state.get("input_holder").and_then(Value::as_u64))
}

/// Every terminal's row.
pub fn collect(session: &mut Session) -> Result<Vec<Row>, CtlError> {
    let mut rows = Vec::new();
    // The pids are the server's host's: /proc here says something only when that is this
    // host; otherwise the protocol carries no command, age or directory, and `-` is printed.
    let local = !session.is_remote();
    for info in server_state(session)? {
        let state = terminal_state(session, &info.terminal)?;
        let field = |key: &str| state.as_ref().and_then(|s| s.get(key)).cloned();
        let lifecycle = field("lifecycle").and_then(|v| v.as_str().map(str::to_owned));
        // An exited program's pid may be another process's by now: /proc is not asked.
        let exited = lifecycle.as_deref() == Some("exited");
        let pid = field("pid")
            .and_then(|v| v.as_u64())
            .and_then(|p| u32::try_from(p).ok())
            .filter(|_| !exited);
        rows.push(Row {
            id: info.terminal,
            name: None,
            cols: info.cols,
            rows: info.rows,
            title: info.title.filter(|t| !t.is_empty()),
            cwd: info
                .cwd
                .or_else(|| pid.filter(|_| local).and_then(proc_cwd)),
            pid,
            lifecycle,
            exit_status: field("exit_status").and_then(|v| v.as_i64()),
            lease_holder: field("input_holder").and_then(|v| v.as_u64()),
            command: pid.filter(|_| local).and_then(proc_command),
            age_secs: pid.filter(|_| local).and_then(proc_age_secs),
        });
    }
    Ok(rows)
}

/// The program's working directory now (`/proc/PID/cwd`), as tmux's `pane_current_path`.
fn proc_cwd(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/cwd"))
        .ok()?
        .into_os_string()
        .into_string()
        .ok()
}

/// `/proc/PID/cmdline` as arguments.
fn proc_command(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// Seconds since the process started: `/proc/uptime` minus the start time in
/// `/proc/PID/stat` (field 22, in clock ticks after boot).
fn proc_age_secs(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let start_ticks: u64 = after_name.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let ticks = rustix::param::clock_ticks_per_second();
    if ticks == 0 {
        return None;
    }
    let started = start_ticks / ticks;
    // Whole seconds are enough for an age.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let uptime = uptime as u64;
    Some(uptime.saturating_sub(started))
}

/// An age as people write it: `42s`, `5m`, `3h`, `2d`.
pub fn human_age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// The table: for a terminal (`for_tty`) a header line and columns aligned with spaces, as
/// `ps` and `tmux ls` print them; for a pipe, tab-separated fields and no header, for `cut`
/// and `awk`.
pub fn to_table(rows: &[Row], for_tty: bool) -> String {
    const HEADER: [&str; 9] = [
        "ID", "NAME", "SIZE", "PID", "AGE", "STATE", "LEASE", "COMMAND", "TITLE",
    ];
    let dash = || "-".to_owned();
    let mut table: Vec<[String; 9]> = Vec::new();
    if for_tty {
        table.push(HEADER.map(str::to_owned));
    }
    for r in rows {
        table.push(
            [
                r.id.to_string(),
                r.name.clone().unwrap_or_else(dash),
                format!("{}x{}", r.cols, r.rows),
                r.pid.map_or_else(dash, |p| p.to_string()),
                r.age_secs.map_or_else(dash, human_age),
                state_word(r),
                r.lease_holder.map_or_else(dash, |c| c.to_string()),
                r.command.as_ref().map_or_else(dash, |c| c.join(" ")),
                r.title.clone().unwrap_or_default(),
            ]
            .map(|field| field.replace(['\t', '\n'], " ")),
        );
    }
    let mut widths = [0usize; 9];
    for line in &table {
        for (width, field) in widths.iter_mut().zip(line) {
            *width = (*width).max(field.chars().count());
        }
    }
    let mut out = String::new();
    for line in &table {
        let text = if for_tty {
            let mut text = String::new();
            for (i, (field, width)) in line.iter().zip(widths).enumerate() {
                text.push_str(field);
                if i + 1 < line.len() {
                    let pad = width - field.chars().count() + 2;
                    text.extend(std::iter::repeat_n(' ', pad));
                }
            }
            text.trim_end().to_owned()
        } else {
            line.join("\t")
        };
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// The STATE column: the lifecycle, and for an exited program its status, `exited(3)`, or
/// `exited(signal)` when a signal ended it (the protocol carries no number then).
fn state_word(r: &Row) -> String {
    match (r.lifecycle.as_deref(), r.exit_status) {
        (Some("exited"), Some(status)) => format!("exited({status})"),
        (Some("exited"), None) => "exited(signal)".to_owned(),
        (Some(other), _) => other.to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// A JSON array of objects, one per terminal.
pub fn to_json(rows: &[Row]) -> String {
    let list: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "id": r.id.to_string(),
                "name": r.name,
                "cols": r.cols,
                "rows": r.rows,
                "pid": r.pid,
                "age_seconds": r.age_secs,
                "state": r.lifecycle,
                "exit_status": r.exit_status,
                "lease_holder": r.lease_holder,
                "command": r.command,
                "title": r.title,
                "cwd": r.cwd,
            })
        })
        .collect();
    format!("{}\n", Value::Array(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            id: TerminalId::Local(3),
            name: Some("work".into()),
            cols: 80,
            rows: 24,
            title: Some("a\ttitle".into()),
            cwd: None,
            pid: Some(42),
            lifecycle: Some("running".into()),
            exit_status: None,
            lease_holder: None,
            command: Some(vec!["sleep".into(), "100".into()]),
            age_secs: Some(125),
        }
    }

    #[test]
    fn the_table_has_a_column_per_field_and_the_json_every_field() {
        let table = to_table(&[row()], false);
        assert_eq!(
            table,
            "local:3\twork\t80x24\t42\t2m\trunning\t-\tsleep 100\ta title\n"
        );
        // On a terminal: a header, and every column starts where its header does.
        let mut wide = row();
        wide.id = TerminalId::Local(12345);
        let table = to_table(&[row(), wide], true);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3);
        for name in [
            "NAME", "SIZE", "PID", "AGE", "STATE", "LEASE", "COMMAND", "TITLE",
        ] {
            let at = lines[0].find(name).expect("header");
            for line in &lines[1..] {
                assert_ne!(line.as_bytes()[at], b' ', "{name} in {line:?}");
                assert_eq!(line.as_bytes()[at - 1], b' ', "{name} in {line:?}");
            }
        }
        assert!(!table.contains('\t'), "{table}");
        let doc: Value = serde_json::from_str(&to_json(&[row()])).expect("json");
        assert_eq!(doc[0]["id"], "local:3");
        assert_eq!(doc[0]["command"][1], "100");
        assert_eq!(doc[0]["lease_holder"], Value::Null);
    }

    #[test]
    fn this_process_has_a_command_and_an_age() {
        let me = std::process::id();
        assert!(proc_command(me).is_some_and(|c| !c.is_empty()));
        assert!(proc_age_secs(me).is_some_and(|a| a < 86_400));
        assert_eq!(human_age(59), "59s");
        assert_eq!(human_age(3600), "1h");
    }
}
