//! Why notation text did not parse, or a parsed value did not convert to a frame.

use std::fmt;

/// A notation failure: either the text is not well-formed (with its line and column), or the
/// value tree does not describe a frame (with the path to the offending value).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotationError {
    /// The text is not a well-formed value.
    #[error("line {line}, column {column}: {kind}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong.
        kind: SyntaxError,
    },
    /// The value is well-formed but is not the typed value expected at `path`.
    #[error("{path}: {kind}")]
    Value {
        /// Where in the tree, e.g. `COMMAND.command.APPLY_INPUT.events[0]`.
        path: Path,
        /// What is wrong.
        kind: ValueError,
    },
}

/// What is wrong with the text.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyntaxError {
    /// A character that cannot start or continue what came before.
    #[error("unexpected character {found:?}, expected {expected}")]
    Unexpected {
        /// The character found.
        found: char,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// The text ended inside a value.
    #[error("unexpected end of input, expected {expected}")]
    UnexpectedEnd {
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A string without its closing quote.
    #[error("unterminated string")]
    UnterminatedString,
    /// A backslash escape that is not one of `\n \r \t \e \\ \" \xNN \u{…}`.
    #[error("bad escape `{found}` (allowed: \\n \\r \\t \\e \\\\ \\\" \\xNN \\u{{…}})")]
    BadEscape {
        /// The escape as written.
        found: String,
    },
    /// A `hex"…"` string with a non-hex character or an odd number of digits.
    #[error("bad hex string: {why}")]
    BadHexString {
        /// What is wrong.
        why: &'static str,
    },
    /// A number that does not parse, or does not fit.
    #[error("bad number {text:?}: {why}")]
    BadNumber {
        /// The number as written.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// `word:` before something other than `local:`, `satellite:`, `f64:` or `f32:`.
    #[error("unknown prefix {prefix:?} (known: local:, satellite:, f64:, f32:)")]
    UnknownPrefix {
        /// The word before the colon.
        prefix: String,
    },
    /// A satellite host name that is not UTF-8.
    #[error("host name is not valid UTF-8")]
    HostNotUtf8,
    /// `$` without a name.
    #[error("`$` must be followed by a capture name")]
    EmptyCapture,
    /// Records and lists nested deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    #[error("nested deeper than {limit} levels")]
    TooDeep {
        /// The bound.
        limit: usize,
    },
    /// Text after a complete value.
    #[error("unexpected {found:?} after the value")]
    Trailing {
        /// The first character after the value.
        found: char,
    },
}

/// What is wrong with a well-formed value.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A record name that is not a frame type we speak.
    #[error("unknown frame {name:?}")]
    UnknownFrame {
        /// The name found.
        name: String,
    },
    /// A name that is not one of the variants (commands, enum values, ...) allowed here.
    #[error("unknown {what} {found:?}")]
    UnknownVariant {
        /// What kind of value was expected (`command`, `key action`, ...).
        what: &'static str,
        /// The name found.
        found: String,
    },
    /// A record of the wrong name.
    #[error("expected a {expected} record, found {found:?}")]
    WrongRecord {
        /// The record expected (`{…}` for an anonymous one).
        expected: String,
        /// The record found.
        found: String,
    },
    /// A field the record does not have.
    #[error("unknown field {field:?} in {record}")]
    UnknownField {
        /// The record.
        record: String,
        /// The field.
        field: String,
    },
    /// A required field that is absent.
    #[error("missing required field {field:?} in {record}{}", misspelling_hint(near.as_deref()))]
    MissingField {
        /// The record.
        record: String,
        /// The field.
        field: &'static str,
        /// A field given in its place whose name is one edit from it (`nonc` for `nonce`),
        /// named so that a typo is not reported as an absence alone.
        near: Option<String>,
    },
    /// A field given twice.
    #[error("field {field:?} given twice in {record}")]
    DuplicateField {
        /// The record.
        record: String,
        /// The field.
        field: String,
    },
    /// A value of the wrong shape (a string where a number belongs, ...).
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What belongs here.
        expected: &'static str,
        /// A short description of what is there.
        found: String,
    },
    /// A number outside its type's range, or a value the type forbids (a zero id, ...).
    #[error("{value} is out of range for {what}")]
    OutOfRange {
        /// The type or rule.
        what: &'static str,
        /// The value as written.
        value: String,
    },
    /// Bytes that must be UTF-8 are not.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A list of the wrong length (pairs, fixed-size byte arrays).
    #[error("expected {expected} elements, found {found}")]
    WrongLength {
        /// Elements expected.
        expected: usize,
        /// Elements found.
        found: usize,
    },
    /// A `$capture` or `*` wildcard where a concrete value is needed.
    #[error("pattern {pattern} is not a concrete value")]
    Pattern {
        /// The pattern as written.
        pattern: String,
    },
}

/// The path from the root of a value tree to a nested value: record names, field names and
/// list indexes.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Path(Vec<PathSegment>);

/// One step of a [`Path`].
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum PathSegment {
    /// Into a record of this name.
    Record(String),
    /// Into a field.
    Field(&'static str),
    /// Into a list element.
    Index(usize),
}

impl Path {
    /// The segments, outermost first.
    pub fn segments(&self) -> &[PathSegment] {
        &self.0
    }
}

/// `COMMAND.command.APPLY_INPUT.events[0]`; `(root)` when empty.
impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        for segment in &self.0 {
            let name: &str = match segment {
                PathSegment::Index(index) => {
                    write!(f, "[{index}]")?;
                    wrote = true;
                    continue;
                }
                PathSegment::Record(name) => name,
                PathSegment::Field(name) => name,
            };
            // Anonymous records (`{…}`) add nothing: their field names say enough.
            if name.is_empty() {
                continue;
            }
            if wrote {
                f.write_str(".")?;
            }
            f.write_str(name)?;
            wrote = true;
        }
        if !wrote {
            f.write_str("(root)")?;
        }
        Ok(())
    }
}

impl NotationError {
    /// A value error at the root; callers on the way out add the path.
    pub(crate) fn value(kind: ValueError) -> Self {
        Self::Value {
            path: Path::default(),
            kind,
        }
    }

    /// Prefixes a value error's path with `segment` (errors bubble outwards, so segments are
    /// added innermost first).
    pub(crate) fn within(mut self, segment: PathSegment) -> Self {
        if let Self::Value { path, .. } = &mut self {
            path.0.insert(0, segment);
        }
        self
    }

    /// The value error's kind, if this is one.
    pub fn value_kind(&self) -> Option<&ValueError> {
        match self {
            Self::Value { kind, .. } => Some(kind),
            Self::Syntax { .. } => None,
        }
    }

    /// The syntax error's kind, if this is one.
    pub fn syntax_kind(&self) -> Option<&SyntaxError> {
        match self {
            Self::Syntax { kind, .. } => Some(kind),
            Self::Value { .. } => None,
        }
    }
}

fn misspelling_hint(near: Option<&str>) -> String {
    near.map(|n| format!(" (is the field {n:?} given instead a misspelling of it?)"))
        .unwrap_or_default()
}
