//! Legacy (xterm) encoding.

use phux_proto::input::{KeyAction, KeyEvent, ModSet};

use super::table::{Kind, classify};
use super::{clean_text, derived_char, printable, push_char, push_decimal, remove, single_char};
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
pub(super) fn fkey_tilde(n: u8) -> u16 {
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
