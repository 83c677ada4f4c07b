//! Keys: legacy xterm encoding (kitty flags 0) and the kitty keyboard protocol.
//!
//! Sources: xterm's ctlseqs ("PC-Style Function Keys", "VT220-Style Function Keys", the VT220
//! keypad table) for the legacy bytes; kitty's "Comprehensive keyboard handling in terminals"
//! (keyboard-protocol) for everything under non-zero flags.
//!
//! Choices the sources leave open, made here:
//! - F13-F24 in legacy mode use xterm's modified-F1..F12 scheme (the xterm terminfo `kf13`..
//!   `kf24` entries: F13 = Shift+F1 = `CSI 1;2P`, ..., F24 = Shift+F12 = `CSI 24;2~`) and F25 is
//!   Ctrl+F1 (`kf25` = `CSI 1;5P`); the key's own modifiers are added on top.
//! - An IME that is composing (`composing`) owns the key: nothing is written.
//! - Super is not encoded for legacy text keys (xterm has no byte for it); it is for functional
//!   keys (`CSI 1;9A`) and in kitty mode.
//! - Kitty encoding applies when any of disambiguate, report-event-types or report-all-keys is
//!   set; report-alternate-keys and report-associated-text alone change nothing (kitty: they
//!   only enhance keys already sent as escape codes).
//! - Control characters in `text` (which phux 0.8 forbids) are never written.

use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};

use crate::modes::{KittyFlags, TerminalModes};

const ESC: u8 = 0x1b;

/// Appends the PTY bytes for one key event to `out`.
pub fn encode_key(key: &KeyEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
    // An IME mid-composition has not produced input yet.
    if key.composing {
        return;
    }
    let flags = modes.kitty_flags;
    let kitty_mask =
        KittyFlags::DISAMBIGUATE | KittyFlags::REPORT_EVENT_TYPES | KittyFlags::REPORT_ALL_KEYS;
    if flags.0 & kitty_mask == 0 {
        legacy(key, modes, out);
    } else {
        kitty(key, modes, out);
    }
}

/// What a physical key is, for encoding purposes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
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
    /// Keys that only have a kitty code (PrintScreen, Pause, Menu, media keys).
    KittyOnly(u32),
    /// A text-producing key; `us` is its character in the US layout, if known.
    Text {
        us: Option<(char, char)>,
    },
    /// An unidentified or unknown key (R5), or a named key with no code anywhere (browser
    /// keys, power, ...): its text only, if any.
    NoCode,
}

fn classify(key: PhysicalKey) -> Kind {
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
        K::CONTEXT_MENU => Kind::KittyOnly(57363),
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
pub(super) fn is_text_key(key: PhysicalKey) -> bool {
    match classify(key) {
        Kind::Text { .. } | Kind::NoCode => true,
        Kind::Keypad { ch, .. } => ch.is_some_and(|c| c != b'\r'),
        _ => false,
    }
}

/// The xterm modifier parameter: 1 + shift 1 + alt 2 + ctrl 4 + super 8 (ctlseqs "PC-Style
/// Function Keys").
fn xterm_param(mods: ModSet) -> u32 {
    let mut bits = 0;
    if mods.contains(ModSet::SHIFT) {
        bits |= 1;
    }
    if mods.contains(ModSet::ALT) {
        bits |= 2;
    }
    if mods.contains(ModSet::CTRL) {
        bits |= 4;
    }
    if mods.contains(ModSet::SUPER) {
        bits |= 8;
    }
    1 + bits
}

/// The kitty modifier bits (without the `1 +`): shift 1, alt 2, ctrl 4, super 8, caps_lock
/// 64, num_lock 128. phux has no hyper or meta.
fn kitty_bits(mods: ModSet) -> u32 {
    let table = [
        (ModSet::SHIFT, 1),
        (ModSet::ALT, 2),
        (ModSet::CTRL, 4),
        (ModSet::SUPER, 8),
        (ModSet::CAPS_LOCK, 64),
        (ModSet::NUM_LOCK, 128),
    ];
    table
        .iter()
        .filter(|(bit, _)| mods.contains(*bit))
        .map(|(_, v)| v)
        .sum()
}

fn remove(mods: ModSet, bits: ModSet) -> ModSet {
    ModSet(mods.0 & !bits.0)
}

pub(super) fn push_decimal(out: &mut Vec<u8>, mut n: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// The key's text without control characters (phux 0.8 forbids them in `text`; a client that
/// sends them anyway must not smuggle escape sequences through a key).
fn clean_text(key: &KeyEvent) -> Option<&str> {
    let text = key.text.as_deref()?;
    if text.is_empty() || text.chars().any(char::is_control) {
        return None;
    }
    Some(text)
}

fn single_char(s: &str) -> Option<char> {
    let mut it = s.chars();
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

fn printable(cp: u32) -> Option<char> {
    char::from_u32(cp).filter(|c| !c.is_control())
}

/// Ctrl + key as a C0 byte, per xterm / kitty's "Legacy ctrl mapping of ASCII keys" table;
/// `None` for keys Ctrl leaves untouched.
fn ctrl_byte(c: char) -> Option<u8> {
    let b = u8::try_from(u32::from(c)).ok()?;
    match b {
        b'a'..=b'z' => Some(b - b'a' + 1),
        b'A'..=b'Z' => Some(b - b'A' + 1),
        b' ' | b'@' | b'2' => Some(0x00),
        b'[' | b'3' => Some(0x1b),
        b'\\' | b'4' => Some(0x1c),
        b']' | b'5' => Some(0x1d),
        b'^' | b'~' | b'6' => Some(0x1e),
        // xterm sends US for Ctrl+- on a US layout, as for Ctrl+_ ([INPUT.ENCODE.KEY.4]).
        b'_' | b'-' | b'/' | b'7' => Some(0x1f),
        b'?' | b'8' => Some(0x7f),
        _ => None,
    }
}

/// The character a text key produces without relying on `text`: the client's unshifted code
/// point, else the US-layout character of the physical key; shifted when Shift is held.
fn derived_char(key: &KeyEvent, us: Option<(char, char)>, shift: bool) -> Option<char> {
    if let Some(c) = key.unshifted_codepoint.and_then(printable) {
        if shift {
            let mut up = c.to_uppercase();
            if let (Some(u), None) = (up.next(), up.next()) {
                return Some(u);
            }
        }
        return Some(c);
    }
    us.map(|(base, shifted)| if shift { shifted } else { base })
}

// ---------------------------------------------------------------------------------------------
// Legacy (xterm) encoding

fn legacy(key: &KeyEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
    // [INPUT.ENCODE.KEY.2] Legacy encoding has no release events; a repeat is a press.
    if key.action == KeyAction::Release {
        return;
    }
    let mods = key.mods;
    let alt = mods.contains(ModSet::ALT);
    let ctrl = mods.contains(ModSet::CTRL);
    let shift = mods.contains(ModSet::SHIFT);
    let alt_prefix = |out: &mut Vec<u8>| {
        if alt {
            out.push(ESC);
        }
    };
    match classify(key.key) {
        // [INPUT.ENCODE.KEY.3] Enter is CR, CR LF under LNM; Alt prefixes ESC.
        Kind::Enter => {
            alt_prefix(out);
            push_enter(modes, out);
        }
        // [INPUT.ENCODE.KEY.4] Tab is HT, Shift+Tab is CSI Z.
        Kind::Tab => {
            alt_prefix(out);
            if shift {
                out.extend_from_slice(b"\x1b[Z");
            } else {
                out.push(b'\t');
            }
        }
        // [INPUT.ENCODE.KEY.5] Backspace is DEL, or BS under DECBKM; Ctrl swaps the two.
        Kind::Backspace => {
            alt_prefix(out);
            out.push(backspace_byte(modes, ctrl));
        }
        Kind::Escape => {
            alt_prefix(out);
            out.push(ESC);
        }
        // [INPUT.ENCODE.KEY.6] Cursor keys: CSI X, SS3 X under DECCKM, CSI 1;m X modified.
        Kind::Cursor { fin, .. } => push_cursor(out, fin, xterm_param(mods), modes),
        // [INPUT.ENCODE.KEY.7] Editing keys: CSI n ~, CSI n;m ~ modified.
        Kind::Tilde { n, .. } => push_tilde(out, u32::from(n), xterm_param(mods)),
        Kind::Function(n) => legacy_function(out, n, mods),
        // [INPUT.ENCODE.KEY.8] The keypad: its text in numeric mode, the VT220 SS3 codes in
        // application mode (DECKPAM).
        Kind::Keypad { ch, app, .. } => {
            if modes.application_keypad
                && let Some(app) = app
            {
                out.extend_from_slice(&[ESC, b'O', app]);
                return;
            }
            if ch == Some(b'\r') {
                push_enter(modes, out);
            } else if let Some(text) = clean_text(key) {
                out.extend_from_slice(text.as_bytes());
            } else if let Some(ch) = ch {
                out.push(ch);
            }
        }
        Kind::Modifier { .. } | Kind::KittyOnly(_) => {}
        Kind::Text { us } => legacy_text(key, us, true, out),
        // [INPUT.ENCODE.KEY.9] A key without a code writes its text, and nothing without one.
        Kind::NoCode => {
            if clean_text(key).is_some() {
                legacy_text(key, None, false, out);
            }
        }
    }
}

fn push_enter(modes: &TerminalModes, out: &mut Vec<u8>) {
    if modes.line_feed_mode {
        out.extend_from_slice(b"\r\n");
    } else {
        out.push(b'\r');
    }
}

fn backspace_byte(modes: &TerminalModes, ctrl: bool) -> u8 {
    if modes.backarrow_sends_backspace == ctrl {
        0x7f
    } else {
        0x08
    }
}

fn push_cursor(out: &mut Vec<u8>, fin: u8, param: u32, modes: &TerminalModes) {
    if param > 1 {
        out.extend_from_slice(b"\x1b[1;");
        push_decimal(out, param);
        out.push(fin);
    } else if modes.application_cursor_keys {
        out.extend_from_slice(&[ESC, b'O', fin]);
    } else {
        out.extend_from_slice(&[ESC, b'[', fin]);
    }
}

fn push_tilde(out: &mut Vec<u8>, n: u32, param: u32) {
    out.extend_from_slice(b"\x1b[");
    push_decimal(out, n);
    if param > 1 {
        out.push(b';');
        push_decimal(out, param);
    }
    out.push(b'~');
}

/// F1..=F25 per xterm: F1-F4 `SS3 P..S` (`CSI 1;m P..S` modified), F5-F12 VT220 `CSI n ~`,
/// F13-F24 as Shift+F1..F12, F25 as Ctrl+F1.
fn legacy_function(out: &mut Vec<u8>, n: u8, mods: ModSet) {
    let (base, extra) = match n {
        1..=12 => (n, ModSet::NONE),
        13..=24 => (n - 12, ModSet::SHIFT),
        _ => (1, ModSet::CTRL),
    };
    let param = xterm_param(mods | extra);
    match base {
        1..=4 => {
            let fin = b'P' + (base - 1);
            if param > 1 {
                out.extend_from_slice(b"\x1b[1;");
                push_decimal(out, param);
                out.push(fin);
            } else {
                out.extend_from_slice(&[ESC, b'O', fin]);
            }
        }
        _ => push_tilde(out, u32::from(fkey_tilde(base)), param),
    }
}

/// The VT220 `CSI n ~` number of F5..=F12 (ctlseqs "VT220-Style Function Keys").
fn fkey_tilde(n: u8) -> u16 {
    match n {
        5 => 15,
        6 => 17,
        7 => 18,
        8 => 19,
        9 => 20,
        10 => 21,
        11 => 23,
        _ => 24,
    }
}

fn legacy_text(key: &KeyEvent, us: Option<(char, char)>, derive: bool, out: &mut Vec<u8>) {
    // Modifiers the platform consumed to produce `text` (Option on macOS) are not applied
    // again.
    let eff = remove(key.mods, key.consumed_mods);
    let ctrl = eff.contains(ModSet::CTRL);
    let alt = eff.contains(ModSet::ALT);
    let shift = key.mods.contains(ModSet::SHIFT);
    let text = clean_text(key);
    if ctrl {
        // [INPUT.ENCODE.KEY.10] Ctrl maps a key to its C0 byte (Ctrl+@..Ctrl+_, Ctrl+Space
        // NUL, Ctrl+? DEL); the produced text is tried first, then the unshifted code point,
        // then the US-layout key, so Ctrl+C works on any layout.
        let candidates = [
            text.and_then(single_char),
            key.unshifted_codepoint.and_then(printable),
            us.map(|(base, _)| base),
        ];
        if let Some(byte) = candidates.into_iter().flatten().find_map(ctrl_byte) {
            if alt {
                out.push(ESC);
            }
            out.push(byte);
            return;
        }
    }
    // [INPUT.ENCODE.KEY.1] Text keys write their text; [INPUT.ENCODE.KEY.5] Alt/Meta
    // prefixes ESC.
    if let Some(text) = text {
        if alt {
            out.push(ESC);
        }
        out.extend_from_slice(text.as_bytes());
    } else if let Some(c) = derived_char(key, us, shift).filter(|_| derive) {
        if alt {
            out.push(ESC);
        }
        push_char(out, c);
    }
}

// ---------------------------------------------------------------------------------------------
// Kitty keyboard protocol

/// One `CSI ... u/~/letter` sequence under construction.
struct KittySeq {
    /// `unicode-key-code` (or the `~` number; 1 for letter forms).
    code: u32,
    shifted: Option<u32>,
    base: Option<u32>,
    /// The modifier bits (without the `1 +`).
    mods: u32,
    /// 1 press, 2 repeat, 3 release; only written when event types are reported.
    event: u32,
    report_event: bool,
    text: Option<String>,
    fin: u8,
}

impl KittySeq {
    fn write(&self, out: &mut Vec<u8>) {
        let letter = self.fin != b'u' && self.fin != b'~';
        let has_event = self.report_event && self.event != 1;
        let has_mods = self.mods != 0 || has_event;
        let has_text = self.text.as_ref().is_some_and(|t| !t.is_empty());
        out.extend_from_slice(b"\x1b[");
        // Kitty: "CSI 1 letter" omits the 1 when there are no other parameters.
        if !(letter && !has_mods && !has_text) {
            push_decimal(out, self.code);
        }
        if self.shifted.is_some() || self.base.is_some() {
            out.push(b':');
            if let Some(s) = self.shifted {
                push_decimal(out, s);
            }
            if let Some(b) = self.base {
                out.push(b':');
                push_decimal(out, b);
            }
        }
        if has_mods || has_text {
            out.push(b';');
            if has_mods {
                push_decimal(out, 1 + self.mods);
                if has_event {
                    out.push(b':');
                    push_decimal(out, self.event);
                }
            }
        }
        if let Some(text) = self.text.as_deref().filter(|t| !t.is_empty()) {
            out.push(b';');
            for (i, c) in text.chars().enumerate() {
                if i > 0 {
                    out.push(b':');
                }
                push_decimal(out, u32::from(c));
            }
        }
        out.push(self.fin);
    }
}

fn kitty(key: &KeyEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
    let flags = modes.kitty_flags;
    let report_events = flags.has(KittyFlags::REPORT_EVENT_TYPES);
    let report_all = flags.has(KittyFlags::REPORT_ALL_KEYS);
    let alternates = flags.has(KittyFlags::REPORT_ALTERNATE_KEYS);
    // Kitty: associated text is an enhancement of report-all-keys, undefined without it.
    let assoc = report_all && flags.has(KittyFlags::REPORT_ASSOCIATED_TEXT);
    // [INPUT.ENCODE.KITTY.2] Releases are reported only with report-event-types; without
    // it a repeat is a press.
    if key.action == KeyAction::Release && !report_events {
        return;
    }
    let event = match key.action {
        KeyAction::Press => 1,
        KeyAction::Repeat => 2,
        KeyAction::Release => 3,
    };
    let release = key.action == KeyAction::Release;
    // Alt/Ctrl/Super that the platform consumed to produce the text are not reported (kitty:
    // "option+a -> CSI 97;;229u"); Shift is, so shift+a stays distinguishable.
    let eff = remove(key.mods, remove(key.consumed_mods, ModSet::SHIFT));
    let action_mods = ModSet::CTRL | ModSet::ALT | ModSet::SUPER;
    let no_action_mods = eff.0 & action_mods.0 == 0;
    let no_mods = no_action_mods && !eff.contains(ModSet::SHIFT);
    let mut seq = KittySeq {
        code: 0,
        shifted: None,
        base: None,
        mods: kitty_bits(eff),
        event,
        report_event: report_events,
        text: None,
        fin: b'u',
    };
    let text = clean_text(key);
    match classify(key.key) {
        kind @ (Kind::Enter | Kind::Tab | Kind::Backspace) => {
            // [INPUT.ENCODE.KITTY.3] Without report-all-keys, unmodified Enter, Tab and
            // Backspace keep their legacy bytes and have no release events.
            if !report_all && no_mods {
                if !release {
                    match kind {
                        Kind::Enter => push_enter(modes, out),
                        Kind::Tab => out.push(b'\t'),
                        _ => out.push(backspace_byte(modes, false)),
                    }
                }
                return;
            }
            seq.code = match kind {
                Kind::Enter => 13,
                Kind::Tab => 9,
                _ => 127,
            };
        }
        Kind::Escape => seq.code = 27,
        Kind::Cursor { fin, kitty_kp } => {
            if let Some(code) = kitty_kp {
                seq.code = code;
            } else {
                seq.code = 1;
                seq.fin = fin;
            }
        }
        Kind::Tilde { n, kitty_kp } => {
            if let Some(code) = kitty_kp {
                seq.code = code;
            } else {
                seq.code = u32::from(n);
                seq.fin = b'~';
            }
        }
        // [INPUT.ENCODE.KITTY.4] F1, F2, F4 are CSI 1 P/Q/S; F3 is CSI 13 ~ (CSI R would
        // collide with a cursor position report); F5-F12 are ~ numbers; F13+ are 57376+.
        Kind::Function(n) => match n {
            1 | 2 | 4 => {
                seq.code = 1;
                seq.fin = b'P' + (n - 1);
            }
            3 => {
                seq.code = 13;
                seq.fin = b'~';
            }
            5..=12 => {
                seq.code = u32::from(fkey_tilde(n));
                seq.fin = b'~';
            }
            _ => seq.code = 57376 + u32::from(n - 13),
        },
        // [INPUT.ENCODE.KITTY.5] Keypad keys that produce text send it (unless every key is
        // reported); the others are their own KP_* codes.
        Kind::Keypad { kitty: code, .. } => {
            if !report_all
                && !release
                && no_action_mods
                && let Some(text) = text
            {
                out.extend_from_slice(text.as_bytes());
                return;
            }
            let Some(code) = code else {
                // Keypad parentheses have no kitty code: they are text keys.
                let ctx = TextCtx {
                    report_all,
                    assoc,
                    alternates,
                    derive: true,
                };
                return kitty_text_key(key, None, &mut seq, ctx, out);
            };
            seq.code = code;
            if !report_all {
                seq.mods &= !(64 | 128);
            }
        }
        // [INPUT.ENCODE.KITTY.6] Modifier and lock keys are reported only with
        // report-all-keys; the key's own bit reflects the state after this event.
        Kind::Modifier { kitty: code, bit } => {
            if !report_all {
                return;
            }
            seq.code = code;
            let own = kitty_bits(bit);
            if release {
                seq.mods &= !own;
            } else {
                seq.mods |= own;
            }
        }
        Kind::KittyOnly(code) => seq.code = code,
        Kind::Text { us } => {
            let ctx = TextCtx {
                report_all,
                assoc,
                alternates,
                derive: true,
            };
            return kitty_text_key(key, us, &mut seq, ctx, out);
        }
        Kind::NoCode => {
            let ctx = TextCtx {
                report_all,
                assoc,
                alternates,
                derive: false,
            };
            return kitty_text_key(key, None, &mut seq, ctx, out);
        }
    }
    // Text belongs to text keys; a functional key carries none.
    seq.write(out);
}

/// The kitty flags that shape a text key, and whether a character may be derived for it.
#[derive(Clone, Copy)]
struct TextCtx {
    report_all: bool,
    assoc: bool,
    alternates: bool,
    derive: bool,
}

fn kitty_text_key(
    key: &KeyEvent,
    us: Option<(char, char)>,
    seq: &mut KittySeq,
    ctx: TextCtx,
    out: &mut Vec<u8>,
) {
    let TextCtx {
        report_all,
        assoc,
        alternates,
        derive,
    } = ctx;
    let eff_action = seq.mods & (2 | 4 | 8) != 0;
    let release = key.action == KeyAction::Release;
    let text = clean_text(key);
    // [INPUT.ENCODE.KITTY.7] Without report-all-keys a text key with no Alt/Ctrl/Super sends
    // its text as UTF-8, as in legacy mode (releases, having no text, are escape codes).
    if !report_all && !eff_action && !release {
        if let Some(text) = text {
            out.extend_from_slice(text.as_bytes());
        } else if derive && let Some(c) = derived_char(key, us, key.mods.contains(ModSet::SHIFT)) {
            push_char(out, c);
        }
        return;
    }
    // [INPUT.ENCODE.KITTY.8] The key code is the unshifted (lower-case) code point; 0 when no
    // key is known for the text.
    let unshifted = key
        .unshifted_codepoint
        .and_then(printable)
        .or(us.map(|(base, _)| base))
        .or_else(|| text.and_then(single_char).filter(|_| derive));
    let code = unshifted.map(lower);
    seq.code = code.map_or(0, u32::from);
    if seq.code == 0 && text.is_none() {
        // Nothing identifies this key (R5): there is nothing to report.
        return;
    }
    // Kitty drops the lock modifiers only from a key it sends as its text (above); a text key
    // that has become an escape code (Ctrl, Alt, Super, a release, report-all) carries them.
    // [INPUT.ENCODE.KITTY.9] Alternate keys: the shifted key (only with Shift) and the
    // base-layout (US PC-101) key, each only when it differs from the key code.
    if alternates && let Some(code) = code {
        if seq.mods & 1 != 0 {
            let shifted = text
                .and_then(single_char)
                .filter(|c| *c != code)
                .or_else(|| upper(code).filter(|c| *c != code));
            seq.shifted = shifted.map(u32::from);
        }
        seq.base = us
            .map(|(base, _)| base)
            .filter(|b| *b != code)
            .map(u32::from);
    }
    // [INPUT.ENCODE.KITTY.9] Associated text (report-all-keys + report-associated-text) as
    // code points in the third field; releases carry none.
    if assoc && !release {
        seq.text = text.map(str::to_owned);
    }
    seq.write(out);
}

fn lower(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

fn upper(c: char) -> Option<char> {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => Some(u),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PhysicalKey as K;

    const S: ModSet = ModSet::SHIFT;
    const C: ModSet = ModSet::CTRL;
    const A: ModSet = ModSet::ALT;
    const N: ModSet = ModSet::NONE;

    fn press(key: PhysicalKey, mods: ModSet) -> KeyEvent {
        KeyEvent::press(key, mods)
    }

    fn with_text(key: PhysicalKey, mods: ModSet, text: &str) -> KeyEvent {
        KeyEvent {
            text: Some(text.to_owned()),
            ..KeyEvent::press(key, mods)
        }
    }

    fn action(mut ev: KeyEvent, action: KeyAction) -> KeyEvent {
        ev.action = action;
        ev
    }

    fn enc(ev: &KeyEvent, modes: &TerminalModes) -> Vec<u8> {
        let mut out = Vec::new();
        encode_key(ev, modes, &mut out);
        out
    }

    fn kitty(flags: u8) -> TerminalModes {
        TerminalModes {
            kitty_flags: KittyFlags(flags),
            ..TerminalModes::default()
        }
    }

    fn check(table: &[(KeyEvent, &[u8])], modes: &TerminalModes) {
        for (ev, want) in table {
            let got = enc(ev, modes);
            assert_eq!(
                got,
                *want,
                "{ev:?} under {modes:?}: got {:?}, want {:?}",
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(want)
            );
        }
    }

    // xterm ctlseqs "PC-Style Function Keys" (cursor keys, Home/End, the modifier parameter
    // table: 2 Shift, 3 Alt, 4 Shift+Alt, 5 Ctrl, 6 Shift+Ctrl, 7 Alt+Ctrl, 8 Shift+Alt+Ctrl,
    // 9 Meta) and "VT220-Style Function Keys" (Insert 2~, Delete 3~, PageUp 5~, PageDown 6~,
    // F1-F4 SS3 P..S, F5-F12 15~ 17~ 18~ 19~ 20~ 21~ 23~ 24~).
    // [INPUT.ENCODE.KEY.6] [INPUT.ENCODE.KEY.7]
    #[test]
    fn xterm_function_keys() {
        #[rustfmt::skip]
        let normal: &[(KeyEvent, &[u8])] = &[
            (press(K::ARROW_UP, N), b"\x1b[A"),
            (press(K::ARROW_DOWN, N), b"\x1b[B"),
            (press(K::ARROW_RIGHT, N), b"\x1b[C"),
            (press(K::ARROW_LEFT, N), b"\x1b[D"),
            (press(K::HOME, N), b"\x1b[H"),
            (press(K::END, N), b"\x1b[F"),
            (press(K::ARROW_UP, S), b"\x1b[1;2A"),
            (press(K::ARROW_UP, A), b"\x1b[1;3A"),
            (press(K::ARROW_UP, S | A), b"\x1b[1;4A"),
            (press(K::ARROW_UP, C), b"\x1b[1;5A"),
            (press(K::ARROW_UP, S | C), b"\x1b[1;6A"),
            (press(K::ARROW_UP, A | C), b"\x1b[1;7A"),
            (press(K::ARROW_UP, S | A | C), b"\x1b[1;8A"),
            (press(K::ARROW_UP, ModSet::SUPER), b"\x1b[1;9A"),
            (press(K::END, C), b"\x1b[1;5F"),
            (press(K::INSERT, N), b"\x1b[2~"),
            (press(K::DELETE, N), b"\x1b[3~"),
            (press(K::PAGE_UP, N), b"\x1b[5~"),
            (press(K::PAGE_DOWN, N), b"\x1b[6~"),
            (press(K::DELETE, S), b"\x1b[3;2~"),
            (press(K::PAGE_DOWN, C), b"\x1b[6;5~"),
            (press(K::F1, N), b"\x1bOP"),
            (press(K::F2, N), b"\x1bOQ"),
            (press(K::F3, N), b"\x1bOR"),
            (press(K::F4, N), b"\x1bOS"),
            (press(K::F1, S), b"\x1b[1;2P"),
            (press(K::F4, C), b"\x1b[1;5S"),
            (press(K::F5, N), b"\x1b[15~"),
            (press(K::F6, N), b"\x1b[17~"),
            (press(K::F7, N), b"\x1b[18~"),
            (press(K::F8, N), b"\x1b[19~"),
            (press(K::F9, N), b"\x1b[20~"),
            (press(K::F10, N), b"\x1b[21~"),
            (press(K::F11, N), b"\x1b[23~"),
            (press(K::F12, N), b"\x1b[24~"),
            (press(K::F5, S), b"\x1b[15;2~"),
            (press(K::F12, A | C), b"\x1b[24;7~"),
            // F13-F24: xterm terminfo kf13..kf24 = Shift+F1..F12; kf25 = Ctrl+F1.
            (press(K::F13, N), b"\x1b[1;2P"),
            (press(K::F16, N), b"\x1b[1;2S"),
            (press(K::F17, N), b"\x1b[15;2~"),
            (press(K::F24, N), b"\x1b[24;2~"),
            (press(K::F25, N), b"\x1b[1;5P"),
            (press(K::F13, C), b"\x1b[1;6P"),
            // Numpad navigation keys are their main-block twins in legacy mode.
            (press(K::NUMPAD_UP, N), b"\x1b[A"),
            (press(K::NUMPAD_BEGIN, N), b"\x1b[E"),
            (press(K::NUMPAD_PAGE_UP, N), b"\x1b[5~"),
        ];
        check(normal, &TerminalModes::default());
        // DECCKM: SS3 for unmodified cursor keys only.
        let app = TerminalModes {
            application_cursor_keys: true,
            ..TerminalModes::default()
        };
        #[rustfmt::skip]
        let app_table: &[(KeyEvent, &[u8])] = &[
            (press(K::ARROW_UP, N), b"\x1bOA"),
            (press(K::ARROW_DOWN, N), b"\x1bOB"),
            (press(K::ARROW_RIGHT, N), b"\x1bOC"),
            (press(K::ARROW_LEFT, N), b"\x1bOD"),
            (press(K::HOME, N), b"\x1bOH"),
            (press(K::END, N), b"\x1bOF"),
            (press(K::ARROW_UP, C), b"\x1b[1;5A"),
            (press(K::INSERT, N), b"\x1b[2~"),
        ];
        check(app_table, &app);
    }

    // kitty keyboard-protocol "Legacy functional keys", C0 controls table (Enter, Escape,
    // Backspace, Tab, Space under no mods / Ctrl / Alt / Shift / Ctrl+Shift / Alt+Shift /
    // Ctrl+Alt), which is xterm's behaviour too.
    // [INPUT.ENCODE.KEY.3] [INPUT.ENCODE.KEY.4] [INPUT.ENCODE.KEY.5]
    #[test]
    fn c0_control_keys() {
        let mods = [N, C, A, S, C | S, A | S, C | A];
        #[rustfmt::skip]
        let table: &[(PhysicalKey, [&[u8]; 7])] = &[
            (K::ENTER, [b"\r", b"\r", b"\x1b\r", b"\r", b"\r", b"\x1b\r", b"\x1b\r"]),
            (K::ESCAPE, [b"\x1b", b"\x1b", b"\x1b\x1b", b"\x1b", b"\x1b", b"\x1b\x1b", b"\x1b\x1b"]),
            (K::BACKSPACE, [b"\x7f", b"\x08", b"\x1b\x7f", b"\x7f", b"\x08", b"\x1b\x7f", b"\x1b\x08"]),
            (K::TAB, [b"\t", b"\t", b"\x1b\t", b"\x1b[Z", b"\x1b[Z", b"\x1b\x1b[Z", b"\x1b\t"]),
            (K::SPACE, [b" ", b"\x00", b"\x1b ", b" ", b"\x00", b"\x1b ", b"\x1b\x00"]),
        ];
        for (key, wants) in table {
            for (m, want) in mods.iter().zip(wants) {
                let text = if *key == K::SPACE { Some(" ") } else { None };
                let ev = KeyEvent {
                    text: text.map(str::to_owned),
                    ..press(*key, *m)
                };
                assert_eq!(enc(&ev, &TerminalModes::default()), *want, "{key} {m:?}");
            }
        }
        // LNM: Enter is CR LF; DECBKM: Backspace is BS and Ctrl+Backspace DEL.
        let lnm = TerminalModes {
            line_feed_mode: true,
            ..TerminalModes::default()
        };
        assert_eq!(enc(&press(K::ENTER, N), &lnm), b"\r\n");
        let bkm = TerminalModes {
            backarrow_sends_backspace: true,
            ..TerminalModes::default()
        };
        assert_eq!(enc(&press(K::BACKSPACE, N), &bkm), b"\x08");
        assert_eq!(enc(&press(K::BACKSPACE, C), &bkm), b"\x7f");
    }

    // kitty keyboard-protocol "Legacy text keys" example table (plain, shift, alt, shift+alt)
    // and the "Legacy ctrl mapping of ASCII keys" table.
    // [INPUT.ENCODE.KEY.1] [INPUT.ENCODE.KEY.10] [INPUT.ENCODE.KEY.5]
    #[test]
    fn legacy_text_and_ctrl() {
        let d = TerminalModes::default();
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (with_text(K::KEY_I, N, "i"), b"i"),
            (with_text(K::KEY_I, S, "I"), b"I"),
            (with_text(K::KEY_I, A, "i"), b"\x1bi"),
            (with_text(K::KEY_I, S | A, "I"), b"\x1bI"),
            (with_text(K::DIGIT3, S, "#"), b"#"),
            (with_text(K::DIGIT3, A, "3"), b"\x1b3"),
            (with_text(K::SEMICOLON, S, ":"), b":"),
            (with_text(K::SEMICOLON, S | A, ":"), b"\x1b:"),
            // Ctrl mapping: letters to 1..26, and the ASCII table's others.
            (press(K::KEY_A, C), b"\x01"),
            (press(K::KEY_C, C), b"\x03"),
            (press(K::KEY_Z, C), b"\x1a"),
            (with_text(K::KEY_A, C | S, "A"), b"\x01"),
            (press(K::KEY_C, C | A), b"\x1b\x03"),
            (press(K::DIGIT2, C), b"\x00"),
            (with_text(K::DIGIT2, C | S, "@"), b"\x00"),
            (press(K::DIGIT3, C), b"\x1b"),
            (press(K::BRACKET_LEFT, C), b"\x1b"),
            (press(K::BACKSLASH, C), b"\x1c"),
            (press(K::BRACKET_RIGHT, C), b"\x1d"),
            (with_text(K::DIGIT6, C | S, "^"), b"\x1e"),
            (with_text(K::MINUS, C | S, "_"), b"\x1f"),
            (press(K::SLASH, C), b"\x1f"),
            (with_text(K::SLASH, C | S, "?"), b"\x7f"),
            (press(K::DIGIT8, C), b"\x7f"),
            // Ctrl leaves keys outside the table untouched.
            (with_text(K::DIGIT1, C, "1"), b"1"),
            (with_text(K::DIGIT9, C, "9"), b"9"),
            // Ctrl+C on a Cyrillic layout still maps through the physical key.
            (KeyEvent { unshifted_codepoint: Some(0x0441), ..with_text(K::KEY_C, C, "с") }, b"\x03"),
            // No text: derived from the US layout, shifted under Shift.
            (press(K::KEY_Q, N), b"q"),
            (press(K::KEY_Q, S), b"Q"),
            (press(K::DIGIT1, S), b"!"),
            (press(K::KEY_Q, A), b"\x1bq"),
            // Option consumed to make the text (macOS): no ESC prefix.
            (KeyEvent { consumed_mods: A, ..with_text(K::KEY_A, A, "å") }, "å".as_bytes()),
            // Super has no legacy byte: the text alone.
            (with_text(K::KEY_A, ModSet::SUPER, "a"), b"a"),
            // Multi-code-point text passes through.
            (with_text(K::KEY_E, N, "é́"), "é́".as_bytes()),
        ];
        check(table, &d);
    }

    // xterm ctlseqs, VT220 keypad table: numeric mode sends the characters, application
    // mode (DECKPAM) SS3 p..y, SS3 M (Enter), k + , m - , j * , o / , n . , l , , X =.
    // [INPUT.ENCODE.KEY.8]
    #[test]
    fn keypad() {
        let numeric = TerminalModes::default();
        let app = TerminalModes {
            application_keypad: true,
            ..TerminalModes::default()
        };
        #[rustfmt::skip]
        let table: &[(PhysicalKey, &[u8], &[u8])] = &[
            (K::NUMPAD0, b"0", b"\x1bOp"),
            (K::NUMPAD1, b"1", b"\x1bOq"),
            (K::NUMPAD5, b"5", b"\x1bOu"),
            (K::NUMPAD9, b"9", b"\x1bOy"),
            (K::NUMPAD_ENTER, b"\r", b"\x1bOM"),
            (K::NUMPAD_ADD, b"+", b"\x1bOk"),
            (K::NUMPAD_SUBTRACT, b"-", b"\x1bOm"),
            (K::NUMPAD_MULTIPLY, b"*", b"\x1bOj"),
            (K::NUMPAD_DIVIDE, b"/", b"\x1bOo"),
            (K::NUMPAD_DECIMAL, b".", b"\x1bOn"),
            (K::NUMPAD_SEPARATOR, b",", b"\x1bOl"),
            (K::NUMPAD_EQUAL, b"=", b"\x1bOX"),
        ];
        for (key, num, appl) in table {
            assert_eq!(enc(&press(*key, N), &numeric), *num, "{key}");
            assert_eq!(enc(&press(*key, N), &app), *appl, "{key}");
        }
        // Numeric mode prefers the key's own text (a locale's decimal comma).
        assert_eq!(enc(&with_text(K::NUMPAD_DECIMAL, N, ","), &numeric), b",");
        let lnm = TerminalModes {
            line_feed_mode: true,
            ..TerminalModes::default()
        };
        assert_eq!(enc(&press(K::NUMPAD_ENTER, N), &lnm), b"\r\n");
    }

    // [INPUT.ENCODE.KEY.2] [INPUT.ENCODE.KEY.9] Releases, composition, R5 unknown keys.
    #[test]
    fn legacy_silences() {
        let d = TerminalModes::default();
        assert_eq!(
            enc(&action(with_text(K::KEY_A, N, "a"), KeyAction::Release), &d),
            b""
        );
        assert_eq!(
            enc(&action(with_text(K::KEY_A, N, "a"), KeyAction::Repeat), &d),
            b"a"
        );
        let composing = KeyEvent {
            composing: true,
            ..with_text(K::KEY_A, N, "a")
        };
        assert_eq!(enc(&composing, &d), b"");
        for key in [K::UNIDENTIFIED, PhysicalKey(999), PhysicalKey(u32::MAX)] {
            assert_eq!(enc(&press(key, N), &d), b"", "{key}");
            let with_cp = KeyEvent {
                unshifted_codepoint: Some(u32::from('x')),
                ..press(key, N)
            };
            assert_eq!(enc(&with_cp, &d), b"", "{key}");
            assert_eq!(enc(&with_text(key, N, "ü"), &d), "ü".as_bytes(), "{key}");
        }
        // Modifier keys, lock keys and keys with no legacy code write nothing.
        for key in [
            K::SHIFT_LEFT,
            K::CONTROL_RIGHT,
            K::CAPS_LOCK,
            K::PRINT_SCREEN,
            K::MEDIA_PLAY_PAUSE,
            K::BROWSER_BACK,
        ] {
            assert_eq!(enc(&press(key, N), &d), b"", "{key}");
        }
        // Control characters in text never reach the PTY.
        assert_eq!(enc(&with_text(K::KEY_A, N, "\x1b[31m"), &d), b"a");
        assert_eq!(enc(&with_text(K::UNIDENTIFIED, N, "\x03"), &d), b"");
    }

    // kitty keyboard-protocol "Disambiguate escape codes" and the "Functional key
    // definitions" table. [INPUT.ENCODE.KITTY.1] [INPUT.ENCODE.KITTY.4]
    #[test]
    fn kitty_disambiguate() {
        let m = kitty(0b1);
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (press(K::ESCAPE, N), b"\x1b[27u"),
            (press(K::ESCAPE, S), b"\x1b[27;2u"),
            // Enter, Tab, Backspace keep their legacy bytes when unmodified...
            (press(K::ENTER, N), b"\r"),
            (press(K::TAB, N), b"\t"),
            (press(K::BACKSPACE, N), b"\x7f"),
            // ...and are CSI u with modifiers.
            (press(K::ENTER, S), b"\x1b[13;2u"),
            (press(K::TAB, S), b"\x1b[9;2u"),
            (press(K::TAB, C | S), b"\x1b[9;6u"),
            (press(K::BACKSPACE, C), b"\x1b[127;5u"),
            // Text keys: plain text unless Alt / Ctrl / Super is involved.
            (with_text(K::KEY_A, N, "a"), b"a"),
            (with_text(K::KEY_A, S, "A"), b"A"),
            (press(K::KEY_A, C), b"\x1b[97;5u"),
            (press(K::KEY_C, C), b"\x1b[99;5u"),
            (press(K::KEY_A, C | S), b"\x1b[97;6u"),
            (with_text(K::KEY_A, A, "a"), b"\x1b[97;3u"),
            (with_text(K::KEY_A, A | S, "A"), b"\x1b[97;4u"),
            (press(K::KEY_A, ModSet::SUPER), b"\x1b[97;9u"),
            (press(K::SPACE, C), b"\x1b[32;5u"),
            (press(K::BRACKET_LEFT, A), b"\x1b[91;3u"),
            // Functional keys.
            (press(K::INSERT, N), b"\x1b[2~"),
            (press(K::DELETE, N), b"\x1b[3~"),
            (press(K::PAGE_UP, N), b"\x1b[5~"),
            (press(K::PAGE_DOWN, C), b"\x1b[6;5~"),
            (press(K::ARROW_LEFT, N), b"\x1b[D"),
            (press(K::ARROW_RIGHT, N), b"\x1b[C"),
            (press(K::ARROW_UP, N), b"\x1b[A"),
            (press(K::ARROW_DOWN, S), b"\x1b[1;2B"),
            (press(K::HOME, N), b"\x1b[H"),
            (press(K::END, C), b"\x1b[1;5F"),
            (press(K::F1, N), b"\x1b[P"),
            (press(K::F2, N), b"\x1b[Q"),
            (press(K::F3, N), b"\x1b[13~"),
            (press(K::F4, N), b"\x1b[S"),
            (press(K::F1, C), b"\x1b[1;5P"),
            (press(K::F3, S), b"\x1b[13;2~"),
            (press(K::F5, N), b"\x1b[15~"),
            (press(K::F12, N), b"\x1b[24~"),
            (press(K::F13, N), b"\x1b[57376u"),
            (press(K::F25, N), b"\x1b[57388u"),
            (press(K::PRINT_SCREEN, N), b"\x1b[57361u"),
            (press(K::PAUSE, N), b"\x1b[57362u"),
            (press(K::CONTEXT_MENU, N), b"\x1b[57363u"),
            (press(K::SCROLL_LOCK, N), b"\x1b[57359u"),
            (press(K::MEDIA_PLAY_PAUSE, N), b"\x1b[57430u"),
            (press(K::AUDIO_VOLUME_MUTE, N), b"\x1b[57440u"),
            // Lock modifiers are reported for functional keys (caps_lock 64, num_lock 128)...
            (press(K::ARROW_UP, ModSet::CAPS_LOCK), b"\x1b[1;65A"),
            (press(K::ESCAPE, ModSet::NUM_LOCK), b"\x1b[27;129u"),
            // ...and for text keys sent as escape codes, but not for a key sent as its text.
            (with_text(K::KEY_A, ModSet::CAPS_LOCK, "A"), b"A"),
            (press(K::KEY_A, C | ModSet::CAPS_LOCK), b"\x1b[97;69u"),
            (press(K::KEY_A, C | ModSet::NUM_LOCK), b"\x1b[97;133u"),
            // Without report-all-keys modifier keys are not reported.
            (press(K::SHIFT_LEFT, S), b""),
            (press(K::CAPS_LOCK, N), b""),
        ];
        check(table, &m);
    }

    // kitty "Disambiguate": keypad keys are reported with their own KP_* codes unless they
    // produce text. [INPUT.ENCODE.KITTY.5]
    #[test]
    fn kitty_keypad() {
        let m = kitty(0b1);
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (with_text(K::NUMPAD1, N, "1"), b"1"),
            (press(K::NUMPAD0, N), b"\x1b[57399u"),
            (press(K::NUMPAD9, N), b"\x1b[57408u"),
            (with_text(K::NUMPAD1, C, "1"), b"\x1b[57400;5u"),
            (press(K::NUMPAD_DECIMAL, N), b"\x1b[57409u"),
            (press(K::NUMPAD_DIVIDE, N), b"\x1b[57410u"),
            (press(K::NUMPAD_MULTIPLY, N), b"\x1b[57411u"),
            (press(K::NUMPAD_SUBTRACT, N), b"\x1b[57412u"),
            (press(K::NUMPAD_ADD, N), b"\x1b[57413u"),
            (press(K::NUMPAD_ENTER, N), b"\x1b[57414u"),
            (press(K::NUMPAD_EQUAL, N), b"\x1b[57415u"),
            (press(K::NUMPAD_SEPARATOR, N), b"\x1b[57416u"),
            (press(K::NUMPAD_LEFT, N), b"\x1b[57417u"),
            (press(K::NUMPAD_RIGHT, N), b"\x1b[57418u"),
            (press(K::NUMPAD_UP, N), b"\x1b[57419u"),
            (press(K::NUMPAD_DOWN, N), b"\x1b[57420u"),
            (press(K::NUMPAD_PAGE_UP, N), b"\x1b[57421u"),
            (press(K::NUMPAD_PAGE_DOWN, N), b"\x1b[57422u"),
            (press(K::NUMPAD_HOME, N), b"\x1b[57423u"),
            (press(K::NUMPAD_END, N), b"\x1b[57424u"),
            (press(K::NUMPAD_INSERT, N), b"\x1b[57425u"),
            (press(K::NUMPAD_DELETE, N), b"\x1b[57426u"),
            (press(K::NUMPAD_BEGIN, N), b"\x1b[E"),
            (press(K::NUMPAD_BEGIN, C), b"\x1b[1;5E"),
        ];
        check(table, &m);
    }

    // kitty "Event types": `CSI key-code;modifier:2` repeat, `:3` release, press the
    // default; "Report event types" note: Enter, Tab, Backspace have no release events
    // without report-all-keys. [INPUT.ENCODE.KITTY.2] [INPUT.ENCODE.KITTY.3]
    #[test]
    fn kitty_event_types() {
        let m = kitty(0b11);
        let rel = KeyAction::Release;
        let rep = KeyAction::Repeat;
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (press(K::ESCAPE, N), b"\x1b[27u"),
            (action(press(K::ESCAPE, N), rep), b"\x1b[27;1:2u"),
            (action(press(K::ESCAPE, N), rel), b"\x1b[27;1:3u"),
            (action(press(K::ESCAPE, C), rel), b"\x1b[27;5:3u"),
            (action(press(K::ARROW_UP, N), rel), b"\x1b[1;1:3A"),
            (action(press(K::DELETE, S), rep), b"\x1b[3;2:2~"),
            // Text keys: presses and repeats are text, a release is CSI u.
            (with_text(K::KEY_A, N, "a"), b"a"),
            (action(with_text(K::KEY_A, N, "a"), rep), b"a"),
            (action(with_text(K::KEY_A, N, "a"), rel), b"\x1b[97;1:3u"),
            (action(press(K::KEY_A, C), rel), b"\x1b[97;5:3u"),
            (action(press(K::ENTER, N), rel), b""),
            (action(press(K::TAB, N), rel), b""),
            (action(press(K::BACKSPACE, N), rel), b""),
            (action(press(K::ENTER, N), rep), b"\r"),
            (action(press(K::ENTER, S), rel), b"\x1b[13;2:3u"),
        ];
        check(table, &m);
        // Without the flag: no releases, a repeat is a press.
        let d = kitty(0b1);
        assert_eq!(enc(&action(press(K::ESCAPE, N), rel), &d), b"");
        assert_eq!(enc(&action(press(K::ESCAPE, N), rep), &d), b"\x1b[27u");
    }

    // kitty "Key codes" (alternate keys: `code:shifted:base`, the shifted key only with
    // Shift, `code::base` for a base-layout key alone, e.g. ctrl+С on a Cyrillic layout gives
    // base 99). [INPUT.ENCODE.KITTY.9]
    #[test]
    fn kitty_alternate_keys() {
        let m = kitty(0b101);
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (press(K::KEY_A, C | S), b"\x1b[97:65;6u"),
            (with_text(K::KEY_A, C | S, "A"), b"\x1b[97:65;6u"),
            (press(K::KEY_A, C), b"\x1b[97;5u"),
            (with_text(K::EQUAL, C | S, "+"), b"\x1b[61:43;6u"),
            (KeyEvent { unshifted_codepoint: Some(0x0441), ..press(K::KEY_C, C) }, b"\x1b[1089::99;5u"),
            (KeyEvent { unshifted_codepoint: Some(0x0441), ..with_text(K::KEY_C, C | S, "С") }, b"\x1b[1089:1057:99;6u"),
            // Only keys already sent as escape codes are affected.
            (with_text(K::KEY_A, S, "A"), b"A"),
            (press(K::ARROW_UP, S), b"\x1b[1;2A"),
        ];
        check(table, &m);
        // Alternate keys alone do not leave legacy mode.
        assert_eq!(enc(&press(K::ESCAPE, N), &kitty(0b100)), b"\x1b");
        assert_eq!(enc(&press(K::ESCAPE, N), &kitty(0b10000)), b"\x1b");
    }

    // kitty "Report all keys as escape codes" and "Text as code points": `shift+a -> CSI 97
    // ; 2 ; 65 u`, `option+a -> CSI 97 ; ; 229 u`; modifier keys reported with their own bit
    // as it is after the event (LEFT_SHIFT 57441 ...). [INPUT.ENCODE.KITTY.6]
    // [INPUT.ENCODE.KITTY.7] [INPUT.ENCODE.KITTY.8] [INPUT.ENCODE.KITTY.9]
    #[test]
    fn kitty_report_all_and_text() {
        let all = kitty(0b1000);
        let rel = KeyAction::Release;
        #[rustfmt::skip]
        let table: &[(KeyEvent, &[u8])] = &[
            (with_text(K::KEY_A, N, "a"), b"\x1b[97u"),
            (with_text(K::KEY_A, S, "A"), b"\x1b[97;2u"),
            (press(K::ENTER, N), b"\x1b[13u"),
            (press(K::TAB, N), b"\x1b[9u"),
            (press(K::BACKSPACE, N), b"\x1b[127u"),
            (press(K::ESCAPE, N), b"\x1b[27u"),
            (with_text(K::SPACE, N, " "), b"\x1b[32u"),
            (with_text(K::NUMPAD1, N, "1"), b"\x1b[57400u"),
            (with_text(K::KEY_A, ModSet::CAPS_LOCK, "A"), b"\x1b[97;65u"),
            (press(K::SHIFT_LEFT, S), b"\x1b[57441;2u"),
            (press(K::SHIFT_LEFT, N), b"\x1b[57441;2u"),
            (press(K::CONTROL_LEFT, C), b"\x1b[57442;5u"),
            (press(K::ALT_LEFT, A), b"\x1b[57443;3u"),
            (press(K::META_LEFT, ModSet::SUPER), b"\x1b[57444;9u"),
            (press(K::SHIFT_RIGHT, S), b"\x1b[57447;2u"),
            (press(K::CONTROL_RIGHT, C), b"\x1b[57448;5u"),
            (press(K::ALT_RIGHT, A), b"\x1b[57449;3u"),
            (press(K::META_RIGHT, ModSet::SUPER), b"\x1b[57450;9u"),
            (press(K::CAPS_LOCK, N), b"\x1b[57358u"),
            (press(K::NUM_LOCK, ModSet::NUM_LOCK), b"\x1b[57360;129u"),
            // Releasing a modifier key: without event types, nothing...
            (action(press(K::SHIFT_LEFT, S), rel), b""),
            // A key with text and no known key code: key number 0.
            (with_text(K::UNIDENTIFIED, N, "é"), b"\x1b[0u"),
            (press(K::UNIDENTIFIED, N), b""),
        ];
        check(table, &all);
        // ...with them, the release clears the key's own bit.
        let events = kitty(0b1010);
        assert_eq!(
            enc(&action(press(K::CONTROL_LEFT, C), rel), &events),
            b"\x1b[57442;1:3u"
        );
        assert_eq!(
            enc(&action(press(K::CONTROL_LEFT, C | S), rel), &events),
            b"\x1b[57442;2:3u"
        );
        let text = kitty(0b11000);
        #[rustfmt::skip]
        let text_table: &[(KeyEvent, &[u8])] = &[
            (with_text(K::KEY_A, S, "A"), b"\x1b[97;2;65u"),
            (KeyEvent { consumed_mods: A, ..with_text(K::KEY_A, A, "å") }, b"\x1b[97;;229u"),
            (with_text(K::KEY_A, N, "a"), b"\x1b[97;;97u"),
            (with_text(K::KEY_E, N, "é́"), b"\x1b[101;;233:769u"),
            (with_text(K::UNIDENTIFIED, N, "é"), b"\x1b[0;;233u"),
            // Functional keys and control characters carry no text.
            (press(K::ENTER, N), b"\x1b[13u"),
            (with_text(K::KEY_A, C, "\x01"), b"\x1b[97;5u"),
        ];
        check(text_table, &text);
        // Releases carry no text.
        let text_events = kitty(0b11010);
        assert_eq!(
            enc(&action(with_text(K::KEY_A, N, "a"), rel), &text_events),
            b"\x1b[97;1:3u"
        );
        // Associated text alone (without report-all-keys) changes nothing.
        assert_eq!(enc(&with_text(K::KEY_A, N, "a"), &kitty(0b10001)), b"a");
    }

    #[test]
    fn kitty_composition_and_unknown_keys() {
        let all = kitty(0b11111);
        let composing = KeyEvent {
            composing: true,
            ..with_text(K::KEY_A, N, "a")
        };
        assert_eq!(enc(&composing, &all), b"");
        assert_eq!(enc(&press(PhysicalKey(4242), N), &kitty(1)), b"");
        assert_eq!(
            enc(&with_text(PhysicalKey(4242), N, "ж"), &kitty(1)),
            "ж".as_bytes()
        );
        let cp = KeyEvent {
            unshifted_codepoint: Some(u32::from('ж')),
            ..press(PhysicalKey(4242), C)
        };
        assert_eq!(enc(&cp, &kitty(1)), b"\x1b[1078;5u");
    }
}
