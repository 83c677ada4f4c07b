//! Each row's recogniser: whether a difference between our bytes and the reference's is that
//! row's, by the event, the modes and the bytes on both sides. The order they are tried in and
//! the table they must match are `decided.rs`'s.

use phux_proto::input::{KeyAction, ModSet, PhysicalKey as K};

use super::Case;
use crate::keydiff::Layout;

// ---- what the rows look at ----

const ESC: u8 = 0x1b;

/// A CSI sequence: parameters (`;`), each with its sub-parameters (`:`, empty as `None`), and
/// the final byte.
#[derive(Debug, PartialEq, Eq)]
struct Csi {
    params: Vec<Vec<Option<u32>>>,
    fin: u8,
}

impl Csi {
    /// `bytes` as exactly one CSI sequence with numeric parameters.
    fn parse(bytes: &[u8]) -> Option<Self> {
        let body = bytes.strip_prefix(b"\x1b[")?;
        let (&fin, params) = body.split_last()?;
        if !(0x40..=0x7e).contains(&fin) {
            return None;
        }
        let text = std::str::from_utf8(params).ok()?;
        let params = if text.is_empty() {
            Vec::new()
        } else {
            text.split(';')
                .map(|p| {
                    p.split(':')
                        .map(|v| {
                            if v.is_empty() {
                                Ok(None)
                            } else {
                                v.parse().map(Some)
                            }
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()
                .ok()?
        };
        Some(Self { params, fin })
    }

    /// The first value of parameter `i`.
    fn value(&self, i: usize) -> Option<u32> {
        self.params.get(i)?.first().copied().flatten()
    }
}

/// Whether the program runs the legacy encoding (no kitty flag that changes bytes).
fn legacy(case: &Case<'_>) -> bool {
    case.modes.kitty & 0b1011 == 0
}

fn pressed(case: &Case<'_>) -> bool {
    case.event.action != KeyAction::Release && !case.event.composing
}

fn has(case: &Case<'_>, bit: ModSet) -> bool {
    case.event.mods.contains(bit)
}

/// The text, when it is one character.
fn text_char(case: &Case<'_>) -> Option<char> {
    let text = case.event.text.as_deref()?;
    let mut it = text.chars();
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

/// The US-layout characters (unshifted, shifted) of a text key.
fn us_chars(key: K) -> Option<(char, char)> {
    Layout::Us.chars(key)
}

/// xterm's Ctrl translation of an ASCII character (the table of [INPUT.ENCODE.KEY.4], which
/// `conformance/xterm-keys.sh` shows xterm sending).
fn xterm_ctrl(c: char) -> Option<u8> {
    phux_core::encoder::ctrl_byte(c)
}

/// Whether `key` is Shift, Ctrl, Alt or Meta (left or right).
fn modifier_key(key: K) -> bool {
    matches!(
        key,
        K::SHIFT_LEFT
            | K::SHIFT_RIGHT
            | K::CONTROL_LEFT
            | K::CONTROL_RIGHT
            | K::ALT_LEFT
            | K::ALT_RIGHT
            | K::META_LEFT
            | K::META_RIGHT
    )
}

/// The kitty modifier bit of a modifier key.
fn own_bit(key: K) -> u32 {
    match key {
        K::SHIFT_LEFT | K::SHIFT_RIGHT => 1,
        K::ALT_LEFT | K::ALT_RIGHT => 2,
        K::CONTROL_LEFT | K::CONTROL_RIGHT => 4,
        _ => 8,
    }
}

impl Csi {
    /// The sequence with every field the kitty protocol lets a sender leave out written in
    /// full: the key number 1 of the letter forms, the modifiers 1, the press event 1.
    fn kitty_full(&self) -> Self {
        let mut params = self.params.clone();
        if params.is_empty() {
            params.push(vec![Some(1)]);
        }
        if params.len() < 2 {
            params.push(vec![Some(1)]);
        }
        if params[1].first().copied().flatten().is_none() {
            params[1] = vec![Some(1)];
        }
        if params[1].len() < 2 {
            params[1].push(Some(1));
        }
        Self {
            params,
            fin: self.fin,
        }
    }

    /// The modifier value (1 when absent).
    fn mods(&self) -> u32 {
        self.value(1).unwrap_or(1)
    }

    /// The sequence without alternate keys.
    fn without_alternates(&self) -> Self {
        let mut params = self.params.clone();
        if let Some(first) = params.first_mut() {
            first.truncate(1);
        }
        Self {
            params,
            fin: self.fin,
        }
    }

    /// The sequence without the shifted-key alternate (the base-layout key kept).
    fn without_shifted(&self) -> Self {
        let mut params = self.params.clone();
        if let Some(first) = params.first_mut() {
            match first.len() {
                2 => first.truncate(1),
                3 => first[1] = None,
                _ => {}
            }
        }
        Self {
            params,
            fin: self.fin,
        }
    }
}

// ---- the rows ----

/// Kitty flags that only enhance (report alternate keys 0b100, associated text 0b10000)
/// without disambiguate, event types or report-all: we encode as in legacy mode (those flags
/// change only keys already sent as escape codes, and associated text is undefined without
/// report-all); the reference encodes with its kitty encoder. The row holds only when our
/// bytes are exactly our legacy encoding of the event.
pub(super) fn kitty_enhancements_alone(case: &Case<'_>) -> bool {
    if !(legacy(case) && case.modes.kitty != 0) {
        return false;
    }
    let modes = phux_core::modes::TerminalModes {
        application_cursor_keys: case.modes.cursor_keys,
        application_keypad: case.modes.keypad,
        backarrow_sends_backspace: case.modes.backarrow,
        line_feed_mode: case.modes.line_feed,
        bracketed_paste: case.modes.bracketed_paste,
        ..phux_core::modes::TerminalModes::default()
    };
    let mut legacy_bytes = Vec::new();
    phux_core::encoder::encode_key(case.event, &modes, &mut legacy_bytes);
    legacy_bytes == case.ours
}

/// The reference answers Ctrl (with a text key) in legacy mode with fixterms' `CSI cp ; m u`
/// where xterm sends the C0 byte or the character.
pub(super) fn legacy_csi_u(case: &Case<'_>) -> bool {
    let Some(csi) = Csi::parse(case.theirs) else {
        return false;
    };
    legacy(case)
        && pressed(case)
        && has(case, ModSet::CTRL)
        && csi.fin == b'u'
        && csi.params.len() == 2
        && text_char(case)
            .and_then(|c| {
                csi.value(0)
                    .map(|cp| cp == u32::from(c) || cp == u32::from(c.to_ascii_lowercase()))
            })
            .unwrap_or(false)
        && !case.ours.starts_with(b"\x1b[")
}

/// The reference answers modified Enter, Tab, Escape and Backspace in legacy mode with
/// `CSI 27 ; m ; code ~` (modifyOtherKeys' form) though the program never asked for it.
pub(super) fn legacy_csi_27(case: &Case<'_>) -> bool {
    let Some(csi) = Csi::parse(case.theirs) else {
        return false;
    };
    let code = match case.event.key {
        K::ENTER => 13,
        K::TAB => 9,
        K::ESCAPE => 27,
        K::BACKSPACE => 127,
        _ => return false,
    };
    legacy(case)
        && csi.fin == b'~'
        && csi.value(0) == Some(27)
        && csi.value(2) == Some(code)
        && !case.ours.starts_with(b"\x1b[2")
}

/// Alt with a character outside ASCII: the reference sends the character without the ESC
/// xterm puts before it.
pub(super) fn alt_non_ascii_without_esc(case: &Case<'_>) -> bool {
    legacy(case)
        && pressed(case)
        && has(case, ModSet::ALT)
        && case.theirs.iter().any(|b| *b >= 0x80)
        && case.ours.first() == Some(&ESC)
        && case.ours[1..] == *case.theirs
}

/// Alt with a text key whose text is not one byte (none, or a character outside ASCII): the
/// reference puts ESC before the unshifted code point cut to one byte (`;` for `:`, `0xe9`
/// for é, which is not UTF-8), where xterm sends ESC and the typed character.
pub(super) fn alt_prefix_of_unshifted_byte(case: &Case<'_>) -> bool {
    let Some(cp) = case.event.unshifted_codepoint else {
        return false;
    };
    let one_byte_text = case.event.text.as_ref().is_some_and(|t| t.len() == 1);
    legacy(case)
        && pressed(case)
        && !one_byte_text
        && has(case, ModSet::ALT)
        && u8::try_from(cp).is_ok_and(|b| case.theirs == [ESC, b])
}

/// Ctrl with a non-US layout's key whose text is not one byte (none, or a character outside
/// ASCII): the reference applies Ctrl to the US key under it (the French `'` key is the US
/// `4`, so 1c; the French `à` key is the US `0`, so `0`), xterm to the layout's character.
pub(super) fn ctrl_of_us_key(case: &Case<'_>) -> bool {
    let Some((us_base, _)) = us_chars(case.event.key) else {
        return false;
    };
    let one_byte_text = case.event.text.as_ref().is_some_and(|t| t.len() == 1);
    let us_byte = u8::try_from(u32::from(us_base)).ok();
    legacy(case)
        && pressed(case)
        && has(case, ModSet::CTRL)
        && !one_byte_text
        && case.event.unshifted_codepoint != Some(u32::from(us_base))
        && case.theirs.len() <= 2
        && case
            .theirs
            .last()
            .is_some_and(|b| Some(*b) == xterm_ctrl(us_base) || Some(*b) == us_byte)
}

/// Ctrl or Alt with a keypad key that types a character: the reference applies them (Ctrl+/
/// as 1f, Ctrl+8 as DEL, ESC for Alt); xterm sends the keypad's character alone.
pub(super) fn keypad_modifiers_applied(case: &Case<'_>) -> bool {
    legacy(case)
        && pressed(case)
        && keypad_types(case.event.key)
        && (has(case, ModSet::CTRL) || has(case, ModSet::ALT))
        && case.ours.len() == 1
        && !case.theirs.is_empty()
}

/// Modified F3 in legacy mode: the reference sends `CSI 13 ; m ~` (kitty's form, which keeps
/// clear of a cursor position report), xterm `CSI 1 ; m R`.
pub(super) fn legacy_f3_as_13_tilde(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    legacy(case)
        && case.event.key == K::F3
        && ours.fin == b'R'
        && ours.value(0) == Some(1)
        && theirs.fin == b'~'
        && theirs.value(0) == Some(13)
        && ours.params.get(1) == theirs.params.get(1)
}

/// Whether `key` is a keypad key that types a character (digits, operators, separators).
fn keypad_types(key: K) -> bool {
    (K::NUMPAD0.0..=K::NUMPAD_SEPARATOR.0).contains(&key.0)
        && !matches!(
            key,
            K::NUMPAD_BACKSPACE | K::NUMPAD_CLEAR | K::NUMPAD_CLEAR_ENTRY | K::NUMPAD_ENTER
        )
        && !(K::NUMPAD_MEMORY_ADD.0..=K::NUMPAD_MEMORY_SUBTRACT.0).contains(&key.0)
}

/// A key press with no `text` that types a character (derived from the key, its unshifted
/// code point and the modifiers): the reference writes nothing.
pub(super) fn textless_key_dropped(case: &Case<'_>) -> bool {
    let key = case.event.key;
    let types = us_chars(key).is_some() || keypad_types(key);
    // Ours is one character (a C0 byte for Ctrl), maybe after ESC (Alt): what the key types,
    // not an escape code.
    let ours = match case.ours {
        [ESC, rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    let one_char = std::str::from_utf8(ours).is_ok_and(|s| s.chars().count() == 1);
    legacy(case)
        && pressed(case)
        && types
        && case.event.text.is_none()
        && case.theirs.is_empty()
        && one_char
}

/// DECKPAM without Num Lock held: the reference sends the keypad's characters.
pub(super) fn keypad_application_ignored(case: &Case<'_>) -> bool {
    let keypad = (K::NUMPAD0.0..=K::NUMPAD_PAGE_DOWN.0).contains(&case.event.key.0);
    legacy(case)
        && case.modes.keypad
        && keypad
        && !has(case, ModSet::NUM_LOCK)
        && case.ours.starts_with(b"\x1bO")
        && !case.theirs.starts_with(b"\x1bO")
}

/// F13-F25 and Menu in legacy mode: the reference writes nothing; xterm sends `CSI n ~`.
pub(super) fn legacy_fkeys_missing(case: &Case<'_>) -> bool {
    let key = case.event.key;
    legacy(case)
        && pressed(case)
        && ((K::F13.0..=K::F25.0).contains(&key.0) || key == K::CONTEXT_MENU)
        && case.theirs.is_empty()
}

/// Backspace with Shift under DECBKM, or with Ctrl+Alt+Shift: the reference sends DEL where
/// xterm sends BS (only the last byte differs).
pub(super) fn backspace_bs_del(case: &Case<'_>) -> bool {
    let (Some((o, ours)), Some((t, theirs))) = (case.ours.split_last(), case.theirs.split_last())
    else {
        return false;
    };
    legacy(case)
        && case.event.key == K::BACKSPACE
        && matches!((o, t), (0x08, 0x7f) | (0x7f, 0x08))
        && (ours == theirs || (ours == [ESC] && theirs.is_empty()))
}

/// Both are the same kitty escape code, one writing out a field the protocol lets a sender
/// omit: `CSI 1 ; 1 : 1 H` for `CSI H`, `;1:1` for a press without modifiers.
pub(super) fn kitty_optional_fields(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    !legacy(case) && ours.kitty_full() == theirs.kitty_full()
}

/// A modifier key's own bit: the kitty protocol sets it for the key's press and repeat and
/// clears it for its release; the reference reports the modifiers as the client sent them.
pub(super) fn kitty_modifier_own_bit(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    let key = case.event.key;
    let bit = own_bit(key);
    !legacy(case)
        && modifier_key(key)
        && ours.value(0) == theirs.value(0)
        && (ours.mods() - 1) | bit == (theirs.mods() - 1) | bit
        && ours.params.get(1).and_then(|p| p.get(1)) == theirs.params.get(1).and_then(|p| p.get(1))
}

/// Keypad and other functional keys: the reference adds a base-layout alternate (`57401::50`
/// for keypad 2); kitty never gives functional keys alternates.
pub(super) fn kitty_functional_alternates(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    !legacy(case)
        && us_chars(case.event.key).is_none()
        && theirs.params.first().is_some_and(|p| p.len() > 1)
        && ours.params.first().is_some_and(|p| p.len() == 1)
        && ours.kitty_full() == theirs.without_alternates().kitty_full()
}

/// The shifted-key alternate: we report it whenever Shift is held (the layout's shifted
/// key); the reference only when the text differs from the key, so not without text or
/// when Caps Lock undoes Shift.
pub(super) fn kitty_shifted_key_from_text(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    !legacy(case)
        && has(case, ModSet::SHIFT)
        && ours
            .params
            .first()
            .is_some_and(|p| p.get(1).copied().flatten().is_some())
        && ours.without_shifted().kitty_full() == theirs.kitty_full()
}

/// A text key without an unshifted code point: the reference finds no key for it and sends
/// the text as it is (or nothing, without text); we know the key from its text or the US
/// layout and encode it as the protocol asks (an escape code, or the typed character).
pub(super) fn kitty_needs_unshifted_codepoint(case: &Case<'_>) -> bool {
    let text = case.event.text.as_deref().unwrap_or("");
    let ours_key =
        Csi::parse(case.ours).map_or(!case.ours.is_empty(), |c| c.value(0).is_some_and(|k| k > 0));
    let text_key = us_chars(case.event.key).is_some()
        || matches!(case.event.key, K::NUMPAD_PAREN_LEFT | K::NUMPAD_PAREN_RIGHT);
    !legacy(case)
        && case.event.unshifted_codepoint.is_none()
        && text_key
        && case.theirs == text.as_bytes()
        && ours_key
}

/// The release of a modified Enter, Tab or Backspace short of report-all-keys: kitty's own
/// encoder reports it (it holds back only the unmodified keys' releases); the reference
/// sends nothing, as the protocol's note on the three keys reads.
pub(super) fn kitty_modified_release(case: &Case<'_>) -> bool {
    !legacy(case)
        && case.event.action == KeyAction::Release
        && case.modes.kitty & 0b1000 == 0
        && matches!(case.event.key, K::ENTER | K::TAB | K::BACKSPACE)
        && case.theirs.is_empty()
        && Csi::parse(case.ours).is_some_and(|c| c.fin == b'u' && c.mods() > 1)
}

/// Keypad Begin (keypad 5 without Num Lock): kitty sends `CSI 1 ; m E` (its table's `1 E`);
/// the reference `CSI 57427 ; m u`, which is neither of the table's forms (`1 E`,
/// `57427 ~`).
pub(super) fn kitty_keypad_begin(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    !legacy(case)
        && case.event.key == K::NUMPAD_BEGIN
        && ours.fin == b'E'
        && theirs.fin == b'u'
        && theirs.value(0) == Some(57427)
        && ours.kitty_full().params[1..] == theirs.kitty_full().params[1..]
}

/// Report-alternate-keys where the typed character is the base-layout key (Shift+7 on a
/// French keyboard types 7, and the US key is 7): we report the base-layout key, as kitty
/// does whenever it differs from the key code; the reference leaves it out.
pub(super) fn kitty_base_key_dropped(case: &Case<'_>) -> bool {
    let (Some(ours), Some(theirs)) = (Csi::parse(case.ours), Csi::parse(case.theirs)) else {
        return false;
    };
    let Some(first) = ours.params.first() else {
        return false;
    };
    let (Some(Some(base)), Some(c)) = (first.get(2), text_char(case)) else {
        return false;
    };
    let mut trimmed = ours.params.clone();
    trimmed[0].truncate(2);
    if trimmed[0].get(1) == Some(&None) {
        trimmed[0].truncate(1);
    }
    !legacy(case)
        && *base == u32::from(c)
        && Csi {
            params: trimmed,
            fin: ours.fin,
        }
        .kitty_full()
            == theirs.kitty_full()
}

/// An unidentified key with text under report-all-keys: kitty reports it as key 0 (`If no
/// known key is associated with the text the key number 0 must be used`); the reference
/// sends the text.
pub(super) fn kitty_unidentified_as_text(case: &Case<'_>) -> bool {
    let Some(text) = case.event.text.as_deref() else {
        return false;
    };
    !legacy(case)
        && case.event.key == K::UNIDENTIFIED
        && case.theirs == text.as_bytes()
        && Csi::parse(case.ours).is_some_and(|c| c.value(0) == Some(0))
}

/// Keys kitty numbers (Menu 57363, the media and volume keys 57428-57440, Print Screen,
/// Pause, Scroll Lock): the reference sends nothing for them.
pub(super) fn kitty_functional_missing(case: &Case<'_>) -> bool {
    !legacy(case)
        && case.theirs.is_empty()
        && Csi::parse(case.ours).is_some_and(|c| {
            c.fin == b'u' && c.value(0).is_some_and(|k| (57358..=57440).contains(&k))
        })
}

/// The keypad comma: kitty's KP_SEPARATOR (57416); the reference sends it as the text key
/// `,` (44), or as its text.
pub(super) fn kitty_keypad_comma(case: &Case<'_>) -> bool {
    let Some(ours) = Csi::parse(case.ours) else {
        return false;
    };
    let text = case.event.text.as_deref().unwrap_or("");
    !legacy(case)
        && case.event.key == K::NUMPAD_COMMA
        && ours.value(0) == Some(57416)
        && (Csi::parse(case.theirs).is_some_and(|t| t.value(0) == Some(44))
            || case.theirs == text.as_bytes())
}

/// A key that types text with Shift the client did not mark consumed: kitty sends the text
/// (only Ctrl, Alt and Super make a text key an escape code short of report-all); the
/// reference an escape code with Shift.
pub(super) fn kitty_unconsumed_shift_blocks_text(case: &Case<'_>) -> bool {
    let Some(text) = case.event.text.as_deref() else {
        return false;
    };
    !legacy(case)
        && case.modes.kitty & 0b1000 == 0
        && has(case, ModSet::SHIFT)
        && case.ours == text.as_bytes()
        && Csi::parse(case.theirs).is_some_and(|c| c.fin == b'u' && (c.mods() - 1) & 1 != 0)
}

/// A text key pressed without text and without Ctrl, Alt or Super, short of report-all: we
/// take it to type its character, as in legacy mode; the reference encodes it as a key that
/// produced no text (`CSI code ; m u`), as kitty encodes one.
pub(super) fn kitty_textless_key_as_escape(case: &Case<'_>) -> bool {
    !legacy(case)
        && case.modes.kitty & 0b1000 == 0
        && case.event.text.is_none()
        && (us_chars(case.event.key).is_some() || keypad_types(case.event.key))
        && !case.ours.is_empty()
        && !case.ours.starts_with(&[ESC])
        && Csi::parse(case.theirs).is_some_and(|c| c.fin == b'u')
}

/// Backspace under DECBKM with kitty flags: we keep DECBKM's BS for a Backspace the protocol
/// leaves in legacy bytes; the reference (and kitty, which has no DECBKM) sends DEL.
pub(super) fn kitty_backspace_under_decbkm(case: &Case<'_>) -> bool {
    !legacy(case)
        && case.modes.backarrow
        && case.event.key == K::BACKSPACE
        && case.ours == [0x08]
        && case.theirs == [0x7f]
}

/// A modifier key while an input method composes: the reference reports it (libghostty lets
/// plain modifiers through a composition); we send nothing for a composing key. The kitty
/// protocol does not say.
pub(super) fn kitty_modifier_keys_while_composing(case: &Case<'_>) -> bool {
    !legacy(case)
        && case.event.composing
        && case.ours.is_empty()
        && (modifier_key(case.event.key) || matches!(case.event.key, K::CAPS_LOCK | K::NUM_LOCK))
}

/// Line feed mode (LNM): Enter is CR LF in xterm, CR from the reference.
pub(super) fn lnm_ignored(case: &Case<'_>) -> bool {
    case.modes.line_feed
        && matches!(case.event.key, K::ENTER | K::NUMPAD_ENTER)
        && case.ours.ends_with(b"\r\n")
        && case.theirs.ends_with(b"\r")
        && case.ours[..case.ours.len() - 1] == *case.theirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csi_parses_fields_and_fills_kitty_defaults() {
        let c = Csi::parse(b"\x1b[97:65:113;6:2;65u").unwrap();
        assert_eq!(c.value(0), Some(97));
        assert_eq!(c.mods(), 6);
        assert_eq!(c.params[0], vec![Some(97), Some(65), Some(113)]);
        assert!(Csi::parse(b"\x1b[1;2").is_none());
        assert!(Csi::parse(b"a").is_none());
        assert_eq!(
            Csi::parse(b"\x1b[H").unwrap().kitty_full(),
            Csi::parse(b"\x1b[1;1:1H").unwrap().kitty_full()
        );
        assert_ne!(
            Csi::parse(b"\x1b[1;2H").unwrap().kitty_full(),
            Csi::parse(b"\x1b[1;1:1H").unwrap().kitty_full()
        );
    }
}
