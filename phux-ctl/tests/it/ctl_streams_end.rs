//! The streaming verbs end the way a shell user expects: `watch` exits with the program's
//! status when its terminal closes, and `events ID` ends after that terminal's `pane_closed`
//! and refuses an id the server does not know instead of waiting forever.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use crate::support::{Ctl, Server, finish, wait_until};

// [CLIENT.WATCH.1]
#[test]
fn watch_exits_with_the_programs_status() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    // 300 is seen as its low 8 bits, 44, as a shell sees it.
    for (status, want) in [("0", 0), ("3", 3), ("300", 44)] {
        // The program waits for a line, so it exits only once watch is attached (its
        // bootstrap shows `ready`).
        let id = ctl.spawn(&["sh", "-c", &format!("echo ready; read x; exit {status}")]);
        ctl.wait_screen(&id, "ready", |s| s.contains("ready"));
        let mut watch = ctl
            .command(&["watch", &id, "--bootstrap"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("watch");
        let mut seen = Vec::new();
        let mut stdout = watch.stdout.take().expect("stdout");
        while !String::from_utf8_lossy(&seen).contains("ready") {
            let mut byte = [0u8; 1];
            assert_eq!(
                stdout.read(&mut byte).expect("read watch"),
                1,
                "watch ended early"
            );
            seen.push(byte[0]);
        }
        ctl.ok(&["send", &id, "go", "--key", "Enter"]);
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).expect("the rest");
        let out = finish(watch);
        assert_eq!(out.status.code(), Some(want), "exit {status}: {out:?}");
    }
}

// [CLIENT.EVENTS.1] [CLIENT.EVENTS.2]
#[test]
fn events_of_one_terminal_end_with_it_and_an_unknown_one_is_refused() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sh", "-c", "read x"]);
    let mut events = ctl
        .command(&["events", &id, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("events");
    let mut stdout = BufReader::new(events.stdout.take().expect("stdout"));
    // SUBSCRIBE_EVENTS has no answer: signals are sent until one's terminal_control event
    // shows the subscription is live.
    let first = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut line = String::new();
            stdout.read_line(&mut line).map(|_| line)
        });
        let live = wait_until(|| {
            ctl.ok(&["signal", "CONT", &id]);
            reader.is_finished()
        });
        assert!(live, "events printed nothing");
        reader.join().expect("reader")
    });
    let line = first.expect("an event line");
    assert!(line.contains("terminal_control"), "{line}");
    ctl.ok(&["signal", "KILL", &id]);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the rest");
    let out = finish(events);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(rest.contains("pane_closed"), "{rest}");

    let out = ctl.run(&["events", "local:99"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("local:99"),
        "{out:?}"
    );
}
