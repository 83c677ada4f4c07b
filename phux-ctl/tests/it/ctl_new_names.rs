//! The habits a tmux, dtach or abduco user brings: `new -A -s NAME` creates-or-attaches and
//! starts the server on demand, verbs take names, `attach` alone attaches the most recent, and
//! two shells starting at once get one server (CLIENT.START.N, CLIENT.NAME.N). Attaching runs
//! under tmux as the outer terminal; skipped (phux_testkit records it) where tmux is absent.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::ctl_attach_tmux::{Tmux, shell_quote};
use crate::support::{Ctl, server, wait_until};

/// A socket nobody listens on yet, in a private directory, and phuxctl pointed at the test
/// server binary for when it starts one.
struct NoServer {
    ctl: Ctl,
    _dir: tempfile::TempDir,
}

impl NoServer {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ctl = Ctl::at(&dir.path().join("run").join("s.sock"));
        Self { ctl, _dir: dir }
    }

    /// `phuxctl --socket S ARGS` with the test server as the one to start.
    fn run(&self, args: &[&str]) -> Output {
        self.ctl
            .command(args)
            .env("PHUXCTL_SERVER", server::server_exe())
            .output()
            .expect("run phuxctl")
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "phuxctl {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// The shell line that runs phuxctl ARGS in a tmux pane, then reports its exit status as
    /// `TAG=N`.
    fn pane_line(&self, args: &str, tag: &str) -> String {
        format!(
            "clear; XDG_STATE_HOME={} PHUXCTL_SERVER={} {} --socket {} {args}; echo \"{tag}=$?\"; exec sleep 1000",
            shell_quote(self.ctl.state.path()),
            shell_quote(&server::server_exe()),
            shell_quote(Path::new(env!("CARGO_BIN_EXE_phuxctl"))),
            shell_quote(&self.ctl.socket),
        )
    }

    /// The pids of the servers listening on this test's socket (their command line names it).
    fn servers(&self) -> Vec<u32> {
        servers_on(&self.ctl.socket)
    }
}

impl Drop for NoServer {
    fn drop(&mut self) {
        // The server phuxctl started lives in its own session: end it by its pid.
        for pid in self.servers() {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
    }
}

/// Processes whose command line holds `socket`.
fn servers_on(socket: &Path) -> Vec<u32> {
    let needle = socket.as_os_str().as_encoded_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
                cmd.windows(needle.len()).any(|w| w == needle)
                    && !cmd.windows(7).any(|w| w == b"phuxctl")
            })
        })
        .collect()
}

fn tmux_in(dir: &Path) -> Tmux {
    Tmux {
        socket: dir.join("tmux.sock"),
    }
}

fn state_dir(ctl: &Ctl) -> PathBuf {
    ctl.state.path().join("phux-mio")
}

#[test]
fn new_a_s_creates_then_attaches_by_name_starting_the_server() {
    phux_testkit::require_programs!("tmux");
    let t = NoServer::new();
    assert!(t.servers().is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = tmux_in(dir.path());
    // Each step runs in the same pane, replacing what ran there.
    let in_pane = |line: &str| tmux.run(&["respawn-pane", "-k", "-t", "t", line]);
    tmux.new_session(90, 25, "exec sleep 1000");
    // [CLIENT.START.1] No server: `new -A -s work` starts one, creates `work`, attaches.
    in_pane(&t.pane_line("new -A -s work -- /bin/sh", "first"));
    tmux.run(&["send-keys", "-t", "t", "echo made-$((6*7))", "Enter"]);
    tmux.wait_pane("the new terminal's echo", |p| p.contains("made-42"));
    let servers = t.servers();
    assert_eq!(servers.len(), 1, "one server started");
    // [SERVER.DETACH.1] In a session of its own: the pane's hangup never reaches it.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", servers[0])).expect("stat");
    let session = stat[stat.rfind(')').expect("comm") + 1..]
        .split_whitespace()
        .nth(3);
    assert_eq!(session, Some(servers[0].to_string().as_str()), "{stat}");
    // Its log is where phuxctl keeps its state, owner-only.
    let log = std::fs::read_dir(state_dir(&t.ctl))
        .expect("state dir")
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "log"))
        .expect("a server log");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&log.metadata().expect("meta").permissions());
    assert_eq!(mode & 0o777, 0o600);
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("the detach", |p| p.contains("first="));
    assert!(pane.contains("first=0"), "{pane}");

    // [CLIENT.NAME.1] list shows the name; the verbs take it.
    let list = t.ok(&["list"]);
    assert!(list.contains("local:1\twork\t"), "{list}");
    assert!(
        t.ok(&["send", "work", "echo by-name", "--key", "Enter"])
            .contains("delivered")
    );
    assert!(wait_until(|| t
        .ok(&["screen", "work"])
        .matches("by-name")
        .count()
        >= 2));

    // [CLIENT.NAME.2] Without -A the name is refused, and nothing is created.
    let out = t.run(&["new", "-d", "-s", "work"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("a terminal named work exists"));
    let out = t.run(&["spawn", "-s", "work"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(t.ok(&["list"]).lines().count(), 1);

    // The same `new -A -s work` now attaches to it: the screen shows what is already there.
    in_pane(&t.pane_line("new -A -s work -- /bin/sh", "again"));
    tmux.wait_pane("the existing terminal", |p| {
        p.contains("made-42") && p.contains("by-name")
    });
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    tmux.wait_pane("the detach", |p| p.contains("again=0"));
    assert_eq!(t.ok(&["list"]).lines().count(), 1, "still one terminal");
    assert_eq!(t.servers().len(), 1, "still one server");

    // [CLIENT.NAME.4] `attach` alone: the most recent, here the terminal `spawn` just made.
    let other = t.ok(&["spawn", "-s", "other", "--", "/bin/sh"]);
    assert_eq!(other.trim(), "local:2");
    t.ok(&["send", "other", "echo in-other", "--key", "Enter"]);
    in_pane(&t.pane_line("attach", "recent"));
    tmux.wait_pane("the most recent terminal", |p| p.contains("in-other"));
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("the detach", |p| p.contains("recent="));
    assert!(pane.contains("[detached from local:2]"), "{pane}");

    // Killed by name, the name is gone with it; `attach` alone then takes the newest left.
    t.ok(&["kill", "other"]);
    assert!(wait_until(|| !t.ok(&["list"]).contains("other")));
    let out = t.run(&["screen", "other"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no terminal named other"));
    in_pane(&t.pane_line("attach", "newest"));
    tmux.wait_pane("the newest terminal", |p| p.contains("by-name"));
    tmux.run(&["send-keys", "-t", "t", "C-\\"]);
    let pane = tmux.wait_pane("the detach", |p| p.contains("newest="));
    assert!(pane.contains("[detached from local:1]"), "{pane}");
}

#[test]
fn two_shells_creating_at_once_get_one_server_and_one_terminal_per_name() {
    let t = NoServer::new();
    // [CLIENT.START.2] Four starts at once, two of them for the same name.
    let results: Vec<Output> = std::thread::scope(|s| {
        let handles: Vec<_> = [("a", "-d"), ("b", "-d"), ("same", "-d"), ("same", "-d")]
            .into_iter()
            .map(|(name, d)| {
                let t = &t;
                s.spawn(move || t.run(&["new", d, "-s", name, "--", "/bin/sh"]))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let ok = results.iter().filter(|o| o.status.success()).count();
    assert_eq!(ok, 3, "a, b and one `same`: {results:?}");
    let refused: Vec<&Output> = results.iter().filter(|o| !o.status.success()).collect();
    assert!(
        String::from_utf8_lossy(&refused[0].stderr).contains("a terminal named same exists"),
        "{refused:?}"
    );
    assert_eq!(t.servers().len(), 1, "one server for all four");
    let list = t.ok(&["list"]);
    for name in ["a", "b", "same"] {
        assert_eq!(
            list.lines()
                .filter(|l| l.split('\t').nth(1) == Some(name))
                .count(),
            1,
            "{list}"
        );
    }
}

#[test]
fn new_never_starts_a_server_over_exec() {
    let t = NoServer::new();
    // The command reaches nothing: phuxctl reports it and starts nothing on this host.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .args(["--exec", "exit 1", "new", "-d", "-s", "x"])
        .env("XDG_STATE_HOME", t.ctl.state.path())
        .env("PHUXCTL_SERVER", server::server_exe())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run phuxctl");
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(!state_dir(&t.ctl).read_dir().is_ok_and(|mut d| {
        d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "log")))
    }));
}

#[test]
fn the_name_may_come_first_as_dtach_and_abduco_take_it() {
    // `dtach -n SOCKET CMD`, `abduco -n NAME CMD`: created without attaching, by the name
    // given first (the program after `--`); the server started on demand as for -s.
    let t = NoServer::new();
    let id = t.ok(&["new", "-d", "work", "--", "/bin/sh"]);
    assert_eq!(id.trim(), "local:1");
    assert!(t.ok(&["list"]).contains("work"), "{}", t.ok(&["list"]));
    t.ok(&["send", "work", "echo by-first-name", "--key", "Enter"]);
    assert!(wait_until(|| t
        .ok(&["screen", "work"])
        .contains("by-first-name")));
    // `abduco -c NAME` on a name in use: refused, nothing created.
    let out = t.run(&["new", "-d", "work", "--", "/bin/sh"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("a terminal named work exists"));
    // `dtach -A` / `abduco -A`: the existing one (here not attached to: its id).
    assert_eq!(t.ok(&["new", "-A", "-d", "work"]).trim(), "local:1");
    // The name given both ways is bad usage.
    let out = t.run(&["new", "-d", "work", "-s", "other"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(t.ok(&["list"]).lines().count(), 1, "still one terminal");
}

#[test]
fn a_detach_key_in_caret_notation_detaches() {
    // `dtach -e '^q'`, `abduco -e ^q`: the same key as C-q.
    phux_testkit::require_programs!("tmux");
    let t = NoServer::new();
    t.ok(&["new", "-d", "-s", "work", "--", "/bin/sh"]);
    t.ok(&["send", "work", "echo caret-ready", "--key", "Enter"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let tmux = tmux_in(dir.path());
    let line = t.pane_line("attach --detach-key ^q work", "caret");
    tmux.new_session(100, 30, &line);
    tmux.wait_pane("the attached terminal", |p| p.contains("caret-ready"));
    tmux.run(&["send-keys", "-t", "t", "C-q"]);
    let pane = tmux.wait_pane("the detach", |p| p.contains("caret="));
    assert!(pane.contains("caret=0"), "{pane}");
    assert!(pane.contains("[detached from local:1]"), "{pane}");
}
