//! The server's view of one terminal's output.
//!
//! [`TerminalState`] consumes the bytes the program writes to its PTY and answers questions about
//! them: the screen (our own grid, built for throughput), the [`TerminalModes`] the input
//! encoder needs, the output sequence number, the title, bells, the GET_SCREEN JSON document, and
//! a synthesized VT stream that rebuilds the screen and modes on a fresh terminal (the
//! SynthesizedVt bootstrap). No I/O.
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
mod grid;
mod history;
mod kitty;
mod screen;
mod tracker;
mod vt;

use vt::Vt;

use crate::modes::TerminalModes;
pub use screen::SCREEN_SCHEMA_VERSION;

/// The output sequence numbers of a terminal are used up (`u64::MAX` chunks were stamped).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("the output sequence numbers of this terminal are exhausted")]
#[non_exhaustive]
pub struct SeqExhausted;

/// The server's model of one terminal's output: grid, modes, sequence number and title.
pub struct TerminalState {
    /// Parser, screens, history and the mode tracker.
    vt: Vt,
    seq: u64,
}

impl TerminalState {
    /// A blank terminal of `cols` x `rows` (0 is clamped to 1) that retains up to
    /// `scrollback_lines` rows of history.
    pub fn new(cols: u16, rows: u16, scrollback_lines: usize) -> Self {
        Self {
            vt: Vt::new(cols.max(1), rows.max(1), scrollback_lines),
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
        self.vt.advance(bytes);
        Ok(seq)
    }

    /// The last stamped sequence number (0 before any output).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Resizes the terminal (0 is clamped to 1).
    ///
    /// A shorter screen first drops rows below the cursor, then moves rows from the top into
    /// history; a taller one gains blank rows at the bottom. History is never pulled back into
    /// the viewport, and the scroll region is reset.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.vt.resize(cols.max(1), rows.max(1));
    }

    /// The size as (cols, rows).
    pub fn size(&self) -> (u16, u16) {
        self.vt.size()
    }

    /// The modes the input encoder must use now.
    pub fn modes(&self) -> TerminalModes {
        self.vt.tracker.modes()
    }

    /// The window title set by OSC 0 or OSC 2, if any.
    pub fn title(&self) -> Option<&str> {
        self.vt.title.as_deref()
    }

    /// The number of BEL characters seen since the last call.
    pub fn take_bells(&mut self) -> u32 {
        std::mem::take(&mut self.vt.bells)
    }

    /// The number of history rows retained.
    pub fn scrollback_len(&self) -> usize {
        self.vt.history.len()
    }

    /// The heap memory this terminal holds, in bytes: both screens, the history and the
    /// parser's buffers (not the allocator's own overhead).
    pub fn heap_bytes(&self) -> usize {
        self.vt.heap_bytes()
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
mod tests;
