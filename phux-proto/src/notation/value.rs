//! The generic value tree the notation parses to and renders from.

use std::fmt::{self, Write as _};

use crate::ids::TerminalId;

/// The deepest nesting of records and lists the parser accepts: far beyond any frame (the
/// deepest is a 64-level window layout, two levels per split), and shallow enough that the
/// recursive parser and converter cannot exhaust the stack.
pub const MAX_DEPTH: usize = 192;

/// The field name a record's rest marker (`..`) parses to: in a pattern, "the actual record
/// may have further fields, with any values". No frame has a field of this name, so typed
/// conversion rejects it as an unknown field.
pub const REST_FIELD: &str = "..";

/// One notation value. Frames convert to and from this tree; the conformance runner matches
/// it against patterns (`$name` captures, `*` wildcards) before any typed conversion.
///
/// Equality is structural and exact: `Int(5)` and `HexInt { value: 5, .. }` differ, as do
/// `Str` and `HexStr` with the same bytes, because they render differently. Typed conversion
/// accepts either spelling.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Value {
    /// `NAME{field=value …}`; an anonymous record (a nested plain struct) has an empty name
    /// and renders as `{field=value …}`.
    Record {
        /// The record's name (upper-case wire name, lower-case enum variant, or empty).
        name: String,
        /// The fields, in order.
        fields: Vec<(String, Self)>,
    },
    /// A bare word: an enum value (`press`, `KeyA`, `INVALID_COMMAND`), `true`, `false`.
    Ident(String),
    /// A decimal integer (`7`, `-1`).
    Int(i128),
    /// A hexadecimal integer, rendered `0x` + at least `width` lowercase digits.
    HexInt {
        /// The value.
        value: u128,
        /// The minimum number of digits (zero-padded).
        width: u8,
    },
    /// An `f64`, by its exact bits: `120.0`, `-0.0`, `f64:0x7ff8000000000000`.
    Float(u64),
    /// An `f32`, by its exact bits: `0.5f32`, `f32:0x7fc00000`.
    Float32(u32),
    /// A quoted string: `"ls\r"`. Holds bytes, so non-UTF-8 data is representable.
    Str(Vec<u8>),
    /// A hex byte string: `hex"deadbeef"`.
    HexStr(Vec<u8>),
    /// `[a b c]`.
    List(Vec<Self>),
    /// `a|b|c`: a set of flags (`shift|ctrl|0x8000`).
    Union(Vec<Self>),
    /// `local:3` or `satellite:"host":3`.
    TerminalId(TerminalId),
    /// `$name`: a pattern capture (the conformance runner's; never a concrete value).
    Capture(String),
    /// `*`: a pattern wildcard (the conformance runner's; never a concrete value).
    Wildcard,
}

impl Value {
    /// A record with a name and fields.
    pub fn record(name: impl Into<String>, fields: Vec<(String, Self)>) -> Self {
        Self::Record {
            name: name.into(),
            fields,
        }
    }

    /// A bare word.
    pub fn ident(name: impl Into<String>) -> Self {
        Self::Ident(name.into())
    }

    /// A short description of the value's shape, for error messages.
    pub fn describe(&self) -> String {
        match self {
            Self::Record { name, .. } if name.is_empty() => "a {…} record".to_owned(),
            Self::Record { name, .. } => format!("record {name}{{…}}"),
            Self::Ident(name) => format!("`{name}`"),
            Self::Int(v) => format!("integer {v}"),
            Self::HexInt { .. } => format!("integer {self}"),
            Self::Float(_) | Self::Float32(_) => format!("float {self}"),
            Self::Str(_) => "a string".to_owned(),
            Self::HexStr(_) => "a hex string".to_owned(),
            Self::List(_) => "a list".to_owned(),
            Self::Union(_) => format!("flags {self}"),
            Self::TerminalId(id) => format!("terminal id {}", Self::TerminalId(id.clone())),
            Self::Capture(name) => format!("capture ${name}"),
            Self::Wildcard => "wildcard *".to_owned(),
        }
    }
}

/// The canonical text: single spaces between fields and list elements, no spaces around `=`
/// or `|`. [`Value::parse`] reads it back to an equal value.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Record { name, fields } => {
                write!(f, "{name}{{")?;
                for (i, (field, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_char(' ')?;
                    }
                    if field == REST_FIELD {
                        f.write_str(REST_FIELD)?;
                    } else {
                        write!(f, "{field}={value}")?;
                    }
                }
                f.write_char('}')
            }
            Self::Ident(name) => f.write_str(name),
            Self::Int(v) => write!(f, "{v}"),
            Self::HexInt { value, width } => {
                write!(f, "0x{value:0width$x}", width = *width as usize)
            }
            Self::Float(bits) => {
                let v = f64::from_bits(*bits);
                if v.is_finite() {
                    // Debug is Rust's shortest representation that parses back to the same
                    // bits, and always has a `.` or an exponent, so it never reads as an Int.
                    write!(f, "{v:?}")
                } else {
                    write!(f, "f64:0x{bits:016x}")
                }
            }
            Self::Float32(bits) => {
                let v = f32::from_bits(*bits);
                if v.is_finite() {
                    write!(f, "{v:?}f32")
                } else {
                    write!(f, "f32:0x{bits:08x}")
                }
            }
            Self::Str(bytes) => write_quoted(f, bytes),
            Self::HexStr(bytes) => {
                f.write_str("hex\"")?;
                for b in bytes {
                    write!(f, "{b:02x}")?;
                }
                f.write_char('"')
            }
            Self::List(items) => {
                f.write_char('[')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_char(' ')?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_char(']')
            }
            Self::Union(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_char('|')?;
                    }
                    write!(f, "{part}")?;
                }
                Ok(())
            }
            Self::TerminalId(TerminalId::Local(id)) => write!(f, "local:{id}"),
            Self::TerminalId(TerminalId::Satellite { host, id }) => {
                f.write_str("satellite:")?;
                write_quoted(f, host.as_bytes())?;
                write!(f, ":{id}")
            }
            Self::Capture(name) => write!(f, "${name}"),
            Self::Wildcard => f.write_char('*'),
        }
    }
}

/// Writes `bytes` as a quoted string: printable ASCII as itself (but `"` and `\` escaped),
/// `\n \r \t \e` for those controls, `\u{…}` for each well-formed non-ASCII UTF-8 character,
/// `\xNN` for every other byte. The output is pure ASCII, so a log or terminal showing it
/// cannot be steered by what the peer sent; parsing it gives back exactly `bytes`.
fn write_quoted(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_char('"')?;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                '\x1b' => f.write_str("\\e")?,
                ' '..='~' => f.write_char(c)?,
                c if c.is_ascii() => write!(f, "\\x{:02x}", c as u32)?,
                c => write!(f, "\\u{{{:x}}}", c as u32)?,
            }
        }
        for b in chunk.invalid() {
            write!(f, "\\x{b:02x}")?;
        }
    }
    f.write_char('"')
}
