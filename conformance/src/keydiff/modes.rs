//! The keyboard modes a program sets by writing to its terminal, and the bytes that set them.

use std::fmt;

use crate::netfuzz::rng::Rng;

/// The modes one terminal of a campaign runs under. The program (the probe) writes
/// [`ProgramModes::sequence`] to its terminal before any key is sent, so each server learns
/// them the way it learns them from any program: from the output.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct ProgramModes {
    /// DECCKM, cursor keys send SS3 (`CSI ? 1 h`).
    pub cursor_keys: bool,
    /// DECKPAM, the application keypad (`ESC =`).
    pub keypad: bool,
    /// xterm modifyOtherKeys, 0 (off), 1 or 2 (`CSI > 4 ; n m`).
    pub modify_other_keys: u8,
    /// The kitty keyboard flags pushed (`CSI > f u`), 0..=31.
    pub kitty: u8,
    /// Bracketed paste (`CSI ? 2004 h`).
    pub bracketed_paste: bool,
    /// DECBKM, Backspace sends BS (`CSI ? 67 h`).
    pub backarrow: bool,
    /// LNM, Enter sends CR LF (`CSI 20 h`).
    pub line_feed: bool,
}

impl ProgramModes {
    /// What the program writes to set these modes (nothing for the defaults).
    pub fn sequence(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.cursor_keys {
            out.extend_from_slice(b"\x1b[?1h");
        }
        if self.keypad {
            out.extend_from_slice(b"\x1b=");
        }
        if self.modify_other_keys > 0 {
            out.extend_from_slice(format!("\x1b[>4;{}m", self.modify_other_keys).as_bytes());
        }
        if self.kitty > 0 {
            out.extend_from_slice(format!("\x1b[>{}u", self.kitty).as_bytes());
        }
        if self.bracketed_paste {
            out.extend_from_slice(b"\x1b[?2004h");
        }
        if self.backarrow {
            out.extend_from_slice(b"\x1b[?67h");
        }
        if self.line_feed {
            out.extend_from_slice(b"\x1b[20h");
        }
        out
    }

    /// Modes drawn at random: legacy (kitty 0) as often as all 31 kitty combinations together,
    /// since legacy has the most cases; DECBKM and LNM, which few programs set, now and then.
    pub fn draw(rng: &mut Rng) -> Self {
        Self {
            cursor_keys: rng.chance(0.5),
            keypad: rng.chance(0.5),
            modify_other_keys: rng.below(3) as u8,
            kitty: if rng.chance(0.5) {
                0
            } else {
                1 + rng.below(31) as u8
            },
            bracketed_paste: rng.chance(0.5),
            backarrow: rng.chance(0.1),
            line_feed: rng.chance(0.05),
        }
    }
}

/// `ckm kpam mok=2 kitty=0b01011 bp bkm lnm`: the modes that are set.
impl fmt::Display for ProgramModes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut words = Vec::new();
        if self.cursor_keys {
            words.push("ckm".to_owned());
        }
        if self.keypad {
            words.push("kpam".to_owned());
        }
        if self.modify_other_keys > 0 {
            words.push(format!("mok={}", self.modify_other_keys));
        }
        if self.kitty > 0 {
            words.push(format!("kitty={:#07b}", self.kitty));
        }
        if self.bracketed_paste {
            words.push("bp".to_owned());
        }
        if self.backarrow {
            words.push("bkm".to_owned());
        }
        if self.line_feed {
            words.push("lnm".to_owned());
        }
        if words.is_empty() {
            f.write_str("default")
        } else {
            f.write_str(&words.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_what_xterm_and_kitty_document() {
        assert!(ProgramModes::default().sequence().is_empty());
        let all = ProgramModes {
            cursor_keys: true,
            keypad: true,
            modify_other_keys: 2,
            kitty: 0b11111,
            bracketed_paste: true,
            backarrow: true,
            line_feed: true,
        };
        assert_eq!(
            all.sequence(),
            b"\x1b[?1h\x1b=\x1b[>4;2m\x1b[>31u\x1b[?2004h\x1b[?67h\x1b[20h"
        );
        assert_eq!(all.to_string(), "ckm kpam mok=2 kitty=0b11111 bp bkm lnm");
    }
}
