//! The `phuxctl` command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use phux_proto::{OperationId, TerminalId};

use crate::keys::{KeyNameParser, KeySpec, parse_key};

/// A command-line client for phux-mio-server.
///
/// Terminal ids are written `local:3` (as `spawn` prints them) or just `3`.
///
/// `send` and `paste` go through a durable outbox: each operation is written (and synced) to
/// $XDG_STATE_HOME/phux-mio/outbox/ (default ~/.local/state/phux-mio/outbox/) before it is
/// sent, so one that was interrupted is resumed with the same id, or reported, by the next
/// phuxctl run against the same server. Every run first settles what an earlier run left.
///
/// Exit status: 0 success; 1 local failure (the outbox, the tty, an unusable answer);
/// 2 bad usage (an empty paste included); 3 delivery unknown; 4 refused by the server (or,
/// for `lease release`, another client's lease left held); 5 the server could not be reached
/// or the connection failed; 6 the input was delivered, but the outbox journal could not be
/// brought up to date afterwards (said on stderr; nothing is sent twice). `attach` and
/// `watch` exit with the program's status when it ends.
#[derive(Debug, Clone, Parser)]
#[command(name = "phuxctl", version)]
pub struct Cli {
    /// The server's socket. Default: the server's own default for --name
    /// ($XDG_RUNTIME_DIR/phux-mio/NAME.sock, or /tmp/phux-mio-UID/NAME.sock).
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,

    /// Reach the server through this shell command's stdin and stdout instead of a local
    /// socket (run again for each connection), for example
    /// `ssh HOST phux-mio-server bridge --name NAME`.
    #[arg(long, value_name = "COMMAND", global = true, conflicts_with_all = ["socket", "ssh"])]
    pub exec: Option<String>,

    /// Reach the server on HOST over ssh: `--exec "ssh -- HOST phux-mio-server bridge --name
    /// NAME"` (with --socket PATH, the bridge joins that socket on HOST). ssh does the
    /// authentication; configure the host, user and keys in ~/.ssh/config.
    #[arg(long, value_name = "HOST", global = true)]
    pub ssh: Option<String>,

    /// The server's name, which picks the default socket path and the outbox journal.
    #[arg(long, value_name = "NAME", default_value = "default", global = true)]
    pub name: String,

    /// How long to wait for the server to answer, in seconds (the handshake, each command,
    /// for `send` and `paste` the outbox lock and the verdict); default 30 (60 for a verdict,
    /// no limit on the lock). Streaming verbs (`watch`, `events`, `attach`, `lease --hold`)
    /// then run until their stream ends.
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, global = true)]
    pub timeout: Option<Duration>,

    /// What to do.
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum CtlCommand {
    /// Start a terminal and print its id (`local:N`).
    Spawn(SpawnArgs),
    /// List the terminals: id, size, pid, age, state, lease holder, command and title.
    ///
    /// One per line, tab-separated: id, size (COLSxROWS), pid, age, state (running, frozen,
    /// exited), lease holder (a client id, or -), command and title; on a terminal, a header
    /// line and the columns aligned with spaces. The command, the age and (in --json) the
    /// working directory are read from /proc for the terminal's pid when the server runs on
    /// this host; with --ssh or --exec the protocol carries none of them and `-` is printed.
    List {
        /// Print a JSON array of objects instead.
        #[arg(long)]
        json: bool,
    },
    /// Kill terminals.
    Kill {
        /// The terminals.
        #[arg(required = true, value_parser = parse_terminal)]
        ids: Vec<TerminalId>,
    },
    /// Send text and keys as one acknowledged operation; print the verdict.
    ///
    /// Parts go in command-line order, as with `tmux send-keys`: `send 5 --key C-u 'echo x'
    /// --key Enter` clears the line, types `echo x`, then presses Enter. TEXT words next to
    /// each other are joined by single spaces and typed as a paste (bracketed if the program
    /// asked for bracketed paste), made safe as `paste` makes its text (--verbatim: exactly).
    /// Prints `delivered` and exits 0 once the server confirms the bytes reached the
    /// terminal; otherwise prints `unknown: ...` (exit 3) or `refused: CODE message` (exit 4).
    /// Input too large for one operation is sent as several, in order, as `paste` does.
    Send(SendArgs),
    /// Paste stdin (or a file) as acknowledged input; print the verdict as `send` does.
    ///
    /// The text is made safe to paste first, as xterm and ghostty make every paste: ESC and
    /// the controls that edit a line or stop a program (NUL, C-c, C-d, C-e, C-h, C-o, C-q,
    /// C-r, C-s, C-u, C-v, C-w, C-z, C-\ and DEL) become spaces, so nothing in it can end the
    /// program's bracketed paste or type a command; tabs and line ends stay. A program that
    /// asked for bracketed paste (bash, zsh, vim, ...) takes it as one paste and runs nothing
    /// until Enter; to a program that did not, each line end is Enter, as in any terminal
    /// (--untrusted refuses that case instead). --verbatim sends the bytes unchanged.
    ///
    /// Large input is split into operations of at most 64 KiB, at character boundaries, sent
    /// in order: once one is not delivered, none after it is sent, and each part's verdict is
    /// printed. At most 1 MiB per run. An empty paste is bad usage (exit 2), as `send` with
    /// nothing to send is.
    Paste(PasteArgs),
    /// Print a terminal's screen (its lines, as text), or the server's JSON document.
    Screen(ScreenArgs),
    /// Stream a terminal's output to stdout until it closes.
    ///
    /// Exits with the program's exit status when the terminal closes (its low 8 bits, as a
    /// shell sees it; 1 when a signal ended it, whose number the protocol does not carry), so
    /// `phuxctl watch 3 && echo ok` works as with the program itself.
    Watch {
        /// The terminal.
        #[arg(value_parser = parse_terminal)]
        id: TerminalId,
        /// Write the current screen first (as the VT bytes that redraw it).
        #[arg(long)]
        bootstrap: bool,
    },
    /// Print events in the frame notation, one per line, until the connection ends (with an
    /// ID: until that terminal's pane_closed event, then exit 0).
    Events {
        /// Only this terminal's events (default: server-scoped events).
        #[arg(value_parser = parse_terminal)]
        id: Option<TerminalId>,
        /// One JSON object per line instead (`terminal`, `event`, the event's fields, and
        /// `frame`, the notation line).
        #[arg(long)]
        json: bool,
    },
    /// Acquire or release a terminal's input lease.
    Lease(LeaseArgs),
    /// Send a signal to a terminal's process group.
    ///
    /// The signal and the terminal may come in either order (`signal INT 3`, `signal 3 INT`).
    /// The protocol carries five signals: INT (or interrupt), STOP (freeze), CONT (resume),
    /// TERM (terminate) and KILL, written in any case, with or without SIG. Any other signal
    /// (HUP, USR1, ...) is bad usage (exit 2): SIGNAL_TERMINAL cannot carry it.
    Signal(SignalArgs),
    /// Attach this tty to a terminal, interactively (raw mode), until the detach key.
    ///
    /// Keys go to the terminal as key events, the terminal's output is drawn as it arrives,
    /// and the terminal is resized to this tty. The detach key (default C-\) returns and
    /// restores the tty; the terminal keeps running on the server. When the program ends,
    /// attach leaves its last screen in view and exits with its exit status. This tty's
    /// replies to the program's queries are never typed as keys.
    Attach(AttachArgs),
    /// List, resume or drop input that earlier runs left pending in the outbox.
    ///
    /// Operations are addressed to one terminal of one server incarnation: those whose server
    /// is gone, or that are 9.5 minutes old, are reported and never sent. Other commands never
    /// send them; `send` and `paste` resume only those to their own terminal.
    Outbox(OutboxArgs),
    /// Resize a terminal (its program gets SIGWINCH); print the size it now has.
    Resize {
        /// The terminal.
        #[arg(value_parser = parse_terminal)]
        id: TerminalId,
        /// The new size, COLSxROWS (for example 120x40).
        #[arg(value_parser = parse_size, value_name = "COLSxROWS")]
        size: (u16, u16),
    },
    /// Upgrade the server in place to a new binary, keeping every terminal, connection and
    /// pending operation; print what happened.
    ///
    /// The server first asks the binary whether it reads its state (`--check-upgrade`), then
    /// execs it with the same pid; clients see only a pause. Prints `upgraded` and exits 0
    /// once the new binary serves; otherwise prints why and exits 4 (the old binary serves on,
    /// nothing lost). The wait defaults to 60 s (--timeout SECS).
    Upgrade {
        /// The new binary (default: the binary the server was started from, as it is on
        /// disk now). A relative path is taken from this shell's directory; with --ssh or
        /// --exec the path is on the server's host and must be absolute.
        #[arg(long, value_name = "PATH")]
        binary: Option<PathBuf>,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    ///
    /// For bash: `phuxctl completions bash > ~/.local/share/bash-completion/completions/phuxctl`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff) on stdout: `phuxctl man | man -l -` for phuxctl(1),
    /// `phuxctl man send` for phuxctl-send(1) (every option of a verb), or write them all.
    ///
    /// `phuxctl man --dir ~/.local/share/man/man1` writes phuxctl.1 and a page for every verb
    /// (phuxctl-spawn.1, phuxctl-outbox-drop.1, ...), so that `man phuxctl-send` works.
    Man {
        /// The verb (and its own verb, as in `outbox drop`) whose page to print.
        #[arg(value_name = "VERB")]
        verb: Vec<String>,
        /// Write every page into this directory instead, one file each.
        #[arg(long, value_name = "DIR", conflicts_with = "verb")]
        dir: Option<PathBuf>,
    },
}

/// `spawn`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct SpawnArgs {
    /// Columns (default 80, the protocol's default width). A server limits the size
    /// (phux-mio-server to 1024 columns and 512 rows): when the terminal it made differs from
    /// the size asked for, spawn says so on stderr (the id is still printed, exit 0).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub cols: Option<u16>,
    /// Rows (default 24, the protocol's default height; limited as --cols is).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub rows: Option<u16>,
    /// Working directory for the program (relative to this shell's directory). With --ssh or
    /// --exec it is a directory on the server's host: absolute, and not checked here.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Set a variable (repeatable). With any --env (or --clear-env) the program gets this
    /// phuxctl's environment with these changes; without, it inherits the server's. With
    /// --ssh or --exec this host's environment is never sent: the program keeps the server's
    /// environment and gets these variables through `env -- K=V CMD` (without CMD, the
    /// server host's $SHELL); --clear-env sends exactly the --env variables.
    #[arg(long, value_name = "K=V", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (plus --env and TERM).
    #[arg(long)]
    pub clear_env: bool,
    /// The TERM for the program (default: the TERM in the environment --env sends, else
    /// xterm-256color).
    #[arg(long, value_name = "TERM")]
    pub term: Option<String>,
    /// The program and its arguments (default: the server's shell).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `send`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
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
    /// The text and keys in command-line order (filled by [`parse`]; when empty, the text
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
    fn order(&mut self, matches: &ArgMatches) {
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

/// Parses the command line (exiting on bad usage, as clap does): [`Cli`] plus what derive
/// cannot give, `send`'s parts in command-line order; `send` with nothing to send is bad usage.
pub fn parse() -> Cli {
    parse_from(std::env::args_os())
}

/// [`parse`] from the given arguments.
pub fn parse_from<I, T>(args: I) -> Cli
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = Cli::command().get_matches_from(args);
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (CtlCommand::Send(send), Some(("send", sub))) = (&mut cli.command, matches.subcommand())
    {
        send.order(sub);
        let nothing = send
            .ordered_parts()
            .iter()
            .all(|p| matches!(p, SendPart::Text(t) if t.is_empty()));
        if nothing {
            usage_error(
                "send",
                "send needs something to send: TEXT (not empty) or --key NAME",
            );
        }
    }
    if let (CtlCommand::Signal(args), Some(("signal", _))) = (&cli.command, matches.subcommand())
        && args.resolve().is_none()
    {
        usage_error(
            "signal",
            "signal needs one signal and one terminal id, in either order (signal INT 3)",
        );
    }
    cli
}

/// Exits with clap's usage error (status 2) for `verb`.
fn usage_error(verb: &str, message: &str) -> ! {
    let mut cmd = Cli::command();
    cmd.build();
    let error_kind = clap::error::ErrorKind::InvalidValue;
    match cmd.find_subcommand_mut(verb) {
        Some(sub) => sub.error(error_kind, message).exit(),
        None => cmd.error(error_kind, message).exit(),
    }
}

/// `paste`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct PasteArgs {
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
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
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
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
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
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
    pub fn resolve(&self) -> Option<(SignalName, &TerminalId)> {
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
    /// A terminal id.
    Terminal(TerminalId),
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
    parse_terminal(text).map(SignalWord::Terminal).map_err(|_| {
        format!(
            "{text:?} is neither a signal (INT, STOP, CONT, TERM, KILL) nor a terminal id \
             (local:3 or 3)"
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
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
    /// The key that detaches (same names as `send --key`), or `none` for no detach key (the
    /// attach then ends only with the program or the connection). A key a program needs
    /// for typing (a character, Enter, Tab, Space, Backspace, Esc) is refused. To send the
    /// detach key itself to the program, press it twice within a second: the first press
    /// waits that long for a second one before it detaches.
    #[arg(long, value_name = "KEY", default_value = "C-\\", value_parser = parse_detach_key)]
    pub detach_key: DetachKey,
    /// Do not resize the terminal to this tty.
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

fn parse_operation(text: &str) -> Result<OperationId, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    u128::from_str_radix(digits, 16)
        .ok()
        .and_then(OperationId::from_u128)
        .ok_or_else(|| format!("{text:?} is not an operation id (0x and 32 hex digits)"))
}

/// Parses `local:3`, `3` or `satellite:HOST:3`.
pub fn parse_terminal(text: &str) -> Result<TerminalId, String> {
    let bad = || format!("{text:?} is not a terminal id (write local:3 or 3)");
    if let Ok(n) = text.parse::<u32>() {
        return Ok(TerminalId::Local(n));
    }
    if let Some(n) = text.strip_prefix("local:") {
        return n.parse().map(TerminalId::Local).map_err(|_| bad());
    }
    if let Some(rest) = text.strip_prefix("satellite:") {
        let (host, id) = rest.rsplit_once(':').ok_or_else(bad)?;
        let host = host
            .strip_prefix('"')
            .and_then(|h| h.strip_suffix('"'))
            .unwrap_or(host);
        if host.is_empty() {
            return Err(bad());
        }
        let id = id.parse().map_err(|_| bad())?;
        return Ok(TerminalId::Satellite {
            host: host.to_owned(),
            id,
        });
    }
    Err(bad())
}

/// Parses `COLSxROWS` (each 1..=65535).
pub fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let bad = || format!("{text:?} is not a size (write COLSxROWS, for example 120x40)");
    let (cols, rows) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let cols: u16 = cols.trim().parse().map_err(|_| bad())?;
    let rows: u16 = rows.trim().parse().map_err(|_| bad())?;
    if cols == 0 || rows == 0 {
        return Err(format!(
            "{text:?}: a size needs at least one column and one row"
        ));
    }
    Ok((cols, rows))
}

/// Parses a timeout in seconds (`5`, `0.5`).
fn parse_timeout(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{text:?} is not a number of seconds above 0"))
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{text:?} is not K=V")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn terminal_ids_in_both_forms() {
        assert_eq!(parse_terminal("3"), Ok(TerminalId::Local(3)));
        assert_eq!(parse_terminal("local:3"), Ok(TerminalId::Local(3)));
        assert_eq!(
            parse_terminal("satellite:\"h\":4"),
            Ok(TerminalId::Satellite {
                host: "h".into(),
                id: 4
            })
        );
        for bad in ["", "local:", "local:x", "-1", "satellite::3", "foo:3"] {
            assert!(parse_terminal(bad).is_err(), "{bad:?}");
        }
        // What spawn prints parses back.
        let id = TerminalId::Local(17);
        assert_eq!(parse_terminal(&id.to_string()), Ok(id));
    }

    #[test]
    fn every_subcommand_has_help() {
        let mut cmd = Cli::command();
        cmd.build();
        for sub in cmd.get_subcommands() {
            assert!(
                sub.get_about().is_some(),
                "{} has no help text",
                sub.get_name()
            );
        }
        Cli::command().debug_assert();
    }

    #[test]
    fn send_collects_text_and_keys() {
        let cli = Cli::try_parse_from([
            "phuxctl", "send", "local:2", "echo", "hi", "--key", "Enter", "--key", "C-c",
        ])
        .expect("parse");
        let CtlCommand::Send(send) = cli.command else {
            panic!("not send");
        };
        assert_eq!(send.id, TerminalId::Local(2));
        assert_eq!(send.text, ["echo", "hi"]);
        assert_eq!(send.keys.len(), 2);
        assert!(Cli::try_parse_from(["phuxctl", "send", "2", "--key", "Hyper-q"]).is_err());
    }

    #[test]
    fn send_keeps_command_line_order_like_tmux_send_keys() {
        let cli = parse_from([
            "phuxctl", "send", "5", "--key", "C-u", "echo", "x", "--key", "Enter", "more",
        ]);
        let CtlCommand::Send(send) = cli.command else {
            panic!("not send");
        };
        let key = |n: &str| SendPart::Key(parse_key(n).expect("key"));
        assert_eq!(
            send.ordered_parts(),
            [
                key("C-u"),
                SendPart::Text("echo x".into()),
                key("Enter"),
                SendPart::Text("more".into())
            ]
        );
    }

    #[test]
    fn sizes_and_timeouts_parse() {
        assert_eq!(parse_size("120x40"), Ok((120, 40)));
        for bad in ["120", "x40", "0x5", "5x0", "ax3", "70000x3"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_timeout("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["0", "-1", "x", "inf", "NaN"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn spawn_takes_a_command_after_the_double_dash() {
        let cli = Cli::try_parse_from([
            "phuxctl", "--socket", "/s", "spawn", "--cols", "100", "--env", "A=b=c", "--", "sh",
            "-c", "echo --x",
        ])
        .expect("parse");
        assert_eq!(cli.socket, Some(PathBuf::from("/s")));
        let CtlCommand::Spawn(spawn) = cli.command else {
            panic!("not spawn");
        };
        assert_eq!(spawn.cols, Some(100));
        assert_eq!(spawn.env, [("A".to_owned(), "b=c".to_owned())]);
        assert_eq!(spawn.command, ["sh", "-c", "echo --x"]);
        assert!(Cli::try_parse_from(["phuxctl", "spawn", "--env", "=x"]).is_err());
    }

    #[test]
    fn operation_ids_parse_as_printed() {
        let id = OperationId::from_u128(0xabc).expect("id");
        assert_eq!(parse_operation(&id.to_string()), Ok(id));
        assert!(parse_operation("0x0").is_err());
        assert!(parse_operation("zz").is_err());
    }
}
