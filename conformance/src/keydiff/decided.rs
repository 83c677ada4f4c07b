//! The decided differences: where our bytes and the reference's may differ, and why.
//!
//! The evidence lives in `conformance/keydiff-decided.toml`, one row per id: who is wrong or
//! that the protocol leaves it open, a summary, the citation (xterm's ctlseqs or input.c, the
//! kitty keyboard protocol, phux's own text) and a concrete example. [`classify`] recognises
//! each row's difference precisely (the event, the modes, and the bytes each side sent), so
//! that a row never hides another difference; a test keeps the rows and the rules in step.

use std::collections::BTreeSet;

use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey as K};

use super::{KeydiffError, ProgramModes};

mod rows;

/// One key whose bytes differ.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// The event sent to both.
    pub event: &'a KeyEvent,
    /// The modes the program set.
    pub modes: &'a ProgramModes,
    /// What the program read under our server.
    pub ours: &'a [u8],
    /// What it read under the reference.
    pub theirs: &'a [u8],
}

/// What [`classify`] made of a difference.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Decision {
    /// A row of the table.
    Decided(&'static str),
    /// No row: a finding. The string groups findings coarsely for the report.
    Undecided(String),
}

/// One row's recogniser: the row id and whether a difference is that row's.
struct Rule {
    id: &'static str,
    applies: fn(&Case<'_>) -> bool,
}

/// The rows, tried in order; each recognises its difference by the event, the modes and the
/// bytes on both sides.
const RULES: &[Rule] = &[
    Rule {
        id: "kitty-enhancements-alone",
        applies: rows::kitty_enhancements_alone,
    },
    Rule {
        id: "legacy-csi-u",
        applies: rows::legacy_csi_u,
    },
    Rule {
        id: "legacy-csi-27",
        applies: rows::legacy_csi_27,
    },
    Rule {
        id: "alt-non-ascii-without-esc",
        applies: rows::alt_non_ascii_without_esc,
    },
    Rule {
        id: "alt-prefix-of-unshifted-byte",
        applies: rows::alt_prefix_of_unshifted_byte,
    },
    Rule {
        id: "ctrl-of-us-key",
        applies: rows::ctrl_of_us_key,
    },
    Rule {
        id: "keypad-modifiers-applied",
        applies: rows::keypad_modifiers_applied,
    },
    Rule {
        id: "legacy-f3-as-13-tilde",
        applies: rows::legacy_f3_as_13_tilde,
    },
    Rule {
        id: "textless-key-dropped",
        applies: rows::textless_key_dropped,
    },
    Rule {
        id: "keypad-application-ignored",
        applies: rows::keypad_application_ignored,
    },
    Rule {
        id: "legacy-f13-f25-menu-missing",
        applies: rows::legacy_fkeys_missing,
    },
    Rule {
        id: "lnm-ignored",
        applies: rows::lnm_ignored,
    },
    Rule {
        id: "backspace-bs-del",
        applies: rows::backspace_bs_del,
    },
    Rule {
        id: "kitty-optional-fields",
        applies: rows::kitty_optional_fields,
    },
    Rule {
        id: "kitty-modifier-own-bit",
        applies: rows::kitty_modifier_own_bit,
    },
    Rule {
        id: "kitty-functional-alternates",
        applies: rows::kitty_functional_alternates,
    },
    Rule {
        id: "kitty-shifted-key-from-text",
        applies: rows::kitty_shifted_key_from_text,
    },
    Rule {
        id: "kitty-needs-unshifted-codepoint",
        applies: rows::kitty_needs_unshifted_codepoint,
    },
    Rule {
        id: "kitty-keypad-begin",
        applies: rows::kitty_keypad_begin,
    },
    Rule {
        id: "kitty-base-key-dropped",
        applies: rows::kitty_base_key_dropped,
    },
    Rule {
        id: "kitty-modified-release-of-enter-tab-backspace",
        applies: rows::kitty_modified_release,
    },
    Rule {
        id: "kitty-unidentified-as-text",
        applies: rows::kitty_unidentified_as_text,
    },
    Rule {
        id: "kitty-functional-missing",
        applies: rows::kitty_functional_missing,
    },
    Rule {
        id: "kitty-keypad-comma",
        applies: rows::kitty_keypad_comma,
    },
    Rule {
        id: "kitty-unconsumed-shift-blocks-text",
        applies: rows::kitty_unconsumed_shift_blocks_text,
    },
    Rule {
        id: "kitty-textless-key-as-escape",
        applies: rows::kitty_textless_key_as_escape,
    },
    Rule {
        id: "kitty-backspace-under-decbkm",
        applies: rows::kitty_backspace_under_decbkm,
    },
    Rule {
        id: "kitty-modifier-keys-while-composing",
        applies: rows::kitty_modifier_keys_while_composing,
    },
];

/// Every row id [`classify`] can return (the table must have exactly these).
fn ids() -> impl Iterator<Item = &'static str> {
    RULES.iter().map(|r| r.id)
}

/// Decides one difference.
pub fn classify(case: &Case<'_>) -> Decision {
    RULES.iter().find(|rule| (rule.applies)(case)).map_or_else(
        || Decision::Undecided(coarse(case)),
        |rule| Decision::Decided(rule.id),
    )
}

/// A coarse class for an undecided difference: the protocol, the kind of key, the modifiers.
fn coarse(case: &Case<'_>) -> String {
    let e = case.event;
    let proto = if case.modes.kitty & 0b1011 != 0 {
        "kitty"
    } else {
        "legacy"
    };
    let kind = match e.key {
        k if (K::KEY_A.0..=K::KEY_Z.0).contains(&k.0) => "letter".to_owned(),
        k if (K::DIGIT0.0..=K::DIGIT9.0).contains(&k.0) => "digit".to_owned(),
        k if k.0 <= K::SLASH.0 => "punct".to_owned(),
        k => k.to_string(),
    };
    let action = match e.action {
        KeyAction::Press => "",
        KeyAction::Repeat => " repeat",
        KeyAction::Release => " release",
    };
    let text = if e.text.is_some() { " text" } else { "" };
    let main = ModSet(e.mods.0 & 0x3f);
    format!("{proto} {kind}{action} {}{text}", main.names())
}

/// The table file, parsed.
#[derive(Debug, Default)]
pub struct DecidedTable {
    ids: BTreeSet<String>,
}

/// The committed table.
const TABLE: &str = include_str!("../../keydiff-decided.toml");

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    decided: Vec<Row>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Read by people; parsed so that a malformed row fails the tool.
struct Row {
    id: String,
    /// `reference` (its bytes are wrong), `open` (the protocol allows both) or `ours` (a
    /// departure of ours, said in the spec).
    who: String,
    summary: String,
    evidence: String,
    example: String,
}

impl DecidedTable {
    /// Parses the table; every row needs an id, `who`, a summary, evidence and an example.
    pub fn parse(text: &str) -> Result<Self, KeydiffError> {
        let file: File =
            toml::from_str(text).map_err(|e| KeydiffError::Table(format!("keydiff table: {e}")))?;
        let mut ids = BTreeSet::new();
        for row in file.decided {
            if !matches!(row.who.as_str(), "reference" | "open" | "ours") {
                return Err(KeydiffError::Table(format!(
                    "keydiff table: row {}: who is {:?}, not reference, open or ours",
                    row.id, row.who
                )));
            }
            if row.evidence.trim().is_empty() || row.example.trim().is_empty() {
                return Err(KeydiffError::Table(format!(
                    "keydiff table: row {} needs evidence and an example",
                    row.id
                )));
            }
            if !ids.insert(row.id.clone()) {
                return Err(KeydiffError::Table(format!(
                    "keydiff table: row {} twice",
                    row.id
                )));
            }
        }
        Ok(Self { ids })
    }

    /// The committed table, which must have a row for each of [`classify`]'s rules and no
    /// other.
    pub fn committed() -> Result<Self, KeydiffError> {
        let table = Self::parse(TABLE)?;
        let rules: BTreeSet<String> = ids().map(str::to_owned).collect();
        if table.ids != rules {
            let missing: Vec<_> = rules.difference(&table.ids).collect();
            let extra: Vec<_> = table.ids.difference(&rules).collect();
            return Err(KeydiffError::Table(format!(
                "conformance/keydiff-decided.toml and the rules differ: rows missing {missing:?}, \
                 rows without a rule {extra:?}"
            )));
        }
        Ok(table)
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the table has no row.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_and_the_rules_name_the_same_rows() {
        let table = DecidedTable::committed().unwrap();
        assert_eq!(table.len(), ids().count());
    }

    fn case<'a>(
        event: &'a KeyEvent,
        modes: &'a ProgramModes,
        ours: &'a [u8],
        theirs: &'a [u8],
    ) -> Case<'a> {
        Case {
            event,
            modes,
            ours,
            theirs,
        }
    }

    #[test]
    fn a_row_takes_only_its_own_difference() {
        let legacy = ProgramModes::default();
        let alt_colon = KeyEvent {
            unshifted_codepoint: Some(u32::from(';')),
            ..KeyEvent::press(K::SEMICOLON, ModSet::ALT | ModSet::SHIFT)
        };
        // The M-: as the reference sends it: decided.
        assert_eq!(
            classify(&case(&alt_colon, &legacy, b"\x1b:", b"\x1b;")),
            Decision::Decided("alt-prefix-of-unshifted-byte")
        );
        // Had we sent the same wrong bytes in another way, no row would take it.
        assert!(matches!(
            classify(&case(&alt_colon, &legacy, b"\x1b;;", b"\x1b:")),
            Decision::Undecided(_)
        ));
        // A key the reference drops is decided only when ours types one character.
        let textless = KeyEvent::press(K::KEY_U, ModSet::NONE);
        assert_eq!(
            classify(&case(&textless, &legacy, b"u", b"")),
            Decision::Decided("textless-key-dropped")
        );
        assert!(matches!(
            classify(&case(&textless, &legacy, b"\x1b[117u", b"")),
            Decision::Undecided(_)
        ));
    }
}
