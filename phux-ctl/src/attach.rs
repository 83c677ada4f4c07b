//! `phuxctl attach`: this tty, in raw mode, attached to one terminal (like `dtach -a`).
//!
//! What the tty sends is decoded by [`super::tty_input`]: keys become INPUT_KEY events (the
//! server encodes them for the program's current modes), pastes INPUT_PASTE, focus reports
//! INPUT_FOCUS, and the tty's replies to the program's queries are never keys
//! ([CLIENT.ATTACH.1]). Resizes (SIGWINCH) become TERMINAL_RESIZE. The bootstrap and live
//! output are written to the tty as they arrive, and fed to a local model of the terminal
//! (`phux_term`) that knows the program's input modes. The detach key restores the tty and
//! returns, leaving the terminal running; the program's end returns its exit status.
//!
//! While keys cannot reach the program (another client holds the terminal's input lease, so
//! the server drops them; or the terminal is frozen, so they wait unread) a line says so at
//! the right end of the bottom row, drawn over the program's screen and taken away by drawing
//! that row again from the model once input flows again ([CLIENT.ATTACH.7]). The terminal's
//! state at the start comes from GET_TERMINAL_STATE, its changes from `terminal_control`
//! events.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, Event};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use phux_core::client::ClientEvent;
use phux_core::encoder::{encode_key, encode_paste};
use phux_core::modes::{MouseTracking, TerminalModes};
use phux_proto::event::{AgentEvent, Lifecycle};
use phux_proto::frame::EventFrame;
use phux_proto::frame::{InputFocus, InputKey, InputPaste, TerminalResize, TerminalSize};
use phux_proto::input::{FocusEvent, KeyEvent, PasteEvent, PasteTrust};
use phux_proto::{Command, Frame, TerminalId};
use phux_term::Terminal;

use super::cli::{AttachOptions, DetachKey};
use super::conn::{Incoming, Session, Step};
use super::keys::legacy_bytes;
use super::tty_input::{Decoder, Incomplete, Reports, TtyInput};
use super::{CtlError, EXIT_CONNECTION, EXIT_OK, program_exit_code};

/// Modes a program may have turned on in this tty through its output, turned off again on
/// detach: cursor keys, keypad, mouse tracking and encodings, focus reports, bracketed paste,
/// the kitty keyboard flags; then the cursor shown and the pen reset.
const RESET_MODES: &[u8] = b"\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\
\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b[=0;1u\x1b[?25h\x1b[0m";

/// How long to wait for the rest of an escape sequence a read cut short (a terminal writes
/// each sequence whole, so this only separates a typed Escape from what follows it).
const SEQUENCE_WAIT: Duration = Duration::from_millis(50);

/// How long to wait for the rest of a string reply or a paste that a read cut short.
const STRING_WAIT: Duration = Duration::from_millis(500);

/// How long a press of the detach key waits for a second press, which sends the key to the
/// program instead of detaching (tmux's prefix-prefix habit): longer than a quick double
/// press, short enough that a detach does not feel slow.
const DETACH_AGAIN_WINDOW: Duration = Duration::from_millis(500);

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

/// Counts the cursor position queries (`CSI 6 n`, `CSI ? 6 n`) in the program's output, so
/// that a report `CSI 1 ; m R` is known to answer one rather than to be F3 with modifiers.
#[derive(Debug, Default)]
struct CursorQueries {
    /// The last bytes of the output, in case a query is cut between two chunks.
    tail: Vec<u8>,
    outstanding: u32,
}

impl CursorQueries {
    const QUERIES: [&'static [u8]; 2] = [b"\x1b[6n", b"\x1b[?6n"];
    /// Shorter than the shortest query, so no query lies wholly inside it.
    const TAIL: usize = 4;

    fn scan(&mut self, bytes: &[u8]) {
        let mut window = std::mem::take(&mut self.tail);
        let old = window.len();
        window.extend_from_slice(bytes);
        for query in Self::QUERIES {
            let found = window
                .windows(query.len())
                .enumerate()
                // A match ending in the old tail was counted with the chunk before.
                .filter(|(at, w)| *w == query && at + query.len() > old)
                .count();
            self.outstanding = self
                .outstanding
                .saturating_add(u32::try_from(found).unwrap_or(u32::MAX));
        }
        self.tail = window[window.len().saturating_sub(Self::TAIL)..].to_vec();
    }

    /// A report arrived: whether it answers a query (and is then counted off).
    fn answered(&mut self) -> bool {
        if self.outstanding > 0 {
            self.outstanding -= 1;
            true
        } else {
            false
        }
    }
}

/// The input events that make the program read exactly `reply` under `modes`, if any: a
/// trusted paste when that is written unchanged (bracketed paste off), else the keys that
/// type it byte for byte (legacy key encoding). `None` when neither is exact.
fn reply_events(reply: &[u8], modes: &TerminalModes) -> Option<ReplyInput> {
    let paste = PasteEvent {
        trust: PasteTrust::Trusted,
        data: reply.to_vec(),
    };
    let mut out = Vec::new();
    if encode_paste(&paste, modes, &mut out).is_ok() && out == reply {
        return Some(ReplyInput::Paste(paste));
    }
    // Each byte as the key that types it, with no reading of sequences.
    let mut keys = Vec::new();
    let mut decoder = Decoder::new();
    for &byte in reply {
        match decoder
            .feed(&[byte])
            .into_iter()
            .chain(decoder.flush())
            .next()
        {
            Some(TtyInput::Key(key)) => keys.push(key),
            _ => return None,
        }
    }
    out.clear();
    for key in &keys {
        encode_key(key, modes, &mut out);
    }
    (out == reply).then_some(ReplyInput::Keys(keys))
}

/// How a reply the server does not answer reaches the program.
#[derive(Debug, PartialEq, Eq)]
enum ReplyInput {
    Paste(PasteEvent),
    Keys(Vec<KeyEvent>),
}

/// The reports the program asked this tty for, shared with the reader thread: the attach
/// loop stores them after drawing output and before writing it, so bytes read after the tty
/// could have started (or stopped) sending reports are decoded knowing it.
#[derive(Debug, Default)]
struct SharedReports(AtomicU8);

impl SharedReports {
    const MOUSE: u8 = 1;
    const FOCUS: u8 = 2;

    fn store(&self, modes: &TerminalModes) {
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
fn spawn_tty_reader(waker: std::sync::mpsc::Sender<Incoming>, reports: Arc<SharedReports>) {
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
fn spawn_resize_watch(waker: std::sync::mpsc::Sender<Incoming>) -> Result<(), CtlError> {
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

/// What ended an attach.
enum End {
    Detached,
    Closed(Option<i32>),
    ConnectionLost,
}

/// Runs an interactive attach until the detach key, the terminal's exit or the connection's
/// end.
pub fn attach(
    session: &mut Session,
    id: &TerminalId,
    args: &AttachOptions,
) -> Result<u8, CtlError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CtlError::Local(
            "attach needs a terminal on stdin and stdout".to_owned(),
        ));
    }
    let id = id.clone();
    let detach = match &args.detach_key {
        DetachKey::None => None,
        DetachKey::Key(key) => Some(legacy_bytes(&key.0)),
    };
    if detach.as_ref().is_some_and(Vec::is_empty) {
        return Err(CtlError::Local(
            "the detach key must be one that sends something (try C-\\ or C-])".to_owned(),
        ));
    }
    let tty_size = crossterm::terminal::size().ok();
    if !args.no_resize
        && let Some((cols, rows)) = tty_size
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
    // Events after the ATTACH say what changes; this says how things are now.
    let block = super::list::terminal_state(session, &id)?
        .map(|state| InputBlock {
            holder: state
                .get("input_holder")
                .and_then(serde_json::Value::as_u64),
            frozen: state.get("lifecycle").and_then(serde_json::Value::as_str) == Some("frozen"),
        })
        .unwrap_or_default();

    let guard = TtyGuard::enter()?;
    spawn_resize_watch(session.waker())?;
    let reports = Arc::new(SharedReports::default());
    spawn_tty_reader(session.waker(), Arc::clone(&reports));

    let (cols, rows) = tty_size.unwrap_or((80, 24));
    let mut attached = Attached {
        id: id.clone(),
        detach,
        detach_pending: None,
        model: Terminal::new(cols, rows, 0),
        cursor_queries: CursorQueries::default(),
        reports,
        notice: None,
        notice_shown: false,
        out: std::io::stdout().lock(),
    };
    attached.set_block(&block);
    let outcome = attached.run(session, args);
    let model = attached.model;
    drop(attached.out);
    drop(guard);
    let (code, note) = match outcome? {
        End::Detached => (EXIT_OK, format!("[detached from {id}]")),
        End::Closed(status) => {
            // [CLIENT.ATTACH.6] The program's last screen stays in view.
            let mut out = std::io::stdout().lock();
            for line in final_lines(&model) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
            match status {
                // [CLIENT.ATTACH.5] The program's exit status is attach's.
                Some(s) => (
                    program_exit_code(status),
                    format!("[{id} exited with status {s}]"),
                ),
                None => (
                    program_exit_code(status),
                    format!("[{id} ended without an exit status]"),
                ),
            }
        }
        End::ConnectionLost => (
            EXIT_CONNECTION,
            "[the server closed the connection]".to_owned(),
        ),
    };
    eprintln!("{note}");
    Ok(code)
}

/// The model's screen as text, without the empty rows below the last written one.
fn final_lines(model: &Terminal) -> Vec<String> {
    let doc: serde_json::Value =
        serde_json::from_str(&model.screen_json(1, None, false)).unwrap_or_default();
    let mut lines: Vec<String> = doc
        .get("lines")
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .map(|l| l.as_str().unwrap_or_default().trim_end().to_owned())
                .collect()
        })
        .unwrap_or_default();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// One attach's state.
struct Attached<'a> {
    id: TerminalId,
    /// The detach key's bytes (`None`: `--detach-key none`).
    detach: Option<Vec<u8>>,
    /// When a first press of the detach key detaches unless pressed again before then.
    detach_pending: Option<std::time::Instant>,
    /// The terminal as this tty shows it: its modes decide how a reply is passed on.
    model: Terminal,
    cursor_queries: CursorQueries,
    /// The reports the program asked for, for the tty reader.
    reports: Arc<SharedReports>,
    /// The line saying why keys do not reach the program, while they do not.
    notice: Option<String>,
    /// Whether that line is drawn over the bottom row now.
    notice_shown: bool,
    out: std::io::StdoutLock<'a>,
}

/// What keeps keys typed here from the program, as the server last said.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct InputBlock {
    /// The client holding the terminal's input lease (this one never takes it): the server
    /// drops every key from here ([LEASE.GATE.1]).
    holder: Option<u64>,
    /// The terminal is frozen: keys are written but the program reads none until it resumes.
    frozen: bool,
}

impl InputBlock {
    /// The line to show, `None` while keys flow.
    fn notice(self, id: &TerminalId) -> Option<String> {
        let held = self.holder.map(|client| {
            format!("client {client} holds {id}'s input lease: keys typed here are dropped")
        });
        let frozen = self
            .frozen
            .then(|| format!("{id} is frozen: keys wait until it is resumed"));
        match (held, frozen) {
            (None, None) => None,
            (Some(text), None) | (None, Some(text)) => Some(format!(" {text} ")),
            (Some(held), Some(_)) => Some(format!(" {held}; it is frozen too ")),
        }
    }
}

impl Attached<'_> {
    fn draw(&mut self, bytes: &[u8]) {
        // [CLIENT.ATTACH.7] The notice comes off before the program's bytes, which may scroll
        // or overwrite the bottom row, and goes back on after them.
        self.hide_notice();
        self.model.advance(bytes);
        // Before the tty sees the bytes that turn reports on.
        self.reports.store(&self.model.modes());
        self.cursor_queries.scan(bytes);
        let _ = self.out.write_all(bytes);
        self.show_notice();
        let _ = self.out.flush();
    }

    /// Takes in what the server says about the terminal's lease and lifecycle.
    fn set_block(&mut self, block: &InputBlock) {
        let notice = block.notice(&self.id);
        if notice != self.notice {
            self.hide_notice();
            self.notice = notice;
            self.show_notice();
            let _ = self.out.flush();
        }
    }

    /// Draws the notice, if there is one and the program's output is not inside a sequence
    /// (else after the output that ends it).
    fn show_notice(&mut self) {
        if let Some(text) = &self.notice
            && !self.notice_shown
            && self.model.between_sequences()
        {
            let _ = self.out.write_all(&self.model.overlay_bottom_row(text));
            self.notice_shown = true;
        }
    }

    /// Draws the bottom row as the program has it, over the notice.
    fn hide_notice(&mut self) {
        if self.notice_shown {
            // Drawn only between sequences, and no output since: still between them.
            let _ = self.out.write_all(&self.model.repaint_bottom_row());
            self.notice_shown = false;
        }
    }

    fn run(&mut self, session: &mut Session, args: &AttachOptions) -> Result<End, CtlError> {
        let id = self.id.clone();
        loop {
            match session.step(self.detach_pending)? {
                Step::Deadline if self.detach_pending.is_some() => return Ok(End::Detached),
                Step::Event(ClientEvent::Frame(Frame::BootstrapBegin(b))) if b.terminal == id => {
                    self.model = Terminal::new(b.cols, b.rows, 0);
                    // The bootstrap clears the screen, the notice with it.
                    self.notice_shown = false;
                }
                Step::Event(ClientEvent::Frame(Frame::Event(EventFrame {
                    terminal: Some(t),
                    event: AgentEvent::TerminalControl(control),
                }))) if t == id => {
                    self.set_block(&InputBlock {
                        holder: control.input_holder.map(|c| u64::from(c.0)),
                        frozen: control.lifecycle == Lifecycle::Frozen,
                    });
                }
                Step::Event(ClientEvent::Frame(Frame::BootstrapChunk(c))) if c.terminal == id => {
                    self.draw(&c.payload);
                }
                Step::Event(ClientEvent::Frame(Frame::TerminalOutput(o))) if o.terminal == id => {
                    self.draw(&o.bytes);
                }
                Step::Event(ClientEvent::Frame(Frame::TerminalClosed(c))) if c.terminal == id => {
                    return Ok(End::Closed(c.exit_status));
                }
                Step::TtyInput(inputs) => {
                    for input in inputs {
                        if self.input(session, input)? {
                            return Ok(End::Detached);
                        }
                    }
                }
                Step::Tty(Event::Resize(cols, rows)) if !args.no_resize => {
                    self.model.resize(cols, rows);
                    // The tty resized its screen, the notice's row with it: drawn again on
                    // the new bottom row.
                    self.notice_shown = false;
                    self.show_notice();
                    let _ = self.out.flush();
                    session.send(&Frame::TerminalResize(TerminalResize {
                        terminal: id.clone(),
                        size: TerminalSize { cols, rows },
                    }))?;
                }
                Step::TtyFailed(e) => {
                    return Err(CtlError::Local(format!("reading the tty: {e}")));
                }
                Step::Closed => return Ok(End::ConnectionLost),
                _ => {}
            }
        }
    }

    /// Carries out one input; true when it is time to detach: the detach key pressed once
    /// and followed by another input (a second press within [`DETACH_AGAIN_WINDOW`] sends
    /// the key itself, once).
    fn input(&mut self, session: &mut Session, input: TtyInput) -> Result<bool, CtlError> {
        let terminal = self.id.clone();
        let is_detach = |event: &KeyEvent| {
            self.detach
                .as_ref()
                .is_some_and(|d| legacy_bytes(event) == *d)
        };
        // [CLIENT.ATTACH.9]
        if self.detach_pending.take().is_some() {
            if let TtyInput::Key(event) = &input
                && is_detach(event)
            {
                session.send(&Frame::InputKey(InputKey {
                    terminal,
                    event: event.clone(),
                }))?;
                return Ok(false);
            }
            return Ok(true);
        }
        match input {
            TtyInput::Key(event) => {
                if is_detach(&event) {
                    self.detach_pending = Some(std::time::Instant::now() + DETACH_AGAIN_WINDOW);
                    return Ok(false);
                }
                session.send(&Frame::InputKey(InputKey { terminal, event }))?;
            }
            TtyInput::Paste(data) => {
                session.send(&Frame::InputPaste(InputPaste {
                    terminal,
                    event: PasteEvent {
                        trust: PasteTrust::Trusted,
                        data,
                    },
                }))?;
            }
            TtyInput::Focus(gained) => {
                session.send(&Frame::InputFocus(InputFocus {
                    terminal,
                    event: if gained {
                        FocusEvent::Gained
                    } else {
                        FocusEvent::Lost
                    },
                }))?;
            }
            TtyInput::CursorReport { f3 } => {
                // [CLIENT.ATTACH.2] A report that answers a query is the server's to give.
                if !self.cursor_queries.answered()
                    && let Some(event) = f3
                {
                    session.send(&Frame::InputKey(InputKey { terminal, event }))?;
                }
            }
            TtyInput::OtherReply(bytes) => {
                // [CLIENT.ATTACH.3] Exactly these bytes, or nothing.
                match reply_events(&bytes, &self.model.modes()) {
                    Some(ReplyInput::Paste(event)) => {
                        session.send(&Frame::InputPaste(InputPaste { terminal, event }))?;
                    }
                    Some(ReplyInput::Keys(keys)) => {
                        for event in keys {
                            session.send(&Frame::InputKey(InputKey {
                                terminal: terminal.clone(),
                                event,
                            }))?;
                        }
                    }
                    None => {}
                }
            }
            // [CLIENT.ATTACH.2] The server answered the program already: one reply, not two.
            TtyInput::AnsweredReply(_) | TtyInput::Ignored => {}
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_queries_are_counted_across_chunks_once() {
        let mut q = CursorQueries::default();
        q.scan(b"abc\x1b[6nxyz\x1b[?6");
        q.scan(b"n\x1b[6n");
        q.scan(b"\x1b[");
        q.scan(b"6n");
        assert_eq!(q.outstanding, 4);
        assert!((0..4).all(|_| q.answered()));
        assert!(!q.answered());
    }

    #[test]
    fn an_unanswered_reply_is_passed_exactly_or_not_at_all() {
        // [CLIENT.ATTACH.3]
        let reply = b"\x1bP1+r544e=787465726d\x1b\\";
        let plain = TerminalModes::default();
        assert!(matches!(
            reply_events(reply, &plain),
            Some(ReplyInput::Paste(p)) if p.data == reply
        ));
        // Under bracketed paste a paste would be wrapped: the keys that type it instead.
        let bracketed = TerminalModes {
            bracketed_paste: true,
            ..TerminalModes::default()
        };
        let Some(ReplyInput::Keys(keys)) = reply_events(reply, &bracketed) else {
            panic!("not sent as keys");
        };
        let mut typed = Vec::new();
        for key in &keys {
            encode_key(key, &bracketed, &mut typed);
        }
        assert_eq!(typed, reply);
        // Under the kitty keyboard protocol ESC is not one byte any more: nothing is sent.
        let kitty = TerminalModes {
            bracketed_paste: true,
            kitty_flags: phux_core::modes::KittyFlags(phux_core::modes::KittyFlags::DISAMBIGUATE),
            ..TerminalModes::default()
        };
        assert_eq!(reply_events(reply, &kitty), None);
        // A reply with a line feed is not written unchanged by a paste without bracketing.
        assert!(!matches!(
            reply_events(b"\x1b]99;a\nb\x07", &plain),
            Some(ReplyInput::Paste(_))
        ));
    }
}
