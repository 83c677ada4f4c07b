//! The notation parser: text to a [`Value`] tree, with line and column on every error.

use super::error::{NotationError, SyntaxError};
use super::value::{MAX_DEPTH, REST_FIELD, Value};
use crate::ids::TerminalId;

impl Value {
    /// Parses exactly one value (surrounding whitespace allowed).
    pub fn parse(text: &str) -> Result<Self, NotationError> {
        let mut parser = Parser { text, pos: 0 };
        parser.skip_ws();
        let value = parser.value(0)?;
        parser.skip_ws();
        match parser.peek() {
            None => Ok(value),
            Some(found) => Err(parser.error(SyntaxError::Trailing { found })),
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next character.
    pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    /// Skips whitespace and commas (the field and element separators); whether any was seen.
    fn skip_separators(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_whitespace() || c == ',') {
            self.bump();
        }
        self.pos != start
    }

    fn error(&self, kind: SyntaxError) -> NotationError {
        self.error_at(self.pos, kind)
    }

    fn error_at(&self, pos: usize, kind: SyntaxError) -> NotationError {
        let before = &self.text[..pos];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        NotationError::Syntax { line, column, kind }
    }

    fn unexpected(&self, expected: &'static str) -> NotationError {
        match self.peek() {
            Some(found) => self.error(SyntaxError::Unexpected { found, expected }),
            None => self.error(SyntaxError::UnexpectedEnd { expected }),
        }
    }

    fn ident(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_ident_char) {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    /// `primary { "|" primary }`.
    fn value(&mut self, depth: usize) -> Result<Value, NotationError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(SyntaxError::TooDeep { limit: MAX_DEPTH }));
        }
        let first = self.primary(depth)?;
        let save = self.pos;
        self.skip_ws();
        if self.peek() != Some('|') {
            self.pos = save;
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.eat('|') {
            self.skip_ws();
            parts.push(self.primary(depth)?);
            let save = self.pos;
            self.skip_ws();
            if self.peek() != Some('|') {
                self.pos = save;
            }
        }
        Ok(Value::Union(parts))
    }

    fn primary(&mut self, depth: usize) -> Result<Value, NotationError> {
        const EXPECTED: &str = "a value";
        match self.peek() {
            Some('{') => self.record(String::new(), depth),
            Some('[') => self.list(depth),
            Some('"') => Ok(Value::Str(self.quoted()?)),
            Some('*') => {
                self.bump();
                Ok(Value::Wildcard)
            }
            Some('$') => {
                self.bump();
                let name = self.ident();
                if name.is_empty() {
                    return Err(self.error(SyntaxError::EmptyCapture));
                }
                Ok(Value::Capture(name.to_owned()))
            }
            Some(c) if c.is_ascii_digit() || c == '-' => self.number(),
            Some(c) if is_ident_start(c) => self.word(depth),
            _ => Err(self.unexpected(EXPECTED)),
        }
    }

    /// An identifier, and what may follow it: `{` (a record), `"` (after `hex`) or `:` (a
    /// prefixed value).
    fn word(&mut self, depth: usize) -> Result<Value, NotationError> {
        let start = self.pos;
        let name = self.ident().to_owned();
        if name == "hex" && self.peek() == Some('"') {
            return self.hex_string();
        }
        if self.eat(':') {
            return self.prefixed(start, &name);
        }
        let save = self.pos;
        self.skip_ws();
        if self.peek() == Some('{') {
            return self.record(name, depth);
        }
        self.pos = save;
        Ok(Value::Ident(name))
    }

    fn prefixed(&mut self, start: usize, prefix: &str) -> Result<Value, NotationError> {
        match prefix {
            "local" => Ok(Value::TerminalId(TerminalId::Local(self.u32()?))),
            "satellite" => {
                if self.peek() != Some('"') {
                    return Err(self.unexpected("a quoted host name"));
                }
                let host_pos = self.pos;
                let host = String::from_utf8(self.quoted()?)
                    .map_err(|_| self.error_at(host_pos, SyntaxError::HostNotUtf8))?;
                if !self.eat(':') {
                    return Err(self.unexpected("`:` and the terminal's id"));
                }
                Ok(Value::TerminalId(TerminalId::Satellite {
                    host,
                    id: self.u32()?,
                }))
            }
            "f64" => {
                let (bits, text) = self.hex_bits()?;
                let bits = u64::try_from(bits).map_err(|_| {
                    self.error(SyntaxError::BadNumber {
                        text,
                        why: "more than 64 bits",
                    })
                })?;
                Ok(Value::Float(bits))
            }
            "f32" => {
                let (bits, text) = self.hex_bits()?;
                let bits = u32::try_from(bits).map_err(|_| {
                    self.error(SyntaxError::BadNumber {
                        text,
                        why: "more than 32 bits",
                    })
                })?;
                Ok(Value::Float32(bits))
            }
            _ => Err(self.error_at(
                start,
                SyntaxError::UnknownPrefix {
                    prefix: prefix.to_owned(),
                },
            )),
        }
    }

    /// The `0x…` after `f64:` / `f32:`.
    fn hex_bits(&mut self) -> Result<(u128, String), NotationError> {
        let start = self.pos;
        match self.number()? {
            Value::HexInt { value, .. } => Ok((value, self.text[start..self.pos].to_owned())),
            _ => Err(self.error_at(
                start,
                SyntaxError::BadNumber {
                    text: self.text[start..self.pos].to_owned(),
                    why: "float bits are written in hex, e.g. f64:0x7ff8000000000000",
                },
            )),
        }
    }

    fn u32(&mut self) -> Result<u32, NotationError> {
        let start = self.pos;
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.unexpected("a terminal id number"));
        }
        let value = match self.number()? {
            Value::Int(v) => u32::try_from(v).ok(),
            Value::HexInt { value, .. } => u32::try_from(value).ok(),
            _ => None,
        };
        value.ok_or_else(|| {
            self.error_at(
                start,
                SyntaxError::BadNumber {
                    text: self.text[start..self.pos].to_owned(),
                    why: "a terminal id is an integer 0..=4294967295",
                },
            )
        })
    }

    /// `0x…` (HexInt), `-?digits` (Int), or a decimal float (`1.5`, `1e16`, `-0.0`, with an
    /// optional `f32` suffix).
    fn number(&mut self) -> Result<Value, NotationError> {
        let start = self.pos;
        let rest = &self.text[start..];
        if let Some(hex) = rest.strip_prefix("0x") {
            let digits = hex.chars().take_while(char::is_ascii_hexdigit).count();
            self.pos += 2 + digits;
            let text = &self.text[start..self.pos];
            let bad = |why| {
                self.error_at(
                    start,
                    SyntaxError::BadNumber {
                        text: text.to_owned(),
                        why,
                    },
                )
            };
            if digits == 0 {
                return Err(bad("no hex digits after 0x"));
            }
            let value =
                u128::from_str_radix(&hex[..digits], 16).map_err(|_| bad("more than 128 bits"))?;
            // A width beyond what any value needs is padding nobody renders; cap it so the
            // width always fits its byte.
            let width = digits.min(usize::from(u8::MAX)) as u8;
            return self.end_of_number(Value::HexInt { value, width });
        }
        self.eat('-');
        let mut is_float = false;
        self.digits();
        if self.peek() == Some('.') {
            is_float = true;
            self.bump();
            self.digits();
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            is_float = true;
            self.bump();
            if !self.eat('-') {
                self.eat('+');
            }
            self.digits();
        }
        let end = self.pos;
        let text = &self.text[start..end];
        if !text.bytes().any(|b| b.is_ascii_digit()) {
            return Err(self.bad_number(start, end, "no digits"));
        }
        if self.text[end..].starts_with("f32") {
            self.pos += 3;
            let v: f32 = text
                .parse()
                .map_err(|_| self.bad_number(start, end, "not a decimal float"))?;
            return self.end_of_number(Value::Float32(v.to_bits()));
        }
        let value = if is_float {
            let v: f64 = text
                .parse()
                .map_err(|_| self.bad_number(start, end, "not a decimal float"))?;
            Value::Float(v.to_bits())
        } else {
            Value::Int(
                text.parse()
                    .map_err(|_| self.bad_number(start, end, "out of range"))?,
            )
        };
        self.end_of_number(value)
    }

    fn bad_number(&self, start: usize, end: usize, why: &'static str) -> NotationError {
        self.error_at(
            start,
            SyntaxError::BadNumber {
                text: self.text[start..end].to_owned(),
                why,
            },
        )
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
    }

    /// A number directly followed by a letter (`12ab`) is a typo, not two tokens.
    fn end_of_number(&self, value: Value) -> Result<Value, NotationError> {
        match self.peek() {
            Some(c) if is_ident_char(c) || c == '.' => Err(self.error(SyntaxError::Unexpected {
                found: c,
                expected: "a separator after the number",
            })),
            _ => Ok(value),
        }
    }

    /// `"…"` with escapes; the opening quote is next.
    fn quoted(&mut self) -> Result<Vec<u8>, NotationError> {
        let open = self.pos;
        self.bump();
        let mut out = Vec::new();
        loop {
            let escape_at = self.pos;
            match self.bump() {
                None => return Err(self.error_at(open, SyntaxError::UnterminatedString)),
                Some('"') => return Ok(out),
                Some('\\') => self.escape(escape_at, &mut out)?,
                Some(c) => {
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }

    fn escape(&mut self, at: usize, out: &mut Vec<u8>) -> Result<(), NotationError> {
        let bad = |p: &Self| {
            let end = p.pos.min(p.text.len());
            p.error_at(
                at,
                SyntaxError::BadEscape {
                    found: p.text[at..end].to_owned(),
                },
            )
        };
        match self.bump() {
            None => Err(self.error_at(at, SyntaxError::UnterminatedString)),
            Some('n') => {
                out.push(b'\n');
                Ok(())
            }
            Some('r') => {
                out.push(b'\r');
                Ok(())
            }
            Some('t') => {
                out.push(b'\t');
                Ok(())
            }
            Some('e') => {
                out.push(0x1b);
                Ok(())
            }
            Some('\\') => {
                out.push(b'\\');
                Ok(())
            }
            Some('"') => {
                out.push(b'"');
                Ok(())
            }
            Some('x') => {
                let hex = self.text[self.pos..]
                    .get(..2)
                    .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                let Some(hex) = hex else {
                    // Show the escape and what follows it, up to two characters.
                    for _ in 0..2 {
                        if self.peek().is_some_and(|c| c != '"') {
                            self.bump();
                        }
                    }
                    return Err(bad(self));
                };
                let byte = u8::from_str_radix(hex, 16).map_err(|_| bad(self))?;
                self.pos += 2;
                out.push(byte);
                Ok(())
            }
            Some('u') => {
                if !self.eat('{') {
                    return Err(bad(self));
                }
                let digits_start = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                    self.bump();
                }
                let digits = &self.text[digits_start..self.pos];
                if !self.eat('}') || digits.is_empty() || digits.len() > 6 {
                    return Err(bad(self));
                }
                let c = u32::from_str_radix(digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| bad(self))?;
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                Ok(())
            }
            Some(_) => Err(bad(self)),
        }
    }

    /// `hex"…"` after the `hex`: pairs of hex digits, whitespace between them allowed.
    fn hex_string(&mut self) -> Result<Value, NotationError> {
        let open = self.pos;
        self.bump();
        let mut out = Vec::new();
        let mut high: Option<u8> = None;
        loop {
            let at = self.pos;
            match self.bump() {
                None => return Err(self.error_at(open, SyntaxError::UnterminatedString)),
                Some('"') if high.is_none() => return Ok(Value::HexStr(out)),
                Some('"') => {
                    return Err(self.error_at(
                        at,
                        SyntaxError::BadHexString {
                            why: "odd number of hex digits",
                        },
                    ));
                }
                Some(c) if c.is_whitespace() => {}
                Some(c) => {
                    let Some(nibble) = c.to_digit(16) else {
                        return Err(self.error_at(
                            at,
                            SyntaxError::BadHexString {
                                why: "only hex digits and whitespace may appear",
                            },
                        ));
                    };
                    let nibble = nibble as u8;
                    match high.take() {
                        None => high = Some(nibble),
                        Some(h) => out.push(h << 4 | nibble),
                    }
                }
            }
        }
    }

    /// `[` elements `]`; the `[` is next.
    fn list(&mut self, depth: usize) -> Result<Value, NotationError> {
        self.bump();
        let mut items = Vec::new();
        self.skip_separators();
        loop {
            if self.eat(']') {
                return Ok(Value::List(items));
            }
            if self.peek().is_none() {
                return Err(self.unexpected("`]`"));
            }
            items.push(self.value(depth + 1)?);
            if !self.skip_separators() && self.peek() != Some(']') {
                return Err(self.unexpected("`,`, whitespace or `]`"));
            }
        }
    }

    /// `{` fields `}`, named `name`; the `{` is next.
    fn record(&mut self, name: String, depth: usize) -> Result<Value, NotationError> {
        self.bump();
        let mut fields = Vec::new();
        self.skip_separators();
        loop {
            if self.eat('}') {
                return Ok(Value::Record { name, fields });
            }
            if self.text[self.pos..].starts_with(REST_FIELD) {
                // The conformance runner's "rest" marker: fields not listed may be anything.
                self.pos += REST_FIELD.len();
                fields.push((REST_FIELD.to_owned(), Value::Wildcard));
                if !self.skip_separators() && self.peek() != Some('}') {
                    return Err(self.unexpected("`,`, whitespace or `}`"));
                }
                continue;
            }
            if !self.peek().is_some_and(is_ident_start) {
                return Err(self.unexpected("a field name or `}`"));
            }
            let field = self.ident().to_owned();
            self.skip_ws();
            if !self.eat('=') {
                return Err(self.unexpected("`=` after the field name"));
            }
            self.skip_ws();
            let value = self.value(depth + 1)?;
            fields.push((field, value));
            if !self.skip_separators() && self.peek() != Some('}') {
                return Err(self.unexpected("`,`, whitespace or `}`"));
            }
        }
    }
}
