//! `phuxctl --exec CMD`: every verb through a command's stdin and stdout, here the server's
//! own `bridge` (what `--ssh HOST` runs on the far side), and a clear failure when the
//! command does not connect.

use std::process::{Command, Output, Stdio};

use crate::support::server::server_exe;
use crate::support::{Server, wait_until};

/// `phuxctl --exec COMMAND ARGS` with a private state directory.
fn ctl_exec(state: &std::path::Path, command: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .arg("--exec")
        .arg(command)
        .args(args)
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::null())
        .output()
        .expect("run phuxctl")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn every_verb_works_through_a_bridge_command() {
    let server = Server::start();
    let state = tempfile::tempdir().expect("state dir");
    let bridge = format!(
        "'{}' bridge --socket '{}'",
        server_exe().display(),
        server.socket.display()
    );
    let run = |args: &[&str]| ctl_exec(state.path(), &bridge, args);

    let id = stdout_of(&run(&["spawn", "--", "/bin/sh"]))
        .trim()
        .to_owned();
    assert!(id.starts_with("local:"), "{id}");
    // Acknowledged input through the durable outbox, over the command.
    let sent = stdout_of(&run(&[
        "send",
        &id,
        "echo bridged-$((2+3))",
        "--key",
        "Enter",
    ]));
    assert_eq!(sent.trim(), "delivered");
    assert!(
        wait_until(|| stdout_of(&run(&["screen", &id])).contains("bridged-5")),
        "the echo never showed on the screen"
    );
    assert!(stdout_of(&run(&["list"])).contains(&id));
    stdout_of(&run(&["kill", &id]));
    assert!(
        wait_until(|| !stdout_of(&run(&["list"])).contains(&format!("{id}\t"))),
        "{id} is still listed after kill"
    );
}

#[test]
fn a_command_that_does_not_connect_is_a_connection_failure_naming_it() {
    let state = tempfile::tempdir().expect("state dir");
    let out = ctl_exec(state.path(), "echo oops >&2; exit 7", &["list"]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The command's own stderr reaches the user, and phuxctl says what ended.
    assert!(stderr.contains("oops"), "{stderr}");
    assert!(
        stderr.contains("exit 7") && stderr.contains("exit status: 7"),
        "{stderr}"
    );
}
