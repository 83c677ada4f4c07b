//! A line of a client's own over a terminal that shows the model, and taking it away again.
//!
//! A client that draws a program's output on a real terminal (`phuxctl attach`) sometimes has
//! something to say on that terminal: that keys are not reaching the program. It writes its
//! line over the bottom row and later draws that row again from the model. Both leave the
//! terminal's cursor, pen, modes and character sets exactly as the program's output left
//! them, so the program's next bytes land where they would have.

use std::fmt::Write as _;

use crate::Terminal;
use crate::bootstrap::{Over, PenWriter, push_cells, push_cursor, push_pen};
use crate::grid::{Cell, Pen};
use crate::vt::{Charset, Charsets};

/// What marks the part of a larger terminal that lies outside the model
/// ([`Terminal::paint_within`]): tmux's dots.
const OUTSIDE: &str = "\u{b7}";

/// Puts a terminal in a known state for writing on it: origin mode, insert mode and autowrap
/// off (writing in the last column must not wrap or scroll), G0 ASCII invoked into GL, the
/// default pen. The character sets it leaves, from those the model has, are returned.
fn push_prelude(out: &mut String, charsets: Charsets) -> Charsets {
    out.push_str("\x1b[?6l\x1b[4l\x1b[?7l\x1b(B\x0f\x1b[m");
    let mut now = charsets.saved();
    now.designate(0, Charset::Ascii);
    now.lock(0);
    now
}

impl Terminal {
    /// Whether the output so far ended between sequences and characters: bytes of a client's
    /// own written to the terminal now cannot land inside one of the program's sequences.
    pub fn between_sequences(&self) -> bool {
        self.vt.at_ground()
    }

    /// VT bytes that show `text` in reverse video at the right end of the bottom row of a
    /// terminal that shows this model, and then put the terminal's cursor, pen, modes and
    /// character sets back as the model has them. `text` is one line of narrow characters;
    /// what does not fit the row is cut at its start. Write it only
    /// [between sequences](Self::between_sequences).
    pub fn overlay_bottom_row(&self, text: &str) -> Vec<u8> {
        let (cols, rows) = self.vt.size();
        let chars: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
        let shown = &chars[chars.len().saturating_sub(usize::from(cols))..];
        let mut out = String::new();
        let charsets = push_prelude(&mut out, self.vt.charsets);
        let col = usize::from(cols) - shown.len() + 1;
        let _ = write!(out, "\x1b[{rows};{col}H\x1b[7m");
        out.extend(shown);
        push_cursor(&mut out, &self.vt, Over::AutowrapOff, charsets);
        out.into_bytes()
    }

    /// VT bytes that draw the bottom row again as this model has it (taking away what
    /// [`overlay_bottom_row`](Self::overlay_bottom_row) wrote), and then put the terminal's
    /// cursor, pen, modes and character sets back as the model has them. Write it only
    /// [between sequences](Self::between_sequences).
    pub fn repaint_bottom_row(&self) -> Vec<u8> {
        let (cols, rows) = self.vt.size();
        let mut out = String::new();
        let charsets = push_prelude(&mut out, self.vt.charsets);
        let _ = write!(out, "\x1b[{rows};1H\x1b[2K");
        let mut pens = PenWriter {
            current: Pen::default(),
        };
        push_cells(&mut out, &mut pens, self.vt.screen.row(rows - 1), cols);
        push_pen(&mut out, Pen::default());
        push_cursor(&mut out, &self.vt, Over::AutowrapOff, charsets);
        out.into_bytes()
    }

    /// VT bytes that draw this model's screen into the top-left corner of a terminal of
    /// `cols` x `rows` that is not the model's size: a client showing a terminal sized for
    /// another, smaller client, or one whose own screen is smaller. The rows and columns that
    /// fit are drawn (a wide character cut by the edge is left out), what lies outside the
    /// model on a larger terminal is filled with `·` as tmux marks it, and the cursor is put
    /// where the model has it (hidden when it is hidden there or lies outside). Leaves origin
    /// mode, insert mode and autowrap off, the whole terminal as the scroll region, G0 ASCII
    /// in GL and the default pen.
    pub fn paint_within(&self, cols: u16, rows: u16) -> Vec<u8> {
        let (model_cols, model_rows) = self.vt.size();
        let width = model_cols.min(cols);
        let mut out = String::new();
        push_prelude(&mut out, self.vt.charsets);
        out.push_str("\x1b[r\x1b[?25l");
        let mut pens = PenWriter {
            current: Pen::default(),
        };
        let outside = |n: u16| OUTSIDE.repeat(usize::from(n));
        for y in 0..rows {
            pens.set(&mut out, Pen::default());
            let _ = write!(out, "\x1b[{};1H\x1b[2K", y + 1);
            if y >= model_rows {
                out.push_str(&outside(cols));
                continue;
            }
            let row = self.vt.screen.row(y);
            let used = width.min(row.used());
            let mut x = 0;
            while x < used {
                let cell = row
                    .cells
                    .get(usize::from(x))
                    .copied()
                    .unwrap_or(Cell::BLANK);
                if cell.is_wide_cont() {
                    x += 1;
                    continue;
                }
                let w = if cell.is_wide() { 2 } else { 1 };
                pens.set(&mut out, row.pen(cell));
                if cell.has_contents() && x + w <= width {
                    out.push(cell.ch());
                    out.push_str(row.marks_at(x));
                } else {
                    out.push_str(&" ".repeat(usize::from(w.min(width - x))));
                }
                x += w;
            }
            if cols > model_cols {
                pens.set(&mut out, Pen::default());
                let _ = write!(out, "\x1b[{};{}H", y + 1, model_cols + 1);
                out.push_str(&outside(cols - model_cols));
            }
        }
        push_pen(&mut out, Pen::default());
        let cur = self.vt.cur;
        if cur.x < width && cur.y < rows.min(model_rows) {
            let _ = write!(out, "\x1b[{};{}H", cur.y + 1, cur.x + 1);
            if !self.vt.cursor_hidden {
                out.push_str("\x1b[?25h");
            }
        }
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program's output, then `extra` from the client, then `more` program output, on a
    /// second terminal (the "real" one); its screen as JSON with cells.
    fn shown(program: &[u8], extra: impl Fn(&Terminal) -> Vec<u8>, more: &[u8]) -> String {
        let mut model = Terminal::new(20, 5, 0);
        let mut real = Terminal::new(20, 5, 0);
        model.advance(program);
        real.advance(program);
        real.advance(&extra(&model));
        model.advance(more);
        real.advance(more);
        real.screen_json(1, None, true)
    }

    /// Programs that leave the terminal in states a line written over it must not disturb.
    const STATES: &[&[u8]] = &[
        b"hello\r\nworld",
        // Wrap-pending on the last column of a full row.
        b"\x1b[2;1H01234567890123456789",
        // Origin mode and a scroll region, a saved cursor, insert mode.
        b"\x1b[2;4r\x1b[?6h\x1b[2;3Hab\x1b7\x1b[4hcd",
        // Line drawing in G0, a colour pen, autowrap off, the cursor hidden.
        b"\x1b(0qqq\x1b[31;1m\x1b[?7l\x1b[?25l",
        // G1 line drawing shifted in, on the bottom row.
        b"\x1b)0\x0e\x1b[5;1Hlqk",
        // The alternate screen with text on its bottom row.
        b"\x1b[?1049h\x1b[5;3H\x1b[44mblue\x1b[m",
    ];

    #[test]
    fn a_line_over_the_bottom_row_changes_nothing_the_program_writes_next() {
        let next = b"XY\x1b[Bz\r\n\xe2\x94\x80q\x1b[1;1Hk";
        for state in STATES {
            let with_line = shown(state, |m| m.overlay_bottom_row(" keys are held "), b"");
            let doc: serde_json::Value = serde_json::from_str(&with_line).expect("json");
            let bottom = doc["lines"][4].as_str().unwrap_or_default().to_owned();
            // (The screen document trims trailing blanks.)
            assert!(bottom.ends_with(" keys are held"), "{state:?}: {bottom:?}");
            // Taken away again, and the program's next bytes: as if it had never been there.
            let again = shown(
                state,
                |m| {
                    let mut b = m.overlay_bottom_row(" keys are held ");
                    b.extend(m.repaint_bottom_row());
                    b
                },
                next,
            );
            assert_eq!(again, shown(state, |_| Vec::new(), next), "{state:?}");
        }
    }

    #[test]
    fn a_long_line_is_cut_to_the_row() {
        let model = Terminal::new(10, 3, 0);
        let mut real = Terminal::new(10, 3, 0);
        real.advance(&model.overlay_bottom_row("0123456789abcdef"));
        let doc: serde_json::Value =
            serde_json::from_str(&real.screen_json(1, None, false)).expect("json");
        assert_eq!(doc["lines"][2], "6789abcdef");
        assert_eq!(doc["cursor"]["x"], 0);
        assert_eq!(doc["cursor"]["y"], 0);
    }

    #[test]
    fn between_sequences_is_false_inside_a_sequence_or_a_character() {
        let mut t = Terminal::new(10, 3, 0);
        assert!(t.between_sequences());
        t.advance(b"a\x1b[3");
        assert!(!t.between_sequences());
        t.advance(b"1m\xe2\x94");
        assert!(!t.between_sequences());
        t.advance(b"\x80");
        assert!(t.between_sequences());
    }

    /// The rows a terminal of `cols` x `rows` shows after `model` is painted into it.
    fn painted(model: &Terminal, cols: u16, rows: u16) -> Vec<String> {
        let mut real = Terminal::new(cols, rows, 0);
        real.advance(b"junk everywhere\r\nmore junk");
        real.advance(&model.paint_within(cols, rows));
        let doc: serde_json::Value =
            serde_json::from_str(&real.screen_json(1, None, false)).expect("json");
        doc["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|l| l.as_str().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_smaller_model_is_drawn_in_the_corner_and_the_rest_is_marked() {
        let mut model = Terminal::new(8, 2, 0);
        model.advance("hello\r\n\x1b[31m日本\x1b[m!".as_bytes());
        assert_eq!(
            painted(&model, 11, 4),
            ["hello   ···", "日本!   ···", "···········", "···········"]
        );
        // A smaller terminal shows what fits: a wide character cut by the edge is left out.
        assert_eq!(painted(&model, 3, 1), ["hel"]);
        let mut model = Terminal::new(8, 2, 0);
        model.advance("ab日本".as_bytes());
        assert_eq!(painted(&model, 3, 1), ["ab"]);
    }
}
