//! The `phuxctl` command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::names::Target;

mod args;
mod values;

pub use args::{
    AttachArgs, AttachOptions, DetachKey, LeaseAction, LeaseArgs, NewArgs, OutboxAction,
    OutboxArgs, PasteArgs, ScreenArgs, SendArgs, SendPart, SignalArgs, SignalName, SignalWord,
    SpawnArgs,
};
use values::parse_timeout;
pub use values::{parse_size, parse_target, parse_terminal};

/// A command-line client for phux-mio-server.
///
/// Terminal ids are written `local:3` (as `spawn` prints them) or just `3`; a terminal
/// named with `new -s NAME` or `spawn -s NAME` is also reached by its name (`attach work`).
///
/// `phuxctl new -A -s work` attaches to the terminal named work, creating it (and starting
/// the server) when there is none, as `tmux new -A -s work` does.
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
    /// Create a terminal and attach to it (like `tmux new`); start the server if none runs.
    ///
    /// With -s NAME the terminal is named; with -A an existing terminal of that name is
    /// attached to instead of refused (`tmux new -A -s NAME`, `dtach -A`, `abduco -A`); with
    /// -d it is not attached to and its id is printed. When no server answers on the local
    /// socket, one is started there (`phux-mio-server --detach`, in its own session, logging
    /// to $XDG_STATE_HOME/phux-mio/KEY.log); never over --ssh or --exec.
    New(NewArgs),
    /// Start a terminal and print its id (`local:N`).
    Spawn(SpawnArgs),
    /// List the terminals: id, name, size, pid, age, state, lease holder, command and title.
    ///
    /// One per line, tab-separated: id, name (or -), size (COLSxROWS), pid, age, state
    /// (running, frozen, or exited(STATUS) / exited(signal) for a terminal whose program
    /// ended and that the server keeps with its last screen until `kill` dismisses it), lease
    /// holder (a client id, or -), command and title; on a terminal, a header line and the
    /// columns aligned with spaces. The command, the age and (in --json) the working
    /// directory are read from /proc for the terminal's pid when the server runs on this host
    /// and the program runs; with --ssh or --exec the protocol carries none of them and `-`
    /// is printed.
    List {
        /// Print a JSON array of objects instead.
        #[arg(long)]
        json: bool,
    },
    /// Kill terminals, or dismiss exited ones the server keeps (`list` shows them exited).
    Kill {
        /// The terminals (ids or names).
        #[arg(required = true, value_parser = parse_target)]
        ids: Vec<Target>,
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
        /// The terminal (an id or a name).
        #[arg(value_parser = parse_target)]
        id: Target,
        /// Write the current screen first (as the VT bytes that redraw it).
        #[arg(long)]
        bootstrap: bool,
    },
    /// Print events in the frame notation, one per line, until the connection ends (with an
    /// ID: until that terminal's pane_closed event, then exit 0).
    Events {
        /// Only this terminal's events, by id or name (default: server-scoped events).
        #[arg(value_parser = parse_target)]
        id: Option<Target>,
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
    /// and the terminal is resized to this tty. With several clients attached, phux-mio-server
    /// gives the terminal the smallest columns and rows among them (tmux's `window-size
    /// smallest`); a larger tty shows it in its top-left corner with the rest dotted, and when
    /// the smaller client leaves the terminal grows back. The detach key (default C-\) returns and
    /// restores the tty; the terminal keeps running on the server. When the program ends,
    /// attach leaves its last screen in view and exits with its exit status; attaching to a
    /// terminal whose program has already exited (kept by the server, `exited` in `list`)
    /// shows its last screen and exits with that status the same way. This tty's replies to
    /// the program's queries are never typed as keys.
    ///
    /// The detach key then `[` (within half a second; tmux's prefix + [) opens the history
    /// view: the terminal's history and screen as the server keeps them, read like a pager.
    /// Up/Down or k/j move a line, PageUp/PageDown (also C-b/C-f, b/Space) a page, C-u/C-d
    /// half a page, g/G (Home/End) go to the oldest/newest line; / and ? search down and up
    /// (wrapping), n/N repeat; q, Esc or C-c go back to the program. The detach key then
    /// PageUp opens it a page up. Nothing typed in the view reaches the program, and output
    /// that arrives meanwhile is drawn when the view closes.
    Attach(AttachArgs),
    /// List, resume or drop input that earlier runs left pending in the outbox.
    ///
    /// Operations are addressed to one terminal of one server incarnation: those whose server
    /// is gone, or that are 9.5 minutes old, are reported and never sent. Other commands never
    /// send them; `send` and `paste` resume only those to their own terminal.
    Outbox(OutboxArgs),
    /// Resize a terminal (its program gets SIGWINCH); print the size it now has.
    Resize {
        /// The terminal (an id or a name).
        #[arg(value_parser = parse_target)]
        id: Target,
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
    /// Stop the server (SHUTDOWN), as `tmux kill-server` does: every terminal's program is
    /// ended and every client detached; prints `stopped`.
    ///
    /// Refused (exit 4) by a server that does not offer SHUTDOWN; phux-mio-server takes it
    /// on its local socket only (so not through --ssh or --exec). On this host it returns once
    /// the socket is gone, so a `phuxctl new` right after starts a fresh server.
    Shutdown,
    /// Print the server's id, protocol version and features, the program serving and its
    /// pid, this phuxctl's version, and how many terminals run and how many have exited.
    ///
    /// The id changes when the server restarts (never across an upgrade). The program and pid
    /// are those listening on the local socket (the binary's own `--version`, after an
    /// upgrade the new one's); with --ssh or --exec they are the far host's and `-` is
    /// printed.
    Info {
        /// One JSON object instead.
        #[arg(long)]
        json: bool,
    },
    /// List the clients attached to a terminal, as `tmux list-clients` does: client id,
    /// transport (socket, or other for a bridge or stdio), whether its output is live or
    /// behind (a slow reader waiting to catch up), and `lease` for the input lease holder.
    Clients {
        /// The terminal (an id or a name).
        #[arg(value_parser = parse_target)]
        id: Target,
        /// A JSON array of objects (`client`, `local_socket`, `behind`) instead.
        #[arg(long)]
        json: bool,
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

#[cfg(test)]
mod tests {
    use phux_proto::TerminalId;

    use super::*;
    use crate::keys::parse_key;

    #[test]
    fn targets_are_ids_or_names() {
        assert_eq!(parse_target("3"), Ok(Target::Id(TerminalId::Local(3))));
        assert_eq!(parse_target("work"), Ok(Target::Name("work".into())));
        assert_eq!(parse_target("2024-x"), Ok(Target::Name("2024-x".into())));
        assert!(parse_target("local:x").is_err());
        assert!(parse_target("a b").is_err());
        let cli = Cli::try_parse_from(["phuxctl", "new", "-A", "-s", "work", "--", "vim"])
            .expect("parse");
        let CtlCommand::New(new) = cli.command else {
            panic!("not new");
        };
        assert!(new.attach_existing && !new.detached);
        assert_eq!(new.spawn.named.as_deref(), Some("work"));
        assert_eq!(new.spawn.command, ["vim"]);
        // -A without a name has nothing to find.
        assert!(Cli::try_parse_from(["phuxctl", "new", "-A"]).is_err());
        let cli = Cli::try_parse_from(["phuxctl", "attach"]).expect("parse");
        assert!(matches!(
            cli.command,
            CtlCommand::Attach(AttachArgs { id: None, .. })
        ));
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
        assert_eq!(send.id, Target::Id(TerminalId::Local(2)));
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
