//! `--stdio` shares its stdin and stdout file descriptions with whoever started it: it puts
//! back the flags it changed when it exits, and says plainly when stdin cannot be served.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use rustix::pipe::{PipeFlags, pipe_with};

use crate::support::client::{Client, DEADLINE};

fn flags(fd: &OwnedFd) -> OFlags {
    rustix::fs::fcntl_getfl(fd.as_fd()).expect("fcntl(F_GETFL)")
}

fn wait_exit(process: &mut Child) -> Option<i32> {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = process.try_wait().expect("try_wait") {
            return status.code();
        }
        assert!(Instant::now() < end, "server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn stdio_restores_the_flags_of_stdin_and_stdout_on_exit() {
    // [SERVER.STDIO.2] The test keeps a descriptor of each pipe end the server gets, so it sees
    // the flags of the very file descriptions the server changes.
    let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (stdin_before, stdout_before) = (flags(&in_read), flags(&out_write));
    assert!(!stdin_before.contains(OFlags::NONBLOCK));
    assert!(!stdout_before.contains(OFlags::NONBLOCK));

    let mut process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--stdio", "--log-level", "warn"])
        .stdin(Stdio::from(in_read.try_clone().expect("dup")))
        .stdout(Stdio::from(out_write.try_clone().expect("dup")))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let mut c = Client::stdio(File::from(in_write), File::from(out_read));
    c.hello();
    // Serving: the server made both non-blocking (this is what the test would miss).
    assert!(flags(&in_read).contains(OFlags::NONBLOCK));
    assert!(flags(&out_write).contains(OFlags::NONBLOCK));

    c.close_writer();
    assert_eq!(wait_exit(&mut process), Some(0));
    assert_eq!(
        flags(&in_read),
        stdin_before,
        "stdin's flags after the server"
    );
    assert_eq!(
        flags(&out_write),
        stdout_before,
        "stdout's flags after the server"
    );
}

#[test]
fn stdio_with_dev_null_on_stdin_exits_non_zero_naming_the_cause() {
    // [SERVER.STDIO.3] epoll refuses /dev/null (EPERM): say so, not "Operation not permitted".
    let mut process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--stdio", "--log-level", "error"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start server");
    let code = wait_exit(&mut process);
    assert!(matches!(code, Some(c) if c != 0), "exit code {code:?}");
    let mut stderr = String::new();
    process
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(
        stderr.contains("stdin is a character device") && stderr.contains("/dev/null"),
        "stderr: {stderr}"
    );
    let mut stdout = Vec::new();
    process
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut stdout)
        .expect("read stdout");
    assert!(
        stdout.is_empty(),
        "stdout carries only the protocol: {stdout:?}"
    );
}
