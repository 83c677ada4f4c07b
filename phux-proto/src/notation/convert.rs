//! Typed conversion between [`Value`] trees and the crate's types: the traits, the record
//! helpers, and the impls for primitives, ids and wire enums.

use super::error::{NotationError, PathSegment, ValueError};
use super::value::Value;
use crate::ids::{BootstrapId, ClientId, GroupId, OperationId, StreamId, TerminalId};

/// Renders a typed value as a notation [`Value`].
pub trait ToValue {
    /// The value tree for `self`.
    fn to_value(&self) -> Value;
}

/// Builds a typed value from a notation [`Value`]; errors name the path to what is wrong.
pub trait FromValue: Sized {
    /// The typed value `value` describes.
    fn from_value(value: &Value) -> Result<Self, NotationError>;
}

/// A field-level conversion: how one field's type is written. [`V`] is the type's own
/// [`ToValue`]/[`FromValue`]; the others choose a rendering (hex, byte strings).
pub(crate) trait Conv<T> {
    fn to(value: &T) -> Value;
    fn from(value: &Value) -> Result<T, NotationError>;
}

/// The type's own conversion.
pub(crate) struct V;

impl<T: ToValue + FromValue> Conv<T> for V {
    fn to(value: &T) -> Value {
        value.to_value()
    }
    fn from(value: &Value) -> Result<T, NotationError> {
        T::from_value(value)
    }
}

/// An integer rendered as `0x` and at least `W` hex digits (opaque values: nonces, tags,
/// code points).
pub(crate) struct Hex<const W: u8>;

macro_rules! hex_conv {
    ($($t:ty),*) => {$(
        impl<const W: u8> Conv<$t> for Hex<W> {
            fn to(value: &$t) -> Value {
                Value::HexInt { value: u128::from(*value), width: W }
            }
            fn from(value: &Value) -> Result<$t, NotationError> {
                <$t>::from_value(value)
            }
        }
    )*};
}
hex_conv!(u8, u16, u32, u64);

/// A byte payload: a quoted string when it is mostly text, `hex"…"` otherwise.
pub(crate) struct Bytes;

impl Conv<Vec<u8>> for Bytes {
    fn to(value: &Vec<u8>) -> Value {
        bytes_value(value)
    }
    fn from(value: &Value) -> Result<Vec<u8>, NotationError> {
        bytes_from(value)
    }
}

/// A fixed-size byte array, always `hex"…"` (digests).
pub(crate) struct HexArray;

impl<const N: usize> Conv<[u8; N]> for HexArray {
    fn to(value: &[u8; N]) -> Value {
        Value::HexStr(value.to_vec())
    }
    fn from(value: &Value) -> Result<[u8; N], NotationError> {
        let bytes = bytes_from(value)?;
        let found = bytes.len();
        bytes
            .try_into()
            .map_err(|_| NotationError::value(ValueError::WrongLength { expected: N, found }))
    }
}

/// 16 opaque bytes as one 32-digit hex integer (an upload id, like an operation id).
pub(crate) struct Hex128;

impl Conv<[u8; 16]> for Hex128 {
    fn to(value: &[u8; 16]) -> Value {
        Value::HexInt {
            value: u128::from_be_bytes(*value),
            width: 32,
        }
    }
    fn from(value: &Value) -> Result<[u8; 16], NotationError> {
        Ok(u128::from_value(value)?.to_be_bytes())
    }
}

/// Whether a payload should render as `hex"…"`: when under three quarters of its bytes are
/// text (printable ASCII, tab, CR, LF, ESC, or part of a well-formed non-ASCII UTF-8
/// character). Terminal output with escape sequences stays readable; ids and binary stay
/// compact. A pure function of the bytes, so rendering is deterministic.
fn mostly_binary(bytes: &[u8]) -> bool {
    let mut text = 0usize;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !c.is_ascii() || matches!(c, ' '..='~' | '\t' | '\r' | '\n' | '\x1b') {
                text += c.len_utf8();
            }
        }
    }
    text * 4 < bytes.len() * 3
}

pub(crate) fn bytes_value(bytes: &[u8]) -> Value {
    if mostly_binary(bytes) {
        Value::HexStr(bytes.to_vec())
    } else {
        Value::Str(bytes.to_vec())
    }
}

pub(crate) fn bytes_from(value: &Value) -> Result<Vec<u8>, NotationError> {
    match value {
        Value::Str(bytes) | Value::HexStr(bytes) => Ok(bytes.clone()),
        other => Err(expected("a string or hex\"…\" bytes", other)),
    }
}

/// The error for a value of the wrong shape; a pattern gets its own message.
pub(crate) fn expected(what: &'static str, found: &Value) -> NotationError {
    match found {
        Value::Capture(_) | Value::Wildcard => NotationError::value(ValueError::Pattern {
            pattern: found.to_string(),
        }),
        _ => NotationError::value(ValueError::Expected {
            expected: what,
            found: found.describe(),
        }),
    }
}

pub(crate) fn out_of_range(what: &'static str, value: &Value) -> NotationError {
    NotationError::value(ValueError::OutOfRange {
        what,
        value: value.to_string(),
    })
}

/// Builds a record's fields in declaration order.
pub(crate) struct Rec {
    name: &'static str,
    fields: Vec<(String, Value)>,
}

impl Rec {
    pub(crate) fn new(name: &'static str) -> Self {
        Self {
            name,
            fields: Vec::new(),
        }
    }

    /// A required field.
    pub(crate) fn req<T: ToValue + FromValue>(self, field: &'static str, value: &T) -> Self {
        self.req_with::<T, V>(field, value)
    }

    pub(crate) fn req_with<T, C: Conv<T>>(mut self, field: &'static str, value: &T) -> Self {
        self.fields.push((field.to_owned(), C::to(value)));
        self
    }

    /// An optional field, omitted when `None`.
    pub(crate) fn opt<T: ToValue + FromValue>(
        self,
        field: &'static str,
        value: Option<&T>,
    ) -> Self {
        self.opt_with::<T, V>(field, value)
    }

    pub(crate) fn opt_with<T, C: Conv<T>>(
        mut self,
        field: &'static str,
        value: Option<&T>,
    ) -> Self {
        if let Some(value) = value {
            self.fields.push((field.to_owned(), C::to(value)));
        }
        self
    }

    pub(crate) fn fields(self) -> Vec<(String, Value)> {
        self.fields
    }

    pub(crate) fn build(self) -> Value {
        Value::Record {
            name: self.name.to_owned(),
            fields: self.fields,
        }
    }
}

/// Reads a record's fields by name, then checks nothing unknown was given.
pub(crate) struct Fields<'a> {
    record: &'a str,
    entries: &'a [(String, Value)],
    used: Vec<bool>,
}

impl<'a> Fields<'a> {
    /// Opens `value` as the record `name`; a bare `name` is the record with no fields.
    pub(crate) fn open(value: &'a Value, name: &'a str) -> Result<Self, NotationError> {
        let fields: &'a [(String, Value)] = match value {
            Value::Record {
                name: found,
                fields,
            } if found == name => fields,
            Value::Ident(found) if !name.is_empty() && found == name => &[],
            Value::Record { name: found, .. } | Value::Ident(found) => {
                return Err(NotationError::value(ValueError::WrongRecord {
                    expected: display_name(name),
                    found: display_name(found),
                }));
            }
            other => {
                return Err(expected(
                    if name.is_empty() {
                        "a {…} record"
                    } else {
                        "a record"
                    },
                    other,
                ));
            }
        };
        for (i, (field, _)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(earlier, _)| earlier == field) {
                return Err(NotationError::value(ValueError::DuplicateField {
                    record: display_name(name),
                    field: field.clone(),
                }));
            }
        }
        Ok(Self {
            record: name,
            entries: fields,
            used: vec![false; fields.len()],
        })
    }

    fn find(&mut self, field: &'static str) -> Option<&'a Value> {
        let index = self.entries.iter().position(|(name, _)| name == field)?;
        self.used[index] = true;
        Some(&self.entries[index].1)
    }

    /// A required field, by its type's own conversion.
    pub(crate) fn req<T: ToValue + FromValue>(
        &mut self,
        field: &'static str,
    ) -> Result<T, NotationError> {
        self.req_with::<T, V>(field)
    }

    pub(crate) fn req_with<T, C: Conv<T>>(
        &mut self,
        field: &'static str,
    ) -> Result<T, NotationError> {
        match self.find(field) {
            Some(value) => C::from(value).map_err(|e| e.within(PathSegment::Field(field))),
            None => Err(NotationError::value(ValueError::MissingField {
                record: display_name(self.record),
                field,
                near: self
                    .entries
                    .iter()
                    .map(|(name, _)| name)
                    .find(|name| one_edit_apart(name, field))
                    .cloned(),
            })),
        }
    }

    /// An optional field (`None` when absent).
    pub(crate) fn opt<T: ToValue + FromValue>(
        &mut self,
        field: &'static str,
    ) -> Result<Option<T>, NotationError> {
        self.opt_with::<T, V>(field)
    }

    pub(crate) fn opt_with<T, C: Conv<T>>(
        &mut self,
        field: &'static str,
    ) -> Result<Option<T>, NotationError> {
        self.find(field)
            .map(|value| C::from(value).map_err(|e| e.within(PathSegment::Field(field))))
            .transpose()
    }

    /// Fails on the first field nobody asked for.
    pub(crate) fn finish(self) -> Result<(), NotationError> {
        match self.used.iter().position(|used| !used) {
            Some(index) => Err(NotationError::value(ValueError::UnknownField {
                record: display_name(self.record),
                field: self.entries[index].0.clone(),
            })),
            None => Ok(()),
        }
    }
}

/// Whether `a` becomes `b` by one insertion, deletion or substitution (a likely typo).
fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    if long.len() - short.len() > 1 || a == b {
        return false;
    }
    let prefix = short
        .iter()
        .zip(long.iter())
        .take_while(|(x, y)| x == y)
        .count();
    let rest_short = &short[prefix..];
    // Substitution (same length) skips one on both sides; insertion one on the long side.
    let rest_long = &long[prefix + 1..];
    if short.len() == long.len() {
        rest_short.get(1..) == Some(rest_long)
    } else {
        rest_short == rest_long
    }
}

fn display_name(name: &str) -> String {
    if name.is_empty() {
        "{…}".to_owned()
    } else {
        name.to_owned()
    }
}

/// Runs a record's conversion, adding the record to any error's path (unless the record's
/// own name is what is unknown: then the path ends at its parent).
pub(crate) fn in_record<T>(
    name: &str,
    f: impl FnOnce() -> Result<T, NotationError>,
) -> Result<T, NotationError> {
    f().map_err(|e| match e.value_kind() {
        Some(ValueError::UnknownVariant { found, .. }) if found == name => e,
        _ => e.within(PathSegment::Record(name.to_owned())),
    })
}

/// The name of a record or bare word, for dispatch on variants.
pub(crate) fn variant_name<'a>(
    value: &'a Value,
    what: &'static str,
) -> Result<&'a str, NotationError> {
    match value {
        Value::Record { name, .. } | Value::Ident(name) if !name.is_empty() => Ok(name),
        other => Err(expected(what, other)),
    }
}

pub(crate) fn unknown_variant(what: &'static str, found: &str) -> NotationError {
    NotationError::value(ValueError::UnknownVariant {
        what,
        found: found.to_owned(),
    })
}

/// A plain struct as a record: `record!(Type = "NAME" { field, field: Conv, opt field, … })`.
/// Fields render in the order listed (declaration order); `opt` fields are `Option`s omitted
/// when `None`. Also generates `record_fields` / `from_record` so a struct can be flattened into
/// a record of another name (an input event's `KEY{…}`).
macro_rules! record {
    ($ty:ty = $name:literal { $($kind:ident $field:ident $(: $conv:ty)?),* $(,)? }) => {
        impl $ty {
            #[allow(dead_code)]
            pub(crate) fn record_fields(&self) -> Vec<(String, $crate::notation::Value)> {
                let rec = $crate::notation::convert::Rec::new($name);
                $(let rec = $crate::notation::convert::put_field!(
                    $kind, rec, $field, &self.$field, $($conv)?);)*
                rec.fields()
            }

            #[allow(dead_code)]
            pub(crate) fn from_record(
                value: &$crate::notation::Value,
                name: &str,
            ) -> Result<Self, $crate::notation::NotationError> {
                $crate::notation::convert::in_record(name, || {
                    let mut r = $crate::notation::convert::Fields::open(value, name)?;
                    let out = Self {
                        $($field: $crate::notation::convert::take_field!(
                            $kind, r, $field, $($conv)?),)*
                    };
                    r.finish()?;
                    Ok(out)
                })
            }
        }

        impl $crate::notation::ToValue for $ty {
            fn to_value(&self) -> $crate::notation::Value {
                $crate::notation::Value::record($name, self.record_fields())
            }
        }

        impl $crate::notation::FromValue for $ty {
            fn from_value(
                value: &$crate::notation::Value,
            ) -> Result<Self, $crate::notation::NotationError> {
                Self::from_record(value, $name)
            }
        }
    };
}

macro_rules! put_field {
    (req, $rec:expr, $field:ident, $value:expr, ) => {
        $rec.req(stringify!($field), $value)
    };
    (req, $rec:expr, $field:ident, $value:expr, $conv:ty) => {
        $rec.req_with::<_, $conv>(stringify!($field), $value)
    };
    (opt, $rec:expr, $field:ident, $value:expr, ) => {
        $rec.opt(stringify!($field), ($value).as_ref())
    };
    (opt, $rec:expr, $field:ident, $value:expr, $conv:ty) => {
        $rec.opt_with::<_, $conv>(stringify!($field), ($value).as_ref())
    };
}

macro_rules! take_field {
    (req, $r:ident, $field:ident, ) => {
        $r.req(stringify!($field))?
    };
    (req, $r:ident, $field:ident, $conv:ty) => {
        $r.req_with::<_, $conv>(stringify!($field))?
    };
    (opt, $r:ident, $field:ident, ) => {
        $r.opt(stringify!($field))?
    };
    (opt, $r:ident, $field:ident, $conv:ty) => {
        $r.opt_with::<_, $conv>(stringify!($field))?
    };
}

/// A closed enum without data as lower-case words: `names!(Type, "what" { Variant = "word" })`.
macro_rules! names {
    ($ty:ty, $what:literal { $($variant:ident = $word:literal),* $(,)? }) => {
        impl $crate::notation::ToValue for $ty {
            fn to_value(&self) -> $crate::notation::Value {
                $crate::notation::Value::ident(match self {
                    $(Self::$variant => $word,)*
                })
            }
        }

        impl $crate::notation::FromValue for $ty {
            fn from_value(
                value: &$crate::notation::Value,
            ) -> Result<Self, $crate::notation::NotationError> {
                match value {
                    $($crate::notation::Value::Ident(word) if word == $word => Ok(Self::$variant),)*
                    $crate::notation::Value::Ident(word) => {
                        Err($crate::notation::convert::unknown_variant($what, word))
                    }
                    other => Err($crate::notation::convert::expected(
                        concat!("a ", $what, " (", $($word, " ",)* ")"),
                        other,
                    )),
                }
            }
        }
    };
}

/// A masked or open bit set as `a|b|0x…` via its `names()` / `from_names()`.
macro_rules! flags {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::notation::ToValue for $ty {
            fn to_value(&self) -> $crate::notation::Value {
                $crate::notation::convert::flags_value(&self.names())
            }
        }

        impl $crate::notation::FromValue for $ty {
            fn from_value(
                value: &$crate::notation::Value,
            ) -> Result<Self, $crate::notation::NotationError> {
                let text = $crate::notation::convert::flags_text(value)?;
                Self::from_names(&text).ok_or_else(|| {
                    $crate::notation::convert::unknown_variant(
                        concat!(stringify!($ty), " flags"),
                        &text,
                    )
                })
            }
        }
    )*};
}

pub(crate) use {flags, names, put_field, record, take_field};

/// `names()` text (`shift|ctrl|0x8000`, `none`) as a value: idents and hex parts.
pub(crate) fn flags_value(names: &str) -> Value {
    let mut parts: Vec<Value> = names
        .split('|')
        .map(|part| match part.strip_prefix("0x") {
            Some(hex) => Value::HexInt {
                value: u128::from_str_radix(hex, 16).unwrap_or(0),
                width: hex.len() as u8,
            },
            None => Value::ident(part),
        })
        .collect();
    if parts.len() == 1 {
        parts.remove(0)
    } else {
        Value::Union(parts)
    }
}

/// A flags value back to `names()` text, for `from_names()`.
pub(crate) fn flags_text(value: &Value) -> Result<String, NotationError> {
    let part = |v: &Value| match v {
        Value::Ident(name) => Ok(name.clone()),
        Value::Int(n) if *n >= 0 => Ok(format!("0x{n:x}")),
        Value::HexInt { value, .. } => Ok(format!("0x{value:x}")),
        other => Err(expected("flag names joined by | (or none)", other)),
    };
    match value {
        Value::Union(parts) => Ok(parts
            .iter()
            .map(part)
            .collect::<Result<Vec<_>, _>>()?
            .join("|")),
        other => part(other),
    }
}

macro_rules! int_impls {
    ($($t:ty),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                Value::Int(i128::from(*self))
            }
        }

        impl FromValue for $t {
            fn from_value(value: &Value) -> Result<Self, NotationError> {
                let wide: Option<i128> = match value {
                    Value::Int(v) => Some(*v),
                    Value::HexInt { value, .. } => i128::try_from(*value).ok(),
                    other => return Err(expected(concat!("an integer (", stringify!($t), ")"), other)),
                };
                wide.and_then(|v| <$t>::try_from(v).ok())
                    .ok_or_else(|| out_of_range(stringify!($t), value))
            }
        }
    )*};
}
int_impls!(u8, u16, u32, u64, i32, i64);

impl FromValue for u128 {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Int(v) => Self::try_from(*v).map_err(|_| out_of_range("u128", value)),
            Value::HexInt { value, .. } => Ok(*value),
            other => Err(expected("an integer", other)),
        }
    }
}

impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::ident(if *self { "true" } else { "false" })
    }
}

impl FromValue for bool {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Ident(word) if word == "true" => Ok(true),
            Value::Ident(word) if word == "false" => Ok(false),
            other => Err(expected("true or false", other)),
        }
    }
}

impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Str(self.as_bytes().to_vec())
    }
}

impl FromValue for String {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Str(bytes) | Value::HexStr(bytes) => Self::from_utf8(bytes.clone())
                .map_err(|_| NotationError::value(ValueError::InvalidUtf8)),
            other => Err(expected("a string", other)),
        }
    }
}

impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Float(self.to_bits())
    }
}

/// Largest integer magnitude every f64 holds exactly (2^53).
const F64_EXACT_INT: i128 = 1 << 53;

impl FromValue for f64 {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Float(bits) => Ok(Self::from_bits(*bits)),
            // An integer is a convenience for people writing `x=120`; only exact ones.
            #[allow(clippy::cast_precision_loss)] // bounded to 2^53 just above: exact
            Value::Int(v) if v.abs() <= F64_EXACT_INT => Ok(*v as Self),
            Value::Int(_) => Err(out_of_range("an exact f64", value)),
            other => Err(expected("a float (120.0, -0.0, f64:0x…)", other)),
        }
    }
}

impl ToValue for f32 {
    fn to_value(&self) -> Value {
        Value::Float32(self.to_bits())
    }
}

impl FromValue for f32 {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Float32(bits) => Ok(Self::from_bits(*bits)),
            // Only an f64 that is exactly an f32 value: no silent second rounding.
            Value::Float(bits) => {
                let wide = f64::from_bits(*bits);
                let narrow = wide as Self;
                if f64::from(narrow).to_bits() == wide.to_bits() {
                    Ok(narrow)
                } else {
                    Err(out_of_range("an exact f32 (write 0.1f32)", value))
                }
            }
            other => Err(expected("an f32 float (0.5f32, f32:0x…)", other)),
        }
    }
}

impl<T: ToValue> ToValue for Vec<T> {
    fn to_value(&self) -> Value {
        Value::List(self.iter().map(ToValue::to_value).collect())
    }
}

impl<T: FromValue> FromValue for Vec<T> {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::List(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| T::from_value(item).map_err(|e| e.within(PathSegment::Index(i))))
                .collect(),
            other => Err(expected("a list [ … ]", other)),
        }
    }
}

/// A pair is a two-element list: `["KEY" "value"]`.
impl<A: ToValue, B: ToValue> ToValue for (A, B) {
    fn to_value(&self) -> Value {
        Value::List(vec![self.0.to_value(), self.1.to_value()])
    }
}

impl<A: FromValue, B: FromValue> FromValue for (A, B) {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::List(items) => match items.as_slice() {
                [a, b] => Ok((
                    A::from_value(a).map_err(|e| e.within(PathSegment::Index(0)))?,
                    B::from_value(b).map_err(|e| e.within(PathSegment::Index(1)))?,
                )),
                _ => Err(NotationError::value(ValueError::WrongLength {
                    expected: 2,
                    found: items.len(),
                })),
            },
            other => Err(expected("a pair [a b]", other)),
        }
    }
}

impl<T: ToValue> ToValue for Box<T> {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}

impl<T: FromValue> FromValue for Box<T> {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        T::from_value(value).map(Self::new)
    }
}

impl ToValue for TerminalId {
    fn to_value(&self) -> Value {
        Value::TerminalId(self.clone())
    }
}

impl FromValue for TerminalId {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::TerminalId(id) => Ok(id.clone()),
            other => Err(expected(
                "a terminal id (local:3, satellite:\"host\":3)",
                other,
            )),
        }
    }
}

/// Operation ids are opaque: `0x` and all 32 hex digits.
impl ToValue for OperationId {
    fn to_value(&self) -> Value {
        Value::HexInt {
            value: self.as_u128(),
            width: 32,
        }
    }
}

impl FromValue for OperationId {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        Self::from_u128(u128::from_value(value)?)
            .ok_or_else(|| out_of_range("an operation id (never zero)", value))
    }
}

macro_rules! u32_newtype {
    ($($t:ident),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                self.0.to_value()
            }
        }

        impl FromValue for $t {
            fn from_value(value: &Value) -> Result<Self, NotationError> {
                u32::from_value(value).map(Self)
            }
        }
    )*};
}
u32_newtype!(ClientId, GroupId);

macro_rules! nonzero_u64 {
    ($($t:ident),*) => {$(
        impl ToValue for $t {
            fn to_value(&self) -> Value {
                self.get().to_value()
            }
        }

        impl FromValue for $t {
            fn from_value(value: &Value) -> Result<Self, NotationError> {
                Self::new(u64::from_value(value)?)
                    .ok_or_else(|| out_of_range(concat!("a ", stringify!($t), " (never zero)"), value))
            }
        }
    )*};
}
nonzero_u64!(StreamId, BootstrapId);
