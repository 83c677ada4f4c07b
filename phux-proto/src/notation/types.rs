//! The notation of every frame, command and nested record.

use super::convert::{
    Bytes, Fields, FromValue, Hex, Hex128, HexArray, Rec, ToValue, expected, flags, in_record,
    names, out_of_range, record, unknown_variant, variant_name,
};
use super::error::NotationError;
use super::value::Value;
use crate::command::{
    AcquireMode, AgentState, ApplyInput, Command, CommandResult, CommandValue, LayoutNode, PutFile,
    SessionInfo, SessionSnapshot, Signal, SplitDirection, StateScope, TerminalEventType,
    TerminalInfo, WindowInfo,
};
use crate::error_code::ErrorCode;
use crate::event::{AgentEvent, Asked, ControlAction, Lifecycle, TerminalControl};
use crate::frame::{
    Bell, BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapProfile, BootstrapProfiles,
    BootstrapReady, BootstrapTombstone, ByteLimit, ClientCapabilities, ColorSupport, CommandFrame,
    CommandResultFrame, DefaultColors, DetachReason, Detached, ErrorFrame, EventFrame, Frame,
    FrameType, Hello, HelloOk, ImageSupport, InputFocus, InputKey, InputMouse, InputPaste,
    KbdProtocols, LayerSet, NativeCodecs, NativeFeatures, OutputMode, Ping, Pong, ProtocolVersion,
    Rgb, ServerCapabilities, ServerFeatures, SpawnError, SpawnResult, SpawnTerminal,
    SubscribeEvents, TerminalClosed, TerminalOutput, TerminalResize, TerminalSize, TerminalSpawned,
    TombstoneReason, ViewportInfo, ViewportResize,
};
use crate::input::{
    FocusEvent, InputEvent, KeyAction, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent,
    PasteEvent, PasteTrust, PhysicalKey,
};

// ---- Frames ----------------------------------------------------------------------------

impl ToValue for Frame {
    fn to_value(&self) -> Value {
        match self {
            Self::Hello(f) => f.to_value(),
            Self::HelloOk(f) => f.to_value(),
            Self::Ping(f) => f.to_value(),
            Self::Pong(f) => f.to_value(),
            Self::Detach => Value::record("DETACH", Vec::new()),
            Self::Detached(f) => f.to_value(),
            Self::Error(f) => f.to_value(),
            Self::Command(f) => f.to_value(),
            Self::CommandResult(f) => f.to_value(),
            Self::InputKey(f) => f.to_value(),
            Self::InputPaste(f) => f.to_value(),
            Self::InputMouse(f) => f.to_value(),
            Self::InputFocus(f) => f.to_value(),
            Self::ViewportResize(f) => f.to_value(),
            Self::SpawnTerminal(f) => f.to_value(),
            Self::TerminalResize(f) => f.to_value(),
            Self::TerminalClosed(f) => f.to_value(),
            Self::TerminalSpawned(f) => f.to_value(),
            Self::TerminalOutput(f) => f.to_value(),
            Self::BootstrapBegin(f) => f.to_value(),
            Self::BootstrapChunk(f) => f.to_value(),
            Self::BootstrapReady(f) => f.to_value(),
            Self::BootstrapTombstone(f) => f.to_value(),
            Self::SubscribeEvents(f) => f.to_value(),
            Self::Event(f) => f.to_value(),
            Self::Bell(f) => f.to_value(),
        }
    }
}

impl FromValue for Frame {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "a frame (NAME{…})")?;
        let unknown = || {
            NotationError::value(super::error::ValueError::UnknownFrame {
                name: name.to_owned(),
            })
        };
        let frame_type = FrameType::from_name(name).ok_or_else(unknown)?;
        Ok(match frame_type {
            FrameType::HELLO => Self::Hello(FromValue::from_value(value)?),
            FrameType::HELLO_OK => Self::HelloOk(FromValue::from_value(value)?),
            FrameType::PING => Self::Ping(FromValue::from_value(value)?),
            FrameType::PONG => Self::Pong(FromValue::from_value(value)?),
            FrameType::DETACH => {
                in_record("DETACH", || Fields::open(value, "DETACH")?.finish())?;
                Self::Detach
            }
            FrameType::DETACHED => Self::Detached(FromValue::from_value(value)?),
            FrameType::ERROR => Self::Error(FromValue::from_value(value)?),
            FrameType::COMMAND => Self::Command(FromValue::from_value(value)?),
            FrameType::COMMAND_RESULT => Self::CommandResult(FromValue::from_value(value)?),
            FrameType::INPUT_KEY => Self::InputKey(FromValue::from_value(value)?),
            FrameType::INPUT_PASTE => Self::InputPaste(FromValue::from_value(value)?),
            FrameType::INPUT_MOUSE => Self::InputMouse(FromValue::from_value(value)?),
            FrameType::INPUT_FOCUS => Self::InputFocus(FromValue::from_value(value)?),
            FrameType::VIEWPORT_RESIZE => Self::ViewportResize(FromValue::from_value(value)?),
            FrameType::SPAWN_TERMINAL => Self::SpawnTerminal(FromValue::from_value(value)?),
            FrameType::TERMINAL_RESIZE => Self::TerminalResize(FromValue::from_value(value)?),
            FrameType::TERMINAL_CLOSED => Self::TerminalClosed(FromValue::from_value(value)?),
            FrameType::TERMINAL_SPAWNED => Self::TerminalSpawned(FromValue::from_value(value)?),
            FrameType::TERMINAL_OUTPUT => Self::TerminalOutput(FromValue::from_value(value)?),
            FrameType::BOOTSTRAP_BEGIN => Self::BootstrapBegin(FromValue::from_value(value)?),
            FrameType::BOOTSTRAP_CHUNK => Self::BootstrapChunk(FromValue::from_value(value)?),
            FrameType::BOOTSTRAP_READY => Self::BootstrapReady(FromValue::from_value(value)?),
            FrameType::BOOTSTRAP_TOMBSTONE => {
                Self::BootstrapTombstone(FromValue::from_value(value)?)
            }
            FrameType::SUBSCRIBE_EVENTS => Self::SubscribeEvents(FromValue::from_value(value)?),
            FrameType::EVENT => Self::Event(FromValue::from_value(value)?),
            FrameType::BELL => Self::Bell(FromValue::from_value(value)?),
            _ => return Err(unknown()),
        })
    }
}

record!(Hello = "HELLO" { req client_name, req version, req capabilities });
record!(HelloOk = "HELLO_OK" {
    req version,
    req capabilities,
    req server_id: Bytes,
    req profile,
    req max_chunk_bytes,
    req max_history_page_bytes,
});
record!(ProtocolVersion = "" { req major, req minor, req patch });
record!(ClientCapabilities = "" {
    req color,
    req layers,
    req images,
    req kbd_protocols,
    req hyperlinks,
    req output_mode,
    opt default_colors,
    req bootstrap_profiles,
    req native_codecs,
    req native_features,
    req max_chunk_bytes,
    req max_history_page_bytes,
});
record!(ServerCapabilities = "" { req layers, req features });
record!(DefaultColors = "" { req fg, req bg });
record!(Rgb = "" { req r, req g, req b });
record!(Ping = "PING" { req nonce: Hex<16> });
record!(Pong = "PONG" { req nonce: Hex<16> });
record!(Detached = "DETACHED" { opt reason, req message });
record!(ErrorFrame = "ERROR" { opt request_id, req code, req message });
record!(CommandFrame = "COMMAND" { req request_id, req command });
record!(CommandResultFrame = "COMMAND_RESULT" { req request_id, req result });
record!(InputKey = "INPUT_KEY" { req terminal, req event });
record!(InputPaste = "INPUT_PASTE" { req terminal, req event });
record!(InputMouse = "INPUT_MOUSE" { req terminal, req event });
record!(InputFocus = "INPUT_FOCUS" { req terminal, req event });
record!(ViewportResize = "VIEWPORT_RESIZE" { req viewport });
record!(ViewportInfo = "" { req cols, req rows, opt pixel_w, opt pixel_h });
record!(SpawnTerminal = "SPAWN_TERMINAL" {
    req request_id,
    req group,
    opt command,
    opt cwd,
    opt env,
    opt term,
    opt satellite,
    opt owner_terminal,
    opt agent_session: Bytes,
    opt initial_size,
});
record!(TerminalSize = "" { req cols, req rows });
record!(TerminalResize = "TERMINAL_RESIZE" { req terminal, req size });
record!(TerminalClosed = "TERMINAL_CLOSED" { req terminal, opt exit_status });
record!(TerminalSpawned = "TERMINAL_SPAWNED" { req request_id, req result });
record!(TerminalOutput = "TERMINAL_OUTPUT" {
    req terminal,
    req seq,
    req bytes: Bytes,
    req stream,
    req bootstrap,
});
record!(BootstrapBegin = "BOOTSTRAP_BEGIN" {
    req terminal,
    req stream,
    req bootstrap,
    req codec,
    req cols,
    req rows,
    req output_mode,
    req base_seq,
});
record!(BootstrapChunk = "BOOTSTRAP_CHUNK" {
    req terminal,
    req stream,
    req bootstrap,
    req chunk_seq,
    req payload: Bytes,
});
record!(BootstrapReady = "BOOTSTRAP_READY" {
    req terminal,
    req stream,
    req bootstrap,
    opt history_cursor: Bytes,
});
record!(BootstrapTombstone = "BOOTSTRAP_TOMBSTONE" {
    req terminal,
    req stream,
    req bootstrap,
    req reason,
    req last_valid_seq,
});
record!(SubscribeEvents = "SUBSCRIBE_EVENTS" { opt terminal });
record!(EventFrame = "EVENT" { opt terminal, req event });
record!(Bell = "BELL" { req terminal });

// ---- Input atoms -----------------------------------------------------------------------

record!(KeyEvent = "" {
    req action,
    req key,
    req mods,
    req consumed_mods,
    req composing,
    opt text,
    opt unshifted_codepoint: Hex<2>,
});
record!(MouseEvent = "" { req action, req button, req mods, req x, req y });
record!(PasteEvent = "" { req trust, req data: Bytes });

/// `KEY{…}`, `MOUSE{…}`, `PASTE{…}` (the event's own fields), `FOCUS{event=gained}`.
impl ToValue for InputEvent {
    fn to_value(&self) -> Value {
        match self {
            Self::Key(key) => Value::record("KEY", key.record_fields()),
            Self::Mouse(mouse) => Value::record("MOUSE", mouse.record_fields()),
            Self::Focus(focus) => Rec::new("FOCUS").req("event", focus).build(),
            Self::Paste(paste) => Value::record("PASTE", paste.record_fields()),
        }
    }
}

impl FromValue for InputEvent {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match variant_name(value, "an input event (KEY, MOUSE, FOCUS or PASTE)")? {
            "KEY" => KeyEvent::from_record(value, "KEY").map(Self::Key),
            "MOUSE" => MouseEvent::from_record(value, "MOUSE").map(Self::Mouse),
            "PASTE" => PasteEvent::from_record(value, "PASTE").map(Self::Paste),
            "FOCUS" => in_record("FOCUS", || {
                let mut r = Fields::open(value, "FOCUS")?;
                let event = r.req("event")?;
                r.finish()?;
                Ok(Self::Focus(event))
            }),
            other => Err(unknown_variant("input event", other)),
        }
    }
}

names!(KeyAction, "key action" { Release = "release", Press = "press", Repeat = "repeat" });
names!(MouseAction, "mouse action" { Press = "press", Release = "release", Motion = "motion" });
names!(MouseButton, "mouse button" {
    Unknown = "unknown",
    Left = "left",
    Right = "right",
    Middle = "middle",
    Four = "four",
    Five = "five",
    Six = "six",
    Seven = "seven",
    Eight = "eight",
    Nine = "nine",
    Ten = "ten",
    Eleven = "eleven",
});
names!(FocusEvent, "focus event" { Gained = "gained", Lost = "lost" });
names!(PasteTrust, "paste trust" { Trusted = "trusted", Untrusted = "untrusted" });

/// The W3C `code` name (`KeyA`), or the decimal value of a key phux 0.8 does not name.
impl ToValue for PhysicalKey {
    fn to_value(&self) -> Value {
        match self.name() {
            Some(name) => Value::ident(name),
            None => Value::Int(i128::from(self.0)),
        }
    }
}

impl FromValue for PhysicalKey {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Ident(name) => {
                Self::from_name(name).ok_or_else(|| unknown_variant("physical key", name))
            }
            Value::Int(_) | Value::HexInt { .. } => u32::from_value(value).map(Self),
            other => Err(expected("a key name (KeyA, Enter) or number", other)),
        }
    }
}

flags!(
    ModSet,
    LayerSet,
    ImageSupport,
    KbdProtocols,
    BootstrapProfiles,
    NativeCodecs,
    NativeFeatures,
    ServerFeatures,
);

// ---- Handshake enums -------------------------------------------------------------------

names!(ColorSupport, "colour support" {
    TrueColor = "true_color",
    Indexed256 = "indexed256",
    Indexed16 = "indexed16",
    Mono = "mono",
});
names!(OutputMode, "output mode" { Raw = "raw", StateSync = "state_sync" });
names!(BootstrapProfile, "bootstrap profile" {
    SynthesizedVtRaw = "synthesized_vt_raw",
    SynthesizedVtStateSync = "synthesized_vt_state_sync",
    NativeState = "native_state",
});

impl ToValue for ByteLimit {
    fn to_value(&self) -> Value {
        self.get().to_value()
    }
}

impl FromValue for ByteLimit {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        Self::new(u32::from_value(value)?)
            .ok_or_else(|| out_of_range("a byte limit (1..=8388608)", value))
    }
}

// ---- Open wire enums -------------------------------------------------------------------

/// Known reasons as lower-case words (`server_shutdown`), others as `0x…`.
impl ToValue for DetachReason {
    fn to_value(&self) -> Value {
        open_name(self.name(), u128::from(self.0), 2)
    }
}

impl FromValue for DetachReason {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        open_from(value, "detach reason", |word| {
            Self::KNOWN
                .iter()
                .copied()
                .find(|k| lower(k.name()) == word)
        })
        .map(Self)
    }
}

impl ToValue for TerminalEventType {
    fn to_value(&self) -> Value {
        open_name(self.name(), u128::from(self.0), 2)
    }
}

impl FromValue for TerminalEventType {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        open_from(value, "terminal event type", |word| {
            Self::KNOWN
                .iter()
                .copied()
                .find(|k| lower(k.name()) == word)
        })
        .map(Self)
    }
}

/// Error codes keep the spec's upper-case names (`INVALID_COMMAND`); others are `0x…`.
impl ToValue for ErrorCode {
    fn to_value(&self) -> Value {
        match self.name() {
            Some(name) => Value::ident(name),
            None => Value::HexInt {
                value: u128::from(self.0),
                width: 4,
            },
        }
    }
}

impl FromValue for ErrorCode {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Ident(name) => {
                Self::from_name(name).ok_or_else(|| unknown_variant("error code", name))
            }
            Value::Int(_) | Value::HexInt { .. } => u16::from_value(value).map(Self),
            other => Err(expected("an error code name or number", other)),
        }
    }
}

fn lower(name: Option<&str>) -> String {
    name.map(str::to_ascii_lowercase).unwrap_or_default()
}

fn open_name(name: Option<&str>, raw: u128, width: u8) -> Value {
    match name {
        Some(name) => Value::ident(name.to_ascii_lowercase()),
        None => Value::HexInt { value: raw, width },
    }
}

/// A lower-case known name, or any number of the type's width.
fn open_from<T: OpenRaw>(
    value: &Value,
    what: &'static str,
    by_name: impl Fn(&str) -> Option<T>,
) -> Result<u8, NotationError> {
    match value {
        Value::Ident(word) => by_name(word)
            .map(OpenRaw::raw)
            .ok_or_else(|| unknown_variant(what, word)),
        Value::Int(_) | Value::HexInt { .. } => u8::from_value(value),
        other => Err(expected("a lower-case name or a number", other)),
    }
}

trait OpenRaw {
    fn raw(self) -> u8;
}

impl OpenRaw for DetachReason {
    fn raw(self) -> u8 {
        self.0
    }
}

impl OpenRaw for TerminalEventType {
    fn raw(self) -> u8 {
        self.0
    }
}

// ---- Terminal enums --------------------------------------------------------------------

names!(BootstrapCodec, "bootstrap codec" {
    SynthesizedVtV1 = "synthesized_vt_v1",
    Native = "native",
});
names!(TombstoneReason, "tombstone reason" {
    RawReplayOverflow = "raw_replay_overflow",
    OutboundGap = "outbound_gap",
    Resize = "resize",
    RelayReconnect = "relay_reconnect",
    ExplicitReattach = "explicit_reattach",
    CodecFailure = "codec_failure",
    Other = "other",
});

/// `ok{terminal=local:3}`, or the error's own form: `group_not_found`,
/// `spawn_failed{reason="…"}`, `unsupported_satellite_route`, `satellite_unreachable{…}`.
impl ToValue for SpawnResult {
    fn to_value(&self) -> Value {
        match self {
            Self::Ok(terminal) => Rec::new("ok").req("terminal", terminal).build(),
            Self::Err(SpawnError::GroupNotFound) => Value::ident("group_not_found"),
            Self::Err(SpawnError::SpawnFailed(reason)) => {
                Rec::new("spawn_failed").req("reason", reason).build()
            }
            Self::Err(SpawnError::UnsupportedSatelliteRoute) => {
                Value::ident("unsupported_satellite_route")
            }
            Self::Err(SpawnError::SatelliteUnreachable(reason)) => {
                Rec::new("satellite_unreachable")
                    .req("reason", reason)
                    .build()
            }
        }
    }
}

impl FromValue for SpawnResult {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        let name = variant_name(value, "a spawn result")?;
        in_record(name, || {
            let mut r = Fields::open(value, name)?;
            let result = match name {
                "ok" => Self::Ok(r.req("terminal")?),
                "group_not_found" => Self::Err(SpawnError::GroupNotFound),
                "spawn_failed" => Self::Err(SpawnError::SpawnFailed(r.req("reason")?)),
                "unsupported_satellite_route" => Self::Err(SpawnError::UnsupportedSatelliteRoute),
                "satellite_unreachable" => {
                    Self::Err(SpawnError::SatelliteUnreachable(r.req("reason")?))
                }
                other => return Err(unknown_variant("spawn result", other)),
            };
            r.finish()?;
            Ok(result)
        })
    }
}

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
/// `UPGRADE{}`.
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
            Self::Upgrade | Self::Shutdown => rec,
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
                "UPGRADE" => Self::Upgrade,
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
