//! The server as a command-line tool: `--socket rel.sock` is taken from the current directory
//! and a missing directory is created with its missing parents (as the README says); the log
//! on a stderr that is a file is plain text with an exit status a person reads (`exit=signal
//! 1`, not Rust debug output); a fatal error is printed once.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command as Process, Stdio};

use crate::support::client::{Client, wait_exit};
use crate::support::common::eventually;

/// A server process, killed if a test fails before stopping it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The server binary in `cwd` with `args`, its stderr written to `stderr`; its process and
/// the path its ready line names.
fn start(cwd: &Path, args: &[&str], stderr: &Path) -> (Running, String) {
    let process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(stderr).expect("stderr file"))
        .spawn()
        .expect("start server");
    let mut running = Running(process);
    let mut line = String::new();
    BufReader::new(running.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let path = line
        .trim()
        .strip_prefix("phux-mio-server listening on ")
        .unwrap_or_else(|| panic!("not a ready line: {line:?}"))
        .to_owned();
    (running, path)
}

fn stop(Running(process): &mut Running) {
    let pid =
        rustix::process::Pid::from_raw(i32::try_from(process.id()).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    assert_eq!(wait_exit(process, "the server did not stop"), Some(0));
}

// [SERVER.SOCKET.1] [SERVER.SOCKET.3]
#[test]
fn a_relative_socket_and_missing_parents_are_taken_and_the_log_on_a_file_is_plain() {
    let dir = crate::support::common::private_tempdir();
    let log = dir.path().join("stderr.log");
    let (mut server, path) = start(
        dir.path(),
        &["--socket", "rel.sock", "--log-level", "info"],
        &log,
    );
    assert_eq!(Path::new(&path), dir.path().join("rel.sock"));
    assert!(Path::new(&path).exists());

    // A terminal ended by SIGHUP is logged with its exit in words.
    let mut c = Client::unix(Path::new(&path));
    c.hello();
    c.spawn(&["/bin/sh", "-c", "kill -HUP $$"]);
    assert!(
        eventually(|| std::fs::read_to_string(&log).is_ok_and(|t| t.contains("terminal closed"))),
        "the close was not logged"
    );
    drop(c);
    stop(&mut server);
    let text = String::from_utf8(std::fs::read(&log).expect("log")).expect("utf-8 log");
    assert!(text.contains("listening"), "{text}");
    assert!(!text.contains('\x1b'), "colour in a log file: {text:?}");
    assert!(text.contains("exit=signal 1"), "{text}");
    assert!(!text.contains("Some("), "debug output in the log: {text}");

    let nested = dir.path().join("a/b/c/s.sock");
    let (mut server, path) = start(dir.path(), &["--socket", "a/b/c/s.sock"], &log);
    assert_eq!(Path::new(&path), nested);
    for created in ["a", "a/b", "a/b/c"] {
        let mode = std::fs::metadata(dir.path().join(created))
            .expect("created")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{created}: {mode:o}");
    }
    stop(&mut server);
}

#[test]
fn a_fatal_error_is_printed_once() {
    let dir = crate::support::common::private_tempdir();
    let out = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--socket", "/dev/null/x/s.sock"])
        .stdin(Stdio::null())
        .output()
        .expect("run server");
    drop(dir);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("/dev/null/x")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].starts_with("phux-mio-server: "), "{err}");
}
