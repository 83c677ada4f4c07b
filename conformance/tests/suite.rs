//! The whole suite against our server: in process, over a Unix socket to a running
//! `phux-mio-server`, and through `phux-mio-server --stdio` started per case.
//!
//! The server binary is built by `cargo build -p phux-mio-server` (a no-op when it is up to
//! date) and found next to this test's own executable (`target/<profile>/`): a dev-dependency
//! cannot provide another package's binary, and this keeps the binary the current source.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use phux_conformance::report;
use phux_conformance::runner::CaseReport;
use phux_conformance::suite::{Paths, Suite};
use phux_conformance::transport::{Connector, ExecConnector, InProcess, SocketConnector};

/// How long an expectation waits on a real transport: generous for a loaded 2-core machine.
const REAL_TIMEOUT: Duration = Duration::from_secs(10);

fn suite() -> Suite {
    Suite::load(&Paths::default()).unwrap()
}

fn assert_passes(transport: &str, cases: &[CaseReport]) {
    let tree = report::tree(transport, cases);
    assert!(!cases.iter().any(|c| c.outcome.is_failure()), "{tree}");
    println!("{tree}");
}

/// The probe child: this crate's own binary.
fn probe() -> Vec<String> {
    vec![
        env!("CARGO_BIN_EXE_phux-conformance").to_owned(),
        "probe".to_owned(),
    ]
}

fn server_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // target/<profile>/deps/suite-… → target/<profile>
        let dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "-p", "phux-mio-server", "--bin", "phux-mio-server"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        if dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().unwrap();
        assert!(status.success(), "cargo build -p phux-mio-server failed");
        let bin = dir.join("phux-mio-server");
        assert!(bin.exists(), "{} not found", bin.display());
        bin
    })
    .clone()
}

/// A private scratch directory (0700), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        use std::os::unix::fs::DirBuilderExt;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("phux-conf-{tag}-{}-{nanos}", std::process::id()));
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `phux-mio-server --socket` child, stopped with SIGTERM (so it ends its terminals).
struct Server {
    child: Child,
    socket: PathBuf,
    _dir: Scratch,
}

impl Server {
    fn start() -> Self {
        let dir = Scratch::new("sock");
        let socket = dir.0.join("s.sock");
        let mut child = Command::new(server_binary())
            .arg("--socket")
            .arg(&socket)
            .args(["--log-level", "error"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The server prints one line once it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening"), "server said {line:?}");
        Self {
            child,
            socket,
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        for _ in 0..500 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn in_process_suite_passes() {
    let suite = suite();
    let cases = suite.run(&InProcess, None, REAL_TIMEOUT).unwrap();
    assert!(cases.len() >= 80, "{}", cases.len());
    // Everything runs in process, the probe cases included (a simulated probe terminal).
    for c in &cases {
        assert!(
            !matches!(c.outcome, phux_conformance::runner::Outcome::Unsupported(_)),
            "{} unsupported in process",
            c.id
        );
    }
    assert_passes(&InProcess.describe(), &cases);
}

#[test]
fn socket_suite_passes_against_mio_server() {
    let server = Server::start();
    let connector = SocketConnector {
        path: server.socket.clone(),
        probe: Some(probe()),
    };
    let cases = suite().run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_passes(&connector.describe(), &cases);
}

#[test]
fn exec_suite_passes_against_mio_server() {
    let connector = ExecConnector {
        command: format!("'{}' --stdio --log-level error", server_binary().display()),
        probe: Some(probe()),
    };
    let cases = suite().run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_passes(&connector.describe(), &cases);
}

#[test]
fn json_report_carries_the_wire_log() {
    let suite = suite();
    let cases = suite
        .run(&InProcess, Some("handshake/001"), REAL_TIMEOUT)
        .unwrap();
    assert_eq!(cases.len(), 1);
    let json = report::json("in-process", &cases);
    let case = &json["cases"][0];
    assert_eq!(case["outcome"], "PASS");
    let wire: Vec<&str> = case["wire"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(wire[0], "c1 > PING{nonce=0xdeadbeefcafef00d}");
    assert_eq!(wire[1], "c1 < PONG{nonce=0xdeadbeefcafef00d}");
}
