//! CSI sequences, and the DEC private modes they set.

use super::Vt;

impl Vt {
    pub(super) fn csi_dispatch(&mut self, fin: u8) {
        let marker = (self.n_intermediates > 0).then_some(self.intermediates[0]);
        self.tracker.csi(marker, self.params.iter(), fin);
        let (first, second) = (self.params.get(0, 0), self.params.get(1, 0));
        // The first two parameters with their defaults (0 means "default", as in vt100).
        let p = |index: usize, default: u16| match if index == 0 { first } else { second } {
            0 => default,
            value => value,
        };
        match (marker, fin) {
            (None, b'@') => self.insert_chars(p(0, 1)),
            (None, b'A') => self.cursor_up(p(0, 1)),
            (None, b'B') => self.cursor_down(p(0, 1)),
            (None, b'C' | b'a') => self.cursor_forward(p(0, 1)),
            (None, b'D') => {
                let n = p(0, 1);
                self.set_x(self.cur.x.saturating_sub(n));
            }
            (None, b'E') => {
                self.cursor_down(p(0, 1));
                self.cur.x = 0;
            }
            (None, b'F') => {
                self.cursor_up(p(0, 1));
                self.cur.x = 0;
            }
            (None, b'G' | b'`') => self.set_x(p(0, 1) - 1),
            (None, b'H' | b'f') => {
                let (row, col) = (p(0, 1), p(1, 1));
                self.goto(row - 1, col - 1);
            }
            (None, b'I') => self.tab_forward(p(0, 1)),
            (None | Some(b'?'), b'J') => self.erase_display(p(0, 0)),
            (None | Some(b'?'), b'K') => self.erase_line(p(0, 0)),
            (None, b'L') => self.insert_lines(p(0, 1)),
            (None, b'M') => self.delete_lines(p(0, 1)),
            (None, b'P') => self.delete_chars(p(0, 1)),
            (None, b'S') => {
                self.scroll_up(p(0, 1));
            }
            (None, b'T') => self.scroll_down(p(0, 1)),
            (None, b'X') => {
                let n = p(0, 1);
                self.reset_wrap();
                let x = self.cur.x;
                let end = x.saturating_add(n).min(self.cols);
                self.erase_right(x, end);
            }
            (None, b'Z') => self.tab_backward(p(0, 1)),
            (None, b'b') => self.repeat(p(0, 1)),
            (None, b'd') => {
                let row = p(0, 1) - 1;
                let x = self.cur.x;
                self.goto(row, x);
            }
            // VPR. [xterm] `CASE_VPR` is VPA relative to the current row (`CursorSet`): bounded
            // by the screen, or by the region only in origin mode, never by the bottom margin
            // as CUD is.
            (None, b'e') => {
                let base = if self.origin { self.top } else { 0 };
                let row = self.cur.y.saturating_sub(base).saturating_add(p(0, 1));
                let x = self.cur.x;
                self.goto(row, x);
            }
            (None, b'g') => match p(0, 0) {
                0 => {
                    if let Some(t) = self.tabs.get_mut(usize::from(self.cur.x)) {
                        *t = false;
                    }
                }
                3 => self.tabs.fill(false),
                _ => {}
            },
            (None, b'h' | b'l') => {
                let set = fin == b'h';
                for g in self.params.iter() {
                    match g {
                        // IRM. [xterm] ctlseqs SM / RM `Ps = 4` Insert Mode.
                        [4] => self.insert = set,
                        [20] => self.line_feed_mode = set,
                        _ => {}
                    }
                }
            }
            (None, b'm') => self.sgr(),
            (None, b'r') => {
                let top = p(0, 1);
                let bottom = p(1, self.rows).min(self.rows);
                // [xterm] a region of fewer than two rows is ignored.
                if top < bottom {
                    self.top = top - 1;
                    self.bottom = bottom - 1;
                    self.goto(0, 0);
                }
            }
            (None, b's') => self.save_cursor(),
            (None, b'u') => self.restore_cursor(),
            (Some(b'?'), b'h' | b'l') => self.dec_modes(fin == b'h'),
            // [OUTPUT.REPLY.1] Queries: see `report` for each reply's form.
            (None, b'c') if first == 0 => self.primary_attributes(),
            (Some(b'>'), b'c') if first == 0 => self.secondary_attributes(),
            (Some(b'>'), b'q') if first == 0 => self.report_version(),
            (None, b'n') => self.device_status(false, first),
            (Some(b'?'), b'n') => self.device_status(true, first),
            (Some(b'$'), b'p') if self.n_intermediates == 1 => self.report_mode(false, first),
            (Some(b'?'), b'p') if self.intermediates[..self.n_intermediates] == *b"?$" => {
                self.report_mode(true, first);
            }
            // Only the bare query: its reply, `CSI ? flags u`, echoed back by a program must
            // not be answered again (an echoing child would loop forever).
            (Some(b'?'), b'u') if !self.any_digit => self.report_kitty_flags(),
            (Some(b' '), b'q') => {
                let style = p(0, 0);
                if style <= 6 {
                    self.cursor_style = style as u8;
                }
            }
            _ => {}
        }
    }

    fn dec_modes(&mut self, set: bool) {
        let mut i = 0;
        while let Some(g) = self.params.iter().nth(i) {
            i += 1;
            // Only a plain mode number counts (as in vt100 and the mode tracker).
            let &[mode] = g else {
                continue;
            };
            match mode {
                6 => {
                    self.origin = set;
                    self.goto(0, 0);
                }
                // DECAWM. [xterm] `srm_DECAWM` changes the flag only: a pending wrap stays
                // pending, taken if DECAWM is set again before the next character.
                7 => self.autowrap = set,
                25 => self.cursor_hidden = !set,
                47 => self.switch_screen(set),
                1047 => {
                    // xterm: leaving clears the alternate screen first.
                    if !set && self.alt_active {
                        self.screen.clear();
                    }
                    self.switch_screen(set);
                }
                1048 => {
                    if set {
                        self.save_cursor();
                    } else {
                        self.restore_cursor();
                    }
                }
                1049 => {
                    if set {
                        // [xterm] `srm_OPT_ALTBUF_CURSOR`: `CursorSave`, `ToAlternate` (nothing
                        // when already there), then `ClearScreen`, which erases with the
                        // background colour and cancels a pending wrap (`ResetWrap`), on
                        // the alternate screen already shown too.
                        self.save_cursor();
                        self.switch_screen(true);
                        self.screen.clear();
                        self.colour_new_rows(0, self.rows);
                        self.reset_wrap();
                    } else {
                        self.switch_screen(false);
                        self.restore_cursor();
                    }
                }
                _ => {}
            }
        }
    }
}
