//! The key table: what each physical key is, for encoding purposes.

use phux_proto::input::{ModSet, PhysicalKey};

/// What a physical key is, for encoding purposes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Enter,
    Tab,
    Backspace,
    Escape,
    /// `CSI X` / `SS3 X` (DECCKM) / `CSI 1;m X`; kitty `CSI 1;m X` too.
    Cursor {
        fin: u8,
        kitty_kp: Option<u32>,
    },
    /// `CSI n ~`; kitty the same (or a keypad code).
    Tilde {
        n: u16,
        kitty_kp: Option<u32>,
    },
    /// F1..=F25 (`n` 1-based).
    Function(u8),
    /// A keypad key: its text in numeric mode, `SS3 app` in DECKPAM, `kitty` code.
    Keypad {
        ch: Option<u8>,
        app: Option<u8>,
        kitty: Option<u32>,
    },
    /// Shift/Ctrl/Alt/Super and the lock keys: only reported by kitty's report-all-keys.
    Modifier {
        kitty: u32,
        bit: ModSet,
    },
    /// The Menu key: `CSI 29 ~` in legacy mode (xterm's), kitty's 57363 otherwise.
    Menu,
    /// Keys that only have a kitty code (PrintScreen, Pause, media keys).
    KittyOnly(u32),
    /// A text-producing key; `us` is its character in the US layout, if known.
    Text {
        us: Option<(char, char)>,
    },
    /// An unidentified or unknown key (R5), or a named key with no code anywhere (browser
    /// keys, power, ...): its text only, if any.
    NoCode,
}

pub(super) fn classify(key: PhysicalKey) -> Kind {
    use PhysicalKey as K;
    let cursor = |fin: u8| Kind::Cursor {
        fin,
        kitty_kp: None,
    };
    let tilde = |n: u16| Kind::Tilde { n, kitty_kp: None };
    let keypad =
        |ch: Option<u8>, app: Option<u8>, kitty: Option<u32>| Kind::Keypad { ch, app, kitty };
    let digit_row = [
        (K::DIGIT0, '0', ')'),
        (K::DIGIT1, '1', '!'),
        (K::DIGIT2, '2', '@'),
        (K::DIGIT3, '3', '#'),
        (K::DIGIT4, '4', '$'),
        (K::DIGIT5, '5', '%'),
        (K::DIGIT6, '6', '^'),
        (K::DIGIT7, '7', '&'),
        (K::DIGIT8, '8', '*'),
        (K::DIGIT9, '9', '('),
    ];
    if (K::KEY_A.0..=K::KEY_Z.0).contains(&key.0) {
        let c = char::from(b'a' + (key.0 - K::KEY_A.0) as u8);
        return Kind::Text {
            us: Some((c, c.to_ascii_uppercase())),
        };
    }
    if let Some((_, base, shifted)) = digit_row.iter().find(|(k, _, _)| *k == key) {
        return Kind::Text {
            us: Some((*base, *shifted)),
        };
    }
    if (K::NUMPAD0.0..=K::NUMPAD9.0).contains(&key.0) {
        let d = (key.0 - K::NUMPAD0.0) as u8;
        return keypad(Some(b'0' + d), Some(b'p' + d), Some(57399 + u32::from(d)));
    }
    if (K::F1.0..=K::F25.0).contains(&key.0) {
        return Kind::Function((key.0 - K::F1.0 + 1) as u8);
    }
    let text = |base: char, shifted: char| Kind::Text {
        us: Some((base, shifted)),
    };
    match key {
        K::BACKQUOTE => text('`', '~'),
        K::BACKSLASH => text('\\', '|'),
        K::BRACKET_LEFT => text('[', '{'),
        K::BRACKET_RIGHT => text(']', '}'),
        K::COMMA => text(',', '<'),
        K::EQUAL => text('=', '+'),
        K::MINUS => text('-', '_'),
        K::PERIOD => text('.', '>'),
        K::QUOTE => text('\'', '"'),
        K::SEMICOLON => text(';', ':'),
        K::SLASH => text('/', '?'),
        K::SPACE => text(' ', ' '),
        K::INTL_BACKSLASH | K::INTL_RO | K::INTL_YEN => Kind::Text { us: None },
        K::ENTER => Kind::Enter,
        K::TAB => Kind::Tab,
        K::BACKSPACE => Kind::Backspace,
        K::ESCAPE => Kind::Escape,
        K::ARROW_UP => cursor(b'A'),
        K::ARROW_DOWN => cursor(b'B'),
        K::ARROW_RIGHT => cursor(b'C'),
        K::ARROW_LEFT => cursor(b'D'),
        K::HOME => cursor(b'H'),
        K::END => cursor(b'F'),
        K::INSERT => tilde(2),
        K::DELETE => tilde(3),
        K::PAGE_UP => tilde(5),
        K::PAGE_DOWN => tilde(6),
        // The VT220 keypad (xterm ctlseqs "VT220-Style Function Keys" keypad table) and the
        // kitty KP_* codes.
        K::NUMPAD_ADD => keypad(Some(b'+'), Some(b'k'), Some(57413)),
        K::NUMPAD_SUBTRACT => keypad(Some(b'-'), Some(b'm'), Some(57412)),
        K::NUMPAD_MULTIPLY => keypad(Some(b'*'), Some(b'j'), Some(57411)),
        K::NUMPAD_DIVIDE => keypad(Some(b'/'), Some(b'o'), Some(57410)),
        K::NUMPAD_DECIMAL => keypad(Some(b'.'), Some(b'n'), Some(57409)),
        K::NUMPAD_COMMA | K::NUMPAD_SEPARATOR => keypad(Some(b','), Some(b'l'), Some(57416)),
        K::NUMPAD_EQUAL => keypad(Some(b'='), Some(b'X'), Some(57415)),
        K::NUMPAD_ENTER => keypad(Some(b'\r'), Some(b'M'), Some(57414)),
        K::NUMPAD_PAREN_LEFT => keypad(Some(b'('), None, None),
        K::NUMPAD_PAREN_RIGHT => keypad(Some(b')'), None, None),
        K::NUMPAD_UP => Kind::Cursor {
            fin: b'A',
            kitty_kp: Some(57419),
        },
        K::NUMPAD_DOWN => Kind::Cursor {
            fin: b'B',
            kitty_kp: Some(57420),
        },
        K::NUMPAD_RIGHT => Kind::Cursor {
            fin: b'C',
            kitty_kp: Some(57418),
        },
        K::NUMPAD_LEFT => Kind::Cursor {
            fin: b'D',
            kitty_kp: Some(57417),
        },
        K::NUMPAD_HOME => Kind::Cursor {
            fin: b'H',
            kitty_kp: Some(57423),
        },
        K::NUMPAD_END => Kind::Cursor {
            fin: b'F',
            kitty_kp: Some(57424),
        },
        // Kitty: KP_BEGIN is `CSI 1 E`; xterm's keypad 5 is `CSI E`.
        K::NUMPAD_BEGIN => cursor(b'E'),
        K::NUMPAD_INSERT => Kind::Tilde {
            n: 2,
            kitty_kp: Some(57425),
        },
        K::NUMPAD_DELETE => Kind::Tilde {
            n: 3,
            kitty_kp: Some(57426),
        },
        K::NUMPAD_PAGE_UP => Kind::Tilde {
            n: 5,
            kitty_kp: Some(57421),
        },
        K::NUMPAD_PAGE_DOWN => Kind::Tilde {
            n: 6,
            kitty_kp: Some(57422),
        },
        K::SHIFT_LEFT => Kind::Modifier {
            kitty: 57441,
            bit: ModSet::SHIFT,
        },
        K::CONTROL_LEFT => Kind::Modifier {
            kitty: 57442,
            bit: ModSet::CTRL,
        },
        K::ALT_LEFT => Kind::Modifier {
            kitty: 57443,
            bit: ModSet::ALT,
        },
        // W3C `MetaLeft` is the Windows / Command key: kitty's "super".
        K::META_LEFT => Kind::Modifier {
            kitty: 57444,
            bit: ModSet::SUPER,
        },
        K::SHIFT_RIGHT => Kind::Modifier {
            kitty: 57447,
            bit: ModSet::SHIFT,
        },
        K::CONTROL_RIGHT => Kind::Modifier {
            kitty: 57448,
            bit: ModSet::CTRL,
        },
        K::ALT_RIGHT => Kind::Modifier {
            kitty: 57449,
            bit: ModSet::ALT,
        },
        K::META_RIGHT => Kind::Modifier {
            kitty: 57450,
            bit: ModSet::SUPER,
        },
        // Lock keys report the lock state as it is, so the bit is left alone (NONE).
        K::CAPS_LOCK => Kind::Modifier {
            kitty: 57358,
            bit: ModSet::NONE,
        },
        K::NUM_LOCK => Kind::Modifier {
            kitty: 57360,
            bit: ModSet::NONE,
        },
        K::SCROLL_LOCK => Kind::KittyOnly(57359),
        K::PRINT_SCREEN => Kind::KittyOnly(57361),
        K::PAUSE => Kind::KittyOnly(57362),
        K::CONTEXT_MENU => Kind::Menu,
        K::MEDIA_PLAY_PAUSE => Kind::KittyOnly(57430),
        K::MEDIA_STOP => Kind::KittyOnly(57432),
        K::MEDIA_TRACK_NEXT => Kind::KittyOnly(57435),
        K::MEDIA_TRACK_PREVIOUS => Kind::KittyOnly(57436),
        K::AUDIO_VOLUME_DOWN => Kind::KittyOnly(57438),
        K::AUDIO_VOLUME_UP => Kind::KittyOnly(57439),
        K::AUDIO_VOLUME_MUTE => Kind::KittyOnly(57440),
        _ if key.0 <= PhysicalKey::MAX_KNOWN && key != K::UNIDENTIFIED => Kind::NoCode,
        // [INPUT.ENCODE.KEY.9] R5: an unknown value is an unidentified key: only its text (or
        // its unshifted code point under kitty) can be encoded.
        _ => Kind::NoCode,
    }
}

/// Whether `key` is one that produces text (letters, digits, punctuation, the keypad's
/// characters, unidentified keys) rather than a functional key.
#[cfg(test)]
pub(in crate::encoder) fn is_text_key(key: PhysicalKey) -> bool {
    match classify(key) {
        Kind::Text { .. } | Kind::NoCode => true,
        Kind::Keypad { ch, .. } => ch.is_some_and(|c| c != b'\r'),
        _ => false,
    }
}
