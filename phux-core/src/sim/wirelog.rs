//! The harness's wire log: one line per frame, raw send, PTY event and clock jump, shaped
//! like a transcript so a failing test can be read (or replayed) as one.

pub(super) use phux_proto::hex::to_hex_spaced as hex;
use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

/// A transcript-shaped log of everything on the wire and at the PTYs.
#[derive(Clone, Debug, Default)]
pub struct WireLog {
    lines: VecDeque<String>,
    pub(super) enabled: bool,
    /// Keep at most this many lines (the newest); 0 = unbounded.
    cap: usize,
}

/// The longest line the log keeps (a frame with a big payload is cut).
const MAX_LOG_LINE: usize = 400;

impl WireLog {
    pub(super) fn new() -> Self {
        Self {
            lines: VecDeque::new(),
            enabled: true,
            cap: 0,
        }
    }

    /// Turns logging on or off (off makes long randomized runs cheaper).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Keeps only the newest `lines` lines (0 = all).
    pub fn set_cap(&mut self, lines: usize) {
        self.cap = lines;
    }

    /// Appends one line.
    pub fn push(&mut self, line: impl FnOnce() -> String) {
        if !self.enabled {
            return;
        }
        let mut line = line();
        if line.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        self.lines.push_back(line);
        if self.cap > 0 && self.lines.len() > self.cap {
            self.lines.pop_front();
        }
    }

    /// The lines, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }
}

impl fmt::Display for WireLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

pub(super) fn fmt_duration(d: Duration) -> String {
    if d.subsec_micros().is_multiple_of(1000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}
