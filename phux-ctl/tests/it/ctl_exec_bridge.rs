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

/// The pids of processes whose command line has every one of `words` (and is not a shell
/// running them), from /proc.
fn pids_with(words: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.first().is_some_and(|a| !a.ends_with("sh"))
                && words.iter().all(|w| args.iter().any(|a| a == w))
        })
        .collect()
}

#[test]
fn a_killed_bridge_is_redialled_by_running_the_command_again_and_input_lands_once() {
    // [CLIENT.BIND.1] through a command: the connection dies with the paste in flight (a cut
    // link, a killed ssh); phuxctl runs the command again, resends with the same id, and the
    // program gets every byte exactly once.
    const SIZE: usize = 300_000;
    let server = Server::start();
    let state = tempfile::tempdir().expect("state dir");
    let dir = tempfile::tempdir().expect("tempdir");
    let received = dir.path().join("received.bin");
    let source = dir.path().join("paste.txt");
    std::fs::write(&source, vec![b'p'; SIZE]).expect("write paste");
    let socket = server.socket.display().to_string();
    let bridge = format!("'{}' bridge --socket '{socket}'", server_exe().display());

    // The program does not read for a while, so the paste waits on the PTY.
    let script = format!(
        "stty raw -echo; echo ready; sleep 4; exec cat > '{}'",
        received.display()
    );
    let id = stdout_of(&ctl_exec(
        state.path(),
        &bridge,
        &["spawn", "--", "/bin/sh", "-c", &script],
    ))
    .trim()
    .to_owned();

    let paste = Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .arg("--exec")
        .arg(&bridge)
        .args(["paste", &id, "--file"])
        .arg(&source)
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("phuxctl paste");
    // The paste's bridge is the only one left running: kill it mid-paste.
    assert!(
        wait_until(|| pids_with(&["bridge", &socket]).len() == 1),
        "the paste's bridge never ran"
    );
    std::thread::sleep(std::time::Duration::from_millis(800));
    for pid in pids_with(&["bridge", &socket]) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(i32::try_from(pid).expect("pid")).expect("pid"),
            rustix::process::Signal::KILL,
        );
    }
    let out = paste.wait_with_output().expect("paste output");
    // Every part reported (the paste is several operations), then the whole.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last(),
        Some("delivered"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = || std::fs::metadata(&received).map_or(0, |m| m.len() as usize);
    assert!(
        wait_until(|| size() >= SIZE),
        "the program did not get the paste"
    );
    // Delivered means every byte of the operation was written, and a PTY in raw mode holds
    // only a few KiB its reader has not taken: a second copy would be arriving now.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(size(), SIZE, "the paste arrived more than once");
    let got = std::fs::read(&received).expect("read");
    assert!(got.iter().all(|b| *b == b'p'));
}
