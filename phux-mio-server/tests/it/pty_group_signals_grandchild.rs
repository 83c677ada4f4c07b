//! Signals go to the whole process group: a grandchild started by the shell is frozen,
//! resumed and terminated along with it.

use phux_mio_server::{ChildExit, GroupSignal, PtyChild, SpawnSpec, spawn};

use crate::support::common::{Output, eventually, is_dead, proc_state, wait_exit};

/// Starts `sh` with a background `sleep` and returns the sleep's pid.
fn shell_with_grandchild() -> (PtyChild, Output, u32) {
    let child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", "sleep 100 & echo \"<$!>\"; wait"]))
        .expect("spawn");
    let mut out = Output::new(&child);
    assert!(
        out.wait_until(&child, |b| {
            let t = String::from_utf8_lossy(b);
            t.contains('<') && t.contains(">\r\n")
        }),
        "output: {:?}",
        out.text()
    );
    let text = out.text();
    let pid = text
        .split('<')
        .nth(1)
        .and_then(|s| s.split('>').next())
        .and_then(|s| s.parse().ok())
        .expect("grandchild pid");
    (child, out, pid)
}

#[test]
fn freeze_and_resume_reach_the_grandchild() {
    let (child, _out, grandchild) = shell_with_grandchild();
    child.signal_group(GroupSignal::Freeze).expect("SIGSTOP");
    assert!(
        eventually(|| proc_state(grandchild) == Some('T')),
        "grandchild not stopped"
    );
    assert!(
        eventually(|| proc_state(child.pid()) == Some('T')),
        "child not stopped"
    );
    child.signal_group(GroupSignal::Resume).expect("SIGCONT");
    assert!(
        eventually(|| proc_state(grandchild) == Some('S')),
        "grandchild not resumed"
    );
    child.kill_and_reap().expect("reap");
    assert!(
        eventually(|| is_dead(grandchild)),
        "grandchild survived the group SIGKILL"
    );
}

#[test]
fn terminate_reaches_the_grandchild() {
    let (mut child, _out, grandchild) = shell_with_grandchild();
    child.signal_group(GroupSignal::Terminate).expect("SIGTERM");
    assert_eq!(wait_exit(&mut child), ChildExit::Signaled(15));
    assert!(
        eventually(|| is_dead(grandchild)),
        "grandchild survived SIGTERM"
    );
}

#[test]
fn kill_reaches_the_grandchild() {
    let (mut child, _out, grandchild) = shell_with_grandchild();
    child.signal_group(GroupSignal::Kill).expect("SIGKILL");
    assert_eq!(wait_exit(&mut child), ChildExit::Signaled(9));
    assert!(
        eventually(|| is_dead(grandchild)),
        "grandchild survived SIGKILL"
    );
    // Reaped: the pid may be reused, so the group is no longer ours to signal.
    assert!(child.signal_group(GroupSignal::Kill).is_err());
}
