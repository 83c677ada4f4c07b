//! Key names (`Enter`, `C-c`, `M-x`, `S-Tab`, `F5`, tmux's `PPage`, `KP5`) and characters as
//! phux key events.
//!
//! A key event carries what a real keyboard reports ([INPUT.ATOM] and phux's KeyEvent): the
//! physical key (a W3C `code`; the US-layout key that types a character), the modifiers, the
//! text the key typed under the layout *before* any Ctrl or Alt transformation (`:` for
//! Alt+Shift+`;`, `c` for Ctrl+C, `é` for Alt+é), Shift in `consumed_mods` when Shift is what
//! made that text, and the unshifted character as `unshifted_codepoint`. A server's encoder
//! derives every legacy byte from these: Alt prefixes ESC to the text, Ctrl maps it to its C0
//! byte, and a key with no legacy byte for its chord gets none. Keys that type no text
//! (Enter, arrows, F-keys) carry none.

use phux_core::encoder::encode_key;
use phux_core::modes::{KittyFlags, TerminalModes};
use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};

/// A parsed `--key` / `--detach-key` value.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KeySpec(pub KeyEvent);

/// Names for keys that are not characters, besides the W3C codes themselves; tmux's names
/// (`send-keys`) are among them, so a tmux user's key names work unchanged.
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
    ("PPage", PhysicalKey::PAGE_UP),
    ("PageDown", PhysicalKey::PAGE_DOWN),
    ("PgDn", PhysicalKey::PAGE_DOWN),
    ("NPage", PhysicalKey::PAGE_DOWN),
    ("Insert", PhysicalKey::INSERT),
    ("IC", PhysicalKey::INSERT),
    ("Delete", PhysicalKey::DELETE),
    ("DC", PhysicalKey::DELETE),
    ("KP/", PhysicalKey::NUMPAD_DIVIDE),
    ("KP*", PhysicalKey::NUMPAD_MULTIPLY),
    ("KP-", PhysicalKey::NUMPAD_SUBTRACT),
    ("KP+", PhysicalKey::NUMPAD_ADD),
    ("KP.", PhysicalKey::NUMPAD_DECIMAL),
    ("KPEnter", PhysicalKey::NUMPAD_ENTER),
];

/// The names shell completion offers for a key (`send --key`, `attach --detach-key`): the
/// named keys, `BTab`, the function keys and the Ctrl and Alt letters people type most. Any
/// other valid name is still taken.
pub fn completion_names() -> impl Iterator<Item = &'static str> {
    /// Besides the named keys (clap wants names that live as long as the program).
    const CHORDS: &[&str] = &[
        "BTab", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "C-a",
        "C-b", "C-c", "C-d", "C-e", "C-f", "C-g", "C-h", "C-i", "C-j", "C-k", "C-l", "C-m", "C-n",
        "C-o", "C-p", "C-q", "C-r", "C-s", "C-t", "C-u", "C-v", "C-w", "C-x", "C-y", "C-z", "C-\\",
        "C-]", "M-x", "M-b", "M-f", "M-d",
    ];
    NAMED
        .iter()
        .map(|(name, _)| *name)
        .chain(CHORDS.iter().copied())
}

/// `--key NAME`'s parser: [`parse_key`], telling shell completion the
/// [`completion_names`] so that it offers key names rather than file names.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyNameParser;

impl clap::builder::TypedValueParser for KeyNameParser {
    type Value = KeySpec;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<KeySpec, clap::Error> {
        let parse: fn(&str) -> Result<KeySpec, String> = parse_key;
        parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            completion_names().map(clap::builder::PossibleValue::new),
        ))
    }
}

/// Parses a key name: an optional chain of `C-` (Ctrl), `M-` (Alt), `S-` (Shift) and `s-`
/// (Super) prefixes, then a name from the list above, `BTab` (tmux's Shift+Tab), `KP0`..`KP9`,
/// `F1`..`F24`, a W3C code, or one character. A key that no terminal mode turns into bytes is
/// refused: pressing it would send the program nothing.
pub fn parse_key(text: &str) -> Result<KeySpec, String> {
    // dtach's and abduco's caret notation (`-e ^q`, `-e '^\'`): `^X` is C-x.
    if let Some(c) = text.strip_prefix('^')
        && c.chars().count() == 1
        && c != "?"
    {
        return parse_key(&format!("C-{}", c.to_ascii_lowercase()));
    }
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
    let event = if let (Some(c), None) = (chars.next(), chars.next()) {
        char_key(c, mods)
    } else if rest.eq_ignore_ascii_case("BTab") {
        KeyEvent::press(PhysicalKey::TAB, mods | ModSet::SHIFT)
    } else {
        let key = NAMED
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(rest))
            .map(|(_, key)| *key)
            .or_else(|| keypad_digit(rest))
            .or_else(|| function_key(rest))
            .or_else(|| PhysicalKey::from_name(rest))
            .ok_or_else(|| format!("unknown key {text:?} (try Enter, C-c, M-x, Up, F5, S-Tab)"))?;
        physical_key(key, mods)
    };
    // [CLIENT.KEY.3]
    if !sends_something(&event) {
        return Err(format!(
            "{text:?} sends nothing to a program: no terminal mode encodes it"
        ));
    }
    Ok(KeySpec(event))
}

/// tmux's `KP0`..`KP9`.
fn keypad_digit(name: &str) -> Option<PhysicalKey> {
    let n: u32 = name.strip_prefix("KP")?.parse().ok()?;
    (n <= 9).then(|| PhysicalKey(PhysicalKey::NUMPAD0.0 + n))
}

fn function_key(name: &str) -> Option<PhysicalKey> {
    let n: u32 = name.strip_prefix(['F', 'f'])?.parse().ok()?;
    (1..=24)
        .contains(&n)
        .then(|| PhysicalKey(PhysicalKey::F1.0 + n - 1))
}

/// A key named by its physical key: a key of the US layout's writing keys types its
/// character (so `KeyQ` is `q`), a keypad key its character, any other key no text.
pub fn physical_key(key: PhysicalKey, mods: ModSet) -> KeyEvent {
    if let Some(base) = us_char(key) {
        return char_key(base, mods);
    }
    let mut event = KeyEvent::press(key, mods);
    if let Some(c) = keypad_char(key) {
        event.text = Some(c.to_string());
        event.unshifted_codepoint = Some(u32::from(c));
    }
    event
}

/// The character a keypad key types (with Num Lock on, as a terminal's numeric keypad).
fn keypad_char(key: PhysicalKey) -> Option<char> {
    if (PhysicalKey::NUMPAD0.0..=PhysicalKey::NUMPAD9.0).contains(&key.0) {
        return char::from_digit(key.0 - PhysicalKey::NUMPAD0.0, 10);
    }
    Some(match key {
        PhysicalKey::NUMPAD_DIVIDE => '/',
        PhysicalKey::NUMPAD_MULTIPLY => '*',
        PhysicalKey::NUMPAD_SUBTRACT => '-',
        PhysicalKey::NUMPAD_ADD => '+',
        PhysicalKey::NUMPAD_DECIMAL => '.',
        PhysicalKey::NUMPAD_COMMA | PhysicalKey::NUMPAD_SEPARATOR => ',',
        PhysicalKey::NUMPAD_EQUAL => '=',
        PhysicalKey::NUMPAD_PAREN_LEFT => '(',
        PhysicalKey::NUMPAD_PAREN_RIGHT => ')',
        _ => return None,
    })
}

/// The key event for typing `c` with `mods` held, as a keyboard with a US layout reports it:
/// the key that types `c` (Shift added when `c` needs it), the typed character as text
/// (whatever Ctrl, Alt or Super do to it: the encoder applies them), Shift as consumed when
/// it made the text, and the unshifted character as the key's code point. `S-` with a key's
/// unshifted character types its shifted one (`S-a` is `A`, `S-;` is `:`). A character no US
/// key types (`é`, `€`) is reported as it is, on no identified key.
pub fn char_key(c: char, mut mods: ModSet) -> KeyEvent {
    // [CLIENT.KEY.1] The typed text, before Ctrl or Alt do anything to it.
    let (key, base, needs_shift) = us_key(c).unwrap_or((PhysicalKey::UNIDENTIFIED, c, false));
    if needs_shift {
        mods |= ModSet::SHIFT;
    }
    let shift = mods.contains(ModSet::SHIFT);
    let typed = if shift && !needs_shift {
        shifted(key, c)
    } else {
        c
    };
    // Shift made the text when the text is not what the key types without it.
    let consumed_mods = if shift && typed != base {
        ModSet::SHIFT
    } else {
        ModSet::NONE
    };
    KeyEvent {
        action: KeyAction::Press,
        key,
        mods,
        consumed_mods,
        composing: false,
        text: Some(typed.to_string()),
        unshifted_codepoint: Some(u32::from(base)),
    }
}

/// What Shift makes of `c`, typed on `key`: the US layout's shifted character, else the
/// upper case.
fn shifted(key: PhysicalKey, c: char) -> char {
    if let Some(&(_, _, up)) = US_ROW.iter().find(|(k, base, _)| *k == key && *base == c) {
        return up;
    }
    let mut upper = c.to_uppercase();
    match (upper.next(), upper.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// The US layout's punctuation, digit and space keys: (key, unshifted, shifted).
const US_ROW: &[(PhysicalKey, char, char)] = &[
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

/// The US-layout key for a character: (key, unshifted character, whether Shift is needed).
fn us_key(c: char) -> Option<(PhysicalKey, char, bool)> {
    if c.is_ascii_lowercase() {
        let key = PhysicalKey(PhysicalKey::KEY_A.0 + u32::from(c as u8 - b'a'));
        return Some((key, c, false));
    }
    if c.is_ascii_uppercase() {
        let key = PhysicalKey(PhysicalKey::KEY_A.0 + u32::from(c as u8 - b'A'));
        return Some((key, c.to_ascii_lowercase(), true));
    }
    US_ROW.iter().find_map(|&(key, base, shifted)| {
        if c == base {
            Some((key, base, false))
        } else if c == shifted && c != ' ' {
            Some((key, base, true))
        } else {
            None
        }
    })
}

/// The unshifted character of a US-layout writing key.
fn us_char(key: PhysicalKey) -> Option<char> {
    if (PhysicalKey::KEY_A.0..=PhysicalKey::KEY_Z.0).contains(&key.0) {
        let offset = u8::try_from(key.0 - PhysicalKey::KEY_A.0).ok()?;
        return Some(char::from(b'a' + offset));
    }
    US_ROW
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|&(_, base, _)| base)
}

/// The bytes a key sends to a program in a freshly reset terminal (legacy encoding): two
/// keys are the same key to the user when these agree (crossterm reports Ctrl+\ as Ctrl+4,
/// which sends the same 0x1c).
pub fn legacy_bytes(key: &KeyEvent) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(key, &TerminalModes::default(), &mut out);
    out
}

/// Whether pressing `key` sends a program anything in some mode a program can ask for: the
/// reset modes, the application cursor and keypad modes, and every kitty keyboard flag set.
pub fn sends_something(key: &KeyEvent) -> bool {
    let application = TerminalModes {
        application_cursor_keys: true,
        application_keypad: true,
        ..TerminalModes::default()
    };
    (0..32u8).any(|flags| {
        [TerminalModes::default(), application]
            .into_iter()
            .any(|mut modes| {
                modes.kitty_flags = KittyFlags(flags);
                let mut out = Vec::new();
                encode_key(key, &modes, &mut out);
                !out.is_empty()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(name: &str) -> Vec<u8> {
        legacy_bytes(&parse_key(name).expect(name).0)
    }

    #[test]
    fn caret_notation_is_ctrl_as_dtach_and_abduco_write_it() {
        assert_eq!(parse_key("^q"), parse_key("C-q"));
        assert_eq!(parse_key("^Q"), parse_key("C-q"));
        assert_eq!(parse_key("^\\"), parse_key("C-\\"));
        assert!(
            parse_key("^").is_ok(),
            "a caret alone is the key that types it"
        );
        assert!(parse_key("^qq").is_err());
    }

    #[test]
    fn names_encode_to_the_bytes_a_terminal_sends() {
        // [INPUT.ENCODE.KEY.2] [INPUT.ENCODE.KEY.3] [INPUT.ENCODE.KEY.4] [INPUT.ENCODE.KEY.5]
        // [INPUT.ENCODE.KEY.6] [INPUT.ENCODE.KEY.7] [INPUT.ENCODE.KEY.8] [INPUT.ENCODE.KEY.9]
        // through the server's own encoder: what xterm sends (ctlseqs, "PC-Style Function
        // Keys"; metaSendsEscape for Alt).
        let cases: &[(&str, &[u8])] = &[
            ("Enter", b"\r"),
            ("Tab", b"\t"),
            ("S-Tab", b"\x1b[Z"),
            ("BTab", b"\x1b[Z"),
            // Shift+Tab is CSI Z whatever else is held, as xterm sends it (the encoder's
            // [INPUT.ENCODE.KEY.4]); Alt adds no ESC before it.
            ("M-BTab", b"\x1b[Z"),
            ("Esc", b"\x1b"),
            ("M-Escape", b"\x1b\x1b"),
            ("C-c", b"\x03"),
            ("C-\\", b"\x1c"),
            ("C-Space", b"\x00"),
            ("C-@", b"\x00"),
            ("C-^", b"\x1e"),
            ("C-M-Space", b"\x1b\x00"),
            ("M-Space", b"\x1b "),
            ("M-x", b"\x1bx"),
            ("M-X", b"\x1bX"),
            ("M-S-x", b"\x1bX"),
            ("C-M-a", b"\x1b\x01"),
            // The issue's Alt+Shift punctuation and Alt with non-ASCII characters.
            ("M-:", b"\x1b:"),
            ("M-<", b"\x1b<"),
            ("M->", b"\x1b>"),
            ("M-{", b"\x1b{"),
            ("M-%", b"\x1b%"),
            ("M-!", b"\x1b!"),
            ("M-S-;", b"\x1b:"),
            ("M-\u{e9}", "\x1b\u{e9}".as_bytes()),
            ("M-\u{df}", "\x1b\u{df}".as_bytes()),
            ("M-\u{20ac}", "\x1b\u{20ac}".as_bytes()),
            ("Up", b"\x1b[A"),
            ("C-Up", b"\x1b[1;5A"),
            ("C-M-S-Left", b"\x1b[1;8D"),
            ("F1", b"\x1bOP"),
            ("S-F1", b"\x1b[1;2P"),
            ("F5", b"\x1b[15~"),
            ("M-F12", b"\x1b[24;3~"),
            ("PPage", b"\x1b[5~"),
            ("C-NPage", b"\x1b[6;5~"),
            ("IC", b"\x1b[2~"),
            ("DC", b"\x1b[3~"),
            ("Backspace", b"\x7f"),
            ("M-BSpace", b"\x1b\x7f"),
            ("a", b"a"),
            ("A", b"A"),
            ("S-a", b"A"),
            ("S-;", b":"),
            ("?", b"?"),
            ("-", b"-"),
            ("C-_", b"\x1f"),
            ("C-?", b"\x7f"),
            ("Space", b" "),
            ("\u{e9}", "\u{e9}".as_bytes()),
            ("KeyQ", b"q"),
            ("S-KeyQ", b"Q"),
            ("C-KeyQ", b"\x11"),
            ("ArrowLeft", b"\x1b[D"),
            ("KP5", b"5"),
            ("KP*", b"*"),
            ("KP.", b"."),
            ("Numpad7", b"7"),
            ("KPEnter", b"\r"),
        ];
        for (name, want) in cases {
            assert_eq!(bytes(name), *want, "{name}");
        }
    }

    #[test]
    fn unknown_names_are_refused() {
        for bad in ["", "Hyper-x", "F99", "F0", "Enterr", "C-", "KP10"] {
            assert!(parse_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_key_that_sends_nothing_in_any_mode_is_refused() {
        // [CLIENT.KEY.3]
        for silent in ["Unidentified", "C-M-Unidentified", "Fn"] {
            let err = parse_key(silent).expect_err(silent);
            assert!(err.contains("sends nothing"), "{silent}: {err}");
        }
        // A modifier key alone sends nothing in legacy mode but is reported under the kitty
        // keyboard protocol's report-all-keys flag: a program can ask for it.
        assert!(parse_key("ShiftLeft").is_ok());
    }

    #[test]
    fn events_carry_what_a_keyboard_reports() {
        // [CLIENT.KEY.1]
        // (name, key, mods, consumed, text, unshifted)
        let rows: &[(&str, PhysicalKey, ModSet, ModSet, &str, char)] = &[
            (
                "C-c",
                PhysicalKey::KEY_C,
                ModSet::CTRL,
                ModSet::NONE,
                "c",
                'c',
            ),
            (
                "!",
                PhysicalKey::DIGIT1,
                ModSet::SHIFT,
                ModSet::SHIFT,
                "!",
                '1',
            ),
            (
                "M-:",
                PhysicalKey::SEMICOLON,
                ModSet(ModSet::ALT.0 | ModSet::SHIFT.0),
                ModSet::SHIFT,
                ":",
                ';',
            ),
            (
                "S-a",
                PhysicalKey::KEY_A,
                ModSet::SHIFT,
                ModSet::SHIFT,
                "A",
                'a',
            ),
            (
                "M-\u{e9}",
                PhysicalKey::UNIDENTIFIED,
                ModSet::ALT,
                ModSet::NONE,
                "\u{e9}",
                '\u{e9}',
            ),
            (
                "Space",
                PhysicalKey::SPACE,
                ModSet::NONE,
                ModSet::NONE,
                " ",
                ' ',
            ),
            (
                "KeyZ",
                PhysicalKey::KEY_Z,
                ModSet::NONE,
                ModSet::NONE,
                "z",
                'z',
            ),
        ];
        for &(name, key, mods, consumed, text, unshifted) in rows {
            let e = parse_key(name).expect(name).0;
            assert_eq!(
                (e.key, e.mods, e.consumed_mods, e.text.as_deref()),
                (key, mods, consumed, Some(text)),
                "{name}"
            );
            assert_eq!(e.unshifted_codepoint, Some(u32::from(unshifted)), "{name}");
        }
        let up = parse_key("C-Up").expect("C-Up").0;
        assert_eq!(up.text, None);
    }
}
