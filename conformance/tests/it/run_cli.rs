//! `phux-conformance run`, as the built binary: what a newcomer meets first.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phux-conformance"))
        .arg("run")
        .args(args)
        // Not the repository's directory: the transcripts and spec are built in.
        .current_dir(std::env::temp_dir())
        .output()
        .expect("the phux-conformance binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn list_needs_no_server_and_names_clauses_and_profile() {
    let out = run(&[
        "--list",
        "--filter",
        "handshake/002",
        "--filter",
        "INPUT.DEDUPE.2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("handshake/002 MUST [phux-rs]"), "{listed}");
    assert!(listed.contains("clauses: HELLO.OK.1"), "{listed}");
    assert!(listed.contains("input/003"), "{listed}");
    assert!(!listed.contains("lease/"), "{listed}");
}

#[test]
fn a_filter_that_selects_nothing_exits_2() {
    let out = run(&["--in-process", "--filter", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no case matches"),
        "{}",
        text(&out.stderr)
    );
}

/// Results stream as cases finish, then a summary; the JSON and JUnit files carry the
/// summary, the tool's version and the profile.
#[test]
fn a_run_streams_cases_then_sums_up_and_writes_reports() {
    let dir = std::env::temp_dir().join(format!("phux-conf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.json");
    let junit = dir.join("r.xml");
    let out = run(&[
        "--in-process",
        "--profile",
        "phux",
        "--filter",
        "handshake/00",
        "--json",
        json.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let shown = text(&out.stdout);
    assert!(shown.contains("profile phux"), "{shown}");
    assert!(shown.contains("✔ handshake/001"), "{shown}");
    assert!(
        shown.contains("SKIPPED: checks rules of phux-rs only"),
        "{shown}"
    );
    assert!(shown.trim_end().ends_with("SKIPPED"), "{shown}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["profile"], "phux");
    assert_eq!(report["version"], env!("CARGO_PKG_VERSION"));
    assert!(report["started"].as_str().unwrap().ends_with('Z'));
    assert_eq!(report["summary"]["failed"], false);
    assert!(report["summary"]["outcomes"]["PASS"].as_u64().unwrap() > 0);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"phux-conformance (in-process, profile phux)\""),
        "{xml}"
    );
    assert!(xml.contains("<skipped message=\"SKIPPED"), "{xml}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that cannot start is not "closed before HELLO_OK" alone: its stderr says why.
#[test]
fn an_exec_server_that_fails_shows_its_stderr() {
    let out = run(&["--exec", "echo 'cannot open the pty: denied' >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("before HELLO_OK"), "{err}");
    assert!(err.contains("cannot open the pty: denied"), "{err}");
}

/// `--fail-fast` stops at the first failing case.
#[test]
fn fail_fast_stops_at_the_first_failure() {
    // A listed deviation that passes (KNOWN_PASSED) fails the run: the first case does.
    let dir = std::env::temp_dir().join(format!("phux-conf-ff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let peer = dir.join("peer.toml");
    std::fs::write(
        &peer,
        "[[known]]\ncase = \"handshake/001\"\nphux = \"proto.md\"\nwhy = \"listed\"\n",
    )
    .unwrap();
    let out = run(&[
        "--in-process",
        "--filter",
        "handshake",
        "--fail-fast",
        "--expectations",
        peer.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let shown = text(&out.stdout);
    assert!(shown.contains("KNOWN_PASSED"), "{shown}");
    assert!(shown.contains("\n1 cases:"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--probe` takes the probe's argument vector word by word: a path with a space in it stays
/// one word, and the server runs exactly that (spawn/001 reads the probe's own argv back).
#[test]
fn probe_takes_an_argument_vector() {
    let dir = std::env::temp_dir().join(format!("phux-conf-argv {}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let probe = dir.join("the probe");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_phux-conformance"), &probe).unwrap();
    let server = crate::launch::example("conformance-test-server", "phux-conformance");
    let out = run(&[
        "--exec",
        &format!("'{}' --stdio --log-level error", server.display()),
        "--profile",
        "phux-rs",
        "--filter",
        "spawn/001",
        "--probe",
        probe.to_str().unwrap(),
        "--probe",
        "probe",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("1 cases: 1 PASS"),
        "{}",
        text(&out.stdout)
    );
    let out = run(&["--in-process", "--probe", "x", "--no-probe"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--probe and --no-probe conflict"
    );
}
