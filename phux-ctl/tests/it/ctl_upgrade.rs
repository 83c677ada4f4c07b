//! phuxctl upgrade against a real server: the server execs in place and answers, its terminals
//! run on under the same pids; a binary that refuses leaves the server as it was, and phuxctl
//! says why and exits 4.

use std::os::unix::fs::PermissionsExt;

use crate::support::{Ctl, Server};

/// The pid column of `list` for terminal `id`.
fn pid_of(ctl: &Ctl, id: &str) -> String {
    let list = ctl.ok(&["list"]);
    list.lines()
        .find(|l| l.split('\t').next() == Some(id))
        .and_then(|l| l.split('\t').nth(2))
        .map_or_else(|| panic!("{id} not listed:\n{list}"), str::to_owned)
}

#[test]
fn upgrade_execs_in_place_and_refusals_exit_4() {
    // [SERVER.UPGRADE.EXEC.1] [SERVER.UPGRADE.EXEC.4]
    let mut server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sh", "-c", "echo before-upgrade; exec cat"]);
    ctl.wait_screen(&id, "the program's first line", |s| {
        s.contains("before-upgrade")
    });
    let pid = pid_of(&ctl, &id);

    let out = ctl.ok(&["upgrade"]);
    assert!(out.starts_with("upgraded"), "{out}");
    // The same terminal, the same program, the same screen.
    assert_eq!(pid_of(&ctl, &id), pid);
    ctl.ok(&["send", &id, "after-upgrade", "--key", "Enter"]);
    ctl.wait_screen(&id, "the echo after the upgrade", |s| {
        s.contains("before-upgrade") && s.contains("after-upgrade")
    });

    // A binary that is not a server: refused, nothing changes.
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("not-a-server");
    std::fs::write(&fake, "#!/bin/sh\necho nope\nexit 0\n").expect("write");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = ctl.run(&["upgrade", "--binary", fake.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("upgrade failed") && stderr.contains("nope"),
        "{stderr}"
    );
    assert_eq!(pid_of(&ctl, &id), pid);

    // An explicit binary (the server's own, by path) works too.
    let exe = crate::support::server::server_exe();
    let out = ctl.ok(&["upgrade", "--binary", exe.to_str().expect("utf-8")]);
    assert!(out.contains(exe.to_str().expect("utf-8")), "{out}");
    assert_eq!(pid_of(&ctl, &id), pid);
    assert!(server.process.try_wait().expect("wait").is_none());
}
