//! Differential testing against `alacritty_terminal`, a maintained emulator: the same
//! generated control sequences go to both, and the visible grid (each cell's text, width,
//! attributes and colours; each row's soft wrap), the cursor and its pending wrap are compared.
//!
//! [`generate`] turns arbitrary bytes into a stream weighted towards what real programs write;
//! [`check`] runs it through both and returns the first difference that is not one of the
//! decided ones below. The proptest at the bottom and the `vt_differential` fuzz target drive
//! it. Only tests and the fuzz target build this module (alacritty is a dev-dependency, or an
//! optional one behind the `differential` feature).
//!
//! # Decided differences
//!
//! Where the two disagree, xterm decides (ctlseqs; xterm's source where ctlseqs is silent). Each
//! decided difference is normalised away here, so the comparison checks everything else. Where
//! alacritty's side cannot be told from the grid afterwards (a wide character it cuts or turns
//! round), our model counts a hazard (`Vt::hazards`, only in these builds) at the write or
//! edit where alacritty is known to part from xterm, and [`generate`] leaves out the piece that
//! would add one (it tries each on a copy of its guide first).
//!
//! | Case | xterm (and we) | alacritty | Evidence | Normalised by |
//! |---|---|---|---|---|
//! | HT with a pending wrap | the wrap stays pending; the next character wraps | wraps at once (cursor to the next row) | xterm `charproc.c` `CASE_HT` → `TabToNextStop`, which never touches `do_wrap`; issue item 3 | [`generate`] puts a CR before HT / CHT while a wrap is pending (pinned in the `xterm` tests) |
//! | A tab's cells | unchanged (blank cells stay blank) | a blank cell a tab passes gets `\t` (for copying) | ctlseqs HT "moves the cursor", writes nothing | `\t` in a cell reads as a blank |
//! | Blink (SGR 5 / 6 / 25) | kept (ctlseqs "Blink") | not modelled | ctlseqs SGR | blink is not compared |
//! | SGR 21 | double underline | cancels bold | ctlseqs SGR "Ps = 2 1 ⇒ Doubly-underlined (ECMA-48)" | [`generate`] sends no SGR 21 (pinned in the `xterm` tests) |
//! | Bold with a colour 0-7 | the colour as set (bold brightness is a rendering choice) | the same in the grid | — | — |
//! | Erased and inserted blanks | the background colour only (BCE) | the same | xterm `ClearCells` (called by ED, EL, ECH, ICH, DCH, IL, DL and scrolling) keeps the colour flags and clears every other attribute | — (we kept the whole pen and left inserted blanks default: fixed) |
//! | `CSI ? 1049 l` on the main screen | restores the cursor saved by DECSC | nothing | xterm `charproc.c`, `srm_OPT_ALTBUF_CURSOR`: the reset path is `FromAlternate` then `CursorRestore`, unconditionally; ctlseqs "Use Normal Screen Buffer and restore cursor as in DECRC" | [`generate`] leaves the alternate screen only while on it |
//! | DCH of more characters than the cursor has to the right | deletes to the end of the row only | also blanks cells left of the cursor (`delete_chars` clears the last `count` cells of the row) | ctlseqs DCH "Delete Ps Character(s)"; xterm `DeleteChar` clamps the count to the columns right of the cursor | [`generate`] clamps DCH counts to the row |
//! | The second half of a wide character | kept without a style of its own; drawn with its character's | carries the pen too | one character in two columns: a renderer draws it with one style (GET_SCREEN and the bootstrap write the character once) | the second half is compared with the first half's style |
//! | ED 1 (`CSI 1 J`) with the cursor on the second row | erases the first row too | leaves the first row (`ClearMode::Above` clears the rows above only `if cursor.line > 1`) | ctlseqs ED `Ps = 1` "Erase Above": every row above the cursor | [`generate`] emits no ED 1 while the cursor is on the second row |
//! | ED, EL, ICH, DCH, IL, DL, ECH, LF, IND, RI with a pending wrap | the wrap is cancelled (the next character overwrites the last column) | the wrap stays pending | xterm `ClearRight`, `ClearLeft`, `InsertChar`, `DeleteChar`, `InsertLine`, `DeleteLine`, `ClearInLine` and the cursor motions (`CursorDown` of `xtermIndex`, `RevIndex`) reset `do_wrap` (`ResetWrap`) | [`generate`] puts a CR before these while a wrap is pending |
//! | The foreground and bold / dim / italic / hidden of a blank cell | kept as written | dropped where a wide character's orphaned half is blanked | nothing is drawn with them (underline, inverse and strike, which do show, are compared) | not compared on blanks |
//! | DECOM reset (`CSI ? 6 l`) | homes the cursor | leaves it | VT510 manual DECOM: "the cursor moves to the home position when DECOM is set or reset"; xterm `srm_DECOM` calls `CursorSet(screen, 0, 0, ...)` either way | [`generate`] follows a reset with `CSI H` |
//! | CUU / CUD (`CSI A`, `CSI B`) from inside the scroll region | stop at the region's margin | ignore the region | xterm `CursorUp` / `CursorDown` stop at `top_marg` / `bot_marg` when the cursor starts inside the region; ctlseqs CUU / CUD | [`generate`] never sends a count that would cross the margin |
//! | CNL / CPL (`CSI E`, `CSI F`) inside a scroll region | stop at the region's margin, as CUD / CUU do | go past it | xterm `CASE_CNL` / `CASE_CPL` are `CursorDown` / `CursorUp` then a carriage return | [`generate`] sends no CNL / CPL (the `vt100` differential covers them) |
//! | Erasing the first half of a wide character | both halves become blanks | the second half keeps its spacer flag | both show two blanks | a second half without its first half is compared as a blank |
//! | DECSC / DECRC and the shift state (SO / SI) | GL (and GR) are saved and restored with the designations | only the designations (the shift state is not part of alacritty's saved cursor) | xterm `CursorSave` saves `curgl` / `curgr`; VT510 DECSC saves "character sets (G0, G1, G2, or G3) currently in GL and GR" | [`generate`] sends SI before every save and restore (DECSC, DECRC, SCOSC, SCORC, 1049) |
//! | DECRC and origin mode | restored with the cursor | not restored | xterm `CursorRestore` restores the `DECSC_FLAGS`, origin mode among them; VT510 DECSC saves "state of origin mode (DECOM)" | [`generate`] sends no restore (DECRC, SCORC, leaving 1049) that would change origin mode |
//! | CUU, CUD, VPR, CHA, HPA in origin mode with a region below the top | relative to the cursor's row / the column only | the row moves down by the region's top again (they go through the origin-relative `goto` with an absolute row) | ctlseqs CUU / CUD / VPR move relative to the cursor; CHA / HPA "Cursor Character Absolute [column]" do not name a row | [`generate`] sends none of them then |
//! | DECRC in origin mode of a row below the bottom margin | the row is clamped to the bottom margin | restored as saved | xterm `CursorRestore` moves with `CursorSet(sc->row - top_marg, ...)`, which in origin mode keeps the row at most at `bot_marg` | [`generate`] sends no such restore |
//! | IL, DL (`CSI L`, `CSI M`) | the cursor moves to the first column (the left margin), inside the scroll region or not | the column is kept | xterm `charproc.c` `CASE_IL` / `CASE_DL`: `set_cur_col(screen, ScrnLeftMargin(xw))` before `InsertLine` / `DeleteLine`, which return at once outside the region; ECMA-48 IL / DL: "the active presentation position is moved to the line home position" (pinned in the `xterm` tests) | [`generate`] puts a CR after IL / DL |
//! | CBT (`CSI Z`) with no tab stop to the left | to the first column | stays | xterm `TabToPrevStop` stops at column 0 | [`generate`] sends no CBT |
//! | A wide character cut in two by a write, DCH or ECH / EL / ED | the other half becomes a blank in the pen's colours with no attributes; but a write starting at the last column makes the first half a space in its own style | the other half keeps the wide character's style (after DCH or an erase it stays as it was) | xterm `WriteText`, `DeleteChar`, `ClearRight`, `ClearLeft`: `DamagedCurCells` then `ClearInLine` (`ClearCells`); a write at the last column: `DamagedCells` finds nothing (`nn` is 0) and `ScrnWriteText` sets `chars[-1] = ' '`, leaving its attributes and colours | a hazard where the blank would show differently (background, underline, inverse, strike; any DCH or erase cut) |
//! | IRM or ICH inside a wide character, or cutting one at the right margin | the character is cleared (both halves blank in the pen's colours) before the shift | the halves are moved apart; its IRM shifts one character at a time (cutting a wide character on the way out) and by two for a wide one (turning a wide character round) | xterm `InsertChar`: `DamagedCurCells` at the cursor and at `max_col - n + 1`, `ClearInLine`, then the shift; `WriteText` inserts a run's width at once | hazards |
//! | A wide character with one column left, DECAWM set | wraps first, leaving the last column as it was | writes a blank in the pen there (`LEADING_WIDE_CHAR_SPACER`), and does not shift the next row for IRM | xterm `dotext`: the character does not fit, `force_wrap` then `WrapLine`, nothing written to the last column | the cell is not compared while alacritty flags it; a hazard unless it already shows as that blank (a later write can take the flag away), or with IRM on |
//! | A combining mark after a cursor motion or an edit | joins the cell under the cursor (after a write, and a tab, the cell last written) | joins the cell before the cursor (under it when a wrap is pending or in the first column) | xterm `doparsing`: `use_col = char_was_written ? last_written_col : cur_col`; `dotext` sets `char_was_written`, `ResetWrap` (every motion and edit; not `TabToNextStop`) clears it | [`generate`] writes a mark alone only where both put it on the same cell |
//! | A wide character with one column left, DECAWM reset | dropped, no wrap pending | dropped, a wrap pending | xterm `dotext`: without WRAPAROUND no `force_wrap`, `do_wrap = need_wrap` (false); the characters are left unwritten | a hazard |
//! | `CSI ? 1049 h` with a pending wrap | cancelled (the switch clears the screen) | kept | xterm `srm_OPT_ALTBUF_CURSOR` set is `CursorSave`, `ToAlternate`, `ClearScreen`, and `ClearScreen` calls `ResetWrap`; `ToAlternate` / `FromAlternate` / `SwitchBufs` never touch `do_wrap` (so a bare 47 / 1047 switch keeps it in xterm; we drop it, see `switch_screen`, and [`generate`] sends neither); the reset is `FromAlternate` then `CursorRestore`, which gives back the saved wrap in both | [`generate`] puts a CR before entering while a wrap is pending |
//! | REP (`CSI b`) after anything but a printed character (a control, a finished sequence, REP itself, RIS) | repeats nothing; after a combining mark, the character before it | repeats the last character printed, whatever came since (a mark too) | xterm `doparsing` sets `lastchar` for each printed character; its combining path goes on to the next character before the line that would change it; back in the ground state after anything else it sets `lastchar = thischar`, which is -1 ("not a legal IChar"), and `CASE_REP` needs `CharWidth(lastchar) > 0` (pinned in the `xterm` tests) | [`generate`] sends REP only right after a piece of text that ends in a character |
//! | Writing the last column with DECAWM reset | the wrap is pending all the same: the next character overwrites the column, or wraps if DECAWM was set again before it | the same | xterm `dotext` sets `do_wrap` whenever a write reaches the right margin (`cur_col < next_col`), WRAPAROUND or not; only taking the wrap tests WRAPAROUND | — (we left it unset: fixed) |
//!
//! Not compared: the soft-wrap flag of a row. It shows nowhere on the screen (it joins rows
//! when text is copied); we keep and end it where xterm does (`WrapLine` sets it; `ClearRight`,
//! `ClearBufRows` and `ScrnDeleteChar` clear it; inserting and other erases leave it), the
//! differential tests against `vt100` check the rows it marks, and the screen differential
//! against the phux reference (`phux_conformance::screen_diff`) compares it both ways.
//!
//! Decided, a deliberate deviation from xterm (not compared): a combining mark, after a cursor
//! motion or an edit, over a cell that holds nothing. xterm's `doparsing` adds it to the cell
//! under the cursor when that cell's character is at least a space (`getXtermCell(...) >= ' '`:
//! one an erase left, as `ClearCells` writes spaces), and otherwise (a cell never written, or
//! one a scroll brought in: `ScrnClearLines` zeroes them) lets it through as a character of its
//! own, which `dotext` writes into the cell with `WriteText`, the cursor moving one column on.
//! We put it on a blank in either case, the cursor staying: what xterm does after any erase.
//! Our cells do not record whether an erase or nothing touched them, and the bootstrap could not
//! carry it: it clears the client's screen with `CSI 2 J` first, which in xterm is
//! `ClearBufRows` → `ClearCells` (spaces), so an xterm redrawn from our bootstrap attaches the
//! mark too. Pinned in the `xterm` tests. Alacritty puts it on the cell before the cursor;
//! [`generate`] writes a mark alone only on a cell that holds a character.
//!
//! Any other difference is undecided, and [`check`] returns it with the stream that shows it.

// Test-only glue between two grids of at most a few hundred cells: the casts between their
// index types cannot wrap.
#![allow(
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_possible_truncation
)]

use alacritty_terminal::event::VoidListener;
use alacritty_terminal::grid::Dimensions;
use alacritty_terminal::index::{Column, Line};
use alacritty_terminal::term::cell::Flags;
use alacritty_terminal::term::test::TermSize;
use alacritty_terminal::term::{Config, Term};
use alacritty_terminal::vte::ansi::{Color as AColor, Processor};

use crate::Terminal;
use crate::grid::{
    BOLD, Color as GridColor, DIM, DOUBLE_UNDERLINE, INVERSE, INVISIBLE, ITALIC, STRIKETHROUGH,
    UNDERLINE,
};
use crate::vtgen::{self, Oracle};

/// A cell colour.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Color {
    /// The default colour.
    Default,
    /// A palette index (0-15 the named colours).
    Idx(u8),
    /// A direct colour.
    Rgb(u8, u8, u8),
}

impl From<GridColor> for Color {
    fn from(c: GridColor) -> Self {
        match c {
            GridColor::Default => Self::Default,
            GridColor::Idx(i) => Self::Idx(i),
            GridColor::Rgb(r, g, b) => Self::Rgb(r, g, b),
        }
    }
}

/// A cell as both models can describe it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CellView {
    /// The base character and its combining marks; a blank is `" "`.
    pub text: String,
    /// 0 an ordinary cell, 1 a wide character, 2 the second half of one.
    pub width: u8,
    /// [`ATTR_BOLD`] and the other `ATTR_*` bits.
    pub attrs: u8,
    /// Foreground and background.
    pub fg: Color,
    /// Background.
    pub bg: Color,
}

/// Attribute bits of [`CellView::attrs`].
pub const ATTR_BOLD: u8 = 1;
const ATTR_DIM: u8 = 2;
const ATTR_ITALIC: u8 = 4;
const ATTR_UNDERLINE: u8 = 8;
const ATTR_DOUBLE_UNDERLINE: u8 = 16;
const ATTR_INVERSE: u8 = 32;
const ATTR_HIDDEN: u8 = 64;
const ATTR_STRIKE: u8 = 128;

/// What is compared: the active screen's cells and soft wraps, the cursor and its pending wrap.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Snapshot {
    /// Rows of cells, top first.
    pub rows: Vec<Vec<CellView>>,
    /// Per row: it soft-wrapped into the next one.
    pub wrapped: Vec<bool>,
    /// Cursor column and row, and whether a wrap is pending; `None` when not compared.
    pub cursor: Option<(u16, u16, bool)>,
    /// Cells not compared (column, row): see the table.
    pub unchecked: Vec<(usize, usize)>,
}

/// Our model's view.
pub fn ours(t: &Terminal) -> Snapshot {
    let vt = &t.vt;
    let mut rows = Vec::new();
    let mut wrapped = Vec::new();
    for row in vt.screen.iter() {
        let mut cells = Vec::with_capacity(row.cells.len());
        for (x, &cell) in row.cells.iter().enumerate() {
            let pen = row.pen(cell);
            let mut text = String::new();
            let ch = cell.ch();
            text.push(if ch == '\0' { ' ' } else { ch });
            text.push_str(row.marks_at(x as u16));
            let flags = [
                (pen.has(BOLD), ATTR_BOLD),
                (pen.has(DIM), ATTR_DIM),
                (pen.has(ITALIC), ATTR_ITALIC),
                (pen.has(UNDERLINE), ATTR_UNDERLINE),
                (pen.has_bg(DOUBLE_UNDERLINE), ATTR_DOUBLE_UNDERLINE),
                (pen.has(INVERSE), ATTR_INVERSE),
                (pen.has_bg(INVISIBLE), ATTR_HIDDEN),
                (pen.has_bg(STRIKETHROUGH), ATTR_STRIKE),
            ];
            let attrs = flags
                .iter()
                .filter(|(on, _)| *on)
                .fold(0, |acc, (_, bit)| acc | bit);
            let width = if cell.is_wide() {
                1
            } else if cell.is_wide_cont() {
                2
            } else {
                0
            };
            if width == 2 {
                " ".clone_into(&mut text);
            }
            cells.push(CellView {
                text,
                width,
                attrs,
                fg: GridColor::unpack(pen.fg).into(),
                bg: GridColor::unpack(pen.bg).into(),
            });
        }
        rows.push(cells);
        wrapped.push(row.wrapped);
    }
    Snapshot {
        rows,
        wrapped,
        cursor: Some((vt.cur.x, vt.cur.y, vt.cur.pending)),
        unchecked: Vec::new(),
    }
}

fn color(c: AColor) -> Color {
    match c {
        AColor::Named(n) => match n as usize {
            i @ 0..=15 => Color::Idx(i as u8),
            _ => Color::Default,
        },
        AColor::Indexed(i) => Color::Idx(i),
        AColor::Spec(rgb) => Color::Rgb(rgb.r, rgb.g, rgb.b),
    }
}

/// Alacritty's view, with the decided differences normalised.
pub fn theirs(t: &Term<VoidListener>) -> Snapshot {
    let grid = t.grid();
    let (cols, lines) = (grid.columns(), grid.screen_lines());
    let mut rows = Vec::with_capacity(lines);
    let mut wrapped = Vec::with_capacity(lines);
    let mut unchecked = Vec::new();
    for y in 0..lines {
        let row = &grid[Line(y as i32)];
        let mut cells = Vec::with_capacity(cols);
        for x in 0..cols {
            let cell = &row[Column(x)];
            let f = cell.flags;
            if f.contains(Flags::LEADING_WIDE_CHAR_SPACER) {
                unchecked.push((x, y));
            }
            let mut text = String::new();
            // A tab's `\t` reads as the blank it is (decided difference).
            text.push(if cell.c == '\t' { ' ' } else { cell.c });
            if let Some(marks) = cell.zerowidth() {
                text.extend(marks);
            }
            let width = if f.contains(Flags::WIDE_CHAR) {
                1
            } else if f.contains(Flags::WIDE_CHAR_SPACER) {
                " ".clone_into(&mut text);
                2
            } else {
                0
            };
            let flags = [
                (Flags::BOLD, ATTR_BOLD),
                (Flags::DIM, ATTR_DIM),
                (Flags::ITALIC, ATTR_ITALIC),
                (Flags::UNDERLINE, ATTR_UNDERLINE),
                (Flags::DOUBLE_UNDERLINE, ATTR_DOUBLE_UNDERLINE),
                (Flags::INVERSE, ATTR_INVERSE),
                (Flags::HIDDEN, ATTR_HIDDEN),
                (Flags::STRIKEOUT, ATTR_STRIKE),
            ];
            let attrs = flags
                .iter()
                .filter(|(flag, _)| f.contains(*flag))
                .fold(0, |acc, (_, bit)| acc | bit);
            cells.push(CellView {
                text,
                width,
                attrs,
                fg: color(cell.fg),
                bg: color(cell.bg),
            });
        }
        wrapped.push(row[Column(cols - 1)].flags.contains(Flags::WRAPLINE));
        rows.push(cells);
    }
    let cursor = &grid.cursor;
    Snapshot {
        rows,
        wrapped,
        cursor: Some((
            cursor.point.column.0 as u16,
            cursor.point.line.0 as u16,
            cursor.input_needs_wrap,
        )),
        unchecked,
    }
}

/// The generator's stream for alacritty ([`vtgen::generate`] steered by the table above).
pub fn generate(bytes: &[u8], cols: u16, rows: u16) -> Vec<u8> {
    vtgen::generate(Oracle::Alacritty, bytes, cols, rows)
}

/// Feeds `stream` to both models at `cols` x `rows` and returns the first difference that is
/// not a decided one: its description, or `None` when they agree.
pub fn check(stream: &[u8], cols: u16, rows: u16) -> Option<String> {
    let mut ours_t = Terminal::new(cols, rows, 0);
    ours_t.advance(stream);
    let size = TermSize::new(usize::from(cols), usize::from(rows));
    let config = Config {
        scrolling_history: 0,
        ..Config::default()
    };
    let mut theirs_t = Term::new(config, &size, VoidListener);
    let mut parser: Processor = Processor::new();
    parser.advance(&mut theirs_t, stream);
    let (mut a, mut b) = (ours(&ours_t), theirs(&theirs_t));
    for snapshot in [&mut a, &mut b] {
        style_halves_as_their_character(snapshot);
    }
    for &(x, y) in &b.unchecked {
        if let (Some(ours), Some(theirs)) =
            (a.rows.get(y).and_then(|r| r.get(x)), b.rows.get_mut(y))
        {
            theirs[x] = ours.clone();
        }
    }
    b.unchecked.clear();
    // Soft wraps are not compared (see the table).
    a.wrapped.clear();
    b.wrapped.clear();
    if a == b {
        return None;
    }
    Some(describe(&a, &b))
}

/// The second half of a wide character takes the style of its first half, and a blank that
/// shows no foreground (no underline, inverse or strike) has none (see the table).
fn style_halves_as_their_character(s: &mut Snapshot) {
    const SHOWS_FOREGROUND: u8 =
        ATTR_UNDERLINE | ATTR_DOUBLE_UNDERLINE | ATTR_INVERSE | ATTR_STRIKE;
    for row in &mut s.rows {
        for x in 0..row.len() {
            if row[x].width == 2 && (x == 0 || row[x - 1].width != 1) {
                // An orphaned second half is a blank.
                row[x].width = 0;
            }
            if x > 0 && row[x].width == 2 {
                let lead = row[x - 1].clone();
                let half = &mut row[x];
                (half.attrs, half.fg, half.bg) = (lead.attrs, lead.fg, lead.bg);
            } else if row[x].text == " " && row[x].attrs & SHOWS_FOREGROUND == 0 {
                row[x].fg = Color::Default;
                row[x].attrs = 0;
            }
        }
    }
}

fn describe(a: &Snapshot, b: &Snapshot) -> String {
    if a.cursor != b.cursor {
        return format!("cursor: ours {:?}, alacritty {:?}", a.cursor, b.cursor);
    }
    for (y, (ra, rb)) in a.rows.iter().zip(&b.rows).enumerate() {
        for (x, (ca, cb)) in ra.iter().zip(rb).enumerate() {
            if ca != cb {
                return format!("cell ({x}, {y}): ours {ca:?}, alacritty {cb:?}");
            }
        }
    }
    for (y, (wa, wb)) in a.wrapped.iter().zip(&b.wrapped).enumerate() {
        if wa != wb {
            return format!("row {y} soft wrap: ours {wa}, alacritty {wb}");
        }
    }
    "sizes differ".to_owned()
}

/// The fuzz target's body: the first byte picks a screen size, the rest is [`generate`]d into a
/// stream that both models must show alike.
///
/// # Panics
///
/// On an undecided difference, with the stream that shows it.
pub fn fuzz_one(data: &[u8]) {
    let Some((&size, rest)) = data.split_first() else {
        return;
    };
    let (cols, rows) = [(20, 6), (10, 4), (80, 24), (2, 2)][usize::from(size % 4)];
    let stream = generate(rest, cols, rows);
    if let Some(diff) = check(&stream, cols, rows) {
        panic!(
            "{diff}\nsize {cols}x{rows}, stream: {:?}",
            String::from_utf8_lossy(&stream)
        );
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn ours_matches_alacritty_but_for_the_decided_differences(
            bytes in proptest::collection::vec(any::<u8>(), 0..96),
            size in 0usize..4,
        ) {
            let (cols, rows) = [(20, 6), (10, 4), (80, 24), (2, 2)][size];
            let stream = generate(&bytes, cols, rows);
            if let Some(diff) = check(&stream, cols, rows) {
                return Err(TestCaseError::fail(format!(
                    "{diff}\nstream: {:?}", String::from_utf8_lossy(&stream)
                )));
            }
        }
    }

    /// The fuzz target's committed corpus and every minimised crash it found
    /// (`fuzz/regressions/vt_differential/`, when there are any), replayed on stable.
    #[test]
    fn the_fuzz_corpus_and_regressions_replay() {
        let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut n = 0;
        for dir in ["corpus", "regressions"] {
            let dir = fuzz.join(dir).join("vt_differential");
            // Only the corpus must exist: a target may have found nothing yet.
            let Ok(entries) = std::fs::read_dir(&dir) else {
                assert!(
                    !dir.ends_with("corpus/vt_differential"),
                    "no corpus in {}",
                    dir.display()
                );
                continue;
            };
            for entry in entries {
                fuzz_one(&std::fs::read(entry.unwrap().path()).unwrap());
                n += 1;
            }
        }
        assert!(n > 0, "no corpus in {}", fuzz.display());
    }
}
