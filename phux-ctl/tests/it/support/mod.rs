//! Helpers for the phuxctl tests: the real server and the real phuxctl binary, each run with
//! a private socket directory and a private outbox directory. Every wait polls a condition
//! against a generous deadline; nothing sleeps for correctness.
//!
//! # The server binary
//!
//! The server is another package's binary, so cargo sets no `CARGO_BIN_EXE_` variable for it
//! here. phux-ctl has an example instead, `examples/ctl-test-server.rs`, whose `main` is the
//! server's own entry point (`phux_mio_server::run::main`); `cargo test -p phux-ctl` builds a
//! package's examples before it runs its tests. The shared `launch` support finds it next to this test
//! binary: the test runs from `<target>/<profile>/deps/`, the example sits in
//! `<target>/<profile>/examples/ctl-test-server`. Nothing here invokes cargo, so a run that did
//! not build the examples (`cargo test --test it` alone) panics with a message saying so.

pub(crate) mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) use server::{DEADLINE, Server, key_recorder};

/// Between two polls of a condition that phuxctl reads from the server.
const POLL: Duration = Duration::from_millis(25);

/// phuxctl against one server, with its own `$XDG_STATE_HOME`.
pub(crate) struct Ctl {
    pub(crate) socket: PathBuf,
    pub(crate) state: tempfile::TempDir,
}

impl Ctl {
    pub(crate) fn new(server: &Server) -> Self {
        Self::at(&server.socket)
    }

    pub(crate) fn at(socket: &Path) -> Self {
        Self {
            socket: socket.to_owned(),
            state: tempfile::tempdir().expect("state dir"),
        }
    }

    /// `phuxctl --socket S ARGS` with the private state directory; stdin is null.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_phuxctl"));
        cmd.arg("--socket")
            .arg(&self.socket)
            .args(args)
            .env("XDG_STATE_HOME", self.state.path())
            .env_remove(PHUXCTL_TEST_HOOK)
            .stdin(Stdio::null());
        cmd
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run phuxctl")
    }

    /// Runs and requires exit 0; the stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "phuxctl {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// `spawn -- ARGV`; the printed id (`local:N`).
    pub(crate) fn spawn(&self, argv: &[&str]) -> String {
        let mut args = vec!["spawn", "--"];
        args.extend_from_slice(argv);
        let id = self.ok(&args).trim().to_owned();
        assert!(id.starts_with("local:"), "spawn printed {id:?}");
        id
    }

    pub(crate) fn screen(&self, id: &str) -> String {
        self.ok(&["screen", id])
    }

    /// Polls `screen ID` until `pred` holds; the screen text. Panics at the deadline.
    pub(crate) fn wait_screen(&self, id: &str, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen(id);
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < end,
                "screen never showed {what}:\n{screen}"
            );
            std::thread::sleep(POLL);
        }
    }

    /// The outbox journal files (`*.journal`) and their sizes.
    pub(crate) fn journals(&self) -> Vec<(PathBuf, u64)> {
        let dir = self.state.path().join("phux-mio/outbox");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "journal"))
            .map(|p| {
                let len = std::fs::metadata(&p).map_or(0, |m| m.len());
                (p, len)
            })
            .collect()
    }
}

/// The test-only hook's variable (kept out of every other run).
pub(crate) const PHUXCTL_TEST_HOOK: &str = "PHUXCTL_TEST_EXIT_AFTER_SEND";

/// How many times `needle` occurs in `hay`.
pub(crate) fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// Polls `pred` until it holds; false at the deadline.
pub(crate) fn wait_until(mut pred: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + DEADLINE;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// The process state letter from `/proc/PID/stat` (R, S, T, Z, ...), `None` once gone.
pub(crate) fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.trim_start().chars().next()
}

/// Reads a pid a child wrote to `path`, once it is there.
pub(crate) fn read_pid(path: &Path) -> u32 {
    let mut pid = None;
    assert!(
        wait_until(|| {
            pid = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            pid.is_some()
        }),
        "no pid in {}",
        path.display()
    );
    pid.unwrap_or_default()
}

/// The server binary at a socket path of the caller's choosing (to restart a server on the
/// same path), once it printed its ready line. Killed when dropped.
pub(crate) struct ServerAt(pub(crate) std::process::Child);

impl ServerAt {
    pub(crate) fn start(socket: &Path) -> Self {
        Self(server::launch_at(socket))
    }
}

impl Drop for ServerAt {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for a child to exit, killing it at the deadline; its output.
pub(crate) fn finish(mut child: std::process::Child) -> Output {
    let end = Instant::now() + DEADLINE;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(POLL);
    }
    child.wait_with_output().expect("wait")
}
