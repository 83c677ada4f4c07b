//! One input at the start of the buffer, told by its shape: a character or C0 key, an SS3 or
//! CSI key, a mouse or focus report, a reply (named when the server answers its kind), a
//! string (DCS, OSC, APC), the start of a paste. The stream around it (what is held between
//! reads, the paste in progress, an over-long string dropped) is the [`Decoder`]'s.
//!
//! [`Decoder`]: super::Decoder

use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};

use super::{MAX_STRING, Reports, TtyInput};
use crate::keys::{char_key, physical_key};

/// One input read at the start of a buffer, with its length, or a cut sequence.
pub(super) enum Parsed {
    Item(usize, TtyInput),
    Incomplete,
}

/// Where a string (DCS, OSC, APC, PM, SOS) body starting at `from` ends, just past its
/// terminator: ST (`ESC \`), or BEL for an OSC.
pub(super) fn string_end(buf: &[u8], from: usize, bel_ends: bool) -> Option<usize> {
    let mut i = from;
    while i < buf.len() {
        match buf[i] {
            0x07 if bel_ends => return Some(i + 1),
            0x1b if buf.get(i + 1) == Some(&b'\\') => return Some(i + 2),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The xterm modifier parameter `m` (1 + shift 1 + alt 2 + ctrl 4 + super 8) as a set.
fn mods_of(param: u32) -> ModSet {
    let bits = param.saturating_sub(1);
    let mut mods = ModSet::NONE;
    for (bit, m) in [
        (1, ModSet::SHIFT),
        (2, ModSet::ALT),
        (4, ModSet::CTRL),
        (8, ModSet::SUPER),
    ] {
        if bits & bit != 0 {
            mods |= m;
        }
    }
    mods
}

fn key(physical: PhysicalKey, mods: ModSet) -> TtyInput {
    TtyInput::Key(KeyEvent::press(physical, mods))
}

/// A C0 byte as the key that sends it (Ctrl and a character, or a named key).
fn c0_key(byte: u8, mods: ModSet) -> KeyEvent {
    match byte {
        b'\r' => KeyEvent::press(PhysicalKey::ENTER, mods),
        b'\t' => KeyEvent::press(PhysicalKey::TAB, mods),
        0x1b => KeyEvent::press(PhysicalKey::ESCAPE, mods),
        0x7f => KeyEvent::press(PhysicalKey::BACKSPACE, mods),
        0x00 => {
            let mut space = KeyEvent::press(PhysicalKey::SPACE, mods | ModSet::CTRL);
            space.unshifted_codepoint = Some(u32::from(' '));
            space
        }
        // 0x1c-0x1f: C-\ C-] C-^ C-_ ; 0x01-0x1a: C-a .. C-z.
        0x1c => char_key('\\', mods | ModSet::CTRL),
        0x1d => char_key(']', mods | ModSet::CTRL),
        0x1e => char_key('^', mods | ModSet::CTRL),
        0x1f => char_key('_', mods | ModSet::CTRL),
        b => char_key(char::from(b'a' + (b & 0x1f) - 1), mods | ModSet::CTRL),
    }
}

/// The character starting `buf`, with its length; `Err(true)` when cut short, `Err(false)`
/// when not UTF-8.
fn utf8_char(buf: &[u8]) -> Result<(char, usize), bool> {
    let len = match buf.first() {
        Some(b) if *b < 0x80 => 1,
        Some(b) if b & 0xe0 == 0xc0 => 2,
        Some(b) if b & 0xf0 == 0xe0 => 3,
        Some(b) if b & 0xf8 == 0xf0 => 4,
        _ => return Err(false),
    };
    let Some(bytes) = buf.get(..len) else {
        return Err(true);
    };
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.chars().next())
        .map(|c| (c, len))
        .ok_or(false)
}

/// One input at the start of `buf` (not empty).
pub(super) fn parse(buf: &[u8], at_end: bool, reports: Reports) -> Parsed {
    let first = buf[0];
    if first != 0x1b {
        return plain(buf, ModSet::NONE, 0, at_end);
    }
    let Some(&second) = buf.get(1) else {
        return if at_end {
            Parsed::Item(1, key(PhysicalKey::ESCAPE, ModSet::NONE))
        } else {
            Parsed::Incomplete
        };
    };
    let sequence = match second {
        b'[' => csi(buf, reports),
        b'O' => ss3(buf),
        b'P' | b']' | b'_' | b'^' | b'X' => Some(string(buf, second)),
        _ => None,
    };
    match sequence {
        Some(parsed @ Parsed::Item(..)) => parsed,
        Some(Parsed::Incomplete) if !at_end => Parsed::Incomplete,
        // Not a sequence, or one that never completed: ESC then a key is Alt and that key.
        _ if second == 0x1b => Parsed::Item(1, key(PhysicalKey::ESCAPE, ModSet::NONE)),
        _ => plain(buf, ModSet::ALT, 1, at_end),
    }
}

/// A character or C0 key at `buf[at..]`, with `mods` (Alt after an ESC); its length counts
/// from the start of `buf`.
fn plain(buf: &[u8], mods: ModSet, at: usize, at_end: bool) -> Parsed {
    let rest = &buf[at..];
    match rest[0] {
        b if b < 0x20 || b == 0x7f => Parsed::Item(at + 1, TtyInput::Key(c0_key(b, mods))),
        _ => match utf8_char(rest) {
            Ok((c, len)) => Parsed::Item(at + len, TtyInput::Key(char_key(c, mods))),
            Err(true) if !at_end => Parsed::Incomplete,
            // A byte that starts no character (or a character cut for good) types nothing.
            Err(_) => Parsed::Item(at + 1, TtyInput::Ignored),
        },
    }
}

/// `ESC O x`: F1-F4, and the cursor keys and keypad in the terminal's application modes
/// (DECCKM, DECKPAM; ctlseqs' VT220 keypad table).
fn ss3(buf: &[u8]) -> Option<Parsed> {
    let Some(&last) = buf.get(2) else {
        return Some(Parsed::Incomplete);
    };
    let physical = match last {
        b'A' => PhysicalKey::ARROW_UP,
        b'B' => PhysicalKey::ARROW_DOWN,
        b'C' => PhysicalKey::ARROW_RIGHT,
        b'D' => PhysicalKey::ARROW_LEFT,
        b'H' => PhysicalKey::HOME,
        b'F' => PhysicalKey::END,
        b'E' => PhysicalKey::NUMPAD_BEGIN,
        b'P'..=b'S' => PhysicalKey(PhysicalKey::F1.0 + u32::from(last - b'P')),
        b'p'..=b'y' => PhysicalKey(PhysicalKey::NUMPAD0.0 + u32::from(last - b'p')),
        b'M' => PhysicalKey::NUMPAD_ENTER,
        b'k' => PhysicalKey::NUMPAD_ADD,
        b'm' => PhysicalKey::NUMPAD_SUBTRACT,
        b'j' => PhysicalKey::NUMPAD_MULTIPLY,
        b'o' => PhysicalKey::NUMPAD_DIVIDE,
        b'n' => PhysicalKey::NUMPAD_DECIMAL,
        b'X' => PhysicalKey::NUMPAD_EQUAL,
        b'l' => PhysicalKey::NUMPAD_SEPARATOR,
        _ => return None,
    };
    Some(Parsed::Item(
        3,
        TtyInput::Key(physical_key(physical, ModSet::NONE)),
    ))
}

/// A string sequence (`ESC P` DCS, `ESC ]` OSC, `ESC _` APC, `ESC ^` PM, `ESC X` SOS): a
/// reply, never a key.
fn string(buf: &[u8], kind: u8) -> Parsed {
    let Some(end) = string_end(buf, 2, kind == b']') else {
        if buf.len() > MAX_STRING {
            // [CLIENT.ATTACH.1] Too long to be a reply, and still not a key: dropped whole.
            return Parsed::Item(0, TtyInput::Ignored);
        }
        return Parsed::Incomplete;
    };
    let body = &buf[2..end];
    let item = match kind {
        // XTVERSION: DCS > | name ST.
        b'P' if body.starts_with(b">|") => TtyInput::AnsweredReply("XTVERSION"),
        // OSC 10 / 11 / 12: the default foreground, background and cursor colours.
        b']' if [&b"10;"[..], b"11;", b"12;"]
            .iter()
            .any(|p| body.starts_with(p)) =>
        {
            TtyInput::AnsweredReply("OSC 10/11/12")
        }
        _ => TtyInput::OtherReply(buf[..end].to_vec()),
    };
    Parsed::Item(end, item)
}

/// `ESC [ ...`: a key, a paste start, a focus or mouse report, or a reply.
fn csi(buf: &[u8], reports: Reports) -> Option<Parsed> {
    let mut i = 2;
    let marker = match buf.get(i) {
        Some(&m @ b'<'..=b'?') => {
            i += 1;
            Some(m)
        }
        Some(_) => None,
        None => return Some(Parsed::Incomplete),
    };
    let params_start = i;
    while buf.get(i).is_some_and(|b| (0x30..=0x3f).contains(b)) {
        i += 1;
    }
    let params = &buf[params_start..i];
    let inter_start = i;
    while buf.get(i).is_some_and(|b| (0x20..=0x2f).contains(b)) {
        i += 1;
    }
    let intermediates = &buf[inter_start..i];
    let Some(&fin) = buf.get(i) else {
        return Some(Parsed::Incomplete);
    };
    if !(0x40..=0x7e).contains(&fin) {
        // Not a well-formed CSI: the bytes are keys.
        return None;
    }
    let len = i + 1;
    // Parameter groups; within a group the first value (kitty's sub-parameters follow `:`).
    let groups: Vec<Vec<u32>> = params
        .split(|&b| b == b';')
        .map(|g| {
            g.split(|&b| b == b':')
                .map(|v| {
                    std::str::from_utf8(v)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0)
                })
                .collect()
        })
        .collect();
    let param = |n: usize| -> u32 { groups.get(n).and_then(|g| g.first().copied()).unwrap_or(0) };
    let modifier = || mods_of(param(1));
    // A key's event type (kitty, `CSI 1 ; m : e A`): a release is no key press at all.
    let event = groups.get(1).and_then(|g| g.get(1).copied()).unwrap_or(1);
    let key = |physical: PhysicalKey| match event {
        3 => TtyInput::Ignored,
        _ => key(physical, modifier()),
    };
    let item = match (marker, intermediates, fin) {
        // [CLIENT.ATTACH.2] The reply kinds the server answers from its own model.
        (Some(b'?'), [], b'c') => TtyInput::AnsweredReply("DA1"),
        (Some(b'>'), [], b'c') => TtyInput::AnsweredReply("DA2"),
        (Some(b'?'), [], b'R') => TtyInput::AnsweredReply("DECXCPR"),
        (None, [], b'R') if !params.is_empty() => TtyInput::CursorReport {
            f3: (param(0) == 1 && param(1) >= 2)
                .then(|| KeyEvent::press(PhysicalKey(PhysicalKey::F1.0 + 2), modifier())),
        },
        (Some(b'?') | None, [b'$'], b'y') => TtyInput::AnsweredReply("DECRPM"),
        (Some(b'?'), [], b'u') => TtyInput::AnsweredReply("kitty keyboard flags"),
        (None, [], b'n') if matches!(param(0), 0 | 3) && groups.len() == 1 => {
            TtyInput::AnsweredReply("DSR status")
        }
        // Keys.
        (None, [], b'A' | b'B' | b'C' | b'D' | b'H' | b'F' | b'P' | b'Q' | b'S' | b'R') => {
            let physical = match fin {
                b'A' => PhysicalKey::ARROW_UP,
                b'B' => PhysicalKey::ARROW_DOWN,
                b'C' => PhysicalKey::ARROW_RIGHT,
                b'D' => PhysicalKey::ARROW_LEFT,
                b'H' => PhysicalKey::HOME,
                b'F' => PhysicalKey::END,
                b'P' => PhysicalKey::F1,
                b'Q' => PhysicalKey(PhysicalKey::F1.0 + 1),
                b'R' => PhysicalKey(PhysicalKey::F1.0 + 2),
                _ => PhysicalKey(PhysicalKey::F1.0 + 3),
            };
            key(physical)
        }
        (None, [], b'E') => key(PhysicalKey::NUMPAD_BEGIN),
        (None, [], b'Z') => TtyInput::Key(KeyEvent::press(PhysicalKey::TAB, ModSet::SHIFT)),
        (None, [], b'~') if param(0) == 200 => TtyInput::Paste(Vec::new()),
        // modifyOtherKeys: `CSI 27 ; m ; k ~` is key `k` with modifiers `m`.
        (None, [], b'~') if param(0) == 27 && groups.len() == 3 => {
            code_key(param(2), modifier(), None)
        }
        (None, [], b'~') => match tilde_key(param(0)) {
            Some(physical) => key(physical),
            None => TtyInput::Ignored,
        },
        (None, [], b'u') => kitty_key(&groups),
        (None, [], b'I') if params.is_empty() && reports.focus => TtyInput::Focus(true),
        (None, [], b'O') if params.is_empty() && reports.focus => TtyInput::Focus(false),
        // Mouse reports: X10 (`CSI M` and three bytes) and SGR (`CSI < ... M/m`).
        (None, [], b'M') if params.is_empty() && reports.mouse => {
            if buf.len() < len + 3 {
                return Some(Parsed::Incomplete);
            }
            return Some(Parsed::Item(len + 3, TtyInput::Ignored));
        }
        (Some(b'<'), [], b'M' | b'm') if reports.mouse => TtyInput::Ignored,
        // The shape of a report the terminal is not sending: keys typed in a burst
        // (`ESC [ I` is Alt+[ then I).
        (None, [], b'I' | b'O' | b'M') if params.is_empty() => return None,
        (Some(b'<'), [], b'M' | b'm') => return None,
        // [CLIENT.ATTACH.3] Any other well-formed CSI a terminal sends is a reply (window
        // reports `CSI 8;r;c t`, colour-scheme reports `CSI ? 997;n n`, ...).
        _ => TtyInput::OtherReply(buf[..len].to_vec()),
    };
    Some(Parsed::Item(len, item))
}

/// `CSI n ~` keys.
fn tilde_key(n: u32) -> Option<PhysicalKey> {
    let f = |k: u32| Some(PhysicalKey(PhysicalKey::F1.0 + k - 1));
    match n {
        1 | 7 => Some(PhysicalKey::HOME),
        2 => Some(PhysicalKey::INSERT),
        3 => Some(PhysicalKey::DELETE),
        4 | 8 => Some(PhysicalKey::END),
        5 => Some(PhysicalKey::PAGE_UP),
        6 => Some(PhysicalKey::PAGE_DOWN),
        11..=15 => f(n - 10),
        17..=21 => f(n - 11),
        23..=26 => f(n - 12),
        28 | 29 => f(n - 13),
        31..=34 => f(n - 14),
        _ => None,
    }
}

/// `CSI code[:shifted[:base]] [; mods[:event] [; text]] u`: a key in the kitty keyboard
/// protocol (the program's output may have turned it on in this terminal), or fixterms'
/// `CSI code ; mods u` (tmux's extended keys).
fn kitty_key(groups: &[Vec<u32>]) -> TtyInput {
    let code_group = groups.first();
    let code = code_group.and_then(|g| g.first().copied()).unwrap_or(0);
    let mods_group = groups.get(1);
    let mods = mods_of(mods_group.and_then(|g| g.first().copied()).unwrap_or(1));
    let action = match mods_group.and_then(|g| g.get(1).copied()).unwrap_or(1) {
        2 => KeyAction::Repeat,
        3 => return TtyInput::Ignored,
        _ => KeyAction::Press,
    };
    // The text the key typed: the associated text when the terminal reports it, else the
    // shifted key when Shift is held.
    let text: Option<String> = match groups.get(2) {
        Some(points) => points.iter().map(|&p| char::from_u32(p)).collect(),
        None => code_group
            .and_then(|g| g.get(1).copied())
            .filter(|&s| s != 0 && mods.contains(ModSet::SHIFT))
            .and_then(char::from_u32)
            .map(String::from),
    };
    match code_key(
        code,
        mods,
        text.filter(|t| !t.chars().any(char::is_control)),
    ) {
        TtyInput::Key(mut event) => {
            event.action = action;
            TtyInput::Key(event)
        }
        other => other,
    }
}

/// The key whose kitty / modifyOtherKeys code is `code` (a character, or one of kitty's
/// functional-key numbers), with `mods`; `text`, when known, is what it typed.
fn code_key(code: u32, mods: ModSet, text: Option<String>) -> TtyInput {
    let numbered = |first: PhysicalKey, from: u32| PhysicalKey(first.0 + code - from);
    let physical = match code {
        27 => PhysicalKey::ESCAPE,
        13 => PhysicalKey::ENTER,
        9 => PhysicalKey::TAB,
        8 | 127 => PhysicalKey::BACKSPACE,
        // F13-F25 (kitty numbers F13-F35; phux has keys up to F25).
        57376..=57388 => numbered(PhysicalKey(PhysicalKey::F1.0 + 12), 57376),
        // The keypad: 0-9, then decimal, divide, multiply, subtract, add, enter, equal,
        // separator, left, right, up, down, page up, page down, home, end, insert, delete,
        // begin.
        57399..=57408 => numbered(PhysicalKey::NUMPAD0, 57399),
        57409..=57427 => [
            PhysicalKey::NUMPAD_DECIMAL,
            PhysicalKey::NUMPAD_DIVIDE,
            PhysicalKey::NUMPAD_MULTIPLY,
            PhysicalKey::NUMPAD_SUBTRACT,
            PhysicalKey::NUMPAD_ADD,
            PhysicalKey::NUMPAD_ENTER,
            PhysicalKey::NUMPAD_EQUAL,
            PhysicalKey::NUMPAD_SEPARATOR,
            PhysicalKey::NUMPAD_LEFT,
            PhysicalKey::NUMPAD_RIGHT,
            PhysicalKey::NUMPAD_UP,
            PhysicalKey::NUMPAD_DOWN,
            PhysicalKey::NUMPAD_PAGE_UP,
            PhysicalKey::NUMPAD_PAGE_DOWN,
            PhysicalKey::NUMPAD_HOME,
            PhysicalKey::NUMPAD_END,
            PhysicalKey::NUMPAD_INSERT,
            PhysicalKey::NUMPAD_DELETE,
            PhysicalKey::NUMPAD_BEGIN,
        ][(code - 57409) as usize],
        _ => {
            return match char::from_u32(code).filter(|c| !c.is_control() && !is_private(*c)) {
                Some(c) => {
                    let mut event = char_key(c, mods);
                    if let Some(text) = text {
                        event.text = Some(text);
                    }
                    TtyInput::Key(event)
                }
                // Lock, modifier and media keys, kitty's higher F-keys, and private-use code
                // points no key types (tmux sends its own internal numbers as codes): nothing
                // a program reads in the modes a terminal starts in.
                None => TtyInput::Ignored,
            };
        }
    };
    let mut event = physical_key(physical, mods);
    if let Some(text) = text.filter(|_| event.text.is_some()) {
        event.text = Some(text);
    }
    TtyInput::Key(event)
}

/// A code point in a private-use area (kitty numbers its functional keys there).
fn is_private(c: char) -> bool {
    matches!(u32::from(c), 0xe000..=0xf8ff | 0xf_0000..)
}
