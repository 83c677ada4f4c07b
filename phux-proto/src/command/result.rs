//! COMMAND_RESULT's outcome: [`CommandResult`] and the value an OK carries, [`CommandValue`].

use super::snapshot::SessionSnapshot;
use crate::error_code::ErrorCode;
use crate::ids::{GroupId, TerminalId};

/// The outcome inside COMMAND_RESULT field 2 (tag u8).
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CommandResult {
    /// 0x00: done, nothing to return.
    Ok,
    /// 0x01: done, with a value.
    OkWith(CommandValue),
    /// 0x02: refused or failed: `code u16 ‖ message str`.
    Error {
        /// The code; unknown codes are kept (our rule R5).
        code: ErrorCode,
        /// Human-readable text.
        message: String,
    },
}

/// A command's returned value (tag u8).
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum CommandValue {
    /// 0x00.
    TerminalId(TerminalId),
    /// 0x01.
    GroupId(GroupId),
    /// 0x02: GET_STATE's snapshot.
    State(SessionSnapshot),
    /// 0x03: a JSON document (GET_SCREEN, GET_TERMINAL_STATE).
    Json(String),
    /// 0x04.
    Bytes(Vec<u8>),
    /// 0x05: PUT_FILE progress: `next_offset u64 ‖ optional<str> path`.
    FileUpload {
        /// The next offset the server expects.
        next_offset: u64,
        /// Where the file landed, once complete.
        path: Option<String>,
    },
}

// ---- codec ----

use crate::atoms::{Result, Wire, unknown};
use crate::field::{Put, Reader};

impl Wire for CommandResult {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::Ok),
            1 => Ok(Self::OkWith(CommandValue::read(r)?)),
            2 => Ok(Self::Error {
                code: ErrorCode(r.u16()?),
                message: r.str()?,
            }),
            tag => Err(unknown("CommandResult", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Ok => out.put_u8(0),
            Self::OkWith(value) => {
                out.put_u8(1);
                value.write(out);
            }
            Self::Error { code, message } => {
                out.put_u8(2);
                out.put_u16(code.0);
                out.put_len_bytes(message.as_bytes());
            }
        }
    }
}

impl Wire for CommandValue {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::TerminalId(TerminalId::read(r)?)),
            1 => Ok(Self::GroupId(GroupId(r.u32()?))),
            2 => Ok(Self::State(SessionSnapshot::read(r)?)),
            3 => Ok(Self::Json(r.str()?)),
            4 => Ok(Self::Bytes(r.bytes()?)),
            5 => Ok(Self::FileUpload {
                next_offset: r.u64()?,
                path: r.optional(Reader::str)?,
            }),
            tag => Err(unknown("CommandValue", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::TerminalId(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::GroupId(id) => {
                out.put_u8(1);
                out.put_u32(id.0);
            }
            Self::State(snapshot) => {
                out.put_u8(2);
                snapshot.write(out);
            }
            Self::Json(s) => {
                out.put_u8(3);
                out.put_len_bytes(s.as_bytes());
            }
            Self::Bytes(b) => {
                out.put_u8(4);
                out.put_len_bytes(b);
            }
            Self::FileUpload { next_offset, path } => {
                out.put_u8(5);
                out.put_u64(*next_offset);
                out.put_optional(path.as_deref(), |o, p| o.put_len_bytes(p.as_bytes()));
            }
        }
    }
}
