//! Two `phuxctl attach` clients of different sizes on one terminal, each in its own tmux
//! ([SERVER.SIZE.1], [SERVER.SIZE.2], [CLIENT.ATTACH.12]): the terminal takes the smallest
//! columns and rows (tmux's `window-size smallest`), the program sees that size, the smaller
//! client shows the screen exactly, the larger one shows it in its top-left corner with the
//! rest marked, and when the smaller one detaches the terminal grows back to the larger one.
//! Skipped (phux_testkit records it) where tmux or python3 is missing.

use crate::ctl_attach_replies::attach_in_tmux_sized;
use crate::support::{Ctl, Server, wait_until};

/// Prints `size=COLSxROWS` at its start and on every SIGWINCH.
const PROGRAM: &str = r#"
import os, signal, time
def show(*_):
    c, r = os.get_terminal_size(0)
    os.write(1, b"size=%dx%d\n" % (c, r))
signal.signal(signal.SIGWINCH, show)
show()
while True:
    time.sleep(1)
"#;

/// The size the program last printed (what was typed may stand before it on its line).
fn last_size(screen: &str) -> Option<String> {
    screen
        .lines()
        .rev()
        .find_map(|l| Some(l[l.find("size=")? + "size=".len()..].trim()))
        .map(str::to_owned)
}

/// A screen's rows, trailing blanks trimmed, padded with empty rows to `rows`.
fn rows(text: &str, rows: usize) -> Vec<String> {
    let mut all: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    all.resize(rows.max(all.len()), String::new());
    all
}

/// What a `cols` x `rows` pane shows of `screen` (a smaller terminal's rows) drawn in its
/// corner: each row padded to the terminal's width, then dots; dots below.
fn marked(screen: &str, size: (usize, usize), pane: (usize, usize)) -> Vec<String> {
    let dots = |n: usize| "\u{b7}".repeat(n);
    let mut out: Vec<String> = rows(screen, size.1)
        .into_iter()
        .take(size.1)
        .map(|l| format!("{l:<w$}{}", dots(pane.0 - size.0), w = size.0))
        .collect();
    out.resize(pane.1, dots(pane.0));
    out
}

#[test]
fn two_clients_share_the_smallest_size_and_the_larger_marks_the_rest() {
    phux_testkit::require_programs!("tmux", "python3");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["python3", "-c", PROGRAM]);
    ctl.wait_screen(&id, "the program's start", |s| s.contains("size="));
    let listed =
        |size: &str| wait_until(|| ctl.ok(&["list"]).contains(&format!("{id}\t-\t{size}")));

    // Alone, the large client sizes the terminal to its pane.
    let big_dir = tempfile::tempdir().expect("tempdir");
    let big = attach_in_tmux_sized(&ctl, &id, big_dir.path(), (100, 30));
    assert!(listed("100x30"), "{}", ctl.ok(&["list"]));
    ctl.wait_screen(&id, "the program seeing 100x30", |s| {
        last_size(s).as_deref() == Some("100x30")
    });
    assert!(
        wait_until(|| rows(&big.pane(), 30) == rows(&ctl.screen(&id), 30)),
        "the large pane is not the screen:\n{}",
        big.pane()
    );

    // A smaller one attaches: the smallest columns and rows, which the program sees.
    let small_dir = tempfile::tempdir().expect("tempdir");
    let small = attach_in_tmux_sized(&ctl, &id, small_dir.path(), (80, 20));
    assert!(listed("80x20"), "{}", ctl.ok(&["list"]));
    ctl.wait_screen(&id, "the program seeing 80x20", |s| {
        last_size(s).as_deref() == Some("80x20")
    });
    // Neither draws a screen that does not fit: the small one shows it exactly, the large
    // one in its corner with the rest marked.
    assert!(
        wait_until(|| rows(&small.pane(), 20) == rows(&ctl.screen(&id), 20)),
        "the small pane is not the screen:\n{}\n---\n{}",
        small.pane(),
        ctl.screen(&id)
    );
    assert!(
        wait_until(|| rows(&big.pane(), 30) == marked(&ctl.screen(&id), (80, 20), (100, 30))),
        "the large pane does not show the 80x20 screen in its corner:\n{}\n---\n{}",
        big.pane(),
        ctl.screen(&id)
    );
    // Keys typed in the large one still reach the program (its tty is in cooked mode and
    // echoes them).
    big.run(&["send-keys", "-t", "t", "typed-in-big"]);
    ctl.wait_screen(&id, "the echo", |s| s.contains("typed-in-big"));
    assert!(
        wait_until(|| rows(&big.pane(), 30) == marked(&ctl.screen(&id), (80, 20), (100, 30))),
        "the large pane after output:\n{}",
        big.pane()
    );

    // [SERVER.SIZE.2] The small one detaches: the terminal grows back to the large one.
    small.run(&["send-keys", "-t", "t", "C-\\"]);
    small.wait_pane("attach's exit", |p| p.contains("attach-exit=0"));
    assert!(listed("100x30"), "{}", ctl.ok(&["list"]));
    ctl.wait_screen(&id, "the program seeing 100x30 again", |s| {
        last_size(s).as_deref() == Some("100x30")
    });
    assert!(
        wait_until(|| rows(&big.pane(), 30) == rows(&ctl.screen(&id), 30)),
        "the large pane is not the screen once alone again:\n{}\n---\n{}",
        big.pane(),
        ctl.screen(&id)
    );
}
