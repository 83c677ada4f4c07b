//! KILL_TERMINAL's building block: kill the group, close the master, reap.

use phux_mio_server::{ChildExit, PtyRead, SpawnSpec, spawn};

use crate::support::common::{self, eventually, is_dead};

#[test]
fn kill_and_reap_ends_a_running_child() {
    let child = spawn(&SpawnSpec::new("sleep").args(["100"])).expect("spawn");
    let pid = child.pid();
    assert_eq!(
        child.kill_and_reap().expect("kill_and_reap"),
        ChildExit::Signaled(9)
    );
    // Reaped, not a zombie.
    assert!(eventually(|| common::proc_state(pid).is_none()));
    assert!(is_dead(pid));
}

#[test]
fn kill_and_reap_after_exit_returns_the_exit() {
    let mut child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", "exit 4"])).expect("spawn");
    assert_eq!(common::wait_exit(&mut child), ChildExit::Exited(4));
    assert_eq!(
        child.kill_and_reap().expect("kill_and_reap"),
        ChildExit::Exited(4)
    );
}

#[test]
fn closed_master_reads_eof() {
    let mut child = spawn(&SpawnSpec::new("cat")).expect("spawn");
    child.close_master();
    assert!(child.master_fd().is_none());
    let mut buf = [0u8; 8];
    assert_eq!(child.read(&mut buf).expect("read"), PtyRead::Eof);
    // The hangup (SIGHUP) ends cat.
    assert_eq!(common::wait_exit(&mut child), ChildExit::Signaled(1));
}
