//! The synthesized VT bootstrap: bytes that rebuild the screen and modes on a fresh terminal.

use std::fmt::Write as _;

use crate::Terminal;
use crate::grid::{
    BG_ATTR_MASK, BLINK, BOLD, Cell, Color, DIM, DOUBLE_UNDERLINE, Grid, INVERSE, INVISIBLE,
    ITALIC, Pen, Row, STRIKETHROUGH, UNDERLINE,
};
use crate::kitty::KittyStack;
use crate::modes::{MouseEncoding, MouseTracking};
use crate::vt::{Charsets, Saved, Vt};

impl Terminal {
    /// VT bytes that, fed to a fresh terminal of the same size, rebuild the visible screen
    /// (text, attributes, colours, soft wraps, cursor position, visibility and style, the
    /// pen), the title, the scroll region, tab stops, origin, autowrap and insert modes, the
    /// saved cursor (wrap-pending state and character sets included), the character sets
    /// (G0-G3, GL, a pending single shift), and the modes: DECCKM, keypad, bracketed paste, focus reporting, mouse tracking
    /// and encoding, DECBKM, LNM, the alternate screen (with the main screen behind it) and
    /// both kitty flag stacks.
    ///
    /// Not rebuilt: history rows.
    pub fn bootstrap(&self) -> Vec<u8> {
        let vt = &self.vt;
        let modes = self.modes();
        let mut out = String::new();

        // [BOOTSTRAP.CHUNK.2] both screens: the main one first, then the alternate over it.
        if vt.alt_active {
            let main = vt.other();
            let saved = vt.saved[0];
            let early = saved_before_drawing(main, saved);
            if early {
                push_saved_early(&mut out, main, saved, None);
            }
            push_grid(&mut out, main);
            push_kitty_stack(&mut out, self.vt.tracker.kitty_stack(false));
            // 1049 saves the cursor as it enters: enter from the main screen's saved cursor.
            if early {
                out.push_str("\x1b8\x1b[?1049h\x1b[m");
                push_charsets(&mut out, saved.charsets, Charsets::default());
                if saved.origin {
                    out.push_str("\x1b[?6l");
                }
            } else {
                push_saved(&mut out, main, saved, 0, "\x1b[?1049h");
            }
        }
        let slot = vt.saved[usize::from(vt.alt_active)];
        let early = saved_before_drawing(&vt.screen, slot);
        if early {
            push_saved_early(&mut out, &vt.screen, slot, Some((vt.top, vt.bottom)));
        }
        push_grid(&mut out, &vt.screen);
        push_kitty_stack(&mut out, self.vt.tracker.kitty_stack(vt.alt_active));
        push_layout(&mut out, vt, early);

        // [BOOTSTRAP.CHUNK.2] every mode the input encoder reads. A fresh terminal has them
        // all off, so only the set ones are sent.
        let mut dec = |on: bool, mode: u16| {
            if on {
                let _ = write!(out, "\x1b[?{mode}h");
            }
        };
        dec(modes.application_cursor_keys, 1);
        dec(modes.backarrow_sends_backspace, 67);
        dec(modes.bracketed_paste, 2004);
        dec(modes.focus_reporting, 1004);
        let tracking = match modes.mouse_tracking {
            MouseTracking::Off => None,
            MouseTracking::X10 => Some(9),
            MouseTracking::Normal => Some(1000),
            MouseTracking::ButtonEvent => Some(1002),
            MouseTracking::AnyEvent => Some(1003),
        };
        if let Some(mode) = tracking {
            dec(true, mode);
        }
        let encoding = match modes.mouse_encoding {
            MouseEncoding::X10 => None,
            MouseEncoding::Utf8 => Some(1005),
            MouseEncoding::Sgr => Some(1006),
            MouseEncoding::Urxvt => Some(1015),
            MouseEncoding::SgrPixels => Some(1016),
        };
        if let Some(mode) = encoding {
            dec(true, mode);
        }
        if modes.application_keypad {
            out.push_str("\x1b=");
        }
        if modes.line_feed_mode {
            out.push_str("\x1b[20h");
        }
        if vt.cursor_style != 0 {
            let _ = write!(out, "\x1b[{} q", vt.cursor_style);
        }
        if let Some(title) = self.title() {
            // Controls cannot come from an OSC body, but a title must never be able to end
            // its own sequence early, so drop any that are there.
            out.push_str("\x1b]2;");
            out.extend(title.chars().filter(|c| !c.is_control()));
            out.push_str("\x1b\\");
        }
        out.into_bytes()
    }
}

/// SGR that sets exactly `pen` (from any pen).
pub(crate) fn push_pen(out: &mut String, pen: Pen) {
    out.push_str("\x1b[0");
    for (bit, code) in [
        (BOLD, 1),
        (DIM, 2),
        (ITALIC, 3),
        (UNDERLINE, 4),
        (INVERSE, 7),
    ] {
        if pen.has(bit) {
            let _ = write!(out, ";{code}");
        }
    }
    for (bit, code) in [
        (BLINK, 5),
        (INVISIBLE, 8),
        (STRIKETHROUGH, 9),
        (DOUBLE_UNDERLINE, 21),
    ] {
        if pen.has_bg(bit) {
            let _ = write!(out, ";{code}");
        }
    }
    let bg = pen.bg & !BG_ATTR_MASK;
    for (word, base, bright, ext) in [(pen.fg, 30, 90, 38), (bg, 40, 100, 48)] {
        match Color::unpack(word) {
            Color::Default => {}
            Color::Idx(i @ 0..=7) => {
                let _ = write!(out, ";{}", base + u16::from(i));
            }
            Color::Idx(i @ 8..=15) => {
                let _ = write!(out, ";{}", bright + u16::from(i) - 8);
            }
            Color::Idx(i) => {
                let _ = write!(out, ";{ext};5;{i}");
            }
            Color::Rgb(r, g, b) => {
                let _ = write!(out, ";{ext};2;{r};{g};{b}");
            }
        }
    }
    out.push('m');
}

/// Writes pens only when they change.
pub(crate) struct PenWriter {
    pub(crate) current: Pen,
}

impl PenWriter {
    pub(crate) fn set(&mut self, out: &mut String, pen: Pen) {
        if pen != self.current {
            push_pen(out, pen);
            self.current = pen;
        }
    }
}

/// Clears the screen and draws every row of `grid`, soft wraps included. Leaves the pen at
/// the default.
fn push_grid(out: &mut String, grid: &Grid) {
    out.push_str("\x1b[m\x1b[H\x1b[2J");
    let mut pens = PenWriter {
        current: Pen::default(),
    };
    let cols = grid.cols();
    let rows = grid.rows();
    // Whether the previous row was drawn up to its last column and wraps into this one.
    let mut wrapping = false;
    // Whether the cursor already stands at the start of this row (the previous one wrapped
    // before its last column).
    let mut at_start = false;
    // One-column rows that wrapped over an empty cell (DECRC gave back a pending wrap over a
    // cleared screen): drawn with a space that wraps, erased again once the grid is drawn.
    let mut emptied = Vec::new();
    for (y, row) in grid.iter().enumerate() {
        let used = usize::from(row.used());
        let first = row.cells.first().copied().unwrap_or(Cell::BLANK);
        if wrapping {
            if first.has_contents() {
                // The first character printed wraps, as it did in the original.
            } else {
                // Force the wrap with a space, then make the cell empty again.
                pens.set(out, row.pen(first));
                out.push_str(" \x08\x1b[X");
            }
        } else if used > 0 && !at_start {
            let _ = write!(out, "\x1b[{};1H", y + 1);
        }
        let at = push_cells(out, &mut pens, row, cols);
        let last = row.cells.last().copied().unwrap_or(Cell::BLANK);
        let continues = row.wrapped && y + 1 < usize::from(rows);
        wrapping =
            continues && at == usize::from(cols) && (last.has_contents() || last.is_wide_cont());
        at_start = continues && !wrapping && cols > 1;
        if continues && !wrapping && cols == 1 {
            // No wide character fits one column: wrap with a space and empty the cell later
            // with EL 2, which [xterm] `ClearLine` does without clearing the soft wrap.
            pens.set(out, Pen::default());
            let _ = write!(out, "\x1b[{};1H ", y + 1);
            emptied.push((y, row.pen(last)));
            wrapping = true;
        }
        if at_start {
            // A row that wrapped before its last column (a wide character did not fit): a wide
            // character at the last column wraps the same way, leaving that column as it is,
            // and is erased again from the next row, which is then drawn from its start.
            pens.set(out, Pen::default());
            let _ = write!(out, "\x1b[{};{cols}H\u{4e00}\r\x1b[2X", y + 1);
        }
    }
    for (y, pen) in emptied {
        pens.set(out, pen);
        let _ = write!(out, "\x1b[{};1H\x1b[2K", y + 1);
    }
    pens.set(out, Pen::default());
}

/// Draws the cells of `row` from the cursor's position at its first column (text, styled
/// erasures, combining marks); the column the cursor is left at, `cols` when wrap-pending.
pub(crate) fn push_cells(out: &mut String, pens: &mut PenWriter, row: &Row, cols: u16) -> usize {
    let used = usize::from(row.used());
    // The column the terminal's cursor is at (`cols` when wrap-pending).
    let mut at = 0;
    let mut x = 0;
    while x < used {
        let cell = row.cells[x];
        if cell.is_wide_cont() {
            x += 1;
            continue;
        }
        if cell == Cell::BLANK || (!cell.has_contents() && !cell.styled()) {
            x += 1;
            continue;
        }
        if x > at {
            let _ = write!(out, "\x1b[{}C", x - at);
            at = x;
        }
        if cell.has_contents() {
            pens.set(out, row.pen(cell));
            out.push(cell.ch());
            out.push_str(row.marks_at(x as u16));
            let width = if cell.is_wide() { 2 } else { 1 };
            x += width;
            at = x.min(usize::from(cols) - 1);
            if x >= usize::from(cols) {
                // Pending wrap: the cursor stays on the last column.
                at = usize::from(cols);
            }
        } else {
            // An erased cell with a style: erase a run of them with that pen.
            let mut end = x + 1;
            while end < used && row.cells[end] == cell {
                end += 1;
            }
            pens.set(out, row.pen(cell));
            let _ = write!(out, "\x1b[{}X", end - x);
            x = end;
        }
    }
    at
}

/// The scroll region, tab stops, saved cursor, origin and autowrap modes, then the cursor
/// (with its wrap-pending state), the pen, the cursor's visibility and insert mode.
/// `saved` says whether the saved cursor was saved before the screen was drawn
/// ([`push_saved_early`]).
fn push_layout(out: &mut String, vt: &Vt, saved: bool) {
    let rows = vt.size().1;
    if (vt.top, vt.bottom) != (0, rows - 1) {
        let _ = write!(out, "\x1b[{};{}r", vt.top + 1, vt.bottom + 1);
    }
    let default_tabs = vt
        .tabs
        .iter()
        .enumerate()
        .all(|(c, &t)| t == (c > 0 && c % 8 == 0));
    if !default_tabs {
        out.push_str("\x1b[3g");
        for (c, _) in vt.tabs.iter().enumerate().filter(|&(_, &t)| t) {
            let _ = write!(out, "\x1b[1;{}H\x1bH", c + 1);
        }
    }
    let slot = vt.saved[usize::from(vt.alt_active)];
    if slot != Saved::default() && !saved {
        push_saved(out, &vt.screen, slot, vt.top, "\x1b7");
    }
    push_cursor(out, vt, Over::Fresh, Charsets::default());
}

/// What [`push_cursor`] writes over.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    /// A fresh terminal: autowrap on, the cursor shown.
    Fresh,
    /// A terminal showing the screen, with autowrap off (and the cursor as it should be).
    AutowrapOff,
}

/// Origin mode, the cursor (with its wrap-pending state), autowrap, the pen, the cursor's
/// visibility, insert mode and the character sets as `vt` has them, written to a terminal that
/// shows `vt`'s screen, with origin and insert modes off and the character sets `charsets`.
pub(crate) fn push_cursor(out: &mut String, vt: &Vt, over: Over, mut charsets: Charsets) {
    let autowrap_now = over == Over::Fresh;
    let slot = vt.saved[usize::from(vt.alt_active)];
    if vt.origin {
        out.push_str("\x1b[?6h");
    }
    // A wrap-pending cursor is made by writing to the last column, which needs autowrap.
    if vt.autowrap && !autowrap_now {
        out.push_str("\x1b[?7h");
    }
    let cur = vt.cur;
    let base = if vt.origin { vt.top } else { 0 };
    let row = cur.y.saturating_sub(base) + 1;
    // A pending wrap over an empty last column (the row changed after it was saved, then
    // DECRC) cannot be drawn, but the saved cursor gives it back when it is that cursor.
    let restorable = (slot.x, slot.y, slot.pending, slot.origin) == (cur.x, cur.y, true, vt.origin);
    if cur.pending && restorable {
        out.push_str("\x1b8");
        // DECRC gave back the saved character sets too.
        charsets.restore(slot.charsets);
    } else if !(cur.pending && push_last_column(out, &vt.screen, cur.y, row)) {
        let _ = write!(out, "\x1b[{row};{}H", cur.x + 1);
    }
    if !vt.autowrap && autowrap_now {
        out.push_str("\x1b[?7l");
    }
    push_pen(out, vt.pen);
    if vt.cursor_hidden && over == Over::Fresh {
        out.push_str("\x1b[?25l");
    }
    // Last: nothing is printed after them.
    if vt.insert {
        out.push_str("\x1b[4h");
    }
    push_charsets(out, charsets, vt.charsets);
}

/// Designates and invokes the character sets `to` where they differ from `from` (which the
/// receiving terminal has), a pending single shift last.
fn push_charsets(out: &mut String, from: Charsets, to: Charsets) {
    for (g, (&was, &set)) in from.g.iter().zip(&to.g).enumerate() {
        if was != set {
            let _ = write!(
                out,
                "\x1b{}{}",
                char::from(b"()*+"[g]),
                char::from(set.final_byte())
            );
        }
    }
    if from.gl != to.gl {
        out.push_str(["\x0f", "\x0e", "\x1bn", "\x1bo"][usize::from(to.gl & 3)]);
    }
    match to.single {
        2 => out.push_str("\x1bN"),
        3 => out.push_str("\x1bO"),
        _ => {}
    }
}

/// When the last column of row `y` of `grid` holds a character (or the right half of a wide
/// one), moves there (`row` as CUP counts it) and redraws it, which leaves the cursor on the
/// last column, wrap-pending; false when the cell is empty.
fn push_last_column(out: &mut String, grid: &Grid, y: u16, row: u16) -> bool {
    let Some((x, cell)) = last_column(grid, y) else {
        return false;
    };
    let r = grid.row(y);
    let _ = write!(out, "\x1b[{row};{}H", x + 1);
    push_pen(out, r.pen(cell));
    out.push(cell.ch());
    out.push_str(r.marks_at(x));
    true
}

/// The character on the last column of row `y` (or the wide one ending there) and its
/// column; `None` when that column shows nothing.
fn last_column(grid: &Grid, y: u16) -> Option<(u16, Cell)> {
    let cols = grid.cols();
    let r = grid.row(y);
    let x = if r.cells[usize::from(cols) - 1].is_wide_cont() {
        cols.saturating_sub(2)
    } else {
        cols - 1
    };
    let cell = r.cells[usize::from(x)];
    cell.has_contents().then_some((x, cell))
}

/// Whether saved cursor `s` must be saved before `grid` is drawn: a pending wrap over a last
/// column that shows nothing is made by writing a space there, and once the screen is drawn
/// nothing can erase that space again without ending the row's soft wrap ([xterm] ECH and
/// EL 0 are `ClearRight`, which ends with `ScrnClrWrapped`; EL 1 and EL 2 erase more).
fn saved_before_drawing(grid: &Grid, s: Saved) -> bool {
    s.pending && last_column(grid, s.y).is_none()
}

/// Saves cursor `s` (pending over the last column, see [`saved_before_drawing`]) with DECSC
/// before `grid` is drawn: a space written to the last column leaves the wrap pending, and
/// drawing the screen (which starts by erasing it) removes the space again. `region` is the
/// scroll region origin mode counts from (none: the whole screen). Leaves the pen default,
/// origin mode off and the whole screen the scroll region.
fn push_saved_early(out: &mut String, grid: &Grid, s: Saved, region: Option<(u16, u16)>) {
    let mut y = s.y;
    let region = region.filter(|&(top, bottom)| (top, bottom) != (0, grid.rows() - 1));
    if s.origin {
        if let Some((top, bottom)) = region {
            let _ = write!(out, "\x1b[{};{}r", top + 1, bottom + 1);
            y = y.saturating_sub(top);
        }
        out.push_str("\x1b[?6h");
    }
    let _ = write!(out, "\x1b[{};{}H ", y + 1, grid.cols());
    push_pen(out, s.pen);
    push_charsets(out, Charsets::default(), s.charsets);
    out.push_str("\x1b7\x1b[m");
    push_charsets(out, s.charsets, Charsets::default());
    if s.origin {
        out.push_str("\x1b[?6l");
        if region.is_some() {
            out.push_str("\x1b[r");
        }
    }
}

/// Puts the cursor (with its wrap-pending state), pen and origin mode as saved, then `save`
/// (DECSC, or 1049 which saves as it switches); leaves the pen default and origin mode off.
/// `top` is the scroll region's top row in force at this point (origin mode counts from it);
/// `grid` is the screen the cursor was saved on, already drawn.
fn push_saved(out: &mut String, grid: &Grid, s: Saved, top: u16, save: &str) {
    let mut y = s.y;
    if s.origin {
        out.push_str("\x1b[?6h");
        y = y.saturating_sub(top);
    }
    let row = y + 1;
    // A pending wrap is made by writing the last column's own character again (one over a
    // column that shows nothing was saved before the screen was drawn: `push_saved_early`).
    if !(s.pending && push_last_column(out, grid, s.y, row)) {
        let _ = write!(out, "\x1b[{row};{}H", s.x + 1);
    }
    push_pen(out, s.pen);
    push_charsets(out, Charsets::default(), s.charsets);
    out.push_str(save);
    out.push_str("\x1b[m");
    push_charsets(out, s.charsets, Charsets::default());
    if s.origin {
        out.push_str("\x1b[?6l");
    }
}

/// Rebuilds a kitty flag stack on a fresh one (flags 0, nothing saved): the oldest saved
/// entry becomes current, then every later entry and the current flags are pushed over it.
fn push_kitty_stack(out: &mut String, stack: &KittyStack) {
    let current = stack.current().0;
    match stack.saved().split_first() {
        None => {
            if current != 0 {
                let _ = write!(out, "\x1b[={current};1u");
            }
        }
        Some((&oldest, later)) => {
            if oldest != 0 {
                let _ = write!(out, "\x1b[={oldest};1u");
            }
            for &flags in later.iter().chain(std::iter::once(&current)) {
                let _ = write!(out, "\x1b[>{flags}u");
            }
        }
    }
}
