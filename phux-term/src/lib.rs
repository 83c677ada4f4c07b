//! The VT model behind phux: what a terminal shows, computed from the bytes a program writes.
//!
//! A [`Terminal`] is fed the program's output ([`Terminal::advance`]) and answers what a
//! server needs to know about it: the screen (text, colours, attributes, wide characters and
//! combining marks, soft wraps, the cursor), the scrollback history, the title and bells, the
//! [`TerminalModes`](modes::TerminalModes) an input encoder must follow, the GET_SCREEN JSON
//! document ([`Terminal::screen_json`]), and a synthesized VT stream that rebuilds the screen and
//! modes on a fresh terminal ([`Terminal::bootstrap`]).
//!
//! It performs no I/O and reads no clock: the same bytes give the same screen, however they are
//! split into reads. Screen semantics follow xterm; the tests compare the grid with the `vt100`
//! crate's, cell by cell, and name each case where the two differ. phux-core's `TerminalState`
//! is a `Terminal` plus the protocol's output sequence numbers.
//!
//! ```
//! use phux_term::Terminal;
//!
//! let mut term = Terminal::new(80, 24, 1000);
//! term.advance(b"\x1b[1mbold\x1b[m plain\r\n\x1b]2;a title\x07\x1b[?2004h");
//! assert_eq!(term.title(), Some("a title"));
//! assert!(term.modes().bracketed_paste);
//!
//! let screen: serde_json::Value = serde_json::from_str(&term.screen_json(1, None, false))?;
//! assert_eq!(screen["lines"][0], "bold plain");
//! assert_eq!(screen["cursor"]["y"], 1);
//!
//! // A fresh terminal of the same size, fed the bootstrap, shows the same screen and modes.
//! let mut copy = Terminal::new(80, 24, 0);
//! copy.advance(&term.bootstrap());
//! assert_eq!(copy.screen_json(1, None, true), term.screen_json(1, None, true));
//! assert_eq!(copy.modes(), term.modes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Inside, by concern: `vt` parses the byte stream (a DEC ANSI state machine with a fast path
//! for runs of text) and carries out what it says on `grid`, the compact cells and rows of each
//! screen; rows that scroll off the main screen go to `history`; `tracker` keeps the modes the
//! input encoder reads, with a per-screen `kitty` flag stack; `screen` builds the GET_SCREEN
//! document and `bootstrap` the synthesized VT stream.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bootstrap;
#[doc(hidden)]
pub mod bytes;
#[cfg(any(test, feature = "differential"))]
#[doc(hidden)]
pub mod differential;
mod grid;
mod history;
mod kitty;
pub mod modes;
mod overlay;
mod screen;
mod terminal;
mod tracker;
mod vt;
#[cfg(any(test, feature = "generator"))]
#[doc(hidden)]
pub mod vtgen;

pub use screen::{CellsTooLarge, SCREEN_SCHEMA_VERSION, ScreenLimits};
pub use terminal::{MAX_REPLY_BYTES, Terminal};
