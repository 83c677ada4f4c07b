//! `phuxctl attach` driven under tmux: keys typed in the tmux pane reach the terminal and its
//! echo is drawn, the detach key returns with the tty restored, and the terminal lives on.
//! Skipped (phux_testkit records it) where tmux is not installed.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Ctl, Server, wait_until};

/// tmux on a private socket, so the test neither sees nor disturbs anyone else's server.
pub(crate) struct Tmux {
    pub(crate) socket: std::path::PathBuf,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket).stdin(Stdio::null());
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts session `t` (the one [`Tmux::pane`] reads), `cols` x `rows`, running `line`.
    pub(crate) fn new_session(&self, cols: u16, rows: u16, line: &str) {
        let (cols, rows) = (cols.to_string(), rows.to_string());
        self.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            &cols,
            "-y",
            &rows,
            line,
        ]);
    }

    pub(crate) fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    pub(crate) fn wait_pane(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let found = wait_until(|| {
            last = self.pane();
            pred(&last)
        });
        assert!(found, "the tmux pane never showed {what}:\n{last}");
        last
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

pub(crate) fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

#[test]
fn attach_under_tmux_types_shows_and_detaches_leaving_the_terminal() {
    phux_testkit::require_programs!("tmux");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh"]);
    // Something on the screen before the attach, to see the bootstrap draw it.
    ctl.ok(&["send", &id, "echo before-attach", "--key", "Enter"]);
    ctl.wait_screen(&id, "before-attach", |s| {
        s.matches("before-attach").count() >= 2
    });

    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = Tmux {
        socket: dir.path().join("tmux.sock"),
    };
    // The pane runs attach, then reports its exit status and stays open to be read.
    let script = format!(
        "XDG_STATE_HOME={} {} --socket {} attach {id}; echo \"attach-exit=$?\"; exec sleep 1000",
        shell_quote(ctl.state.path()),
        shell_quote(Path::new(env!("CARGO_BIN_EXE_phuxctl"))),
        shell_quote(&ctl.socket),
    );
    tmux.new_session(90, 25, &script);

    // [BOOTSTRAP.CHUNK.2] The attach draws the terminal's screen, and resizes it to the pane.
    tmux.wait_pane("the bootstrap", |p| p.contains("before-attach"));
    assert!(
        wait_until(|| ctl.ok(&["list"]).contains(&format!("{id}\t-\t90x25"))),
        "the terminal was not resized to the pane: {}",
        ctl.ok(&["list"])
    );

    // Keys typed in the pane become key events; the shell's echo and output are drawn.
    tmux.run(&["send-keys", "-t", "t", "echo typed-$((6*7))", "Enter"]);
    tmux.wait_pane("the command's output", |p| p.contains("typed-42"));
    ctl.wait_screen(&id, "typed-42", |s| s.contains("typed-42"));

    // C-\ detaches: attach returns 0 and the tty is given back.
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("attach-exit=0"), "{pane}");
    assert!(pane.contains(&format!("[detached from {id}]")), "{pane}");
    // The terminal is intact on the server: still listed, its screen still there, and it
    // still takes input.
    assert!(ctl.ok(&["list"]).contains(&format!("{id}\t")));
    ctl.ok(&["send", &id, "echo after-detach", "--key", "Enter"]);
    ctl.wait_screen(&id, "after-detach", |s| {
        s.matches("after-detach").count() >= 2
    });
    let screen = ctl.screen(&id);
    assert!(screen.contains("typed-42"), "{screen}");
}

// [CLIENT.ATTACH.8] [CLIENT.ATTACH.9]
/// The detach key pressed twice in a row reaches the program once (tmux's prefix-prefix
/// habit) and the attach goes on; pressed once it detaches. `--detach-key none` passes the key
/// through; a key a program needs for typing is refused as bad usage.
#[test]
fn the_detach_key_twice_sends_it_and_none_or_a_typing_key_are_decided() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    for key in ["a", "Enter", "Tab", "Esc", "Space", "S-b", "BSpace"] {
        let out = ctl.run(&["attach", "1", "--detach-key", key]);
        assert_eq!(out.status.code(), Some(2), "--detach-key {key}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("typing"),
            "--detach-key {key}: {out:?}"
        );
    }
    phux_testkit::require_programs!("tmux");
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("read");
    let recorder = crate::support::key_recorder();
    let id = ctl.spawn(&[
        recorder.to_str().expect("utf-8 path"),
        log.to_str().expect("utf-8 path"),
    ]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));
    let tmux = Tmux {
        socket: dir.path().join("tmux.sock"),
    };
    let attach = |extra: &str| {
        format!(
            "XDG_STATE_HOME={} {} --socket {} attach {id}{extra}; echo \"attach-exit=$?\"; \
             exec sleep 1000",
            shell_quote(ctl.state.path()),
            shell_quote(Path::new(env!("CARGO_BIN_EXE_phuxctl"))),
            shell_quote(&ctl.socket),
        )
    };
    tmux.new_session(80, 24, &attach(""));
    tmux.wait_pane("the bootstrap", |p| p.contains("ready"));
    tmux.run(&["send-keys", "-t", "t", "C-\\", "C-\\", "x"]);
    assert!(
        wait_until(|| std::fs::read(&log).is_ok_and(|b| b == b"\x1cx")),
        "the program read {:?}, not one C-\\ and x",
        std::fs::read(&log)
    );
    assert!(!tmux.pane().contains("attach-exit="), "{}", tmux.pane());
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("attach-exit=0"), "{pane}");

    // With no detach key, C-\ is the program's.
    tmux.run(&[
        "respawn-pane",
        "-k",
        "-t",
        "t",
        &attach(" --detach-key none"),
    ]);
    tmux.wait_pane("the bootstrap", |p| p.contains("ready"));
    tmux.run(&["send-keys", "-t", "t", "C-\\", "y"]);
    assert!(
        wait_until(|| std::fs::read(&log).is_ok_and(|b| b == b"\x1cx\x1cy")),
        "the program read {:?}",
        std::fs::read(&log)
    );
    assert!(!tmux.pane().contains("attach-exit="), "{}", tmux.pane());
}
