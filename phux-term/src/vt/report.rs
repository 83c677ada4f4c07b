//! Replies to the program's queries: device attributes, status and cursor reports, mode
//! reports, the version, the dynamic colours and the kitty keyboard flags.
//!
//! The terminal answers as xterm does (ctlseqs names each form); the replies wait in
//! [`Vt::replies`] until the server takes them and writes them to the PTY. That queue is
//! bounded by [`MAX_REPLY_BYTES`]: a program that floods queries without reading the answers
//! loses the answers past the bound, never grows the server's memory.

use std::io::Write;

use super::Vt;
use crate::MAX_REPLY_BYTES;
use crate::modes::{MouseEncoding, MouseTracking};

/// The version XTVERSION reports and DA2 encodes.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A dynamic colour of OSC 10 (foreground), 11 (background) or 12 (cursor), 16 bits per
/// channel as xterm reports them.
pub(crate) type Rgb = [u16; 3];

/// The dynamic colours a fresh terminal reports: light grey text on black, the look of most
/// terminals (a program such as vim picks its palette from the background it is told).
pub(crate) const DEFAULT_COLORS: [Rgb; 3] = [
    [0xe5e5, 0xe5e5, 0xe5e5],
    [0x0000, 0x0000, 0x0000],
    [0xe5e5, 0xe5e5, 0xe5e5],
];

/// How an OSC string ended; a reply to it ends the same way (xterm's `osc_reply_end`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum OscEnd {
    /// BEL.
    Bel,
    /// ST (`ESC \`).
    St,
    /// CAN or SUB cut it short: it is not answered.
    Aborted,
}

/// A DECRQM report value (ctlseqs, "Request ANSI Mode" / "Request DEC Private Mode").
#[derive(Clone, Copy)]
enum ModeState {
    NotRecognized = 0,
    Set = 1,
    Reset = 2,
}

impl From<bool> for ModeState {
    fn from(set: bool) -> Self {
        if set { Self::Set } else { Self::Reset }
    }
}

impl Vt {
    /// Queues one reply, whole or not at all.
    fn reply(&mut self, args: std::fmt::Arguments<'_>) {
        let before = self.replies.len();
        // [OUTPUT.REPLY.3] Whole replies, up to the bound.
        // Writing into a Vec cannot fail.
        let _ = self.replies.write_fmt(args);
        if self.replies.len() > MAX_REPLY_BYTES {
            self.replies.truncate(before);
        }
    }

    /// DA1, `CSI c` / `CSI 0 c`. ctlseqs "Send Device Attributes (Primary DA)": `CSI ? 6 2 ; Ps
    /// c` is a VT220; `Ps = 2 2` ANSI color. We claim no more than we draw: no sixel, no
    /// rectangular editing, no left/right margins.
    pub(super) fn primary_attributes(&mut self) {
        self.reply(format_args!("\x1b[?62;22c"));
    }

    /// DA2, `CSI > c` / `CSI > 0 c`. ctlseqs "Send Device Attributes (Secondary DA)": `CSI > Pp
    /// ; Pv ; Pc c`, `Pp = 1` a VT220, `Pv` the firmware version, `Pc` 0 (the ROM cartridge).
    pub(super) fn secondary_attributes(&mut self) {
        let mut parts = VERSION
            .split('.')
            .map(|p| p.parse::<u32>().unwrap_or(0).min(99));
        let mut next = || parts.next().unwrap_or(0);
        let version = next() * 10_000 + next() * 100 + next();
        self.reply(format_args!("\x1b[>1;{version};0c"));
    }

    /// XTVERSION, `CSI > q` / `CSI > 0 q`. ctlseqs: "The response is a DSR sequence identifying
    /// the version: `DCS > | text ST`".
    pub(super) fn report_version(&mut self) {
        self.reply(format_args!("\x1bP>|phux-rs {VERSION}\x1b\\"));
    }

    /// DSR, `CSI Ps n` and `CSI ? Ps n`. ctlseqs "Device Status Report": `Ps = 5` status report,
    /// answered `CSI 0 n` (OK); `Ps = 6` CPR, answered `CSI r ; c R`; DECXCPR `CSI ? 6 n`,
    /// answered `CSI ? r ; c ; p R` with page 1. With origin mode (DECOM) set the row counts
    /// from the top margin (xterm's `CursorRow - top` in `CASE_CPR`).
    pub(super) fn device_status(&mut self, private: bool, ps: u16) {
        let row = self
            .cur
            .y
            .saturating_sub(if self.origin { self.top } else { 0 })
            + 1;
        let col = self.cur.x + 1;
        match (private, ps) {
            (false, 5) => self.reply(format_args!("\x1b[0n")),
            (false, 6) => self.reply(format_args!("\x1b[{row};{col}R")),
            (true, 6) => self.reply(format_args!("\x1b[?{row};{col};1R")),
            _ => {}
        }
    }

    /// DECRQM, `CSI Ps $ p` (ANSI) and `CSI ? Ps $ p` (DEC private). ctlseqs: answered
    /// `CSI Ps ; Pm $ y` / `CSI ? Ps ; Pm $ y`, `Pm` 0 not recognized, 1 set, 2 reset.
    pub(super) fn report_mode(&mut self, private: bool, mode: u16) {
        let state = if private {
            self.dec_mode_state(mode)
        } else {
            match mode {
                4 => ModeState::from(self.insert),
                20 => ModeState::from(self.line_feed_mode),
                _ => ModeState::NotRecognized,
            }
        };
        let marker = if private { "?" } else { "" };
        self.reply(format_args!("\x1b[{marker}{mode};{}$y", state as u8));
    }

    fn dec_mode_state(&self, mode: u16) -> ModeState {
        let modes = self.tracker.modes();
        let tracking = |t: MouseTracking| ModeState::from(modes.mouse_tracking == t);
        let encoding = |e: MouseEncoding| ModeState::from(modes.mouse_encoding == e);
        match mode {
            1 => modes.application_cursor_keys.into(),
            6 => self.origin.into(),
            7 => self.autowrap.into(),
            25 => (!self.cursor_hidden).into(),
            47 | 1047 | 1049 => self.alt_active.into(),
            66 => modes.application_keypad.into(),
            67 => modes.backarrow_sends_backspace.into(),
            9 => tracking(MouseTracking::X10),
            1000 => tracking(MouseTracking::Normal),
            1002 => tracking(MouseTracking::ButtonEvent),
            1003 => tracking(MouseTracking::AnyEvent),
            1004 => modes.focus_reporting.into(),
            1005 => encoding(MouseEncoding::Utf8),
            1006 => encoding(MouseEncoding::Sgr),
            1015 => encoding(MouseEncoding::Urxvt),
            1016 => encoding(MouseEncoding::SgrPixels),
            2004 => modes.bracketed_paste.into(),
            _ => ModeState::NotRecognized,
        }
    }

    /// The kitty keyboard protocol's query, `CSI ? u`: answered `CSI ? flags u` with the flags
    /// in force on the active screen.
    pub(super) fn report_kitty_flags(&mut self) {
        let flags = self.tracker.modes().kitty_flags.0;
        self.reply(format_args!("\x1b[?{flags}u"));
    }

    /// OSC 10 / 11 / 12 (and 110 / 111 / 112): set, query or reset a dynamic colour. ctlseqs
    /// "Operating System Commands", `Ps = 1 0`: each further parameter applies to the next
    /// colour in turn; "If a "?" is given rather than a name or RGB specification, xterm replies
    /// with a control sequence of the same form", ended as the query was.
    pub(super) fn dynamic_colors(&mut self, first: usize, specs: &[u8], end: OscEnd) {
        for (i, spec) in specs.split(|&b| b == b';').enumerate() {
            let Some(slot) = first.checked_add(i).filter(|&s| s < 3) else {
                break;
            };
            if spec == b"?" {
                if end == OscEnd::Aborted {
                    continue;
                }
                let [r, g, b] = self.colors[slot];
                let terminator = if end == OscEnd::Bel { "\x07" } else { "\x1b\\" };
                self.reply(format_args!(
                    "\x1b]{};rgb:{r:04x}/{g:04x}/{b:04x}{terminator}",
                    slot + 10
                ));
            } else if let Some(rgb) = parse_color(spec) {
                self.colors[slot] = rgb;
            }
        }
    }

    /// OSC 110 / 111 / 112: the colour goes back to its default.
    pub(super) fn reset_dynamic_color(&mut self, slot: usize) {
        if let (Some(c), Some(d)) = (self.colors.get_mut(slot), DEFAULT_COLORS.get(slot)) {
            *c = *d;
        }
    }
}

/// An X colour specification in the forms programs send: `rgb:r/g/b` with 1 to 4 hex digits
/// per channel (scaled to 16 bits), or `#rgb`, `#rrggbb`, `#rrrgggbbb`, `#rrrrggggbbbb` (the
/// digits are the high bits). Colour names are not known here.
fn parse_color(spec: &[u8]) -> Option<Rgb> {
    let spec = std::str::from_utf8(spec).ok()?;
    let hex = |s: &str| {
        (1..=4).contains(&s.len()).then_some(())?;
        u16::from_str_radix(s, 16).ok()
    };
    if let Some(rest) = spec.strip_prefix("rgb:") {
        let mut out = [0u16; 3];
        let mut parts = rest.split('/');
        for c in &mut out {
            let part = parts.next()?;
            let max = (1u32 << (4 * part.len())) - 1;
            *c = (u32::from(hex(part)?) * 0xffff / max) as u16;
        }
        return parts.next().is_none().then_some(out);
    }
    let digits = spec.strip_prefix('#')?;
    let n = digits.len() / 3;
    if digits.len() % 3 != 0 || !(1..=4).contains(&n) {
        return None;
    }
    let mut out = [0u16; 3];
    for (i, c) in out.iter_mut().enumerate() {
        *c = hex(digits.get(i * n..(i + 1) * n)?)? << (16 - 4 * n);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::parse_color;

    #[test]
    fn colour_specifications() {
        assert_eq!(parse_color(b"rgb:ff/80/00"), Some([0xffff, 0x8080, 0]));
        assert_eq!(parse_color(b"rgb:f/8/0"), Some([0xffff, 0x8888, 0]));
        assert_eq!(parse_color(b"rgb:1234/abcd/0"), Some([0x1234, 0xabcd, 0]));
        assert_eq!(parse_color(b"#f80"), Some([0xf000, 0x8000, 0]));
        assert_eq!(parse_color(b"#ff8000"), Some([0xff00, 0x8000, 0]));
        for bad in [
            &b"red"[..],
            b"rgb:1/2",
            b"rgb:1/2/3/4",
            b"rgb:12345/0/0",
            b"#12",
            b"#",
        ] {
            assert_eq!(parse_color(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
