//! `phuxctl attach` says when keys typed into it are not reaching the program — another
//! client holds the terminal's input lease, or the terminal is frozen — on the bottom row of
//! the local terminal (tmux here), keeps the program's screen intact around and under it while
//! output scrolls, and takes it away when input flows again, leaving the screen exactly as the
//! program drew it ([CLIENT.ATTACH.7]). Skipped (printed, counted) where tmux is missing.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::ctl_attach_replies::attach_in_tmux;
use crate::support::{Ctl, Server, wait_until};

/// A shell that prints `ready`, then 40 lines each time it is interrupted, and otherwise
/// waits; its terminal stays in cooked mode, so keys that reach it are echoed.
const PROGRAM: &str = "trap 'seq 1 40' INT; echo ready; while :; do sleep 0.2; done";

/// The lines of a screen as text, without trailing blanks or the empty rows at the end.
fn lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// The pane's rows, padded with empty rows to `rows`.
fn rows(pane: &str, rows: usize) -> Vec<String> {
    let mut all: Vec<String> = pane.lines().map(|l| l.trim_end().to_owned()).collect();
    all.resize(rows.max(all.len()), String::new());
    all
}

#[test]
fn attach_shows_while_keys_do_not_reach_the_program_and_then_leaves_the_screen_intact() {
    phux_testkit::require_programs!("tmux");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", PROGRAM]);
    ctl.wait_screen(&id, "the program's start", |s| s.contains("ready"));
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    tmux.wait_pane("the bootstrap", |p| p.contains("ready"));
    let bottom = |pane: &str| rows(pane, 30)[29].clone();

    // Another client takes the input lease and keeps it.
    let mut holder = ctl
        .command(&["lease", "acquire", &id, "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run phuxctl lease");
    let mut first = String::new();
    BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read `held`");
    assert_eq!(first.trim(), "held");
    let pane = tmux.wait_pane("the lease notice", |p| bottom(p).contains("input lease"));
    let notice = bottom(&pane).trim().to_owned();
    assert!(
        notice.contains(&id) && notice.contains("dropped"),
        "{notice:?}"
    );
    // Keys typed now are dropped by the server.
    tmux.run(&["send-keys", "-t", "t", "xyz"]);

    // Output while the notice is up scrolls the screen under it: the notice stays on the
    // bottom row alone, and every other row is the program's.
    ctl.ok(&["signal", "interrupt", &id]);
    let screen = ctl.wait_screen(&id, "the program's output", |s| s.contains("40"));
    let pane = tmux.wait_pane("the output around the notice", |p| {
        p.contains("40") && bottom(p).contains("input lease")
    });
    assert_eq!(pane.matches("input lease").count(), 1, "{pane}");
    assert_eq!(
        rows(&pane, 30)[..29],
        rows(&screen, 30)[..29],
        "the rows above the notice are not the program's:\n{pane}"
    );

    // The holder lets go: the notice goes, and the pane is the program's screen exactly.
    drop(holder.stdin.take());
    let _ = holder.wait();
    assert!(
        wait_until(|| lines(&tmux.pane()) == lines(&ctl.screen(&id))),
        "the pane is not the program's screen once the lease is released:\n{}\n---\n{}",
        tmux.pane(),
        ctl.screen(&id)
    );
    assert!(!tmux.pane().contains("input lease"));
    // Keys reach the program again (its terminal echoes them); those typed under the lease
    // never did.
    tmux.run(&["send-keys", "-t", "t", "abc"]);
    let screen = ctl.wait_screen(&id, "the echo of abc", |s| s.contains("abc"));
    assert!(!screen.contains("xyz"), "{screen}");

    // Frozen: keys wait unread. Resumed: the notice goes again.
    ctl.ok(&["signal", "freeze", &id]);
    let pane = tmux.wait_pane("the frozen notice", |p| bottom(p).contains("frozen"));
    assert!(bottom(&pane).contains(&id), "{pane}");
    ctl.ok(&["signal", "resume", &id]);
    assert!(
        wait_until(|| lines(&tmux.pane()) == lines(&ctl.screen(&id))),
        "the pane is not the program's screen once resumed:\n{}\n---\n{}",
        tmux.pane(),
        ctl.screen(&id)
    );
}
