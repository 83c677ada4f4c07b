//! A terminal's working directory as the server sees it ([SCREEN.SERVER.2]): `list --json`
//! shows the directory a shell was spawned in, then the one a `cd` inside it took it to, on
//! the local socket and through `--exec` (where phuxctl reads nothing of the local `/proc`, so
//! the directory shown is the server's answer).

use std::process::{Command, Stdio};

use crate::support::server::server_exe;
use crate::support::{Ctl, Server, wait_until};

/// The `cwd` of terminal `id` in `list --json`'s output.
fn cwd_in(list: &str, id: &str) -> Option<String> {
    let rows: serde_json::Value = serde_json::from_str(list).expect("list --json is JSON");
    rows.as_array()?
        .iter()
        .find(|row| row["id"] == id)?
        .get("cwd")?
        .as_str()
        .map(str::to_owned)
}

#[test]
fn list_shows_the_directory_a_cd_took_the_shell_to() {
    phux_testkit::require_programs!("bash");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dirs = tempfile::tempdir().expect("tempdir");
    let root = dirs.path().canonicalize().expect("canonical temp dir");
    let (start, moved) = (root.join("start"), root.join("moved here"));
    std::fs::create_dir(&start).expect("mkdir start");
    std::fs::create_dir(&moved).expect("mkdir moved");
    let (start, moved) = (
        start.to_str().expect("UTF-8").to_owned(),
        moved.to_str().expect("UTF-8").to_owned(),
    );
    let id = ctl
        .ok(&[
            "spawn",
            "--cwd",
            &start,
            "--",
            "bash",
            "--norc",
            "--noprofile",
        ])
        .trim()
        .to_owned();
    let local = || cwd_in(&ctl.ok(&["list", "--json"]), &id);
    assert!(
        wait_until(|| local().as_deref() == Some(start.as_str())),
        "not the spawn's directory: {:?}",
        local()
    );

    ctl.ok(&["send", &id, &format!("cd '{moved}'"), "--key", "Enter"]);
    assert!(
        wait_until(|| local().as_deref() == Some(moved.as_str())),
        "list does not follow the cd: {:?}",
        local()
    );

    // The same answer through a bridge, where phuxctl has no local process to look at.
    let state = tempfile::tempdir().expect("state dir");
    let bridge = format!(
        "'{}' bridge --socket '{}'",
        server_exe().display(),
        server.socket.display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .args(["--exec", &bridge, "list", "--json"])
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null())
        .output()
        .expect("run phuxctl --exec");
    assert!(out.status.success(), "{out:?}");
    let remote = cwd_in(&String::from_utf8_lossy(&out.stdout), &id);
    assert_eq!(remote.as_deref(), Some(moved.as_str()));
}
