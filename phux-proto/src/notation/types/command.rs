//! Commands, their results, and the snapshot records a result carries.

use crate::command::{
    AcquireMode, AgentState, ApplyInput, Command, CommandResult, CommandValue, LayoutNode, PutFile,
    SessionInfo, SessionSnapshot, Signal, SplitDirection, StateScope, TerminalInfo, WindowInfo,
};
use crate::notation::convert::{
    Bytes, Fields, FromValue, Hex128, HexArray, Rec, ToValue, in_record, names, record,
    unknown_variant, variant_name,
};
use crate::notation::error::NotationError;
use crate::notation::value::Value;

// ---- Commands --------------------------------------------------------------------------

names!(StateScope, "state scope" { Server = "server" });
names!(AcquireMode, "acquire mode" { Cooperative = "cooperative", Seize = "seize" });
names!(Signal, "signal" {
    Interrupt = "interrupt",
    Freeze = "freeze",
    Resume = "resume",
    Terminate = "terminate",
    Kill = "kill",
});
names!(AgentState, "agent state" { Working = "working", Blocked = "blocked", Done = "done" });
names!(SplitDirection, "split direction" { Horizontal = "horizontal", Vertical = "vertical" });

record!(ApplyInput = "APPLY_INPUT" { req operation_id, req terminal, req events });
record!(PutFile = "PUT_FILE" {
    req upload_id: Hex128,
    req terminal,
    req extension,
    req offset,
    req data: Bytes,
    req is_final,
    opt sha256: HexArray,
});

/// The command's upper-case wire name with its fields: `ATTACH_TERMINAL{terminal=local:1}`,
/// `UPGRADE{}`, `UPGRADE{binary="/usr/bin/phux-mio-server"}`.
impl ToValue for Command {
    fn to_value(&self) -> Value {
        let rec = Rec::new(self.name());
        match self {
            Self::AttachTerminal { terminal }
            | Self::DetachTerminal { terminal }
            | Self::KillTerminal { terminal }
            | Self::ReleaseInput { terminal } => rec.req("terminal", terminal),
            Self::GetState { scope } => rec.req("scope", scope),
            Self::GetScreen {
                terminal,
                request_scrollback,
                cells,
            } => rec
                .req("terminal", terminal)
                .opt("request_scrollback", request_scrollback.as_ref())
                .req("cells", cells),
            Self::RouteInput { terminal, event } => {
                rec.req("terminal", terminal).req("event", event)
            }
            Self::KillTerminals { terminals } => rec.req("terminals", terminals),
            Self::GetTerminalState {
                terminal,
                include_scrollback,
                max_scrollback_lines,
            } => rec
                .req("terminal", terminal)
                .req("include_scrollback", include_scrollback)
                .req("max_scrollback_lines", max_scrollback_lines),
            Self::SubscribeTerminalEvents {
                terminal,
                event_types,
            } => rec
                .req("terminal", terminal)
                .req("event_types", event_types),
            Self::Upgrade { binary } => rec.opt("binary", binary.as_ref()),
            Self::Shutdown => rec,
            Self::AcquireInput {
                terminal,
                mode,
                ttl_ms,
            } => rec
                .req("terminal", terminal)
                .req("mode", mode)
                .req("ttl_ms", ttl_ms),
            Self::SignalTerminal { terminal, signal } => {
                rec.req("terminal", terminal).req("signal", signal)
            }
            Self::ReportAsked { terminal, asked } => {
                rec.req("terminal", terminal).req("asked", asked)
            }
            Self::DetachClients { session } => rec.opt("session", session.as_ref()),
            Self::ApplyInput(apply) => return Value::record(self.name(), apply.record_fields()),
            Self::PutFile(put) => return Value::record(self.name(), put.record_fields()),
            Self::ReportAgentState { terminal, state } => {
                rec.req("terminal", terminal).req("state", state)
            }
        }
        .build()
    }
}

impl FromValue for Command {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "a command (NAME{…})")?;
        match name {
            "APPLY_INPUT" => return ApplyInput::from_record(value, name).map(Self::ApplyInput),
            "PUT_FILE" => return PutFile::from_record(value, name).map(Self::PutFile),
            _ => {}
        }
        in_record(name, || {
            let mut r = Fields::open(value, name)?;
            let command = match name {
                "ATTACH_TERMINAL" => Self::AttachTerminal {
                    terminal: r.req("terminal")?,
                },
                "DETACH_TERMINAL" => Self::DetachTerminal {
                    terminal: r.req("terminal")?,
                },
                "KILL_TERMINAL" => Self::KillTerminal {
                    terminal: r.req("terminal")?,
                },
                "GET_STATE" => Self::GetState {
                    scope: r.req("scope")?,
                },
                "GET_SCREEN" => Self::GetScreen {
                    terminal: r.req("terminal")?,
                    request_scrollback: r.opt("request_scrollback")?,
                    cells: r.req("cells")?,
                },
                "ROUTE_INPUT" => Self::RouteInput {
                    terminal: r.req("terminal")?,
                    event: r.req("event")?,
                },
                "KILL_TERMINALS" => Self::KillTerminals {
                    terminals: r.req("terminals")?,
                },
                "GET_TERMINAL_STATE" => Self::GetTerminalState {
                    terminal: r.req("terminal")?,
                    include_scrollback: r.req("include_scrollback")?,
                    max_scrollback_lines: r.req("max_scrollback_lines")?,
                },
                "SUBSCRIBE_TERMINAL_EVENTS" => Self::SubscribeTerminalEvents {
                    terminal: r.req("terminal")?,
                    event_types: r.req("event_types")?,
                },
                "UPGRADE" => Self::Upgrade {
                    binary: r.opt("binary")?,
                },
                "ACQUIRE_INPUT" => Self::AcquireInput {
                    terminal: r.req("terminal")?,
                    mode: r.req("mode")?,
                    ttl_ms: r.req("ttl_ms")?,
                },
                "RELEASE_INPUT" => Self::ReleaseInput {
                    terminal: r.req("terminal")?,
                },
                "SIGNAL_TERMINAL" => Self::SignalTerminal {
                    terminal: r.req("terminal")?,
                    signal: r.req("signal")?,
                },
                "REPORT_ASKED" => Self::ReportAsked {
                    terminal: r.req("terminal")?,
                    asked: r.req("asked")?,
                },
                "DETACH_CLIENTS" => Self::DetachClients {
                    session: r.opt("session")?,
                },
                "SHUTDOWN" => Self::Shutdown,
                "REPORT_AGENT_STATE" => Self::ReportAgentState {
                    terminal: r.req("terminal")?,
                    state: r.req("state")?,
                },
                other => return Err(unknown_variant("command", other)),
            };
            r.finish()?;
            Ok(command)
        })
    }
}

/// `ok`, `error{code=… message="…"}`, or the returned value's own form (the OK_WITH tag is
/// implied): `terminal_id{id=local:3}`, `group_id{id=1}`, `state{…}`, `json{text="…"}`,
/// `bytes{data=…}`, `file_upload{next_offset=… path="…"}`.
impl ToValue for CommandResult {
    fn to_value(&self) -> Value {
        match self {
            Self::Ok => Value::ident("ok"),
            Self::Error { code, message } => Rec::new("error")
                .req("code", code)
                .req("message", message)
                .build(),
            Self::OkWith(value) => match value {
                CommandValue::TerminalId(id) => Rec::new("terminal_id").req("id", id).build(),
                CommandValue::GroupId(id) => Rec::new("group_id").req("id", id).build(),
                CommandValue::State(snapshot) => Value::record("state", snapshot.record_fields()),
                CommandValue::Json(text) => Rec::new("json").req("text", text).build(),
                CommandValue::Bytes(data) => {
                    Rec::new("bytes").req_with::<_, Bytes>("data", data).build()
                }
                CommandValue::FileUpload { next_offset, path } => Rec::new("file_upload")
                    .req("next_offset", next_offset)
                    .opt("path", path.as_ref())
                    .build(),
            },
        }
    }
}

impl FromValue for CommandResult {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "a command result (ok, error{…}, json{…}, …)")?;
        if name == "state" {
            return SessionSnapshot::from_record(value, name)
                .map(|s| Self::OkWith(CommandValue::State(s)));
        }
        in_record(name, || {
            let mut r = Fields::open(value, name)?;
            let result = match name {
                "ok" => Self::Ok,
                "error" => Self::Error {
                    code: r.req("code")?,
                    message: r.req("message")?,
                },
                "terminal_id" => Self::OkWith(CommandValue::TerminalId(r.req("id")?)),
                "group_id" => Self::OkWith(CommandValue::GroupId(r.req("id")?)),
                "json" => Self::OkWith(CommandValue::Json(r.req("text")?)),
                "bytes" => Self::OkWith(CommandValue::Bytes(r.req_with::<_, Bytes>("data")?)),
                "file_upload" => Self::OkWith(CommandValue::FileUpload {
                    next_offset: r.req("next_offset")?,
                    path: r.opt("path")?,
                }),
                other => return Err(unknown_variant("command result", other)),
            };
            r.finish()?;
            Ok(result)
        })
    }
}

record!(SessionSnapshot = "" {
    req sessions,
    req windows,
    req terminals,
    req focused_session,
    req focused_window,
    req focused_pane,
});
record!(SessionInfo = "" {
    req id,
    req name,
    opt active_window,
    req created_at,
    req window_count,
    req attached_client_count,
});
record!(WindowInfo = "" {
    req id,
    req session_id,
    req index,
    req name,
    opt active_pane,
    opt layout,
});
record!(TerminalInfo = "" {
    req terminal,
    req window_id,
    req cols,
    req rows,
    opt title,
    opt cwd,
});

/// `leaf{terminal=local:1}` or `split{direction=… ratio=0.5f32 left=… right=…}`.
impl ToValue for LayoutNode {
    fn to_value(&self) -> Value {
        match self {
            Self::Leaf(terminal) => Rec::new("leaf").req("terminal", terminal).build(),
            Self::Split {
                direction,
                ratio,
                left,
                right,
            } => Rec::new("split")
                .req("direction", direction)
                .req("ratio", ratio)
                .req("left", left)
                .req("right", right)
                .build(),
        }
    }
}

impl FromValue for LayoutNode {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "a layout node (leaf{…} or split{…})")?;
        in_record(name, || {
            let mut r = Fields::open(value, name)?;
            let node = match name {
                "leaf" => Self::Leaf(r.req("terminal")?),
                "split" => Self::Split {
                    direction: r.req("direction")?,
                    ratio: r.req("ratio")?,
                    left: r.req("left")?,
                    right: r.req("right")?,
                },
                other => return Err(unknown_variant("layout node", other)),
            };
            r.finish()?;
            Ok(node)
        })
    }
}
