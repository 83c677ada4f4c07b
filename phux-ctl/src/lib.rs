//! `phuxctl`, the command-line client of the phux protocol for `phux-mio-server`: one
//! connection per run, driven by `phux_core::client::ClientEngine`, with acknowledged input
//! through the durable outbox. It is one client of the protocol among others; the server does
//! not depend on it.
//!
//! Run it against a server started in another shell
//! (`cargo run -p phux-mio-server -- --socket /tmp/phux-demo/s.sock`):
//!
//! ```sh
//! cargo run -q -p phux-ctl -- --socket /tmp/phux-demo/s.sock spawn -- /bin/sh   # local:1
//! cargo run -q -p phux-ctl -- --socket /tmp/phux-demo/s.sock send 1 'echo hi' --key Enter
//! cargo run -q -p phux-ctl -- --socket /tmp/phux-demo/s.sock screen 1
//! ```
//!
//! Without `--socket` it dials the server's default path, which
//! `phux_mio_server::socket::socket_path` decides for both. `phuxctl --help` lists every
//! command; [`cli`] holds them and [`run`] carries one out.
//!
//! Every run first opens the outbox journal for its server (see [`outbox_store`]), rebuilds
//! the engine from it and connects; operations an earlier run left unresolved are resumed
//! with the same id or reported (on stderr) before the run's own work.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod attach;
pub mod cli;
pub mod conn;
pub mod keys;
pub mod link;
pub mod list;
pub mod outbox_store;
pub mod outbox_verb;
mod report;
pub mod tty_input;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant as StdInstant};

use phux_core::client::outbox::{Input, Resolution};
use phux_core::client::retry::{NotSentReason, UnknownReason};
use phux_core::client::{ClientEvent, PeerMisbehaved};
use phux_proto::command::{AcquireMode, Signal};
use phux_proto::frame::{SpawnError, SpawnTerminal, SubscribeEvents, TerminalResize, TerminalSize};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Command, CommandValue, ErrorCode, Frame, GroupId, TerminalId};

use cli::{Cli, CtlCommand, LeaseAction, SendPart, SignalName};
use conn::{COMMAND_TIMEOUT, INPUT_TIMEOUT, Session, Step};
use link::Endpoint;
use outbox_store::StoreError;
use phux_mio_server::verify;

/// SPAWN_TERMINAL's default size (`initial_size` absent or with a 0 axis).
pub const DEFAULT_SIZE: (u16, u16) = (80, 24);

/// Success (for `send` and `paste`: delivered).
pub const EXIT_OK: u8 = 0;
/// A local failure: the outbox, the tty, input that cannot be sent, an unusable answer.
pub const EXIT_LOCAL: u8 = 1;
/// Bad usage (clap's own code).
pub const EXIT_USAGE: u8 = 2;
/// Input whose delivery is unknown (it may or may not have been written).
pub const EXIT_UNKNOWN: u8 = 3;
/// Refused by the server (for input: nothing was written).
pub const EXIT_REFUSED: u8 = 4;
/// The server could not be reached, or the connection failed.
pub const EXIT_CONNECTION: u8 = 5;
/// Test-only: the [`conn::TEST_EXIT_AFTER_SEND`] hook fired.
pub const EXIT_TEST_HOOK: i32 = 86;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CtlError {
    /// The socket could not be dialled.
    #[error("cannot connect to {path}: {source}")]
    Connect {
        /// The socket.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The `--exec` command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Exec {
        /// The command line.
        command: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The connection ended early.
    #[error("{0}")]
    ConnectionLost(String),
    /// The server broke the protocol.
    #[error("the server broke the protocol: {0}")]
    Protocol(PeerMisbehaved),
    /// The server did not answer in time.
    #[error(
        "no answer from the server in time (waiting for {0}); it may be stopped or overloaded \
         (--timeout SECS sets the wait)"
    )]
    Timeout(&'static str),
    /// The server refused a command.
    #[error("refused: {code} {message}")]
    Refused {
        /// The wire code.
        code: ErrorCode,
        /// The server's text.
        message: String,
    },
    /// SPAWN_TERMINAL failed.
    #[error("spawn failed: {0}")]
    SpawnFailed(String),
    /// The outbox journal.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Input the outbox does not take (empty, too large).
    #[error("cannot send that input: {0}")]
    Input(String),
    /// Anything else local.
    #[error("{0}")]
    Local(String),
    /// The socket is not the user's own (CLIENT.PEER.N): nothing was sent.
    #[error(transparent)]
    Untrusted(Box<verify::TrustError>),
    /// Bad usage found after parsing (clap's exit status).
    #[error("{0}")]
    Usage(String),
}

impl CtlError {
    /// The exit status for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Connect { .. }
            | Self::Exec { .. }
            | Self::ConnectionLost(_)
            | Self::Protocol(_)
            | Self::Timeout(_)
            | Self::Untrusted(_) => EXIT_CONNECTION,
            Self::Refused { .. } | Self::SpawnFailed(_) => EXIT_REFUSED,
            Self::Store(_) | Self::Input(_) | Self::Local(_) => EXIT_LOCAL,
            Self::Usage(_) => EXIT_USAGE,
        }
    }
}

/// Runs one phuxctl invocation; its exit status.
pub fn run(cli: Cli) -> ExitCode {
    let target = single_target(&cli.command);
    match run_inner(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let e = name_the_terminal(e, target.as_ref());
            eprintln!("phuxctl: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// The one terminal a verb is about, if it is about one.
fn single_target(command: &CtlCommand) -> Option<TerminalId> {
    match command {
        CtlCommand::Send(a) => Some(a.id.clone()),
        CtlCommand::Paste(a) => Some(a.id.clone()),
        CtlCommand::Screen(a) => Some(a.id.clone()),
        CtlCommand::Lease(a) => Some(a.id.clone()),
        CtlCommand::Attach(a) => Some(a.id.clone()),
        CtlCommand::Watch { id, .. }
        | CtlCommand::Signal { id, .. }
        | CtlCommand::Resize { id, .. }
        | CtlCommand::Events { id: Some(id), .. } => Some(id.clone()),
        _ => None,
    }
}

/// A TERMINAL_NOT_FOUND refusal names the terminal the user gave (the server's text does
/// not).
fn name_the_terminal(error: CtlError, target: Option<&TerminalId>) -> CtlError {
    match (error, target) {
        (CtlError::Refused { code, message }, Some(id))
            if code == ErrorCode::TERMINAL_NOT_FOUND && !message.contains(&id.to_string()) =>
        {
            CtlError::Refused {
                code,
                message: format!("no terminal {id}"),
            }
        }
        (error, _) => error,
    }
}

fn run_inner(cli: Cli) -> Result<u8, CtlError> {
    // Generated text needs no server.
    match &cli.command {
        CtlCommand::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "phuxctl", &mut std::io::stdout());
            return Ok(EXIT_OK);
        }
        CtlCommand::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .map_err(|e| CtlError::Local(format!("writing the manual page: {e}")))?;
            return Ok(EXIT_OK);
        }
        _ => {}
    }
    let path = endpoint(&cli)?;
    let waits = Waits {
        command: cli.timeout.unwrap_or(COMMAND_TIMEOUT),
        input: cli.timeout.unwrap_or(INPUT_TIMEOUT),
        lock: cli.timeout,
    };
    if let CtlCommand::Outbox(args) = &cli.command {
        // Before connecting: listing and dropping need no server.
        return outbox_verb::run(&cli, &path, args, waits);
    }
    let uses_outbox = matches!(cli.command, CtlCommand::Send(_) | CtlCommand::Paste(_));
    // Read what `paste` sends, and check what `spawn` names, before taking the lock or
    // connecting: stdin may be slow, and a bad argument is not the server's to report.
    let paste_data = match &cli.command {
        CtlCommand::Paste(args) => Some(read_paste(args.file.as_ref())?),
        _ => None,
    };
    let upgrade_binary = match &cli.command {
        CtlCommand::Upgrade { binary: Some(path) } => Some(absolute_binary(path)?),
        _ => None,
    };
    let spawn_cwd = match &cli.command {
        CtlCommand::Spawn(args) => args.cwd.as_deref().map(checked_cwd).transpose()?,
        _ => None,
    };
    let mut session = open_session(&cli, &path, uses_outbox, waits)?;
    let code = match cli.command {
        CtlCommand::Spawn(args) => spawn(&mut session, args, spawn_cwd)?,
        CtlCommand::List { json } => list(&mut session, json)?,
        CtlCommand::Kill { ids } => kill(&mut session, &ids)?,
        CtlCommand::Send(args) => {
            let events = args
                .ordered_parts()
                .into_iter()
                .filter(|part| !matches!(part, SendPart::Text(t) if t.is_empty()))
                .map(|part| match part {
                    SendPart::Text(text) => InputEvent::Paste(PasteEvent {
                        trust: PasteTrust::Trusted,
                        data: pasteable(text.into_bytes(), args.verbatim),
                    }),
                    SendPart::Key(key) => InputEvent::Key(key.0),
                })
                .collect();
            deliver(
                &mut session,
                args.id,
                Input::Events(events),
                waits.input,
                args.json,
            )?
        }
        CtlCommand::Paste(args) => {
            let trust = if args.untrusted {
                PasteTrust::Untrusted
            } else {
                PasteTrust::Trusted
            };
            let data = pasteable(paste_data.unwrap_or_default(), args.verbatim);
            deliver(
                &mut session,
                args.id,
                Input::Paste { data, trust },
                waits.input,
                args.json,
            )?
        }
        CtlCommand::Screen(args) => screen(&mut session, args)?,
        CtlCommand::Watch { id, bootstrap } => watch(&mut session, &id, bootstrap)?,
        CtlCommand::Events { id, json } => events(&mut session, id, json)?,
        CtlCommand::Lease(args) => lease(&mut session, &args)?,
        CtlCommand::Signal { signal, id } => {
            let signal = match signal {
                SignalName::Interrupt => Signal::Interrupt,
                SignalName::Freeze => Signal::Freeze,
                SignalName::Resume => Signal::Resume,
                SignalName::Terminate => Signal::Terminate,
                SignalName::Kill => Signal::Kill,
            };
            session.command_ok(Command::SignalTerminal {
                terminal: id,
                signal,
            })?;
            EXIT_OK
        }
        CtlCommand::Attach(args) => attach::attach(&mut session, &args)?,
        CtlCommand::Resize { id, size } => resize(&mut session, &id, size)?,
        CtlCommand::Upgrade { .. } => upgrade(&mut session, upgrade_binary, cli.timeout)?,
        // Handled before connecting.
        CtlCommand::Outbox(_) | CtlCommand::Completions { .. } | CtlCommand::Man => EXIT_OK,
    };
    Ok(code)
}

/// How long `upgrade` waits for its answer by default: the server's check of the new binary
/// (at most 5 s), its wait for quiet terminals (at most 2 s) and the exec, on a loaded host.
pub const UPGRADE_TIMEOUT: Duration = Duration::from_mins(1);

/// The binary `upgrade --binary` names, as an absolute path: the server runs in another
/// directory.
fn absolute_binary(path: &std::path::Path) -> Result<String, CtlError> {
    let absolute = std::path::absolute(path)
        .map_err(|e| CtlError::Local(format!("{}: {e}", path.display())))?;
    absolute.into_os_string().into_string().map_err(|p| {
        CtlError::Local(format!(
            "{}: the path must be UTF-8 to travel in UPGRADE",
            std::path::Path::new(&p).display()
        ))
    })
}

/// UPGRADE; prints `upgraded` once the new image answers OK.
fn upgrade(
    session: &mut Session,
    binary: Option<String>,
    timeout: Option<Duration>,
) -> Result<u8, CtlError> {
    session.set_command_timeout(timeout.unwrap_or(UPGRADE_TIMEOUT));
    let what = binary.clone();
    session.command_ok(Command::Upgrade { binary })?;
    match what {
        Some(binary) => println!("upgraded: the server now runs {binary}"),
        None => println!("upgraded: the server runs its own binary anew, as it is on disk now"),
    }
    Ok(EXIT_OK)
}

/// How long a run waits for the server (`--timeout`, or the defaults).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Waits {
    /// The handshake and each command.
    pub(crate) command: Duration,
    /// Acknowledged input's verdict.
    pub(crate) input: Duration,
    /// Another phuxctl's journal lock (`None`: as long as it takes).
    pub(crate) lock: Option<Duration>,
}

/// The server this run talks to: through `--exec` or `--ssh`, else the local socket.
fn endpoint(cli: &Cli) -> Result<Endpoint, CtlError> {
    if let Some(remote) = Endpoint::remote(
        cli.exec.as_deref(),
        cli.ssh.as_deref(),
        cli.socket.as_deref(),
        &cli.name,
    ) {
        return Ok(remote);
    }
    verify::target(cli.socket.as_deref(), &cli.name)
        .map(Endpoint::Socket)
        .map_err(|e| CtlError::Local(e.to_string()))
}

/// Connects; only a command that sends input opens the outbox journal and resumes earlier
/// operations, and only those to its own terminal (see [`outbox_verb`]).
fn open_session(
    cli: &Cli,
    endpoint: &Endpoint,
    uses_outbox: bool,
    waits: Waits,
) -> Result<Session, CtlError> {
    outbox_verb::open_session(cli, endpoint, uses_outbox, waits)
}

/// A TERMINAL_SPAWNED refusal in words.
pub fn spawn_error_text(error: &SpawnError) -> String {
    match error {
        SpawnError::GroupNotFound => "the server has no such group".to_owned(),
        SpawnError::SpawnFailed(why) => why.clone(),
        SpawnError::UnsupportedSatelliteRoute => {
            "this server does not route to satellites".to_owned()
        }
        SpawnError::SatelliteUnreachable(why) => format!("the satellite is unreachable: {why}"),
    }
}

/// How a resolution is printed: `delivered`, `unknown: why`, `refused: CODE message`.
pub fn verdict(resolution: &Resolution) -> String {
    match resolution {
        Resolution::Delivered => "delivered".to_owned(),
        Resolution::Unknown(reason) => format!(
            "unknown: {}",
            match reason {
                UnknownReason::DeliveryUnknown =>
                    "the server could not confirm the write (INPUT_DELIVERY_UNKNOWN)",
                UnknownReason::IncarnationChanged =>
                    "the server restarted before answering, so a resend could write twice",
                UnknownReason::HorizonElapsed => "unanswered for too long to resend safely",
                UnknownReason::RetriesExhausted => "unanswered, and the retries ran out",
                UnknownReason::Dropped => "dropped from the outbox while its delivery was in doubt",
            }
        ),
        Resolution::NotSent(reason) => format!(
            "not sent: {}",
            match reason {
                NotSentReason::ServerGone =>
                    "the server it was addressed to is gone (a new server answered; its terminal \
                     ids name other programs)"
                        .to_owned(),
                NotSentReason::Expired =>
                    "too old to send (submitted 9.5 minutes ago or more)".to_owned(),
                NotSentReason::Dropped => "dropped from the outbox".to_owned(),
                NotSentReason::EarlierPartFailed { part } => format!(
                    "part {part} of the same input was not delivered, so nothing after it is sent"
                ),
            }
        ),
        Resolution::Refused { code, message } => format!("refused: {code} {message}"),
    }
}

fn resolution_code(resolution: &Resolution) -> u8 {
    match resolution {
        Resolution::Delivered => EXIT_OK,
        Resolution::Unknown(_) => EXIT_UNKNOWN,
        Resolution::Refused { .. } | Resolution::NotSent(_) => EXIT_REFUSED,
    }
}

/// Text as `send` and `paste` type it: made safe to paste ([CLIENT.PASTE.4]), or exactly as
/// given when the user asked for `--verbatim` ([CLIENT.PASTE.5]).
fn pasteable(mut data: Vec<u8>, verbatim: bool) -> Vec<u8> {
    if !verbatim {
        // [CLIENT.PASTE.4] Whatever server answers and whatever the program's modes, nothing
        // in it can end or restart a bracketed paste, edit the line or signal the program.
        phux_core::encoder::neutralize_paste(&mut data);
    }
    data
}

/// Submits input through the outbox, waits for every operation, prints every part's verdict
/// ([CLIENT.SUBMIT.3]).
fn deliver(
    session: &mut Session,
    terminal: TerminalId,
    input: Input,
    wait: Duration,
    json: bool,
) -> Result<u8, CtlError> {
    let ops = session.submit(terminal, input)?;
    let outcomes = session.wait_resolved(&ops, StdInstant::now() + wait)?;
    let parts = report::PartOutcome::collect(&ops, outcomes);
    Ok(report::print(&parts, json, &mut std::io::stdout().lock()))
}

/// Stdin beyond the ceiling is counted up to this, to report a paste's real size without
/// reading an endless stream forever.
const PASTE_COUNT_LIMIT: u64 = 1 << 30;

fn read_paste(file: Option<&PathBuf>) -> Result<Vec<u8>, CtlError> {
    let ceiling = phux_core::client::outbox::DEFAULT_CEILING as u64;
    let mut data = Vec::new();
    let size = if let Some(path) = file {
        let what = |e: std::io::Error| {
            CtlError::Local(format!("cannot read --file {}: {e}", path.display()))
        };
        let mut f = std::fs::File::open(path).map_err(what)?;
        let meta = f.metadata().map_err(what)?;
        if meta.is_dir() {
            return Err(CtlError::Local(format!(
                "--file {} is a directory",
                path.display()
            )));
        }
        (&mut f)
            .take(ceiling + 1)
            .read_to_end(&mut data)
            .map_err(what)?;
        // A regular file's length is its size; anything else is counted.
        if meta.is_file() {
            meta.len().max(data.len() as u64)
        } else {
            data.len() as u64 + count_rest(&mut f)
        }
    } else {
        let mut stdin = std::io::stdin().lock();
        (&mut stdin)
            .take(ceiling + 1)
            .read_to_end(&mut data)
            .map_err(|e| CtlError::Local(format!("reading the paste from stdin: {e}")))?;
        data.len() as u64 + count_rest(&mut stdin)
    };
    if data.is_empty() {
        return Err(CtlError::Input(match file {
            Some(path) => format!("--file {} is empty: nothing to paste", path.display()),
            None => "stdin gave nothing: nothing to paste".to_owned(),
        }));
    }
    if size > ceiling {
        let size = if size >= PASTE_COUNT_LIMIT {
            format!("more than {PASTE_COUNT_LIMIT} bytes")
        } else {
            format!("{size} bytes")
        };
        return Err(CtlError::Input(format!(
            "the paste is {size}; phuxctl pastes at most {ceiling} bytes (1 MiB) per run \
             (split it, e.g. with split -b 1M)"
        )));
    }
    Ok(data)
}

/// How many bytes are left in `reader` (up to [`PASTE_COUNT_LIMIT`]), read and dropped.
fn count_rest(reader: &mut impl Read) -> u64 {
    std::io::copy(&mut reader.take(PASTE_COUNT_LIMIT), &mut std::io::sink()).unwrap_or(0)
}

/// `spawn --cwd`: made absolute against this shell's directory and required to be a
/// directory, so a bad one is blamed rather than the program.
fn checked_cwd(dir: &std::path::Path) -> Result<String, CtlError> {
    let bad = |why: String| CtlError::Usage(format!("--cwd {}: {why}", dir.display()));
    let absolute = std::fs::canonicalize(dir).map_err(|e| bad(e.to_string()))?;
    if !absolute.is_dir() {
        return Err(bad("not a directory".to_owned()));
    }
    absolute
        .into_os_string()
        .into_string()
        .map_err(|_| bad("not UTF-8, which the protocol requires".to_owned()))
}

fn spawn(session: &mut Session, args: cli::SpawnArgs, cwd: Option<String>) -> Result<u8, CtlError> {
    let mut spawn = SpawnTerminal::new(0, GroupId(1));
    if !args.command.is_empty() {
        spawn.command = Some(args.command);
    }
    spawn.cwd = cwd;
    spawn.term = args.term;
    if args.clear_env || !args.env.is_empty() {
        let mut env: Vec<(String, String)> = if args.clear_env {
            Vec::new()
        } else {
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect()
        };
        for (k, v) in args.env {
            env.retain(|(existing, _)| *existing != k);
            env.push((k, v));
        }
        spawn.env = Some(env);
    }
    if args.cols.is_some() || args.rows.is_some() {
        // [SPAWN.SIZE.1] 0 on either axis means the default for both, so the axis not given
        // is the protocol's default rather than 0.
        spawn.initial_size = Some(TerminalSize {
            cols: args.cols.unwrap_or(DEFAULT_SIZE.0),
            rows: args.rows.unwrap_or(DEFAULT_SIZE.1),
        });
    }
    let id = session.spawn(spawn)?;
    println!("{id}");
    Ok(EXIT_OK)
}

fn list(session: &mut Session, json: bool) -> Result<u8, CtlError> {
    let rows = list::collect(session)?;
    let mut out = std::io::stdout().lock();
    let text = if json {
        list::to_json(&rows)
    } else {
        list::to_table(&rows, std::io::IsTerminal::is_terminal(&std::io::stdout()))
    };
    let _ = write!(out, "{text}");
    Ok(EXIT_OK)
}

/// KILL_TERMINALS; a refusal for an unknown id names the ids that are not there.
fn kill(session: &mut Session, ids: &[TerminalId]) -> Result<u8, CtlError> {
    match session.command_ok(Command::KillTerminals {
        terminals: ids.to_vec(),
    }) {
        Err(CtlError::Refused { code, .. }) if code == ErrorCode::TERMINAL_NOT_FOUND => {
            let live: HashSet<TerminalId> = list::terminal_ids(session)?.into_iter().collect();
            let missing: Vec<String> = ids
                .iter()
                .filter(|id| !live.contains(id))
                .map(ToString::to_string)
                .collect();
            Err(CtlError::Refused {
                code,
                message: format!(
                    "no terminal {}; nothing was killed",
                    if missing.is_empty() {
                        "by one of those ids".to_owned()
                    } else {
                        missing.join(", ")
                    }
                ),
            })
        }
        other => other.map(|_| EXIT_OK),
    }
}

/// TERMINAL_RESIZE (which has no answer), then the size the terminal has now (the server
/// clamps a size, [TERMINAL.RESIZE.3]).
fn resize(
    session: &mut Session,
    id: &TerminalId,
    (cols, rows): (u16, u16),
) -> Result<u8, CtlError> {
    session.send(&Frame::TerminalResize(TerminalResize {
        terminal: id.clone(),
        size: TerminalSize { cols, rows },
    }))?;
    // The server handles one connection's frames in order: this answer follows the resize.
    let now = list::terminal(session, id)?.ok_or_else(|| CtlError::Refused {
        code: ErrorCode::TERMINAL_NOT_FOUND,
        message: format!("no terminal {id}"),
    })?;
    println!("{}x{}", now.cols, now.rows);
    Ok(EXIT_OK)
}

fn screen(session: &mut Session, args: cli::ScreenArgs) -> Result<u8, CtlError> {
    let value = session.command_ok(Command::GetScreen {
        terminal: args.id,
        request_scrollback: args.scrollback,
        cells: false,
    })?;
    let Some(CommandValue::Json(json)) = value else {
        return Err(CtlError::Local(format!("GET_SCREEN answered {value:?}")));
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let _ = writeln!(out, "{json}");
        return Ok(EXIT_OK);
    }
    let doc: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| CtlError::Local(format!("GET_SCREEN's JSON: {e}")))?;
    let rows = |key: &str| -> Vec<String> {
        doc.get(key)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|l| l.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut lines = rows("scrollback");
    lines.extend(rows("lines"));
    // The empty rows below the last written one are not content.
    while lines.last().is_some_and(|l| l.trim_end().is_empty()) {
        lines.pop();
    }
    for line in lines {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    Ok(EXIT_OK)
}

fn watch(session: &mut Session, id: &TerminalId, bootstrap: bool) -> Result<u8, CtlError> {
    session.command_ok(Command::AttachTerminal {
        terminal: id.clone(),
    })?;
    let mut out = std::io::stdout().lock();
    loop {
        let bytes = match session.step(None)? {
            Step::Event(ClientEvent::Frame(Frame::TerminalOutput(o))) if o.terminal == *id => {
                o.bytes
            }
            Step::Event(ClientEvent::Frame(Frame::BootstrapChunk(c)))
                if bootstrap && c.terminal == *id =>
            {
                c.payload
            }
            Step::Event(ClientEvent::Frame(Frame::TerminalClosed(c))) if c.terminal == *id => {
                return Ok(EXIT_OK);
            }
            Step::Closed => {
                return Err(session_lost("the output of the terminal ended"));
            }
            _ => continue,
        };
        // A closed stdout (a pipe's reader left) ends the watch quietly.
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() {
            return Ok(EXIT_OK);
        }
    }
}

fn events(session: &mut Session, id: Option<TerminalId>, json: bool) -> Result<u8, CtlError> {
    session.send(&Frame::SubscribeEvents(SubscribeEvents { terminal: id }))?;
    let mut out = std::io::stdout().lock();
    loop {
        match session.step(None)? {
            Step::Event(ClientEvent::Frame(frame @ Frame::Event(_))) => {
                let line = if json {
                    event_json(&frame).to_string()
                } else {
                    frame.to_string()
                };
                // A closed stdout (a pipe's reader left) ends the stream quietly.
                if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                    return Ok(EXIT_OK);
                }
            }
            Step::Event(ClientEvent::Frame(Frame::Error(e))) => {
                return Err(CtlError::Refused {
                    code: e.code,
                    message: e.message,
                });
            }
            Step::Closed => return Err(session_lost("no more events can come")),
            _ => {}
        }
    }
}

/// An EVENT frame as one JSON object: the terminal, the event's name and fields, and the
/// notation line (which also carries what has no field here).
fn event_json(frame: &Frame) -> serde_json::Value {
    use phux_proto::event::AgentEvent;
    let Frame::Event(e) = frame else {
        return serde_json::Value::Null;
    };
    let mut doc = serde_json::json!({
        "terminal": e.terminal.as_ref().map(ToString::to_string),
        "frame": frame.to_string(),
    });
    let (name, fields) = match &e.event {
        AgentEvent::CommandStarted => ("command_started", serde_json::json!({})),
        AgentEvent::CommandFinished { exit_code } => (
            "command_finished",
            serde_json::json!({ "exit_code": exit_code }),
        ),
        AgentEvent::TitleChanged { title } => {
            ("title_changed", serde_json::json!({ "title": title }))
        }
        AgentEvent::Bell => ("bell", serde_json::json!({})),
        AgentEvent::PaneSpawned => ("pane_spawned", serde_json::json!({})),
        AgentEvent::PaneClosed { exit_status } => (
            "pane_closed",
            serde_json::json!({ "exit_status": exit_status }),
        ),
        AgentEvent::Dirty => ("dirty", serde_json::json!({})),
        AgentEvent::Idle => ("idle", serde_json::json!({})),
        AgentEvent::TerminalControl(_) => ("terminal_control", serde_json::json!({})),
        AgentEvent::Asked(_) => ("asked", serde_json::json!({})),
        AgentEvent::CwdChanged { cwd } => ("cwd_changed", serde_json::json!({ "cwd": cwd })),
        AgentEvent::Unknown { tag, .. } => ("unknown", serde_json::json!({ "tag": tag })),
    };
    if let (Some(doc), serde_json::Value::Object(fields)) = (doc.as_object_mut(), fields) {
        doc.insert("event".to_owned(), name.into());
        doc.extend(fields);
    }
    doc
}

/// The server went away under a streaming verb.
fn session_lost(consequence: &str) -> CtlError {
    CtlError::ConnectionLost(format!(
        "lost the server: the connection closed, so {consequence}"
    ))
}

fn lease(session: &mut Session, args: &cli::LeaseArgs) -> Result<u8, CtlError> {
    match args.action {
        LeaseAction::Acquire => {
            session.command_ok(Command::AcquireInput {
                terminal: args.id.clone(),
                mode: if args.seize {
                    AcquireMode::Seize
                } else {
                    AcquireMode::Cooperative
                },
                ttl_ms: args.ttl,
            })?;
            if args.hold {
                println!("held");
                let _ = std::io::stdout().flush();
                // The lease lives as long as this connection: wait for stdin to end.
                let mut sink = Vec::new();
                let _ = std::io::stdin().lock().read_to_end(&mut sink);
            } else {
                println!(
                    "acquired {}; the lease ends now, as this command exits (a lease lasts as \
                     long as the connection that took it: use --hold to keep it)",
                    args.id
                );
            }
        }
        LeaseAction::Release => {
            let before = list::lease_holder(session, &args.id)?;
            session.command_ok(Command::ReleaseInput {
                terminal: args.id.clone(),
            })?;
            let after = list::lease_holder(session, &args.id)?;
            match (before, after) {
                (None, _) => println!("released nothing: {} has no lease", args.id),
                (Some(holder), Some(_)) => println!(
                    "released nothing: {}'s lease is held by client {holder}, not by this \
                     command; it ends when that client releases it or disconnects",
                    args.id
                ),
                (Some(_), None) => println!("released {}", args.id),
            }
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn verdicts_read_as_documented() {
        assert_eq!(verdict(&Resolution::Delivered), "delivered");
        assert!(
            verdict(&Resolution::Unknown(UnknownReason::DeliveryUnknown)).starts_with("unknown: ")
        );
        assert_eq!(
            verdict(&Resolution::Refused {
                code: ErrorCode::INPUT_LEASE_HELD,
                message: "held".into()
            }),
            "refused: INPUT_LEASE_HELD held"
        );
        assert_eq!(resolution_code(&Resolution::Delivered), EXIT_OK);
        assert_eq!(
            resolution_code(&Resolution::Unknown(UnknownReason::HorizonElapsed)),
            EXIT_UNKNOWN
        );
    }

    #[test]
    fn exit_codes_are_distinct() {
        let codes = [
            EXIT_OK,
            EXIT_LOCAL,
            EXIT_USAGE,
            EXIT_UNKNOWN,
            EXIT_REFUSED,
            EXIT_CONNECTION,
        ];
        let set: HashSet<u8> = codes.into_iter().collect();
        assert_eq!(set.len(), codes.len());
    }
}
