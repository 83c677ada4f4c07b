//! The stream generator of the differential tests: arbitrary bytes in, a VT byte stream
//! weighted like real programs' output out, steered around the differences already decided
//! against the emulator it is generated for ([`Oracle`]).
//!
//! Our model follows the stream as it is generated (the guide), for the choices that depend on
//! the cursor or the modes. Every steering names the row of its oracle's decided-differences
//! table: [`crate::differential`]'s for alacritty, `phux_conformance::screen_diff`'s for the
//! phux reference. A stream generated for one oracle is a stream any xterm-compatible terminal
//! must show as xterm does; the steering only leaves out what that oracle is known to get
//! otherwise.

// The guide's cursor and a screen of at most a few hundred cells: the casts between index
// types cannot wrap.
#![allow(clippy::cast_possible_truncation)]

use unicode_width::UnicodeWidthChar as _;

use crate::Terminal;
use crate::grid::BG_ATTR_MASK;
use crate::vt::charset::Charset;

/// The emulator a stream is generated for: which decided differences it steers around.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Oracle {
    /// `alacritty_terminal`, in process ([`crate::differential`]).
    Alacritty,
    /// The phux reference (libghostty-vt), read over the wire with GET_SCREEN
    /// (`phux_conformance::screen_diff`).
    Reference,
}

/// The decided differences [`generate`] steers around for [`Oracle::Reference`], by the id of
/// their row in `phux_conformance::screen_diff`'s table (which says why each is decided).
pub mod reference {
    /// A count of 0 for CHT, CBT, DCH, IL, DL, SU or SD: xterm counts 1, the reference
    /// nothing. Sent as 1.
    pub const ZERO_COUNT: &str = "zero-count";
    /// REP after anything but a printed character: xterm repeats nothing, the reference the
    /// last character printed. Not sent.
    pub const REP_AFTER_CONTROL: &str = "rep-after-control";
    /// `CSI ? 1049 h` with a pending wrap: xterm cancels it (the switch clears the screen),
    /// the reference keeps it. A CR goes first.
    pub const ENTER_1049_PENDING: &str = "enter-1049-pending-wrap";
    /// `CSI ? 1049 h` or `l` with a background colour: xterm clears the alternate screen as
    /// it enters it, in the background colour of that moment (BCE), and not as it leaves; the
    /// reference clears it as it enters in the default colour, and as it leaves in the
    /// background colour then (seen when it is entered again). Not sent.
    pub const ALT_1049_BACKGROUND: &str = "1049-background";
    /// IL or DL with the cursor outside the scroll region: xterm still moves it to the first
    /// column, the reference leaves it. A CR follows.
    pub const LINE_EDIT_OUTSIDE_REGION: &str = "il-dl-outside-region";
    /// A combining mark on its own (after a motion, an edit or a control): xterm joins it to
    /// the cell last written, else to the one under the cursor, the reference to the cell
    /// before the cursor; and on a cell that holds nothing we put it on a blank (a decided
    /// deviation of ours from xterm, which writes it as a character of its own) where the
    /// reference drops it. Not sent unless both join the same cell, one with a character.
    pub const LONE_MARK: &str = "lone-mark";
    /// Text other than printable ASCII, or `_`, while GL holds the DEC special graphics:
    /// xterm shows characters beyond Latin-1 as they are and `_` as a blank, the reference
    /// drops the first and shows `_`. Not sent.
    pub const DEC_GRAPHICS_TEXT: &str = "dec-graphics-text";
    /// CBT with a pending wrap: xterm moves the column and keeps the wrap pending (a wrap
    /// pending away from the last column, which we do not keep: a decided deviation of ours),
    /// as the reference does. A CR goes first.
    pub const CBT_PENDING: &str = "cbt-pending-wrap";
    /// A wide character wrapping from the last column while that column shows something:
    /// xterm leaves it as it is, the reference blanks it. Not sent.
    pub const WIDE_WRAP_OVER: &str = "wide-wrap-over-last-column";
    /// A wrap that does not move the cursor (the last row, below the scroll region): xterm and
    /// the reference mark the row soft-wrapped, we do not (a decided deviation of ours: the
    /// mark would point at no next row). Not sent.
    pub const WRAP_IN_PLACE: &str = "wrap-in-place";
    /// IL, DL, SD or RI shifting soft-wrapped rows: xterm moves a row's wrap with it (its
    /// `ScrnInsertLine` / `ScrnDeleteLine` move whole lines), the reference drops it. Not sent.
    pub const SHIFTED_SOFT_WRAP: &str = "shifted-soft-wrap";
    /// A combining mark after a character written at the last column with DECAWM reset:
    /// xterm joins it to that character (`char_was_written`), the reference to the one
    /// before. Not sent.
    pub const MARK_WITHOUT_AUTOWRAP: &str = "mark-at-last-column-without-autowrap";
    /// A scroll whose rows do not go to history (the alternate screen, a region below the
    /// top) while a row of the region is soft-wrapped: xterm moves each row with its mark and
    /// clears the new rows (`ScrnDeleteLine`, `ScrnClearLines`); the reference's new rows keep
    /// the marks of the rows that left and the rows it moves lose theirs. Not sent.
    pub const RECYCLED_WRAP: &str = "recycled-row-soft-wrap";
    /// CHA, HPA, HPR or VPR in origin mode with a scroll region below the top: xterm moves
    /// within the row or relative to it (`CursorSet` of `CursorRow`, which takes the region's
    /// top off first), the reference adds the region's top to the row again. Not sent.
    pub const ORIGIN_ROW_SHIFT: &str = "origin-mode-row-shift";
    /// A write at the last column cutting a wide character in two: xterm leaves the first
    /// half a space in the character's own style (`ScrnWriteText`), the reference a blank in
    /// the pen's colours (what xterm leaves when the write starts elsewhere). Not sent where
    /// that shows.
    pub const LAST_COLUMN_CUT: &str = "last-column-cut";
    /// TBC without a parameter (`CSI g`): xterm clears the tab stop at the cursor (the
    /// default is 0, ctlseqs "Ps = 0 ⇒ Clear Current Column (default)"), the reference does
    /// nothing. Sent as `CSI 0 g`.
    pub const TBC_DEFAULT: &str = "tbc-default";
    /// TBC 0 on a column without a tab stop: xterm does nothing (`TabClear` of a clear stop),
    /// the reference sets one there. Not sent.
    pub const TBC_NO_STOP: &str = "tbc-without-a-stop";
    /// RI with a pending wrap: xterm cancels it (`RevIndex` resets `do_wrap`), the reference
    /// keeps it when RI scrolls. A CR goes first.
    pub const RI_PENDING: &str = "ri-pending-wrap";
    /// Insert mode with a run of characters that shifts a wide character past the right
    /// margin: xterm shifts the row by the run's width at once (`WriteText`), the reference a
    /// character at a time, cutting the wide character on the way. Not sent.
    pub const INSERT_RUN: &str = "insert-run";
    /// On a 2-column screen, a wide character written with DECAWM reset while a wrap is
    /// pending: xterm drops it and the pending wrap with it (`dotext` clears `do_wrap`, fits
    /// nothing, and sets `do_wrap` to `need_wrap`, false), the reference keeps the wrap
    /// pending, so the next character wraps. Not sent.
    pub const WIDE_DROPPED_PENDING: &str = "wide-dropped-with-pending-wrap";
    /// A wide character that does not fit the last column, in insert mode (IRM): xterm wraps
    /// and then inserts it at the start of the next row, shifting that row right (`dotext`
    /// wraps with `WrapLine`, then `WriteText` calls `InsertChar` for it); the reference wraps
    /// and writes over the row's first cells. Not sent.
    pub const WIDE_WRAP_INSERT: &str = "wide-wrap-in-insert-mode";
    /// Every id above.
    pub const ALL: &[&str] = &[
        WIDE_WRAP_INSERT,
        WIDE_DROPPED_PENDING,
        INSERT_RUN,
        RI_PENDING,
        TBC_NO_STOP,
        TBC_DEFAULT,
        LAST_COLUMN_CUT,
        RECYCLED_WRAP,
        ORIGIN_ROW_SHIFT,
        WIDE_WRAP_OVER,
        WRAP_IN_PLACE,
        SHIFTED_SOFT_WRAP,
        MARK_WITHOUT_AUTOWRAP,
        ZERO_COUNT,
        REP_AFTER_CONTROL,
        ENTER_1049_PENDING,
        ALT_1049_BACKGROUND,
        LINE_EDIT_OUTSIDE_REGION,
        LONE_MARK,
        DEC_GRAPHICS_TEXT,
        CBT_PENDING,
    ];
}

/// A byte source for [`generate`]: arbitrary bytes, read as choices.
struct Choices<'a> {
    bytes: &'a [u8],
}

impl Choices<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(b)
    }

    /// A number in `0..n`, 0 when the bytes ran out.
    fn below(&mut self, n: u16) -> u16 {
        self.byte().map_or(0, |b| u16::from(b) % n.max(1))
    }
}

/// Text pieces: ASCII words, combining marks (after their base character), DEC graphics
/// letters, wide characters (CJK, an emoji) alone and among narrow ones.
const TEXT: [&str; 15] = [
    "a",
    "hello",
    "xyz12",
    " ",
    "abc",
    "q ",
    "e\u{301}",
    "x\u{300}\u{302}",
    "lqk",
    "~_`",
    "\u{4e2d}",
    "\u{3042}\u{3044}",
    "x\u{6587}y",
    "\u{1f600}",
    "\u{d55c}\u{301}",
];

/// Turns arbitrary bytes into a VT stream for a `cols` x `rows` terminal, weighted like real
/// programs' output: text most of all, line ends and cursor motion next, then erasing,
/// editing, SGR, regions and modes; steered around what `oracle` is known to show otherwise.
pub fn generate(oracle: Oracle, bytes: &[u8], cols: u16, rows: u16) -> Vec<u8> {
    generate_noting(oracle, bytes, cols, rows, &mut |_| {})
}

/// As [`generate`], calling `steered` with the id ([`reference`]) of each decided difference
/// it steered around, once per time (only for [`Oracle::Reference`]).
#[allow(clippy::too_many_lines)] // one grammar, one match: split, it reads worse
pub fn generate_noting(
    oracle: Oracle,
    bytes: &[u8],
    cols: u16,
    rows: u16,
    steered: &mut dyn FnMut(&'static str),
) -> Vec<u8> {
    let alacritty = oracle == Oracle::Alacritty;

    let mut c = Choices { bytes };
    let mut out = Vec::new();
    let mut alternate = false;
    let mut printed = false;
    let mut guide = Terminal::new(cols, rows, 0);
    let mut fed = 0;
    let n = |c: &mut Choices<'_>, max: u16| c.below(max) + 1;
    while let Some(kind) = c.byte() {
        guide.advance(&out[fed..]);
        fed = out.len();
        let (mark, was_printed) = (out.len(), printed);
        // REP only right after a printed character (see `reference::REP_AFTER_CONTROL`):
        // anything else clears it.
        printed = false;
        let kind = kind % 64;
        let entering = kind == 48 && !alternate;
        if alacritty
            && (matches!(kind, 24 | 26 | 43 | 31..=34 | 52) || entering)
            && guide.vt.cur.pending
        {
            // Alacritty: erasing, editing and entering the 1049 screen cancel a pending wrap
            // in xterm, not in alacritty (see its table): a CR first.
            out.push(b'\r');
        }
        match kind {
            0..=17 => {
                let piece = TEXT[usize::from(c.below(TEXT.len() as u16))];
                let vt = &guide.vt;
                let graphics = vt.charsets.g[usize::from(vt.charsets.gl)] == Charset::DecSpecial;
                if !alacritty && graphics && (!piece.is_ascii() || piece.contains('_')) {
                    steered(reference::DEC_GRAPHICS_TEXT);
                    continue;
                }
                out.extend_from_slice(piece.as_bytes());
                // No REP right after a combining mark (xterm repeats the character before it; see
                // the alacritty table).
                printed = piece.chars().last().is_some_and(|ch| ch.width() != Some(0));
            }
            18..=19 => {
                out.extend(std::iter::repeat_n(b'#', usize::from(n(&mut c, cols))));
                printed = true;
            }
            20..=22 => out.extend_from_slice(b"\r\n"),
            23 => out.push(b'\r'),
            24 => out.push(b'\n'),
            25 => out.push(0x08),
            26 => out.push(b'\t'),
            27..=28 => {
                let (y, x) = (n(&mut c, rows + 1), n(&mut c, cols + 1));
                out.extend_from_slice(format!("\x1b[{y};{x}H").as_bytes());
            }
            29..=30 => {
                // Alacritty: no CNL / CPL (see its table).
                let finals: &[u8] = if alacritty {
                    b"ABCDGdae`"
                } else {
                    b"ABCDGdae`EF"
                };
                let fin = finals[usize::from(c.below(finals.len() as u16))] as char;
                let mut k = c.below(cols).max(1);
                let vt = &guide.vt;
                let y = vt.cur.y;
                // The reference: no CHA, HPA or VPR then (see `reference::ORIGIN_ROW_SHIFT`).
                let mut shifted =
                    !alacritty && vt.origin && vt.top > 0 && matches!(fin, 'a' | 'e' | 'G' | '`');
                if shifted {
                    steered(reference::ORIGIN_ROW_SHIFT);
                }
                if alacritty {
                    // CUU / CUD never cross a margin they start inside (see its table).
                    if fin == 'A' && y >= vt.top {
                        k = k.min(y - vt.top);
                    } else if fin == 'B' && y <= vt.bottom {
                        k = k.min(vt.bottom - y);
                    }
                    // No relative row motion, CHA or HPA in origin mode with a region below
                    // the top (see its table).
                    shifted = vt.origin && vt.top > 0 && matches!(fin, 'A' | 'B' | 'e' | 'G' | '`');
                }
                if k > 0 && !shifted {
                    out.extend_from_slice(format!("\x1b[{k}{fin}").as_bytes());
                }
            }
            31..=32 => {
                let fin = if c.below(2) == 0 { 'J' } else { 'K' };
                let mode = c.below(3);
                // Alacritty: ED 1 from the second row is not generated (see its table).
                if !(alacritty && fin == 'J' && mode == 1 && guide.vt.cur.y == 1) {
                    out.extend_from_slice(format!("\x1b[{mode}{fin}").as_bytes());
                }
            }
            33..=34 => {
                let fin = b"@PLMX"[usize::from(c.below(5))] as char;
                let vt = &guide.vt;
                if !alacritty && matches!(fin, 'L' | 'M') && shifts_wrapped(vt, vt.cur.y) {
                    steered(reference::SHIFTED_SOFT_WRAP);
                    continue;
                }
                let mut k = c.below(cols / 2 + 2);
                if matches!(fin, 'P' | 'L' | 'M') {
                    k = at_least_one(oracle, k, steered);
                }
                if alacritty && fin == 'P' {
                    // DCH past the end of the row is not generated (see its table).
                    k = k.min(cols - guide.vt.cur.x);
                }
                out.extend_from_slice(format!("\x1b[{k}{fin}").as_bytes());
                let vt = &guide.vt;
                let outside = vt.cur.y < vt.top || vt.cur.y > vt.bottom;
                if matches!(fin, 'L' | 'M') && (alacritty || outside) {
                    // IL and DL home the column in xterm only (alacritty; the reference outside
                    // the scroll region): a CR after.
                    if !alacritty {
                        steered(reference::LINE_EDIT_OUTSIDE_REGION);
                    }
                    out.push(b'\r');
                }
            }
            35..=39 => sgr(oracle, &mut c, &mut out),
            40 => {
                let (t, b) = (n(&mut c, rows), n(&mut c, rows));
                out.extend_from_slice(format!("\x1b[{t};{b}r").as_bytes());
            }
            41 => out.extend_from_slice(b"\x1b[r"),
            42 => {
                let fin = if c.below(2) == 0 { 'S' } else { 'T' };
                let k = at_least_one(oracle, c.below(rows), steered);
                if !alacritty && fin == 'T' && shifts_wrapped(&guide.vt, guide.vt.top) {
                    steered(reference::SHIFTED_SOFT_WRAP);
                    continue;
                }
                out.extend_from_slice(format!("\x1b[{k}{fin}").as_bytes());
            }
            43 => {
                let which = usize::from(c.below(3));
                let vt = &guide.vt;
                // RI at the top margin scrolls the region down.
                if !alacritty && which == 1 && vt.cur.y == vt.top && shifts_wrapped(vt, vt.top) {
                    steered(reference::SHIFTED_SOFT_WRAP);
                    continue;
                }
                if !alacritty && which == 1 && vt.cur.pending {
                    steered(reference::RI_PENDING);
                    out.push(b'\r');
                }
                out.extend_from_slice([&b"\x1bD"[..], b"\x1bM", b"\x1bE"][which]);
            }
            44..=45 => {
                let (mode, set) = (
                    [("?", 7), ("", 4), ("?", 6), ("?", 25)][usize::from(c.below(4))],
                    c.below(2) == 0,
                );
                let hl = if set { 'h' } else { 'l' };
                out.extend_from_slice(format!("\x1b[{}{}{hl}", mode.0, mode.1).as_bytes());
                if alacritty && mode == ("?", 6) && !set {
                    // Resetting DECOM homes the cursor in xterm only (see its table).
                    out.extend_from_slice(b"\x1b[H");
                }
            }
            46..=47 => {
                out.extend_from_slice(
                    [&b"\x1b(0"[..], b"\x1b(B", b"\x1b)0", b"\x0e", b"\x0f"]
                        [usize::from(c.below(5))],
                );
            }
            48 => {
                let saved = guide.vt.saved[0];
                let clamped = saved.origin && saved.y > guide.vt.bottom;
                // Alacritty: leaving only while on the alternate screen, nor a leave whose
                // restore would change origin mode, and G0 in GL around the save and restore
                // 1049 makes (see its table).
                let leave_differs = saved.origin != guide.vt.origin || clamped;
                if !(alacritty && alternate && leave_differs) {
                    let leave = if alacritty {
                        alternate
                    } else {
                        c.below(2) == 0
                    };
                    let vt = &guide.vt;
                    if !alacritty && vt.pen.bg & !BG_ATTR_MASK != 0 {
                        steered(reference::ALT_1049_BACKGROUND);
                        continue;
                    }
                    if !alacritty && !leave && vt.cur.pending {
                        steered(reference::ENTER_1049_PENDING);
                        out.push(b'\r');
                    }
                    alternate = !leave;
                    if alacritty {
                        out.push(0x0f);
                    }
                    let switch: &[u8] = if leave {
                        b"\x1b[?1049l"
                    } else {
                        b"\x1b[?1049h"
                    };
                    out.extend_from_slice(switch);
                }
            }
            49..=50 => {
                let which = usize::from(c.below(4));
                let vt = &guide.vt;
                let saved = vt.saved[usize::from(vt.alt_active)];
                // Alacritty: G0 in GL around a save or restore, no restore that would change
                // origin mode nor one that origin mode would clamp into the region (see its
                // table).
                let restores_origin =
                    saved.origin != vt.origin || (saved.origin && saved.y > vt.bottom);
                if alacritty {
                    out.push(0x0f);
                }
                if !alacritty || which % 2 == 0 || !restores_origin {
                    out.extend_from_slice([&b"\x1b7"[..], b"\x1b8", b"\x1b[s", b"\x1b[u"][which]);
                }
            }
            51 => {
                let mut which = [&b"\x1bH"[..], b"\x1b[g", b"\x1b[3g"][usize::from(c.below(3))];
                if !alacritty && which == b"\x1b[g" {
                    let vt = &guide.vt;
                    if !vt.tabs[usize::from(vt.cur.x)] {
                        steered(reference::TBC_NO_STOP);
                        continue;
                    }
                    // TBC with its parameter spelled out (see `reference::TBC_DEFAULT`).
                    steered(reference::TBC_DEFAULT);
                    which = b"\x1b[0g";
                }
                out.extend_from_slice(which);
            }
            52 => {
                // Alacritty: CHT only, no CBT (see its table).
                let fin = if alacritty || c.below(2) == 0 {
                    'I'
                } else {
                    'Z'
                };
                let k = at_least_one(oracle, c.below(4), steered);
                if fin == 'Z' && guide.vt.cur.pending {
                    steered(reference::CBT_PENDING);
                    out.push(b'\r');
                }
                out.extend_from_slice(format!("\x1b[{k}{fin}").as_bytes());
            }
            // REP right after a printed character only: alacritty and the reference repeat
            // one printed before a control or a sequence too (see their tables).
            53 if was_printed => {
                out.extend_from_slice(format!("\x1b[{}b", c.below(cols + 2)).as_bytes());
            }
            55 => {
                // A combining mark on its own, after whatever came before. Alacritty: only
                // where it puts it on the same cell as xterm, one that holds a character (see
                // its table); for every oracle, while the cell has room for it.
                let vt = &guide.vt;
                let ours = vt.mark_target();
                let row = vt.screen.row(ours.1);
                let cell = row.cells[usize::from(ours.0)];
                let room = cell.ch().len_utf8() + row.marks_len(ours.0) <= 12;
                let theirs = if alacritty {
                    Some(mark_target_before_cursor(vt))
                } else {
                    mark_target_reference(vt)
                };
                let agreed = theirs == Some(ours);
                if !(alacritty || agreed && cell.has_contents()) {
                    steered(reference::LONE_MARK);
                }
                if agreed && cell.has_contents() && room {
                    out.extend_from_slice(
                        ["\u{301}", "\u{302}\u{303}"][usize::from(c.below(2))].as_bytes(),
                    );
                    printed = false;
                }
            }
            54 => {
                alternate = false;
                // REP waits for a character printed after the reset.
                printed = false;
                out.extend_from_slice(b"\x1bc");
            }
            _ => {
                if kind == 53 && !alacritty {
                    steered(reference::REP_AFTER_CONTROL);
                }
                out.extend_from_slice(TEXT[usize::from(c.below(4))].as_bytes());
                printed = true;
            }
        }
        // Alacritty: where it is known to part from xterm (a wide character cut in two, or
        // one that does not fit the row: see its table), our model counts a hazard: what would
        // add one is left out.
        let checked = !alacritty || matches!(kind, 0..=19 | 31..=34 | 53 | 56..);
        if checked && out.len() > mark {
            let mut trial = guide.vt.clone();
            trial.advance(&out[mark..]);
            let (before, after) = (guide.vt.hazards, trial.hazards);
            let parted = if alacritty {
                after.alacritty > before.alacritty
            } else {
                let ids = [
                    reference::WIDE_WRAP_OVER,
                    reference::WRAP_IN_PLACE,
                    reference::RECYCLED_WRAP,
                    reference::LAST_COLUMN_CUT,
                    reference::INSERT_RUN,
                    reference::WIDE_DROPPED_PENDING,
                    reference::WIDE_WRAP_INSERT,
                ];
                let mut parted = false;
                for (id, (a, b)) in ids.iter().zip(after.reference.iter().zip(before.reference)) {
                    if *a > b {
                        steered(id);
                        parted = true;
                    }
                }
                // A mark joining a character the write left at the last column without
                // autowrap (see `reference::MARK_WITHOUT_AUTOWRAP`).
                let text = std::str::from_utf8(&out[mark..]).unwrap_or("");
                let marks = text.chars().any(|ch| ch.width() == Some(0));
                if marks && !trial.autowrap && trial.cur.x + 1 == cols {
                    steered(reference::MARK_WITHOUT_AUTOWRAP);
                    parted = true;
                }
                parted
            };
            if parted {
                out.truncate(mark);
                printed = was_printed;
            }
        }
    }
    out
}

/// Whether a shift of the scroll region's rows from `from` (IL, DL, SD, RI) would move a
/// soft-wrapped row (see [`reference::SHIFTED_SOFT_WRAP`]).
fn shifts_wrapped(vt: &crate::vt::Vt, from: u16) -> bool {
    (from >= vt.top && from <= vt.bottom) && (from..=vt.bottom).any(|y| vt.screen.row(y).wrapped)
}

/// A count the reference reads as nothing goes as 1 (see [`reference::ZERO_COUNT`]).
fn at_least_one(oracle: Oracle, k: u16, steered: &mut dyn FnMut(&'static str)) -> u16 {
    if k == 0 && oracle == Oracle::Reference {
        steered(reference::ZERO_COUNT);
        1
    } else {
        k
    }
}

/// The cell the reference puts a combining mark on: the one before the cursor (under it when
/// a wrap is pending); none in the first column, where it drops the mark.
fn mark_target_reference(vt: &crate::vt::Vt) -> Option<(u16, u16)> {
    (vt.cur.x > 0 || vt.cur.pending).then(|| mark_target_before_cursor(vt))
}

/// The cell alacritty and the reference put a combining mark on: the one before the cursor
/// (under it when a wrap is pending or in the first column), the first half of a wide
/// character.
fn mark_target_before_cursor(vt: &crate::vt::Vt) -> (u16, u16) {
    let (x, y) = (vt.cur.x, vt.cur.y);
    let x = if vt.cur.pending {
        x
    } else {
        x.saturating_sub(1)
    };
    if x > 0 && vt.screen.row(y).cells[usize::from(x)].is_wide_cont() {
        (x - 1, y)
    } else {
        (x, y)
    }
}

/// One SGR of one to four parameters. Alacritty: no SGR 21 and no blink (see its table).
fn sgr(oracle: Oracle, c: &mut Choices<'_>, out: &mut Vec<u8>) {
    const SIMPLE: [u16; 24] = [
        0, 1, 2, 3, 4, 7, 8, 9, 22, 22, 23, 24, 27, 28, 29, 31, 42, 39, 49, 93, 104, 37, 40, 0,
    ];
    // Beyond those: blink, its reset, double underline.
    const MORE: [u16; 4] = [5, 25, 21, 6];
    let mut params = Vec::new();
    let kinds = if oracle == Oracle::Alacritty { 8 } else { 9 };
    for _ in 0..=c.below(3) {
        match c.below(kinds) {
            0 => params.push(format!("38;5;{}", c.below(256))),
            1 => params.push(format!(
                "48;2;{};{};{}",
                c.below(256),
                c.below(256),
                c.below(256)
            )),
            8 => params.push(MORE[usize::from(c.below(4))].to_string()),
            _ => params.push(SIMPLE[usize::from(c.below(24))].to_string()),
        }
    }
    out.extend_from_slice(format!("\x1b[{}m", params.join(";")).as_bytes());
}
