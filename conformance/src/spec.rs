//! The spec's clauses, read from `spec/*.md`: each clause is a paragraph that starts
//! `**[ID]**` and holds exactly one of MUST, MUST NOT, SHOULD, SHOULD NOT or MAY.

use std::collections::BTreeMap;
use std::path::Path;

use crate::transcript::{Level, is_clause_id};

/// One clause.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Clause {
    /// `INPUT.DEDUPE.2`.
    pub id: String,
    /// Its level.
    pub level: Level,
    /// The clause's sentence (the paragraph without the id).
    pub text: String,
    /// The spec file it is in (`input.md`).
    pub file: String,
}

/// Every clause, by id.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// The clauses.
    pub clauses: BTreeMap<String, Clause>,
}

impl Spec {
    /// Reads every `*.md` in `dir`. A clause paragraph with no key word, or several, is an
    /// error, as is a repeated id.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        let mut spec = Self::default();
        for file in files {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let name = file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            spec.add_file(&name, &text)?;
        }
        Ok(spec)
    }

    /// Adds the clauses of one file's text.
    pub fn add_file(&mut self, name: &str, text: &str) -> Result<(), String> {
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("**[") else {
                continue;
            };
            let Some((id, body)) = rest.split_once("]**") else {
                continue;
            };
            if !is_clause_id(id) {
                return Err(format!("{name}: `{id}` is not a clause id"));
            }
            let body = body.trim().to_owned();
            if body.starts_with("RETIRED") {
                continue;
            }
            let level = clause_level(&body).map_err(|e| format!("{name}: [{id}] {e}"))?;
            let clause = Clause {
                id: id.to_owned(),
                level,
                text: body,
                file: name.to_owned(),
            };
            if self.clauses.insert(id.to_owned(), clause).is_some() {
                return Err(format!("{name}: [{id}] is defined twice"));
            }
        }
        Ok(())
    }

    /// The level of a clause, if it exists.
    pub fn level(&self, id: &str) -> Option<Level> {
        self.clauses.get(id).map(|c| c.level)
    }
}

/// The level a clause's key word gives it; exactly one key word must appear.
fn clause_level(text: &str) -> Result<Level, String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    let found: Vec<Level> = words.iter().filter_map(|w| Level::parse(w)).collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err("has no MUST, SHOULD or MAY".into()),
        _ => Err("has more than one key word".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_clauses_and_levels() {
        let mut spec = Spec::default();
        spec.add_file(
            "x.md",
            // `\x5b` is `[`, so that this file does not itself cite the example ids.
            "# T\n\n**\x5bA.B.1]** A server MUST NOT do it.\n\n> Note: MUST here is a note.\n\n\
             **\x5bA.B.2]** It SHOULD be so.\n**\x5bA.B.3]** RETIRED — gone.\n**\x5bA.C.1]** You MAY.\n",
        )
        .unwrap();
        assert_eq!(spec.level("A.B.1"), Some(Level::Must));
        assert_eq!(spec.level("A.B.2"), Some(Level::Should));
        assert_eq!(spec.level("A.B.3"), None);
        assert_eq!(spec.level("A.C.1"), Some(Level::May));
        assert!(
            Spec::default()
                .add_file("y.md", "**\x5bA.B.1]** MUST and SHOULD.")
                .is_err()
        );
        assert!(
            Spec::default()
                .add_file("y.md", "**\x5bA.B.1]** nothing.")
                .is_err()
        );
    }

    #[test]
    fn the_repository_spec_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec");
        let spec = Spec::load(&dir).unwrap();
        assert!(spec.clauses.len() > 200, "{}", spec.clauses.len());
        assert_eq!(spec.level("FRAME.TYPE.4"), Some(Level::Should));
        assert_eq!(spec.level("INPUT.DEDUPE.2"), Some(Level::Must));
    }
}
