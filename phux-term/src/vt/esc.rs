//! C0 controls and ESC sequences.

use super::{Charset, Vt};

impl Vt {
    pub(super) fn execute(&mut self, b: u8) {
        match b {
            0x07 => self.bells = self.bells.saturating_add(1),
            0x08 => {
                // From the wrap-pending state xterm steps back from the last column.
                self.cur.x = self.cur.x.saturating_sub(1);
                self.reset_wrap();
            }
            0x09 => self.tab_forward(1),
            0x0a..=0x0c => {
                self.linefeed();
                if self.line_feed_mode {
                    self.cur.x = 0;
                }
            }
            0x0d => {
                self.cur.x = 0;
                self.reset_wrap();
            }
            // [xterm] ctlseqs "Single-character functions": SO "Switch to Alternate Character
            // Set: invokes the G1 character set" (LS1), SI "Switch to Standard Character Set:
            // invokes the G0 character set" (LS0).
            0x0e => self.charsets.lock(1),
            0x0f => self.charsets.lock(0),
            _ => {}
        }
    }

    pub(super) fn esc_dispatch(&mut self, b: u8) {
        match self.intermediates[..self.n_intermediates] {
            [] => {}
            [b'#'] if b == b'8' => return self.screen_alignment(),
            // [xterm] ctlseqs "Designate G0 / G1 / G2 / G3 Character Set" (SCS): `ESC (`,
            // `ESC )`, `ESC *`, `ESC +` with `0`, `A` or `B`; other sets are not modelled.
            [i @ b'('..=b'+'] => {
                if let Some(set) = Charset::from_final(b) {
                    self.charsets.designate(usize::from(i - b'('), set);
                }
                return;
            }
            // Anything else with intermediates: not modelled.
            _ => return,
        }
        self.tracker.esc(b);
        match b {
            b'7' => self.save_cursor(),
            b'8' => self.restore_cursor(),
            b'D' => self.linefeed(),
            b'E' => {
                self.linefeed();
                self.cur.x = 0;
            }
            b'H' => {
                if let Some(t) = self.tabs.get_mut(usize::from(self.cur.x)) {
                    *t = true;
                }
            }
            b'M' => self.reverse_index(),
            // [xterm] ctlseqs: `ESC N` SS2 and `ESC O` SS3 ("Single Shift Select of G2 / G3
            // Character Set: affects next character only"), `ESC n` LS2 and `ESC o` LS3
            // ("Invoke the G2 / G3 Character Set as GL").
            b'N' => self.charsets.single_shift(2),
            b'O' => self.charsets.single_shift(3),
            b'n' => self.charsets.lock(2),
            b'o' => self.charsets.lock(3),
            b'c' => self.reset(),
            _ => {}
        }
    }
}
