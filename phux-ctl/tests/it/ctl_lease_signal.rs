//! phuxctl lease and signal round trips against the real server.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::support::{Ctl, Server, proc_state, read_pid, wait_until};

#[test]
fn a_held_lease_refuses_others_until_seized_and_release_is_ok() {
    // [LEASE.ACQUIRE.1] [LEASE.SEIZE.1] [LEASE.RELEASE.2]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["cat"]);

    let mut holder = ctl
        .command(&["lease", "acquire", &id, "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("phuxctl lease --hold");
    let mut line = String::new();
    BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line, "held\n");

    // Another client's input and cooperative acquire are refused while it is held.
    let out = ctl.run(&["send", &id, "blocked"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("refused: INPUT_LEASE_HELD"),
        "{out:?}"
    );
    let out = ctl.run(&["lease", "acquire", &id]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("INPUT_LEASE_HELD"),
        "{out:?}"
    );

    // Seize takes it; that client then disconnects, which releases it.
    ctl.ok(&["lease", "acquire", &id, "--seize", "--ttl", "60000"]);
    ctl.ok(&["lease", "release", &id]);
    assert_eq!(
        ctl.ok(&["send", &id, "free", "--key", "Enter"]),
        "delivered\n"
    );

    drop(holder.stdin.take());
    assert!(holder.wait().expect("wait").success());
}

#[test]
fn freeze_resume_and_terminate_reach_the_child() {
    // [SIGNAL.MAP.1] [SIGNAL.MAP.1] [SIGNAL.MAP.1]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pid");
    // One process with no children of its own: nothing else can stop or continue it.
    let script = format!("echo $$ > '{}'; exec sleep 1000", pidfile.display());
    let id = ctl.spawn(&["/bin/sh", "-c", &script]);
    let pid = read_pid(&pidfile);
    assert!(
        wait_until(|| std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.starts_with("sleep"))),
        "the child never became sleep"
    );

    ctl.ok(&["signal", "freeze", &id]);
    assert!(
        wait_until(|| proc_state(pid) == Some('T')),
        "not stopped: {:?}",
        proc_state(pid)
    );
    ctl.ok(&["signal", "resume", &id]);
    assert!(
        wait_until(|| matches!(proc_state(pid), Some('S' | 'R'))),
        "not resumed: {:?}",
        proc_state(pid)
    );
    ctl.ok(&["signal", "terminate", &id]);
    assert!(
        wait_until(|| matches!(proc_state(pid), None | Some('Z'))),
        "the child survived SIGTERM"
    );
    let out = ctl.run(&["signal", "kill", "local:4242"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}

#[test]
fn interrupt_reaches_the_shell_trap() {
    // [SIGNAL.MAP.1]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&[
        "/bin/sh",
        "-c",
        "trap 'echo got-int' INT; echo armed; while :; do sleep 0.05; done",
    ]);
    ctl.wait_screen(&id, "armed", |s| s.contains("armed"));
    ctl.ok(&["signal", "interrupt", &id]);
    ctl.wait_screen(&id, "the INT trap", |s| s.contains("got-int"));
}
