//! The command line.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The phux reference server: serves the phux protocol (0.8) over a Unix socket and runs
/// each terminal's program on a real pseudo-terminal.
///
/// On start it prints one line, `phux-mio-server listening on <path>`, on stdout (scripts
/// can wait for it). SIGTERM, SIGINT or SIGHUP (or the SHUTDOWN command) tells every client
/// DETACHED{SERVER_SHUTDOWN}, ends every terminal's program and removes the socket. SIGHUP
/// is a shutdown, not a reload: the server has nothing to reload, and a hangup means the
/// terminal or SSH session it was started from is gone (use nohup or setsid to outlive it).
///
/// SIGUSR2 (or `phuxctl upgrade`, the UPGRADE command) upgrades the server in place to the
/// binary it was started from, as that file is now: the same process execs it, and every
/// terminal, connection and pending operation carries over. If the new binary cannot take
/// the state over, the old one serves on.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "phux-mio-server",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Config {
    /// Without a command, the server runs.
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Listen on this Unix socket. Its directory is created 0700 if missing; an existing
    /// directory must not be writable by group or others unless it is sticky (like /tmp).
    /// The socket is made 0600. Default: $XDG_RUNTIME_DIR/phux-mio/NAME.sock, or
    /// /tmp/phux-mio-UID/NAME.sock without XDG_RUNTIME_DIR (that directory must be 0700).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// The server's name, which picks the default socket path (ignored with --socket).
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub name: String,

    /// Serve exactly one client over stdin/stdout instead of a socket (for SSH and the
    /// conformance runner), and exit when it disconnects. Nothing else is printed on stdout.
    /// stdin must be a pipe, a socket or a terminal (not /dev/null or a file). Both are made
    /// non-blocking while serving and get their flags back at exit.
    #[arg(long, conflicts_with = "socket")]
    pub stdio: bool,

    /// Start a new session (setsid) before serving, so that the hangup of the terminal or
    /// ssh session the server was started from does not reach it (`phuxctl new` starts the
    /// server this way when none runs).
    #[arg(long, conflicts_with = "stdio")]
    pub detach: bool,

    /// How much to log.
    #[arg(long, value_name = "LEVEL", value_enum, default_value_t = LogLevel::Info)]
    pub log_level: LogLevel,

    /// Also serve phux over WebSocket on this address (off by default), and the web client's
    /// page at `/` on it. Loopback only unless --ws-allow-remote. Clients must present the
    /// secret kept in --ws-secret-file and connect from one of the listener's own origins
    /// (spec/websocket.md). Port 0 picks a free port; the address is printed at start as
    /// `phux-mio-server websocket on ws://ADDR/`.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "stdio")]
    pub listen_ws: Option<std::net::SocketAddr>,

    /// Let --listen-ws use a non-loopback address. phux over WebSocket is plaintext: put a TLS
    /// reverse proxy in front (spec/websocket.md, "Beyond loopback") and name its origin with
    /// --ws-origin.
    #[arg(long, requires = "listen_ws")]
    pub ws_allow_remote: bool,

    /// Another origin pages may connect from (exactly `scheme://host[:port]`, such as a
    /// reverse proxy's `https://term.example`); repeatable. The listener's own loopback
    /// origins are always allowed.
    #[arg(long = "ws-origin", value_name = "ORIGIN", requires = "listen_ws", value_parser = parse_origin)]
    pub ws_origins: Vec<String>,

    /// Let a request without an Origin header (not a browser: the conformance runner, a
    /// script) connect; it still needs the secret.
    #[arg(long, requires = "listen_ws")]
    pub ws_allow_no_origin: bool,

    /// Where the WebSocket secret is kept (created 0600 when missing). Default: beside the
    /// socket, `<socket>.ws-secret`.
    #[arg(long, value_name = "PATH", requires = "listen_ws")]
    pub ws_secret_file: Option<PathBuf>,

    /// Append logs to this file instead of stderr. A new file is created 0600. At no level
    /// do logs hold environment values, arguments or input and output bytes: env names and
    /// byte counts at most.
    #[arg(long, value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// The program a SPAWN_TERMINAL without a command runs (one path or name, no
    /// arguments). Default: $SHELL, or /bin/sh when it is unset or empty.
    #[arg(long, value_name = "PROGRAM")]
    pub shell: Option<String>,

    /// The most client connections held at once; one more is refused at once with
    /// ERROR(RESOURCE_EXHAUSTED). Each costs a file descriptor and buffers, so a local
    /// program opening connections in a loop cannot exhaust the server's.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,

    /// The most terminals alive at once; one more SPAWN_TERMINAL is refused. Default: half
    /// of the host's pseudo-terminals (/proc/sys/kernel/pty/max), at most 4096, so that a
    /// client spawning in a loop leaves PTYs for the host's other programs (an explicit value
    /// is taken as given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_terminals: Option<u32>,

    /// The memory the terminals' screen models may hold together, in MiB: past it, new
    /// terminals are refused and the history of the terminal holding the most is dropped
    /// (its screens stay). Default: half of the host's memory (MemTotal in /proc/meminfo).
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub models_budget_mib: Option<u64>,

    /// How many terminals whose program exited are kept, with their last screen and exit
    /// status, until `phuxctl kill` dismisses them (tmux's remain-on-exit): `phuxctl list`
    /// shows them `exited`, `attach` and `screen` show their last screen. Past N the oldest
    /// goes; they count in --models-budget-mib and give way first. 0 forgets a terminal when
    /// its program exits, as the phux reference server does. A terminal ended by `kill` is
    /// never kept.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub remain_on_exit: usize,

    /// How long an exited terminal is kept at most, in seconds (an upgrade starts the count
    /// again).
    #[arg(long, value_name = "SECS", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    pub remain_for: u64,

    /// After a client's request, poll for the next event without sleeping for up to this many
    /// microseconds before blocking (0, the default: never; at most 1000). Each request may
    /// then cost up to this much more CPU. Meant for hosts where waking an idle CPU is slow;
    /// on the 2-CPU virtual machine it was measured on it made replies slower, so measure
    /// before turning it on (phux-bench --only ack,echo). Only a request starts it: an idle
    /// server uses no CPU either way.
    #[arg(long, value_name = "MICROS", default_value_t = DEFAULT_BUSY_POLL_US,
          value_parser = clap::value_parser!(u64).range(0..=MAX_BUSY_POLL_US))]
    pub busy_poll_us: u64,

    /// Say whether this binary can take over a running server's state of version VERSION, and
    /// exit: 0 with a confirmation line on stdout if it can, 1 if it cannot. A running server
    /// asks its next binary this before an upgrade (`phuxctl upgrade`, SIGUSR2).
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["stdio", "socket"])]
    pub check_upgrade: Option<u32>,

    /// Say whether this binary can take over the running server's state image it is given on
    /// stdin, and exit: 0 with a line saying what it found (terminals, connections, ledger
    /// entries) if it can, 1 with the reason on stderr if it cannot. A running server has its
    /// next binary adopt its state on trial before it execs it.
    #[arg(long, conflicts_with_all = ["stdio", "socket", "check_upgrade"])]
    pub check_adopt: bool,

    /// Internal: take over the state a previous image of the server left in this descriptor
    /// (the upgrade execs the new binary with it).
    #[arg(long, value_name = "FD", hide = true, conflicts_with_all = ["stdio", "socket"])]
    pub adopt_image: Option<i32>,

    /// Internal: the previous image's binary, open, to go back to if adopting fails.
    #[arg(long, value_name = "FD", hide = true, requires = "adopt_image")]
    pub previous_exe: Option<i32>,

    /// Internal: this is the previous image taking its state back, for this reason.
    #[arg(long, value_name = "REASON", hide = true, requires = "adopt_image")]
    pub adopt_failed: Option<String>,

    /// Internal: the arguments the first image was started with, shown after `--` so that
    /// the upgraded process still reads as it was started; not interpreted.
    #[arg(last = true, hide = true, requires = "adopt_image")]
    pub started_as: Vec<OsString>,
}

/// What else the binary does.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Join stdin and stdout to a running server's socket, so that a command that carries a
    /// byte stream reaches it: `phuxctl --exec 'ssh HOST phux-mio-server bridge' list`. Only
    /// a server of this user is accepted. Exits 0 when the server closes the connection
    /// (after stdin ends, the server's last bytes still arrive), 1 when it cannot connect.
    Bridge(BridgeArgs),
}

/// Which server `bridge` joins.
#[derive(Debug, Clone, Args)]
pub struct BridgeArgs {
    /// The server's socket. Default: the path `phux-mio-server --name NAME` listens on.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// The server's name, which picks the default socket path (ignored with --socket).
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub name: String,

    /// Copy bytes between stdin/stdout and the socket rather than hand stdin and stdout to
    /// the server. By default, when both are pipes or sockets (as under ssh), the bridge
    /// passes them to the server, which then reads and writes them itself, and only waits
    /// for the server to be done; it copies when they are not, or when the server declines.
    #[arg(long)]
    pub no_handoff: bool,
}

/// `--busy-poll-us` when the command line does not say: never, as measured on a 2-CPU virtual
/// machine (bench/README.md, "A busy-poll, measured"; `driver/spin.rs`).
pub const DEFAULT_BUSY_POLL_US: u64 = 0;

/// The longest busy-poll `--busy-poll-us` accepts: past a millisecond a spinning server costs
/// a CPU's worth of time between a person's keystrokes and saves nothing more.
pub const MAX_BUSY_POLL_US: u64 = 1000;

/// Where Linux says how many pseudo-terminals the host may have open at once.
const PTY_MAX_PATH: &str = "/proc/sys/kernel/pty/max";

/// The terminal cap without `--max-terminals` where the host's PTY count is unknown, and the
/// most it is with one: the engine's own default.
pub const DEFAULT_MAX_TERMINALS: usize = 4096;

/// The terminal cap for `--max-terminals` (`requested`) on a host with `pty_max`
/// pseudo-terminals: the value asked for, else half of the host's (the other half is left to
/// its other programs, terminal emulators and ssh sessions), at most [`DEFAULT_MAX_TERMINALS`]
/// and at least 1.
pub fn terminal_cap(requested: Option<u32>, pty_max: Option<usize>) -> usize {
    match (requested, pty_max) {
        (Some(n), _) => n as usize,
        (None, Some(max)) => (max / 2).clamp(1, DEFAULT_MAX_TERMINALS),
        (None, None) => DEFAULT_MAX_TERMINALS,
    }
}

/// The terminals' memory budget where the host's memory is unknown: 4 GiB.
pub const DEFAULT_MODELS_BUDGET: usize = 4 << 30;

/// Half of `MemTotal` in a /proc/meminfo text, in MiB.
fn half_of_mem_total_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some((kib / 1024 / 2).max(1))
}

/// Log verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    /// Only failures.
    Error,
    /// Failures and refusals (a foreign-uid peer, a protocol error).
    Warn,
    /// Start, stop, connections opening and closing, children spawned and exiting.
    Info,
    /// Every action the engine asks for (without environment values or argv: names and
    /// counts).
    Debug,
    /// Every read and write (their sizes, never their bytes).
    Trace,
}

impl LogLevel {
    /// The `tracing` filter directive for this level.
    pub fn directive(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
            Self::Trace => "trace",
        }
    }
}

/// An origin as a browser sends it: `http` or `https`, a host, an optional port, nothing else.
fn parse_origin(s: &str) -> Result<String, String> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or("an origin starts with http:// or https://")?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err("an origin is scheme://host[:port], with no path, query or user".to_owned());
    }
    Ok(s.to_owned())
}

impl Config {
    /// The WebSocket listener's options, when `--listen-ws` asks for one.
    pub fn ws_options(&self) -> Option<crate::ws::WsOptions> {
        Some(crate::ws::WsOptions {
            addr: self.listen_ws?,
            allow_remote: self.ws_allow_remote,
            origins: self.ws_origins.clone(),
            allow_no_origin: self.ws_allow_no_origin,
            secret_file: self.ws_secret_file.clone(),
        })
    }

    /// The terminal cap: `--max-terminals`, else half of the host's PTYs (see
    /// [`terminal_cap`]).
    pub fn max_terminals(&self) -> usize {
        let pty_max = std::fs::read_to_string(PTY_MAX_PATH)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        terminal_cap(self.max_terminals, pty_max)
    }

    /// The terminals' memory budget in bytes ([SERVER.LIMIT.6]): `--models-budget-mib`, else
    /// half of the host's memory, else [`DEFAULT_MODELS_BUDGET`] where that is unknown.
    pub fn models_budget(&self) -> usize {
        let mib = self.models_budget_mib.or_else(|| {
            let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
            half_of_mem_total_mib(&meminfo)
        });
        mib.map_or(DEFAULT_MODELS_BUDGET, |mib| {
            usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
        })
    }

    /// The terminals' memory budget the command line `args` (after the program name) asks
    /// for: an upgraded image takes it from the arguments the first one was started with.
    pub fn models_budget_of(args: &[OsString]) -> usize {
        let argv = std::iter::once(OsString::from("phux-mio-server")).chain(args.iter().cloned());
        Self::try_parse_from(argv).map_or(DEFAULT_MODELS_BUDGET, |c| c.models_budget())
    }

    /// `--remain-on-exit` and `--remain-for` from the command line `args` (after the program
    /// name), as [`Self::models_budget_of`] reads the budget: on every image the same.
    pub fn remains_of(args: &[OsString]) -> (usize, std::time::Duration) {
        let argv = std::iter::once(OsString::from("phux-mio-server")).chain(args.iter().cloned());
        let config = Self::try_parse_from(argv).ok();
        (
            config.as_ref().map_or(16, |c| c.remain_on_exit),
            std::time::Duration::from_secs(config.map_or(86_400, |c| c.remain_for)),
        )
    }

    /// `--busy-poll-us` as a duration ([SERVER.LOOP.3]).
    pub fn busy_poll(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.busy_poll_us)
    }

    /// `--busy-poll-us` from the command line `args` (after the program name), as
    /// [`Self::models_budget_of`] reads the budget: on every image the same.
    pub fn busy_poll_of(args: &[OsString]) -> std::time::Duration {
        let argv = std::iter::once(OsString::from("phux-mio-server")).chain(args.iter().cloned());
        Self::try_parse_from(argv).map_or(
            std::time::Duration::from_micros(DEFAULT_BUSY_POLL_US),
            |c| c.busy_poll(),
        )
    }

    /// The WebSocket listener's options from the command line `args` (after the program name),
    /// as [`Self::models_budget_of`] reads the budget: the image an upgrade hands the listener
    /// to answers for the same origins ([WS.UPGRADE.2]).
    pub fn ws_options_of(args: &[OsString]) -> Option<crate::ws::WsOptions> {
        let argv = std::iter::once(OsString::from("phux-mio-server")).chain(args.iter().cloned());
        Self::try_parse_from(argv).ok()?.ws_options()
    }

    /// The default terminal command: `--shell`, else `$SHELL`, else `/bin/sh`.
    pub fn default_command(&self) -> Vec<String> {
        let shell = self.shell.clone().filter(|s| !s.is_empty()).or_else(|| {
            std::env::var_os("SHELL")
                .filter(|s| !s.is_empty())
                .map(OsString::into_string)
                .and_then(Result::ok)
        });
        vec![shell.unwrap_or_else(|| "/bin/sh".to_owned())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_flag_is_explained_in_help() {
        let help = Config::command().render_long_help().to_string();
        for flag in [
            "--socket",
            "--name",
            "--stdio",
            "--log-level",
            "--log-file",
            "--shell",
            "--max-connections",
            "--max-terminals",
            "--check-upgrade",
            "--busy-poll-us",
        ] {
            let line = help
                .lines()
                .position(|l| l.contains(flag))
                .unwrap_or_else(|| panic!("{flag} missing from --help:\n{help}"));
            // clap prints the explanation on the lines after the flag in long help.
            let next = help.lines().nth(line + 1).unwrap_or_default();
            assert!(
                !next.trim().is_empty(),
                "{flag} has no explanation:\n{help}"
            );
        }
    }

    #[test]
    fn the_terminal_cap_leaves_half_of_the_hosts_ptys() {
        assert_eq!(terminal_cap(None, Some(4096)), 2048);
        assert_eq!(terminal_cap(None, Some(1_000_000)), DEFAULT_MAX_TERMINALS);
        assert_eq!(terminal_cap(None, Some(1)), 1);
        assert_eq!(terminal_cap(None, None), DEFAULT_MAX_TERMINALS);
        // An explicit value is taken as given.
        assert_eq!(terminal_cap(Some(3000), Some(4096)), 3000);
    }

    #[test]
    fn defaults_and_conflicts() {
        let c = Config::try_parse_from(["phux-mio-server"]).expect("parse");
        assert_eq!(c.name, "default");
        assert_eq!(c.log_level, LogLevel::Info);
        assert!(!c.stdio && c.socket.is_none());
        assert_eq!(c.max_connections, 256);
        let c = Config::try_parse_from(["x", "--max-connections", "3"]).expect("parse");
        assert_eq!(c.max_connections, 3);
        assert!(Config::try_parse_from(["x", "--max-connections", "0"]).is_err());
        assert_eq!(c.max_terminals, None);
        let c = Config::try_parse_from(["x", "--max-terminals", "7"]).expect("parse");
        assert_eq!(c.max_terminals(), 7);
        assert!(Config::try_parse_from(["x", "--max-terminals", "0"]).is_err());
        // [SERVER.LIMIT.6]
        let c = Config::try_parse_from(["x", "--models-budget-mib", "64"]).expect("parse");
        assert_eq!(c.models_budget(), 64 << 20);
        let args = ["--socket", "/tmp/s", "--models-budget-mib", "3"].map(OsString::from);
        assert_eq!(Config::models_budget_of(&args), 3 << 20);
        assert!(Config::try_parse_from(["x", "--models-budget-mib", "0"]).is_err());
        let meminfo = "MemTotal:       24731444 kB\nMemFree:        21379192 kB\n";
        assert_eq!(half_of_mem_total_mib(meminfo), Some(12075));
        assert_eq!(half_of_mem_total_mib("MemFree: 1 kB\n"), None);
        let c = Config::try_parse_from(["x", "--shell", "/bin/zsh", "--log-level", "trace"])
            .expect("parse");
        assert_eq!(c.default_command(), ["/bin/zsh"]);
        assert_eq!(c.log_level.directive(), "trace");
        assert!(Config::try_parse_from(["x", "--stdio", "--socket", "/tmp/a"]).is_err());
        assert!(Config::try_parse_from(["x", "--log-level", "loud"]).is_err());
        assert!(c.command.is_none());
    }

    // [SERVER.LOOP.3]
    #[test]
    fn the_busy_poll_is_off_by_default_and_bounded() {
        let c = Config::try_parse_from(["x"]).expect("parse");
        assert_eq!(c.busy_poll(), std::time::Duration::ZERO);
        let c = Config::try_parse_from(["x", "--busy-poll-us", "1000"]).expect("parse");
        assert_eq!(c.busy_poll(), std::time::Duration::from_millis(1));
        assert!(Config::try_parse_from(["x", "--busy-poll-us", "1001"]).is_err());
        assert!(Config::try_parse_from(["x", "--busy-poll-us", "-1"]).is_err());
        // An upgraded image reads it from the first one's arguments.
        let args = ["--socket", "/tmp/s", "--busy-poll-us", "40"].map(OsString::from);
        assert_eq!(
            Config::busy_poll_of(&args),
            std::time::Duration::from_micros(40)
        );
        assert_eq!(Config::busy_poll_of(&[]), std::time::Duration::ZERO);
    }

    #[test]
    fn bridge_takes_its_own_socket_or_name_and_no_server_flags() {
        let c = Config::try_parse_from(["x", "bridge", "--socket", "/tmp/s.sock"]).expect("parse");
        let Some(Command::Bridge(args)) = c.command else {
            panic!("not a bridge: {c:?}");
        };
        assert_eq!(
            args.socket.as_deref(),
            Some(std::path::Path::new("/tmp/s.sock"))
        );
        let c = Config::try_parse_from(["x", "bridge", "--name", "work"]).expect("parse");
        let Some(Command::Bridge(args)) = c.command else {
            panic!("not a bridge: {c:?}");
        };
        assert_eq!((args.name.as_str(), args.socket), ("work", None));
        assert!(!args.no_handoff);
        let c = Config::try_parse_from(["x", "bridge", "--no-handoff"]).expect("parse");
        let Some(Command::Bridge(args)) = c.command else {
            panic!("not a bridge: {c:?}");
        };
        assert!(args.no_handoff);
        assert!(Config::try_parse_from(["x", "--stdio", "bridge"]).is_err());
    }
}
