//! Kitty keyboard protocol.

use phux_proto::input::{KeyAction, KeyEvent, ModSet};

use super::legacy::{backspace_byte, fkey_tilde, push_enter};
use super::table::{Kind, classify};
use super::{
    clean_text, derived_char, lower, printable, push_char, push_decimal, remove, single_char, upper,
};
use crate::modes::{KittyFlags, TerminalModes};

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

pub(super) fn kitty(key: &KeyEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
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
        Kind::Keypad {
            kitty: code, ch, ..
        } => {
            if !report_all
                && !release
                && no_action_mods
                && let Some(text) = text
            {
                out.extend_from_slice(text.as_bytes());
                return;
            }
            let Some(code) = code else {
                // Keypad parentheses have no kitty code: they are text keys, typing their
                // character.
                let ctx = TextCtx {
                    report_all,
                    assoc,
                    alternates,
                    derive: true,
                };
                let typed = ch.map(|c| (char::from(c), char::from(c)));
                return kitty_text_key(key, typed, &mut seq, ctx, out);
            };
            // Sent as an escape code, the key carries the lock modifiers too (kitty strips them
            // only in legacy mode: key_encoding.c convert_glfw_mods), and its text when
            // associated text is reported, as any key's (kitty: init_encoding_data).
            seq.code = code;
            if assoc && !release && no_action_mods {
                seq.text = text.map(str::to_owned);
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
        Kind::Menu => seq.code = 57363,
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
        } else if derive && let Some(c) = derived_char(key, us) {
            push_char(out, c);
        }
        return;
    }
    // [INPUT.ENCODE.KITTY.8] The key code is the unshifted (lower-case) code point; 0 when no
    // key is known for the text. Without the client's unshifted code point, a text key's
    // text tells it when it can (a letter's lower case, or an unshifted key's own character:
    // the Russian `п`, the French `é`), else the US layout's key. Not when the system used
    // Option or AltGr to make the text (`å` is not a key).
    let shift = key.mods.contains(ModSet::SHIFT);
    let layout_text = remove(key.consumed_mods, ModSet::SHIFT) == ModSet::NONE;
    let from_text = text
        .and_then(single_char)
        .filter(|_| derive && layout_text)
        .and_then(|c| {
            if c.is_alphabetic() {
                Some(lower(c))
            } else {
                (!shift).then_some(c)
            }
        });
    let unshifted = key
        .unshifted_codepoint
        .and_then(printable)
        .or(from_text)
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
            // The text, else the US layout's shifted key when the code is the US one, else
            // the capital.
            let us_shifted = us.filter(|(base, _)| *base == code).map(|(_, s)| s);
            let shifted = text
                .and_then(single_char)
                .filter(|c| *c != code)
                .or_else(|| us_shifted.filter(|c| *c != code))
                .or_else(|| upper(code).filter(|c| *c != code));
            seq.shifted = shifted.map(u32::from);
        }
        seq.base = us
            .map(|(base, _)| base)
            .filter(|b| *b != code)
            .map(u32::from);
    }
    // [INPUT.ENCODE.KITTY.9] Associated text (report-all-keys + report-associated-text) as
    // code points in the third field; releases carry none, and nor does a key with Ctrl, Alt
    // or Super held (those make no text: kitty reports `alt+a` with text only when the system
    // consumed Alt to type `å`).
    if assoc && !release && !eff_action {
        seq.text = text.map(str::to_owned);
    }
    seq.write(out);
}
