//! Agent events and the records they carry.

use crate::event::{AgentEvent, Asked, ControlAction, Lifecycle, TerminalControl};
use crate::notation::convert::{
    Bytes, Fields, FromValue, Hex, Rec, ToValue, in_record, names, record, unknown_variant,
    variant_name,
};
use crate::notation::error::NotationError;
use crate::notation::value::Value;

// ---- Events ----------------------------------------------------------------------------

names!(Lifecycle, "lifecycle" { Running = "running", Frozen = "frozen", Exited = "exited" });
names!(ControlAction, "control action" {
    Acquired = "acquired",
    Seized = "seized",
    Released = "released",
    Interrupted = "interrupted",
    Frozen = "frozen",
    Resumed = "resumed",
    Terminated = "terminated",
    Killed = "killed",
    Exited = "exited",
});
record!(TerminalControl = "" {
    req lifecycle,
    opt exit_status,
    opt input_holder,
    req action,
    opt actor,
});
record!(Asked = "" { req id, req question, req suggestions, opt elapsed_seconds });

/// Lower-case event names as the spec writes them: `bell`, `title_changed{title="…"}`,
/// `terminal_control{…}`, `unknown{tag=0x0b body=""}`.
impl ToValue for AgentEvent {
    fn to_value(&self) -> Value {
        match self {
            Self::CommandStarted => Value::ident("command_started"),
            Self::CommandFinished { exit_code } => Rec::new("command_finished")
                .opt("exit_code", exit_code.as_ref())
                .build(),
            Self::TitleChanged { title } => Rec::new("title_changed").req("title", title).build(),
            Self::Bell => Value::ident("bell"),
            Self::PaneSpawned => Value::ident("pane_spawned"),
            Self::PaneClosed { exit_status } => Rec::new("pane_closed")
                .opt("exit_status", exit_status.as_ref())
                .build(),
            Self::Dirty => Value::ident("dirty"),
            Self::Idle => Value::ident("idle"),
            Self::TerminalControl(control) => {
                Value::record("terminal_control", control.record_fields())
            }
            Self::Asked(asked) => Value::record("asked", asked.record_fields()),
            Self::CwdChanged { cwd } => Rec::new("cwd_changed").req("cwd", cwd).build(),
            Self::Unknown { tag, body } => Rec::new("unknown")
                .req_with::<_, Hex<2>>("tag", tag)
                .req_with::<_, Bytes>("body", body)
                .build(),
        }
    }
}

impl FromValue for AgentEvent {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "an agent event")?;
        match name {
            "terminal_control" => {
                return TerminalControl::from_record(value, name).map(Self::TerminalControl);
            }
            "asked" => return Asked::from_record(value, name).map(Self::Asked),
            _ => {}
        }
        in_record(name, || {
            let mut r = Fields::open(value, name)?;
            let event = match name {
                "command_started" => Self::CommandStarted,
                "command_finished" => Self::CommandFinished {
                    exit_code: r.opt("exit_code")?,
                },
                "title_changed" => Self::TitleChanged {
                    title: r.req("title")?,
                },
                "bell" => Self::Bell,
                "pane_spawned" => Self::PaneSpawned,
                "pane_closed" => Self::PaneClosed {
                    exit_status: r.opt("exit_status")?,
                },
                "dirty" => Self::Dirty,
                "idle" => Self::Idle,
                "cwd_changed" => Self::CwdChanged { cwd: r.req("cwd")? },
                "unknown" => Self::Unknown {
                    tag: r.req_with::<_, Hex<2>>("tag")?,
                    body: r.req_with::<_, Bytes>("body")?,
                },
                other => return Err(unknown_variant("agent event", other)),
            };
            r.finish()?;
            Ok(event)
        })
    }
}
