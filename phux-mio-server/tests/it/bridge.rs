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
            phux_testkit::skip!("{why}");
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

/// Whether process `pid` holds a descriptor of the pipe `end` belongs to: what shows that a
/// bridge handed its stdio to the server (which never opens a pipe of the test's otherwise).
fn holds_pipe(pid: u32, end: &OwnedFd) -> bool {
    let ino = rustix::fs::fstat(end).expect("fstat").st_ino;
    let want = format!("pipe:[{ino}]");
    std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
        fds.filter_map(Result::ok)
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str()))
    })
}

/// A bridge on two fresh pipes, with `extra` arguments, and a client on the far ends. The
/// test keeps a descriptor of the bridge's stdin's read end and stdout's write end, to see
/// their flags and who holds them.
struct Piped {
    process: KillOnDrop,
    client: Client,
    stdin: OwnedFd,
    stdout: OwnedFd,
    before: (OFlags, OFlags),
}

fn piped_bridge(socket: &std::path::Path, extra: &[&str]) -> Piped {
    let (in_read, in_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC).expect("pipe");
    let before = (flags(&in_read), flags(&out_write));
    assert!(!before.0.contains(OFlags::NONBLOCK) && !before.1.contains(OFlags::NONBLOCK));
    let process = bridge(socket)
        .args(extra)
        .stdin(Stdio::from(in_read.try_clone().expect("dup")))
        .stdout(Stdio::from(out_write.try_clone().expect("dup")))
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start bridge");
    Piped {
        process: KillOnDrop(process),
        client: Client::stdio(File::from(in_write), File::from(out_read)),
        stdin: in_read,
        stdout: out_write,
        before,
    }
}

/// A short program through the connection: it is served, whichever way.
fn echo_through(c: &mut Client, word: &str) {
    let terminal = c.spawn(&["/bin/sh"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let apply = ApplyInput {
        // One operation per word: the ledger outlives an upgrade.
        operation_id: OperationId::from_u128(word.bytes().fold(9, |a, b| a * 31 + u128::from(b)))
            .expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: format!("echo {word}-$((40+2))\r").into_bytes(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    let marker = format!("{word}-42");
    let end = Instant::now() + DEADLINE;
    while !contains(&c.output_of(&terminal), marker.as_bytes()) {
        assert!(c.recv(end).is_some(), "no {marker} through the bridge");
    }
}

#[test]
fn a_bridge_on_pipes_hands_them_to_the_server_which_gives_them_back_as_it_found_them() {
    // [SERVER.BRIDGE.6] [SERVER.BRIDGE.7] [SERVER.BRIDGE.9] [SERVER.BRIDGE.12] [SERVER.BRIDGE.13]
    // [SERVER.BRIDGE.4]
    let server = Server::start();
    let server_pid = server.process.id();
    let mut p = piped_bridge(&server.socket, &[]);
    p.client.hello();
    // The server itself holds both pipes and has made them non-blocking: it reads and
    // writes them, and the bridge copies nothing.
    assert!(
        holds_pipe(server_pid, &p.stdin),
        "the server never got stdin"
    );
    assert!(
        holds_pipe(server_pid, &p.stdout),
        "the server never got stdout"
    );
    assert!(flags(&p.stdin).contains(OFlags::NONBLOCK));
    assert!(flags(&p.stdout).contains(OFlags::NONBLOCK));
    echo_through(&mut p.client, "handed");

    // Stdin ends: the server ends the connection, puts the flags back, lets the pipes go and
    // closes the bridge's socket; the bridge exits 0.
    p.client.close_writer();
    assert_eq!(wait_exit(&mut p.process.0, "bridge did not exit"), Some(0));
    assert_eq!(
        (flags(&p.stdin), flags(&p.stdout)),
        p.before,
        "flags after the handoff"
    );
    assert!(!holds_pipe(server_pid, &p.stdin) && !holds_pipe(server_pid, &p.stdout));
    // The server serves on.
    server.connect().hello();
}

#[test]
fn with_no_handoff_the_bridge_copies_and_the_server_never_holds_its_stdio() {
    // [SERVER.BRIDGE.6] `--no-handoff`: the bridge of [SERVER.BRIDGE.1], stdio untouched.
    let server = Server::start();
    let server_pid = server.process.id();
    let mut p = piped_bridge(&server.socket, &["--no-handoff"]);
    p.client.hello();
    echo_through(&mut p.client, "copied");
    assert!(!holds_pipe(server_pid, &p.stdin) && !holds_pipe(server_pid, &p.stdout));
    assert_eq!((flags(&p.stdin), flags(&p.stdout)), p.before);
    p.client.close_writer();
    assert_eq!(wait_exit(&mut p.process.0, "bridge did not exit"), Some(0));
}

/// Kills the bridge (as killing ssh does) and waits until the server lets its pipes go, with
/// the flags they were handed over with ([SERVER.BRIDGE.11] [SERVER.BRIDGE.12]).
fn kill_and_see_the_pipes_given_back(p: &mut Piped, server_pid: u32, when: &str) {
    p.process.0.kill().expect("kill the bridge");
    p.process.0.wait().expect("reap the bridge");
    assert!(
        common::eventually(|| !holds_pipe(server_pid, &p.stdin)),
        "the server still holds the pipes of a dead bridge ({when})"
    );
    assert_eq!(
        (flags(&p.stdin), flags(&p.stdout)),
        p.before,
        "flags {when}"
    );
}

#[test]
fn a_killed_bridge_cuts_the_connection_it_handed_over() {
    // [SERVER.BRIDGE.11] [SERVER.BRIDGE.12] The bridge dies (killing ssh kills it): the server ends the
    // connection as a cut link, gives the flags back and closes the pipes, so the client
    // sees its end of stream.
    let server = Server::start();
    let server_pid = server.process.id();
    let mut p = piped_bridge(&server.socket, &[]);
    p.client.hello();
    assert!(holds_pipe(server_pid, &p.stdin), "no handoff");
    kill_and_see_the_pipes_given_back(&mut p, server_pid, "after the cut");
    // Nobody else holds the write end now: the client's read ends.
    let Piped {
        mut client, stdout, ..
    } = p;
    drop(stdout);
    assert!(client.wait_eof(), "the client never saw the cut");
    server.connect().hello();
}

#[test]
fn after_a_server_that_died_holding_its_stdio_the_bridge_restores_the_flags_itself() {
    // [SERVER.BRIDGE.13] [SERVER.BRIDGE.4] SIGKILL leaves the server no time to put the flags
    // back; the bridge sees its socket close and does it before exiting 0.
    let mut server = Server::start();
    let server_pid = server.process.id();
    let mut p = piped_bridge(&server.socket, &[]);
    p.client.hello();
    assert!(holds_pipe(server_pid, &p.stdin), "no handoff");
    assert!(flags(&p.stdin).contains(OFlags::NONBLOCK));
    server.process.kill().expect("kill the server");
    server.process.wait().expect("reap the server");
    assert_eq!(wait_exit(&mut p.process.0, "bridge did not exit"), Some(0));
    assert_eq!(
        (flags(&p.stdin), flags(&p.stdout)),
        p.before,
        "flags after the bridge"
    );
}

/// The phux reference server (`PHUX_REF_BIN`, or the shared copy beside the repository) on a
/// socket in `dir`, with its own HOME and XDG directories; `Err` says why there is none.
fn reference_server(dir: &std::path::Path) -> Result<(KillOnDrop, std::path::PathBuf), String> {
    let bin = phux_testkit::reference_bin()?;
    let run = dir.join("run");
    std::fs::create_dir(&run).expect("mkdir");
    chmod(&run, 0o700);
    let socket = run.join("ref.sock");
    let mut cmd = Process::new(bin);
    cmd.arg("server").arg("--socket").arg(&socket);
    for (var, sub) in [
        ("HOME", ""),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
    ] {
        cmd.env(var, dir.join(sub));
    }
    let process = cmd
        .env("XDG_RUNTIME_DIR", &run)
        .env("SHELL", "/bin/sh")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the reference server");
    let process = KillOnDrop(process);
    assert!(
        common::eventually(|| std::os::unix::net::UnixStream::connect(&socket).is_ok()),
        "the reference server never listened"
    );
    Ok((process, socket))
}

#[test]
fn against_a_server_that_declines_the_handoff_the_bridge_copies() {
    // [SERVER.BRIDGE.6] [SERVER.BRIDGE.8] The phux reference knows no handoff: it answers the offer as the
    // framing violation it is, and the bridge reconnects and copies.
    let dir = common::private_tempdir();
    let (reference, socket) = match reference_server(dir.path()) {
        Ok(found) => found,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    let mut p = piped_bridge(&socket, &[]);
    let ok = p.client.hello();
    assert_eq!(ok.server_id.len(), 16);
    assert!(!holds_pipe(reference.0.id(), &p.stdin));
    assert_eq!((flags(&p.stdin), flags(&p.stdout)), p.before);
    p.client.close_writer();
    assert_eq!(wait_exit(&mut p.process.0, "bridge did not exit"), Some(0));
}

/// A peer that offers a handoff with a pipe of its own (the server may have refused it and
/// closed first: the refusal comes at accept), then reports the first byte of the
/// answer, how many bytes came before the server closed, and whether anyone else still holds
/// the pipe's read end once it closed its own.
const FOREIGN_OFFER: &str = r#"import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
r, w = os.pipe()
try:
    socket.send_fds(s, [b"\0\0\0\0phux-mio-server handoff 1"], [r, w])
except (BrokenPipeError, ConnectionResetError):
    pass  # refused and closed before the offer went out: its answer is still there to read
os.close(r)
data = b""
while True:
    try:
        chunk = s.recv(4096)
    except ConnectionResetError:
        break  # closed with the offer unread: Linux reports that as a reset
    if not chunk:
        break
    data += chunk
print("first", data[:1].hex(), "bytes", len(data))
# The end of stream may come a moment before the server's last reference goes: poll.
deadline = time.monotonic() + 30
state = "pipe-held"
while time.monotonic() < deadline:
    try:
        os.write(w, b"x")
    except BrokenPipeError:
        state = "pipe-closed"
        break
    time.sleep(0.01)
print(state)
"#;

#[test]
fn a_peer_of_another_user_cannot_hand_over_descriptors() {
    // [SERVER.BRIDGE.9] [SERVER.BRIDGE.10] [SERVER.PEER.1] The uid check holds for a handoff as for any
    // connection: a peer running as `nobody` that offers descriptors is refused with a frame,
    // never the acknowledgement, and the server keeps nothing it was sent.
    const PYTHON: &str = "/usr/bin/python3";
    if !rustix::process::geteuid().is_root() {
        phux_testkit::skip!("needs root to run a peer as nobody");
        return;
    }
    phux_testkit::require_programs!("setpriv", PYTHON);
    let server = Server::start();
    // Opened on purpose, so that only the peer-uid check stands in the way.
    let dir = server.socket.parent().expect("socket directory");
    chmod(dir, 0o711);
    chmod(&server.socket, 0o666);
    let out = Process::new("setpriv")
        .args([
            &format!("--reuid={}", common::NOBODY),
            &format!("--regid={}", common::NOBODY),
            "--clear-groups",
            PYTHON,
            "-c",
            FOREIGN_OFFER,
        ])
        .arg(&server.socket)
        .stdin(Stdio::null())
        .output()
        .expect("run the peer as nobody");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A frame (the refusal's ERROR) starts with 00: not AC, and not silence.
    assert!(said.starts_with("first 00 bytes "), "{said}");
    assert!(said.contains("pipe-closed"), "{said}");
    server.connect().hello();
}

#[test]
fn a_handed_over_connection_crosses_an_upgrade() {
    // [SERVER.UPGRADE.EXEC.5] [SERVER.BRIDGE.11] [SERVER.BRIDGE.12] The pipes a bridge handed
    // over, its socket and the flags to give back all cross the exec: the same connection is
    // served after it, and a bridge killed after it still cuts the connection and gets its
    // flags back.
    let server = Server::start();
    let server_pid = server.process.id();
    let mut p = piped_bridge(&server.socket, &[]);
    let hello = p.client.hello();
    assert!(holds_pipe(server_pid, &p.stdin), "no handoff");
    echo_through(&mut p.client, "before");
    assert_eq!(
        p.client.command(Command::Upgrade { binary: None }),
        CommandResult::Ok
    );
    assert!(holds_pipe(server_pid, &p.stdin) && holds_pipe(server_pid, &p.stdout));
    assert!(flags(&p.stdin).contains(OFlags::NONBLOCK));
    echo_through(&mut p.client, "after");
    assert_eq!(server.connect().hello().server_id, hello.server_id);
    kill_and_see_the_pipes_given_back(&mut p, server_pid, "after an upgrade and a cut");
}
