//! The server's view of one terminal's output.
//!
//! [`TerminalState`] consumes the bytes the program writes to its PTY and answers questions about
//! them: the screen (a `vt100` grid), the [`TerminalModes`] the input encoder needs, the output
//! sequence number, the title, bells, the GET_SCREEN JSON document, and a synthesized VT stream
//! that rebuilds the screen and modes on a fresh terminal (the SynthesizedVt bootstrap). No I/O.
//!
//! ```
//! use phux_core::terminal::TerminalState;
//!
//! let mut term = TerminalState::new(80, 24, 1000);
//! assert_eq!(term.ingest(b"\x1b[?2004hhello")?, 1);
//! assert!(term.modes().bracketed_paste);
//! let screen: serde_json::Value = serde_json::from_str(&term.screen_json(1, None, false))?;
//! assert_eq!(screen["lines"][0], "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bootstrap;
mod history;
mod kitty;
mod screen;
mod tracker;

use std::num::NonZeroU16;

use history::{History, Observer};
use tracker::{Hit, ModeTracker};

use crate::modes::TerminalModes;
pub use screen::SCREEN_SCHEMA_VERSION;

/// The output sequence numbers of a terminal are used up (`u64::MAX` chunks were stamped).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the output sequence numbers of this terminal are exhausted")]
#[non_exhaustive]
pub struct SeqExhausted;

/// The server's model of one terminal's output: grid, modes, sequence number and title.
pub struct TerminalState {
    parser: vt100::Parser<Observer>,
    tracker: ModeTracker,
    seq: u64,
    /// The main screen as synthesized VT, captured when the alternate screen was entered:
    /// `vt100` exposes only the active screen, and the bootstrap must rebuild both.
    main_snapshot: Option<String>,
}

impl TerminalState {
    /// A blank terminal of `cols` x `rows` (0 is clamped to 1) that retains up to
    /// `scrollback_lines` rows of history.
    pub fn new(cols: u16, rows: u16, scrollback_lines: usize) -> Self {
        let observer = Observer {
            history: History::new(scrollback_lines),
            ..Observer::default()
        };
        // vt100 keeps no scrollback of its own: `History` captures rows as they scroll off.
        let parser =
            vt100::Parser::new_with_callbacks(clamp_dim(rows), clamp_dim(cols), 0, observer);
        Self {
            parser,
            tracker: ModeTracker::default(),
            seq: 0,
            main_snapshot: None,
        }
    }

    /// Feeds one chunk of program output and returns the sequence number stamped on it: the
    /// first chunk is 1, each later one the previous plus one.
    ///
    /// Fails, changing nothing, once the sequence numbers are exhausted.
    pub fn ingest(&mut self, bytes: &[u8]) -> Result<u64, SeqExhausted> {
        // [OUTPUT.SEQ.1] seq is contiguous per terminal: first chunk 1, then +1 per chunk.
        // [OUTPUT.SEQ.2] it never wraps; exhaustion is an error, not a reuse.
        let seq = self.seq.checked_add(1).ok_or(SeqExhausted)?;
        self.seq = seq;
        let mut pos = 0;
        while pos < bytes.len() {
            let rest = &bytes[pos..];
            let advance = self.tracker.advance(rest);
            let done = &rest[..advance.consumed];
            match advance.hit {
                None => self.parser.process(done),
                Some(Hit::ClearHistory) => {
                    self.parser.process(done);
                    self.parser.callbacks_mut().history.clear();
                }
                Some(Hit::AltScreen) => {
                    let (before, last) = done.split_at(done.len().saturating_sub(1));
                    self.parser.process(before);
                    if self.tracker.alternate_screen() && !self.parser.screen().alternate_screen() {
                        self.main_snapshot = Some(self.parser.screen().contents_formatted());
                    }
                    self.parser.process(last);
                    self.sync_alternate_screen();
                }
            }
            pos += advance.consumed;
        }
        Ok(seq)
    }

    /// Brings vt100 to the screen the tracker says is active: vt100 does not implement mode
    /// 1047, which switches like 47 here.
    fn sync_alternate_screen(&mut self) {
        let want = self.tracker.alternate_screen();
        if self.parser.screen().alternate_screen() != want {
            self.parser
                .process(if want { b"\x1b[?47h" } else { b"\x1b[?47l" });
        }
        if !want {
            self.main_snapshot = None;
        }
    }

    /// The last stamped sequence number (0 before any output).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Resizes the terminal (0 is clamped to 1).
    ///
    /// History is never pulled back into the viewport: a taller screen gains blank rows at
    /// the bottom, and the retained history is unchanged.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        // vt100 would otherwise insert blank rows at the top for history it never kept.
        self.parser.screen_mut().clear_scrollback();
        self.parser.set_size(clamp_dim(rows), clamp_dim(cols));
    }

    /// The size as (cols, rows).
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (cols.get(), rows.get())
    }

    /// The modes the input encoder must use now.
    pub fn modes(&self) -> TerminalModes {
        self.tracker.modes()
    }

    /// The window title set by OSC 0 or OSC 2, if any.
    pub fn title(&self) -> Option<&str> {
        self.parser.callbacks().title.as_deref()
    }

    /// The number of BEL characters seen since the last call.
    pub fn take_bells(&mut self) -> u32 {
        std::mem::take(&mut self.parser.callbacks_mut().bells)
    }

    /// The number of history rows retained.
    pub fn scrollback_len(&self) -> usize {
        self.parser.callbacks().history.len()
    }

    /// The `vt100` screen (the active one), for callers that need cell-level detail.
    pub fn screen(&self) -> &vt100::Screen {
        self.parser.screen()
    }

    #[cfg(test)]
    pub(crate) fn set_seq_for_test(&mut self, seq: u64) {
        self.seq = seq;
    }
}

impl std::fmt::Debug for TerminalState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalState")
            .field("size", &self.size())
            .field("seq", &self.seq)
            .field("modes", &self.modes())
            .field("title", &self.title())
            .finish_non_exhaustive()
    }
}

fn clamp_dim(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

#[cfg(test)]
mod tests;
