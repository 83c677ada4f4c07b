//! Frames: the `Frame` dispatch, every frame's record, and the plain enums the handshake
//! and terminal frames carry.

use crate::frame::{
    Bell, BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapProfile, BootstrapReady,
    BootstrapTombstone, ByteLimit, ClientCapabilities, ColorSupport, CommandFrame,
    CommandResultFrame, DefaultColors, Detached, ErrorFrame, EventFrame, Frame, FrameType, Hello,
    HelloOk, InputFocus, InputKey, InputMouse, InputPaste, OutputMode, Ping, Pong, ProtocolVersion,
    Rgb, ServerCapabilities, SpawnError, SpawnResult, SpawnTerminal, SubscribeEvents,
    TerminalClosed, TerminalOutput, TerminalResize, TerminalSize, TerminalSpawned, TombstoneReason,
    ViewportInfo, ViewportResize,
};
use crate::notation::convert::{
    Bytes, Fields, FromValue, Hex, Rec, ToValue, in_record, names, out_of_range, record,
    unknown_variant, variant_name,
};
use crate::notation::error::NotationError;
use crate::notation::value::Value;

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
            NotationError::value(crate::notation::error::ValueError::UnknownFrame {
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
