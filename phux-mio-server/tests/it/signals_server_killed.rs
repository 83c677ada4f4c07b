//! A server killed outright (SIGKILL: no handler, no shutdown) leaves no child behind: the
//! kernel ends each child as its parent dies, even one that ignores the SIGHUP of the hangup.

use rustix::process::{Pid, Signal};

use crate::support::client::{Server, pid_of_terminal};
use crate::support::common::eventually;

/// The live (not zombie) processes whose process group is `pgid`.
fn live_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state, ppid, pgrp.
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 1..)) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|s| s.parse::<u32>().ok());
        if pgrp == Some(pgid) && !matches!(state, Some("Z" | "X")) {
            members.push(pid);
        }
    }
    members
}

#[test]
fn a_sigkilled_server_leaves_no_hup_ignoring_child_behind() {
    // [SERVER.SIGNAL.3]
    let mut server = Server::start();
    let mut c = server.connect();
    c.hello();
    // SIG_IGN survives exec: the sleep ignores the hangup the dead server's master causes.
    let terminal = c.spawn(&["/bin/sh", "-c", "trap '' HUP; exec sleep 1000"]);
    let pgid = pid_of_terminal(&mut c, &terminal);
    assert!(
        eventually(|| !live_members(pgid).is_empty()),
        "the child never ran"
    );

    let server_pid = Pid::from_raw(server.pid()).expect("pid");
    rustix::process::kill_process(server_pid, Signal::KILL).expect("SIGKILL the server");
    assert_eq!(server.wait_exit(), None, "the server died by a signal");

    let gone = eventually(|| live_members(pgid).is_empty());
    let left = live_members(pgid);
    if !gone {
        // Do not leave it running past a failed test.
        let _ = rustix::process::kill_process_group(
            Pid::from_raw(i32::try_from(pgid).expect("pgid")).expect("pgid"),
            Signal::KILL,
        );
    }
    assert!(
        gone,
        "the process group {pgid} outlived the killed server: {left:?}"
    );
}
