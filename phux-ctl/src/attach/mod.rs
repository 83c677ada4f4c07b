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
//!
//! The detach key then `[` shows the history view ([`crate::history`]) instead of the
//! program's screen: keys are the view's ([CLIENT.ATTACH.10]), output feeds the model only,
//! and leaving the view draws the live screen from the model ([CLIENT.ATTACH.11]).

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{EnableBracketedPaste, Event};
use phux_core::client::ClientNotice;
use phux_core::modes::TerminalModes;
use phux_proto::event::{AgentEvent, Lifecycle};
use phux_proto::frame::EventFrame;
use phux_proto::frame::{
    InputFocus, InputKey, InputPaste, TerminalResize, TerminalSize, ViewportInfo, ViewportResize,
};
use phux_proto::input::{FocusEvent, KeyEvent, PasteEvent, PasteTrust};
use phux_proto::{Command, CommandResult, CommandValue, Frame, TerminalId};
use phux_term::Terminal;

use crate::cli::{AttachOptions, DetachKey};
use crate::conn::{Session, Step};
use crate::history::{HistoryView, ViewKey};
use crate::keys::legacy_bytes;
use crate::tty_input::TtyInput;
use crate::{CtlError, EXIT_CONNECTION, EXIT_OK, program_exit_code};
use replies::{CursorQueries, ReplyInput, reply_events};
use switch::SwitchFilter;
use tty::{RESET_MODES, SharedReports, TtyGuard, spawn_resize_watch, spawn_tty_reader};

mod replies;
mod switch;
mod tty;

/// How long a press of the detach key waits for a second press, which sends the key to the
/// program instead of detaching (tmux's prefix-prefix habit): longer than a quick double
/// press, short enough that a detach does not feel slow.
const DETACH_AGAIN_WINDOW: Duration = Duration::from_millis(500);

/// After the detach key, the keys that open the history view ([CLIENT.ATTACH.10]): `[` as
/// tmux's copy mode, and PageUp, which also pages up at once (tmux's `prefix PageUp`).
const HISTORY_KEYS: [&[u8]; 2] = [b"[", b"\x1b[5~"];

/// Keys typed while the history view is being fetched wait for it, up to this many.
const MAX_WAITING_KEYS: usize = 256;

/// Written before the live screen is drawn again when the history view closes: the local
/// terminal as attach set it up (a fresh alternate screen, the program's modes off, attach's
/// bracketed paste on), so that the bootstrap, which is made for a fresh terminal, draws the
/// screen and modes exactly as the model has them.
const FRESH_SCREEN: &[u8] = b"\x1b[?1049l\x1b[?1049h\x1b[r\x1b[?6l\x1b[4l\x1b[?7h\x1b(B\x1b)B\x0f\
\x1b[0 q\x1b[H\x1b[2J";

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
    let sized_by_server = super::list::terminal_state(session, &id)?.is_some_and(|state| {
        state.get("size_policy").and_then(serde_json::Value::as_str) == Some("smallest")
    });
    let sizing = match (args.no_resize, sized_by_server) {
        (true, _) => Sizing::None,
        (false, true) => Sizing::Viewport,
        (false, false) => Sizing::Resize,
    };
    if let Some((cols, rows)) = tty_size {
        // Before attaching, so the bootstrap is drawn at the size this tty gives it.
        send_size(session, &id, sizing, cols, rows)?;
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
        switches: SwitchFilter::default(),
        reports,
        notice: None,
        notice_shown: false,
        screen: Screen::Live,
        sizing,
        tty: (cols, rows),
        out: std::io::stdout().lock(),
    };
    attached.set_block(&block);
    let outcome = attached.run(session);
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

/// How an attach sizes its terminal.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sizing {
    /// `--no-resize`: not at all; the terminal is shown at whatever size it has.
    None,
    /// The server sizes the terminal by its attached clients' screens ([SERVER.SIZE.1]):
    /// this tty's size is declared with VIEWPORT_RESIZE, and the terminal's size learnt from
    /// each bootstrap.
    Viewport,
    /// Any other server: TERMINAL_RESIZE to this tty's size (the last client to resize wins).
    Resize,
}

/// Tells the server this tty's size as `sizing` says.
fn send_size(
    session: &mut Session,
    id: &TerminalId,
    sizing: Sizing,
    cols: u16,
    rows: u16,
) -> Result<(), CtlError> {
    match sizing {
        Sizing::None => Ok(()),
        // [CLIENT.ATTACH.12]
        Sizing::Viewport => session.send(&Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols,
                rows,
                pixel_w: None,
                pixel_h: None,
            },
        })),
        Sizing::Resize => session.send(&Frame::TerminalResize(TerminalResize {
            terminal: id.clone(),
            size: TerminalSize { cols, rows },
        })),
    }
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
    /// The program's screen switches, kept off this tty ([CLIENT.ATTACH.13]).
    switches: SwitchFilter,
    /// The reports the program asked for, for the tty reader.
    reports: Arc<SharedReports>,
    /// The line saying why keys do not reach the program, while they do not.
    notice: Option<String>,
    /// Whether that line is drawn over the bottom row now.
    notice_shown: bool,
    /// The program's screen, or the history view over it.
    screen: Screen,
    sizing: Sizing,
    /// This tty's size: when it is not the terminal's (the model's), the screen is drawn
    /// from the model into its top-left corner and the rest marked ([CLIENT.ATTACH.12]).
    tty: (u16, u16),
    out: std::io::StdoutLock<'a>,
}

/// What this tty shows: the program's screen, or the history view ([CLIENT.ATTACH.10]).
#[derive(Debug)]
enum Screen {
    /// The program's output, drawn as it comes.
    Live,
    /// The history view was asked for (GET_SCREEN `request`, unanswered): keys typed
    /// meanwhile wait for it, and `page_up` says it opens a page up.
    Fetching {
        request: u32,
        page_up: bool,
        keys: Vec<KeyEvent>,
    },
    /// The history view is shown; output goes to the model only.
    History(HistoryView),
    /// The live screen is to be drawn again from the model (the view was left, or the
    /// program switched screens) once the output is between sequences.
    Returning,
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
        if !matches!(self.screen, Screen::Live) {
            // [CLIENT.ATTACH.11] Not shown now, not lost: the model keeps it, and the live
            // screen is drawn from the model when the view closes.
            self.model.advance(bytes);
            // This tty is drawn again from the model: it never sees a held sequence's start.
            self.switches.reset();
            self.back_to_live();
            return;
        }
        if self.tty != self.model.size() {
            // [CLIENT.ATTACH.12] Output for a terminal of another size would not land where
            // the program means it to on this tty: drawn from the model instead.
            self.model.advance(bytes);
            self.switches.reset();
            self.paint();
            return;
        }
        // [CLIENT.ATTACH.7] The notice comes off before the program's bytes, which may scroll
        // or overwrite the bottom row, and goes back on after them.
        self.hide_notice();
        let was_alternate = self.model.modes().alternate_screen;
        self.model.advance(bytes);
        // [CLIENT.ATTACH.13] This tty is on its alternate screen already (attach's own), where
        // a program's switch is ignored (tmux), clears, or leaves for the user's shell screen:
        // the switch itself never reaches it, everything else does (the modes and queries
        // written with it included).
        let bytes = self.switches.pass(bytes);
        // Before the tty sees the bytes that turn reports on.
        self.reports.store(&self.model.modes());
        self.cursor_queries.scan(&bytes);
        let _ = self.out.write_all(&bytes);
        if self.model.modes().alternate_screen != was_alternate {
            // [CLIENT.ATTACH.13] The screen switched to is drawn whole from the model.
            self.switches.reset();
            self.screen = Screen::Returning;
            self.back_to_live();
            let _ = self.out.flush();
            return;
        }
        self.show_notice();
        let _ = self.out.flush();
    }

    /// Draws the model into this tty when their sizes differ ([CLIENT.ATTACH.12]): the
    /// terminal in the top-left corner, the rest marked, the notice over its bottom row.
    fn paint(&mut self) {
        let (cols, rows) = self.tty;
        let _ = self.out.write_all(&self.model.paint_within(cols, rows));
        self.notice_shown = false;
        self.show_notice();
        let _ = self.out.flush();
    }

    /// Puts this tty back as attach set it up (a fresh alternate screen, the program's modes
    /// off, attach's bracketed paste on), for a bootstrap, which is made for a fresh terminal.
    fn fresh_screen(&mut self) {
        let _ = self.out.write_all(FRESH_SCREEN);
        let _ = self.out.write_all(RESET_MODES);
        let _ = crossterm::queue!(self.out, EnableBracketedPaste);
        self.reports.store(&TerminalModes::default());
        self.notice_shown = false;
    }

    /// Asks the server for the terminal's history and screen, for the history view; keys
    /// typed until it answers are the view's.
    fn open_history(&mut self, session: &mut Session, page_up: bool) -> Result<(), CtlError> {
        if matches!(self.screen, Screen::Fetching { .. } | Screen::History(_)) {
            return Ok(());
        }
        // [CLIENT.ATTACH.10] Every retained row: the server's history, not this tty's.
        let request = session.start_command(Command::GetScreen {
            terminal: self.id.clone(),
            request_scrollback: Some(0),
            cells: false,
        })?;
        self.hide_notice();
        let _ = self.out.flush();
        self.screen = Screen::Fetching {
            request,
            page_up,
            keys: Vec::new(),
        };
        Ok(())
    }

    /// The server answered a command: the history view's document, if it is the one asked
    /// for (an answer to a view already left is dropped).
    fn history_fetched(&mut self, request_id: u32, result: Option<CommandResult>) {
        let Screen::Fetching {
            request,
            page_up,
            keys,
        } = &mut self.screen
        else {
            return;
        };
        if *request != request_id {
            return;
        }
        let (page_up, keys) = (*page_up, std::mem::take(keys));
        let doc = match result {
            Some(CommandResult::OkWith(CommandValue::Json(json))) => {
                serde_json::from_str::<serde_json::Value>(&json).ok()
            }
            _ => None,
        };
        let Some(doc) = doc else {
            // Refused or lost: nothing to show, back to the program.
            self.leave_history();
            return;
        };
        let (cols, rows) = crossterm::terminal::size().unwrap_or_else(|_| self.model.size());
        let mut view = HistoryView::new(&self.id, &doc, cols, rows);
        if page_up {
            view.page_up();
        }
        // The view turns mouse and focus reports off in this tty.
        self.reports.store(&TerminalModes::default());
        for key in &keys {
            if view.key(key) == ViewKey::Leave {
                self.leave_history();
                return;
            }
        }
        let _ = self.out.write_all(&view.render());
        let _ = self.out.flush();
        self.screen = Screen::History(view);
    }

    /// A key while the history view is open or being fetched: the view's, never the program's.
    fn history_key(&mut self, key: &KeyEvent) {
        match &mut self.screen {
            Screen::Fetching { keys, .. } => {
                if matches!(legacy_bytes(key).as_slice(), b"q" | b"\x1b" | b"\x03") {
                    // Left before the server answered (or if it never does).
                    self.leave_history();
                } else if keys.len() < MAX_WAITING_KEYS {
                    keys.push(key.clone());
                }
            }
            Screen::History(view) => match view.key(key) {
                ViewKey::Stay => {
                    let _ = self.out.write_all(&view.render());
                    let _ = self.out.flush();
                }
                ViewKey::Leave => self.leave_history(),
            },
            Screen::Live | Screen::Returning => {}
        }
    }

    fn leave_history(&mut self) {
        self.screen = Screen::Returning;
        self.back_to_live();
    }

    /// Draws the live screen again once the view is closed, as soon as the program's output
    /// is between sequences (so its next bytes continue on a terminal that saw the whole
    /// sequence, drawn by the bootstrap).
    fn back_to_live(&mut self) {
        if matches!(self.screen, Screen::Returning) && self.model.between_sequences() {
            // [CLIENT.ATTACH.11] The live screen exactly as the server has it: the model fed
            // every byte of output, the view's meanwhile included.
            self.screen = Screen::Live;
            self.fresh_screen();
            if self.tty != self.model.size() {
                self.paint();
                return;
            }
            let _ = self.out.write_all(&self.model.bootstrap());
            self.reports.store(&self.model.modes());
            self.show_notice();
            let _ = self.out.flush();
        }
    }

    /// Takes in what the server says about the terminal's lease and lifecycle.
    fn set_block(&mut self, block: &InputBlock) {
        let notice = block.notice(&self.id);
        if notice != self.notice {
            self.hide_notice();
            self.notice = notice;
            if matches!(self.screen, Screen::Live) {
                self.show_notice();
                let _ = self.out.flush();
            }
        }
    }

    /// Draws the notice, if there is one and the program's output is not inside a sequence
    /// (else after the output that ends it).
    fn show_notice(&mut self) {
        if let Some(text) = &self.notice
            && !self.notice_shown
            && matches!(self.screen, Screen::Live)
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

    fn run(&mut self, session: &mut Session) -> Result<End, CtlError> {
        let id = self.id.clone();
        loop {
            match session.step(self.detach_pending)? {
                Step::Deadline if self.detach_pending.is_some() => return Ok(End::Detached),
                Step::Notice(ClientNotice::Frame(Frame::BootstrapBegin(b))) if b.terminal == id => {
                    // [CLIENT.ATTACH.12] The terminal's size, whoever decided it.
                    self.model = Terminal::new(b.cols, b.rows, 0);
                    if matches!(self.screen, Screen::Live) {
                        // A bootstrap is made for a fresh terminal; this one shows another
                        // bootstrap's screen (a resize, or one that fell behind).
                        self.fresh_screen();
                    }
                    // The bootstrap clears the screen, the notice with it.
                    self.notice_shown = false;
                }
                Step::Notice(ClientNotice::Frame(Frame::Event(EventFrame {
                    terminal: Some(t),
                    event: AgentEvent::TerminalControl(control),
                }))) if t == id => {
                    self.set_block(&InputBlock {
                        holder: control.input_holder.map(|c| u64::from(c.0)),
                        frozen: control.lifecycle == Lifecycle::Frozen,
                    });
                }
                Step::Notice(ClientNotice::Frame(Frame::BootstrapChunk(c))) if c.terminal == id => {
                    self.draw(&c.payload);
                }
                Step::Notice(ClientNotice::Frame(Frame::TerminalOutput(o))) if o.terminal == id => {
                    self.draw(&o.bytes);
                }
                Step::Notice(ClientNotice::Frame(Frame::TerminalClosed(c))) if c.terminal == id => {
                    return Ok(End::Closed(c.exit_status));
                }
                Step::TtyInput(inputs) => {
                    for input in inputs {
                        if self.input(session, input)? {
                            return Ok(End::Detached);
                        }
                    }
                }
                Step::Notice(ClientNotice::CommandResult { request_id, result }) => {
                    self.history_fetched(request_id, Some(result));
                }
                Step::Notice(ClientNotice::CommandAbandoned { request_id }) => {
                    self.history_fetched(request_id, None);
                }
                Step::Tty(Event::Resize(cols, rows)) => {
                    self.tty = (cols, rows);
                    if let Screen::History(view) = &mut self.screen {
                        view.resize(cols, rows);
                        let _ = self.out.write_all(&view.render());
                        let _ = self.out.flush();
                    }
                    if self.sizing == Sizing::Resize {
                        // The server takes this size at once, and says nothing: the model
                        // takes it too.
                        self.model.resize(cols, rows);
                    }
                    send_size(session, &id, self.sizing, cols, rows)?;
                    if matches!(self.screen, Screen::Live) {
                        if self.tty == self.model.size() {
                            // The tty resized its screen, the notice's row with it: drawn
                            // again on the new bottom row.
                            self.notice_shown = false;
                            self.show_notice();
                            let _ = self.out.flush();
                        } else {
                            self.paint();
                        }
                    }
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
        let viewing = matches!(self.screen, Screen::Fetching { .. } | Screen::History(_));
        // [CLIENT.ATTACH.9]
        if self.detach_pending.take().is_some() {
            if let TtyInput::Key(event) = &input {
                if is_detach(event) {
                    // [CLIENT.ATTACH.10] Nothing typed in the history view reaches the program.
                    if !viewing {
                        session.send(&Frame::InputKey(InputKey {
                            terminal,
                            event: event.clone(),
                        }))?;
                    }
                    return Ok(false);
                }
                let bytes = legacy_bytes(event);
                if HISTORY_KEYS.contains(&bytes.as_slice()) {
                    self.open_history(session, bytes != b"[")?;
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        if viewing {
            match &input {
                TtyInput::Key(event) if is_detach(event) => {
                    self.detach_pending = Some(std::time::Instant::now() + DETACH_AGAIN_WINDOW);
                }
                // [CLIENT.ATTACH.10] Keys are the view's; pastes and focus reports are
                // nobody's. Replies still answer the program's queries, below.
                TtyInput::Key(event) => self.history_key(event),
                TtyInput::CursorReport { .. } => {
                    // A report counts its query off; F3 is a key, and the view has no use
                    // for it.
                    self.cursor_queries.answered();
                }
                TtyInput::OtherReply(bytes) => self.pass_reply(session, bytes)?,
                TtyInput::Paste(_)
                | TtyInput::Focus(_)
                | TtyInput::AnsweredReply(_)
                | TtyInput::Ignored => {}
            }
            return Ok(false);
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
            TtyInput::OtherReply(bytes) => self.pass_reply(session, &bytes)?,
            // [CLIENT.ATTACH.2] The server answered the program already: one reply, not two.
            TtyInput::AnsweredReply(_) | TtyInput::Ignored => {}
        }
        Ok(false)
    }

    /// A reply of this tty that the server does not answer, to the program.
    fn pass_reply(&self, session: &mut Session, bytes: &[u8]) -> Result<(), CtlError> {
        let terminal = self.id.clone();
        // [CLIENT.ATTACH.3] Exactly these bytes, or nothing.
        match reply_events(bytes, &self.model.modes()) {
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
        Ok(())
    }
}
