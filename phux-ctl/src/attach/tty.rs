//! The local tty under `attach`: raw mode and the alternate screen while attached, the thread
//! that reads and decodes what the tty sends, and SIGWINCH as resize events.

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, Event};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use phux_core::modes::{MouseTracking, TerminalModes};

use crate::CtlError;
use crate::conn::Incoming;
use crate::tty_input::{Decoder, Incomplete, Reports};

/// Modes a program may have turned on in this tty through its output, turned off again on
/// detach: cursor keys, keypad, mouse tracking and encodings, focus reports, bracketed paste,
/// the kitty keyboard flags; then the cursor shown and the pen reset.
pub(super) const RESET_MODES: &[u8] = b"\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\
\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b[=0;1u\x1b[?25h\x1b[0m";

/// How long to wait for the rest of an escape sequence a read cut short (a terminal writes
/// each sequence whole, so this only separates a typed Escape from what follows it).
const SEQUENCE_WAIT: Duration = Duration::from_millis(50);

/// How long to wait for the rest of a string reply or a paste that a read cut short.
const STRING_WAIT: Duration = Duration::from_millis(500);

/// Raw mode and the alternate screen for as long as it lives; restored on drop (also on an
/// error or a panic unwinding through `attach`).
pub(super) struct TtyGuard;

impl TtyGuard {
    pub(super) fn enter() -> Result<Self, CtlError> {
        crossterm::terminal::enable_raw_mode()
            .map_err(|e| CtlError::Local(format!("cannot put the tty in raw mode: {e}")))?;
        let guard = Self;
        let mut out = std::io::stdout();
        crossterm::execute!(out, EnterAlternateScreen, EnableBracketedPaste)
            .map_err(|e| CtlError::Local(format!("cannot set up the tty: {e}")))?;
        Ok(guard)
    }
}

impl Drop for TtyGuard {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = out.write_all(RESET_MODES);
        let _ = crossterm::execute!(out, DisableBracketedPaste, LeaveAlternateScreen);
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// The reports the program asked this tty for, shared with the reader thread: the attach
/// loop stores them after drawing output and before writing it, so bytes read after the tty
/// could have started (or stopped) sending reports are decoded knowing it.
#[derive(Debug, Default)]
pub(super) struct SharedReports(AtomicU8);

impl SharedReports {
    const MOUSE: u8 = 1;
    const FOCUS: u8 = 2;

    pub(super) fn store(&self, modes: &TerminalModes) {
        let mut bits = 0;
        if modes.mouse_tracking != MouseTracking::Off {
            bits |= Self::MOUSE;
        }
        if modes.focus_reporting {
            bits |= Self::FOCUS;
        }
        self.0.store(bits, Ordering::Release);
    }

    fn load(&self) -> Reports {
        let bits = self.0.load(Ordering::Acquire);
        Reports {
            mouse: bits & Self::MOUSE != 0,
            focus: bits & Self::FOCUS != 0,
        }
    }
}

/// Reads the tty on its own thread, decoding as bytes arrive and reading a sequence that
/// stays cut as keys after a short wait.
pub(super) fn spawn_tty_reader(
    waker: std::sync::mpsc::Sender<Incoming>,
    reports: Arc<SharedReports>,
) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let fd = stdin.as_fd();
        let mut decoder = Decoder::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            decoder.set_reports(reports.load());
            let wait = match decoder.incomplete() {
                Incomplete::No => None,
                Incomplete::Short => Some(SEQUENCE_WAIT),
                Incomplete::Long => Some(STRING_WAIT),
            };
            let timeout = wait.and_then(|w| rustix::event::Timespec::try_from(w).ok());
            let mut fds = [rustix::event::PollFd::new(
                &fd,
                rustix::event::PollFlags::IN,
            )];
            let inputs = match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(0) => decoder.flush(),
                Ok(_) => match rustix::io::read(fd, &mut buf) {
                    Ok(0) => {
                        let _ = waker.send(Incoming::TtyFailed("end of input".to_owned()));
                        return;
                    }
                    Ok(n) => decoder.feed(&buf[..n]),
                    Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
                    Err(e) => {
                        let _ = waker.send(Incoming::TtyFailed(e.to_string()));
                        return;
                    }
                },
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    let _ = waker.send(Incoming::TtyFailed(e.to_string()));
                    return;
                }
            };
            if !inputs.is_empty() && waker.send(Incoming::TtyInput(inputs)).is_err() {
                return;
            }
        }
    });
}

/// Turns SIGWINCH into resize events on the session's channel.
pub(super) fn spawn_resize_watch(waker: std::sync::mpsc::Sender<Incoming>) -> Result<(), CtlError> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGWINCH])
        .map_err(|e| CtlError::Local(format!("cannot watch for resizes: {e}")))?;
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if let Ok((cols, rows)) = crossterm::terminal::size()
                && waker
                    .send(Incoming::Tty(Event::Resize(cols, rows)))
                    .is_err()
            {
                return;
            }
        }
    });
    Ok(())
}
