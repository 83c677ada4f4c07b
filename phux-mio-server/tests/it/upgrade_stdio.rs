//! A `--stdio` server upgrades too (SIGUSR2: UPGRADE is for local-socket peers): its one client
//! keeps its pipes and its terminal, and when the client leaves, the upgraded server still
//! restores stdin's and stdout's flags as the first image found them.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};
use rustix::fs::OFlags;
use rustix::pipe::{PipeFlags, pipe_with};

use crate::support::client::{Client, DEADLINE, wait_exit};
use crate::upgrade_chaos::{ping, screen};

fn flags(fd: &OwnedFd) -> OFlags {
    rustix::fs::fcntl_getfl(fd).expect("getfl")
}

#[test]
fn a_stdio_server_upgrades_on_sigusr2_and_keeps_its_client() {
    // [SERVER.UPGRADE.EXEC.1] [SERVER.UPGRADE.EXEC.5] [SERVER.STDIO.2]
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("server.log");
    let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (stdin_before, stdout_before) = (flags(&in_read), flags(&out_write));
    let mut process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args([
            "--stdio",
            "--log-level",
            "info",
            "--shell",
            "/bin/sh",
            "--log-file",
        ])
        .arg(&log)
        .stdin(Stdio::from(in_read.try_clone().expect("dup")))
        .stdout(Stdio::from(out_write.try_clone().expect("dup")))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let mut c = Client::stdio(File::from(in_write), File::from(out_read));
    let hello = c.hello();
    let terminal = c.spawn(&["sh", "-c", "echo stdio-upgrade; exec cat"]);
    let end = Instant::now() + DEADLINE;
    while !screen(&mut c, &terminal).contains("stdio-upgrade") {
        assert!(Instant::now() < end, "the terminal never drew");
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = screen(&mut c, &terminal);

    let pid =
        rustix::process::Pid::from_raw(i32::try_from(process.id()).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::USR2).expect("SIGUSR2");
    let end = Instant::now() + DEADLINE;
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("upgrade: adopted the state")
    {
        assert!(Instant::now() < end, "the upgrade never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    ping(&mut c, 5);
    assert_eq!(screen(&mut c, &terminal), before);
    // UPGRADE itself is for local-socket peers; refused here, the server serves on.
    assert!(matches!(
        c.command(Command::Upgrade { binary: None }),
        CommandResult::Error { .. }
    ));
    assert_eq!(hello.server_id.len(), 16);
    assert!(!c.eof);

    c.close_writer();
    assert_eq!(wait_exit(&mut process, "server did not exit"), Some(0));
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
