//! The phux 0.8 wire codec: frames, fields, ids and input atoms, as bytes and as types.
//!
//! phux is a terminal protocol: clients attach to terminals a server runs, send input and
//! commands, and receive output, bootstraps and events. This crate is the wire and nothing
//! else: it turns bytes into typed frames and frames into bytes. It performs no I/O, keeps no
//! state and reads no clock, so the server and client engines (`phux-core`), the conformance
//! runner and the fuzzers all share one codec they can drive with plain byte slices.
//!
//! Decoding is strict and bounded: it never allocates from an unchecked length, never panics,
//! and says what went wrong in a [`DecodeError`] (which frame, which field, why, and the
//! [`ErrorCode`] to report). Encoding is canonical: `encode(decode(b)) == b` for every valid
//! `b`.
//!
//! # Decoding and encoding a frame
//!
//! A frame is a 5-byte header (a big-endian `u32` length that counts the type byte and the
//! body, then the type byte) and a body of TLV fields. [`framing::parse_header`] reads a header
//! from the front of a stream and says how long the frame is; [`Frame::decode`] decodes exactly
//! one whole frame; [`Frame::encode`] appends one.
//!
//! ```
//! use phux_proto::frame::Ping;
//! use phux_proto::framing::parse_header;
//! use phux_proto::{ErrorCode, Frame, FrameType};
//!
//! // Encoding: header, then field 1 (the nonce) as `id ‖ wire type 4 ‖ length ‖ u64 BE`.
//! let ping = Frame::Ping(Ping { nonce: 0xdead_beef_cafe_f00d });
//! let mut stream = Vec::new();
//! ping.encode(&mut stream);
//! assert_eq!(
//!     stream,
//!     [0, 0, 0, 12, 0x7f, 0x01, 0x04, 0x08, 0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d],
//! );
//!
//! // Decoding from a stream: `None` until the header is in, then the frame's whole length.
//! assert_eq!(parse_header(&stream[..3])?, None);
//! let header = parse_header(&stream)?.expect("a whole header");
//! assert_eq!(header.frame_type, FrameType::PING);
//! let frame = Frame::decode(&stream[..header.frame_len()])?;
//! assert_eq!(frame, ping);
//!
//! // Bad bytes are a typed error that names the wire code to report.
//! let err = Frame::decode(&[0, 0, 0, 1, 0x7e]).unwrap_err();
//! assert_eq!(err.code(), ErrorCode::UNKNOWN_MESSAGE_TYPE);
//! # Ok::<(), phux_proto::DecodeError>(())
//! ```
//!
//! # Map
//!
//! - [`framing`]: the frame header and the 16 MiB cap; [`FrameType`], the type byte.
//! - [`field`]: the TLV envelope and the positional primitives inside a field.
//! - [`frame`]: [`Frame`], one enum over every frame type we speak, one module per family.
//! - [`command`]: COMMAND bodies ([`Command`]) and their outcomes ([`CommandResult`]).
//! - [`ids`], [`input`], [`event`]: the identifiers, input atoms and agent events frames carry.
//! - [`decode_error`], [`error_code`]: why bytes did not decode, and the wire error codes.
//!
//! # Features
//!
#![cfg_attr(
    feature = "notation",
    doc = "- `notation` (on by default): the text notation in [`notation`], with `Display` and \
           `FromStr` for [`Frame`] (`PING{nonce=0xdeadbeefcafef00d}`), which transcripts, logs \
           and command lines use. The codec does not need it: a crate that only speaks bytes \
           can turn it off with `default-features = false`."
)]
#![cfg_attr(
    not(feature = "notation"),
    doc = "- `notation` (on by default, off in this build): the text notation (`notation`), \
           with `Display` and `FromStr` for [`Frame`]."
)]
//! - `arbitrary` (off by default): derives `arbitrary::Arbitrary` for every frame type, each
//!   value within the wire's bounds, for the fuzzers and the property tests.
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
pub mod hex;
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
