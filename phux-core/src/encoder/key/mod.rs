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
//!
//! | module | what |
//! |---|---|
//! | `table` | what each physical key is, for encoding |
//! | `legacy` | legacy xterm bytes (kitty flags 0) |
//! | `kitty` | the kitty keyboard protocol (any of the escape-code flags set) |

mod kitty;
mod legacy;
mod table;
#[cfg(test)]
mod tests;

#[cfg(test)]
pub(super) use table::is_text_key;

use phux_proto::input::{KeyEvent, ModSet};

use crate::modes::{KittyFlags, TerminalModes};

use kitty::kitty;
use legacy::legacy;

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
