//! The screen differential: our server's VT model against the phux reference's
//! (libghostty-vt), both read over the wire with GET_SCREEN.
//!
//! Each stream is a VT byte stream from phux-term's generator ([`phux_term::vtgen`], steered
//! for [`Oracle::Reference`]), made from a seed and its index alone. The same stream is shown in
//! a fresh terminal of the same size on each server: the terminal runs `phux-conformance show
//! FILE` ([`show`]), which writes the file with output processing off and waits. The file ends
//! with an OSC 2 title naming the stream, so a GET_SCREEN that reports that title has seen all
//! of it. Both replies are read as phux's own client reads a ScreenState ([`screen`]), then
//! compared field by field: size, cursor, every viewport row, the history (all of it is asked
//! for), the soft-wrapped rows, every cell's style, the title. Each stream runs in terminals of
//! its own, a few at a time on each server ([`Options::in_flight`]).
//!
//! # What is not compared
//!
//! Only what the protocol leaves to each server: `pane` (each numbers its own terminals) and
//! the keys one side adds beyond phux's ScreenState (ours: a cell's `text` and `wide`, the
//! `double_underline` of a style; phux's `underline` is any underline, and that is compared).
//!
//! # Decided differences
//!
//! Where the two disagree, xterm decides (ctlseqs; xterm's source where ctlseqs is silent),
//! then ECMA-48, then phux's own spec. Each row is steered around by the generator (it does
//! not write the case for [`Oracle::Reference`]) or normalised here, and counted in the
//! report under its id.
//!
//! "Steered" rows are left out by the generator (ids in [`phux_term::vtgen::reference`]; a CR
//! before or after where that is enough); where the case cannot be told from the stream alone,
//! our model counts a hazard as it follows the stream and the generator drops the piece.
//! "Normalised" rows are made equal here ([`normalise`]). "Ours" marks a deliberate deviation
//! of ours from xterm, which the reference happens to share or not.
//!
//! | Id | Case | xterm (and we) | The reference | Evidence | Handled by |
//! |---|---|---|---|---|---|
//! | `zero-count` | a count of 0 for CHT, CBT, DCH, IL, DL, SU, SD | 1 | nothing | ctlseqs: each "Ps" defaults to 1, and xterm reads 0 as the default (`one_if_default`) | steered: sent as 1 |
//! | `rep-after-control` | REP after anything but a printed character | repeats nothing | the last character printed | xterm `doparsing` sets `lastchar = thischar` (-1) back in the ground state; `CASE_REP` needs `CharWidth(lastchar) > 0` | steered: not sent |
//! | `enter-1049-pending-wrap` | `CSI ? 1049 h` with a wrap pending | cancelled | kept | xterm `srm_OPT_ALTBUF_CURSOR`: `CursorSave`, `ToAlternate`, `ClearScreen`, which calls `ResetWrap` | steered: a CR first |
//! | `1049-background` | `CSI ? 1049 h` or `l` with a background colour | the alternate screen is cleared as it is entered, in the background then (BCE); leaving clears nothing | cleared as it is entered in the default colour, and as it is left in the background then | xterm `srm_OPT_ALTBUF_CURSOR`: set is `ClearScreen` after `ToAlternate` (`ClearCells` keeps the colour flags); reset is `FromAlternate`, `CursorRestore` only | steered: not sent |
//! | `il-dl-outside-region` | IL or DL with the cursor outside the scroll region | the cursor goes to the first column | it stays | xterm `CASE_IL` / `CASE_DL`: `set_cur_col(screen, ScrnLeftMargin(xw))` before `InsertLine` / `DeleteLine`, which return at once outside the region | steered: a CR after |
//! | `lone-mark` | a combining mark after a motion, an edit or a control | joins the cell last written (`char_was_written`), else the one under the cursor; on an empty cell ours puts it on a blank (ours: xterm writes it as a character of its own) | joins the cell before the cursor; drops it in the first column or on an empty cell | xterm `doparsing`: `use_col = char_was_written ? last_written_col : cur_col` | steered: sent only where both join the same cell, which holds a character |
//! | `mark-at-last-column-without-autowrap` | a combining mark after a character written at the last column with DECAWM reset | joins that character | joins the one before | as `lone-mark`: `dotext` sets `char_was_written` and `last_written_col` | steered: not sent |
//! | `dec-graphics-text` | `_` or a character beyond Latin-1 while GL holds DEC special graphics | `_` is a blank, others show as they are | `_` shows, others are dropped | xterm `charsets.c` `xtermCharSetOut`: `chr == 0x5f` becomes 0, a code above 255 is not remapped; ctlseqs / VT100 table: 0x5f is blank | steered: not sent |
//! | `cbt-pending-wrap` | CBT with a wrap pending | the column moves (ours: the wrap is dropped; xterm keeps one pending away from the last column, which the bootstrap could not rebuild) | the column moves, the wrap stays pending | xterm `TabToPrevStop` never touches `do_wrap` | steered: a CR first |
//! | `ri-pending-wrap` | RI (`ESC M`) with a wrap pending, at the top margin | cancelled | kept when RI scrolls | xterm `RevIndex` calls `ResetWrap` | steered: a CR first |
//! | `tbc-default` | TBC without a parameter (`CSI g`) | clears the stop at the cursor | nothing | ctlseqs TBC "Ps = 0 ⇒ Clear Current Column (default)"; xterm `CASE_TBC`: `GetParam(0) <= 0` is `TabClear` at `cur_col` | steered: sent as `CSI 0 g` |
//! | `tbc-without-a-stop` | TBC 0 on a column without a tab stop | nothing | sets a stop there | xterm `TabClear` clears a bit (clearing a clear one changes nothing) | steered: not sent |
//! | `origin-mode-row-shift` | CHA, HPA, HPR or VPR in origin mode with a scroll region below the top | the column only / relative to the cursor's row | adds the region's top to the row again | ctlseqs CHA / HPA "Cursor Character Absolute [column]", HPR "Character Position Relative [columns]", VPR "Line Position Relative"; xterm `CASE_HPR` (and the others) is `CursorSet(screen, CursorRow(xw), ...)`, and `CursorRow` takes `top_marg` off in origin mode before `CursorSet` adds it | steered: not sent |
//! | `wide-wrap-over-last-column` | a wide character wrapping from the last column, which shows something | the column is left as it is | blanked | xterm `dotext`: nothing fits, `force_wrap`, then `WrapLine`; nothing is written to the column | hazard: not sent |
//! | `wide-dropped-with-pending-wrap` | on a 2-column screen, a wide character with DECAWM reset while a wrap is pending | dropped, and the pending wrap with it | dropped, the wrap stays pending (the next character wraps) | xterm `dotext`: `do_wrap` is cleared, nothing fits (`last_chomp` is not `> right + 1`), `do_wrap = need_wrap`, false | hazard: not sent |
//! | `wide-wrap-in-insert-mode` | a wide character that does not fit the last column, in insert mode | wraps, then is inserted at the start of the next row, which shifts right | wraps, then writes over the next row's first cells | xterm `dotext`: `force_wrap`, `WrapLine`, then `WriteText`, which calls `InsertChar(xw, cells)` under `INSERT` | hazard: not sent |
//! | `last-column-cut` | a write at the last column cutting a wide character in two | its first half becomes a space in its own style | a blank in the pen's colours (what xterm leaves elsewhere) | xterm `WriteText`: `DamagedCells` finds nothing at the last column (`nn` is 0) and `ScrnWriteText` sets `chars[-1] = ' '`, leaving its attributes and colours | hazard: not sent where that shows |
//! | `insert-run` | IRM with a run of characters that shifts a wide character past the right margin | the row shifts by the run's width at once | one character at a time, cutting the wide character on the way | xterm `WriteText`: `InsertChar(xw, cells)` for the whole run | hazard: not sent |
//! | `wrap-in-place` | a wrap that does not move the cursor (the last row below the scroll region) | ours: the row is not marked (xterm's `WrapLine` marks it, a mark that points at no next row, which the bootstrap could not rebuild) | marked | xterm `WrapLine`: `LineSetFlag(ld, LINEWRAPPED)` then `xtermIndex`, which does not move below the region | hazard: not sent |
//! | `shifted-soft-wrap` | IL, DL, SD or RI shifting soft-wrapped rows | each row keeps its wrap as it moves | the moved rows lose it | xterm `ScrnInsertLine` / `ScrnDeleteLine` move whole `LineData` (flags included) with `MoveLineData` | steered: not sent |
//! | `recycled-row-soft-wrap` | a scroll whose rows do not go to history (the alternate screen, a region below the top) while a row of the region is soft-wrapped | rows move with their wraps; the new rows have none | the new rows keep the wraps of the rows that left; the moved rows lose theirs | xterm `ScrnClearLines` clears each new row's flags (`bufHead = 0`) | hazard: not sent |
//! | `blank-cell-style` | the foreground, bold, faint, italic, blink or invisible of a cell that shows a blank | kept as written | may differ | nothing is drawn with them on a blank (underline, inverse, strike and the background, which show, are compared) | normalised: not compared on blanks |
//! | `erased-background-rgb` | a blank cell holding only a background colour (what an erase leaves) | reported as its palette index | reported as RGB, the index lost | phux L1.md §6.1: `fg` / `bg` are `{kind: default / palette / rgb}`; the same colour either way | normalised: the index through the reference's own palette (read once per campaign) |
//!
//! Any other difference is undecided: [`Bench::run`] reports it with the stream that shows it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use phux_proto::frame::TerminalSize;
use phux_proto::{Command, CommandResult, CommandValue, TerminalId};
use phux_term::vtgen::{self, Oracle};

use crate::netfuzz::rng::Rng;
use crate::peer::{Client, PeerError, Server};

pub mod normalise;
pub mod screen;
pub mod show;

use normalise::Palette;
use screen::{Difference, Screen};

/// The screen sizes streams are shown at, as the alacritty differential uses them: a small
/// one, a narrow one, the classic one, and the smallest that has a row to scroll.
pub const SIZES: [(u16, u16); 4] = [(20, 6), (10, 4), (80, 24), (2, 2)];

/// At most this many choice bytes drive the generator for one stream (the alacritty
/// differential's proptest uses up to 96).
pub const MAX_CHOICES: u64 = 128;

/// How long a server may take to show the end of a stream.
const SHOW_DEADLINE: Duration = Duration::from_secs(30);

/// What a campaign runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The campaign's seed: stream `i` is a function of `(seed, i)` alone ([`stream`]).
    pub seed: u64,
    /// How many streams.
    pub streams: u64,
    /// The first stream's index (to resume a campaign, or to rerun one stream).
    pub first: u64,
    /// Streams under way at once on each server.
    pub in_flight: usize,
    /// Stop once this many streams differ undecided.
    pub max_findings: usize,
}

/// A stream whose screens differ, undecided, or that a server could not show.
#[derive(Clone, Debug)]
pub struct Finding {
    /// The stream's index in its campaign.
    pub index: u64,
    /// Columns and rows.
    pub size: (u16, u16),
    /// The stream.
    pub stream: Vec<u8>,
    /// What differs, or what went wrong.
    pub problem: Problem,
}

/// Why a [`Finding`] is one.
#[derive(Clone, Debug)]
pub enum Problem {
    /// The screens differ where nothing is decided: how, and both screens (ours first).
    Differs(Vec<Difference>, Box<[Screen; 2]>),
    /// A server's reply could not be read as phux's client reads it, or the stream never
    /// showed.
    Unreadable {
        /// Which server.
        server: &'static str,
        /// What went wrong.
        error: String,
    },
}

impl Finding {
    /// What kind of finding this is: the fields that differ, or which server failed.
    fn signature(&self) -> Vec<&'static str> {
        match &self.problem {
            Problem::Differs(diffs, _) => {
                let mut fields: Vec<_> = diffs.iter().map(Difference::field).collect();
                fields.dedup();
                fields
            }
            Problem::Unreadable { server, .. } => vec![server],
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (cols, rows) = self.size;
        writeln!(f, "stream {} at {cols}x{rows}:", self.index)?;
        writeln!(f, "  bytes: \"{}\"", self.stream.escape_ascii())?;
        let hex = self.stream.iter().fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        });
        writeln!(
            f,
            "  replay: phux-conformance screen-diff --replay {hex} --size {cols}x{rows}"
        )?;
        match &self.problem {
            Problem::Differs(diffs, screens) => {
                for d in diffs {
                    writeln!(f, "  {d}")?;
                }
                let [a, b] = &**screens;
                writeln!(
                    f,
                    "  screens (ours | reference), cursor {:?} | {:?}:",
                    a.cursor, b.cursor
                )?;
                for (y, (la, lb)) in a.lines.iter().zip(&b.lines).enumerate() {
                    writeln!(f, "  {y:>3} {la:?} | {lb:?}")?;
                }
            }
            Problem::Unreadable { server, error } => writeln!(f, "  {server}: {error}")?,
        }
        Ok(())
    }
}

/// What a campaign found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Streams shown on both servers and compared.
    pub streams: u64,
    /// What those streams held: escape and control sequences, control characters and
    /// printed characters (a combining mark with its base), each one event.
    pub events: u64,
    /// Streams whose screens agreed but for the decided differences.
    pub identical: u64,
    /// Per decided difference: the streams it was normalised in.
    pub decided: BTreeMap<&'static str, u64>,
    /// Undecided differences and failures.
    pub findings: Vec<Finding>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Stream `index` of a campaign seeded with `seed`: its screen size, its bytes and the decided
/// differences the generator steered around in it (each id once).
pub fn stream(seed: u64, index: u64) -> ((u16, u16), Vec<u8>, Vec<&'static str>) {
    let mut rng = Rng::new(Rng::session_seed(seed, index));
    // Both below 4 and 129: the casts cannot truncate.
    #[allow(clippy::cast_possible_truncation)]
    let size = SIZES[rng.below(SIZES.len() as u64) as usize];
    #[allow(clippy::cast_possible_truncation)]
    let len = rng.below(MAX_CHOICES + 1) as usize;
    let choices = rng.bytes(len);
    let mut steered = Vec::new();
    let stream = vtgen::generate_noting(Oracle::Reference, &choices, size.0, size.1, &mut |id| {
        if !steered.contains(&id) {
            steered.push(id);
        }
    });
    (size, stream, steered)
}

/// The title that ends stream `index`: a GET_SCREEN reporting it has seen the whole stream.
fn sentinel(index: u64) -> String {
    format!("phux-screen-diff {index}")
}

/// The two servers under comparison, a connection to each, where stream files go, and the
/// reference's palette (read once: [`normalise::ERASED_BACKGROUND`]).
pub struct Bench {
    sides: [Side; 2],
    show: Vec<String>,
    palette: Palette,
    // Removed with the bench, after the terminals that read from it are killed.
    scratch: tempfile::TempDir,
}

impl Bench {
    /// Connects to both servers and reads the reference's palette. `show` is the argument
    /// vector of the program that shows a file (`phux-conformance show`), the path appended.
    ///
    /// # Errors
    ///
    /// A server that cannot be talked to, or a palette that cannot be read.
    pub fn new(ours: &Server, reference: &Server, show: Vec<String>) -> Result<Self, PeerError> {
        let scratch = tempfile::Builder::new()
            .prefix("phux-screen-diff-")
            .tempdir()
            .map_err(|e| PeerError::Unexpected(format!("a scratch directory: {e}")))?;
        let mut bench = Self {
            sides: [
                Side::new("ours", ours.client()?),
                Side::new("reference", reference.client()?),
            ],
            show,
            palette: Palette::default(),
            scratch,
        };
        bench.palette = bench.read_palette()?;
        Ok(bench)
    }

    /// The reference's palette: each of the 256 indices erased into a cell of a 16x16
    /// terminal, read back as the reference reports it.
    fn read_palette(&mut self) -> Result<Palette, PeerError> {
        let mut stream = Vec::new();
        for n in 0..=255u8 {
            let (row, col) = (n / 16 + 1, n % 16 + 1);
            stream.extend_from_slice(format!("\x1b[{row};{col}H\x1b[48;5;{n}m\x1b[X").as_bytes());
        }
        stream.extend_from_slice(b"\x1b[m\x1b[H");
        let job = Job::with_stream(0, (16, 16), stream, Vec::new(), self.scratch.path(), 0)?;
        let shown = show_all(&mut self.sides[1..], std::slice::from_ref(&job), &self.show)?;
        let json = shown
            .into_iter()
            .flatten()
            .next()
            .unwrap_or_else(|| Err("not read".to_owned()))
            .map_err(|e| PeerError::Unexpected(format!("the reference's palette: {e}")))?;
        let screen = Screen::parse(&json)
            .map_err(|e| PeerError::Unexpected(format!("the reference's palette: {e}")))?;
        let mut palette = Palette::default();
        for (&(row, col), style) in &screen.styles {
            if let screen::Color::Rgb { r, g, b } = style.bg
                && let Ok(n) = u8::try_from(row * 16 + col)
            {
                palette.0.insert(n, (r, g, b));
            }
        }
        Ok(palette)
    }

    /// Shows `jobs` on both servers and judges each into `report`.
    fn judge_all(&mut self, jobs: Vec<Job>, report: &mut Report) -> Result<(), PeerError> {
        let shown = show_all(&mut self.sides, &jobs, &self.show)?;
        for (job, screens) in jobs.into_iter().zip(shown) {
            let [ours, theirs]: [Shown; 2] = screens
                .try_into()
                .unwrap_or_else(|_| unreachable!("two servers, two screens"));
            report.streams += 1;
            report.events += tokens(&job.stream).len() as u64;
            judge(job, ours, theirs, &self.palette, report);
        }
        Ok(())
    }

    /// Runs a campaign, calling `progress` after each batch.
    ///
    /// # Errors
    ///
    /// A server that cannot be talked to (a failed spawn, a dead connection): the campaign
    /// cannot go on. What a stream shows, or fails to, is a [`Finding`] instead.
    pub fn run(
        &mut self,
        options: &Options,
        mut progress: impl FnMut(&Report),
    ) -> Result<Report, PeerError> {
        let started = Instant::now();
        let mut report = Report::default();
        let end = options.first.saturating_add(options.streams);
        let mut next = options.first;
        while next < end && report.findings.len() < options.max_findings {
            let batch: Vec<u64> = (next..end).take(options.in_flight.max(1)).collect();
            next += batch.len() as u64;
            let jobs: Vec<Job> = batch
                .iter()
                .enumerate()
                .map(|(slot, &index)| Job::new(options.seed, index, self.scratch.path(), slot))
                .collect::<Result<_, _>>()?;
            self.judge_all(jobs, &mut report)?;
            report.elapsed = started.elapsed();
            progress(&report);
        }
        report.elapsed = started.elapsed();
        Ok(report)
    }

    /// Shows one stream on both servers and judges it (a finding's replay).
    ///
    /// # Errors
    ///
    /// As [`Bench::run`].
    pub fn replay(&mut self, size: (u16, u16), stream: &[u8]) -> Result<Report, PeerError> {
        let job = Job::with_stream(0, size, stream.to_vec(), Vec::new(), self.scratch.path(), 0)?;
        let mut report = Report::default();
        self.judge_all(vec![job], &mut report)?;
        Ok(report)
    }

    /// The shortest stream found, by deleting runs of whole tokens from `stream`, whose screens
    /// still differ in the same fields (delta debugging; each round tries the runs of one
    /// length a batch at a time). What is left is usually the case itself.
    ///
    /// # Errors
    ///
    /// As [`Bench::run`].
    pub fn shrink(&mut self, size: (u16, u16), stream: &[u8]) -> Result<Vec<u8>, PeerError> {
        let Some(signature) = self
            .replay(size, stream)?
            .findings
            .pop()
            .map(|f| f.signature())
        else {
            return Ok(stream.to_vec());
        };
        // Whole tokens go, so what is left is made of the stream's own sequences and
        // characters, not bytes that mean something else once cut apart.
        let mut best = tokens(stream);
        let mut run = best.len().div_ceil(2).max(1);
        loop {
            let candidates: Vec<Vec<u8>> = (0..best.len())
                .step_by(run)
                .map(|at| {
                    let kept = best[..at].iter().chain(&best[(at + run).min(best.len())..]);
                    kept.flatten().copied().collect()
                })
                .collect();
            let mut smaller = None;
            for chunk in candidates.chunks(16) {
                let jobs: Vec<Job> = chunk
                    .iter()
                    .enumerate()
                    .map(|(slot, c)| {
                        Job::with_stream(0, size, c.clone(), Vec::new(), self.scratch.path(), slot)
                    })
                    .collect::<Result<_, _>>()?;
                let mut report = Report::default();
                self.judge_all(jobs, &mut report)?;
                smaller = report
                    .findings
                    .into_iter()
                    .find(|f| f.signature() == signature)
                    .map(|f| f.stream);
                if smaller.is_some() {
                    break;
                }
            }
            match smaller {
                Some(s) => {
                    best = tokens(&s);
                    run = run.min(best.len().div_ceil(2)).max(1);
                }
                None if run > 1 => run /= 2,
                None => return Ok(best.concat()),
            }
        }
    }
}

/// `stream` cut into what a terminal reads as one thing: an escape or control sequence (up to
/// its final byte, or an OSC up to BEL or ST), a UTF-8 character, any other byte.
fn tokens(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let rest = &stream[at..];
        let len = match rest {
            [0x1b, b'[', tail @ ..] => {
                2 + tail
                    .iter()
                    .position(|b| (0x40..=0x7e).contains(b))
                    .map_or(tail.len(), |i| i + 1)
            }
            [0x1b, b']', tail @ ..] => {
                2 + tail
                    .windows(2)
                    .position(|w| w[0] == 0x07 || w == b"\x1b\\")
                    .map_or(tail.len(), |i| i + if tail[i] == 0x07 { 1 } else { 2 })
            }
            [0x1b, b'(' | b')' | b'*' | b'+' | b'#', _, ..] => 3,
            [0x1b, _, ..] => 2,
            [b, ..] if *b >= 0xc0 => {
                let want = if *b >= 0xf0 {
                    4
                } else if *b >= 0xe0 {
                    3
                } else {
                    2
                };
                let cont = rest[1..]
                    .iter()
                    .take(want - 1)
                    .take_while(|c| (0x80..0xc0).contains(*c))
                    .count();
                1 + cont
            }
            _ => 1,
        };
        let mut len = len.min(rest.len());
        // Combining marks stay with the character they join.
        while let Some(mark) = std::str::from_utf8(&rest[len..])
            .ok()
            .or_else(|| {
                let end = rest[len..].iter().take(4).count();
                (1..=end)
                    .rev()
                    .find_map(|n| std::str::from_utf8(&rest[len..len + n]).ok())
            })
            .and_then(|t| t.chars().next())
            .filter(|ch| unicode_width::UnicodeWidthChar::width(*ch) == Some(0) && !ch.is_control())
        {
            len += mark.len_utf8();
        }
        out.push(rest[..len].to_vec());
        at += len;
    }
    out
}

/// One stream under way: its file and what ends it.
struct Job {
    index: u64,
    size: (u16, u16),
    stream: Vec<u8>,
    /// Decided differences steered around in it.
    steered: Vec<&'static str>,
    file: PathBuf,
    sentinel: String,
}

impl Job {
    fn new(seed: u64, index: u64, dir: &Path, slot: usize) -> Result<Self, PeerError> {
        let (size, stream, steered) = stream(seed, index);
        Self::with_stream(index, size, stream, steered, dir, slot)
    }

    fn with_stream(
        index: u64,
        size: (u16, u16),
        stream: Vec<u8>,
        steered: Vec<&'static str>,
        dir: &Path,
        slot: usize,
    ) -> Result<Self, PeerError> {
        let sentinel = sentinel(index);
        let file = dir.join(format!("stream-{slot}.bin"));
        let mut bytes = stream.clone();
        bytes.extend_from_slice(format!("\x1b]2;{sentinel}\x07").as_bytes());
        std::fs::write(&file, bytes)
            .map_err(|e| PeerError::Unexpected(format!("write {}: {e}", file.display())))?;
        Ok(Self {
            index,
            size,
            stream,
            steered,
            file,
            sentinel,
        })
    }
}

/// One server's connection.
struct Side {
    name: &'static str,
    client: Client,
}

impl Side {
    fn new(name: &'static str, client: Client) -> Self {
        Self { name, client }
    }

    /// Forgets the frames no one waits for (our server attaches the spawning connection, so
    /// the terminals' output arrives here).
    fn discard_backlog(&mut self) -> Result<(), PeerError> {
        while self.client.recv(Duration::ZERO)?.is_some() {}
        Ok(())
    }
}

/// A screen as one server showed it: the reply's JSON, or why there is none.
type Shown = Result<String, String>;

/// Shows every job on both servers at once and reads each screen once it has seen the whole
/// stream; the terminals are killed afterwards.
fn show_all(
    sides: &mut [Side],
    jobs: &[Job],
    show: &[String],
) -> Result<Vec<Vec<Shown>>, PeerError> {
    let mut spawned: Vec<Vec<u32>> = sides.iter().map(|_| Vec::new()).collect();
    for (side, ids) in sides.iter_mut().zip(&mut spawned) {
        for job in jobs {
            let mut argv = show.to_vec();
            argv.push(job.file.display().to_string());
            let (cols, rows) = job.size;
            ids.push(side.client.send_spawn(&argv, TerminalSize { cols, rows })?);
        }
    }
    let mut terminals: Vec<Vec<TerminalId>> = sides.iter().map(|_| Vec::new()).collect();
    for ((side, ids), terms) in sides.iter_mut().zip(&spawned).zip(&mut terminals) {
        for &id in ids {
            terms.push(side.client.wait_spawned(id)?);
        }
    }
    let mut shown: Vec<Vec<Option<Shown>>> = jobs.iter().map(|_| vec![None; sides.len()]).collect();
    let deadline = Instant::now() + SHOW_DEADLINE;
    let mut pause = Duration::from_millis(1);
    loop {
        let mut waiting = false;
        for (s, side) in sides.iter_mut().enumerate() {
            let mut asked = Vec::new();
            for (j, terminal) in terminals[s].iter().enumerate() {
                if shown[j][s].is_none() {
                    let command = Command::GetScreen {
                        terminal: terminal.clone(),
                        request_scrollback: Some(0),
                        cells: true,
                    };
                    asked.push((j, side.client.send_command(command)?));
                }
            }
            for (j, request) in asked {
                match side.client.wait_result(request)? {
                    CommandResult::OkWith(CommandValue::Json(json)) => {
                        if title_of(&json).as_deref() == Some(jobs[j].sentinel.as_str()) {
                            shown[j][s] = Some(Ok(json));
                        } else if Instant::now() >= deadline {
                            shown[j][s] = Some(Err(format!(
                                "the end of the stream never showed within {SHOW_DEADLINE:?}; \
                                 last screen: {json}"
                            )));
                        } else {
                            waiting = true;
                        }
                    }
                    other => shown[j][s] = Some(Err(format!("GET_SCREEN answered {other:?}"))),
                }
            }
        }
        if !waiting {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    for (side, terms) in sides.iter_mut().zip(&terminals) {
        let kills: Vec<u32> = terms
            .iter()
            .map(|t| {
                side.client.send_command(Command::KillTerminal {
                    terminal: t.clone(),
                })
            })
            .collect::<Result<_, _>>()?;
        for request in kills {
            let result = side.client.wait_result(request)?;
            // A terminal whose program has died (a `show` that failed) may be gone already.
            let gone = matches!(&result, CommandResult::Error { code, .. }
                if *code == phux_proto::ErrorCode::TERMINAL_NOT_FOUND);
            if result != CommandResult::Ok && !gone {
                return Err(PeerError::Unexpected(format!(
                    "{}: KILL_TERMINAL answered {result:?}",
                    side.name
                )));
            }
        }
        side.discard_backlog()?;
    }
    Ok(shown
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|s| s.unwrap_or_else(|| Err("not read".to_owned())))
                .collect()
        })
        .collect())
}

/// The `title` of a GET_SCREEN reply, if it has one.
fn title_of(json: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value.get("title")?.as_str().map(str::to_owned)
}

/// Compares one stream's two screens and records the verdict in `report`.
fn judge(job: Job, ours: Shown, theirs: Shown, palette: &Palette, report: &mut Report) {
    let read = |name: &'static str, shown: Shown| {
        shown
            .and_then(|json| Screen::parse(&json).map_err(|e| format!("{e}; the reply: {json}")))
            .map_err(|error| Problem::Unreadable {
                server: name,
                error,
            })
    };
    for id in &job.steered {
        *report.decided.entry(id).or_default() += 1;
    }
    let screens = read("ours", ours).and_then(|a| read("reference", theirs).map(|b| (a, b)));
    let problem = match screens {
        Ok((mut a, mut b)) => {
            let mut noted = Vec::new();
            normalise::normalise(&mut a, &mut b, palette, &mut |id| {
                if !noted.contains(&id) {
                    noted.push(id);
                }
            });
            for id in noted {
                *report.decided.entry(id).or_default() += 1;
            }
            let undecided = screen::differences(&a, &b);
            if undecided.is_empty() {
                report.identical += 1;
                return;
            }
            Problem::Differs(undecided, Box::new([a, b]))
        }
        Err(problem) => problem,
    };
    report.findings.push(Finding {
        index: job.index,
        size: job.size,
        stream: job.stream,
        problem,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every decided difference the generator steers around or the comparison normalises has
    /// its row, with evidence, in the table of the module docs.
    #[test]
    fn every_decided_difference_has_its_row() {
        let doc = include_str!("mod.rs");
        for id in vtgen::reference::ALL.iter().chain(normalise::ALL) {
            assert!(doc.contains(&format!("//! | `{id}` |")), "no row for {id}");
        }
    }

    #[test]
    fn streams_are_a_function_of_seed_and_index() {
        assert_eq!(stream(7, 3), stream(7, 3));
        assert_ne!(stream(7, 3).1, stream(7, 4).1);
    }

    #[test]
    fn tokens_keep_sequences_characters_and_marks_whole() {
        let stream = "a\x1b[1;2H\x1b]2;t\x07e\u{301}\u{4e2d}\r\x1b(0".as_bytes();
        let cut: Vec<&[u8]> = vec![
            b"a",
            b"\x1b[1;2H",
            b"\x1b]2;t\x07",
            "e\u{301}".as_bytes(),
            "\u{4e2d}".as_bytes(),
            b"\r",
            b"\x1b(0",
        ];
        assert_eq!(tokens(stream), cut);
    }
}
