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
pub mod history;
pub mod keys;
pub mod link;
pub mod list;
pub mod names;
pub mod outbox_store;
pub mod outbox_verb;
mod report;
pub mod send;
mod server_verbs;
pub mod spawn;
pub mod start;
pub mod tty_input;
pub mod view;

use std::process::ExitCode;

use phux_local::verify;
use phux_proto::{ErrorCode, TerminalId};

use cli::{Cli, CtlCommand, NewArgs};
use conn::{COMMAND_TIMEOUT, INPUT_TIMEOUT, Session, Waits};
use link::ServerAddress;
use names::{Target, Use};

pub use control::UPGRADE_TIMEOUT;
pub use error::{
    CtlError, EXIT_BOOKKEEPING, EXIT_CONNECTION, EXIT_LOCAL, EXIT_OK, EXIT_REFUSED, EXIT_TEST_HOOK,
    EXIT_UNKNOWN, EXIT_USAGE, program_exit_code, spawn_error_text,
};
pub use report::verdict;
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
fn single_target(command: &CtlCommand) -> Option<Target> {
    match command {
        CtlCommand::Send(a) => Some(a.id.clone()),
        CtlCommand::Paste(a) => Some(a.id.clone()),
        CtlCommand::Screen(a) => Some(a.id.clone()),
        CtlCommand::Lease(a) => Some(a.id.clone()),
        CtlCommand::Attach(a) => a.id.clone(),
        CtlCommand::Signal(a) => a.resolve().map(|(_, id)| id.clone()),
        CtlCommand::Watch { id, .. }
        | CtlCommand::Resize { id, .. }
        | CtlCommand::Clients { id, .. }
        | CtlCommand::Events { id: Some(id), .. } => Some(id.clone()),
        _ => None,
    }
}

/// A TERMINAL_NOT_FOUND refusal names the terminal the user gave (the server's text does
/// not).
fn name_the_terminal(error: CtlError, target: Option<&Target>) -> CtlError {
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
    let address = server_address(&cli)?;
    let waits = Waits {
        command: cli.timeout.unwrap_or(COMMAND_TIMEOUT),
        input: cli.timeout.unwrap_or(INPUT_TIMEOUT),
        lock: cli.timeout,
    };
    if let CtlCommand::Outbox(args) = &cli.command {
        // Before connecting: listing and dropping need no server.
        return outbox_verb::run(&cli, &address, args, waits);
    }
    let key = outbox_verb::key(&cli, &address);
    let place = match address {
        ServerAddress::Socket(_) => spawn::Place::Local,
        ServerAddress::Exec(_) => spawn::Place::Remote,
    };
    // Read what `paste` sends, and check what `spawn` names, before taking the lock or
    // connecting: stdin may be slow, and a bad argument is not the server's to report.
    let paste_data = match &cli.command {
        CtlCommand::Paste(args) => Some(send::read_paste(args.file.as_ref())?),
        _ => None,
    };
    // A path for the server's host is checked and resolved here only when that is this host.
    let remote = matches!(address, ServerAddress::Exec(_));
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
        CtlCommand::New(args) => args
            .spawn
            .cwd
            .as_deref()
            .map(|dir| spawn::checked_cwd(dir, remote))
            .transpose()?,
        _ => None,
    };
    if let CtlCommand::New(args) = cli.command.clone() {
        return new(&cli, &address, &key, args, spawn_cwd, place, waits);
    }
    // The terminal `send` and `paste` write to, known before connecting: its earlier
    // operations are resumed first ([CLIENT.RESUME.1]).
    let sends_to = match &cli.command {
        CtlCommand::Send(args) => Some(names::peek(&key, &args.id)?),
        CtlCommand::Paste(args) => Some(names::peek(&key, &args.id)?),
        _ => None,
    };
    let mut session = outbox_verb::open_session(&cli, &address, sends_to, waits)?;
    let mut names = names::Resolver::new(&key);
    let code = match cli.command {
        CtlCommand::Spawn(args) => {
            let name = args.named.clone();
            // An unnamed terminal is noted as the most recent only where phuxctl already
            // keeps names: spawn creates no state of its own.
            let usage = if name.is_some() {
                Use::Write
            } else {
                Use::Read
            };
            let mut book = names.bound(&mut session, usage)?;
            if let Some(name) = &name
                && let Some(other) = book.lookup(name)
            {
                return Err(names::taken(name, &other));
            }
            let id = spawn::create(&mut session, args, spawn_cwd, place)?;
            if let Some(name) = &name {
                book.insert(name, &id)?;
            }
            book.touch(&id);
            book.save()?;
            println!("{id}");
            EXIT_OK
        }
        CtlCommand::List { json } => {
            let book = names.bound(&mut session, Use::Read)?;
            list::print(&mut session, json, |id| book.name_of(id))?
        }
        CtlCommand::Kill { ids } => {
            let ids = ids
                .iter()
                .map(|t| names.resolve(&mut session, t))
                .collect::<Result<Vec<_>, _>>()?;
            control::kill(&mut session, &ids)?
        }
        CtlCommand::Send(args) => {
            let id = names.resolve(&mut session, &args.id)?;
            send::send(&mut session, id, &args, waits.input)?
        }
        CtlCommand::Paste(args) => {
            let id = names.resolve(&mut session, &args.id)?;
            send::paste(
                &mut session,
                id,
                &args,
                paste_data.unwrap_or_default(),
                waits.input,
            )?
        }
        CtlCommand::Screen(args) => {
            let id = names.resolve(&mut session, &args.id)?;
            view::screen(&mut session, id, &args)?
        }
        CtlCommand::Watch { id, bootstrap } => {
            let id = names.resolve(&mut session, &id)?;
            view::watch(&mut session, &id, bootstrap)?
        }
        CtlCommand::Events { id, json } => {
            let id = id.map(|t| names.resolve(&mut session, &t)).transpose()?;
            view::events(&mut session, id.as_ref(), json)?
        }
        CtlCommand::Lease(args) => {
            let id = names.resolve(&mut session, &args.id)?;
            control::lease(&mut session, &id, &args)?
        }
        CtlCommand::Signal(args) => {
            let (signal, target) = args.resolve().ok_or_else(|| {
                CtlError::Usage("signal needs one signal and one terminal id".to_owned())
            })?;
            let id = names.resolve(&mut session, target)?;
            control::signal(&mut session, signal, id)?
        }
        CtlCommand::Attach(args) => {
            let mut book = names.bound(&mut session, Use::Note)?;
            let id = match &args.id {
                Some(target) => names::lookup(&book, target)?,
                None => most_recent(&mut session, &book)?,
            };
            book.touch(&id);
            book.save()?;
            // Not held while attached: other phuxctl runs name and attach meanwhile.
            drop(book);
            attach::attach(&mut session, &id, &args.how)?
        }
        CtlCommand::Resize { id, size } => {
            let id = names.resolve(&mut session, &id)?;
            control::resize(&mut session, &id, size)?
        }
        CtlCommand::Upgrade { .. } => control::upgrade(&mut session, upgrade_binary, cli.timeout)?,
        CtlCommand::Shutdown => server_verbs::shutdown(&mut session, &address, waits.command)?,
        CtlCommand::Info { json } => server_verbs::info(&mut session, &address, json)?,
        CtlCommand::Clients { id, json } => {
            let id = names.resolve(&mut session, &id)?;
            server_verbs::clients(&mut session, &id, json)?
        }
        // Handled before connecting.
        CtlCommand::New(_)
        | CtlCommand::Outbox(_)
        | CtlCommand::Completions { .. }
        | CtlCommand::Man { .. } => EXIT_OK,
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

/// `new`: create a terminal (starting the server when none listens on the local socket),
/// or with -A find the one of that name, then attach unless -d.
fn new(
    cli: &Cli,
    address: &ServerAddress,
    key: &str,
    args: NewArgs,
    cwd: Option<String>,
    place: spawn::Place,
    waits: Waits,
) -> Result<u8, CtlError> {
    use std::io::IsTerminal;
    if !(args.detached || std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        // Said before anything is created: a terminal nobody attaches to would be left.
        return Err(CtlError::Local(
            "new attaches, which needs a terminal on stdin and stdout (-d: create it detached)"
                .to_owned(),
        ));
    }
    let dial = || outbox_verb::open_session(cli, address, None, waits);
    let mut session = match address {
        // [CLIENT.START.1] Only a server on this host is started, and only where none listens.
        ServerAddress::Socket(target) => {
            let (session, started) = start::ensure(
                target,
                cli.socket.is_some(),
                &cli.name,
                key,
                waits.command,
                dial,
            )?;
            if let start::Started::Started(log) = started {
                eprintln!(
                    "phuxctl: started a server on {} (its log: {})",
                    target.path.display(),
                    log.display()
                );
            }
            session
        }
        ServerAddress::Exec(_) => dial()?,
    };
    let mut names = names::Resolver::new(key);
    let mut book = names.bound(&mut session, Use::Write)?;
    let existing = args.spawn.named.as_deref().and_then(|n| book.lookup(n));
    let id = match (existing, args.spawn.named.clone()) {
        (Some(id), _) if args.attach_existing => id,
        (Some(id), Some(name)) => return Err(names::taken(&name, &id)),
        (_, name) => {
            let id = spawn::create(&mut session, args.spawn, cwd, place)?;
            if let Some(name) = name {
                book.insert(&name, &id)?;
            }
            id
        }
    };
    book.touch(&id);
    book.save()?;
    drop(book);
    if args.detached {
        println!("{id}");
        return Ok(EXIT_OK);
    }
    attach::attach(&mut session, &id, &args.how)
}

/// `attach` with no terminal: the most recent ([CLIENT.NAME.4]), the one phuxctl last
/// created or attached to on this host while it lives, else the newest (ids grow within an
/// incarnation, [ID.TERMINAL.2]).
fn most_recent(session: &mut Session, book: &names::Book) -> Result<TerminalId, CtlError> {
    if let Some(id) = book.recent() {
        return Ok(id);
    }
    list::terminal_ids(session)?
        .into_iter()
        .filter_map(|id| match id {
            TerminalId::Local(n) => Some(n),
            TerminalId::Satellite { .. } => None,
        })
        .max()
        .map(TerminalId::Local)
        .ok_or_else(|| CtlError::Refused {
            code: ErrorCode::TERMINAL_NOT_FOUND,
            message: "no terminal to attach to (`phuxctl new` creates one)".to_owned(),
        })
}

/// The server this run talks to: through `--exec` or `--ssh`, else the local socket.
fn server_address(cli: &Cli) -> Result<ServerAddress, CtlError> {
    if let Some(remote) = ServerAddress::remote(
        cli.exec.as_deref(),
        cli.ssh.as_deref(),
        cli.socket.as_deref(),
        &cli.name,
    ) {
        return Ok(remote);
    }
    verify::target(cli.socket.as_deref(), &cli.name)
        .map(ServerAddress::Socket)
        .map_err(|e| CtlError::Local(e.to_string()))
}
