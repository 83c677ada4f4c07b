//! The synthesized VT bootstrap: bytes that rebuild the screen and modes on a fresh terminal.

use std::fmt::Write as _;

use super::TerminalState;
use super::kitty::KittyStack;
use crate::modes::{MouseEncoding, MouseTracking};

impl TerminalState {
    /// VT bytes that, fed to a fresh terminal of the same size, rebuild the visible screen
    /// (text, attributes, colours, cursor position, visibility and style), the title, and the
    /// modes: DECCKM, keypad, bracketed paste, focus reporting, mouse tracking and encoding,
    /// DECBKM, LNM, the alternate screen (with the main screen behind it) and both kitty flag
    /// stacks.
    ///
    /// Not rebuilt: the scroll region, origin mode, saved cursor, character sets and tab stops
    /// (vt100 does not expose them), and history rows.
    pub fn bootstrap(&self) -> Vec<u8> {
        let screen = self.parser.screen();
        let modes = self.modes();
        let mut out = String::new();

        // [BOOTSTRAP.CHUNK.2] both screens: the main one first, then the alternate over it.
        if modes.alternate_screen {
            if let Some(main) = &self.main_snapshot {
                out.push_str(main);
            }
            push_kitty_stack(&mut out, self.tracker.kitty_stack(false));
            out.push_str("\x1b[?1049h");
        }
        // Clears, draws every row, places the cursor and leaves the current pen set.
        out.push_str(&screen.contents_formatted());
        push_kitty_stack(&mut out, self.tracker.kitty_stack(modes.alternate_screen));

        // [BOOTSTRAP.CHUNK.2] every mode the input encoder reads. A fresh terminal has them
        // all off, so only the set ones are sent.
        let mut dec = |on: bool, mode: u16| {
            if on {
                let _ = write!(out, "\x1b[?{mode}h");
            }
        };
        dec(modes.application_cursor_keys, 1);
        dec(modes.backarrow_sends_backspace, 67);
        dec(modes.bracketed_paste, 2004);
        dec(modes.focus_reporting, 1004);
        let tracking = match modes.mouse_tracking {
            MouseTracking::Off => None,
            MouseTracking::X10 => Some(9),
            MouseTracking::Normal => Some(1000),
            MouseTracking::ButtonEvent => Some(1002),
            MouseTracking::AnyEvent => Some(1003),
        };
        if let Some(mode) = tracking {
            dec(true, mode);
        }
        let encoding = match modes.mouse_encoding {
            MouseEncoding::X10 => None,
            MouseEncoding::Utf8 => Some(1005),
            MouseEncoding::Sgr => Some(1006),
            MouseEncoding::Urxvt => Some(1015),
            MouseEncoding::SgrPixels => Some(1016),
        };
        if let Some(mode) = encoding {
            dec(true, mode);
        }
        if modes.application_keypad {
            out.push_str("\x1b=");
        }
        if modes.line_feed_mode {
            out.push_str("\x1b[20h");
        }
        let style = match screen.cursor_style() {
            vt100::CursorStyle::Default => 0,
            vt100::CursorStyle::BlinkBlock => 1,
            vt100::CursorStyle::SteadyBlock => 2,
            vt100::CursorStyle::BlinkUnderline => 3,
            vt100::CursorStyle::SteadyUnderline => 4,
            vt100::CursorStyle::BlinkVerticalBar => 5,
            vt100::CursorStyle::SteadyVerticalBar => 6,
        };
        if style != 0 {
            let _ = write!(out, "\x1b[{style} q");
        }
        if let Some(title) = self.title() {
            // Controls cannot come from an OSC body, but a title must never be able to end
            // its own sequence early, so drop any that are there.
            out.push_str("\x1b]2;");
            out.extend(title.chars().filter(|c| !c.is_control()));
            out.push_str("\x1b\\");
        }
        out.into_bytes()
    }
}

/// Rebuilds a kitty flag stack on a fresh one (flags 0, nothing saved): the oldest saved
/// entry becomes current, then every later entry and the current flags are pushed over it.
fn push_kitty_stack(out: &mut String, stack: &KittyStack) {
    let current = stack.current().0;
    match stack.saved().split_first() {
        None => {
            if current != 0 {
                let _ = write!(out, "\x1b[={current};1u");
            }
        }
        Some((&oldest, later)) => {
            if oldest != 0 {
                let _ = write!(out, "\x1b[={oldest};1u");
            }
            for &flags in later.iter().chain(std::iter::once(&current)) {
                let _ = write!(out, "\x1b[>{flags}u");
            }
        }
    }
}
