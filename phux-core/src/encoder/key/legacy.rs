//! Legacy (xterm) encoding.

use phux_proto::input::{KeyAction, KeyEvent, ModSet};

use super::table::{Kind, classify};
use super::{clean_text, derived_char, push_char, push_decimal, remove, single_char};
use crate::modes::TerminalModes;

const ESC: u8 = 0x1b;

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

/// Ctrl + character as a C0 byte, as xterm sends it (the X keyboard library's control
/// translation, `_XkbToControl`): `@` to `~` (letters, `[ \\ ] ^ _`, and `` ` { | } ~``) to their
/// low five bits, Space and `2` to NUL, `3` to `7` to ESC..US, `8` and `?` to DEL, `/` to US.
/// `None` for characters Ctrl leaves as they are (`1`, `9`, `0`, `-`, `=`, `;`, ...): xterm then
/// sends the character itself.
pub fn ctrl_byte(c: char) -> Option<u8> {
    let b = u8::try_from(u32::from(c)).ok()?;
    match b {
        b'@'..=b'~' => Some(b & 0x1f),
        b' ' | b'2' => Some(0x00),
        b'3'..=b'7' => Some(b - b'3' + 0x1b),
        b'8' | b'?' => Some(0x7f),
        b'/' => Some(0x1f),
        _ => None,
    }
}

pub(super) fn legacy(key: &KeyEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
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
            if shift {
                // xterm sends Shift+Tab as CSI Z whatever else is held.
                out.extend_from_slice(b"\x1b[Z");
            } else {
                alt_prefix(out);
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
            // With Num Lock on the keypad types its characters whatever DECKPAM says (xterm's
            // numLock resource, on by default: input.c forces keypad_mode off when the Num
            // Lock modifier is down). Modifiers go between SS3 and the final, as xterm sends
            // Ctrl+KP_Add as `SS3 5 k`.
            if modes.application_keypad
                && !mods.contains(ModSet::NUM_LOCK)
                && let Some(app) = app
            {
                out.extend_from_slice(&[ESC, b'O']);
                let param = xterm_param(mods);
                if param > 1 {
                    push_decimal(out, param);
                }
                out.push(app);
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
        // xterm sends the Menu key as CSI 29 ~ (the VT220 "Do" key), kitty too in legacy mode.
        Kind::Menu => push_tilde(out, 29, xterm_param(mods)),
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

pub(super) fn push_enter(modes: &TerminalModes, out: &mut Vec<u8>) {
    if modes.line_feed_mode {
        out.extend_from_slice(b"\r\n");
    } else {
        out.push(b'\r');
    }
}

pub(super) fn backspace_byte(modes: &TerminalModes, ctrl: bool) -> u8 {
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

/// F1..=F25 as xterm sends them: F1-F4 `SS3 P..S` (`CSI 1;m P..S` modified), F5-F12 and
/// F13-F25 `CSI n ~` (`CSI n;m ~` modified) with xterm's numbers for the physical keys.
fn legacy_function(out: &mut Vec<u8>, n: u8, mods: ModSet) {
    let param = xterm_param(mods);
    if let 1..=4 = n {
        let fin = b'P' + (n - 1);
        if param > 1 {
            out.extend_from_slice(b"\x1b[1;");
            push_decimal(out, param);
            out.push(fin);
        } else {
            out.extend_from_slice(&[ESC, b'O', fin]);
        }
        return;
    }
    push_tilde(out, u32::from(fkey_tilde(n)), param);
}

/// The `CSI n ~` number of F5..=F25: the VT220's for F5-F20 (ctlseqs "VT220-Style Function
/// Keys"), and xterm's own after them (F21 42 ... F25 46, as xterm 379 sends them).
pub(super) fn fkey_tilde(n: u8) -> u16 {
    match n {
        5 => 15,
        6 => 17,
        7 => 18,
        8 => 19,
        9 => 20,
        10 => 21,
        11 => 23,
        12 => 24,
        13 => 25,
        14 => 26,
        15 => 28,
        16 => 29,
        17 => 31,
        18 => 32,
        19 => 33,
        20 => 34,
        _ => 42 + u16::from(n.saturating_sub(21)),
    }
}

fn legacy_text(key: &KeyEvent, us: Option<(char, char)>, derive: bool, out: &mut Vec<u8>) {
    // Modifiers the platform consumed to produce `text` (Option on macOS) are not applied
    // again.
    let eff = remove(key.mods, key.consumed_mods);
    let alt = eff.contains(ModSet::ALT);
    let text = clean_text(key);
    let derived = if derive { derived_char(key, us) } else { None };
    // [INPUT.ENCODE.KEY.4] Ctrl maps the typed character to its C0 byte as xterm does; a
    // character Ctrl leaves alone is sent as it is.
    if eff.contains(ModSet::CTRL)
        && let Some(byte) = ctrl_target(text, derived, us).and_then(ctrl_byte)
    {
        if alt {
            out.push(ESC);
        }
        out.push(byte);
        return;
    }
    // [INPUT.ENCODE.KEY.2] Text keys write their text (else the derived character);
    // [INPUT.ENCODE.KEY.5] Alt prefixes ESC, to any character, ASCII or not (xterm's
    // metaSendsEscape).
    if let Some(text) = text {
        if alt {
            out.push(ESC);
        }
        out.extend_from_slice(text.as_bytes());
    } else if let Some(c) = derived {
        if alt {
            out.push(ESC);
        }
        push_char(out, c);
    }
}

/// The character Ctrl applies to. An ASCII `text` decides alone, as in xterm (Ctrl with `)`
/// on a French layout is `)`, not the US key's `-`); else the derived character when it is
/// ASCII. A character outside ASCII (a Cyrillic `с`) has no control: on a letter key Ctrl
/// applies to the US layout's letter, so Ctrl+C interrupts on any layout (as kitty and
/// libghostty do); any other key keeps its character (Ctrl+ü is ü, as in xterm).
fn ctrl_target(
    text: Option<&str>,
    derived: Option<char>,
    us: Option<(char, char)>,
) -> Option<char> {
    if let Some(c) = text.and_then(single_char).filter(char::is_ascii) {
        return Some(c);
    }
    if let Some(c) = derived.filter(char::is_ascii) {
        return Some(c);
    }
    us.map(|(base, _)| base).filter(char::is_ascii_lowercase)
}
