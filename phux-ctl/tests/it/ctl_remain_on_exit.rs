//! A terminal whose program exits stays, as tmux's remain-on-exit and abduco's exited
//! sessions do: `list` shows it `exited(STATUS)`, `screen` and `watch` read what it left,
//! `attach` under tmux shows its last screen and exits with its status, `send` finds nothing
//! to type into, and `kill` dismisses it ([TERMINAL.REMAIN.1] .. [TERMINAL.REMAIN.4]).

use crate::ctl_attach_replies::attach_in_tmux;
use crate::support::{Ctl, Server, wait_until};

fn row(list: &str, id: &str) -> Option<Vec<String>> {
    list.lines()
        .find(|l| l.split('\t').next() == Some(id))
        .map(|l| l.split('\t').map(str::to_owned).collect())
}

#[test]
fn an_exited_terminal_shows_its_status_and_last_screen_until_killed() {
    phux_testkit::require_programs!("tmux");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sh", "-c", "echo built-$((40+2)); exit 3"]);
    let mut list = String::new();
    assert!(
        wait_until(|| {
            list = ctl.ok(&["list"]);
            row(&list, &id).is_some_and(|r| r[5] == "exited(3)")
        }),
        "never listed as exited(3):\n{list}"
    );
    // The dead pid is not looked up (it may be another process's by now).
    let r = row(&list, &id).expect("row");
    assert_eq!((r[3].as_str(), r[7].as_str()), ("-", "-"), "{r:?}");
    let json: serde_json::Value = serde_json::from_str(&ctl.ok(&["list", "--json"])).expect("json");
    let entry = json
        .as_array()
        .and_then(|a| a.iter().find(|t| t["id"] == id.as_str()))
        .expect("listed");
    assert_eq!(
        (entry["state"].as_str(), entry["exit_status"].as_i64()),
        (Some("exited"), Some(3))
    );

    // What it printed is still there to read, and `watch` ends with its status.
    assert!(ctl.screen(&id).contains("built-42"));
    let watched = ctl.run(&["watch", &id, "--bootstrap"]);
    assert_eq!(watched.status.code(), Some(3), "{watched:?}");
    assert!(String::from_utf8_lossy(&watched.stdout).contains("built-42"));
    // Nothing runs there to type into.
    let sent = ctl.run(&["send", &id, "x"]);
    assert_eq!(sent.status.code(), Some(4), "{sent:?}");

    // attach in a real terminal: the last screen, then attach exits with the status.
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("built-42"), "{pane}");
    assert!(pane.contains("attach-exit=3"), "{pane}");

    // Kept until dismissed: still listed after the attach, and after an upgrade in place,
    // screen and status; `kill` removes it.
    assert!(row(&ctl.ok(&["list"]), &id).is_some());
    assert!(ctl.ok(&["upgrade"]).starts_with("upgraded"));
    let after = ctl.ok(&["list"]);
    assert_eq!(
        row(&after, &id).map(|r| r[5].clone()).as_deref(),
        Some("exited(3)"),
        "{after}"
    );
    assert!(ctl.screen(&id).contains("built-42"));
    ctl.ok(&["kill", &id]);
    assert!(row(&ctl.ok(&["list"]), &id).is_none());
    let gone = ctl.run(&["screen", &id]);
    assert_eq!(gone.status.code(), Some(4), "{gone:?}");
}
