//! `phuxctl attach`'s history view under tmux ([CLIENT.ATTACH.10], [CLIENT.ATTACH.11]): the
//! detach key then `[` shows the terminal's history as the server keeps it, PageUp and `g`
//! reach lines the screen no longer shows, keys typed there never reach the program, output
//! that arrives meanwhile is not lost, and `q` gives back the live screen exactly as the
//! server has it. Skipped (phux_testkit records it) where tmux or python3 is missing.

use crate::ctl_attach_replies::attach_in_tmux;
use crate::support::{Ctl, Server, wait_until};

/// Prints 500 numbered lines and `ready` in raw mode, 40 `late-NN` lines on each SIGINT, and
/// appends every byte it reads to the file named by its argument.
const PROGRAM: &str = r#"
import os, sys, signal, tty
def late(*_):
    os.write(1, b"".join(b"late-%02d\r\n" % i for i in range(1, 41)))
signal.signal(signal.SIGINT, late)
tty.setraw(0)
os.write(1, b"".join(b"line-%03d\r\n" % i for i in range(1, 501)) + b"ready\r\n")
with open(sys.argv[1], "ab", buffering=0) as log:
    while True:
        data = os.read(0, 4096)
        if not data:
            break
        log.write(data)
"#;

/// The numbers of the `line-NNN` rows a screen shows.
fn numbers(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("line-")?.parse().ok())
        .collect()
}

/// A screen's rows as text, without trailing blanks or the empty rows at the end.
fn lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[test]
fn the_history_view_shows_what_scrolled_away_sends_nothing_and_gives_the_live_screen_back() {
    phux_testkit::require_programs!("tmux", "python3");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("read");
    let id = ctl.spawn(&["python3", "-c", PROGRAM, log.to_str().expect("utf-8 path")]);
    ctl.wait_screen(&id, "the program's start", |s| s.contains("ready"));
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    let live = tmux.wait_pane("the bootstrap", |p| {
        p.contains("ready") && p.contains("line-500")
    });
    let oldest_live = numbers(&live).into_iter().min().expect("numbered lines");
    assert!(oldest_live > 400, "{live}");

    // [CLIENT.ATTACH.10] C-\ [ opens the view at the newest line; PageUp goes a page up, to
    // lines the screen no longer shows, in order.
    tmux.run(&["send-keys", "-t", "t", "C-\\", "["]);
    tmux.wait_pane("the history view", |p| p.contains("HISTORY"));
    tmux.run(&["send-keys", "-t", "t", "PPage"]);
    let pane = tmux.wait_pane("a page of history", |p| {
        numbers(p).first().is_some_and(|&n| n < oldest_live - 20)
    });
    let shown = numbers(&pane);
    assert!(
        shown.windows(2).all(|w| w[1] == w[0] + 1),
        "not consecutive lines: {pane}"
    );
    assert!(pane.contains(&format!("HISTORY {id}")), "{pane}");
    // `g`: the oldest line of all.
    tmux.run(&["send-keys", "-t", "t", "g"]);
    tmux.wait_pane("the first line", |p| p.contains("line-001"));

    // Output while the view is open: not drawn over it, kept for later.
    ctl.ok(&["signal", "interrupt", &id]);
    ctl.wait_screen(&id, "the late output", |s| s.contains("late-40"));
    // Keys typed in the view are the view's (these move nothing, or search): none is sent.
    tmux.run(&[
        "send-keys",
        "-t",
        "t",
        "x",
        "y",
        "Enter",
        "/",
        "line-250",
        "Enter",
    ]);
    tmux.wait_pane("the search's match", |p| {
        p.contains("line-250") && !p.contains("line-001")
    });
    assert!(
        !tmux.pane().contains("late-"),
        "drawn over the view: {}",
        tmux.pane()
    );
    assert!(std::fs::read(&log).unwrap_or_default().is_empty());

    // [CLIENT.ATTACH.11] q: the live screen, the late output included, exactly as the
    // server has it.
    tmux.run(&["send-keys", "-t", "t", "q"]);
    assert!(
        wait_until(|| lines(&tmux.pane()) == lines(&ctl.screen(&id))),
        "the pane is not the terminal's screen after the view:\n{}\n---\n{}",
        tmux.pane(),
        ctl.screen(&id)
    );
    assert!(tmux.pane().contains("late-40"));
    assert!(!tmux.pane().contains("HISTORY"));
    // The program read nothing of all that; keys typed now reach it.
    assert_eq!(std::fs::read(&log).unwrap_or_default(), b"");
    tmux.run(&["send-keys", "-t", "t", "abc"]);
    assert!(
        wait_until(|| std::fs::read(&log).is_ok_and(|b| b == b"abc")),
        "the program read {:?}, not abc",
        std::fs::read(&log)
    );
    // The attach goes on: the detach key still detaches.
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("attach-exit=0"), "{pane}");
}
