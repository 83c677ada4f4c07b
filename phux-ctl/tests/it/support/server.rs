//! The server under test: the `ctl-test-server` example (see the parent module), started on a
//! socket in a private directory and killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous on purpose: a loaded 2-core machine can take seconds to schedule anything.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// The example's name in `phux-ctl/Cargo.toml`'s examples (`examples/ctl-test-server.rs`).
const SERVER_EXAMPLE: &str = "ctl-test-server";

/// `<target>/<profile>/examples/ctl-test-server`, derived from this test binary's path
/// (`<target>/<profile>/deps/it-<hash>`). Panics, saying how to build it, when it is missing.
pub(crate) fn server_exe() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in <target>/<profile>/deps/");
    let server = profile_dir.join("examples").join(SERVER_EXAMPLE);
    assert!(
        server.is_file(),
        "no server binary at {}: the phuxctl tests run the `{SERVER_EXAMPLE}` example of \
         phux-ctl, which cargo builds with the tests; build it with `cargo test -p phux-ctl`",
        server.display()
    );
    server
}

/// Starts the server on `socket` and waits for its ready line.
fn launch_server(socket: &Path, log_level: &str) -> Child {
    let mut process = Process::new(server_exe())
        .arg("--socket")
        .arg(socket)
        .args(["--log-level", log_level, "--shell", "/bin/sh"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let stdout = process.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(DEADLINE)
        .expect("server never printed its ready line");
    assert_eq!(
        line.trim_end(),
        format!("phux-mio-server listening on {}", socket.display())
    );
    process
}

/// The server binary under test, running until dropped (then killed).
pub(crate) struct Server {
    pub(crate) process: Child,
    pub(crate) socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `ctl-test-server --socket <tempdir>/s.sock` and waits for its ready line.
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let process = launch_server(&socket, "warn");
        Self {
            process,
            socket,
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
