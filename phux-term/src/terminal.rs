//! [`Terminal`]: one terminal's screen, history and modes, kept current from its output.

use crate::modes::TerminalModes;
use crate::vt::Vt;

pub use crate::vt::MAX_REPLY_BYTES;

/// The model of one terminal's output: screens, history, modes and title.
///
/// Feed it what the program writes with [`advance`](Self::advance); read it back with the
/// getters, [`screen_json`](Self::screen_json) and [`bootstrap`](Self::bootstrap).
#[derive(Clone)]
pub struct Terminal {
    /// Parser, screens, history and the mode tracker.
    pub(crate) vt: Vt,
}

impl Terminal {
    /// A blank terminal of `cols` x `rows` (0 is clamped to 1) that retains up to
    /// `scrollback_lines` rows of history.
    pub fn new(cols: u16, rows: u16, scrollback_lines: usize) -> Self {
        Self {
            vt: Vt::new(cols.max(1), rows.max(1), scrollback_lines),
        }
    }

    /// Feeds one chunk of program output. A stream gives the same result however it is split
    /// into chunks: a sequence or character cut by a chunk boundary continues in the next one.
    pub fn advance(&mut self, bytes: &[u8]) {
        self.vt.advance(bytes);
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

    /// The replies to the program's queries (device attributes, cursor and status reports,
    /// mode reports, the version, dynamic colours, kitty keyboard flags) in the order it asked,
    /// taken out: the caller writes them to the program's input. Empty when there are none.
    ///
    /// At most [`MAX_REPLY_BYTES`] wait between two calls; a reply that would go past that is
    /// dropped whole, so a program flooding queries it never reads cannot grow this.
    pub fn take_replies(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.vt.replies)
    }

    /// The number of history rows retained.
    pub fn scrollback_len(&self) -> usize {
        self.vt.history.len()
    }

    /// Drops the history (the scrollback), freeing its memory; the screens are untouched and
    /// new history rows are retained as before. Returns the rows dropped.
    pub fn clear_history(&mut self) -> usize {
        let rows = self.vt.history.len();
        self.vt.history.release();
        rows
    }

    /// The heap memory this terminal holds, in bytes: both screens, the history and the
    /// parser's buffers (not the allocator's own overhead).
    pub fn heap_bytes(&self) -> usize {
        self.vt.heap_bytes()
    }

    /// The most heap the rows of both screens of a `cols` x `rows` terminal can come to hold,
    /// whatever its program writes (every cell carrying the most combining marks a cell takes,
    /// and a style of its own): a server reserves this for a terminal of that size, since a
    /// screen never sheds what it shows. [`heap_bytes`](Self::heap_bytes) never counts more
    /// than this plus [`heap_bytes_besides_rows`](Self::heap_bytes_besides_rows).
    pub fn rows_heap_bound(cols: u16, rows: u16) -> usize {
        2 * usize::from(rows.max(1)) * crate::grid::Row::heap_bound(cols.max(1))
    }

    /// The heap this terminal holds outside its screens' rows: the history, the parser's and
    /// the title's buffers. O(1), unlike [`heap_bytes`](Self::heap_bytes).
    pub fn heap_bytes_besides_rows(&self) -> usize {
        self.vt.heap_bytes_besides_rows()
    }
}

/// The whole model as data, exactly: both screens, the history, the parser mid-sequence (a
/// chunk cut inside an escape sequence or a UTF-8 character continues the same way after a
/// round trip), modes, character sets, saved cursors, pen, tab stops, kitty stacks, title,
/// colours, pending bells and replies. A server carries its terminals across an in-place
/// upgrade with it; the format is the derived serde form of the model's fields, so it changes
/// with them (the server's state version says which).
impl serde::Serialize for Terminal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.vt.serialize(s)
    }
}

/// Reading a model back checks every invariant its code indexes by: a model that
/// deserializes is one the parser and the screen operations can run on without panicking.
impl<'de> serde::Deserialize<'de> for Terminal {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let vt = Vt::deserialize(d)?;
        vt.check().map_err(serde::de::Error::custom)?;
        Ok(Self { vt })
    }
}

impl std::fmt::Debug for Terminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminal")
            .field("size", &self.size())
            .field("modes", &self.modes())
            .field("title", &self.title())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
