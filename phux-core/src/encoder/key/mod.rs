//! Keys: legacy xterm encoding (kitty flags 0) and the kitty keyboard protocol.
//!
//! Sources: xterm's ctlseqs ("PC-Style Function Keys", "VT220-Style Function Keys", the VT220
//! keypad table) for the legacy bytes; kitty's "Comprehensive keyboard handling in terminals"
//! (keyboard-protocol) for everything under non-zero flags.
//!
//! Where the sources leave a choice, legacy mode sends what xterm sends (xterm 379 with
//! `metaSendsEscape`, its keys typed through the X keyboard library; `conformance/xterm-keys.sh`
//! shows it), and the kitty protocol what kitty's own encoder sends:
//! - F13-F25 are the physical keys xterm knows: `CSI 25 ~`, `26 ~`, `28 ~`, `29 ~`, `31 ~` ...
//!   `34 ~` (VT220), then `42 ~` ... `46 ~`; Menu is `CSI 29 ~`.
//! - Ctrl maps a character to C0 as xterm does (`@`..`~`, Space, `2`-`8`, `/`, `?`); others
//!   (`-`, `=`, digits) are sent as they are.
//! - Shift+Tab is `CSI Z` with or without Alt; Num Lock makes the keypad type its characters
//!   even under DECKPAM.
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

use phux_proto::input::{KeyAction, KeyEvent, ModSet};

use crate::modes::{KittyFlags, TerminalModes};

use kitty::kitty;
pub use legacy::ctrl_byte;
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

/// Whether `key` types input the program must receive: a press or repeat, not mid-composition,
/// of a key that types a character (a letter, digit, punctuation, Space or keypad character
/// key, or one the client gave an unshifted code point) or of a key without a code of its own
/// that carries text. Releases, modifier and lock keys, and functional keys (whose text, if a
/// client sends any, the encoder ignores as kitty does) are not: a key with no code in the
/// terminal's modes (Print Screen in legacy mode) legitimately writes nothing. These must
/// write something ([INPUT.APPLY.13]).
pub fn types_input(key: &KeyEvent) -> bool {
    if key.action == KeyAction::Release || key.composing {
        return false;
    }
    let has_text = key.text.as_deref().is_some_and(|t| !t.is_empty());
    match table::classify(key.key) {
        table::Kind::Text { us } => {
            has_text || us.is_some() || key.unshifted_codepoint.and_then(printable).is_some()
        }
        table::Kind::Keypad { ch, .. } => has_text || ch.is_some_and(|c| c != b'\r'),
        table::Kind::NoCode => has_text,
        _ => false,
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

/// The character a text key types when the client sent no `text`: its unshifted code point,
/// else the US-layout character of the physical key, as Shift and (for letters) Caps Lock
/// change it. Shift turns a letter to its capital and any other character to what the US
/// layout has above it, when the unshifted character is the US one (`;` to `:`, `,` to `<`,
/// `[` to `{`): case mapping alone leaves punctuation unshifted, which typed `M-:` as `ESC ;`.
fn derived_char(key: &KeyEvent, us: Option<(char, char)>) -> Option<char> {
    let base = key
        .unshifted_codepoint
        .and_then(printable)
        .or(us.map(|(base, _)| base))?;
    let shift = key.mods.contains(ModSet::SHIFT);
    if base.is_alphabetic() {
        let caps = key.mods.contains(ModSet::CAPS_LOCK);
        return Some(if shift == caps {
            base
        } else {
            upper(base).unwrap_or(base)
        });
    }
    if !shift {
        return Some(base);
    }
    Some(match us {
        Some((us_base, us_shifted)) if us_base == base => us_shifted,
        _ => base,
    })
}

/// The single upper-case form of `c`, when it has exactly one.
fn upper(c: char) -> Option<char> {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => Some(u),
        _ => None,
    }
}

/// The single lower-case form of `c`, or `c` itself.
fn lower(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}
