//! The `phuxctl` command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use phux_proto::TerminalId;

use super::keys::{KeySpec, parse_key};

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
/// 2 bad usage; 3 delivery unknown; 4 refused by the server; 5 the server could not be
/// reached or the connection failed.
#[derive(Debug, Clone, Parser)]
#[command(name = "phuxctl", version)]
pub struct Cli {
    /// The server's socket. Default: the server's own default for --name
    /// ($XDG_RUNTIME_DIR/phux-mio/NAME.sock, or /tmp/phux-mio-UID/NAME.sock).
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,

    /// The server's name, which picks the default socket path and the outbox journal.
    #[arg(long, value_name = "NAME", default_value = "default", global = true)]
    pub name: String,

    /// What to do.
    #[command(subcommand)]
    pub command: CtlCommand,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum CtlCommand {
    /// Start a terminal and print its id (`local:N`).
    Spawn(SpawnArgs),
    /// List the terminals: id, size (COLSxROWS) and title, one per line, tab-separated.
    List,
    /// Kill terminals.
    Kill {
        /// The terminals.
        #[arg(required = true, value_parser = parse_terminal)]
        ids: Vec<TerminalId>,
    },
    /// Send text and keys as one acknowledged operation; print the verdict.
    ///
    /// The text (the TEXT words joined by spaces) goes first, as a paste (bracketed if the
    /// program asked for bracketed paste), then the --key keys in order. Prints `delivered`
    /// and exits 0 once the server confirms the bytes reached the terminal; otherwise prints
    /// `unknown: ...` (exit 3) or `refused: CODE message` (exit 4).
    Send(SendArgs),
    /// Paste stdin (or a file) as acknowledged input; print the verdict as `send` does.
    ///
    /// Large input is split into operations of at most 64 KiB, at character boundaries, sent
    /// in order; at most 1 MiB per run.
    Paste(PasteArgs),
    /// Print a terminal's screen (its lines, as text), or the server's JSON document.
    Screen(ScreenArgs),
    /// Stream a terminal's output to stdout until it closes.
    Watch {
        /// The terminal.
        #[arg(value_parser = parse_terminal)]
        id: TerminalId,
        /// Write the current screen first (as the VT bytes that redraw it).
        #[arg(long)]
        bootstrap: bool,
    },
    /// Print events in the frame notation, one per line, until the connection ends.
    Events {
        /// Only this terminal's events (default: server-scoped events).
        #[arg(value_parser = parse_terminal)]
        id: Option<TerminalId>,
    },
    /// Acquire or release a terminal's input lease.
    Lease(LeaseArgs),
    /// Send a signal to a terminal's process group.
    Signal {
        /// Which signal.
        signal: SignalName,
        /// The terminal.
        #[arg(value_parser = parse_terminal)]
        id: TerminalId,
    },
    /// Attach this tty to a terminal, interactively (raw mode), until the detach key.
    ///
    /// Keys go to the terminal as key events, the terminal's output is drawn as it arrives,
    /// and the terminal is resized to this tty. The detach key (default C-\) returns and
    /// restores the tty; the terminal keeps running on the server.
    Attach(AttachArgs),
    /// List, resume or drop input that earlier runs left pending in the outbox.
    ///
    /// Operations are addressed to one terminal of one server incarnation: those whose server
    /// is gone, or that are 9.5 minutes old, are reported and never sent. Other commands never
    /// send them; `send` and `paste` resume only those to their own terminal.
    Outbox(super::outbox_verb::OutboxArgs),
}

/// `spawn`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct SpawnArgs {
    /// Columns (default: the server's).
    #[arg(long)]
    pub cols: Option<u16>,
    /// Rows (default: the server's).
    #[arg(long)]
    pub rows: Option<u16>,
    /// Working directory for the program.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Set a variable (repeatable). With any --env (or --clear-env) the program gets this
    /// phuxctl's environment with these changes; without, it inherits the server's.
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
    /// Text to type (words are joined by single spaces).
    pub text: Vec<String>,
    /// A key to press after the text (repeatable, in order): Enter, Tab, Esc, Space,
    /// Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, F1-F24,
    /// a character, or a W3C key code (KeyA, ArrowUp); prefixed by C- (Ctrl), M- (Alt),
    /// S- (Shift) or s- (Super), as in C-c, M-x, S-Tab.
    #[arg(long = "key", value_name = "NAME", value_parser = parse_key)]
    pub keys: Vec<KeySpec>,
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
    /// Mark the paste untrusted: the server refuses it if it holds a line feed, the
    /// end-of-paste marker or invalid UTF-8, and blanks the control characters it carries.
    #[arg(long)]
    pub untrusted: bool,
}

/// `screen`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct ScreenArgs {
    /// The terminal.
    #[arg(value_parser = parse_terminal)]
    pub id: TerminalId,
    /// Print the server's JSON document instead of the lines.
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
    /// ends; a lease is released when its holder disconnects.
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
    /// The key that detaches (same names as `send --key`).
    #[arg(long, value_name = "KEY", default_value = "C-\\", value_parser = parse_key)]
    pub detach_key: KeySpec,
    /// Do not resize the terminal to this tty.
    #[arg(long)]
    pub no_resize: bool,
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
}
