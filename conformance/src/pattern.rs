//! Patterns over notation values: template expansion, capture substitution and matching.
//!
//! A pattern is a [`Value`] tree that may hold `$name` captures, `*` wildcards, `a|b`
//! alternatives and the rest marker `..` in a record. Matching compares it against the value
//! of a frame that arrived ([`phux_proto::Frame::to_value`]), after normalising the spellings
//! the notation keeps apart (`Int` / `HexInt`, `Str` / `HexStr`).

use std::collections::BTreeMap;

use phux_proto::notation::{REST_FIELD, Value};

/// Captured values by name (without the `$`).
pub type Bindings = BTreeMap<String, Value>;

/// Named templates: a record or word whose name is a template's expands to it.
#[derive(Clone, Debug, Default)]
pub struct Templates {
    defs: BTreeMap<String, Value>,
}

/// How deep templates may refer to templates before we call it a cycle.
const MAX_TEMPLATE_DEPTH: usize = 16;

impl Templates {
    /// Adds (or replaces) a template.
    pub fn define(&mut self, name: &str, value: Value) {
        self.defs.insert(name.to_owned(), value);
    }

    /// Expands every template use in `value`: `Name{f=v}` becomes the template with field `f`
    /// replaced (nested anonymous records merge field by field), and a bare `Name` becomes the
    /// template itself.
    pub fn expand(&self, value: &Value) -> Result<Value, String> {
        self.expand_at(value, 0)
    }

    fn expand_at(&self, value: &Value, depth: usize) -> Result<Value, String> {
        if depth > MAX_TEMPLATE_DEPTH {
            return Err("templates nest too deep (a cycle?)".into());
        }
        Ok(match value {
            Value::Ident(name) => match self.defs.get(name) {
                Some(def) => self.expand_at(def, depth + 1)?,
                None => value.clone(),
            },
            Value::Record { name, fields } => {
                let fields = fields
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), self.expand_at(v, depth)?)))
                    .collect::<Result<Vec<_>, String>>()?;
                match self.defs.get(name) {
                    Some(def) => {
                        let base = self.expand_at(def, depth + 1)?;
                        merge(base, fields)?
                    }
                    None => Value::Record {
                        name: name.clone(),
                        fields,
                    },
                }
            }
            Value::List(items) => Value::List(
                items
                    .iter()
                    .map(|v| self.expand_at(v, depth))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Union(items) => Value::Union(
                items
                    .iter()
                    .map(|v| self.expand_at(v, depth))
                    .collect::<Result<_, _>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// `base` with `overrides` applied: an override that is an anonymous record merges into an
/// existing record field; any other override replaces the field (or is appended).
fn merge(base: Value, overrides: Vec<(String, Value)>) -> Result<Value, String> {
    let Value::Record { name, mut fields } = base else {
        return Err(format!(
            "a template used with fields must be a record, not {}",
            base.describe()
        ));
    };
    for (key, value) in overrides {
        match fields.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => {
                let merged = match (&*slot, value) {
                    (Value::Record { .. }, Value::Record { name, fields: f })
                        if name.is_empty() =>
                    {
                        merge(slot.clone(), f)?
                    }
                    (_, v) => v,
                };
                *slot = merged;
            }
            None => fields.push((key, value)),
        }
    }
    Ok(Value::Record { name, fields })
}

/// Replaces every `$name` with its bound value; an unbound capture is an error. A list element
/// `$name` bound to a list is spliced in: `[$PROBE "a"]` is the probe's command plus `"a"`.
pub fn substitute(value: &Value, bindings: &Bindings) -> Result<Value, String> {
    Ok(match value {
        Value::Capture(name) => bindings
            .get(name)
            .cloned()
            .ok_or_else(|| format!("${name} is not bound yet"))?,
        Value::Record { name, fields } => Value::Record {
            name: name.clone(),
            fields: fields
                .iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, bindings)?)))
                .collect::<Result<_, String>>()?,
        },
        Value::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match (item, substitute(item, bindings)?) {
                    (Value::Capture(_), Value::List(spliced)) => out.extend(spliced),
                    (_, v) => out.push(v),
                }
            }
            Value::List(out)
        }
        Value::Union(items) => Value::Union(
            items
                .iter()
                .map(|v| substitute(v, bindings))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// One spelling per value: hex integers as integers, hex strings as strings.
pub fn normalise(value: &Value) -> Value {
    match value {
        Value::HexInt { value, .. } => match i128::try_from(*value) {
            Ok(v) => Value::Int(v),
            Err(_) => Value::HexInt {
                value: *value,
                width: 0,
            },
        },
        Value::HexStr(bytes) => Value::Str(bytes.clone()),
        Value::Record { name, fields } => Value::Record {
            name: name.clone(),
            fields: fields
                .iter()
                .map(|(k, v)| (k.clone(), normalise(v)))
                .collect(),
        },
        Value::List(items) => Value::List(items.iter().map(normalise).collect()),
        Value::Union(items) => Value::Union(items.iter().map(normalise).collect()),
        other => other.clone(),
    }
}

/// Where and why a pattern did not match.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Mismatch {
    /// The path to the differing part (`COMMAND_RESULT.result.error.code`).
    pub path: String,
    /// What the pattern wanted there.
    pub expected: String,
    /// What arrived there.
    pub actual: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {}: expected {}, got {}",
            self.path, self.expected, self.actual
        )
    }
}

/// The record names a pattern can match (one, or several for `A{..}|B{..}`); empty when the
/// pattern is not a record.
pub fn frame_names(pattern: &Value) -> Vec<String> {
    match pattern {
        Value::Record { name, .. } => vec![name.clone()],
        Value::Union(alts) => alts.iter().flat_map(frame_names).collect(),
        _ => Vec::new(),
    }
}

/// Matches `actual` against `pattern`, binding new captures into `bindings` (only on
/// success: on a mismatch `bindings` is left as it was).
pub fn matches(pattern: &Value, actual: &Value, bindings: &mut Bindings) -> Result<(), Mismatch> {
    let mut scratch = bindings.clone();
    let path = match actual {
        Value::Record { name, .. } => name.clone(),
        _ => String::new(),
    };
    match_at(pattern, actual, &mut scratch, &path)?;
    *bindings = scratch;
    Ok(())
}

fn mismatch(path: &str, expected: &Value, actual: &Value) -> Mismatch {
    Mismatch {
        path: if path.is_empty() {
            "(root)".into()
        } else {
            path.to_owned()
        },
        expected: expected.to_string(),
        actual: actual.to_string(),
    }
}

fn match_at(
    pattern: &Value,
    actual: &Value,
    bindings: &mut Bindings,
    path: &str,
) -> Result<(), Mismatch> {
    match (pattern, actual) {
        (Value::Wildcard, _) => Ok(()),
        (Value::Capture(name), _) => match bindings.get(name) {
            Some(bound) if normalise(bound) == normalise(actual) => Ok(()),
            Some(bound) => Err(Mismatch {
                path: path.to_owned(),
                expected: format!("${name} = {bound}"),
                actual: actual.to_string(),
            }),
            None => {
                bindings.insert(name.clone(), actual.clone());
                Ok(())
            }
        },
        (Value::Union(alts), _) => {
            // A flag set that equals the actual one, or one alternative that matches.
            if let Value::Union(parts) = actual {
                let mut want: Vec<Value> = alts.iter().map(normalise).collect();
                let mut have: Vec<Value> = parts.iter().map(normalise).collect();
                want.sort_by_key(ToString::to_string);
                have.sort_by_key(ToString::to_string);
                if want == have {
                    return Ok(());
                }
            }
            for alt in alts {
                let mut trial = bindings.clone();
                if match_at(alt, actual, &mut trial, path).is_ok() {
                    *bindings = trial;
                    return Ok(());
                }
            }
            Err(mismatch(path, pattern, actual))
        }
        (
            Value::Record {
                name: pname,
                fields: pfields,
            },
            Value::Record {
                name: aname,
                fields: afields,
            },
        ) => {
            if pname != aname {
                return Err(mismatch(path, pattern, actual));
            }
            let rest = pfields.iter().any(|(k, _)| k == REST_FIELD);
            for (key, want) in pfields.iter().filter(|(k, _)| k != REST_FIELD) {
                let sub = join(path, key);
                match afields.iter().find(|(k, _)| k == key) {
                    Some((_, have)) => match_at(want, have, bindings, &sub)?,
                    None => {
                        return Err(Mismatch {
                            path: sub,
                            expected: want.to_string(),
                            actual: "no such field".into(),
                        });
                    }
                }
            }
            if !rest
                && let Some((key, have)) = afields
                    .iter()
                    .find(|(k, _)| !pfields.iter().any(|(pk, _)| pk == k))
            {
                return Err(Mismatch {
                    path: join(path, key),
                    expected: "no such field (add `..` to allow others)".into(),
                    actual: have.to_string(),
                });
            }
            Ok(())
        }
        (Value::List(want), Value::List(have)) => {
            if want.len() != have.len() {
                return Err(Mismatch {
                    path: path.to_owned(),
                    expected: format!("{} (length {})", pattern, want.len()),
                    actual: format!("{} (length {})", actual, have.len()),
                });
            }
            for (i, (w, h)) in want.iter().zip(have).enumerate() {
                match_at(w, h, bindings, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        _ if normalise(pattern) == normalise(actual) => Ok(()),
        _ => Err(mismatch(path, pattern, actual)),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The bytes of a string-like value (`Str`, `HexStr`), or its text for anything else.
pub fn as_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::Str(b) | Value::HexStr(b) => b.clone(),
        other => other.to_string().into_bytes(),
    }
}

/// The named field of a record value.
pub fn field<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match value {
        Value::Record { fields, .. } => fields.iter().find(|(k, _)| k == name).map(|(_, v)| v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_proto::Frame;

    fn v(text: &str) -> Value {
        Value::parse(text).unwrap()
    }

    #[test]
    fn captures_bind_then_must_agree() {
        let mut b = Bindings::new();
        let frame: Frame = "TERMINAL_SPAWNED{request_id=1 result=ok{terminal=local:3}}"
            .parse()
            .unwrap();
        matches(
            &v("TERMINAL_SPAWNED{request_id=1 result=ok{terminal=$t}}"),
            &frame.to_value(),
            &mut b,
        )
        .unwrap();
        assert_eq!(b["t"], v("local:3"));
        let other: Frame = "TERMINAL_SPAWNED{request_id=1 result=ok{terminal=local:4}}"
            .parse()
            .unwrap();
        let e = matches(
            &v("TERMINAL_SPAWNED{request_id=1 result=ok{terminal=$t}}"),
            &other.to_value(),
            &mut b,
        )
        .unwrap_err();
        assert_eq!(e.path, "TERMINAL_SPAWNED.result.terminal");
    }

    #[test]
    fn hex_and_decimal_spellings_are_the_same_value() {
        let mut b = Bindings::new();
        let pong: Frame = "PONG{nonce=0x00000000000000ff}".parse().unwrap();
        matches(&v("PONG{nonce=255}"), &pong.to_value(), &mut b).unwrap();
        let out: Frame = "BELL{terminal=local:1}".parse().unwrap();
        matches(&v("BELL{terminal=local:1}"), &out.to_value(), &mut b).unwrap();
        assert_eq!(normalise(&v("hex\"6869\"")), normalise(&v("\"hi\"")));
    }

    #[test]
    fn rest_marker_alternatives_and_wildcards() {
        let mut b = Bindings::new();
        let e: Frame = "ERROR{code=MALFORMED_MESSAGE message=\"x\"}"
            .parse()
            .unwrap();
        let e = e.to_value();
        assert!(matches(&v("ERROR{code=MALFORMED_MESSAGE}"), &e, &mut b).is_err());
        matches(&v("ERROR{code=MALFORMED_MESSAGE ..}"), &e, &mut b).unwrap();
        matches(
            &v("ERROR{code=UNKNOWN_MESSAGE_TYPE|MALFORMED_MESSAGE message=*}"),
            &e,
            &mut b,
        )
        .unwrap();
        assert!(matches(&v("ERROR{request_id=* ..}"), &e, &mut b).is_err());
        matches(&v("DETACHED{..}|ERROR{..}"), &e, &mut b).unwrap();
        assert_eq!(
            frame_names(&v("DETACHED{..}|ERROR{..}")),
            ["DETACHED", "ERROR"]
        );
    }

    #[test]
    fn templates_merge_and_substitute() {
        let mut t = Templates::default();
        t.define("Caps", v("{a=1 b={x=1 y=2}}"));
        t.define("Hello", v("HELLO{name=\"n\" caps=Caps}"));
        let got = t.expand(&v("Hello{caps={b={y=3}}}")).unwrap();
        assert_eq!(got.to_string(), "HELLO{name=\"n\" caps={a=1 b={x=1 y=3}}}");
        assert_eq!(
            t.expand(&v("[Hello]")).unwrap().to_string(),
            "[HELLO{name=\"n\" caps={a=1 b={x=1 y=2}}}]"
        );
        let mut b = Bindings::new();
        b.insert("t".into(), v("local:9"));
        assert_eq!(
            substitute(&v("X{terminal=$t}"), &b).unwrap().to_string(),
            "X{terminal=local:9}"
        );
        assert!(substitute(&v("X{terminal=$u}"), &b).is_err());
        // A list capture inside a list is spliced; elsewhere it stays one value.
        b.insert("cmd".into(), v(r#"["/bin/p" "probe"]"#));
        assert_eq!(
            substitute(&v(r#"X{command=[$cmd "a b" ""] list=$cmd}"#), &b)
                .unwrap()
                .to_string(),
            v(r#"X{command=["/bin/p" "probe" "a b" ""] list=["/bin/p" "probe"]}"#).to_string()
        );
        let mut cyc = Templates::default();
        cyc.define("A", v("B"));
        cyc.define("B", v("A"));
        assert!(cyc.expand(&v("A")).is_err());
    }
}
