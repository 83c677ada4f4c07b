//! Why bytes did not decode: which frame, which field, what went wrong, and the wire code.

use std::fmt;

use crate::error_code::ErrorCode;
use crate::frame_type::FrameType;

/// A frame that did not decode. Says which frame and field, why, and (for a COMMAND whose
/// field 1 decoded) the request id, so a server can answer `ERROR{request_id, code}` and keep
/// the connection (our rule R7).
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub struct DecodeError {
    frame: Option<FrameType>,
    field: Option<&'static str>,
    kind: DecodeErrorKind,
    request_id: Option<u32>,
}

/// What went wrong.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// A value ran past the end of its field or frame body, or a required field is missing.
    #[error("unexpected end of input")]
    UnexpectedEof,
    /// A required field is absent.
    #[error("required field missing")]
    MissingField,
    /// The buffer holds less than the `4 + length` bytes the header declares.
    #[error("frame truncated: header declares {needed} bytes, {available} present")]
    FrameTruncated {
        /// `4 + length`.
        needed: usize,
        /// Bytes given.
        available: usize,
    },
    /// The header's length is 0 or over 16 MiB.
    #[error("frame length {len} outside 1..=16 MiB")]
    FrameLength {
        /// The declared length.
        len: u32,
    },
    /// Bytes after the `4 + length` the header declares.
    #[error("{extra} bytes after the frame")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
    /// A type byte we do not speak (retired, spec-only, or outside our subset).
    #[error("unknown frame type {tag:#04x}")]
    UnknownFrameType {
        /// The type byte.
        tag: u8,
    },
    /// A closed enum's value outside its range.
    #[error("unknown {what} value {value:#x}")]
    UnknownEnumValue {
        /// Which enum.
        what: &'static str,
        /// The value found.
        value: u64,
    },
    /// A command tag that is not allocated (our rule R7: INVALID_COMMAND, not fatal).
    #[error("unknown command tag {tag:#04x}")]
    UnknownCommand {
        /// The tag byte.
        tag: u8,
    },
    /// A string that is not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// An all-zero APPLY_INPUT operation id.
    #[error("operation id must not be zero")]
    ZeroOperationId,
    /// A zero stream or bootstrap id (or zero cols/rows where the wire forbids it).
    #[error("value must not be zero")]
    ZeroId,
    /// A bound the protocol names was exceeded.
    #[error("{what} is {actual}, limit {limit}")]
    LimitExceeded {
        /// Which bound.
        what: &'static str,
        /// The bound.
        limit: u64,
        /// The value found.
        actual: u64,
    },
    /// A value below its lower bound.
    #[error("{what} is {actual}, minimum {min}")]
    BelowMinimum {
        /// Which bound.
        what: &'static str,
        /// The bound.
        min: u64,
        /// The value found.
        actual: u64,
    },
    /// A varint not in its shortest form (our rule R1).
    #[error("non-canonical varint")]
    NonCanonicalVarint,
    /// A varint longer than 10 bytes or over its target width.
    #[error("varint overflow")]
    VarintOverflow,
    /// A TLV wire-type byte other than 4 (our rule R2).
    #[error("wire type {found} (only 4 is allowed)")]
    WireType {
        /// The byte found.
        found: u8,
    },
    /// A known field id seen twice (our rule R3).
    #[error("field {id} appears twice")]
    DuplicateField {
        /// The field id.
        id: u32,
    },
    /// A bool or presence byte other than 0 or 1 (our rule R6).
    #[error("bool byte {value:#04x} (only 0 or 1)")]
    InvalidBool {
        /// The byte found.
        value: u8,
    },
    /// A value combination the wire forbids (e.g. a native codec with state-sync output).
    #[error("invalid combination: {what}")]
    Invalid {
        /// What is wrong.
        what: &'static str,
    },
}

impl DecodeError {
    /// An error of `kind` with no context yet.
    pub fn new(kind: DecodeErrorKind) -> Self {
        Self {
            frame: None,
            field: None,
            kind,
            request_id: None,
        }
    }

    /// The frame type, when the header's type byte was read.
    pub fn frame(&self) -> Option<FrameType> {
        self.frame
    }

    /// The field or value being decoded, when known.
    pub fn field(&self) -> Option<&'static str> {
        self.field
    }

    /// What went wrong.
    pub fn kind(&self) -> DecodeErrorKind {
        self.kind
    }

    /// The COMMAND's request id, when its field 1 decoded before the error.
    pub fn request_id(&self) -> Option<u32> {
        self.request_id
    }

    /// The wire code to report. The one table of decode error → code.
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            // [FRAME.LENGTH.1] A length outside 1..=16 MiB, or a message whose size is not
            // 4 + length, is a framing violation.
            DecodeErrorKind::FrameLength { .. }
            | DecodeErrorKind::FrameTruncated { .. }
            | DecodeErrorKind::TrailingBytes { .. } => ErrorCode::FRAME_TOO_LARGE,
            DecodeErrorKind::UnknownFrameType { .. } => ErrorCode::UNKNOWN_MESSAGE_TYPE,
            // [ERROR.COMMAND.1] An unknown command tag is INVALID_COMMAND (our rule R7).
            DecodeErrorKind::UnknownCommand { .. } => ErrorCode::INVALID_COMMAND,
            _ => ErrorCode::MALFORMED_MESSAGE,
        }
    }

    /// Whether the stream cannot be resynchronised after this error (fatal for the
    /// connection): the frame boundaries themselves are in doubt.
    pub fn is_framing(&self) -> bool {
        matches!(
            self.kind,
            DecodeErrorKind::FrameLength { .. }
                | DecodeErrorKind::FrameTruncated { .. }
                | DecodeErrorKind::TrailingBytes { .. }
        )
    }

    pub(crate) fn with_frame(mut self, frame: FrameType) -> Self {
        self.frame.get_or_insert(frame);
        self
    }

    pub(crate) fn with_field(mut self, field: &'static str) -> Self {
        self.field.get_or_insert(field);
        self
    }

    pub(crate) fn with_request_id(mut self, request_id: Option<u32>) -> Self {
        if self.request_id.is_none() {
            self.request_id = request_id;
        }
        self
    }
}

impl From<DecodeErrorKind> for DecodeError {
    fn from(kind: DecodeErrorKind) -> Self {
        Self::new(kind)
    }
}

/// `<FRAME> <field>: <reason>`, e.g. `COMMAND command: unknown command tag 0x7f`.
impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.frame {
            Some(frame) => write!(f, "{frame}")?,
            None => f.write_str("frame")?,
        }
        if let Some(field) = self.field {
            write!(f, " {field}")?;
        }
        write!(f, ": {}", self.kind)?;
        if let Some(id) = self.request_id {
            write!(f, " (request {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}
