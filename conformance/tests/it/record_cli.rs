//! `phux-conformance record` as the README runs it: its socket is made as a phux server makes
//! its own (mode 0600, so phuxctl takes it), and a recording stopped by SIGTERM writes the
//! draft so far and removes its socket.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: a loaded 2-core machine can take seconds to schedule anything.
const DEADLINE: Duration = Duration::from_secs(30);

fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + DEADLINE;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_socket_is_0600_and_sigterm_writes_the_draft_and_removes_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, out, listen) = (
        dir.path().join("server.sock"),
        dir.path().join("draft.phuxt"),
        dir.path().join("rec.sock"),
    );
    // The server side needs only to accept: the recorder dials it per client.
    let _server = std::os::unix::net::UnixListener::bind(&server).expect("bind");
    let mut recorder = Command::new(env!("CARGO_BIN_EXE_phux-conformance"))
        .arg("record")
        .arg("--socket")
        .arg(&server)
        .arg("--out")
        .arg(&out)
        .arg("--listen")
        .arg(&listen)
        .arg("--clients")
        .arg("3")
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("record");
    assert!(
        eventually(|| std::fs::symlink_metadata(&listen).is_ok_and(|m| m.file_type().is_socket())),
        "the recorder never listened"
    );
    let mode = std::fs::metadata(&listen)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "socket mode {mode:o}");
    // A client connects (and goes), then the recording is stopped early.
    drop(UnixStream::connect(&listen).expect("connect"));
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(recorder.id()).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let end = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = recorder.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > end {
            let _ = recorder.kill();
            panic!("the recorder did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
    let draft = std::fs::read_to_string(&out).expect("the draft was written");
    assert!(draft.contains("id: draft/001"), "{draft}");
    assert!(!listen.exists(), "the socket was left behind");
    // Nothing else was left in the directory either (the staging directory).
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read_dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
