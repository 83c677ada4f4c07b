//! Key names (`Enter`, `C-c`, `M-x`, `S-Tab`, `F5`) and characters as phux key events.
//!
//! A key event names the physical key (a W3C `code`), the modifiers, and the text it types.
//! Characters map to their US-layout key so the server's encoder can derive Ctrl and Alt
//! bytes from the key when there is no text (Ctrl and Alt chords carry none, as a real
//! keyboard's would not).

use phux_core::encoder::encode_key;
use phux_core::modes::TerminalModes;
use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};

/// A parsed `--key` / `--detach-key` value.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KeySpec(pub KeyEvent);

/// Names for keys that are not characters, besides the W3C codes themselves.
const NAMED: &[(&str, PhysicalKey)] = &[
    ("Enter", PhysicalKey::ENTER),
    ("Return", PhysicalKey::ENTER),
    ("Tab", PhysicalKey::TAB),
    ("Esc", PhysicalKey::ESCAPE),
    ("Escape", PhysicalKey::ESCAPE),
    ("Space", PhysicalKey::SPACE),
    ("Backspace", PhysicalKey::BACKSPACE),
    ("BSpace", PhysicalKey::BACKSPACE),
    ("Up", PhysicalKey::ARROW_UP),
    ("Down", PhysicalKey::ARROW_DOWN),
    ("Left", PhysicalKey::ARROW_LEFT),
    ("Right", PhysicalKey::ARROW_RIGHT),
    ("Home", PhysicalKey::HOME),
    ("End", PhysicalKey::END),
    ("PageUp", PhysicalKey::PAGE_UP),
    ("PgUp", PhysicalKey::PAGE_UP),
    ("PageDown", PhysicalKey::PAGE_DOWN),
    ("PgDn", PhysicalKey::PAGE_DOWN),
    ("Insert", PhysicalKey::INSERT),
    ("IC", PhysicalKey::INSERT),
    ("Delete", PhysicalKey::DELETE),
    ("DC", PhysicalKey::DELETE),
];

/// Parses a key name: an optional chain of `C-` (Ctrl), `M-` (Alt), `S-` (Shift) and `s-`
/// (Super) prefixes, then a name from the list above, `F1`..`F24`, a W3C code, or one
/// character.
pub fn parse_key(text: &str) -> Result<KeySpec, String> {
    let mut mods = ModSet::NONE;
    let mut rest = text;
    // A prefix needs something after it: "C--" is Ctrl+minus, "-" is minus.
    while rest.len() > 2 {
        let bit = match rest.get(..2) {
            Some("C-") => ModSet::CTRL,
            Some("M-") => ModSet::ALT,
            Some("S-") => ModSet::SHIFT,
            Some("s-") => ModSet::SUPER,
            _ => break,
        };
        mods |= bit;
        rest = &rest[2..];
    }
    let mut chars = rest.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Ok(KeySpec(char_key(c, mods)));
    }
    let key = NAMED
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(rest))
        .map(|(_, key)| *key)
        .or_else(|| function_key(rest))
        .or_else(|| PhysicalKey::from_name(rest))
        .ok_or_else(|| format!("unknown key {text:?} (try Enter, C-c, M-x, Up, F5, S-Tab)"))?;
    let mut event = KeyEvent::press(key, mods);
    if key == PhysicalKey::SPACE && !mods.contains(ModSet::CTRL) && !mods.contains(ModSet::ALT) {
        event.text = Some(" ".to_owned());
    }
    if key == PhysicalKey::SPACE {
        event.unshifted_codepoint = Some(u32::from(' '));
    }
    Ok(KeySpec(event))
}

fn function_key(name: &str) -> Option<PhysicalKey> {
    let n: u32 = name.strip_prefix(['F', 'f'])?.parse().ok()?;
    (1..=24)
        .contains(&n)
        .then(|| PhysicalKey(PhysicalKey::F1.0 + n - 1))
}

/// The key event for typing `c` with `mods` held: the US-layout key that types it (Shift
/// added for shifted characters), the character as text unless Ctrl, Alt or Super is held,
/// and the unshifted character as the key's code point. A shifted character under Ctrl keeps
/// its text, so the encoder finds its C0 byte (C-_ is 0x1f, C-? is DEL) from the character
/// rather than from the unshifted key.
pub fn char_key(c: char, mut mods: ModSet) -> KeyEvent {
    let (key, base, shifted) = us_key(c).unwrap_or((PhysicalKey::UNIDENTIFIED, c, false));
    if shifted {
        mods |= ModSet::SHIFT;
    }
    let chord =
        mods.contains(ModSet::CTRL) || mods.contains(ModSet::ALT) || mods.contains(ModSet::SUPER);
    let text = if chord && !(shifted && mods.contains(ModSet::CTRL)) {
        None
    } else if mods.contains(ModSet::SHIFT) && !shifted {
        // S-a means "A".
        Some(c.to_uppercase().collect())
    } else {
        Some(c.to_string())
    };
    KeyEvent {
        action: KeyAction::Press,
        key,
        mods,
        consumed_mods: ModSet::NONE,
        composing: false,
        text,
        unshifted_codepoint: Some(u32::from(base)),
    }
}

/// The US-layout key for a character: (key, unshifted character, whether Shift is needed).
fn us_key(c: char) -> Option<(PhysicalKey, char, bool)> {
    const ROW: &[(PhysicalKey, char, char)] = &[
        (PhysicalKey::DIGIT0, '0', ')'),
        (PhysicalKey::DIGIT1, '1', '!'),
        (PhysicalKey::DIGIT2, '2', '@'),
        (PhysicalKey::DIGIT3, '3', '#'),
        (PhysicalKey::DIGIT4, '4', '$'),
        (PhysicalKey::DIGIT5, '5', '%'),
        (PhysicalKey::DIGIT6, '6', '^'),
        (PhysicalKey::DIGIT7, '7', '&'),
        (PhysicalKey::DIGIT8, '8', '*'),
        (PhysicalKey::DIGIT9, '9', '('),
        (PhysicalKey::BACKQUOTE, '`', '~'),
        (PhysicalKey::BACKSLASH, '\\', '|'),
        (PhysicalKey::BRACKET_LEFT, '[', '{'),
        (PhysicalKey::BRACKET_RIGHT, ']', '}'),
        (PhysicalKey::COMMA, ',', '<'),
        (PhysicalKey::EQUAL, '=', '+'),
        (PhysicalKey::MINUS, '-', '_'),
        (PhysicalKey::PERIOD, '.', '>'),
        (PhysicalKey::QUOTE, '\'', '"'),
        (PhysicalKey::SEMICOLON, ';', ':'),
        (PhysicalKey::SLASH, '/', '?'),
        (PhysicalKey::SPACE, ' ', ' '),
    ];
    if c.is_ascii_lowercase() {
        let key = PhysicalKey(PhysicalKey::KEY_A.0 + u32::from(c as u8 - b'a'));
        return Some((key, c, false));
    }
    if c.is_ascii_uppercase() {
        let key = PhysicalKey(PhysicalKey::KEY_A.0 + u32::from(c as u8 - b'A'));
        return Some((key, c.to_ascii_lowercase(), true));
    }
    ROW.iter().find_map(|&(key, base, shifted)| {
        if c == base {
            Some((key, base, false))
        } else if c == shifted && c != ' ' {
            Some((key, base, true))
        } else {
            None
        }
    })
}

/// The bytes a key sends to a program in a freshly reset terminal (legacy encoding): two
/// keys are the same key to the user when these agree (crossterm reports Ctrl+\ as Ctrl+4,
/// which sends the same 0x1c).
pub fn legacy_bytes(key: &KeyEvent) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(key, &TerminalModes::default(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(name: &str) -> Vec<u8> {
        legacy_bytes(&parse_key(name).expect(name).0)
    }

    #[test]
    fn names_encode_to_the_bytes_a_terminal_sends() {
        // [INPUT.ENCODE.KEY.3] [INPUT.ENCODE.KEY.4] [INPUT.ENCODE.KEY.6] [INPUT.ENCODE.KEY.10]
        // [INPUT.ENCODE.KEY.5] through the server's own encoder.
        let cases: &[(&str, &[u8])] = &[
            ("Enter", b"\r"),
            ("Tab", b"\t"),
            ("S-Tab", b"\x1b[Z"),
            ("Esc", b"\x1b"),
            ("C-c", b"\x03"),
            ("C-\\", b"\x1c"),
            ("C-Space", b"\x00"),
            ("M-x", b"\x1bx"),
            ("C-M-a", b"\x1b\x01"),
            ("Up", b"\x1b[A"),
            ("F5", b"\x1b[15~"),
            ("Backspace", b"\x7f"),
            ("a", b"a"),
            ("A", b"A"),
            ("S-a", b"A"),
            ("?", b"?"),
            ("-", b"-"),
            ("C-_", b"\x1f"),
            ("C-?", b"\x7f"),
            ("Space", b" "),
            ("\u{e9}", "\u{e9}".as_bytes()),
            ("KeyQ", b"q"),
            ("ArrowLeft", b"\x1b[D"),
        ];
        for (name, want) in cases {
            assert_eq!(bytes(name), *want, "{name}");
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        for bad in ["", "Hyper-x", "F99", "F0", "Enterr", "C-"] {
            assert!(parse_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn chords_carry_no_text_and_typed_characters_do() {
        let c = parse_key("C-c").expect("C-c").0;
        assert_eq!(
            (c.key, c.mods, c.text),
            (PhysicalKey::KEY_C, ModSet::CTRL, None)
        );
        let bang = char_key('!', ModSet::NONE);
        assert_eq!(bang.key, PhysicalKey::DIGIT1);
        assert_eq!(bang.mods, ModSet::SHIFT);
        assert_eq!(bang.text.as_deref(), Some("!"));
        assert_eq!(bang.unshifted_codepoint, Some(u32::from('1')));
    }
}
