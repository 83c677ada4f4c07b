//! phuxctl spawn / list / kill against the real server, and the exit codes for a refusal and
//! for a server that is not there.

use crate::support::{Ctl, Server, wait_until};

#[test]
fn spawn_prints_the_id_list_shows_size_and_kill_removes_it() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let a = ctl.ok(&[
        "spawn", "--cols", "100", "--rows", "30", "--", "sleep", "1000",
    ]);
    let a = a.trim();
    let b = ctl.spawn(&["sleep", "1000"]);
    assert_ne!(a, b);

    let list = ctl.ok(&["list"]);
    let row = |id: &str| {
        list.lines()
            .find(|l| l.split('\t').next() == Some(id))
            .map(str::to_owned)
    };
    let a_row = row(a).unwrap_or_else(|| panic!("{a} not listed:\n{list}"));
    assert_eq!(a_row.split('\t').nth(2), Some("100x30"), "{a_row}");
    assert!(row(&b).is_some(), "{b} not listed:\n{list}");

    // Both id forms are accepted: `local:N` and `N`.
    let bare = b.trim_start_matches("local:");
    ctl.ok(&["kill", bare]);
    assert!(
        wait_until(|| !ctl
            .ok(&["list"])
            .lines()
            .any(|l| l.starts_with(&format!("{b}\t")))),
        "{b} is still listed after kill"
    );
    assert!(
        ctl.ok(&["list"])
            .lines()
            .any(|l| l.starts_with(&format!("{a}\t")))
    );
}

#[test]
fn a_refused_command_exits_4_and_an_absent_server_exits_5() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let out = ctl.run(&["kill", "local:4242"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("TERMINAL_NOT_FOUND"),
        "{out:?}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let mut nowhere = Ctl::new(&server);
    nowhere.socket = dir.path().join("absent.sock");
    let out = nowhere.run(&["list"]);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    // Bad usage is clap's 2.
    assert_eq!(ctl.run(&["send"]).status.code(), Some(2));
}
