//! Frames, commands and results as tests write and read them.

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::frame::{ClientCapabilities, CommandFrame, Hello, ProtocolVersion};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

/// The server_id of incarnation `n`: 16 bytes, distinct per incarnation.
pub fn server_id_for(incarnation: u32) -> Vec<u8> {
    let mut id = vec![0x5e; 12];
    id.extend_from_slice(&incarnation.to_be_bytes());
    id
}

/// A HELLO for version 0.8.0 with the reference client's capabilities.
pub fn hello_frame() -> Frame {
    Frame::Hello(Hello {
        client_name: "sim".into(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
}

/// A COMMAND frame.
pub fn command_frame(request_id: u32, command: Command) -> Frame {
    Frame::Command(CommandFrame {
        request_id,
        command,
    })
}

/// A trusted paste of `data`.
pub fn paste(data: &[u8]) -> InputEvent {
    InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Trusted,
        data: data.to_vec(),
    })
}

/// An untrusted paste of `data`.
pub fn untrusted_paste(data: &[u8]) -> InputEvent {
    InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Untrusted,
        data: data.to_vec(),
    })
}

/// APPLY_INPUT with operation id `op` (non-zero) to `terminal`.
pub fn apply_input(op: u128, terminal: &TerminalId, events: Vec<InputEvent>) -> Command {
    let Some(operation_id) = OperationId::from_u128(op) else {
        panic!("harness misuse: operation id 0")
    };
    Command::ApplyInput(ApplyInput {
        operation_id,
        terminal: terminal.clone(),
        events,
    })
}

/// The error code of a command result, `None` for OK.
pub fn error_code(result: &CommandResult) -> Option<ErrorCode> {
    match result {
        CommandResult::Error { code, .. } => Some(*code),
        _ => None,
    }
}

/// The EVENT frames among `frames`, as (terminal, event).
pub fn events(frames: &[Frame]) -> Vec<(Option<TerminalId>, phux_proto::event::AgentEvent)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(e) => Some((e.terminal.clone(), e.event.clone())),
            _ => None,
        })
        .collect()
}

/// The JSON document of an `OK_WITH(JSON)` result. A test helper: panics on anything else.
pub fn expect_json(result: Option<CommandResult>) -> serde_json::Value {
    match result {
        Some(CommandResult::OkWith(phux_proto::command::CommandValue::Json(s))) => {
            serde_json::from_str(&s).unwrap_or_else(|e| panic!("bad JSON {s:?}: {e}"))
        }
        other => panic!("expected JSON, got {other:?}"),
    }
}
