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

use unicode_width::UnicodeWidthChar as _;

use crate::grid::{ATTR_MASK, BOLD, Cell, Color, DIM, Grid, INVERSE, ITALIC, Pen, Row, UNDERLINE};
use crate::history::History;
use crate::tracker::ModeTracker;

/// `vte` keeps at most this many parameters and sub-parameters; later ones are dropped.
const MAX_PARAMS: usize = 32;
/// At most this many intermediate bytes are kept (as in `vte`); more mark the sequence ignored.
const MAX_INTERMEDIATES: usize = 2;
/// An OSC body longer than this is cut: a title needs far less, and a program must not be able
/// to grow the server's memory with one unterminated string.
const MAX_OSC: usize = 4096;
/// `vt100` keeps at most this many bytes of text per cell (a base character plus marks).
const MAX_CELL_BYTES: usize = 18;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
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
#[derive(Clone, Debug, Default)]
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
#[derive(Clone, Copy, Debug, Default)]
struct Utf8 {
    need: u8,
    cp: u32,
    lo: u8,
    hi: u8,
}

/// The cursor. `x` is always a valid column; `pending` is xterm's wrap-pending state after a
/// character was written to the last column (the next printed character wraps first).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Cursor {
    pub(crate) x: u16,
    pub(crate) y: u16,
    pub(crate) pending: bool,
}

/// What DECSC saves (per screen, as in xterm).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Saved {
    pub(crate) x: u16,
    pub(crate) y: u16,
    pub(crate) pen: Pen,
    pub(crate) origin: bool,
    pub(crate) autowrap: bool,
}

impl Default for Saved {
    fn default() -> Self {
        Self {
            x: 0,
            y: 0,
            pen: Pen::default(),
            origin: false,
            autowrap: true,
        }
    }
}

/// The parser plus both screens, the cursor, the pen, the modes that change how output is
/// drawn, the title, the bell count and the history.
#[derive(Debug)]
pub(crate) struct Vt {
    // Parser.
    state: State,
    params: Params,
    param: u16,
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
    /// Saved cursors: index 0 main screen, 1 alternate.
    pub(crate) saved: [Saved; 2],
    /// Scroll region rows, inclusive.
    pub(crate) top: u16,
    pub(crate) bottom: u16,
    pub(crate) origin: bool,
    pub(crate) autowrap: bool,
    pub(crate) cursor_hidden: bool,
    /// DECSCUSR style, 0-6.
    pub(crate) cursor_style: u8,
    line_feed_mode: bool,
    /// One flag per column: a tab stop is set there.
    pub(crate) tabs: Vec<bool>,
    last_char: Option<char>,

    pub(crate) history: History,
    pub(crate) title: Option<String>,
    pub(crate) bells: u32,
    /// The input encoder's modes: every CSI and ESC sequence is handed to it as dispatched.
    pub(crate) tracker: ModeTracker,
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
            saved: [Saved::default(); 2],
            top: 0,
            bottom: rows - 1,
            origin: false,
            autowrap: true,
            cursor_hidden: false,
            cursor_style: 0,
            line_feed_mode: false,
            tabs: default_tabs(cols),
            last_char: None,
            history: History::new(scrollback),
            title: None,
            bells: 0,
            tracker: ModeTracker::default(),
        }
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
                    self.print_ascii(&bytes[start..i]);
                    continue;
                }
                // The line ends of ordinary output, without the trip through `execute`.
                match bytes[i] {
                    b'\r' => {
                        self.cur.x = 0;
                        self.cur.pending = false;
                        i += 1;
                        continue;
                    }
                    b'\n' if !self.line_feed_mode => {
                        self.linefeed();
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
            }
        }
    }

    // ----- parser -----

    fn ground(&mut self, b: u8) {
        if self.utf8.need > 0 {
            if (self.utf8.lo..=self.utf8.hi).contains(&b) {
                self.utf8.cp = (self.utf8.cp << 6) | u32::from(b & 0x3f);
                self.utf8.need -= 1;
                self.utf8.lo = 0x80;
                self.utf8.hi = 0xbf;
                if self.utf8.need == 0 {
                    self.print(char::from_u32(self.utf8.cp).unwrap_or('\u{fffd}'));
                }
                return;
            }
            // The sequence broke off: it shows as one replacement character, and this byte
            // starts afresh.
            self.utf8.need = 0;
            self.print('\u{fffd}');
        }
        match b {
            0x1b => self.enter(State::Escape),
            0x00..=0x1f => self.execute(b),
            0x20..=0x7e => self.print(char::from(b)),
            // DEL is ignored; a lone C1 byte is a control we do not act on (as in vt100).
            0x7f..=0x9f => {}
            0xc2..=0xdf => self.utf8_lead(1, b & 0x1f, 0x80, 0xbf),
            0xe0 => self.utf8_lead(2, b & 0x0f, 0xa0, 0xbf),
            0xed => self.utf8_lead(2, b & 0x0f, 0x80, 0x9f),
            0xe1..=0xef => self.utf8_lead(2, b & 0x0f, 0x80, 0xbf),
            0xf0 => self.utf8_lead(3, b & 0x07, 0x90, 0xbf),
            0xf1..=0xf3 => self.utf8_lead(3, b & 0x07, 0x80, 0xbf),
            0xf4 => self.utf8_lead(3, b & 0x07, 0x80, 0x8f),
            _ => self.print('\u{fffd}'),
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
            self.n_intermediates = 0;
            self.ignoring = false;
        }
        self.state = state;
    }

    /// One byte outside the ground state.
    fn step(&mut self, b: u8) {
        use State as S;
        // Anywhere: CAN and SUB abort (and are executed), ESC restarts. OSC ends on them, and
        // is dispatched first.
        match b {
            0x18 | 0x1a => {
                if self.state == S::Osc {
                    self.osc_end();
                }
                self.execute(b);
                self.state = S::Ground;
                return;
            }
            0x1b => {
                if self.state == S::Osc {
                    self.osc_end();
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
                    self.osc_end();
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

    fn osc_end(&mut self) {
        // [SCREEN.JSON.4] OSC 0 and 2 set the title; the body after the first ';' is the
        // title, semicolons and all. An empty one clears it.
        let body = std::mem::take(&mut self.osc);
        if let Some(at) = body.iter().position(|&b| b == b';')
            && matches!(&body[..at], b"0" | b"2")
        {
            let title = &body[at + 1..];
            self.title = if title.is_empty() {
                None
            } else {
                Some(String::from_utf8_lossy(title).into_owned())
            };
        }
        self.osc = body;
        self.osc.clear();
    }

    // ----- dispatch -----

    fn execute(&mut self, b: u8) {
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

    fn esc_dispatch(&mut self, b: u8) {
        if self.n_intermediates > 0 {
            // Character set designations and the like: not modelled.
            return;
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

    fn csi_dispatch(&mut self, fin: u8) {
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
            (None, b'B' | b'e') => self.cursor_down(p(0, 1)),
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
                self.cur.pending = false;
                let (x, y) = (self.cur.x, self.cur.y);
                let end = x.saturating_add(n).min(self.cols);
                self.erase_cells(y, x, end);
            }
            (None, b'Z') => self.tab_backward(p(0, 1)),
            (None, b'b') => self.repeat(p(0, 1)),
            (None, b'd') => {
                let row = p(0, 1) - 1;
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
                if self.params.iter().any(|g| *g == [20]) {
                    self.line_feed_mode = set;
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
                7 => {
                    self.autowrap = set;
                    if !set {
                        self.cur.pending = false;
                    }
                }
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
                        if !self.alt_active {
                            self.save_cursor();
                            self.switch_screen(true);
                            self.screen.clear();
                        }
                    } else {
                        self.switch_screen(false);
                        self.restore_cursor();
                    }
                }
                _ => {}
            }
        }
    }

    fn sgr(&mut self) {
        if self.params.len == 0 {
            self.pen = Pen::default();
            return;
        }
        let mut it = self.params.iter();
        let mut pen = self.pen;
        // An extended colour: `38;5;n`, `38;2;r;g;b` or their colon forms (also with the
        // colour-space id `38:2:cs:r:g:b`). `Err` stops the whole sequence and `Ok(None)`
        // skips an unknown colon form, as in vt100.
        fn extended<'a>(
            group: &[u16],
            it: &mut impl Iterator<Item = &'a [u16]>,
        ) -> Result<Option<Color>, ()> {
            let byte = |v: u16| u8::try_from(v).map_err(|_| ());
            match group {
                [_, 5, i] => Ok(Some(Color::Idx(byte(*i)?))),
                [_, 2, r, g, b] | [_, 2, _, r, g, b] => {
                    Ok(Some(Color::Rgb(byte(*r)?, byte(*g)?, byte(*b)?)))
                }
                [_] => {
                    let mut next = || match it.next() {
                        Some(&[v]) => byte(v),
                        _ => Err(()),
                    };
                    match next()? {
                        5 => Ok(Some(Color::Idx(next()?))),
                        2 => Ok(Some(Color::Rgb(next()?, next()?, next()?))),
                        _ => Err(()),
                    }
                }
                _ => Ok(None),
            }
        }
        while let Some(group) = it.next() {
            match group {
                [0] => pen = Pen::default(),
                // Bold and dim are one intensity setting, as in vt100.
                [1] => pen.fg = (pen.fg & !(BOLD | DIM)) | BOLD,
                [2] => pen.fg = (pen.fg & !(BOLD | DIM)) | DIM,
                [3] => pen.fg |= ITALIC,
                [4] => pen.fg |= UNDERLINE,
                [7] => pen.fg |= INVERSE,
                [22] => pen.fg &= !(BOLD | DIM),
                [23] => pen.fg &= !ITALIC,
                [24] => pen.fg &= !UNDERLINE,
                [27] => pen.fg &= !INVERSE,
                [n @ 30..=37] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 30) as u8).pack(),
                [n @ 90..=97] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 82) as u8).pack(),
                [39] => pen.fg &= ATTR_MASK,
                [n @ 40..=47] => pen.bg = Color::Idx((n - 40) as u8).pack(),
                [n @ 100..=107] => pen.bg = Color::Idx((n - 92) as u8).pack(),
                [49] => pen.bg = 0,
                [38, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.fg = (pen.fg & ATTR_MASK) | c.pack(),
                    Ok(None) => {}
                    Err(()) => break,
                },
                [48, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.bg = c.pack(),
                    Ok(None) => {}
                    Err(()) => break,
                },
                // Underline colour: consumed so its numbers are not read as attributes.
                [58, ..] if extended(group, &mut it).is_err() => break,
                _ => {}
            }
        }
        self.pen = pen;
    }

    // ----- cursor -----

    fn set_x(&mut self, x: u16) {
        self.cur.x = x.min(self.cols - 1);
        self.cur.pending = false;
    }

    /// CUP: `row` and `col` 0-based, relative to the scroll region in origin mode.
    fn goto(&mut self, row: u16, col: u16) {
        let (lo, hi) = if self.origin {
            (self.top, self.bottom)
        } else {
            (0, self.rows - 1)
        };
        self.cur.y = lo.saturating_add(row).min(hi);
        self.set_x(col);
    }

    fn cursor_up(&mut self, n: u16) {
        let min = if self.cur.y >= self.top { self.top } else { 0 };
        self.cur.y = self.cur.y.saturating_sub(n).max(min);
        self.cur.pending = false;
    }

    fn cursor_down(&mut self, n: u16) {
        let max = if self.cur.y <= self.bottom {
            self.bottom
        } else {
            self.rows - 1
        };
        self.cur.y = self.cur.y.saturating_add(n).min(max);
        self.cur.pending = false;
    }

    fn cursor_forward(&mut self, n: u16) {
        let x = self.cur.x.saturating_add(n);
        self.set_x(x);
    }

    fn tab_forward(&mut self, n: u16) {
        let mut x = self.cur.x;
        // Past `cols` steps the cursor is at the edge whatever the stops: bounded work.
        for _ in 0..n.min(self.cols) {
            let next = (usize::from(x) + 1..usize::from(self.cols)).find(|&c| self.tabs[c]);
            x = next.map_or(self.cols - 1, |c| c as u16);
        }
        self.set_x(x);
    }

    fn tab_backward(&mut self, n: u16) {
        let mut x = self.cur.x;
        for _ in 0..n.min(self.cols) {
            let prev = (0..usize::from(x)).rev().find(|&c| self.tabs[c]);
            x = prev.map_or(0, |c| c as u16);
        }
        self.set_x(x);
    }

    /// IND / LF: down one row, scrolling the region at its bottom.
    #[inline]
    fn linefeed(&mut self) {
        let y = self.cur.y;
        if y == self.bottom {
            if self.top == 0 && y + 1 == self.rows {
                // The common case, spelled out so it compiles to a straight line: the whole
                // screen scrolls, its top row goes to history (main screen only).
                if !self.alt_active {
                    self.history.push(self.screen.top_row());
                }
                self.screen.rotate_up(|_| {});
            } else {
                self.scroll_up(1);
            }
        } else if y + 1 < self.rows {
            self.cur.y = y + 1;
        }
        self.cur.pending = false;
    }

    fn reverse_index(&mut self) {
        if self.cur.y == self.top {
            self.scroll_down(1);
        } else {
            self.cur.y = self.cur.y.saturating_sub(1);
        }
        self.cur.pending = false;
    }

    fn save_cursor(&mut self) {
        self.saved[usize::from(self.alt_active)] = Saved {
            x: self.cur.x,
            y: self.cur.y,
            pen: self.pen,
            origin: self.origin,
            autowrap: self.autowrap,
        };
    }

    fn restore_cursor(&mut self) {
        let s = self.saved[usize::from(self.alt_active)];
        self.cur = Cursor {
            x: s.x.min(self.cols - 1),
            y: s.y.min(self.rows - 1),
            pending: false,
        };
        self.pen = s.pen;
        self.origin = s.origin;
        self.autowrap = s.autowrap;
    }

    /// Shows the alternate (`true`) or main screen. The cursor is shared, as in xterm, but not
    /// its wrap-pending state.
    fn switch_screen(&mut self, alternate: bool) {
        if alternate == self.alt_active {
            return;
        }
        if alternate && self.other.rows() != self.rows {
            self.other = Grid::new(self.cols, self.rows);
        }
        std::mem::swap(&mut self.screen, &mut self.other);
        self.alt_active = alternate;
        // The pending wrap belonged to a character on the screen just left.
        self.cur.pending = false;
    }

    fn reset(&mut self) {
        let (cols, rows) = (self.cols, self.rows);
        let history = std::mem::take(&mut self.history);
        let title = self.title.take();
        let bells = self.bells;
        let tracker = std::mem::take(&mut self.tracker);
        *self = Self::new(cols, rows, 0);
        // The tracker applied RIS to the modes itself.
        self.tracker = tracker;
        // RIS resets the terminal, not what it already said: history, title and unread bells
        // stay.
        self.history = history;
        self.title = title;
        self.bells = bells;
    }

    // ----- text -----

    /// Wraps to the start of the next row, marking the row soft-wrapped (as vt100 does: only
    /// when its last cell holds something and the cursor really moves on).
    fn wrap(&mut self) {
        let y = self.cur.y;
        let moves = y == self.bottom || y + 1 < self.rows;
        let row = self.screen.row_mut(y);
        let last = row.cells[row.cells.len() - 1];
        row.wrapped = moves && self.rows > 1 && (last.has_contents() || last.is_wide_cont());
        self.linefeed();
        self.cur.x = 0;
    }

    /// Writes a run of printable ASCII: each row's share in one pass over its cells.
    #[inline]
    fn print_ascii(&mut self, mut run: &[u8]) {
        let cols = self.cols;
        while let [.., last] = run {
            if self.cur.pending {
                self.wrap();
            }
            let (x, y) = (self.cur.x, self.cur.y);
            let room = usize::from(cols - x);
            if !self.autowrap && run.len() > room {
                // Without autowrap the last column is overwritten again and again: only the
                // final character stays there.
                self.put_ascii(y, x, &run[..room - 1]);
                self.put_ascii(y, cols - 1, std::slice::from_ref(last));
                self.cur.x = cols - 1;
                self.last_char = Some(char::from(*last));
                return;
            }
            let (now, rest) = run.split_at(room.min(run.len()));
            self.put_ascii(y, x, now);
            let nx = x + now.len() as u16;
            if nx >= cols {
                self.cur.x = cols - 1;
                self.cur.pending = self.autowrap;
            } else {
                self.cur.x = nx;
            }
            run = rest;
            if run.is_empty() {
                self.last_char = now.last().map(|&b| char::from(b));
            }
        }
    }

    /// Writes narrow characters at `x..x + text.len()` of row `y` (all within the row), with
    /// the pen (read here rather than passed: an argument fewer is a few instructions less per
    /// call, and `yes` makes a call per line).
    #[inline]
    fn put_ascii(&mut self, y: u16, x: u16, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        let pen = self.pen;
        let row = self.screen.row_mut(y);
        let (start, end) = (usize::from(x), usize::from(x) + text.len());
        let style = row.intern(pen, x, end as u16);
        // Overwriting half of a wide character blanks its other half (as vt100 does).
        if start > 0 && row.cells[start - 1].is_wide() {
            row.cells[start - 1].erase();
            row.drop_marks(x - 1, x);
        }
        let cells = &mut row.cells[start..end];
        let tail_was_wide = cells[cells.len() - 1].is_wide();
        // A run of one (`yes`, an echoed key) is common enough to skip the unrolled loop's
        // set-up: about 3% of ingesting `yes`.
        if let [b] = text {
            cells[0] = Cell::ascii(*b, style);
        } else {
            for (cell, &b) in cells.iter_mut().zip(text) {
                *cell = Cell::ascii(b, style);
            }
        }
        let mut touched = end;
        if tail_was_wide && end < row.cells.len() {
            row.cells[end] = Cell::new(' ', style);
            touched += 1;
        }
        row.drop_marks(x, end as u16);
        row.touch(touched as u16);
    }

    /// Prints one character (any width).
    fn print(&mut self, c: char) {
        let Some(width) = c.width() else {
            // C0 / C1 controls never reach here as text; nothing to draw.
            return;
        };
        let width = width.min(2) as u16;
        if width == 0 {
            self.combine(c);
            return;
        }
        if width > self.cols {
            return;
        }
        if self.cur.pending {
            self.wrap();
        } else if self.cur.x + width > self.cols {
            // A wide character at the last column.
            if self.autowrap {
                self.wrap();
            } else {
                self.cur.x = self.cols - width;
            }
        }
        let (x, y) = (self.cur.x, self.cur.y);
        let cols = self.cols;
        let pen = self.pen;
        let row = self.screen.row_mut(y);
        let style = row.intern(pen, x, x + 1);
        let xi = usize::from(x);
        let was_wide = row.cells[xi].is_wide();
        row.cells[xi] = if width == 2 {
            Cell::wide(c, style)
        } else {
            Cell::new(c, style)
        };
        row.drop_marks(x, x + 1);
        row.touch(x + 1);
        if xi > 0 && row.cells[xi - 1].is_wide() {
            row.cells[xi - 1].erase();
            row.drop_marks(x - 1, x);
        }
        if was_wide && width == 1 && x + 1 < cols {
            row.cells[xi + 1] = Cell::new(' ', style);
            row.touch(x + 2);
        }
        if !was_wide && width == 2 {
            let next_was_wide = row.cells[xi + 1].is_wide();
            row.cells[xi + 1] = Cell::WIDE_CONT;
            row.drop_marks(x + 1, x + 2);
            row.touch(x + 2);
            if next_was_wide && x + 2 < cols {
                row.cells[xi + 2] = Cell::erased(style);
                row.drop_marks(x + 2, x + 3);
                row.touch(x + 3);
                if x + 2 == cols - 1 {
                    row.wrapped = false;
                }
            }
        }
        self.last_char = Some(c);
        let nx = x + width;
        if nx >= cols {
            self.cur.x = cols - 1;
            self.cur.pending = self.autowrap;
        } else {
            self.cur.x = nx;
        }
    }

    /// A zero-width character joins the cell before the cursor.
    fn combine(&mut self, c: char) {
        let (x, y) = (self.cur.x, self.cur.y);
        let base = if self.cur.pending {
            x
        } else if x == 0 {
            return;
        } else {
            x - 1
        };
        let row = self.screen.row_mut(y);
        let base = if row.cells[usize::from(base)].is_wide_cont() && base > 0 {
            base - 1
        } else {
            base
        };
        let bytes = row.cells[usize::from(base)].ch().len_utf8()
            + row.marks_at(base).map(char::len_utf8).sum::<usize>();
        if bytes >= MAX_CELL_BYTES {
            return;
        }
        let cell = &mut row.cells[usize::from(base)];
        if !cell.has_contents() {
            cell.set_ch(' ');
        }
        row.push_mark(base, c);
        row.touch(base + 1);
    }

    fn repeat(&mut self, n: u16) {
        let Some(c) = self.last_char else {
            return;
        };
        // At most u16::MAX characters: bounded work per sequence.
        let n = usize::from(n);
        if c.is_ascii() {
            let mut buf = [0u8; 256];
            buf.fill(c as u8);
            let mut left = n;
            while left > 0 {
                let k = left.min(buf.len());
                self.print_ascii(&buf[..k]);
                left -= k;
            }
        } else {
            for _ in 0..n {
                self.print(c);
            }
        }
    }

    // ----- erase, insert, delete, scroll -----

    /// Erases cells `start..end` of row `y` with the pen (vt100 keeps the whole pen; only the
    /// background shows on an empty cell). A wide character cut by either edge goes entirely.
    fn erase_cells(&mut self, y: u16, start: u16, end: u16) {
        if start >= end {
            return;
        }
        let cols = self.cols;
        let pen = self.pen;
        let row = self.screen.row_mut(y);
        let style = row.intern(pen, start, end);
        let (s, e) = (usize::from(start), usize::from(end));
        if row.cells[s].is_wide_cont() && s > 0 {
            row.cells[s - 1].erase();
            row.drop_marks(start - 1, start);
        }
        // vt100 drops the soft wrap when the last column (or a wide character ending there)
        // is erased.
        let last = usize::from(cols) - 1;
        let wide_end = last >= 1 && s < last && e > last - 1 && row.cells[last - 1].is_wide();
        if (e > last && !row.cells[last].is_wide()) || wide_end {
            row.wrapped = false;
        }
        if row.cells[e - 1].is_wide() && e < row.cells.len() {
            row.cells[e].erase();
        }
        row.fill(start, end, Cell::erased(style));
    }

    fn erase_line(&mut self, mode: u16) {
        self.cur.pending = false;
        let (x, y) = (self.cur.x, self.cur.y);
        match mode {
            0 => self.erase_cells(y, x, self.cols),
            1 => self.erase_cells(y, 0, x + 1),
            2 => self.erase_cells(y, 0, self.cols),
            _ => {}
        }
    }

    fn erase_display(&mut self, mode: u16) {
        self.cur.pending = false;
        let (x, y) = (self.cur.x, self.cur.y);
        match mode {
            0 => {
                self.erase_cells(y, x, self.cols);
                for r in y + 1..self.rows {
                    self.erase_cells(r, 0, self.cols);
                }
            }
            1 => {
                for r in 0..y {
                    self.erase_cells(r, 0, self.cols);
                }
                self.erase_cells(y, 0, x + 1);
            }
            2 => {
                for r in 0..self.rows {
                    self.erase_cells(r, 0, self.cols);
                }
            }
            // [SCREEN.JSON.3] ED 3 erases the retained history; the alternate screen has none.
            3 if !self.alt_active => self.history.clear(),
            _ => {}
        }
    }

    fn insert_chars(&mut self, n: u16) {
        self.cur.pending = false;
        let x = self.cur.x;
        let row = self.screen.row_mut(self.cur.y);
        let cols = row.cols();
        let n = n.min(cols - x);
        row.wrapped = false;
        if n == 0 {
            return;
        }
        let (xi, ni) = (usize::from(x), usize::from(n));
        // As in vt100: inserting inside a wide character keeps it whole, the blank taking over
        // as its right half.
        let in_wide = row.cells[xi].is_wide_cont();
        if in_wide {
            row.cells[xi].set_wide_cont(false);
        }
        row.cells[xi..].rotate_right(ni);
        row.cells[xi..xi + ni].fill(Cell::BLANK);
        if in_wide {
            row.cells[xi].set_wide_cont(true);
        }
        row.retain_marks(|(col, _)| {
            if *col >= x {
                *col += n;
            }
            *col < cols
        });
        let used = row.used().saturating_add(n);
        row.touch(used);
        if let Some(last) = row.cells.last_mut()
            && last.is_wide()
        {
            last.erase();
        }
    }

    fn delete_chars(&mut self, n: u16) {
        self.cur.pending = false;
        let x = self.cur.x;
        let row = self.screen.row_mut(self.cur.y);
        let cols = row.cols();
        let end = x.saturating_add(n).min(cols);
        row.wrapped = false;
        if x >= end {
            return;
        }
        let (from, to) = (usize::from(x), usize::from(end));
        // A wide character cut by either edge loses its other half (as vt100 does).
        for i in [from, to - 1] {
            if row.cells[i].is_wide() && i + 1 < row.cells.len() {
                row.cells[i + 1].erase();
            } else if row.cells[i].is_wide_cont() && i > 0 {
                row.cells[i - 1].erase();
            }
        }
        let count = to - from;
        row.cells[from..to].fill(Cell::BLANK);
        row.cells[from..].rotate_left(count);
        row.retain_marks(|(col, _)| {
            if *col >= end {
                *col -= end - x;
                true
            } else {
                *col < x
            }
        });
        // The blanks came in at the end; nothing past the old extent moved in.
        let used = row.used();
        if used > x {
            let shrunk = used.saturating_sub(end - x).max(x);
            row.fill(shrunk, used, Cell::BLANK);
        }
    }

    fn insert_lines(&mut self, n: u16) {
        self.cur.pending = false;
        let y = self.cur.y;
        if y < self.top || y > self.bottom {
            return;
        }
        self.screen.scroll_down(y, self.bottom, n);
        self.screen.row_mut(self.bottom).wrapped = false;
    }

    fn delete_lines(&mut self, n: u16) {
        self.cur.pending = false;
        let y = self.cur.y;
        if y < self.top || y > self.bottom {
            return;
        }
        self.screen.scroll_up(y, self.bottom, n, |_| {});
    }

    /// Scrolls the region up; rows leaving the top of the main screen go to history.
    #[inline]
    fn scroll_up(&mut self, n: u16) {
        let keep = !self.alt_active && self.top == 0;
        let (top, bottom) = (self.top, self.bottom);
        let Self {
            screen, history, ..
        } = self;
        screen.scroll_up(top, bottom, n, |row: &Row| {
            if keep {
                history.push(row);
            }
        });
    }

    fn scroll_down(&mut self, n: u16) {
        self.screen.scroll_down(self.top, self.bottom, n);
        self.screen.row_mut(self.bottom).wrapped = false;
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
        self.cur.pending = false;
        for s in &mut self.saved {
            s.x = s.x.min(cols - 1);
            s.y = s.y.min(rows - 1);
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

    pub(crate) fn heap_bytes(&self) -> usize {
        self.screen.heap_bytes()
            + self.other.heap_bytes()
            + self.history.heap_bytes()
            + self.tabs.capacity()
            + self.osc.capacity()
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
