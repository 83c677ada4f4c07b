//! Through `--exec` (what `--ssh HOST` runs) the server's host is not this one, so phuxctl
//! answers nothing about it from this host: `list` prints `-` for what only /proc could say,
//! `spawn --cwd` goes to the server unchecked (absolute), `spawn --env` never sends this
//! host's environment, and `upgrade --binary` must name an absolute path over there.

use std::process::{Command, Output, Stdio};

use crate::support::server::server_exe;
use crate::support::{Ctl, Server, wait_until};

/// `phuxctl --exec BRIDGE ARGS` with a private state directory and a variable only this
/// host's environment has.
fn ctl_exec(state: &std::path::Path, bridge: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .arg("--exec")
        .arg(bridge)
        .args(args)
        .env("XDG_STATE_HOME", state)
        .env("PHUX_LOCAL_SECRET", "local-secret-7d1e")
        .stdin(Stdio::null())
        .output()
        .expect("run phuxctl")
}

#[test]
fn nothing_about_the_remote_host_is_answered_from_this_one() {
    let server = Server::start();
    let local = Ctl::new(&server);
    let state = tempfile::tempdir().expect("state dir");
    let bridge = format!(
        "'{}' bridge --socket '{}'",
        server_exe().display(),
        server.socket.display()
    );
    let run = |args: &[&str]| ctl_exec(state.path(), &bridge, args);
    let ok = |args: &[&str]| {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    let id = ok(&[
        "spawn",
        "--env",
        "PHUX_GIVEN=given-3c",
        "--",
        "sh",
        "-c",
        "echo \"[$PHUX_GIVEN][$PHUX_LOCAL_SECRET]\"; exec sleep 1000",
    ])
    .trim()
    .to_owned();
    assert!(
        wait_until(|| local.screen(&id).contains("[given-3c][]")),
        "the program's environment: {}",
        local.screen(&id)
    );

    // Local: /proc answers; remote: `-`.
    let fields = |table: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{id}\t")))
            .expect("listed")
            .split('\t')
            .map(str::to_owned)
            .collect()
    };
    let here = fields(&local.ok(&["list"]));
    assert_eq!(here[7], "sleep 1000", "{here:?}");
    let there = fields(&ok(&["list"]));
    assert_eq!(
        (there[4].as_str(), there[7].as_str()),
        ("-", "-"),
        "{there:?}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(&["list", "--json"])).expect("json");
    let entry = json
        .as_array()
        .and_then(|a| a.iter().find(|t| t["id"] == id.as_str()))
        .expect("listed");
    assert!(entry["command"].is_null(), "{entry}");
    // [SCREEN.SERVER.2] The directory is the server's answer (the program's, read on the
    // server's host), not this host's: phuxctl reads no local /proc over --exec.
    let pid = entry["pid"].as_u64().expect("a pid");
    let there = std::fs::read_link(format!("/proc/{pid}/cwd")).expect("the program's cwd");
    assert_eq!(entry["cwd"].as_str(), there.to_str(), "{entry}");

    // The server judges a directory on its host: a missing one is its refusal (4), not a
    // local usage error; a relative one is bad usage.
    let out = run(&["spawn", "--cwd", "/no/such/dir-9b", "--", "true"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let out = run(&["spawn", "--cwd", "relative/dir", "--", "true"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = run(&["upgrade", "--binary", "target/phux-mio-server"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("absolute"),
        "{out:?}"
    );
}

#[test]
fn list_json_has_the_programs_directory_and_the_table_aligns_on_a_terminal() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("dir");
    let cwd = std::fs::canonicalize(dir.path()).expect("canonical");
    let out = ctl.ok(&[
        "spawn",
        "--cwd",
        cwd.to_str().expect("utf-8"),
        "--",
        "sleep",
        "1000",
    ]);
    let id = out.trim();
    let json: serde_json::Value = serde_json::from_str(&ctl.ok(&["list", "--json"])).expect("json");
    let entry = json
        .as_array()
        .and_then(|a| a.iter().find(|t| t["id"] == id))
        .expect("listed");
    assert_eq!(entry["cwd"], cwd.to_str().expect("utf-8"), "{entry}");

    // On a terminal (script(1) gives `list` one): a header, columns aligned with spaces.
    phux_testkit::require_programs!("script");
    let line = format!(
        "XDG_STATE_HOME='{}' '{}' --socket '{}' list",
        ctl.state.path().display(),
        env!("CARGO_BIN_EXE_phuxctl"),
        ctl.socket.display()
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("ID "), "{text}");
    assert!(!text.contains('\t'), "{text:?}");
    let at = lines[0].find("COMMAND").expect("header");
    let row = lines.iter().find(|l| l.starts_with(id)).expect("row");
    assert_eq!(row.get(at..at + 5), Some("sleep"), "{text}");
}
