//! The frame type byte: an open enum of every type phux 0.8 names. A leaf: the header, the
//! errors and the frames all name a type, so it depends on nothing but the enum macro.

use crate::macros::open_enum;

open_enum! {
    /// A frame's type byte. Open: a header with any type byte parses, so an unknown type can
    /// be reported (UNKNOWN_MESSAGE_TYPE) without losing the stream. The named constants are
    /// the types we speak; `0x00-0x7f` are client-originated, `0x80-0xff` server-originated.
    pub struct FrameType(u8);
    /// C→S: opens the handshake.
    HELLO = 0x01,
    /// C→S: ends the connection politely.
    DETACH = 0x03,
    /// C→S: a key event for one terminal.
    INPUT_KEY = 0x10,
    /// C→S: a paste for one terminal.
    INPUT_PASTE = 0x11,
    /// C→S: a mouse event for one terminal.
    INPUT_MOUSE = 0x12,
    /// C→S: focus gained or lost.
    INPUT_FOCUS = 0x14,
    /// C→S: the client's viewport size (cells and optional pixels).
    VIEWPORT_RESIZE = 0x20,
    /// C→S: start a terminal.
    SPAWN_TERMINAL = 0x22,
    /// C→S: resize a terminal.
    TERMINAL_RESIZE = 0x23,
    /// C→S: a request, answered by COMMAND_RESULT.
    COMMAND = 0x31,
    /// C→S: subscribe to agent events (server- or terminal-scoped).
    SUBSCRIBE_EVENTS = 0x41,
    /// C→S: liveness probe.
    PING = 0x7f,
    /// S→C: the handshake reply.
    HELLO_OK = 0x80,
    /// S→C: the server is ending the connection, and why.
    DETACHED = 0x82,
    /// S→C: terminal output bytes.
    TERMINAL_OUTPUT = 0x90,
    /// S→C: a bootstrap starts.
    BOOTSTRAP_BEGIN = 0x93,
    /// S→C: one bootstrap payload chunk.
    BOOTSTRAP_CHUNK = 0x94,
    /// S→C: the bootstrap is complete; live output follows.
    BOOTSTRAP_READY = 0x95,
    /// S→C: the bootstrap (or stream) was abandoned.
    BOOTSTRAP_TOMBSTONE = 0x97,
    /// S→C: a terminal's child is gone.
    TERMINAL_CLOSED = 0xa1,
    /// S→C: the reply to SPAWN_TERMINAL.
    TERMINAL_SPAWNED = 0xa2,
    /// S→C: a terminal rang its bell.
    BELL = 0xb0,
    /// S→C: an agent event.
    EVENT = 0xb3,
    /// S→C: an error report.
    ERROR = 0xc1,
    /// S→C: the reply to COMMAND.
    COMMAND_RESULT = 0xc2,
    /// S→C: the reply to PING.
    PONG = 0xff,
}

impl FrameType {
    /// Whether a client sends this type (`0x00-0x7f`); servers send the rest.
    pub fn is_client_originated(self) -> bool {
        self.0 < 0x80
    }
}
