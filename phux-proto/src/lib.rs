//! The phux 0.8 wire codec: frames, fields, ids and input atoms.
//!
//! This crate knows bytes and types, nothing else: no I/O, no state, no clocks.
//! Decoding is strict (see `spec/` and the digest's section 0 rules) and never
//! allocates from an unchecked length; encoding is canonical.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod atoms;
mod macros;

pub mod command;
pub mod decode_error;
pub mod error_code;
pub mod event;
pub mod field;
pub mod frame;
mod frame_type;
pub mod framing;
#[doc(hidden)]
pub mod fuzzing;
pub mod ids;
pub mod input;
#[cfg(feature = "notation")]
pub mod notation;

pub use command::{Command, CommandResult, CommandValue};
pub use decode_error::{DecodeError, DecodeErrorKind};
pub use error_code::ErrorCode;
pub use frame::Frame;
pub use frame_type::FrameType;
pub use ids::{BootstrapId, ClientId, GroupId, OperationId, StreamId, TerminalId};
