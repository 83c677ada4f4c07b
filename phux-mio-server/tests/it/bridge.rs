//! `phux-mio-server bridge`: a client on the bridge's stdin and stdout talks to a running
//! server as if it had connected itself, and the bridge refuses a listener of another user.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command as Process, Stdio};
use std::time::Instant;

use phux_proto::OperationId;
use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use rustix::fs::OFlags;
use rustix::pipe::{PipeFlags, pipe_with};

use crate::support::client::{Client, DEADLINE, Server, contains, wait_exit};
use crate::support::common;

fn flags(fd: &OwnedFd) -> OFlags {
    rustix::fs::fcntl_getfl(fd.as_fd()).expect("fcntl(F_GETFL)")
}

fn bridge(socket: &std::path::Path) -> Process {
    let mut cmd = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"));
    cmd.arg("bridge").arg("--socket").arg(socket);
    cmd
}

#[test]
fn a_client_on_the_bridge_reaches_the_running_server_and_the_bridge_ends_with_stdin() {
    // [SERVER.BRIDGE.1] [SERVER.BRIDGE.3] [SERVER.BRIDGE.4]
    let server = Server::start();
    let direct = server.connect().hello();

    let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (stdin_before, stdout_before) = (flags(&in_read), flags(&out_write));
    let mut process = bridge(&server.socket)
        .stdin(Stdio::from(in_read.try_clone().expect("dup")))
        .stdout(Stdio::from(out_write.try_clone().expect("dup")))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start bridge");
    let mut c = Client::stdio(File::from(in_write), File::from(out_read));

    // The same server: the same incarnation as a direct connection.
    assert_eq!(c.hello().server_id, direct.server_id);
    let terminal = c.spawn(&["/bin/sh"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(7).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"seq 1 30000; echo the-$((1+1))-end\r".to_vec(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    // About 170 KB of output: several of the bridge's chunks, all of them in order.
    let end = Instant::now() + DEADLINE;
    while !contains(&c.output_of(&terminal), b"the-2-end") {
        assert!(c.recv(end).is_some(), "no end marker through the bridge");
    }
    let output = String::from_utf8_lossy(&c.output_of(&terminal)).into_owned();
    let expected = (1..=30000).fold(String::new(), |mut text, n| {
        use std::fmt::Write;
        let _ = write!(text, "{n}\r\n");
        text
    });
    assert!(
        output.contains(&format!("{expected}the-2-end")),
        "the numbers did not arrive whole and in order ({} bytes)",
        output.len()
    );

    // Stdin ends: the bridge half-closes, the server closes, the bridge exits 0. (The test
    // holds a write end of the bridge's stdout for the flag check, so it cannot wait for EOF.)
    c.close_writer();
    assert_eq!(wait_exit(&mut process, "bridge did not exit"), Some(0));
    assert_eq!(
        flags(&in_read),
        stdin_before,
        "stdin's flags after the bridge"
    );
    assert_eq!(
        flags(&out_write),
        stdout_before,
        "stdout's flags after the bridge"
    );
}

/// A listener that counts what it receives on one connection.
const LISTENER: &str = r#"use IO::Socket::UNIX;
$| = 1;
my $l = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 1)
    or do { print "listen-failed: $!\n"; exit 3 };
print "listening\n";
my $c = $l->accept or do { print "accept-failed: $!\n"; exit 3 };
my ($n, $buf) = (0, '');
while (my $r = sysread($c, $buf, 65536)) { $n += $r }
print "received $n\n";"#;

/// A child that does not outlive a failed assertion (a leaked one would hold the test
/// harness's output open).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the bridge on `socket` with a secret on its stdin; its output.
fn bridge_with_secret(socket: &std::path::Path) -> std::process::Output {
    bridge(socket)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            // The bridge may have refused and gone before this lands.
            let _ = stdin.write_all(b"my secret password\n");
            drop(stdin);
            child.wait_with_output()
        })
        .expect("run the bridge")
}

fn assert_refused(out: &std::process::Output, socket: &std::path::Path, why: &str) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&socket.display().to_string()) && stderr.contains(why),
        "{stderr}"
    );
}

fn chown(path: &std::path::Path, uid: u32) {
    let id = Some(rustix::fs::Uid::from_raw(uid));
    rustix::fs::chown(path, id, Some(rustix::fs::Gid::from_raw(uid))).expect("chown");
}

fn chmod(path: &std::path::Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn the_bridge_sends_nothing_to_a_listener_of_another_user() {
    // [SERVER.BRIDGE.2] [SERVER.BRIDGE.5] Someone else listens where our server would: the bridge says so and
    // copies nothing, not even the HELLO a client already wrote to its stdin.
    let base = common::private_tempdir();
    let dir = base.path().join("run");
    std::fs::create_dir(&dir).expect("mkdir");
    // Where the other user can make its socket; then made ours and private, with the socket
    // file ours too, so that only SO_PEERCRED can tell.
    chown(&dir, common::NOBODY);
    chmod(base.path(), 0o755);
    let socket = dir.join("s.sock");
    let mut listener = match common::perl_as_nobody(LISTENER) {
        Ok(mut cmd) => KillOnDrop(
            cmd.arg(&socket)
                .stdout(Stdio::piped())
                .spawn()
                .expect("start the listener"),
        ),
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let mut lines = std::io::BufReader::new(listener.0.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut lines, &mut line).expect("listener's first line");
    assert_eq!(line, "listening\n");

    // First the directory is ours but open to everyone: refused before dialling.
    chown(&dir, 0);
    chmod(&dir, 0o777);
    assert_refused(&bridge_with_secret(&socket), &socket, "mode 0777");
    // Then everything on disk looks ours: the listener's uid gives it away.
    chmod(&dir, 0o700);
    chown(&socket, 0);
    chmod(&socket, 0o600);
    let out = bridge_with_secret(&socket);
    assert_refused(&out, &socket, &format!("runs as uid {}", common::NOBODY));
    line.clear();
    std::io::BufRead::read_line(&mut lines, &mut line).expect("listener's count");
    assert_eq!(
        line, "received 0\n",
        "the one connection it got carried bytes"
    );
}
