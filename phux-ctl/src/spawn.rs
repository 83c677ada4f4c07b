//! `spawn`: SPAWN_TERMINAL from the command line, and its refusals in words.

use phux_proto::frame::{SpawnTerminal, TerminalSize};
use phux_proto::{GroupId, TerminalId};

use crate::cli::SpawnArgs;
use crate::conn::Session;
use crate::error::CtlError;

/// SPAWN_TERMINAL's default size (`initial_size` absent or with a 0 axis).
pub const DEFAULT_SIZE: (u16, u16) = (80, 24);

/// `spawn --cwd`: made absolute against this shell's directory and required to be a
/// directory, so a bad one is blamed rather than the program. On a remote server's host
/// (`remote`) nothing here says what is there: the path must be absolute and goes as given
/// (the server refuses a spawn into a directory that is not there).
pub(crate) fn checked_cwd(dir: &std::path::Path, remote: bool) -> Result<String, CtlError> {
    let bad = |why: String| CtlError::Usage(format!("--cwd {}: {why}", dir.display()));
    if remote {
        if !dir.is_absolute() {
            return Err(bad(
                "with --ssh or --exec the directory is on the server's host and must be absolute"
                    .to_owned(),
            ));
        }
        return dir
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| bad("not UTF-8, which the protocol requires".to_owned()));
    }
    let absolute = std::fs::canonicalize(dir).map_err(|e| bad(e.to_string()))?;
    if !absolute.is_dir() {
        return Err(bad("not a directory".to_owned()));
    }
    absolute
        .into_os_string()
        .into_string()
        .map_err(|_| bad("not UTF-8, which the protocol requires".to_owned()))
}

/// Where the program runs when the caller says nothing: this shell's directory and
/// environment for a server on this host ([CLIENT.SPAWN.1]), the server's over `--ssh` and
/// `--exec`, where nothing of this host is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The server runs on this host.
    Local,
    /// The server is reached through a command (`--ssh`, `--exec`).
    Remote,
}

/// SPAWN_TERMINAL as `args` asks (the name is the caller's to record); the new id.
pub(crate) fn create(
    session: &mut Session,
    args: SpawnArgs,
    cwd: Option<String>,
    place: Place,
) -> Result<TerminalId, CtlError> {
    let mut spawn = SpawnTerminal::new(0, GroupId(1));
    if !args.command.is_empty() {
        spawn.command = Some(args.command);
    }
    let ours = place == Place::Local && !args.server_env;
    // [CLIENT.SPAWN.1] This shell's directory unless told otherwise (one that is gone or not
    // UTF-8 leaves the server's).
    spawn.cwd = cwd.or_else(|| {
        ours.then(|| {
            std::env::current_dir()
                .ok()?
                .into_os_string()
                .into_string()
                .ok()
        })
        .flatten()
    });
    spawn.term = args.term;
    if place == Place::Remote && !args.clear_env && !args.env.is_empty() {
        // This host's environment is not the server's host's (and may hold secrets): the
        // program keeps the server's environment and `env` adds the variables before it
        // runs, as `ssh HOST env K=V CMD` does.
        // `--` first: env stops taking options at the first assignment.
        let mut argv = vec!["env".to_owned(), "--".to_owned()];
        argv.extend(args.env.iter().map(|(k, v)| format!("{k}={v}")));
        match spawn.command.take() {
            Some(command) => argv.extend(command),
            // The far side names the default program: its $SHELL.
            None => argv.extend(["/bin/sh", "-c", "exec \"${SHELL:-/bin/sh}\""].map(str::to_owned)),
        }
        spawn.command = Some(argv);
    } else if args.clear_env || !args.env.is_empty() || ours {
        let mut env: Vec<(String, String)> = if args.clear_env {
            Vec::new()
        } else {
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                // This shell's TERM names the outer terminal; the program's is the one the
                // server models (--term, --env TERM=, else the server's default).
                .filter(|(k, _)| k != "TERM")
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
    let asked = spawn.initial_size;
    let id = session.spawn(spawn)?;
    if let Some(asked) = asked
        && let Some(now) = crate::list::terminal(session, &id)?
        && (now.cols, now.rows) != (asked.cols, asked.rows)
    {
        // [TERMINAL.RESIZE.3] A server clamps the size: say so rather than leave the user
        // with a terminal of another size than the one asked for.
        eprintln!(
            "phuxctl: {id} is {}x{}, not the {}x{} asked for: the server limits a terminal's size",
            now.cols, now.rows, asked.cols, asked.rows
        );
    }
    Ok(id)
}
