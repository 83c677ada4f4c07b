//! Starting the server on demand (`phuxctl new`), as `tmux new`, `dtach -A` and `abduco -A`
//! do: when nothing answers on the local socket, phuxctl starts `phux-mio-server` there, in a
//! session of its own, and connects once it listens (spec/client.md, CLIENT.START.N).
//!
//! Two shells doing this at once start one server: each holds a lock in phuxctl's state
//! directory while it checks for a server and starts one, and the second finds the first's
//! server listening (CLIENT.START.2). The connection then goes through the same checks as any
//! other (CLIENT.PEER.N): a server phuxctl started is trusted no more than one it found.

use std::fs::OpenOptions;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use phux_local::Target;

use crate::error::CtlError;
use crate::outbox_store::{io_error, lock_file, private_dir, state_dir};

/// The variable naming the server binary to start (default: `phux-mio-server` next to
/// phuxctl, else on `$PATH`).
pub const SERVER_VAR: &str = "PHUXCTL_SERVER";

/// Between two tries to reach a server that is starting.
const POLL: Duration = Duration::from_millis(20);

/// The log file's mode, as the server makes its own ([SERVER.LOG.2]).
const LOG_MODE: u32 = 0o600;

/// What [`ensure`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// A server was already listening.
    Found,
    /// phuxctl started one, logging to this file.
    Started(PathBuf),
}

/// Whether an error from dialling `target` means that no server listens there (rather than
/// one that refused or misbehaved).
pub fn nobody_listens(error: &CtlError) -> bool {
    matches!(
        error,
        CtlError::Connect { source, .. }
            if matches!(source.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused)
    )
}

/// Makes sure a server listens on `target`, starting one when none does. `name` is the
/// server's `--name` (used when `explicit` is false), `key` names its lock and log, `wait`
/// bounds how long the new server may take to listen, and `dial` tries a connection.
pub fn ensure<S>(
    target: &Target,
    explicit: bool,
    name: &str,
    key: &str,
    wait: Duration,
    mut dial: impl FnMut() -> Result<S, CtlError>,
) -> Result<(S, Started), CtlError> {
    match dial() {
        Ok(session) => return Ok((session, Started::Found)),
        Err(e) if nobody_listens(&e) => {}
        Err(e) => return Err(e),
    }
    let dir = state_dir()?;
    private_dir(&dir)?;
    // [CLIENT.START.2] One starter at a time; the next finds its server.
    let _lock = lock_file(&dir.join(format!("start-{key}.lock")))?;
    match dial() {
        Ok(session) => return Ok((session, Started::Found)),
        Err(e) if nobody_listens(&e) => {}
        Err(e) => return Err(e),
    }
    let log = dir.join(format!("{key}.log"));
    let binary = server_binary();
    let mut child = spawn_server(&binary, target, explicit, name, &log)?;
    let deadline = Instant::now() + wait;
    loop {
        match dial() {
            Ok(session) => return Ok((session, Started::Started(log))),
            Err(e) if nobody_listens(&e) => {}
            Err(e) => return Err(e),
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CtlError::Local(format!(
                "started {} to listen on {}, but it exited ({status}); its log, {}, says:\n{}",
                binary.display(),
                target.path.display(),
                log.display(),
                log_tail(&log)
            )));
        }
        if Instant::now() >= deadline {
            return Err(CtlError::Local(format!(
                "started {} (pid {}), but it did not listen on {} within {}s; see its log, {}",
                binary.display(),
                child.id(),
                target.path.display(),
                wait.as_secs(),
                log.display()
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// The server binary: `$PHUXCTL_SERVER`, else `phux-mio-server` beside this executable, else
/// `phux-mio-server` from `$PATH`.
fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os(SERVER_VAR).filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .ok()
        .and_then(|me| Some(me.parent()?.join("phux-mio-server")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("phux-mio-server"))
}

/// Starts the server in a session of its own (`--detach`), stdin and stdout on /dev/null and
/// everything it writes in `log`.
fn spawn_server(
    binary: &Path,
    target: &Target,
    explicit: bool,
    name: &str,
    log: &Path,
) -> Result<std::process::Child, CtlError> {
    let stderr = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(LOG_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(log)
        .map_err(|e| io_error("open", log, e))?;
    let mut command = Command::new(binary);
    command.arg("--detach").arg("--log-file").arg(log);
    if explicit {
        command.arg("--socket").arg(&target.path);
    } else {
        command.arg("--name").arg(name);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .map_err(|source| CtlError::Exec {
            command: format!(
                "{} (set {SERVER_VAR} to the server binary)",
                binary.display()
            ),
            source,
        })
}

/// The last lines of a log, for an error message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}
