//! phuxctl upgrade against a real server: the server execs in place and answers, its terminals
//! run on under the same pids; a binary that refuses leaves the server as it was, and phuxctl
//! says why and exits 4. And vim under `phuxctl attach` (in tmux) goes on taking keys across
//! upgrades, some typed while an upgrade is under way, and writes exactly what was typed; an
//! attach following a flood of output across upgrades ends on the same last lines.

use std::os::unix::fs::PermissionsExt;

use crate::ctl_attach_replies::attach_in_tmux;
use crate::support::{Ctl, Server};

/// The pid column of `list` for terminal `id`.
fn pid_of(ctl: &Ctl, id: &str) -> String {
    let list = ctl.ok(&["list"]);
    list.lines()
        .find(|l| l.split('\t').next() == Some(id))
        .and_then(|l| l.split('\t').nth(3))
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

#[test]
fn vim_under_attach_takes_keys_across_upgrades() {
    // [SERVER.UPGRADE.3] [SERVER.UPGRADE.6] [SERVER.UPGRADE.EXEC.5] [SERVER.UPGRADE.STATE.2]
    phux_testkit::require_programs!("tmux", "vim");
    let mut server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("typed.txt");
    let file_arg = file.display().to_string();
    // No vimrc, viminfo or swap file; a lone Escape leaves insert mode at once.
    let id = ctl.spawn(&[
        "vim",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-N",
        "-n",
        "-c",
        "set ttimeout ttimeoutlen=20",
        &file_arg,
    ]);
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    let started = |p: &str| p.lines().filter(|l| l.trim_end() == "~").count() > 3;
    ctl.wait_screen(&id, "vim's empty buffer", started);
    tmux.wait_pane("vim", started);
    let pid = pid_of(&ctl, &id);

    let mut typed: Vec<String> = Vec::new();
    for i in 0..4 {
        let text = format!("line {i} typed under attach");
        tmux.run(&["send-keys", "-t", "t", if i == 0 { "i" } else { "o" }]);
        tmux.run(&["send-keys", "-t", "t", "-l", &text]);
        if i % 2 == 1 {
            // Keys on their way (tmux, attach, APPLY_INPUT) while the server upgrades.
            let out = ctl.ok(&["upgrade"]);
            assert!(out.starts_with("upgraded"), "{out}");
        }
        tmux.wait_pane("the typed line", |p| p.contains(&text));
        tmux.run(&["send-keys", "-t", "t", "Escape"]);
        tmux.wait_pane("normal mode", |p| !p.contains("-- INSERT --"));
        typed.push(text);
        if i % 2 == 0 {
            // vim idle: the upgrade changes nothing on its screen.
            let before = ctl.screen(&id);
            let out = ctl.ok(&["upgrade"]);
            assert!(out.starts_with("upgraded"), "{out}");
            assert_eq!(ctl.screen(&id), before, "upgrade {i}");
        }
        assert_eq!(pid_of(&ctl, &id), pid, "upgrade {i}");
        let pane = tmux.pane();
        assert!(!pane.contains("attach-exit="), "attach ended:\n{pane}");
    }
    // A resize after the upgrades reaches vim through attach and the new image.
    tmux.run(&["resize-window", "-t", "t", "-x", "90", "-y", "25"]);
    // vim redrawn at 25 rows (24 of buffer: the four lines and 20 `~`) before the query: a
    // redraw after it would wipe its answer.
    tmux.wait_pane("vim redrawn at the new size", |p| {
        p.lines().filter(|l| l.trim_end() == "~").count() == 20
    });
    tmux.run(&["send-keys", "-t", "t", ":echo &columns &lines", "Enter"]);
    tmux.wait_pane("vim's new size", |p| {
        p.lines().any(|l| l.trim_end() == "90 25")
    });
    tmux.run(&["send-keys", "-t", "t", ":wq", "Enter"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("attach-exit=0"), "{pane}");
    let mut expected = typed.join("\n");
    expected.push('\n');
    assert_eq!(
        std::fs::read_to_string(&file).expect("vim wrote the file"),
        expected
    );
    assert!(server.process.try_wait().expect("wait").is_none());
}

#[test]
fn attach_follows_a_flood_of_output_across_upgrades() {
    // [SERVER.UPGRADE.6] [SERVER.UPGRADE.STATE.2]
    phux_testkit::require_programs!("tmux");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let go = dir.path().join("go");
    let script = format!(
        "while [ ! -e {go} ]; do sleep 0.01; done; seq 1 200000; echo END; exec sleep 1000",
        go = go.display()
    );
    let id = ctl.spawn(&["sh", "-c", &script]);
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    std::fs::write(&go, "").expect("go");
    let mut upgrades = 0;
    while !ctl.screen(&id).contains("END") {
        let out = ctl.ok(&["upgrade"]);
        assert!(out.starts_with("upgraded"), "{out}");
        upgrades += 1;
    }
    assert!(upgrades > 0);
    // The attached view ends as the terminal does: the last numbers, then END.
    let pane = tmux.wait_pane("the end of the flood", |p| {
        let lines: Vec<&str> = p
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .collect();
        lines.ends_with(&["199999", "200000", "END"])
    });
    assert!(!pane.contains("attach-exit="), "{pane}");
}
