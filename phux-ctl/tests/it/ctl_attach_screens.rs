//! A program that switches to its alternate screen and back while `phuxctl attach` shows it
//! in tmux ([CLIENT.ATTACH.13]): attach draws on its own alternate screen, where tmux ignores
//! a second switch, so the program's switches must be drawn from the model. The pane is the
//! server's screen after each switch: the alternate screen alone, then the main screen back
//! as the program left it. Skipped (phux_testkit records it) where tmux is missing.

use crate::ctl_attach_replies::attach_in_tmux;
use crate::support::{Ctl, Server, wait_until};

/// Numbered lines on the main screen; on each Enter, into the alternate screen (drawing ALT)
/// and out of it again (printing back).
const PROGRAM: &str = "for i in 1 2 3 4 5; do echo main-$i; done; read a; \
                       printf '\\033[?1049h\\033[5;5HALT'; read b; printf '\\033[?1049l'; \
                       echo back; read c";

/// A screen's rows as text, without trailing blanks or the empty rows at the end.
fn lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[test]
fn the_program_switching_screens_is_shown_as_the_server_has_each_screen() {
    phux_testkit::require_programs!("tmux");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", PROGRAM]);
    ctl.wait_screen(&id, "the main screen", |s| s.contains("main-5"));
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    tmux.wait_pane("the bootstrap", |p| p.contains("main-5"));
    let same = || wait_until(|| lines(&tmux.pane()) == lines(&ctl.screen(&id)));

    // Into the alternate screen: ALT alone, none of the main screen showing through.
    ctl.ok(&["send", &id, "--key", "Enter"]);
    ctl.wait_screen(&id, "the alternate screen", |s| s.contains("ALT"));
    assert!(
        same(),
        "the pane is not the alternate screen:\n{}\n---\n{}",
        tmux.pane(),
        ctl.screen(&id)
    );
    // [CLIENT.ATTACH.13] Out of it: the main screen back as the program left it.
    ctl.ok(&["send", &id, "--key", "Enter"]);
    ctl.wait_screen(&id, "the main screen again", |s| s.contains("back"));
    assert!(
        same(),
        "the pane is not the main screen:\n{}\n---\n{}",
        tmux.pane(),
        ctl.screen(&id)
    );
    assert!(tmux.pane().contains("main-1"), "{}", tmux.pane());
}
