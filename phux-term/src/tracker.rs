//! The modes the input encoder needs, kept current from the program's output.
//!
//! [`ModeTracker`] owns every mode [`TerminalModes`] holds, including the kitty flag stacks.
//! In the server the grid's parser ([`super::vt`]) hands it each CSI and ESC sequence it
//! dispatches ([`ModeTracker::csi`], [`ModeTracker::esc`]), so the stream is parsed once and
//! the modes can never disagree with the screen. The tracker also has its own small byte
//! scanner ([`ModeTracker::advance`]), whose state machine follows the DEC ANSI parser `vte`
//! implements; the tests run it over the same streams as the reference reading of the modes.
//! It never allocates.
// The byte scanner is the tests' reference reading (see above); production feeds `csi` / `esc`.
#![cfg_attr(not(test), allow(dead_code))]

use crate::kitty::KittyStack;
use crate::modes::{MouseEncoding, MouseTracking, TerminalModes};

/// `vte` keeps at most this many parameters and sub-parameters; later ones are dropped.
const MAX_PARAMS: usize = 32;

/// Something the owner of the grid must act on at the final byte of a sequence.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Hit {
    /// A DEC private mode 47 / 1047 / 1049 was set or reset: the grid must be brought to the
    /// same screen (`vt100` ignores 1047), and the main screen saved before leaving it.
    AltScreen,
    /// `CSI 3 J` on the main screen: the retained history is erased.
    ClearHistory,
}

/// What one call of [`ModeTracker::advance`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Advance {
    /// Bytes consumed. With a hit, the last consumed byte is the sequence's final byte.
    pub(crate) consumed: usize,
    pub(crate) hit: Option<Hit>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
enum State {
    /// Text, and the bodies of OSC / DCS / SOS / PM / APC strings: none of their bytes matter
    /// here, and every one of them is left by ESC (which starts a new sequence) or CAN / SUB.
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
}

/// The scanner plus the modes it maintains.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct ModeTracker {
    state: State,
    /// First intermediate (or private marker) byte of the sequence, 0 if none.
    first_intermediate: u8,
    intermediates: u8,
    /// Per parameter group: its first value and how many values it has.
    group_first: [u16; MAX_PARAMS],
    group_len: [u8; MAX_PARAMS],
    groups: usize,
    /// Values stored so far (parameters plus sub-parameters), capped at `MAX_PARAMS`.
    total: usize,
    /// The value being accumulated and the open group's first value / length.
    value: u16,
    open_first: u16,
    open_len: u8,

    modes: TerminalModes,
    /// Kitty flag stacks: index 0 main screen, 1 alternate screen.
    kitty: [KittyStack; 2],
}

impl ModeTracker {
    /// Whether the scanner's counters are within its arrays (for a tracker read back as data).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        if self.groups <= MAX_PARAMS
            && self.total <= MAX_PARAMS
            && self.kitty.iter().all(KittyStack::is_valid)
        {
            Ok(())
        } else {
            Err("mode tracker: counters out of range")
        }
    }

    /// The modes in force, with the kitty flags of the active screen.
    pub(crate) fn modes(&self) -> TerminalModes {
        let mut modes = self.modes;
        modes.kitty_flags = self.kitty_stack(modes.alternate_screen).current();
        modes
    }

    /// The kitty stack of the main (`false`) or alternate (`true`) screen.
    pub(crate) fn kitty_stack(&self, alternate: bool) -> &KittyStack {
        &self.kitty[usize::from(alternate)]
    }

    /// Whether the alternate screen is active.
    pub(crate) fn alternate_screen(&self) -> bool {
        self.modes.alternate_screen
    }

    /// Scans `bytes`, stopping just after the final byte of a sequence that is a [`Hit`].
    pub(crate) fn advance(&mut self, bytes: &[u8]) -> Advance {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Ground {
                // Only ESC leaves the ground state (vte does the same; C1 bytes are not
                // controls in a UTF-8 stream), so skip straight to it.
                match bytes[i..].iter().position(|&b| b == 0x1b) {
                    Some(at) => {
                        i += at + 1;
                        self.enter_escape();
                    }
                    None => {
                        return Advance {
                            consumed: bytes.len(),
                            hit: None,
                        };
                    }
                }
                continue;
            }
            let byte = bytes[i];
            i += 1;
            if let Some(hit) = self.step(byte) {
                return Advance {
                    consumed: i,
                    hit: Some(hit),
                };
            }
        }
        Advance {
            consumed: bytes.len(),
            hit: None,
        }
    }

    fn enter_escape(&mut self) {
        self.state = State::Escape;
        self.first_intermediate = 0;
        self.intermediates = 0;
        self.groups = 0;
        self.total = 0;
        self.value = 0;
        self.open_first = 0;
        self.open_len = 0;
    }

    /// One byte outside the ground state.
    fn step(&mut self, byte: u8) -> Option<Hit> {
        // Anywhere: CAN and SUB abort, ESC restarts.
        match byte {
            0x18 | 0x1a => {
                self.state = State::Ground;
                return None;
            }
            0x1b => {
                self.enter_escape();
                return None;
            }
            // Other C0 controls are executed without disturbing the sequence.
            0x00..=0x1f => return None,
            _ => {}
        }
        match self.state {
            State::Ground => None,
            State::Escape => match byte {
                0x20..=0x2f => {
                    self.collect(byte);
                    self.state = State::EscapeIntermediate;
                    None
                }
                b'[' => {
                    self.state = State::CsiEntry;
                    None
                }
                // OSC, DCS, SOS, PM, APC: their bodies are skipped as ground.
                b']' | b'P' | b'X' | b'^' | b'_' => {
                    self.state = State::Ground;
                    None
                }
                0x30..=0x7e => {
                    self.state = State::Ground;
                    self.esc_dispatch(byte)
                }
                _ => None,
            },
            State::EscapeIntermediate => match byte {
                0x20..=0x2f => {
                    self.collect(byte);
                    None
                }
                // An escape with intermediates (charset designations and the like) changes
                // no mode we track.
                0x30..=0x7e => {
                    self.state = State::Ground;
                    None
                }
                _ => None,
            },
            State::CsiEntry | State::CsiParam => match byte {
                0x20..=0x2f => {
                    self.collect(byte);
                    self.state = State::CsiIntermediate;
                    None
                }
                b'0'..=b'9' => {
                    self.digit(byte);
                    self.state = State::CsiParam;
                    None
                }
                b':' => {
                    self.sub_separator();
                    self.state = State::CsiParam;
                    None
                }
                b';' => {
                    self.separator();
                    self.state = State::CsiParam;
                    None
                }
                0x3c..=0x3f if self.state == State::CsiEntry => {
                    self.collect(byte);
                    self.state = State::CsiParam;
                    None
                }
                0x3c..=0x3f => {
                    self.state = State::CsiIgnore;
                    None
                }
                0x40..=0x7e => {
                    self.state = State::Ground;
                    self.csi_dispatch(byte)
                }
                _ => None,
            },
            State::CsiIntermediate => match byte {
                0x20..=0x2f => {
                    self.collect(byte);
                    None
                }
                0x30..=0x3f => {
                    self.state = State::CsiIgnore;
                    None
                }
                0x40..=0x7e => {
                    self.state = State::Ground;
                    self.csi_dispatch(byte)
                }
                _ => None,
            },
            State::CsiIgnore => {
                if (0x40..=0x7e).contains(&byte) {
                    self.state = State::Ground;
                }
                None
            }
        }
    }

    fn collect(&mut self, byte: u8) {
        if self.intermediates == 0 {
            self.first_intermediate = byte;
        }
        self.intermediates = self.intermediates.saturating_add(1);
    }

    fn digit(&mut self, byte: u8) {
        if self.total < MAX_PARAMS {
            self.value = self
                .value
                .saturating_mul(10)
                .saturating_add(u16::from(byte - b'0'));
        }
    }

    /// `:` adds a value to the open group.
    fn sub_separator(&mut self) {
        if self.total < MAX_PARAMS {
            self.store_value();
        }
    }

    /// `;` closes the open group.
    fn separator(&mut self) {
        if self.total < MAX_PARAMS {
            self.store_value();
            self.close_group();
        }
    }

    fn store_value(&mut self) {
        if self.open_len == 0 {
            self.open_first = self.value;
        }
        self.open_len = self.open_len.saturating_add(1);
        self.total += 1;
        self.value = 0;
    }

    fn close_group(&mut self) {
        if self.groups < MAX_PARAMS {
            self.group_first[self.groups] = self.open_first;
            self.group_len[self.groups] = self.open_len;
            self.groups += 1;
        }
        self.open_len = 0;
    }

    /// The parameter groups of the sequence just finished, as (first value, plain) where
    /// `plain` means the group has no sub-parameters.
    fn groups(&self) -> impl Iterator<Item = (u16, bool)> + '_ {
        self.group_first[..self.groups]
            .iter()
            .zip(&self.group_len[..self.groups])
            .map(|(&first, &len)| (first, len == 1))
    }

    fn first_param(&self) -> u16 {
        self.groups().next().map_or(0, |(v, _)| v)
    }

    fn esc_dispatch(&mut self, byte: u8) -> Option<Hit> {
        match byte {
            // DECKPAM / DECKPNM.
            b'=' => self.modes.application_keypad = true,
            b'>' => self.modes.application_keypad = false,
            // RIS: every mode and both kitty stacks back to their power-on state.
            b'c' => {
                self.modes = TerminalModes::default();
                self.kitty = [KittyStack::default(); 2];
            }
            _ => {}
        }
        None
    }

    /// One CSI sequence as the grid's parser read it: the first intermediate (or private
    /// marker) byte, the parameter groups (each a value and its sub-parameters) and the final
    /// byte.
    pub(crate) fn csi<'a>(
        &mut self,
        marker: Option<u8>,
        groups: impl Iterator<Item = &'a [u16]>,
        byte: u8,
    ) {
        self.first_intermediate = marker.unwrap_or(0);
        self.intermediates = u8::from(marker.is_some());
        self.groups = 0;
        for group in groups.take(MAX_PARAMS) {
            self.group_first[self.groups] = group.first().copied().unwrap_or(0);
            self.group_len[self.groups] = group.len().min(usize::from(u8::MAX)) as u8;
            self.groups += 1;
        }
        self.dispatch_csi(byte);
    }

    /// One ESC sequence without intermediates, as the grid's parser read it.
    pub(crate) fn esc(&mut self, byte: u8) {
        self.esc_dispatch(byte);
    }

    fn csi_dispatch(&mut self, byte: u8) -> Option<Hit> {
        // The final value is stored unless the parameter list is already full.
        if self.total < MAX_PARAMS {
            self.store_value();
            self.close_group();
        } else if self.open_len > 0 {
            self.close_group();
        }
        self.dispatch_csi(byte)
    }

    fn dispatch_csi(&mut self, byte: u8) -> Option<Hit> {
        let marker = if self.intermediates == 0 {
            None
        } else {
            Some(self.first_intermediate)
        };
        match (marker, byte) {
            (Some(b'?'), b'h' | b'l') => self.dec_modes(byte == b'h'),
            (None, b'h' | b'l') => {
                if self.groups().any(|(value, plain)| plain && value == 20) {
                    self.modes.line_feed_mode = byte == b'h';
                }
                None
            }
            // ED 3 (also as DECSED) erases the saved lines; the alternate screen has none.
            (None | Some(b'?'), b'J')
                if self.first_param() == 3 && !self.modes.alternate_screen =>
            {
                Some(Hit::ClearHistory)
            }
            (Some(marker @ (b'>' | b'<' | b'=')), b'u') => {
                self.kitty_op(marker);
                None
            }
            _ => None,
        }
    }

    fn dec_modes(&mut self, set: bool) -> Option<Hit> {
        let mut hit = None;
        for i in 0..self.groups {
            // vt100 acts only on a mode number without sub-parameters; so do we.
            if self.group_len[i] != 1 {
                continue;
            }
            let m = &mut self.modes;
            match self.group_first[i] {
                1 => m.application_cursor_keys = set,
                9 | 1000 | 1002 | 1003 if !set => m.mouse_tracking = MouseTracking::Off,
                9 => m.mouse_tracking = MouseTracking::X10,
                1000 => m.mouse_tracking = MouseTracking::Normal,
                1002 => m.mouse_tracking = MouseTracking::ButtonEvent,
                1003 => m.mouse_tracking = MouseTracking::AnyEvent,
                1004 => m.focus_reporting = set,
                n @ (1005 | 1006 | 1015 | 1016) => {
                    let encoding = match n {
                        1005 => MouseEncoding::Utf8,
                        1006 => MouseEncoding::Sgr,
                        1015 => MouseEncoding::Urxvt,
                        _ => MouseEncoding::SgrPixels,
                    };
                    if set {
                        m.mouse_encoding = encoding;
                    } else if m.mouse_encoding == encoding {
                        m.mouse_encoding = MouseEncoding::X10;
                    }
                }
                67 => m.backarrow_sends_backspace = set,
                2004 => m.bracketed_paste = set,
                47 | 1047 | 1049 => {
                    m.alternate_screen = set;
                    hit = Some(Hit::AltScreen);
                }
                _ => {}
            }
        }
        hit
    }

    fn kitty_op(&mut self, marker: u8) {
        let first = if self.groups > 0 {
            self.group_first[0]
        } else {
            0
        };
        let second = if self.groups > 1 {
            Some(self.group_first[1])
        } else {
            None
        };
        let stack = &mut self.kitty[usize::from(self.modes.alternate_screen)];
        // Flags above the defined bits are dropped by `KittyStack`; truncation first is fine
        // because no defined bit lies above bit 4.
        let flags = (first & 0xff) as u8;
        match marker {
            b'>' => stack.push(flags),
            b'<' => stack.pop(first.max(1)),
            _ => stack.set(flags, second.filter(|&m| m != 0).unwrap_or(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(bytes: &[u8]) -> (ModeTracker, Vec<Hit>) {
        let mut t = ModeTracker::default();
        let mut hits = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let a = t.advance(rest);
            hits.extend(a.hit);
            rest = &rest[a.consumed..];
        }
        (t, hits)
    }

    #[test]
    fn hits_are_reported_at_the_final_byte() {
        let mut t = ModeTracker::default();
        let a = t.advance(b"ab\x1b[?1049hcd");
        assert_eq!(
            a,
            Advance {
                consumed: 10,
                hit: Some(Hit::AltScreen)
            }
        );
        assert!(t.alternate_screen());
        let (_, hits) = scan(b"x\x1b[3Jy\x1b[?1049h\x1b[3J");
        assert_eq!(
            hits,
            [Hit::ClearHistory, Hit::AltScreen],
            "no ClearHistory on the alternate"
        );
    }

    #[test]
    fn controls_inside_a_sequence_do_not_abort_it_but_can_and_esc_do() {
        assert!(scan(b"\x1b[?1\n004h").0.modes().focus_reporting);
        assert!(!scan(b"\x1b[?10\x1804h").0.modes().focus_reporting);
        assert!(scan(b"\x1b[?10\x1b[?1004h").0.modes().focus_reporting);
    }

    #[test]
    fn sub_parameters_and_ignored_sequences() {
        assert!(!scan(b"\x1b[?1004:1h").0.modes().focus_reporting);
        assert!(!scan(b"\x1b[?1?004h").0.modes().focus_reporting);
        // A string body cannot hide a mode change that follows its terminator.
        assert!(!scan(b"\x1b]2;a[?1004h\x07").0.modes().focus_reporting);
        assert!(
            scan(b"\x1b]2;a[?1004h\x07\x1b[?1004h")
                .0
                .modes()
                .focus_reporting
        );
    }
}
