//! COMMAND (0x31) and COMMAND_RESULT (0xc2) envelopes; the bodies are in `crate::command`.

use crate::command::{ApplyInput, Command, CommandResult};

/// COMMAND (0x31, C→S): field 1 request_id (absent = 0, always written), field 2 command.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CommandFrame {
    /// Correlates the COMMAND_RESULT.
    pub request_id: u32,
    /// The request.
    pub command: Command,
}

/// COMMAND_RESULT (0xc2, S→C): field 1 request_id (absent = 0), field 2 result.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CommandResultFrame {
    /// The COMMAND's request id.
    pub request_id: u32,
    /// The outcome.
    pub result: CommandResult,
}

// ---- codec ----

use crate::atoms::{Result, Wire};
use crate::field::{Fields, Put, Reader, once, required};
use crate::frame_type::FrameType;
use crate::framing::encode_framed;

/// Decodes `1 request_id ‖ 2 value` with the value decoded after the loop, so an error in it
/// carries the request id whichever order the fields came in (our rule R7).
fn decode_envelope<T>(
    body: &[u8],
    name: &'static str,
    decode: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<(u32, T)> {
    let mut fields = Fields::new(body);
    let (mut request_id, mut value) = (None, None);
    let mut fail = None;
    while let Some((id, v)) = fields
        .next_field()
        .map_err(|e| e.with_request_id(request_id))?
    {
        let step = match id {
            1 => once(&mut request_id, id, "request_id", || Reader::new(v).u32()),
            2 => once(&mut value, id, name, || Ok(v)),
            _ => Ok(()),
        };
        if let Err(e) = step {
            fail = Some(e);
            break;
        }
    }
    if let Some(e) = fail {
        return Err(e.with_request_id(request_id));
    }
    let value = required(value, name).map_err(|e| e.with_request_id(request_id))?;
    let decoded = decode(value).map_err(|e| e.with_field(name).with_request_id(request_id))?;
    // [COMMAND.ENVELOPE.1] An absent request id is 0.
    Ok((request_id.unwrap_or(0), decoded))
}

impl CommandFrame {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let (request_id, command) = decode_envelope(body, "command", Command::decode_value)?;
        Ok(Self {
            request_id,
            command,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        encode_command_body(out, self.request_id, |o| self.command.encode_value(o));
    }
}

impl ApplyInput {
    /// Appends `COMMAND{request_id, APPLY_INPUT{self}}`: byte for byte what
    /// [`Frame::Command`](crate::Frame::Command) encodes for it, without first moving a copy
    /// of the events into a [`Command`] (the server hashes this encoding on every operation).
    pub fn encode_command(&self, request_id: u32, out: &mut Vec<u8>) {
        encode_framed(out, FrameType::COMMAND, |out| {
            encode_command_body(out, request_id, |o| {
                o.put_u8(Command::APPLY_INPUT);
                self.write_body(o);
            });
        });
    }
}

/// A COMMAND's body: the request id and the command value `value` writes.
fn encode_command_body(out: &mut Vec<u8>, request_id: u32, value: impl FnOnce(&mut Vec<u8>)) {
    out.put_field(1, &request_id.to_be_bytes());
    out.put_field_with(2, value);
}

impl CommandResultFrame {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let (request_id, result) =
            decode_envelope(body, "result", |v| CommandResult::read(&mut Reader::new(v)))?;
        Ok(Self { request_id, result })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.request_id.to_be_bytes());
        out.put_field_with(2, |o| self.result.write(o));
    }
}
