//! An interrupted `phuxctl send` whose server restarted before the next run is reported
//! unknown by that run, never resent: the new server has no dedupe record for it, so a
//! resend could write it twice.

use crate::support::{Ctl, PHUXCTL_TEST_HOOK, ServerAt};

#[test]
fn an_operation_in_doubt_across_a_server_restart_is_reported_unknown() {
    // [CLIENT.RETRY.2] [CLIENT.OUTBOX.5]
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let first = ServerAt::start(&socket);
    let ctl = Ctl::at(&socket);

    let id = ctl.spawn(&["cat"]);
    let out = ctl
        .command(&["send", &id, "maybe"])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("phuxctl");
    assert_eq!(out.status.code(), Some(86), "{out:?}");
    drop(first);

    let _second = ServerAt::start(&socket);
    // The same id names the new server's first terminal; a send to it settles the old
    // operation first (reported, not resent), then sends its own input.
    assert_eq!(ctl.spawn(&["cat"]), id);
    let out = ctl.run(&["send", &id, "new"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("to {id}: unknown: the server restarted")),
        "{stderr}"
    );
    // Reported once, then gone from the outbox.
    assert!(ctl.journals().iter().all(|(_, len)| *len == 0));
    let again = ctl.run(&["send", &id, "again"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("earlier operation"));
}
