//! The DEC ANSI parser state machine: the bytes the text fast path in
//! [`Vt::advance`](super::Vt::advance) does not take, one at a time, with UTF-8 decoding,
//! parameters and intermediates collected for dispatch.

use super::report::OscEnd;
use super::{MAX_INTERMEDIATES, MAX_OSC, State, Utf8, Vt};

impl Vt {
    pub(super) fn ground(&mut self, b: u8) {
        if self.utf8.need > 0 {
            if (self.utf8.lo..=self.utf8.hi).contains(&b) {
                self.utf8.cp = (self.utf8.cp << 6) | u32::from(b & 0x3f);
                self.utf8.need -= 1;
                self.utf8.lo = 0x80;
                self.utf8.hi = 0xbf;
                if self.utf8.need == 0 {
                    self.print_decoded(char::from_u32(self.utf8.cp).unwrap_or('\u{fffd}'));
                }
                return;
            }
            // The sequence broke off: it shows as one replacement character, and this byte
            // starts afresh.
            self.utf8.need = 0;
            self.print_decoded('\u{fffd}');
        }
        match b {
            0x1b => self.enter(State::Escape),
            0x00..=0x1f => {
                self.execute(b);
                // [xterm] Back in the ground state after anything but a printed character,
                // `doparsing` sets `lastchar` to -1: REP then repeats nothing.
                self.last_char = None;
            }
            0x20..=0x7e => self.print_text(std::slice::from_ref(&b)),
            // DEL is ignored; a lone C1 byte is a control we do not act on (as in vt100).
            0x7f..=0x9f => self.last_char = None,
            0xc2..=0xdf => self.utf8_lead(1, b & 0x1f, 0x80, 0xbf),
            0xe0 => self.utf8_lead(2, b & 0x0f, 0xa0, 0xbf),
            0xed => self.utf8_lead(2, b & 0x0f, 0x80, 0x9f),
            0xe1..=0xef => self.utf8_lead(2, b & 0x0f, 0x80, 0xbf),
            0xf0 => self.utf8_lead(3, b & 0x07, 0x90, 0xbf),
            0xf1..=0xf3 => self.utf8_lead(3, b & 0x07, 0x80, 0xbf),
            0xf4 => self.utf8_lead(3, b & 0x07, 0x80, 0x8f),
            _ => self.print_decoded('\u{fffd}'),
        }
    }

    fn utf8_lead(&mut self, need: u8, bits: u8, lo: u8, hi: u8) {
        self.utf8 = Utf8 {
            need,
            cp: u32::from(bits),
            lo,
            hi,
        };
    }

    fn enter(&mut self, state: State) {
        if matches!(state, State::Escape | State::CsiEntry | State::DcsEntry) {
            self.params.clear();
            self.param = 0;
            self.any_digit = false;
            self.n_intermediates = 0;
            self.ignoring = false;
        }
        self.state = state;
    }

    /// One byte outside the ground state.
    pub(super) fn step(&mut self, b: u8) {
        use State as S;
        // Anywhere: CAN and SUB abort (and are executed), ESC restarts. OSC ends on them, and
        // is dispatched first.
        match b {
            0x18 | 0x1a => {
                if self.state == S::Osc {
                    self.osc_end(OscEnd::Aborted);
                }
                self.execute(b);
                self.state = S::Ground;
                return;
            }
            0x1b => {
                if self.state == S::Osc {
                    self.osc_end(OscEnd::St);
                }
                self.enter(S::Escape);
                return;
            }
            _ => {}
        }
        match self.state {
            S::Ground => self.ground(b),
            S::Escape => match b {
                0x00..=0x1f => self.execute(b),
                0x20..=0x2f => {
                    self.collect(b);
                    self.state = S::EscapeIntermediate;
                }
                b'P' => self.enter(S::DcsEntry),
                b'[' => self.enter(S::CsiEntry),
                b']' => {
                    self.osc.clear();
                    self.state = S::Osc;
                }
                b'X' | b'^' | b'_' => self.state = S::SosPmApc,
                0x30..=0x7e => {
                    self.state = S::Ground;
                    self.esc_dispatch(b);
                }
                _ => {}
            },
            S::EscapeIntermediate => match b {
                0x00..=0x1f => self.execute(b),
                0x20..=0x2f => self.collect(b),
                0x30..=0x7e => {
                    self.state = S::Ground;
                    self.esc_dispatch(b);
                }
                _ => {}
            },
            S::CsiEntry | S::CsiParam => match b {
                0x00..=0x1f => self.execute(b),
                0x20..=0x2f => {
                    self.collect(b);
                    self.state = S::CsiIntermediate;
                }
                b'0'..=b'9' => {
                    self.digit(b);
                    self.state = S::CsiParam;
                }
                b':' => {
                    self.sub_param();
                    self.state = S::CsiParam;
                }
                b';' => {
                    self.next_param();
                    self.state = S::CsiParam;
                }
                0x3c..=0x3f if self.state == S::CsiEntry => {
                    self.collect(b);
                    self.state = S::CsiParam;
                }
                0x3c..=0x3f => self.state = S::CsiIgnore,
                0x40..=0x7e => self.csi_end(b),
                _ => {}
            },
            S::CsiIntermediate => match b {
                0x00..=0x1f => self.execute(b),
                0x20..=0x2f => self.collect(b),
                0x30..=0x3f => self.state = S::CsiIgnore,
                0x40..=0x7e => self.csi_end(b),
                _ => {}
            },
            S::CsiIgnore => match b {
                0x00..=0x1f => self.execute(b),
                0x40..=0x7e => self.state = S::Ground,
                _ => {}
            },
            // DCS strings carry nothing we model; only their end matters.
            S::DcsEntry | S::DcsParam => match b {
                0x20..=0x2f => self.state = S::DcsIntermediate,
                0x30..=0x3b => self.state = S::DcsParam,
                0x3c..=0x3f if self.state == S::DcsEntry => self.state = S::DcsParam,
                0x3c..=0x3f => self.state = S::DcsIgnore,
                0x40..=0x7e => self.state = S::DcsPassthrough,
                _ => {}
            },
            S::DcsIntermediate => match b {
                0x30..=0x3f => self.state = S::DcsIgnore,
                0x40..=0x7e => self.state = S::DcsPassthrough,
                _ => {}
            },
            S::DcsPassthrough => {
                if b == 0x9c {
                    self.state = S::Ground;
                }
            }
            S::DcsIgnore | S::SosPmApc => {}
            S::Osc => match b {
                0x07 => {
                    self.osc_end(OscEnd::Bel);
                    self.state = S::Ground;
                }
                0x00..=0x1f => {}
                _ => {
                    if self.osc.len() < MAX_OSC {
                        self.osc.push(b);
                    }
                }
            },
        }
    }

    fn collect(&mut self, b: u8) {
        if self.n_intermediates == MAX_INTERMEDIATES {
            self.ignoring = true;
        } else {
            self.intermediates[self.n_intermediates] = b;
            self.n_intermediates += 1;
        }
    }

    fn digit(&mut self, b: u8) {
        self.any_digit = true;
        if self.params.is_full() {
            self.ignoring = true;
        } else {
            self.param = self
                .param
                .saturating_mul(10)
                .saturating_add(u16::from(b - b'0'));
        }
    }

    fn sub_param(&mut self) {
        if self.params.is_full() {
            self.ignoring = true;
        } else {
            self.params.extend(self.param);
            self.param = 0;
        }
    }

    fn next_param(&mut self) {
        if self.params.is_full() {
            self.ignoring = true;
        } else {
            self.params.push(self.param);
            self.param = 0;
        }
    }

    fn csi_end(&mut self, b: u8) {
        if self.params.is_full() {
            self.ignoring = true;
        } else {
            self.params.push(self.param);
        }
        self.state = State::Ground;
        self.csi_dispatch(b);
    }
}
