//! The exit status comes through the pidfd: an exit code, or the signal that ended the child.

use phux_mio_server::{ChildExit, GroupSignal, SpawnSpec, spawn};

use crate::support::common::wait_exit;

#[test]
fn exit_code_is_reported() {
    let mut child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", "exit 7"])).expect("spawn");
    let exit = wait_exit(&mut child);
    assert_eq!(exit, ChildExit::Exited(7));
    assert_eq!(exit.code(), Some(7));
    // Reaping is idempotent.
    assert_eq!(
        child.try_wait().expect("try_wait"),
        Some(ChildExit::Exited(7))
    );
}

#[test]
fn sigkill_is_reported_as_signal_9() {
    let mut child = spawn(&SpawnSpec::new("sleep").args(["100"])).expect("spawn");
    assert_eq!(
        child.try_wait().expect("try_wait"),
        None,
        "sleep exited early"
    );
    child.signal_group(GroupSignal::Kill).expect("SIGKILL");
    let exit = wait_exit(&mut child);
    assert_eq!(exit, ChildExit::Signaled(9));
    assert_eq!(exit.code(), None);
}
