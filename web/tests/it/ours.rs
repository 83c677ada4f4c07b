//! Our server with its WebSocket listener (`--listen-ws`), run from the crate's examples: the
//! server itself (`web-test-server`) and phuxctl (`web-test-phuxctl`), built by `cargo test`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// An example binary of this package (`cargo test` builds them before the tests).
pub(crate) fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    // target/<profile>/deps/it-<hash> -> target/<profile>/examples/<name>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    dir.join("examples").join(name)
}

/// phux-mio-server with a WebSocket listener on `ws`, answering pages from `origin` (the
/// fault proxy's address, which the browser sees).
pub(crate) struct OurServer {
    child: Child,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    pub(crate) ws: SocketAddr,
    origin: String,
    pub(crate) secret: String,
}

impl OurServer {
    /// Whether the server under test has a WebSocket listener (`--listen-ws`).
    pub(crate) fn available() -> bool {
        Command::new(example("web-test-server"))
            .arg("--help")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--listen-ws"))
    }

    pub(crate) fn start(ws: SocketAddr, origin: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let child = Self::launch(dir.path(), &socket, ws, origin);
        let secret = std::fs::read_to_string(socket.with_extension("sock.ws-secret"))
            .expect("the listener's secret")
            .trim()
            .to_owned();
        Self {
            child,
            dir,
            socket,
            ws,
            origin: origin.to_owned(),
            secret,
        }
    }

    fn launch(dir: &Path, socket: &Path, ws: SocketAddr, origin: &str) -> Child {
        let mut child = Command::new(example("web-test-server"))
            .arg("--socket")
            .arg(socket)
            .args(["--listen-ws", &ws.to_string(), "--ws-origin", origin])
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("XDG_RUNTIME_DIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("phux-mio-server listening on") => break,
                Some(Ok(_)) => {}
                _ => panic!("the server ended before it listened"),
            }
        }
        // Keep draining its stdout so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        child
    }

    fn phuxctl_command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(example("web-test-phuxctl"));
        c.arg("--socket")
            .arg(&self.socket)
            .args(args)
            .env("XDG_STATE_HOME", self.dir.path().join("ctl-state"));
        c
    }

    fn phuxctl(&self, args: &[&str]) -> std::process::Output {
        self.phuxctl_command(args).output().expect("phuxctl runs")
    }

    /// Spawns `sh -c script`; its local id.
    pub(crate) fn spawn(&self, script: &str) -> u32 {
        let out = self.phuxctl(&["spawn", "--", "/bin/sh", "-c", script]);
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .strip_prefix("local:")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no terminal id in {text:?} ({out:?})"))
    }

    /// `phuxctl lease acquire ID --hold`, once it holds the lease; ends it when dropped.
    pub(crate) fn hold_lease(&self, terminal: u32) -> Child {
        let mut child = self
            .phuxctl_command(&["lease", "acquire", &terminal.to_string(), "--hold"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("phuxctl lease runs");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("phuxctl lease says");
        assert_eq!(line.trim(), "held", "phuxctl lease acquire --hold");
        child
    }

    /// `phuxctl upgrade`: the exit status and what it said.
    pub(crate) fn upgrade(&self) -> (Option<i32>, String) {
        let out = self.phuxctl(&["upgrade"]);
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// Stops the server and starts a new incarnation on the same socket, port and secret.
    pub(crate) fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
        self.child = Self::launch(self.dir.path(), &self.socket, self.ws, &self.origin);
    }
}

impl Drop for OurServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
