//! `phuxctl attach`: this tty, in raw mode, attached to one terminal (like `dtach -a`).
//!
//! Local keys become INPUT_KEY events (the server encodes them for the program's current
//! modes), pastes INPUT_PASTE, resizes TERMINAL_RESIZE; the bootstrap and live output are
//! written to the tty as they arrive. The detach key restores the tty and returns, leaving
//! the terminal running on the server.

use std::io::{IsTerminal, Write};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyEventKind, KeyModifiers,
};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use phux_proto::frame::{InputKey, InputPaste, TerminalResize, TerminalSize};
use phux_proto::input::{KeyAction, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{Command, Frame};

use super::cli::AttachArgs;
use super::conn::{Incoming, Session, Step};
use super::keys::{char_key, legacy_bytes};
use super::{CtlError, EXIT_CONNECTION, EXIT_OK};
use phux_core::client::ClientEvent;

/// Modes a program may have turned on in this tty through its output, turned off again on
/// detach: cursor keys, keypad, mouse tracking and encodings, focus reports, bracketed paste,
/// the kitty keyboard flags; then the cursor shown and the pen reset.
const RESET_MODES: &[u8] = b"\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\
\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b[=0;1u\x1b[?25h\x1b[0m";

/// Raw mode and the alternate screen for as long as it lives; restored on drop (also on an
/// error or a panic unwinding through `attach`).
struct TtyGuard;

impl TtyGuard {
    fn enter() -> Result<Self, CtlError> {
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

/// Runs an interactive attach until the detach key, the terminal's exit or the connection's
/// end.
pub fn attach(session: &mut Session, args: &AttachArgs) -> Result<u8, CtlError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CtlError::Local(
            "attach needs a terminal on stdin and stdout".to_owned(),
        ));
    }
    let id = args.id.clone();
    let detach = legacy_bytes(&args.detach_key.0);
    if detach.is_empty() {
        return Err(CtlError::Local(
            "the detach key must be one that sends something (try C-\\ or C-])".to_owned(),
        ));
    }
    if !args.no_resize
        && let Ok((cols, rows)) = crossterm::terminal::size()
    {
        // Resized before attaching, so the bootstrap is drawn at this tty's size.
        session.send(&Frame::TerminalResize(TerminalResize {
            terminal: id.clone(),
            size: TerminalSize { cols, rows },
        }))?;
    }
    session.command_ok(Command::AttachTerminal {
        terminal: id.clone(),
    })?;

    let guard = TtyGuard::enter()?;
    let waker = session.waker();
    std::thread::spawn(move || {
        loop {
            let message = match crossterm::event::read() {
                Ok(event) => Incoming::Tty(event),
                Err(e) => Incoming::TtyFailed(e.to_string()),
            };
            let failed = matches!(message, Incoming::TtyFailed(_));
            if waker.send(message).is_err() || failed {
                return;
            }
        }
    });

    let mut out = std::io::stdout().lock();
    let outcome = loop {
        match session.step(None)? {
            Step::Event(ClientEvent::Frame(Frame::BootstrapChunk(c))) if c.terminal == id => {
                let _ = out.write_all(&c.payload).and_then(|()| out.flush());
            }
            Step::Event(ClientEvent::Frame(Frame::TerminalOutput(o))) if o.terminal == id => {
                let _ = out.write_all(&o.bytes).and_then(|()| out.flush());
            }
            Step::Event(ClientEvent::Frame(Frame::TerminalClosed(c))) if c.terminal == id => {
                let status = c
                    .exit_status
                    .map_or_else(|| "ended".to_owned(), |s| format!("exited with status {s}"));
                break Ok((EXIT_OK, format!("[{id} {status}]")));
            }
            Step::Tty(Event::Key(key)) => {
                let Some(event) = key_event(key) else {
                    continue;
                };
                if legacy_bytes(&event) == detach {
                    break Ok((EXIT_OK, format!("[detached from {id}]")));
                }
                session.send(&Frame::InputKey(InputKey {
                    terminal: id.clone(),
                    event,
                }))?;
            }
            Step::Tty(Event::Paste(text)) => {
                session.send(&Frame::InputPaste(InputPaste {
                    terminal: id.clone(),
                    event: PasteEvent {
                        trust: PasteTrust::Trusted,
                        data: text.into_bytes(),
                    },
                }))?;
            }
            Step::Tty(Event::Resize(cols, rows)) if !args.no_resize => {
                session.send(&Frame::TerminalResize(TerminalResize {
                    terminal: id.clone(),
                    size: TerminalSize { cols, rows },
                }))?;
            }
            Step::TtyFailed(e) => break Err(CtlError::Local(format!("reading the tty: {e}"))),
            Step::Closed => {
                break Ok((
                    EXIT_CONNECTION,
                    "[the server closed the connection]".to_owned(),
                ));
            }
            _ => {}
        }
    };
    drop(out);
    drop(guard);
    let (code, note) = outcome?;
    eprintln!("{note}");
    Ok(code)
}

/// A crossterm key as a phux key event; `None` for releases and keys phux has no code for.
pub fn key_event(key: crossterm::event::KeyEvent) -> Option<KeyEvent> {
    let action = match key.kind {
        KeyEventKind::Press => KeyAction::Press,
        KeyEventKind::Repeat => KeyAction::Repeat,
        KeyEventKind::Release => return None,
    };
    let mut mods = ModSet::NONE;
    for (theirs, ours) in [
        (KeyModifiers::SHIFT, ModSet::SHIFT),
        (KeyModifiers::CONTROL, ModSet::CTRL),
        (KeyModifiers::ALT, ModSet::ALT),
        (KeyModifiers::SUPER, ModSet::SUPER),
    ] {
        if key.modifiers.contains(theirs) {
            mods |= ours;
        }
    }
    let physical = match key.code {
        KeyCode::Char(c) => {
            let mut event = char_key(c, mods);
            event.action = action;
            return Some(event);
        }
        KeyCode::Enter => PhysicalKey::ENTER,
        KeyCode::Tab => PhysicalKey::TAB,
        KeyCode::BackTab => {
            mods |= ModSet::SHIFT;
            PhysicalKey::TAB
        }
        KeyCode::Backspace => PhysicalKey::BACKSPACE,
        KeyCode::Esc => PhysicalKey::ESCAPE,
        KeyCode::Left => PhysicalKey::ARROW_LEFT,
        KeyCode::Right => PhysicalKey::ARROW_RIGHT,
        KeyCode::Up => PhysicalKey::ARROW_UP,
        KeyCode::Down => PhysicalKey::ARROW_DOWN,
        KeyCode::Home => PhysicalKey::HOME,
        KeyCode::End => PhysicalKey::END,
        KeyCode::PageUp => PhysicalKey::PAGE_UP,
        KeyCode::PageDown => PhysicalKey::PAGE_DOWN,
        KeyCode::Delete => PhysicalKey::DELETE,
        KeyCode::Insert => PhysicalKey::INSERT,
        KeyCode::F(n @ 1..=24) => PhysicalKey(PhysicalKey::F1.0 + u32::from(n) - 1),
        _ => return None,
    };
    let mut event = KeyEvent::press(physical, mods);
    event.action = action;
    Some(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEvent as CtKey;

    fn bytes(code: KeyCode, mods: KeyModifiers) -> Vec<u8> {
        legacy_bytes(&key_event(CtKey::new(code, mods)).expect("mapped"))
    }

    #[test]
    fn crossterm_keys_encode_to_what_the_tty_sent() {
        // [INPUT.ENCODE.KEY.10] crossterm reads 0x1c as Ctrl+4: it is still C-\ (detach).
        assert_eq!(bytes(KeyCode::Char('4'), KeyModifiers::CONTROL), b"\x1c");
        assert_eq!(bytes(KeyCode::Char('\\'), KeyModifiers::CONTROL), b"\x1c");
        assert_eq!(bytes(KeyCode::Char('c'), KeyModifiers::CONTROL), b"\x03");
        assert_eq!(bytes(KeyCode::Char('x'), KeyModifiers::ALT), b"\x1bx");
        assert_eq!(bytes(KeyCode::Char('A'), KeyModifiers::SHIFT), b"A");
        assert_eq!(bytes(KeyCode::Char('h'), KeyModifiers::NONE), b"h");
        assert_eq!(bytes(KeyCode::Enter, KeyModifiers::NONE), b"\r");
        assert_eq!(bytes(KeyCode::BackTab, KeyModifiers::SHIFT), b"\x1b[Z");
        assert_eq!(bytes(KeyCode::Up, KeyModifiers::NONE), b"\x1b[A");
        assert_eq!(bytes(KeyCode::F(5), KeyModifiers::NONE), b"\x1b[15~");
        assert_eq!(bytes(KeyCode::Backspace, KeyModifiers::NONE), b"\x7f");
    }

    #[test]
    fn releases_and_unmapped_keys_are_dropped() {
        let mut release = CtKey::new(KeyCode::Char('a'), KeyModifiers::NONE);
        release.kind = KeyEventKind::Release;
        assert!(key_event(release).is_none());
        assert!(key_event(CtKey::new(KeyCode::CapsLock, KeyModifiers::NONE)).is_none());
        assert!(key_event(CtKey::new(KeyCode::F(30), KeyModifiers::NONE)).is_none());
    }
}
