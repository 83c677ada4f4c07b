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
//! Without `--socket` it dials the server's default path, which `phux_local::socket_path`
//! decides for both. `phuxctl --help` lists every command; [`cli`] holds them and [`run`]
//! dispatches one to its verb: [`send`] (`send`, `paste`), [`spawn`], [`list`], [`view`]
//! (`screen`, `watch`, `events`), [`control`] (`kill`, `resize`, `lease`, `signal`,
//! `upgrade`), [`attach`] and [`outbox_verb`]. A run fails with an [`error::CtlError`], whose
//! exit status is documented there.
//!
//! Every run first opens the outbox journal for its server (see [`outbox_store`]), rebuilds
//! the engine from it and connects; operations an earlier run left unresolved are resumed
//! with the same id or reported (on stderr) before the run's own work.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod attach;
pub mod cli;
pub mod conn;
pub mod control;
pub mod error;
pub mod keys;
pub mod link;
pub mod list;
pub mod outbox_store;
pub mod outbox_verb;
mod report;
pub mod send;
pub mod spawn;
pub mod tty_input;
pub mod view;

use std::process::ExitCode;

use phux_local::verify;
use phux_proto::{ErrorCode, TerminalId};

use cli::{Cli, CtlCommand};
use conn::{COMMAND_TIMEOUT, INPUT_TIMEOUT, Session, Waits};
use link::Endpoint;

pub use control::UPGRADE_TIMEOUT;
pub use error::{
    CtlError, EXIT_BOOKKEEPING, EXIT_CONNECTION, EXIT_LOCAL, EXIT_OK, EXIT_REFUSED, EXIT_TEST_HOOK,
    EXIT_UNKNOWN, EXIT_USAGE, program_exit_code, spawn_error_text,
};
pub use send::verdict;
pub use spawn::DEFAULT_SIZE;

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
        CtlCommand::Signal(a) => a.resolve().map(|(_, id)| id.clone()),
        CtlCommand::Watch { id, .. }
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
        CtlCommand::Man { verb, dir } => return manual(verb, dir.as_deref()),
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
        CtlCommand::Paste(args) => Some(send::read_paste(args.file.as_ref())?),
        _ => None,
    };
    // A path for the server's host is checked and resolved here only when that is this host.
    let remote = matches!(path, Endpoint::Exec(_));
    let upgrade_binary = match &cli.command {
        CtlCommand::Upgrade { binary: Some(path) } => Some(control::absolute_binary(path, remote)?),
        _ => None,
    };
    let spawn_cwd = match &cli.command {
        CtlCommand::Spawn(args) => args
            .cwd
            .as_deref()
            .map(|dir| spawn::checked_cwd(dir, remote))
            .transpose()?,
        _ => None,
    };
    let mut session = open_session(&cli, &path, uses_outbox, waits)?;
    let code = match cli.command {
        CtlCommand::Spawn(args) => spawn::spawn(&mut session, args, spawn_cwd)?,
        CtlCommand::List { json } => list::print(&mut session, json)?,
        CtlCommand::Kill { ids } => control::kill(&mut session, &ids)?,
        CtlCommand::Send(args) => send::send(&mut session, args, waits.input)?,
        CtlCommand::Paste(args) => send::paste(
            &mut session,
            args,
            paste_data.unwrap_or_default(),
            waits.input,
        )?,
        CtlCommand::Screen(args) => view::screen(&mut session, args)?,
        CtlCommand::Watch { id, bootstrap } => view::watch(&mut session, &id, bootstrap)?,
        CtlCommand::Events { id, json } => view::events(&mut session, id.as_ref(), json)?,
        CtlCommand::Lease(args) => control::lease(&mut session, &args)?,
        CtlCommand::Signal(args) => {
            let (signal, id) = args.resolve().ok_or_else(|| {
                CtlError::Usage("signal needs one signal and one terminal id".to_owned())
            })?;
            control::signal(&mut session, signal, id.clone())?
        }
        CtlCommand::Attach(args) => attach::attach(&mut session, &args)?,
        CtlCommand::Resize { id, size } => control::resize(&mut session, &id, size)?,
        CtlCommand::Upgrade { .. } => control::upgrade(&mut session, upgrade_binary, cli.timeout)?,
        // Handled before connecting.
        CtlCommand::Outbox(_) | CtlCommand::Completions { .. } | CtlCommand::Man { .. } => EXIT_OK,
    };
    // [CLIENT.VERDICT.1] The verdicts are printed; journal upkeep that failed after them is
    // said apart, with its own status.
    Ok(session.finish(code))
}

/// `man`: phuxctl(1), a verb's page, or every page written into `dir`.
fn manual(verb: &[String], dir: Option<&std::path::Path>) -> Result<u8, CtlError> {
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    // Built, a verb's page is named phuxctl-VERB and its synopsis says `phuxctl VERB`.
    cmd.build();
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .and_then(|()| clap_mangen::generate_to(cmd, dir))
            .map_err(|e| CtlError::Local(format!("writing the pages to {}: {e}", dir.display())))?;
        println!("wrote the manual pages to {}", dir.display());
        return Ok(EXIT_OK);
    }
    let mut page = &cmd;
    for word in verb {
        page = page.find_subcommand(word).ok_or_else(|| {
            CtlError::Usage(format!(
                "no page for `{}`: `phuxctl --help` lists the verbs",
                verb.join(" ")
            ))
        })?;
    }
    clap_mangen::Man::new(page.clone())
        .render(&mut std::io::stdout())
        .map_err(|e| CtlError::Local(format!("writing the manual page: {e}")))?;
    Ok(EXIT_OK)
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
