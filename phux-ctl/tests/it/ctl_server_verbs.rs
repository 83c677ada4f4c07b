//! The verbs about the server: `info` says which server answers (its id, protocol, the
//! program and pid listening), `clients ID` lists who is attached to a terminal
//! ([SCREEN.STATE.6]), and `shutdown` stops the server as `tmux kill-server` does
//! ([CLIENT.SHUTDOWN.2]): the programs ended, the socket gone, the server's exit status 0.

use std::process::Stdio;

use crate::support::{Ctl, Server, proc_state, read_pid, wait_until};

#[test]
fn info_clients_and_shutdown_at_the_far_end() {
    let mut server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > '{}'; exec sleep 1000", pidfile.display());
    let id = ctl.spawn(&["sh", "-c", &script]);
    let program = read_pid(&pidfile);

    // info: the id HELLO_OK gave, the very process listening, its binary's version.
    let info = ctl.ok(&["info"]);
    let field = |name: &str| {
        info.lines()
            .find_map(|l| {
                let (key, value) = l.split_once("  ")?;
                (key == name).then(|| value.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no {name} in\n{info}"))
    };
    let server_id = field("server id");
    assert!(
        server_id.len() == 32 && server_id.chars().all(|c| c.is_ascii_hexdigit()),
        "{info}"
    );
    assert_eq!(field("protocol"), "0.8.0");
    assert!(field("features").contains("shutdown"), "{info}");
    assert_eq!(field("pid"), server.process.id().to_string(), "{info}");
    assert!(field("server").starts_with("phux-mio-server "), "{info}");
    assert_eq!(field("terminals"), "1 running, 0 exited");
    let json: serde_json::Value = serde_json::from_str(&ctl.ok(&["info", "--json"])).expect("json");
    assert_eq!(json["server_id"], server_id.as_str());

    // clients: nobody yet; a `watch` is one client on the socket, live.
    assert_eq!(ctl.ok(&["clients", &id]), "");
    let watcher = ctl
        .command(&["watch", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("watch");
    let mut listed = String::new();
    assert!(
        wait_until(|| {
            listed = ctl.ok(&["clients", &id]);
            listed.lines().count() == 1
        }),
        "the watcher never listed: {listed:?}"
    );
    let fields: Vec<&str> = listed.trim_end().split('\t').collect();
    assert_eq!(fields[1..], ["socket", "live", "-"], "{listed:?}");
    assert!(fields[0].parse::<u32>().is_ok(), "{listed:?}");
    let json: serde_json::Value =
        serde_json::from_str(&ctl.ok(&["clients", &id, "--json"])).expect("json");
    assert_eq!(json[0]["local_socket"], true);
    let gone = ctl.run(&["clients", "local:999"]);
    assert_eq!(gone.status.code(), Some(4), "{gone:?}");

    // shutdown: `stopped` once the socket is gone; the server exits 0, its program is ended
    // and the watcher's stream ends.
    assert_eq!(ctl.ok(&["shutdown"]).trim(), "stopped");
    assert!(!ctl.socket.exists());
    let mut status = None;
    assert!(wait_until(|| {
        status = server.process.try_wait().expect("try_wait");
        status.is_some()
    }));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    assert!(wait_until(|| proc_state(program).is_none_or(|s| s == 'Z')));
    let watched = crate::support::finish(watcher);
    assert!(watched.status.code().is_some(), "{watched:?}");
    // Nothing to stop now: the server cannot be reached (5).
    let again = ctl.run(&["shutdown"]);
    assert_eq!(again.status.code(), Some(5), "{again:?}");
}
