//! The frame text notation: how transcripts, logs and the CLI write frames for people.
//! Behind the `notation` feature, on by default.
//!
//! ```text
//! COMMAND{request_id=7 command=APPLY_INPUT{operation_id=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
//!   terminal=local:3 events=[PASTE{trust=trusted data="ls\r"}]}}
//! ```
//!
//! Two levels. [`Value`] is a small generic tree with a parser ([`Value::parse`], errors
//! carry line and column) and a renderer (`Display`). [`ToValue`] / [`FromValue`] convert
//! every frame type to and from that tree; `Frame` implements `Display` and `FromStr` through
//! them, and `Frame::from_str(&frame.to_string()) == Ok(frame)` for every frame. The
//! conformance runner matches [`Value`] trees that hold pattern leaves (`$name`, `*`, and
//! the rest marker `..` among a record's fields) before any typed conversion; typed
//! conversion refuses them. The parser keeps `..` as a field named [`REST_FIELD`] whose value
//! is [`Value::Wildcard`], and renders it back as `..`.
//!
//! # Grammar
//!
//! ```text
//! value      = primary { "|" primary } ;            (* two or more: a flag set *)
//! primary    = record | list | string | hexstring | number | terminal | float_bits
//!            | ident | "$" ident | "*" ;
//! record     = [ ident ] "{" sep* [ field { sep+ field } ] sep* "}" ;
//! field      = ident "=" value                       (* spaces around "=" allowed *)
//!            | ".." ;                                (* pattern: any other fields *)
//! list       = "[" sep* [ value { sep+ value } ] sep* "]" ;
//! sep        = whitespace | "," ;
//! ident      = ( letter | "_" ) { letter | digit | "_" } ;
//! number     = "0x" hexdigit+                        (* integer, any width up to 128 bits *)
//!            | [ "-" ] digit+                        (* decimal integer *)
//!            | [ "-" ] digit+ [ "." digit* ] [ ("e"|"E") [ "+"|"-" ] digit+ ] [ "f32" ] ;
//! float_bits = ( "f64:" | "f32:" ) "0x" hexdigit+ ;  (* exact bits: NaN, infinities *)
//! terminal   = "local:" digit+ | "satellite:" string ":" digit+ ;
//! string     = '"' { char | escape } '"' ;
//! escape     = "\n" | "\r" | "\t" | "\e" | "\\" | '\"' | "\x" hexdigit hexdigit
//!            | "\u{" hexdigit+ "}" ;
//! hexstring  = 'hex"' { hexdigit hexdigit | whitespace } '"' ;
//! ```
//!
//! Records and lists nest at most [`MAX_DEPTH`] deep.
//!
//! # How frames are written
//!
//! - A frame is a record named by its upper-case wire name: `PING{nonce=0x00000000deadbeef}`.
//!   Commands and input events are records too (`APPLY_INPUT{…}`, `PASTE{…}`); one without
//!   fields renders as `DETACH{}` and may be written `DETACH`.
//! - Field names are the Rust field names. Fields render in declaration order; an absent
//!   `Option` field is omitted, and on parse a missing optional field is `None`. A missing
//!   required field, an unknown field or a repeated field is an error naming it.
//! - Nested plain structs are anonymous records: `version={major=0 minor=8 patch=0}`.
//! - Enum values without data are lower-case words (`trust=untrusted`, `action=press`);
//!   variants with data are lower-case records (`result=spawn_failed{reason="…"}`,
//!   `event=title_changed{title="x"}`). A COMMAND_RESULT's value is written without the
//!   OK_WITH wrapper: `result=ok`, `result=error{code=… message="…"}`,
//!   `result=json{text="…"}`, `result=terminal_id{id=local:3}`.
//! - Open wire values render their known name, else the number: `key=KeyA` / `key=999`,
//!   `code=INVALID_COMMAND` / `code=0x0005` (error codes keep the spec's upper-case names),
//!   `reason=server_shutdown` / `reason=0x7f`, event types like `command_started` / `0x07`.
//!   Bit sets are names joined by `|`: `mods=shift|ctrl|0x8000`, `mods=none`.
//! - Terminal ids are `local:3` and `satellite:"host":3`.
//! - Integers render in decimal, except opaque values, which render as hex: operation and
//!   upload ids (`0x` + 32 digits), PING/PONG nonces (16 digits), unknown agent-event tags,
//!   detach reasons and event types (2 digits), unknown error codes (4 digits) and key
//!   `unshifted_codepoint`s. Any integer field accepts either form.
//! - Strings are quoted: printable ASCII as itself except `"` and `\`, the escapes above for
//!   everything else, `\u{…}` for non-ASCII characters, so rendered text is pure ASCII. Byte
//!   fields (output, paste data, ids) use the same quoting, invalid UTF-8 as `\xNN`, and
//!   render as `hex"…"` when fewer than three quarters of the bytes are text; on parse, a byte
//!   field accepts either form.
//! - Floats render as Rust's shortest round-trip form (`120.0`, `-0.0`, `1e-7`), NaN and
//!   infinities as their exact bits (`f64:0x7ff8000000000000`). The one `f32` (a layout
//!   split's ratio) carries an `f32` suffix: `0.5f32`, `f32:0x7fc00000`.
//! - Pairs (SPAWN_TERMINAL's `env`) are two-element lists: `env=[["TERM" "xterm"]]`.
//!
//! # Examples
//!
//! ```
//! use phux_proto::Frame;
//! use phux_proto::frame::Ping;
//!
//! let ping: Frame = "PING{nonce=0xdeadbeefcafef00d}".parse()?;
//! assert_eq!(ping, Frame::Ping(Ping { nonce: 0xdead_beef_cafe_f00d }));
//! assert_eq!(ping.to_string(), "PING{nonce=0xdeadbeefcafef00d}");
//!
//! let text = "COMMAND{request_id=7 command=APPLY_INPUT{\
//!     operation_id=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a terminal=local:3 \
//!     events=[PASTE{trust=trusted data=\"ls\\r\"}]}}";
//! let frame: Frame = text.parse()?;
//! assert_eq!(frame.to_string(), text);
//!
//! let err = "PING{nonce=1 extra=2}".parse::<Frame>().unwrap_err();
//! assert_eq!(err.to_string(), "PING: unknown field \"extra\" in PING");
//! # Ok::<(), phux_proto::notation::NotationError>(())
//! ```
//!
//! More, one per frame kind, in this module's tests.

mod convert;
mod error;
mod parse;
mod types;
mod value;

use std::fmt;
use std::str::FromStr;

pub use convert::{FromValue, ToValue};
pub use error::{NotationError, Path, PathSegment, SyntaxError, ValueError};
pub use value::{MAX_DEPTH, REST_FIELD, Value};

use crate::frame::Frame;

impl Frame {
    /// The frame as a notation value tree.
    pub fn to_value(&self) -> Value {
        ToValue::to_value(self)
    }

    /// The frame a value tree describes.
    pub fn from_value(value: &Value) -> Result<Self, NotationError> {
        FromValue::from_value(value)
    }
}

/// The frame in the notation (see the [module docs](self)).
impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_value(), f)
    }
}

/// Parses the notation (see the [module docs](self)).
impl FromStr for Frame {
    type Err = NotationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_value(&Value::parse(text)?)
    }
}

#[cfg(test)]
mod tests;
