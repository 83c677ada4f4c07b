//! The VT interpreter: a DEC ANSI parser state machine and the screen operations it drives.
//!
//! The parser follows the state machine `vte` implements (the one `vt100` and alacritty build
//! on: same states, C0 controls executed inside sequences, CAN / SUB abort, ESC restarts, at
//! most 32 parameters), written out here so that:
//! - text takes a fast path: a run of printable ASCII is written into the row in one go,
//!   instead of one dispatched call per character;
//! - UTF-8 is decoded by a byte-at-a-time decoder whose state survives chunk boundaries, so a
//!   stream gives the same screen however it is split into reads (`vte` 0.15 loses the bytes
//!   after a character completed across a chunk boundary when an invalid byte follows within
//!   its 4-byte lookahead).
//!
//! Screen semantics follow xterm; where `vt100` differs, the differential tests name the case.
//!
//! By concern: this file holds the state and the text fast path ([`Vt::advance`]), resize and
//! memory; `parser` is the state machine; `esc`, `csi`, `sgr` and `osc` dispatch what it
//! recognises; `cursor`, `text` and `edit` are the screen operations they drive.

use crate::grid::{Grid, Pen};
use crate::history::History;
use crate::tracker::ModeTracker;

/// The most reply bytes that wait for [`Terminal::take_replies`](crate::Terminal::take_replies):
/// far more than any program's start-up queries (a few dozen bytes each), small enough that a
/// flood of queries costs nothing.
pub const MAX_REPLY_BYTES: usize = 4096;
pub(crate) use charset::{Charset, Charsets};

pub(crate) mod charset;
mod csi;
mod cursor;
mod edit;
mod esc;
mod osc;
mod parser;
mod report;
mod sgr;
mod text;

/// `vte` keeps at most this many parameters and sub-parameters; later ones are dropped.
const MAX_PARAMS: usize = 32;
/// At most this many intermediate bytes are kept (as in `vte`); more mark the sequence ignored.
const MAX_INTERMEDIATES: usize = 2;
/// An OSC body longer than this is cut: a title needs far less, and a program must not be able
/// to grow the server's memory with one unterminated string.
const MAX_OSC: usize = 4096;
/// `vt100` keeps at most this many bytes of text per cell (a base character plus marks).
const MAX_CELL_BYTES: usize = 18;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
enum State {
    #[default]
    Ground,
    Escape,
    EscapeIntermediate,
    CsiEntry,
    CsiParam,
    CsiIntermediate,
    CsiIgnore,
    DcsEntry,
    DcsParam,
    DcsIntermediate,
    DcsPassthrough,
    DcsIgnore,
    Osc,
    SosPmApc,
}

/// CSI parameters grouped like `vte`'s: `len[i]` at a group's first index is its length.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Params {
    vals: [u16; MAX_PARAMS],
    group: [u8; MAX_PARAMS],
    len: usize,
    /// Values already in the group still open (sub-parameters so far).
    open: usize,
}

impl Params {
    fn is_full(&self) -> bool {
        self.len == MAX_PARAMS
    }

    fn clear(&mut self) {
        self.len = 0;
        self.open = 0;
    }

    /// Closes the open group with `v` as its last value.
    fn push(&mut self, v: u16) {
        self.group[self.len - self.open] = (self.open + 1) as u8;
        self.vals[self.len] = v;
        self.open = 0;
        self.len += 1;
    }

    /// Adds `v` to the open group (a `:` follows it).
    fn extend(&mut self, v: u16) {
        self.group[self.len - self.open] = (self.open + 1) as u8;
        self.vals[self.len] = v;
        self.open += 1;
        self.len += 1;
    }

    fn iter(&self) -> ParamIter<'_> {
        ParamIter { p: self, i: 0 }
    }

    /// The first value of group `n`, or `default` when absent or 0.
    fn get(&self, n: usize, default: u16) -> u16 {
        match self.iter().nth(n).and_then(|g| g.first().copied()) {
            None | Some(0) => default,
            Some(v) => v,
        }
    }
}

struct ParamIter<'a> {
    p: &'a Params,
    i: usize,
}

impl<'a> Iterator for ParamIter<'a> {
    type Item = &'a [u16];

    fn next(&mut self) -> Option<&'a [u16]> {
        if self.i >= self.p.len {
            return None;
        }
        let n = usize::from(self.p.group[self.i]).max(1);
        let end = (self.i + n).min(self.p.len);
        let g = &self.p.vals[self.i..end];
        self.i = end;
        Some(g)
    }
}

/// UTF-8 decoding state in the ground state: continuation bytes still expected and the bounds
/// of the next one (the first continuation byte of some lead bytes is narrower).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Utf8 {
    need: u8,
    cp: u32,
    lo: u8,
    hi: u8,
}

/// The cursor. `x` is always a valid column; `pending` is xterm's wrap-pending state after a
/// character was written to the last column (the next printed character wraps first).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Cursor {
    pub(crate) x: u16,
    pub(crate) y: u16,
    pub(crate) pending: bool,
}

/// Hazards by oracle (see [`Vt::hazards`]).
#[cfg(any(test, feature = "generator"))]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Hazards {
    /// Where alacritty parts from xterm (a wide character cut in two, or one that does not
    /// fit the row).
    pub(crate) alacritty: u32,
    /// Where the phux reference does, by [`ReferenceHazard`].
    pub(crate) reference: [u32; 7],
}

/// Where the phux reference parts from xterm in a write (`vtgen::reference` names the rows).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(not(any(test, feature = "generator")), allow(dead_code))]
pub(crate) enum ReferenceHazard {
    /// A wide character wraps from the last column, which shows something: xterm leaves the
    /// column as it is, the reference blanks it.
    WideWrapOver = 0,
    /// A wrap that does not move the cursor (the last row, below the scroll region): xterm and
    /// the reference mark the row soft-wrapped, we do not.
    WrapInPlace = 1,
    /// A scroll whose rows do not go to history (the alternate screen, a region below the
    /// top) while a row of the region is soft-wrapped: the reference's new blank rows keep the
    /// marks of the rows that left, and the rows it moves lose theirs.
    RecycledWrap = 2,
    /// A write at the last column cutting a wide character: xterm leaves its first half a
    /// space in its own style, the reference a blank in the pen's colours.
    LastColumnCut = 3,
    /// Insert mode shifting the row by a run of characters at once (xterm's `WriteText`)
    /// where the reference shifts one character at a time, cutting a wide character that
    /// passes the right margin on the way.
    InsertRun = 4,
    /// A wide character as wide as the screen (2 columns), DECAWM reset, while a wrap is
    /// pending: xterm drops it and the pending wrap with it, the reference keeps the wrap.
    WideDroppedPending = 5,
    /// A wide character that wraps from the last column in insert mode: xterm inserts it at
    /// the start of the next row, the reference writes over that row's first cells.
    WideWrapInsert = 6,
}

/// What DECSC saves (per screen, as in xterm): xterm's `CursorSave` keeps the position, the
/// wrap-pending flag (`wrap_flag`), the attributes and origin mode (`DECSC_FLAGS`) and the
/// character sets, but not DECAWM.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Saved {
    pub(crate) x: u16,
    pub(crate) y: u16,
    pub(crate) pending: bool,
    pub(crate) pen: Pen,
    pub(crate) origin: bool,
    pub(crate) charsets: Charsets,
}

/// The parser plus both screens, the cursor, the pen, the modes that change how output is
/// drawn, the title, the bell count and the history.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Vt {
    // Parser.
    state: State,
    params: Params,
    param: u16,
    /// The sequence has a parameter digit (`CSI ? u` is a query, `CSI ? 0 u` is not).
    any_digit: bool,
    intermediates: [u8; MAX_INTERMEDIATES],
    n_intermediates: usize,
    ignoring: bool,
    osc: Vec<u8>,
    utf8: Utf8,

    // Screen.
    cols: u16,
    rows: u16,
    /// The active screen's rows; `other` holds the inactive screen's (the alternate screen has
    /// no rows until it is first entered).
    pub(crate) screen: Grid,
    other: Grid,
    pub(crate) alt_active: bool,
    pub(crate) cur: Cursor,
    pub(crate) pen: Pen,
    pub(crate) charsets: Charsets,
    /// Saved cursors: index 0 main screen, 1 alternate.
    pub(crate) saved: [Saved; 2],
    /// Scroll region rows, inclusive.
    pub(crate) top: u16,
    pub(crate) bottom: u16,
    pub(crate) origin: bool,
    pub(crate) autowrap: bool,
    /// IRM (`CSI 4 h`): printed characters push the rest of the row right.
    pub(crate) insert: bool,
    pub(crate) cursor_hidden: bool,
    /// DECSCUSR style, 0-6.
    pub(crate) cursor_style: u8,
    line_feed_mode: bool,
    /// One flag per column: a tab stop is set there.
    pub(crate) tabs: Vec<bool>,
    /// What REP repeats: the character printed last, while nothing but combining marks came
    /// after it ([xterm] `sp->lastchar`).
    pub(crate) last_char: Option<char>,
    /// A character was written since the last cursor motion or edit (xterm's
    /// `char_was_written`, which `ResetWrap` clears): a combining mark joins the cell at
    /// `last_written` (xterm's `last_written_col` / `last_written_row`), else the cell under
    /// the cursor.
    pub(crate) written: bool,
    pub(crate) last_written: (u16, u16),
    /// Characters REP accounted for without writing them (tests check the bound on work).
    #[cfg(test)]
    #[serde(skip)]
    pub(crate) rep_skipped: usize,
    /// Writes and edits where an oracle of the differential tests is known to part from xterm
    /// in a way the screen cannot show afterwards: the generator leaves out what would add one
    /// (see `differential` and `vtgen`).
    #[cfg(any(test, feature = "generator"))]
    #[serde(skip)]
    pub(crate) hazards: Hazards,

    pub(crate) history: History,
    pub(crate) title: Option<String>,
    pub(crate) bells: u32,
    /// The input encoder's modes: every CSI and ESC sequence is handed to it as dispatched.
    pub(crate) tracker: ModeTracker,
    /// Replies to the program's queries, oldest first, until the server takes them; at most
    /// [`crate::MAX_REPLY_BYTES`].
    pub(crate) replies: Vec<u8>,
    /// The dynamic colours OSC 10, 11 and 12 set and report: foreground, background, cursor.
    colors: [report::Rgb; 3],
}

fn default_tabs(cols: u16) -> Vec<bool> {
    (0..cols).map(|c| c > 0 && c % 8 == 0).collect()
}

impl Vt {
    pub(crate) fn new(cols: u16, rows: u16, scrollback: usize) -> Self {
        Self {
            state: State::Ground,
            params: Params::default(),
            param: 0,
            any_digit: false,
            intermediates: [0; MAX_INTERMEDIATES],
            n_intermediates: 0,
            ignoring: false,
            osc: Vec::new(),
            utf8: Utf8::default(),
            cols,
            rows,
            screen: Grid::new(cols, rows),
            other: Grid::new(cols, 0),
            alt_active: false,
            cur: Cursor::default(),
            pen: Pen::default(),
            charsets: Charsets::default(),
            saved: [Saved::default(); 2],
            top: 0,
            bottom: rows - 1,
            origin: false,
            autowrap: true,
            insert: false,
            cursor_hidden: false,
            cursor_style: 0,
            line_feed_mode: false,
            tabs: default_tabs(cols),
            last_char: None,
            written: false,
            last_written: (0, 0),
            #[cfg(test)]
            rep_skipped: 0,
            #[cfg(any(test, feature = "generator"))]
            hazards: Hazards::default(),
            history: History::new(scrollback),
            title: None,
            bells: 0,
            tracker: ModeTracker::default(),
            replies: Vec::new(),
            colors: report::DEFAULT_COLORS,
        }
    }

    /// [xterm] `ResetWrap`: no wrap pending, and no character just written (`char_was_written`)
    /// for a combining mark to join.
    #[inline]
    pub(super) fn reset_wrap(&mut self) {
        self.cur.pending = false;
        self.written = false;
    }

    /// Counts a hazard for alacritty (see [`Vt::hazards`]); nothing outside the differential
    /// tests.
    #[inline]
    #[allow(clippy::unused_self)]
    pub(super) fn hazard(&mut self) {
        #[cfg(any(test, feature = "generator"))]
        {
            self.hazards.alacritty = self.hazards.alacritty.saturating_add(1);
        }
    }

    /// Counts a hazard for the phux reference (see [`Vt::hazards`]).
    #[inline]
    #[allow(clippy::unused_self, unused_variables)]
    pub(super) fn reference_hazard(&mut self, kind: ReferenceHazard) {
        #[cfg(any(test, feature = "generator"))]
        {
            let n = &mut self.hazards.reference[kind as usize];
            *n = n.saturating_add(1);
        }
    }

    /// Whether the bytes so far ended between sequences and characters (the parser is in its
    /// ground state with no UTF-8 character begun).
    pub(crate) fn at_ground(&self) -> bool {
        self.state == State::Ground && self.utf8.need == 0
    }

    pub(crate) fn size(&self) -> (u16, u16) {
        (self.cols, self.rows)
    }

    /// The inactive screen (the main one while the alternate is shown).
    pub(crate) fn other(&self) -> &Grid {
        &self.other
    }

    /// Feeds program output.
    pub(crate) fn advance(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == State::Ground && self.utf8.need == 0 {
                let start = i;
                i += printable_run(&bytes[i..]);
                if i > start {
                    self.print_text(&bytes[start..i]);
                    continue;
                }
                // The line ends of ordinary output, without the trip through `execute`.
                match bytes[i] {
                    b'\r' => {
                        self.cur.x = 0;
                        self.reset_wrap();
                        self.last_char = None;
                        i += 1;
                        continue;
                    }
                    b'\n' if !self.line_feed_mode => {
                        self.linefeed();
                        self.last_char = None;
                        i += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            let b = bytes[i];
            i += 1;
            if self.state == State::Ground {
                self.ground(b);
            } else {
                self.step(b);
                // [xterm] A sequence (or string) ended: `doparsing`, back in the ground state,
                // sets `lastchar` to -1 (after REP has used it).
                if self.state == State::Ground {
                    self.last_char = None;
                }
            }
        }
    }

    /// Resizes both screens. Rows below the cursor go first when the screen gets shorter, then
    /// rows from the top (into history on the main screen); a taller screen gains blank rows
    /// at the bottom. History is never pulled back.
    pub(crate) fn resize(&mut self, cols: u16, rows: u16) {
        if (cols, rows) == (self.cols, self.rows) {
            return;
        }
        let below = self.rows - 1 - self.cur.y;
        let Self {
            screen,
            other,
            history,
            alt_active,
            ..
        } = self;
        let (main, alt) = if *alt_active {
            (other, screen)
        } else {
            (screen, other)
        };
        // Both screens lose the same rows: the cursor is shared.
        let pushed = main.resize(cols, rows, below, |row| history.push(row));
        if alt.rows() > 0 {
            alt.resize(cols, rows, below, |_| {});
        }
        // Keep the cursor on the same text: it moves up by the rows that left the top.
        self.cur.y = self.cur.y.saturating_sub(pushed).min(rows - 1);
        self.cur.x = self.cur.x.min(cols - 1);
        self.reset_wrap();
        for s in &mut self.saved {
            s.x = s.x.min(cols - 1);
            s.y = s.y.min(rows - 1);
            // The saved pending wrap belonged to the old last column.
            s.pending = false;
        }
        self.cols = cols;
        self.rows = rows;
        // [xterm] a resize resets the scroll region.
        self.top = 0;
        self.bottom = rows - 1;
        let old = self.tabs.len();
        self.tabs.resize(usize::from(cols), false);
        for c in old..usize::from(cols) {
            self.tabs[c] = c > 0 && c % 8 == 0;
        }
    }

    /// Whether every invariant the parser and the screen operations index by holds: sizes,
    /// cursors, the scroll region, tab stops, parser counters and the history's offsets. A
    /// model read back as data is checked with it before use.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        self.screen.check()?;
        self.other.check()?;
        self.history.check()?;
        self.tracker.check()?;
        let (cols, rows) = (self.cols, self.rows);
        let sizes = cols >= 1
            && rows >= 1
            && self.screen.cols() == cols
            && self.screen.rows() == rows
            // The alternate screen has no rows until first entered, and keeps its width
            // from then on only while it has rows.
            && (self.other.rows() == 0 || (self.other.cols() == cols && self.other.rows() == rows))
            && self.tabs.len() == usize::from(cols);
        let cursors = self.cur.x < cols
            && self.cur.y < rows
            && self.top <= self.bottom
            && self.bottom < rows
            && self.saved.iter().all(|s| s.x < cols && s.y < rows);
        let charsets = [self.charsets]
            .iter()
            .chain(self.saved.iter().map(|s| &s.charsets))
            .all(|c| c.gl < 4 && matches!(c.single, 0 | 2 | 3));
        let parser = self.params.len <= MAX_PARAMS
            && self.params.open <= self.params.len
            && self.n_intermediates <= MAX_INTERMEDIATES
            && self.utf8.need <= 3
            && self.osc.len() <= MAX_OSC
            && self.replies.len() <= MAX_REPLY_BYTES;
        match (sizes, cursors, charsets, parser) {
            (false, ..) => Err("terminal: screen sizes do not match"),
            (_, false, ..) => Err("terminal: a cursor or the scroll region is off the screen"),
            (_, _, false, _) => Err("terminal: a character set register out of range"),
            (.., false) => Err("terminal: parser state out of range"),
            _ => Ok(()),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.screen.heap_bytes() - self.screen.spine_bytes() + self.other.heap_bytes()
            - self.other.spine_bytes()
            + self.heap_bytes_besides_rows()
    }

    /// The heap outside the screens' rows: the history, the rings' spines, the parser's and
    /// the title's buffers. O(1).
    pub(crate) fn heap_bytes_besides_rows(&self) -> usize {
        self.screen.spine_bytes()
            + self.other.spine_bytes()
            + self.history.heap_bytes()
            + self.tabs.capacity()
            + self.osc.capacity()
            + self.replies.capacity()
            + self.title.as_ref().map_or(0, String::capacity)
    }
}

/// The length of the run of printable ASCII (0x20..=0x7e) that `bytes` starts with, eight
/// bytes at a time while it lasts: scanning text for its next control byte is the innermost
/// loop of ingesting output.
fn printable_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut i = 0;
    while let Some(word) = bytes.get(i..).and_then(|b| b.first_chunk::<8>()) {
        let w = u64::from_ne_bytes(*word);
        // A byte below 0x20, and a byte above 0x7e, each set their lane's high bit.
        let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let above = (w.wrapping_add(ONES) | w) & HIGH;
        if below | above != 0 {
            break;
        }
        i += 8;
    }
    while bytes.get(i).is_some_and(|b| matches!(b, 0x20..=0x7e)) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn printable_run_is_the_plain_scan(
            bytes in proptest::collection::vec(
                prop_oneof![0x20u8..=0x7e, any::<u8>()], 0..64),
        ) {
            let plain = bytes.iter().take_while(|b| matches!(b, 0x20..=0x7e)).count();
            prop_assert_eq!(super::printable_run(&bytes), plain);
        }
    }

    #[test]
    fn printable_run_stops_at_each_edge_byte() {
        for edge in [0x00, 0x1f, 0x7f, 0x80, 0xff] {
            for at in 0..20 {
                let mut bytes = vec![b'~'; 20];
                bytes[at] = edge;
                assert_eq!(super::printable_run(&bytes), at, "{edge:#x} at {at}");
            }
        }
        assert_eq!(super::printable_run(&[b' '; 17]), 17);
    }
}
