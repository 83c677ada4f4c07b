//! Open wire values: a known name, or the number when phux 0.8 does not name it.

use crate::command::TerminalEventType;
use crate::error_code::ErrorCode;
use crate::frame::DetachReason;
use crate::notation::convert::{FromValue, ToValue, expected, unknown_variant};
use crate::notation::error::NotationError;
use crate::notation::value::Value;

// ---- Open wire enums -------------------------------------------------------------------

/// Known reasons as lower-case words (`server_shutdown`), others as `0x…`.
impl ToValue for DetachReason {
    fn to_value(&self) -> Value {
        open_name(self.name(), u128::from(self.0), 2)
    }
}

impl FromValue for DetachReason {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        open_from(value, "detach reason", |word| {
            Self::KNOWN
                .iter()
                .copied()
                .find(|k| lower(k.name()) == word)
        })
        .map(Self)
    }
}

impl ToValue for TerminalEventType {
    fn to_value(&self) -> Value {
        open_name(self.name(), u128::from(self.0), 2)
    }
}

impl FromValue for TerminalEventType {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        open_from(value, "terminal event type", |word| {
            Self::KNOWN
                .iter()
                .copied()
                .find(|k| lower(k.name()) == word)
        })
        .map(Self)
    }
}

/// Error codes keep the spec's upper-case names (`INVALID_COMMAND`); others are `0x…`.
impl ToValue for ErrorCode {
    fn to_value(&self) -> Value {
        match self.name() {
            Some(name) => Value::ident(name),
            None => Value::HexInt {
                value: u128::from(self.0),
                width: 4,
            },
        }
    }
}

impl FromValue for ErrorCode {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Ident(name) => {
                Self::from_name(name).ok_or_else(|| unknown_variant("error code", name))
            }
            Value::Int(_) | Value::HexInt { .. } => u16::from_value(value).map(Self),
            other => Err(expected("an error code name or number", other)),
        }
    }
}

fn lower(name: Option<&str>) -> String {
    name.map(str::to_ascii_lowercase).unwrap_or_default()
}

fn open_name(name: Option<&str>, raw: u128, width: u8) -> Value {
    match name {
        Some(name) => Value::ident(name.to_ascii_lowercase()),
        None => Value::HexInt { value: raw, width },
    }
}

/// A lower-case known name, or any number of the type's width.
fn open_from<T: OpenRaw>(
    value: &Value,
    what: &'static str,
    by_name: impl Fn(&str) -> Option<T>,
) -> Result<u8, NotationError> {
    match value {
        Value::Ident(word) => by_name(word)
            .map(OpenRaw::raw)
            .ok_or_else(|| unknown_variant(what, word)),
        Value::Int(_) | Value::HexInt { .. } => u8::from_value(value),
        other => Err(expected("a lower-case name or a number", other)),
    }
}

trait OpenRaw {
    fn raw(self) -> u8;
}

impl OpenRaw for DetachReason {
    fn raw(self) -> u8 {
        self.0
    }
}

impl OpenRaw for TerminalEventType {
    fn raw(self) -> u8 {
        self.0
    }
}
