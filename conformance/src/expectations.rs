//! What a run expects of a particular server: cases not to run (DISABLED) and the peer's
//! known deviations (KNOWN), read from an expectations file.
//!
//! Two spellings. The repository's own `expectations.txt` is `ID reason…` per line, every line
//! a DISABLED case. A peer file (`peers/<peer>.toml`) lists a peer's known deviations:
//!
//! ```toml
//! peer = "phux 0.22.0"
//!
//! [[known]]
//! case = "lease/002"
//! transports = ["socket", "exec"]      # optional: every transport when absent
//! phux = "ADR-0033: ..."               # the phux text the peer breaks
//! why = "ACQUIRE_INPUT answers OK but broadcasts nothing"
//!
//! [[disabled]]
//! case = "queue/003"
//! why = "..."
//! ```
//!
//! A known case that fails (or errors) is reported KNOWN; one that passes is KNOWN_PASSED, a
//! failure of the list, so that a fixed deviation cannot stay listed.

use std::collections::BTreeMap;

/// One listed deviation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Known {
    /// The phux text the peer breaks.
    pub phux: String,
    /// What the peer does.
    pub why: String,
    /// The transports it applies to (`in-process`, `socket`, `exec`, `ws`); empty: all.
    pub transports: Vec<String>,
}

/// Everything an expectations file says.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Expectations {
    /// The peer's name, when the file names one.
    pub peer: Option<String>,
    /// Cases not to run, with the reason.
    pub disabled: BTreeMap<String, String>,
    /// Known deviations, by case id.
    pub known: BTreeMap<String, Known>,
}

impl Expectations {
    /// Parses a file by its name: `.toml` is a peer file, anything else the line format.
    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        let is_toml = std::path::Path::new(name)
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("toml"));
        if is_toml {
            parse_toml(text).map_err(|e| format!("{name}: {e}"))
        } else {
            Ok(Self {
                disabled: parse_lines(text),
                ..Self::default()
            })
        }
    }

    /// The deviation listed for `case` on transport `kind`, if any.
    pub fn known_for(&self, case: &str, kind: &str) -> Option<&Known> {
        self.known
            .get(case)
            .filter(|k| k.transports.is_empty() || k.transports.iter().any(|t| t == kind))
    }
}

/// `ID reason…` per line, `#` comments.
pub fn parse_lines(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(c, _)| c).trim())
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((id, why)) => (id.to_owned(), why.trim().to_owned()),
            None => (l.to_owned(), "no reason given".to_owned()),
        })
        .collect()
}

fn parse_toml(text: &str) -> Result<Expectations, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let mut out = Expectations::default();
    for (key, value) in &table {
        match key.as_str() {
            "peer" => out.peer = Some(string(value, "peer")?),
            "known" => {
                for entry in array_of_tables(value, "known")? {
                    let case = string_field(entry, "case")?;
                    let known = Known {
                        phux: string_field(entry, "phux")?,
                        why: string_field(entry, "why")?,
                        transports: match entry.get("transports") {
                            None => Vec::new(),
                            Some(v) => strings(v, "transports")?,
                        },
                    };
                    for t in &known.transports {
                        if !TRANSPORTS.contains(&t.as_str()) {
                            return Err(format!("{case}: unknown transport `{t}`"));
                        }
                    }
                    if out.known.insert(case.clone(), known).is_some() {
                        return Err(format!("{case} is listed twice"));
                    }
                }
            }
            "disabled" => {
                for entry in array_of_tables(value, "disabled")? {
                    out.disabled
                        .insert(string_field(entry, "case")?, string_field(entry, "why")?);
                }
            }
            other => return Err(format!("unknown key `{other}`")),
        }
    }
    Ok(out)
}

/// The transport kinds a deviation may be limited to.
pub const TRANSPORTS: [&str; 4] = ["in-process", "socket", "exec", "ws"];

fn string(value: &toml::Value, what: &str) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("`{what}` must be a string"))
}

fn strings(value: &toml::Value, what: &str) -> Result<Vec<String>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("`{what}` must be a list of strings"))?
        .iter()
        .map(|v| string(v, what))
        .collect()
}

fn string_field(table: &toml::Table, key: &str) -> Result<String, String> {
    table
        .get(key)
        .ok_or_else(|| format!("an entry lacks `{key}`"))
        .and_then(|v| string(v, key))
}

fn array_of_tables<'a>(value: &'a toml::Value, what: &str) -> Result<Vec<&'a toml::Table>, String> {
    value
        .as_array()
        .ok_or_else(|| format!("`{what}` must be [[{what}]] tables"))?
        .iter()
        .map(|v| {
            v.as_table()
                .ok_or_else(|| format!("`{what}` must be [[{what}]] tables"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_file_lists_known_deviations_per_transport() {
        let e = Expectations::parse(
            "p.toml",
            "peer = \"x 1\"\n[[known]]\ncase = \"a/001\"\nphux = \"L1.md §5\"\nwhy = \"w\"\n\
             transports = [\"exec\"]\n[[known]]\ncase = \"a/002\"\nphux = \"p\"\nwhy = \"w\"\n\
             [[disabled]]\ncase = \"a/003\"\nwhy = \"hangs\"\n",
        )
        .unwrap();
        assert_eq!(e.peer.as_deref(), Some("x 1"));
        assert!(e.known_for("a/001", "exec").is_some());
        assert!(e.known_for("a/001", "socket").is_none());
        assert!(e.known_for("a/002", "socket").is_some());
        assert_eq!(e.disabled["a/003"], "hangs");
        assert!(Expectations::parse("p.toml", "[[known]]\ncase = \"a\"\nwhy = \"w\"\n").is_err());
        assert!(
            Expectations::parse(
                "p.toml",
                "[[known]]\ncase = \"a\"\nphux = \"p\"\nwhy = \"w\"\ntransports = [\"tcp\"]\n"
            )
            .is_err()
        );
    }

    #[test]
    fn the_line_format_disables() {
        let e = Expectations::parse("e.txt", "# c\na/001 too slow # why\na/002\n").unwrap();
        assert_eq!(e.disabled["a/001"], "too slow");
        assert_eq!(e.disabled["a/002"], "no reason given");
        assert!(e.known.is_empty());
    }
}
