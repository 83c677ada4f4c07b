//! The arguments of the verbs that take more than a terminal id, and how clap reads them.

use std::path::PathBuf;

use clap::{ArgMatches, Args, Subcommand, ValueEnum};
use phux_proto::{OperationId, TerminalId};

use super::values::{parse_env, parse_name, parse_operation, parse_target, parse_terminal};
use crate::keys::{KeyNameParser, KeySpec, parse_key};
use crate::names::Target;

/// `spawn`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct SpawnArgs {
    /// Name the terminal, so that every verb reaches it by NAME (unique on its server).
    #[arg(short = 's', long = "named", value_name = "NAME", value_parser = parse_name)]
    pub named: Option<String>,
    /// Columns (default 80, the protocol's default width). A server limits the size
    /// (phux-mio-server to 1024 columns and 512 rows): when the terminal it made differs from
    /// the size asked for, spawn says so on stderr (the id is still printed, exit 0).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub cols: Option<u16>,
    /// Rows (default 24, the protocol's default height; limited as --cols is).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub rows: Option<u16>,
    /// Working directory for the program (relative to this shell's directory). Default: this
    /// shell's directory, as dtach and abduco do. With --ssh or --exec the default is the
    /// server's, and DIR is a directory on the server's host: absolute, and not checked here.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Set a variable (repeatable). The program gets this shell's environment with these
    /// changes. With --ssh or --exec this host's environment is never sent: the program keeps
    /// the server's environment and gets these variables through `env -- K=V CMD` (without
    /// CMD, the server host's $SHELL); --clear-env sends exactly the --env variables.
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (plus --env and TERM).
    #[arg(long)]
    pub clear_env: bool,
    /// Run in the server's directory and environment instead of this shell's (what `tmux new`
    /// does for the environment).
    #[arg(long, conflicts_with_all = ["cwd", "env", "clear_env"])]
    pub server_env: bool,
    /// The TERM for the program (default: a TERM given with --env, else xterm-256color: this
    /// shell's TERM names the outer terminal, not the one the server models).
    #[arg(long, value_name = "TERM")]
    pub term: Option<String>,
    /// The program and its arguments (default: the server's shell).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `send`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// The terminal (an id or a name).
    #[arg(value_parser = parse_target)]
    pub id: Target,
    /// Text to type (words next to each other are joined by single spaces).
    pub text: Vec<String>,
    /// A key to press (repeatable; in command-line order with the text): Enter, Tab, Esc, Space,
    /// Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1-F24,
    /// a character, or a W3C key code (KeyA, ArrowUp); prefixed by C- (Ctrl), M- (Alt),
    /// S- (Shift) or s- (Super), as in C-c, M-x, S-Tab.
    #[arg(
        long = "key",
        value_name = "NAME",
        value_parser = KeyNameParser,
        hide_possible_values = true
    )]
    pub keys: Vec<KeySpec>,
    /// The text and keys in command-line order (filled by [`super::parse`]; when empty, the text
    /// goes first, then the keys).
    #[arg(skip)]
    pub parts: Vec<SendPart>,
    /// Type TEXT exactly as given, escape sequences and control characters included (by
    /// default they become spaces, as in `paste`: press keys with --key instead).
    #[arg(long)]
    pub verbatim: bool,
    /// Print the verdict as one JSON object (see `paste --json`).
    #[arg(long)]
    pub json: bool,
}

/// One part of `send`, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendPart {
    /// Text to type (adjacent TEXT words joined by spaces).
    Text(String),
    /// A key to press.
    Key(KeySpec),
}

impl SendArgs {
    /// The parts in command-line order, from the positions clap recorded.
    pub(super) fn order(&mut self, matches: &ArgMatches) {
        let text_at = matches.indices_of("text").map(Iterator::collect::<Vec<_>>);
        let key_at = matches.indices_of("keys").map(Iterator::collect::<Vec<_>>);
        let mut tagged: Vec<(usize, SendPart)> = Vec::new();
        for (at, word) in text_at.unwrap_or_default().into_iter().zip(&self.text) {
            tagged.push((at, SendPart::Text(word.clone())));
        }
        for (at, key) in key_at.unwrap_or_default().into_iter().zip(&self.keys) {
            tagged.push((at, SendPart::Key(key.clone())));
        }
        tagged.sort_by_key(|(at, _)| *at);
        self.parts.clear();
        for (_, part) in tagged {
            match (self.parts.last_mut(), part) {
                (Some(SendPart::Text(text)), SendPart::Text(word)) => {
                    text.push(' ');
                    text.push_str(&word);
                }
                (_, part) => self.parts.push(part),
            }
        }
    }

    /// The parts to send: [`SendArgs::parts`], or the text then the keys when it is empty.
    pub fn ordered_parts(&self) -> Vec<SendPart> {
        if !self.parts.is_empty() {
            return self.parts.clone();
        }
        let mut parts = Vec::new();
        if !self.text.is_empty() {
            parts.push(SendPart::Text(self.text.join(" ")));
        }
        parts.extend(self.keys.iter().cloned().map(SendPart::Key));
        parts
    }
}

/// `paste`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct PasteArgs {
    /// The terminal (an id or a name).
    #[arg(value_parser = parse_target)]
    pub id: Target,
    /// Read the paste from this file instead of stdin.
    #[arg(long, value_name = "F")]
    pub file: Option<PathBuf>,
    /// Also have the server check it and refuse it, writing nothing, unless it is safe where
    /// it lands: phux-mio-server refuses invalid UTF-8, an end-of-paste marker, and a line end
    /// unless the program asked for bracketed paste (so a multi-line paste goes in as one
    /// paste or not at all); the phux reference refuses any line end.
    #[arg(long, conflicts_with = "verbatim")]
    pub untrusted: bool,
    /// Send the bytes exactly as read, escape sequences and control characters included: for
    /// input you made yourself. Such data can end the program's bracketed paste and type
    /// commands. phux-mio-server still writes a start or end marker inside a bracketed paste
    /// with a space for its ESC; other servers may blank control characters themselves.
    #[arg(long)]
    pub verbatim: bool,
    /// Print the verdict as one JSON object: `verdict` (delivered, refused, unknown,
    /// not_sent or pending), `exit` (the exit status) and `parts`, each with `part`, `of`,
    /// `operation`, `verdict`, `text` (the line phuxctl prints) and, when refused, `code`
    /// and `message`.
    #[arg(long)]
    pub json: bool,
}

/// `screen`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct ScreenArgs {
    /// The terminal (an id or a name).
    #[arg(value_parser = parse_target)]
    pub id: Target,
    /// Print the server's JSON document (GET_SCREEN) instead of the lines.
    #[arg(long)]
    pub json: bool,
    /// Also print up to N history rows above the screen (0: all retained).
    #[arg(long, value_name = "N")]
    pub scrollback: Option<u32>,
}

/// `lease`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct LeaseArgs {
    /// Acquire or release.
    pub action: LeaseAction,
    /// The terminal (an id or a name).
    #[arg(value_parser = parse_target)]
    pub id: Target,
    /// Take the lease even if another client holds it.
    #[arg(long)]
    pub seize: bool,
    /// The lease's lifetime in milliseconds (default 0: until released).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub ttl: u32,
    /// After acquiring, print `held` and keep the lease (and the connection) until stdin
    /// ends. A lease belongs to the connection that acquired it and ends with it, so without
    /// --hold the lease ends as this command exits (it says so).
    #[arg(long)]
    pub hold: bool,
}

/// `lease acquire` or `lease release`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LeaseAction {
    /// ACQUIRE_INPUT.
    Acquire,
    /// RELEASE_INPUT.
    Release,
}

/// `signal`'s arguments: a signal and a terminal, in either order.
#[derive(Debug, Clone, Args)]
pub struct SignalArgs {
    /// The signal: INT, STOP, CONT, TERM or KILL (any case, SIG prefix optional), or
    /// interrupt, freeze, resume, terminate, kill. It may follow the id instead.
    #[arg(value_name = "SIGNAL", value_parser = parse_signal_word)]
    pub first: SignalWord,
    /// The terminal.
    #[arg(value_name = "ID", value_parser = parse_signal_word)]
    pub second: SignalWord,
}

impl SignalArgs {
    /// The signal and the terminal, whichever order they came in; `None` unless there is
    /// exactly one of each.
    pub fn resolve(&self) -> Option<(SignalName, &Target)> {
        match (&self.first, &self.second) {
            (SignalWord::Signal(s), SignalWord::Terminal(id))
            | (SignalWord::Terminal(id), SignalWord::Signal(s)) => Some((*s, id)),
            _ => None,
        }
    }
}

/// One word of `signal`: a signal's name or a terminal id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalWord {
    /// A signal the protocol carries.
    Signal(SignalName),
    /// A terminal (an id or a name).
    Terminal(Target),
}

/// Signals a user may name that SIGNAL_TERMINAL cannot carry (named in the refusal).
const UNCARRIED_SIGNALS: &[&str] = &[
    "HUP", "QUIT", "ILL", "TRAP", "ABRT", "IOT", "BUS", "FPE", "USR1", "SEGV", "USR2", "PIPE",
    "ALRM", "CHLD", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",
    "POLL", "PWR", "SYS",
];

/// Parses a word of `signal`: a signal name (`INT`, `SIGINT`, `int`, `interrupt`, ...) or a
/// terminal id; a signal the protocol cannot carry is refused by name.
fn parse_signal_word(text: &str) -> Result<SignalWord, String> {
    let upper = text.to_ascii_uppercase();
    let bare = upper.strip_prefix("SIG").unwrap_or(&upper);
    let signal = match bare {
        "INT" | "INTERRUPT" => Some(SignalName::Interrupt),
        "STOP" | "FREEZE" => Some(SignalName::Freeze),
        "CONT" | "RESUME" => Some(SignalName::Resume),
        "TERM" | "TERMINATE" => Some(SignalName::Terminate),
        "KILL" => Some(SignalName::Kill),
        _ => None,
    };
    if let Some(signal) = signal {
        return Ok(SignalWord::Signal(signal));
    }
    if UNCARRIED_SIGNALS.contains(&bare) {
        return Err(format!(
            "SIG{bare} cannot be sent: the protocol's SIGNAL_TERMINAL carries only INT, STOP, \
             CONT, TERM and KILL"
        ));
    }
    parse_target(text).map(SignalWord::Terminal).map_err(|_| {
        format!(
            "{text:?} is neither a signal (INT, STOP, CONT, TERM, KILL) nor a terminal id \
             (local:3 or 3) or name"
        )
    })
}

/// The signals SIGNAL_TERMINAL carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SignalName {
    /// SIGINT.
    Interrupt,
    /// SIGSTOP.
    Freeze,
    /// SIGCONT.
    Resume,
    /// SIGTERM.
    Terminate,
    /// SIGKILL.
    Kill,
}

/// `attach`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// The terminal, by id or name (default: the most recent, the one phuxctl last created
    /// or attached to on this host while it lives, else the newest).
    #[arg(value_parser = parse_target)]
    pub id: Option<Target>,
    /// How to attach.
    #[command(flatten)]
    pub how: AttachOptions,
}

/// `new`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct NewArgs {
    /// If a terminal named NAME (-s) exists, attach to it instead of refusing.
    #[arg(short = 'A', requires = "named")]
    pub attach_existing: bool,
    /// Do not attach: print the new terminal's id (like `spawn`).
    #[arg(short = 'd', long)]
    pub detached: bool,
    /// The terminal to create, as `spawn` takes it.
    #[command(flatten)]
    pub spawn: SpawnArgs,
    /// How to attach.
    #[command(flatten)]
    pub how: AttachOptions,
}

/// How `attach` and `new` attach.
#[derive(Debug, Clone, Args)]
pub struct AttachOptions {
    /// The key that detaches (same names as `send --key`), or `none` for no detach key (the
    /// attach then ends only with the program or the connection). A key a program needs
    /// for typing (a character, Enter, Tab, Space, Backspace, Esc) is refused. The first
    /// press waits half a second for another key: the detach key again sends it to the
    /// program, `[` or PageUp open the history view, anything else (or nothing) detaches.
    #[arg(long, value_name = "KEY", default_value = "C-\\", value_parser = parse_detach_key)]
    pub detach_key: DetachKey,
    /// Do not resize the terminal to this tty (nor count in its size when several clients
    /// are attached): it is shown at the size it has, clipped or dotted.
    #[arg(long)]
    pub no_resize: bool,
}

/// `attach --detach-key`: a key, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetachKey {
    /// No detach key.
    None,
    /// This key detaches.
    Key(KeySpec),
}

/// Parses `--detach-key`: `none`, or a key that types nothing a program needs.
fn parse_detach_key(text: &str) -> Result<DetachKey, String> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(DetachKey::None);
    }
    let key = parse_key(text)?;
    let bytes = crate::keys::legacy_bytes(&key.0);
    // [CLIENT.ATTACH.8] Enter, Tab, Backspace (both bytes) and Esc, and any key that types
    // text.
    let typing = matches!(bytes.as_slice(), [0x0d | 0x09 | 0x7f | 0x08 | 0x1b])
        || std::str::from_utf8(&bytes)
            .is_ok_and(|t| !t.is_empty() && !t.chars().any(char::is_control));
    if typing {
        return Err(format!(
            "{text:?} is a key programs need for typing; pick a chord such as C-\\ or C-], \
             or none"
        ));
    }
    Ok(DetachKey::Key(key))
}

/// `phuxctl outbox`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct OutboxArgs {
    /// What to do (default: list).
    #[command(subcommand)]
    pub action: Option<OutboxAction>,
}

/// `phuxctl outbox` actions.
#[derive(Debug, Clone, Subcommand)]
pub enum OutboxAction {
    /// List the pending operations: id, terminal, state, age, bytes, and whether the server
    /// they were addressed to still answers. Sends nothing and creates nothing.
    List {
        /// One JSON object per line instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Settle pending operations now (those to TERMINAL, or all): each is sent if its server
    /// still runs and it is young enough, else reported; the verdicts are printed.
    Resume {
        /// Only the operations to this terminal.
        #[arg(value_parser = parse_terminal)]
        terminal: Option<TerminalId>,
    },
    /// Give up pending operations without sending them (reported `not sent: dropped`, or
    /// `unknown` when an earlier send of one is in doubt).
    Drop {
        /// Every pending operation.
        #[arg(long, conflicts_with_all = ["terminal", "ops"])]
        all: bool,
        /// Every pending operation to this terminal.
        #[arg(long, value_parser = parse_terminal, conflicts_with = "ops")]
        terminal: Option<TerminalId>,
        /// Operation ids, as `outbox list` prints them.
        #[arg(value_parser = parse_operation)]
        ops: Vec<OperationId>,
    },
}
