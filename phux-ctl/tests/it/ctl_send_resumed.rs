//! An interrupted `phuxctl send` (the process ends after the operation was journaled and
//! sent, before the answer) is left alone by read-only runs and resumed by `phuxctl outbox
//! resume` with the same operation id, and the server's dedupe makes the resend write
//! nothing: the child reads the line once.

use crate::support::{Ctl, PHUXCTL_TEST_HOOK, Server, count};

const COUNTER: &str = "n=0; while read l; do n=$((n+1)); echo \"got $n: $l\"; done";

/// The `0x…` operation id in a line of phuxctl's stderr that contains `marker`.
fn operation_id(stderr: &str, marker: &str) -> String {
    let line = stderr
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no {marker:?} in stderr:\n{stderr}"));
    let word = line
        .split_whitespace()
        .find(|w| w.starts_with("0x"))
        .unwrap_or_else(|| panic!("no operation id in {line:?}"));
    word.trim_end_matches(':').to_owned()
}

#[test]
fn the_next_run_resumes_the_operation_with_the_same_id_and_it_is_not_written_twice() {
    // [CLIENT.OUTBOX.5] [CLIENT.RETRY.2] [INPUT.DEDUPE.2]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    // Reads screens with an outbox of its own: every run settles its own journal first, and
    // this test wants the interrupted operation settled by one run it chose.
    let observer = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", COUNTER]);

    let first = ctl
        .command(&["send", &id, "once", "--key", "Enter"])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("run phuxctl");
    assert_eq!(first.status.code(), Some(86), "{first:?}");
    let stderr = String::from_utf8_lossy(&first.stderr).into_owned();
    let op = operation_id(&stderr, "exiting after sending");
    // The unanswered operation is still in the journal.
    assert!(
        ctl.journals().iter().any(|(_, len)| *len > 0),
        "{:?}",
        ctl.journals()
    );

    // The server wrote it: the child read it once.
    observer.wait_screen(&id, "got 1", |s| s.contains("got 1: once"));

    // [CLIENT.RESUME.1] A read-only run leaves it alone and says it waits.
    let read_only = ctl.run(&["list"]);
    assert!(read_only.status.success(), "{read_only:?}");
    let stderr = String::from_utf8_lossy(&read_only.stderr).into_owned();
    assert!(
        stderr.contains("1 operation(s) from earlier runs wait in the outbox"),
        "{stderr}"
    );
    assert!(!stderr.contains("earlier operation"), "{stderr}");
    assert!(ctl.journals().iter().any(|(_, len)| *len > 0));

    // `outbox resume` settles it: same id, resent, answered from the server's record.
    let next = ctl.run(&["outbox", "resume"]);
    assert!(next.status.success(), "{next:?}");
    let stderr = String::from_utf8_lossy(&next.stderr).into_owned();
    assert_eq!(operation_id(&stderr, "earlier operation"), op, "{stderr}");
    assert!(
        stderr.contains(&format!("earlier operation {op} to {id}: delivered")),
        "{stderr}"
    );
    assert!(
        ctl.journals().iter().all(|(_, len)| *len == 0),
        "{:?}",
        ctl.journals()
    );

    // The next line is the child's second: "once" was not written again.
    ctl.ok(&["send", &id, "after", "--key", "Enter"]);
    let screen = ctl.wait_screen(&id, "got 2", |s| s.contains("got 2: after"));
    assert_eq!(count(&screen, "got 1: once"), 1, "{screen}");
    assert_eq!(count(&screen, "got "), 2, "{screen}");

    // A run after that has nothing left to report.
    let quiet = ctl.run(&["list"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("earlier operation"));
}
