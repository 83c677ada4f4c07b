//! Every frame type we speak: one `Frame` enum, one module per family.
//!
//! The byte layouts are phux 0.8's (see `spec/`); the codec lives next to the types in each
//! family module, the dispatch in this one.

pub mod command;
pub mod error;
pub mod event;
pub mod handshake;
pub mod input;
pub mod lifecycle;
pub mod terminal;

pub use crate::frame_type::FrameType;
pub use command::{CommandFrame, CommandResultFrame};
pub use error::ErrorFrame;
pub use event::{EventFrame, SubscribeEvents};
pub use handshake::{
    BootstrapProfile, BootstrapProfiles, ByteLimit, ClientCapabilities, ColorSupport,
    DefaultColors, Hello, HelloOk, ImageSupport, KbdProtocols, LayerSet, NativeCodecs,
    NativeFeatures, OutputMode, ProtocolVersion, Rgb, ServerCapabilities, ServerFeatures,
};
pub use input::{InputFocus, InputKey, InputMouse, InputPaste, ViewportInfo, ViewportResize};
pub use lifecycle::{DetachReason, Detached, Ping, Pong};
pub use terminal::{
    Bell, BootstrapBegin, BootstrapChunk, BootstrapCodec, BootstrapReady, BootstrapTombstone,
    SpawnError, SpawnResult, SpawnTerminal, TerminalClosed, TerminalOutput, TerminalOutputRef,
    TerminalOutputTail, TerminalOutputView, TerminalResize, TerminalSize, TerminalSpawned,
    TombstoneReason,
};

/// One whole frame of a type we speak.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Frame {
    /// 0x01 HELLO.
    Hello(Hello),
    /// 0x80 HELLO_OK.
    HelloOk(HelloOk),
    /// 0x7f PING.
    Ping(Ping),
    /// 0xff PONG.
    Pong(Pong),
    /// 0x03 DETACH (no fields).
    Detach,
    /// 0x82 DETACHED.
    Detached(Detached),
    /// 0xc1 ERROR.
    Error(ErrorFrame),
    /// 0x31 COMMAND.
    Command(CommandFrame),
    /// 0xc2 COMMAND_RESULT.
    CommandResult(CommandResultFrame),
    /// 0x10 INPUT_KEY.
    InputKey(InputKey),
    /// 0x11 INPUT_PASTE.
    InputPaste(InputPaste),
    /// 0x12 INPUT_MOUSE.
    InputMouse(InputMouse),
    /// 0x14 INPUT_FOCUS.
    InputFocus(InputFocus),
    /// 0x20 VIEWPORT_RESIZE.
    ViewportResize(ViewportResize),
    /// 0x22 SPAWN_TERMINAL.
    SpawnTerminal(SpawnTerminal),
    /// 0x23 TERMINAL_RESIZE.
    TerminalResize(TerminalResize),
    /// 0xa1 TERMINAL_CLOSED.
    TerminalClosed(TerminalClosed),
    /// 0xa2 TERMINAL_SPAWNED.
    TerminalSpawned(TerminalSpawned),
    /// 0x90 TERMINAL_OUTPUT.
    TerminalOutput(TerminalOutput),
    /// 0x93 BOOTSTRAP_BEGIN.
    BootstrapBegin(BootstrapBegin),
    /// 0x94 BOOTSTRAP_CHUNK.
    BootstrapChunk(BootstrapChunk),
    /// 0x95 BOOTSTRAP_READY.
    BootstrapReady(BootstrapReady),
    /// 0x97 BOOTSTRAP_TOMBSTONE.
    BootstrapTombstone(BootstrapTombstone),
    /// 0x41 SUBSCRIBE_EVENTS.
    SubscribeEvents(SubscribeEvents),
    /// 0xb3 EVENT.
    Event(EventFrame),
    /// 0xb0 BELL.
    Bell(Bell),
}

impl Frame {
    /// This frame's type byte.
    pub fn frame_type(&self) -> FrameType {
        match self {
            Self::Hello(_) => FrameType::HELLO,
            Self::HelloOk(_) => FrameType::HELLO_OK,
            Self::Ping(_) => FrameType::PING,
            Self::Pong(_) => FrameType::PONG,
            Self::Detach => FrameType::DETACH,
            Self::Detached(_) => FrameType::DETACHED,
            Self::Error(_) => FrameType::ERROR,
            Self::Command(_) => FrameType::COMMAND,
            Self::CommandResult(_) => FrameType::COMMAND_RESULT,
            Self::InputKey(_) => FrameType::INPUT_KEY,
            Self::InputPaste(_) => FrameType::INPUT_PASTE,
            Self::InputMouse(_) => FrameType::INPUT_MOUSE,
            Self::InputFocus(_) => FrameType::INPUT_FOCUS,
            Self::ViewportResize(_) => FrameType::VIEWPORT_RESIZE,
            Self::SpawnTerminal(_) => FrameType::SPAWN_TERMINAL,
            Self::TerminalResize(_) => FrameType::TERMINAL_RESIZE,
            Self::TerminalClosed(_) => FrameType::TERMINAL_CLOSED,
            Self::TerminalSpawned(_) => FrameType::TERMINAL_SPAWNED,
            Self::TerminalOutput(_) => FrameType::TERMINAL_OUTPUT,
            Self::BootstrapBegin(_) => FrameType::BOOTSTRAP_BEGIN,
            Self::BootstrapChunk(_) => FrameType::BOOTSTRAP_CHUNK,
            Self::BootstrapReady(_) => FrameType::BOOTSTRAP_READY,
            Self::BootstrapTombstone(_) => FrameType::BOOTSTRAP_TOMBSTONE,
            Self::SubscribeEvents(_) => FrameType::SUBSCRIBE_EVENTS,
            Self::Event(_) => FrameType::EVENT,
            Self::Bell(_) => FrameType::BELL,
        }
    }
}

use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::framing::{encode_framed, split_frame};

impl Frame {
    /// Appends this frame's canonical encoding (header included) to `out`.
    ///
    /// Encoding cannot fail; keeping a frame under `MAX_FRAME_LEN` is the caller's job (the
    /// types bound nothing a server would send near it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_framed(out, self.frame_type(), |out| self.encode_body(out));
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self {
            Self::Hello(f) => f.encode_body(out),
            Self::HelloOk(f) => f.encode_body(out),
            Self::Ping(f) => f.encode_body(out),
            Self::Pong(f) => f.encode_body(out),
            Self::Detach => {}
            Self::Detached(f) => f.encode_body(out),
            Self::Error(f) => f.encode_body(out),
            Self::Command(f) => f.encode_body(out),
            Self::CommandResult(f) => f.encode_body(out),
            Self::InputKey(f) => f.encode_body(out),
            Self::InputPaste(f) => f.encode_body(out),
            Self::InputMouse(f) => f.encode_body(out),
            Self::InputFocus(f) => f.encode_body(out),
            Self::ViewportResize(f) => f.encode_body(out),
            Self::SpawnTerminal(f) => f.encode_body(out),
            Self::TerminalResize(f) => f.encode_body(out),
            Self::TerminalClosed(f) => f.encode_body(out),
            Self::TerminalSpawned(f) => f.encode_body(out),
            Self::TerminalOutput(f) => f.encode_body(out),
            Self::BootstrapBegin(f) => f.encode_body(out),
            Self::BootstrapChunk(f) => f.encode_body(out),
            Self::BootstrapReady(f) => f.encode_body(out),
            Self::BootstrapTombstone(f) => f.encode_body(out),
            Self::SubscribeEvents(f) => f.encode_body(out),
            Self::Event(f) => f.encode_body(out),
            Self::Bell(f) => f.encode_body(out),
        }
    }

    /// This frame's canonical encoding in a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Decodes exactly one whole frame, header included. Bytes past `4 + length` are an
    /// error (`TrailingBytes`), as is a buffer shorter than that (`FrameTruncated`).
    pub fn decode(frame: &[u8]) -> Result<Self, DecodeError> {
        let (frame_type, body) = split_frame(frame)?;
        Self::decode_body(frame_type, body).map_err(|e| e.with_frame(frame_type))
    }

    /// Decodes a body of the given type (header already checked).
    fn decode_body(frame_type: FrameType, body: &[u8]) -> Result<Self, DecodeError> {
        Ok(match frame_type {
            FrameType::HELLO => Self::Hello(Hello::decode_body(body)?),
            FrameType::HELLO_OK => Self::HelloOk(HelloOk::decode_body(body)?),
            FrameType::PING => Self::Ping(Ping::decode_body(body)?),
            FrameType::PONG => Self::Pong(Pong::decode_body(body)?),
            FrameType::DETACH => {
                lifecycle::decode_detach(body)?;
                Self::Detach
            }
            FrameType::DETACHED => Self::Detached(Detached::decode_body(body)?),
            FrameType::ERROR => Self::Error(ErrorFrame::decode_body(body)?),
            FrameType::COMMAND => Self::Command(CommandFrame::decode_body(body)?),
            FrameType::COMMAND_RESULT => {
                Self::CommandResult(CommandResultFrame::decode_body(body)?)
            }
            FrameType::INPUT_KEY => Self::InputKey(InputKey::decode_body(body)?),
            FrameType::INPUT_PASTE => Self::InputPaste(InputPaste::decode_body(body)?),
            FrameType::INPUT_MOUSE => Self::InputMouse(InputMouse::decode_body(body)?),
            FrameType::INPUT_FOCUS => Self::InputFocus(InputFocus::decode_body(body)?),
            FrameType::VIEWPORT_RESIZE => Self::ViewportResize(ViewportResize::decode_body(body)?),
            FrameType::SPAWN_TERMINAL => Self::SpawnTerminal(SpawnTerminal::decode_body(body)?),
            FrameType::TERMINAL_RESIZE => Self::TerminalResize(TerminalResize::decode_body(body)?),
            FrameType::TERMINAL_CLOSED => Self::TerminalClosed(TerminalClosed::decode_body(body)?),
            FrameType::TERMINAL_SPAWNED => {
                Self::TerminalSpawned(TerminalSpawned::decode_body(body)?)
            }
            FrameType::TERMINAL_OUTPUT => Self::TerminalOutput(TerminalOutput::decode_body(body)?),
            FrameType::BOOTSTRAP_BEGIN => Self::BootstrapBegin(BootstrapBegin::decode_body(body)?),
            FrameType::BOOTSTRAP_CHUNK => Self::BootstrapChunk(BootstrapChunk::decode_body(body)?),
            FrameType::BOOTSTRAP_READY => Self::BootstrapReady(BootstrapReady::decode_body(body)?),
            FrameType::BOOTSTRAP_TOMBSTONE => {
                Self::BootstrapTombstone(BootstrapTombstone::decode_body(body)?)
            }
            FrameType::SUBSCRIBE_EVENTS => {
                Self::SubscribeEvents(SubscribeEvents::decode_body(body)?)
            }
            FrameType::EVENT => Self::Event(EventFrame::decode_body(body)?),
            FrameType::BELL => Self::Bell(Bell::decode_body(body)?),
            // [FRAME.TYPE.1] Any other type byte (retired, spec-only, or outside our subset)
            // is UNKNOWN_MESSAGE_TYPE; the frame's length still lets the stream go on.
            FrameType(tag) => {
                return Err(DecodeError::new(DecodeErrorKind::UnknownFrameType { tag }));
            }
        })
    }
}
