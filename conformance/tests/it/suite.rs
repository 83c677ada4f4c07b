//! The whole suite against our server: in process, over a Unix socket to a running
//! `phux-mio-server`, and through `phux-mio-server --stdio` started per case.
//!
//! The server is this package's example `conformance-test-server`, which is the real server's
//! entry point (`phux_mio_server::run::main`) and which `cargo test` builds before it runs the
//! tests; it is found from this test's own executable (`target/<profile>/examples/`). No test
//! invokes cargo.

use crate::launch;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::time::Duration;

use phux_conformance::expectations::Expectations;
use phux_conformance::report;
use phux_conformance::runner::CaseReport;
use phux_conformance::runner::Outcome;
use phux_conformance::spec::Profile;
use phux_conformance::suite::{Paths, RunOptions, Suite};
use phux_conformance::transport::{
    BrokenInProcess, Connector, ExecConnector, InProcess, RuleFlip, SocketConnector, WsConnector,
};

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

/// The server: the `conformance-test-server` example (see [`launch::example`]).
fn server_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| launch::example("conformance-test-server", "phux-conformance"))
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
pub(crate) struct Server {
    child: Child,
    pub(crate) socket: PathBuf,
    _dir: Scratch,
}

impl Server {
    pub(crate) fn start() -> Self {
        let dir = Scratch::new("sock");
        let socket = dir.0.join("s.sock");
        let child = launch::launch_server(&server_binary(), &socket, None, "error");
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
            !matches!(c.outcome, Outcome::Unsupported(_)),
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
    // The server outlives the run: every terminal a case spawned was killed after it.
    let state = server_state(&server.socket);
    assert!(
        state.contains("terminals=[]"),
        "terminals left behind: {state}"
    );
}

/// The same suite over the server's WebSocket listener (`--listen-ws`, spec/websocket.md):
/// every case passes as over the socket, and only the cases that cut a frame across writes
/// (`byte-stream`) cannot run, a WebSocket message carrying one whole frame.
#[test]
fn ws_suite_passes_against_mio_server() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let dir = Scratch::new("ws");
    let socket = dir.0.join("s.sock");
    let mut child = Command::new(server_binary())
        .arg("--socket")
        .arg(&socket)
        .args(["--log-level", "error", "--shell", "/bin/sh"])
        .args(["--listen-ws", "127.0.0.1:0", "--ws-allow-no-origin"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let ready = lines.next().unwrap().unwrap();
    assert!(ready.starts_with("phux-mio-server listening on"), "{ready}");
    // `phux-mio-server websocket on ws://ADDR/ (secret in PATH)`
    let rest = first.strip_prefix("phux-mio-server websocket on ").unwrap();
    let (url, secret) = rest.split_once(" (secret in ").unwrap();
    let secret = std::path::Path::new(secret.trim_end_matches(')'));
    let server = Server {
        child,
        socket,
        _dir: dir,
    };
    let connector = WsConnector::new(url, Some(secret), None, Some(probe())).unwrap();
    let cases = suite().run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_passes(&connector.describe(), &cases);
    // What only the WebSocket cannot carry: a frame cut across writes.
    let ws_only: Vec<&str> = cases
        .iter()
        .filter(|c| matches!(&c.outcome, Outcome::Unsupported(why) if why.contains("WebSocket")))
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(ws_only, ["framing/004", "framing/010"]);
    let state = server_state(&server.socket);
    assert!(
        state.contains("terminals=[]"),
        "terminals left behind: {state}"
    );
}

/// The server's GET_STATE answer, in the notation.
fn server_state(socket: &std::path::Path) -> String {
    use phux_core::framing::FrameDecoder;
    use phux_proto::Frame;
    use phux_proto::notation::Value;
    use std::io::{Read, Write};

    let suite = suite();
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(REAL_TIMEOUT)).unwrap();
    for frame in [
        suite.templates.expand(&Value::ident("Hello")).unwrap(),
        Value::parse("COMMAND{request_id=7 command=GET_STATE{scope=server}}").unwrap(),
    ] {
        stream
            .write_all(&Frame::from_value(&frame).unwrap().to_bytes())
            .unwrap();
    }
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 65536];
    loop {
        while let Some(f) = decoder.poll_frame().unwrap() {
            let text = f.to_string();
            if text.starts_with("COMMAND_RESULT{request_id=7") {
                return text;
            }
        }
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed before answering GET_STATE");
        decoder.push(&buf[..n]);
    }
}

#[test]
fn exec_suite_passes_against_mio_server() {
    let connector = ExecConnector {
        command: format!("'{}' --stdio --log-level error", server_binary().display()),
        probe: Some(probe()),
        shared: false,
    };
    let cases = suite().run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_passes(&connector.describe(), &cases);
}

/// Through `phux-mio-server bridge` (what `ssh HOST phux-mio-server bridge` runs), one bridge
/// per connection to a server that outlives them all: the same cases pass as over the socket,
/// but for those that need a server of their own.
#[test]
fn shared_exec_suite_passes_through_the_bridge() {
    let server = Server::start();
    let connector = ExecConnector {
        command: format!(
            "'{}' bridge --socket '{}'",
            server_binary().display(),
            server.socket.display()
        ),
        probe: Some(probe()),
        shared: true,
    };
    let cases = suite().run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_passes(&connector.describe(), &cases);
    assert!(
        cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Pass))
            .count()
            > 100,
        "too few cases ran through the bridge"
    );
}

/// Under `--profile phux` the cases that check (or assume) a rule of ours are SKIPPED, naming
/// it, and every other case still passes against our engine.
#[test]
fn the_phux_profile_skips_exactly_the_cases_on_our_rules() {
    let suite = suite();
    let options = RunOptions::new(Profile::Phux, REAL_TIMEOUT);
    let cases = suite.run_with(&InProcess, &options, &mut |_| {}).unwrap();
    assert_passes("in-process, profile phux", &cases);
    let mut skipped = 0;
    for (case, t) in cases.iter().zip(suite.select(&[])) {
        let ours = suite.ours_cited(t);
        match &case.outcome {
            Outcome::Skipped(why) => {
                skipped += 1;
                assert!(!ours.is_empty(), "{} skipped without a rule of ours", t.id);
                assert!(why.contains(&ours[0]), "{why}");
            }
            _ => assert!(ours.is_empty(), "{} ran though it cites {ours:?}", t.id),
        }
    }
    // handshake/002 checks our exact HELLO_OK (R14): never a phux-profile case.
    assert!(skipped > 0);
    assert!(
        cases
            .iter()
            .any(|c| c.id == "handshake/002" && matches!(c.outcome, Outcome::Skipped(_)))
    );
}

/// A case a peer file lists as a known deviation is KNOWN when it fails and KNOWN_PASSED (a
/// failure of the list) when it passes; one listed for another transport is untouched.
#[test]
fn known_deviations_are_their_own_outcome_and_a_stale_one_fails() {
    let mut suite = suite();
    suite.expectations = Expectations::parse(
        "peer.toml",
        "peer = \"test\"\n[[known]]\ncase = \"handshake/001\"\nphux = \"proto.md\"\nwhy = \"w\"\n\
         [[known]]\ncase = \"handshake/004\"\nphux = \"p\"\nwhy = \"w\"\ntransports = [\"socket\"]\n\
         [[known]]\ncase = \"input/003\"\nphux = \"ADR-0053\"\nwhy = \"w\"\n",
    )
    .unwrap();
    let mut options = RunOptions::new(Profile::Phux, REAL_TIMEOUT);
    options.filters = vec!["handshake/001".into(), "handshake/004".into()];
    let cases = suite.run_with(&InProcess, &options, &mut |_| {}).unwrap();
    assert!(
        matches!(cases[0].outcome, Outcome::KnownPassed(_)),
        "{:?}",
        cases[0].outcome
    );
    assert!(cases[0].outcome.is_failure());
    assert_eq!(cases[1].outcome, Outcome::Pass);
    // A rule flipped in the engine makes the listed case fail: reported KNOWN, not FAIL.
    let broken = BrokenInProcess(RuleFlip::RewriteRetries);
    options.profile = Profile::PhuxRs;
    options.filters = vec!["input/003".into()];
    let cases = suite.run_with(&broken, &options, &mut |_| {}).unwrap();
    assert!(
        matches!(cases[0].outcome, Outcome::Known(_)),
        "{:?}",
        cases[0].outcome
    );
    assert!(!cases[0].outcome.is_failure());
}

#[test]
fn json_report_carries_the_wire_log() {
    let suite = suite();
    let cases = suite
        .run(&InProcess, Some("handshake/001"), REAL_TIMEOUT)
        .unwrap();
    assert_eq!(cases.len(), 1);
    let json = report::json(&report::RunInfo::now("in-process", "phux-rs"), &cases);
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

/// The recorder proxies a scripted session to a live server and writes a draft that, with its
/// header filled in, replays against the same server: server-chosen ids became captures.
#[test]
fn a_recorded_session_replays_against_the_server() {
    use phux_core::framing::FrameDecoder;
    use phux_proto::Frame;
    use phux_proto::notation::Value;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    let server = Server::start();
    let dir = Scratch::new("rec");
    let listen = dir.0.join("rec.sock");
    let recorder = {
        let (socket, listen) = (server.socket.clone(), listen.clone());
        std::thread::spawn(move || phux_conformance::recorder::record(&socket, &listen, 1))
    };
    let mut client = None;
    for _ in 0..500 {
        if let Ok(c) = UnixStream::connect(&listen) {
            client = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut client = client.expect("the recorder listens");
    client.set_read_timeout(Some(REAL_TIMEOUT)).unwrap();
    let suite = suite();
    let mut decoder = FrameDecoder::new();
    // Sends a frame and reads until a frame of the named type arrives.
    let mut client2 = client.try_clone().unwrap();
    let mut exchange = |frame: &Value, until: &str| {
        let frame = Frame::from_value(&suite.templates.expand(frame).unwrap()).unwrap();
        client2.write_all(&frame.to_bytes()).unwrap();
        let mut buf = [0u8; 4096];
        loop {
            while let Some(f) = decoder.poll_frame().unwrap() {
                if f.to_string().starts_with(until) {
                    return f.to_value();
                }
            }
            let n = client2.read(&mut buf).unwrap();
            assert!(n > 0, "the server closed before {until}");
            decoder.push(&buf[..n]);
        }
    };
    exchange(&Value::ident("Hello"), "HELLO_OK");
    let spawned = exchange(
        &Value::parse(r#"SPAWN_TERMINAL{request_id=1 group=1 command=["/bin/cat"]}"#).unwrap(),
        "TERMINAL_SPAWNED",
    );
    let text = spawned.to_string();
    let terminal = text
        .split("terminal=")
        .nth(1)
        .and_then(|t| t.split('}').next())
        .unwrap()
        .to_owned();
    let resize = Value::parse(&format!(
        "TERMINAL_RESIZE{{terminal={terminal} size={{cols=100 rows=30}}}}"
    ))
    .unwrap();
    client
        .write_all(&Frame::from_value(&resize).unwrap().to_bytes())
        .unwrap();
    exchange(&Value::parse("PING{nonce=77}").unwrap(), "PONG");
    exchange(
        &Value::parse(&format!(
            "COMMAND{{request_id=3 command=KILL_TERMINAL{{terminal={terminal}}}}}"
        ))
        .unwrap(),
        "COMMAND_RESULT",
    );
    exchange(&Value::ident("DETACH"), "DETACHED");
    drop(client);
    let draft = recorder.join().unwrap().unwrap();
    // The terminal id the server chose is a capture, bound where the server named it first.
    assert!(draft.contains("result=ok{terminal=$t1}"), "{draft}");
    assert!(draft.contains("KILL_TERMINAL{terminal=$t1}"), "{draft}");
    assert!(!draft.contains(&terminal), "{draft}");
    let filled = draft
        .replace("id: draft/001", "id: recorded/001")
        .replace("clauses: TODO", "clauses: COMMAND.ENVELOPE.2")
        .replace("description: TODO", "description: a recorded session")
        .replace("requirement: TODO", "requirement: replays");
    let transcript = phux_conformance::transcript::parse("recorded.phuxt", &filled)
        .unwrap_or_else(|e| panic!("{e}\n{filled}"));
    let mut replay = suite.clone();
    replay.transcripts = vec![transcript];
    let connector = SocketConnector {
        path: server.socket.clone(),
        probe: None,
    };
    let cases = replay.run(&connector, None, REAL_TIMEOUT).unwrap();
    assert_eq!(cases.len(), 1);
    assert!(
        matches!(cases[0].outcome, Outcome::Pass),
        "{}\n{filled}",
        report::tree(&connector.describe(), &cases)
    );
}
