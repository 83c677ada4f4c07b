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
use crate::grid::Pen;
use crate::vt::{Charset, Charsets};

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
}
