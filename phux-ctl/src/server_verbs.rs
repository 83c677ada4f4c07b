//! The verbs about the server rather than a terminal's input: `shutdown` (tmux's
//! `kill-server`), `info` (its id, versions and what it offers) and `clients` (who is attached
//! to a terminal, tmux's `list-clients`).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use phux_proto::frame::ServerFeatures;
use phux_proto::{Command, ErrorCode, TerminalId};

use crate::conn::Session;
use crate::error::{CtlError, EXIT_OK};
use crate::link::ServerAddress;
use crate::list;

/// `shutdown`: SHUTDOWN, only where HELLO_OK advertised it; then, on this host, waits until the
/// socket is gone, so that a `phuxctl new` right after starts a fresh server.
pub(crate) fn shutdown(
    session: &mut Session,
    address: &ServerAddress,
    wait: Duration,
) -> Result<u8, CtlError> {
    let offered = session
        .hello()
        .is_some_and(|h| h.capabilities.features.contains(ServerFeatures::SHUTDOWN));
    // [CLIENT.SHUTDOWN.1] An unadvertised SHUTDOWN is dropped silently by an older server:
    // "nothing happened" would read as success.
    if !offered {
        return Err(CtlError::Refused {
            code: ErrorCode::INVALID_COMMAND,
            message: "this server does not offer SHUTDOWN (its HELLO_OK lacks the feature)"
                .to_owned(),
        });
    }
    match session.command_ok(Command::Shutdown) {
        // [CLIENT.SHUTDOWN.2] The connection ends with the server: a disconnect after the
        // request is the server stopping, not a failure to stop it.
        Ok(_) | Err(CtlError::ConnectionLost(_)) => {}
        Err(e) => return Err(e),
    }
    if let ServerAddress::Socket(target) = address {
        let deadline = Instant::now() + wait;
        while target.path.exists() {
            if Instant::now() >= deadline {
                return Err(CtlError::Timeout("the server to remove its socket"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    println!("stopped");
    Ok(EXIT_OK)
}

/// `info`: the server's id and protocol version from HELLO_OK, what it offers, its terminals,
/// and, on this host, the program serving (the pid listening on the socket and its binary's
/// `--version`); `-` where only the server's host could say.
pub(crate) fn info(
    session: &mut Session,
    address: &ServerAddress,
    json_out: bool,
) -> Result<u8, CtlError> {
    let hello = session
        .hello()
        .cloned()
        .ok_or_else(|| CtlError::Local("no HELLO_OK on this connection".to_owned()))?;
    let rows = list::collect(session)?;
    let exited = rows
        .iter()
        .filter(|r| r.lifecycle.as_deref() == Some("exited"))
        .count();
    let server_id = crate::names::hex(&hello.server_id);
    let v = hello.version;
    let protocol = format!("{}.{}.{}", v.major, v.minor, v.patch);
    let features = hello.capabilities.features.names();
    let (place, pid, program) = match address {
        ServerAddress::Socket(target) => {
            let pid = std::os::unix::net::UnixStream::connect(&target.path)
                .and_then(phux_local::socket::peer_pid)
                .ok();
            let program = pid.and_then(program_version);
            (target.path.display().to_string(), pid, program)
        }
        ServerAddress::Exec(command) => (format!("exec {command}"), None, None),
    };
    let client = format!("phuxctl {}", env!("CARGO_PKG_VERSION"));
    if json_out {
        let doc = json!({
            "server_id": server_id,
            "protocol": protocol,
            "features": features.split('|').collect::<Vec<_>>(),
            "endpoint": place,
            "pid": pid,
            "server": program,
            "client": client,
            "terminals": rows.len() - exited,
            "exited": exited,
        });
        println!("{doc}");
        return Ok(EXIT_OK);
    }
    let dash = || "-".to_owned();
    println!("server id   {server_id}");
    println!("protocol    {protocol}");
    println!("features    {}", features.replace('|', " "));
    println!("endpoint    {place}");
    println!("server      {}", program.unwrap_or_else(dash));
    println!("pid         {}", pid.map_or_else(dash, |p| p.to_string()));
    println!("client      {client}");
    println!(
        "terminals   {} running, {exited} exited",
        rows.len() - exited
    );
    Ok(EXIT_OK)
}

/// The first line `/proc/PID/exe --version` prints: the very binary serving (after an
/// upgrade, the new one), whatever is installed at its path now.
fn program_version(pid: u32) -> Option<String> {
    let out = std::process::Command::new(format!("/proc/{pid}/exe"))
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next()?.trim();
    (out.status.success() && !line.is_empty()).then(|| line.to_owned())
}

/// `clients ID`: the connections attached to the terminal (GET_TERMINAL_STATE's
/// `attached_clients`, [SCREEN.STATE.6]), one per line: client id, transport, whether its
/// output is behind, and whether it holds the input lease; this phuxctl itself is not one.
pub(crate) fn clients(
    session: &mut Session,
    id: &TerminalId,
    json_out: bool,
) -> Result<u8, CtlError> {
    let state = list::terminal_state(session, id)?.ok_or_else(|| CtlError::Refused {
        code: ErrorCode::TERMINAL_NOT_FOUND,
        message: format!("no terminal {id}"),
    })?;
    let Some(attached) = state.get("attached_clients").and_then(Value::as_array) else {
        return Err(CtlError::Local(
            "the server does not say who is attached (no attached_clients in \
             GET_TERMINAL_STATE: not phux-mio-server)"
                .to_owned(),
        ));
    };
    let holder = state.get("input_holder").and_then(Value::as_u64);
    if json_out {
        println!("{}", Value::Array(attached.clone()));
        return Ok(EXIT_OK);
    }
    for c in attached {
        let client = c.get("client").and_then(Value::as_u64);
        let local = c.get("local_socket").and_then(Value::as_bool);
        let behind = c.get("behind").and_then(Value::as_bool);
        println!(
            "{}\t{}\t{}\t{}",
            client.map_or_else(|| "-".to_owned(), |c| c.to_string()),
            match local {
                Some(true) => "socket",
                Some(false) => "other",
                None => "-",
            },
            if behind == Some(true) {
                "behind"
            } else {
                "live"
            },
            if client.is_some() && client == holder {
                "lease"
            } else {
                "-"
            },
        );
    }
    Ok(EXIT_OK)
}
