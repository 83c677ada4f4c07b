//! The spec's clauses, read from `spec/*.md`: each clause is a paragraph that starts
//! `**[ID]**` and holds exactly one of MUST, MUST NOT, SHOULD, SHOULD NOT or MAY.
//!
//! Every clause also says whose rule it is, in the note paragraphs (`> …`) that follow it:
//! `> Ours (Rn):`, `> Ours:` or `> Beyond phux:` make it a rule of the phux-rs profile;
//! otherwise it is phux 0.8's own, and a `> phux:` note cites phux's text for it
//! (`> phux: L1.md §5.1`, `> phux: ADR-0053`).

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
    /// Whose rule it is.
    pub owner: Owner,
}

/// Whose rule a clause is.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Owner {
    /// phux 0.8's own rule, with the `> phux:` citation of its text when the spec gives one.
    Phux(Option<String>),
    /// A rule of phux-rs only, with the note's label (`Ours (R14)`, `Ours`, `Beyond phux`).
    Ours(String),
}

/// Which rules a run checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Profile {
    /// What every phux 0.8 server must do: clauses marked ours are not checked.
    #[default]
    Phux,
    /// phux's rules and ours: what phux-rs promises.
    PhuxRs,
}

impl Profile {
    /// Parses `phux` or `phux-rs`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "phux" => Some(Self::Phux),
            "phux-rs" => Some(Self::PhuxRs),
            _ => None,
        }
    }

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Phux => "phux",
            Self::PhuxRs => "phux-rs",
        }
    }
}

/// The owner a note line names, when it names one: the label of an ours note, or the
/// citation of a `> phux:` note.
fn note_owner(note: &str) -> Option<Owner> {
    let note = note.trim_start_matches('>').trim();
    if let Some(rest) = note.strip_prefix("phux:") {
        return Some(Owner::Phux(Some(rest.trim().to_owned())));
    }
    let label = note.split_once(':')?.0;
    let ours = label == "Ours"
        || label == "Beyond phux"
        || label
            .strip_prefix("Ours (R")
            .and_then(|r| r.strip_suffix(')'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    ours.then(|| Owner::Ours(label.to_owned()))
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
        // The clause whose note paragraphs the lines that follow may be.
        let mut last: Option<String> = None;
        // A `> Beyond phux:` note before the file's first clause makes every clause of the
        // file ours (server.md and client.md: the rules of our own server and client).
        let mut seen_clause = false;
        let mut file_owner: Option<Owner> = None;
        for line in text.lines() {
            if line.starts_with('>') {
                if !seen_clause
                    && let Some(Owner::Ours(label)) = note_owner(line)
                    && label == "Beyond phux"
                {
                    file_owner = Some(Owner::Ours(label));
                }
                if let (Some(id), Some(owner)) = (&last, note_owner(line))
                    && let Some(clause) = self.clauses.get_mut(id)
                {
                    // An ours note outranks a citation: the rule is ours even where phux has
                    // a related one.
                    if !matches!(clause.owner, Owner::Ours(_)) {
                        clause.owner = owner;
                    }
                }
                continue;
            }
            if !line.trim().is_empty() && !line.starts_with("**[") {
                last = None;
            }
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
                owner: file_owner.clone().unwrap_or(Owner::Phux(None)),
            };
            last = Some(id.to_owned());
            seen_clause = true;
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

    /// A clause's sentence.
    pub fn text(&self, id: &str) -> Option<&str> {
        self.clauses.get(id).map(|c| c.text.as_str())
    }

    /// Whether a clause is a rule of phux-rs only (an unknown id is not).
    pub fn is_ours(&self, id: &str) -> bool {
        self.clauses
            .get(id)
            .is_some_and(|c| matches!(c.owner, Owner::Ours(_)))
    }

    /// phux's own clauses whose text no `> phux:` note cites yet.
    pub fn uncited_phux(&self) -> impl Iterator<Item = &Clause> {
        self.clauses
            .values()
            .filter(|c| c.owner == Owner::Phux(None))
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
    fn notes_say_whose_rule_a_clause_is() {
        let mut spec = Spec::default();
        spec.add_file(
            "x.md",
            "**\x5bA.B.1]** It MUST.\n\n> Ours (R3): stricter.\n\n**\x5bA.B.2]** It MUST.\n\n\
             > Note: an aside.\n> Beyond phux: ours alone.\n\n**\x5bA.B.3]** It MUST.\n\n\
             > phux: L1.md §5.1\n\n**\x5bA.B.4]** It MUST.\n\nProse.\n\n> Ours: not A.B.4's.\n\n\
             **\x5bA.B.5]** It MUST.\n> Ours: a choice.\n",
        )
        .unwrap();
        assert!(spec.is_ours("A.B.1"));
        assert!(spec.is_ours("A.B.2"));
        assert_eq!(
            spec.clauses["A.B.3"].owner,
            Owner::Phux(Some("L1.md §5.1".into()))
        );
        // A note after prose belongs to no clause.
        assert_eq!(spec.clauses["A.B.4"].owner, Owner::Phux(None));
        assert!(spec.is_ours("A.B.5"));
        // A note before a file's first clause covers every clause of the file.
        spec.add_file(
            "s.md",
            "# S\n\n> Beyond phux: our server.\n\n**\x5bS.A.1]** It MUST.\n\n**\x5bS.A.2]** It MAY.\n",
        )
        .unwrap();
        assert!(spec.is_ours("S.A.1") && spec.is_ours("S.A.2"));
        assert_eq!(
            spec.uncited_phux()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>(),
            ["A.B.4"]
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
