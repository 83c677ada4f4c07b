//! The verbs that act on terminals and on the server without sending input: `kill`,
//! `resize`, `lease`, `signal` and `upgrade`.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::time::Duration;

use phux_proto::command::{AcquireMode, Signal};
use phux_proto::frame::{TerminalResize, TerminalSize};
use phux_proto::{Command, ErrorCode, Frame, TerminalId};

use crate::cli::{LeaseAction, LeaseArgs, SignalName};
use crate::conn::Session;
use crate::error::{CtlError, EXIT_OK};
use crate::list;

/// KILL_TERMINALS; a refusal for an unknown id names the ids that are not there.
pub(crate) fn kill(session: &mut Session, ids: &[TerminalId]) -> Result<u8, CtlError> {
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
pub(crate) fn resize(
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

/// ACQUIRE_INPUT (held while stdin lasts with `--hold`) or RELEASE_INPUT, and what changed.
pub(crate) fn lease(
    session: &mut Session,
    id: &TerminalId,
    args: &LeaseArgs,
) -> Result<u8, CtlError> {
    match args.action {
        LeaseAction::Acquire => {
            session.command_ok(Command::AcquireInput {
                terminal: id.clone(),
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
                    "acquired {id}; the lease ends now, as this command exits (a lease lasts as \
                     long as the connection that took it: use --hold to keep it)"
                );
            }
        }
        LeaseAction::Release => {
            let before = list::lease_holder(session, id)?;
            session.command_ok(Command::ReleaseInput {
                terminal: id.clone(),
            })?;
            let after = list::lease_holder(session, id)?;
            match (before, after) {
                (None, _) => println!("released nothing: {id} has no lease"),
                (Some(holder), Some(_)) => {
                    return Err(CtlError::NotDone(format!(
                        "released nothing: {id}'s lease is held by client {holder}, not by this \
                         command; it ends when that client releases it or disconnects"
                    )));
                }
                (Some(_), None) => println!("released {id}"),
            }
        }
    }
    Ok(EXIT_OK)
}

/// SIGNAL_TERMINAL.
pub(crate) fn signal(
    session: &mut Session,
    signal: SignalName,
    id: TerminalId,
) -> Result<u8, CtlError> {
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
    Ok(EXIT_OK)
}

/// How long `upgrade` waits for its answer by default: the server's check of the new binary
/// (at most 5 s), its wait for quiet terminals (at most 2 s) and the exec, on a loaded host.
pub const UPGRADE_TIMEOUT: Duration = Duration::from_mins(1);

/// The binary `upgrade --binary` names, as an absolute path: the server runs in another
/// directory. On a remote server's host (`remote`) this shell's directory means nothing: the
/// path must be absolute there already.
pub(crate) fn absolute_binary(path: &std::path::Path, remote: bool) -> Result<String, CtlError> {
    if remote && !path.is_absolute() {
        return Err(CtlError::Usage(format!(
            "--binary {}: with --ssh or --exec the path is on the server's host and must be \
             absolute",
            path.display()
        )));
    }
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
pub(crate) fn upgrade(
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
