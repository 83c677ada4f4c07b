//! The verbs that read a terminal: `screen` (GET_SCREEN as text), `watch` (its output) and
//! `events` (EVENT frames, as notation or JSON).

use std::io::Write;

use phux_core::client::ClientNotice;
use phux_proto::event::AgentEvent;
use phux_proto::frame::{EventFrame, SubscribeEvents};
use phux_proto::{Command, CommandValue, Frame, TerminalId};

use crate::cli::ScreenArgs;
use crate::conn::{Session, Step};
use crate::error::{CtlError, EXIT_OK, program_exit_code};

/// GET_SCREEN, printed as its lines (or the JSON document).
pub(crate) fn screen(
    session: &mut Session,
    id: TerminalId,
    args: &ScreenArgs,
) -> Result<u8, CtlError> {
    let value = session.command_ok(Command::GetScreen {
        terminal: id,
        request_scrollback: args.scrollback,
        cells: false,
    })?;
    let Some(CommandValue::Json(json)) = value else {
        return Err(CtlError::Local(format!("GET_SCREEN answered {value:?}")));
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(out, "{json}");
        return Ok(EXIT_OK);
    }
    let doc: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| CtlError::Local(format!("GET_SCREEN's JSON: {e}")))?;
    let rows = |key: &str| -> Vec<String> {
        doc.get(key)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|l| l.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut lines = rows("scrollback");
    lines.extend(rows("lines"));
    // The empty rows below the last written one are not content.
    while lines.last().is_some_and(|l| l.trim_end().is_empty()) {
        lines.pop();
    }
    for line in lines {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    Ok(EXIT_OK)
}

/// The terminal's output (and its bootstrap, if asked) on stdout until it closes.
pub(crate) fn watch(
    session: &mut Session,
    id: &TerminalId,
    bootstrap: bool,
) -> Result<u8, CtlError> {
    session.command_ok(Command::AttachTerminal {
        terminal: id.clone(),
    })?;
    let mut out = std::io::stdout().lock();
    loop {
        let bytes = match session.step(None)? {
            Step::Notice(ClientNotice::Frame(Frame::TerminalOutput(o))) if o.terminal == *id => {
                o.bytes
            }
            Step::Notice(ClientNotice::Frame(Frame::BootstrapChunk(c)))
                if bootstrap && c.terminal == *id =>
            {
                c.payload
            }
            Step::Notice(ClientNotice::Frame(Frame::TerminalClosed(c))) if c.terminal == *id => {
                // [CLIENT.WATCH.1] The program's status is watch's, as ssh and `tmux wait` do.
                return Ok(program_exit_code(c.exit_status));
            }
            Step::Closed => {
                return Err(session_lost("the output of the terminal ended"));
            }
            _ => continue,
        };
        // A closed stdout (a pipe's reader left) ends the watch quietly.
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
            return Ok(EXIT_OK);
        }
    }
}

/// SUBSCRIBE_EVENTS; each EVENT frame on a line of its own.
pub(crate) fn events(
    session: &mut Session,
    id: Option<&TerminalId>,
    json: bool,
) -> Result<u8, CtlError> {
    session.send(&Frame::SubscribeEvents(SubscribeEvents {
        terminal: id.cloned(),
    }))?;
    // SUBSCRIBE_EVENTS has no answer: an unknown terminal would give a stream that never
    // ends. The check follows the subscription, so a close after it is still seen.
    if let Some(id) = id
        && crate::list::terminal(session, id)?.is_none()
    {
        return Err(CtlError::Refused {
            code: phux_proto::ErrorCode::TERMINAL_NOT_FOUND,
            message: format!("no terminal {id}"),
        });
    }
    let mut out = std::io::stdout().lock();
    loop {
        match session.step(None)? {
            Step::Notice(ClientNotice::Frame(frame @ Frame::Event(_))) => {
                let line = if json {
                    event_json(&frame).to_string()
                } else {
                    frame.to_string()
                };
                // A closed stdout (a pipe's reader left) ends the stream quietly.
                if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                    return Ok(EXIT_OK);
                }
                // [CLIENT.EVENTS.1] One terminal's events end with its pane_closed.
                if let Frame::Event(EventFrame {
                    terminal: Some(t),
                    event: AgentEvent::PaneClosed { .. },
                }) = &frame
                    && Some(t) == id
                {
                    return Ok(EXIT_OK);
                }
            }
            Step::Notice(ClientNotice::Frame(Frame::Error(e))) => {
                return Err(CtlError::Refused {
                    code: e.code,
                    message: e.message,
                });
            }
            Step::Closed => return Err(session_lost("no more events can come")),
            _ => {}
        }
    }
}

/// An EVENT frame as one JSON object: the terminal, the event's name and fields, and the
/// notation line (which also carries what has no field here).
fn event_json(frame: &Frame) -> serde_json::Value {
    use phux_proto::event::AgentEvent;
    let Frame::Event(e) = frame else {
        return serde_json::Value::Null;
    };
    let mut doc = serde_json::json!({
        "terminal": e.terminal.as_ref().map(ToString::to_string),
        "frame": frame.to_string(),
    });
    let (name, fields) = match &e.event {
        AgentEvent::CommandStarted => ("command_started", serde_json::json!({})),
        AgentEvent::CommandFinished { exit_code } => (
            "command_finished",
            serde_json::json!({ "exit_code": exit_code }),
        ),
        AgentEvent::TitleChanged { title } => {
            ("title_changed", serde_json::json!({ "title": title }))
        }
        AgentEvent::Bell => ("bell", serde_json::json!({})),
        AgentEvent::PaneSpawned => ("pane_spawned", serde_json::json!({})),
        AgentEvent::PaneClosed { exit_status } => (
            "pane_closed",
            serde_json::json!({ "exit_status": exit_status }),
        ),
        AgentEvent::Dirty => ("dirty", serde_json::json!({})),
        AgentEvent::Idle => ("idle", serde_json::json!({})),
        AgentEvent::TerminalControl(_) => ("terminal_control", serde_json::json!({})),
        AgentEvent::Asked(_) => ("asked", serde_json::json!({})),
        AgentEvent::CwdChanged { cwd } => ("cwd_changed", serde_json::json!({ "cwd": cwd })),
        AgentEvent::Unknown { tag, .. } => ("unknown", serde_json::json!({ "tag": tag })),
    };
    if let (Some(doc), serde_json::Value::Object(fields)) = (doc.as_object_mut(), fields) {
        doc.insert("event".to_owned(), name.into());
        doc.extend(fields);
    }
    doc
}

/// The server went away under a streaming verb.
fn session_lost(consequence: &str) -> CtlError {
    CtlError::ConnectionLost(format!(
        "lost the server: the connection closed, so {consequence}"
    ))
}
