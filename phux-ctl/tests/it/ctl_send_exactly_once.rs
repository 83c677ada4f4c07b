//! phuxctl send: one APPLY_INPUT through the durable outbox, delivered exactly once, shown on
//! the screen; the outbox journal is compacted to nothing once it empties.

use crate::support::{Ctl, Server, count};

/// Counts the lines it reads, so a second write of the same line shows as `got 2`.
const COUNTER: &str = "n=0; while read l; do n=$((n+1)); echo \"got $n: $l\"; done";

#[test]
fn send_delivers_once_and_the_screen_shows_it() {
    // [INPUT.APPLY.1] [CLIENT.OUTBOX.1] [CLIENT.OUTBOX.4]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", COUNTER]);

    let out = ctl.run(&["send", &id, "first", "line", "--key", "Enter"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "delivered\n");

    let screen = ctl.wait_screen(&id, "got 1", |s| s.contains("got 1: first line"));
    assert_eq!(count(&screen, "got "), 1, "{screen}");

    // The next line is the second one read: nothing was written twice.
    ctl.ok(&["send", &id, "next", "--key", "Enter"]);
    let screen = ctl.wait_screen(&id, "got 2", |s| s.contains("got 2: next"));
    assert_eq!(count(&screen, "got 1: first line"), 1, "{screen}");
    assert_eq!(count(&screen, "got "), 2, "{screen}");

    // Every operation resolved, so the journal was compacted away.
    let journals = ctl.journals();
    assert_eq!(journals.len(), 1, "{journals:?}");
    assert_eq!(journals[0].1, 0, "journal not compacted: {journals:?}");
}

#[test]
fn keys_are_sent_as_key_events() {
    // [INPUT.ENCODE.KEY.10] C-c reaches the shell as ^C (it abandons the typed line).
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", COUNTER]);
    ctl.ok(&[
        "send", &id, "dropped", "--key", "C-u", "--key", "k", "--key", "e", "--key", "p", "--key",
        "t", "--key", "Enter",
    ]);
    let screen = ctl.wait_screen(&id, "got 1", |s| s.contains("got 1:"));
    // C-u (VKILL) erased "dropped"; the keys typed after it are the line.
    assert!(screen.contains("got 1: kept"), "{screen}");
}

#[test]
fn send_to_a_missing_terminal_is_refused_with_exit_4() {
    // [CLIENT.RETRY.6]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let out = ctl.run(&["send", "local:999", "x"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("refused: TERMINAL_NOT_FOUND"),
        "{stdout}"
    );
}
