//! C0 controls and ESC sequences.

use super::Vt;

impl Vt {
    pub(super) fn execute(&mut self, b: u8) {
        match b {
            0x07 => self.bells = self.bells.saturating_add(1),
            0x08 => {
                // From the wrap-pending state xterm steps back from the last column.
                self.cur.x = self.cur.x.saturating_sub(1);
                self.cur.pending = false;
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
                self.cur.pending = false;
            }
            _ => {}
        }
    }

    pub(super) fn esc_dispatch(&mut self, b: u8) {
        match self.intermediates[..self.n_intermediates] {
            [] => {}
            [b'#'] if b == b'8' => return self.screen_alignment(),
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
            b'c' => self.reset(),
            _ => {}
        }
    }
}
