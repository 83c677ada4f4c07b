//! The server's view of one terminal's output.
//!
//! [`TerminalState`] is the VT model of [`phux_term::Terminal`] (the screen, the
//! [`TerminalModes`] the input encoder needs, the title, bells, the GET_SCREEN JSON document, and
//! a synthesized VT stream that rebuilds the screen and modes on a fresh terminal, the
//! SynthesizedVt bootstrap) plus what the protocol adds to it: the output sequence number
//! stamped on every chunk. No I/O.
//!
//! ```
//! use phux_core::terminal_state::TerminalState;
//!
//! let mut term = TerminalState::new(80, 24, 1000);
//! assert_eq!(term.ingest(b"\x1b[?2004hhello")?, 1);
//! assert!(term.modes().bracketed_paste);
//! let screen: serde_json::Value = serde_json::from_str(&term.screen_json(1, None, false))?;
//! assert_eq!(screen["lines"][0], "hello");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use phux_term::SCREEN_SCHEMA_VERSION;
use phux_term::{CellsTooLarge, ScreenLimits, Terminal};
use serde_json::Value;

use crate::modes::TerminalModes;

/// The output sequence numbers of a terminal are used up (`u64::MAX` chunks were stamped).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the output sequence numbers of this terminal are exhausted")]
#[non_exhaustive]
pub struct SeqExhausted;

/// The server's model of one terminal's output: grid, modes, sequence number and title.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct TerminalState {
    /// Screens, history, modes and title.
    term: Terminal,
    seq: u64,
}

impl TerminalState {
    /// A blank terminal of `cols` x `rows` (0 is clamped to 1) that retains up to
    /// `scrollback_lines` rows of history.
    pub fn new(cols: u16, rows: u16, scrollback_lines: usize) -> Self {
        Self {
            term: Terminal::new(cols, rows, scrollback_lines),
            seq: 0,
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
        self.term.advance(bytes);
        Ok(seq)
    }

    /// The last stamped sequence number (0 before any output).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Resizes the terminal (0 is clamped to 1); see [`Terminal::resize`].
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.term.resize(cols, rows);
    }

    /// The size as (cols, rows).
    pub fn size(&self) -> (u16, u16) {
        self.term.size()
    }

    /// The modes the input encoder must use now.
    pub fn modes(&self) -> TerminalModes {
        self.term.modes()
    }

    /// The window title set by OSC 0 or OSC 2, if any.
    pub fn title(&self) -> Option<&str> {
        self.term.title()
    }

    /// The number of BEL characters seen since the last call.
    pub fn take_bells(&mut self) -> u32 {
        self.term.take_bells()
    }

    /// The replies to the program's queries since the last call, in the order it asked; see
    /// [`Terminal::take_replies`] (at most [`phux_term::MAX_REPLY_BYTES`]).
    pub fn take_replies(&mut self) -> Vec<u8> {
        self.term.take_replies()
    }

    /// The number of history rows retained.
    pub fn scrollback_len(&self) -> usize {
        self.term.scrollback_len()
    }

    /// Drops the history; see [`Terminal::clear_history`].
    pub fn clear_history(&mut self) -> usize {
        self.term.clear_history()
    }

    /// The heap memory this terminal holds, in bytes; see [`Terminal::heap_bytes`].
    pub fn heap_bytes(&self) -> usize {
        self.term.heap_bytes()
    }

    /// The most heap both screens' rows of a `cols` x `rows` terminal can come to hold; see
    /// [`Terminal::rows_heap_bound`].
    pub fn rows_heap_bound(cols: u16, rows: u16) -> usize {
        Terminal::rows_heap_bound(cols, rows)
    }

    /// The heap held outside the screens' rows (history, buffers), O(1); see
    /// [`Terminal::heap_bytes_besides_rows`].
    pub fn heap_bytes_besides_rows(&self) -> usize {
        self.term.heap_bytes_besides_rows()
    }

    /// The GET_SCREEN reply as JSON text; see [`Terminal::screen_value`].
    pub fn screen_json(&self, pane: u32, request_scrollback: Option<u32>, cells: bool) -> String {
        self.term.screen_json(pane, request_scrollback, cells)
    }

    /// The GET_SCREEN reply as a JSON value, so GET_TERMINAL_STATE can add its keys; see
    /// [`Terminal::screen_value`].
    pub fn screen_value(&self, pane: u32, request_scrollback: Option<u32>, cells: bool) -> Value {
        self.term.screen_value(pane, request_scrollback, cells)
    }

    /// The GET_SCREEN reply as JSON text within `limits`; see [`Terminal::screen_json_within`].
    pub fn screen_json_within(
        &self,
        pane: u32,
        request_scrollback: Option<u32>,
        cells: bool,
        limits: ScreenLimits,
    ) -> Result<String, CellsTooLarge> {
        self.term
            .screen_json_within(pane, request_scrollback, cells, limits)
    }

    /// The GET_SCREEN document without cells, its history bounded; see
    /// [`Terminal::screen_value_within`].
    pub fn screen_value_within(
        &self,
        pane: u32,
        request_scrollback: Option<u32>,
        scrollback_bytes: usize,
    ) -> Value {
        self.term
            .screen_value_within(pane, request_scrollback, scrollback_bytes)
    }

    /// VT bytes that, fed to a fresh terminal of the same size, rebuild the visible screen and
    /// the modes (the SynthesizedVt bootstrap); see [`Terminal::bootstrap`].
    pub fn bootstrap(&self) -> Vec<u8> {
        self.term.bootstrap()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(t: &TerminalState, scrollback: Option<u32>, cells: bool) -> Value {
        serde_json::from_str(&t.screen_json(7, scrollback, cells)).unwrap()
    }

    // [OUTPUT.SEQ.1]
    #[test]
    fn seq_starts_at_one_and_is_contiguous() {
        let mut t = TerminalState::new(80, 24, 0);
        assert_eq!(t.seq(), 0);
        assert_eq!(t.ingest(b"a"), Ok(1));
        assert_eq!(
            t.ingest(b""),
            Ok(2),
            "every chunk is stamped, even an empty one"
        );
        assert_eq!(t.ingest(b"b"), Ok(3));
        assert_eq!(t.seq(), 3);
    }

    // [OUTPUT.SEQ.2]
    #[test]
    fn seq_exhaustion_is_an_error_and_changes_nothing() {
        let mut t = TerminalState::new(10, 2, 0);
        t.set_seq_for_test(u64::MAX - 1);
        assert_eq!(t.ingest(b"x"), Ok(u64::MAX));
        assert_eq!(t.ingest(b"y\x1b[?1h"), Err(SeqExhausted));
        assert_eq!(t.seq(), u64::MAX);
        assert_eq!(screen(&t, None, false)["lines"][0], "x");
        assert!(!t.modes().application_cursor_keys);
    }
}
