//! Input the user can trust, end to end with the real server on real PTYs:
//!
//! - an interrupted paste whose server restarts is never written into the new server's
//!   program that got the same terminal id; read-only commands resume nothing; the user is
//!   told what was not sent (spec/client.md CLIENT.BIND.N, CLIENT.RESUME.N);
//! - phuxctl sends nothing into a squatted socket directory or to a listener of another uid
//!   (CLIENT.PEER.N);
//! - read-only commands need no state directory and create none (CLIENT.JOURNAL.10), and
//!   `--socket relative.sock` works.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::support::{Ctl, PHUXCTL_TEST_HOOK, ServerAt, count, wait_until};

/// 600 KB in lines of 100 bytes, each tagged so any of it is recognisable downstream.
fn paste_content() -> Vec<u8> {
    let line = format!("{}\n", "PASTE-DATA-".repeat(9));
    line.as_bytes().repeat(600_000 / line.len())
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

// [CLIENT.BIND.3] [CLIENT.RESUME.1] [CLIENT.RESUME.2] [CLIENT.JOURNAL.10]
#[test]
fn an_interrupted_paste_never_reaches_the_next_servers_program_with_the_same_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let received = dir.path().join("received.bin");
    let source = dir.path().join("paste.txt");
    std::fs::write(&source, paste_content()).expect("write paste");
    let first = ServerAt::start(&socket);
    let ctl = Ctl::at(&socket);

    // The paste is interrupted after its first part went out (the process dies there).
    let id = ctl.spawn(&["cat"]);
    let out = ctl
        .command(&["paste", &id, "--file", source.to_str().expect("utf-8")])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("phuxctl paste");
    assert_eq!(out.status.code(), Some(86), "{out:?}");
    drop(first);

    // A new server; someone starts an unrelated program, which gets the same id. It writes
    // every byte it reads to a file (raw mode: nothing held back by the line discipline).
    let _second = ServerAt::start(&socket);
    let script = format!(
        "stty raw -echo; echo ready; exec cat > '{}'",
        received.display()
    );
    assert_eq!(
        ctl.spawn(&["/bin/sh", "-c", &script]),
        id,
        "the id is reused"
    );
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));

    // Read-only commands resume nothing, and say that operations wait.
    let list = ctl.run(&["list"]);
    assert!(list.status.success(), "{list:?}");
    let stderr = String::from_utf8_lossy(&list.stderr);
    assert!(
        stderr.contains("operation(s) from earlier runs wait"),
        "{stderr}"
    );
    let pending = ctl.ok(&["outbox", "list"]);
    assert_eq!(count(&pending, &id), 10, "ten parts pending:\n{pending}");
    assert_eq!(count(&pending, "server gone"), 10, "{pending}");
    assert_eq!(count(&pending, "never sent"), 9, "{pending}");

    // A send to that terminal settles the old parts first: reported, not written.
    let out = ctl.run(&["send", &id, "marker", "--key", "Enter"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        count(&stderr, "not sent: the server it was addressed to is gone"),
        9,
        "{stderr}"
    );
    assert_eq!(
        count(&stderr, "unknown: the server restarted"),
        1,
        "{stderr}"
    );
    // The program got the new input and not one byte of the old paste.
    assert!(
        wait_until(|| std::fs::read(&received).is_ok_and(|b| b.windows(6).any(|w| w == b"marker"))),
        "the marker never arrived"
    );
    let got = std::fs::read(&received).expect("read");
    assert_eq!(count(&String::from_utf8_lossy(&got), "PASTE"), 0);
    assert_eq!(got, b"marker\r", "exactly the new input");

    // Reported once: nothing is left, and nothing more is said.
    assert_eq!(ctl.ok(&["outbox", "list"]), "nothing pending\n");
    let again = ctl.run(&["send", &id, "x"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("earlier operation"));
}

// [CLIENT.RESUME.1] `outbox drop` gives pending input up without sending it; `outbox resume`
// then has nothing to do.
#[test]
fn outbox_drop_gives_up_pending_input_unsent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let server = ServerAt::start(&socket);
    let ctl = Ctl::at(&socket);
    let id = ctl.spawn(&["cat"]);
    let source = dir.path().join("paste.txt");
    std::fs::write(&source, paste_content()).expect("write");
    let out = ctl
        .command(&["paste", &id, "--file", source.to_str().expect("utf-8")])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("phuxctl paste");
    assert_eq!(out.status.code(), Some(86), "{out:?}");
    let out = ctl.run(&["outbox", "drop", "--terminal", &id]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        count(&stdout, "not sent: dropped from the outbox"),
        9,
        "{stdout}"
    );
    assert_eq!(count(&stdout, "unknown: dropped"), 1, "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(3),
        "part 1 may have been written: {out:?}"
    );
    assert_eq!(ctl.ok(&["outbox", "resume"]), "nothing pending\n");
    drop(server);
}

/// A Unix listener at `path` that records every byte it receives to `out`, run by python3
/// as `uid` (`None`: as us). Killed when dropped.
struct Listener(Child);

impl Listener {
    fn start(path: &Path, out: &Path, uid: Option<u32>) -> Self {
        const SCRIPT: &str = r#"
import os, socket, sys
path, out, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
if uid >= 0:
    os.setgid(uid); os.setuid(uid)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(10)
    data = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    with open(out, "ab") as f:
        f.write(data)
"#;
        let mut child = Command::new("python3")
            .args(["-c", SCRIPT])
            .arg(path)
            .arg(out)
            .arg(uid.map_or(-1, i64::from).to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("ready line");
        assert_eq!(line.trim(), "ready", "listener did not start");
        Self(child)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `phuxctl --name squat ARGS` with `XDG_RUNTIME_DIR` and `XDG_STATE_HOME` of the test's.
fn ctl_default(runtime: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .args(["--name", "squat"])
        .args(args)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("XDG_STATE_HOME", state)
        .env_remove(PHUXCTL_TEST_HOOK)
        .stdin(Stdio::null())
        .output()
        .expect("phuxctl")
}

fn assert_refused(out: &std::process::Output, what: &str, received: &Path) {
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing to"), "{stderr}");
    assert!(stderr.contains(what), "{stderr}");
    // Give a connection that slipped through time to deliver, then require nothing.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(file_len(received), 0, "bytes reached the listener");
}

// [CLIENT.PEER.1] [CLIENT.PEER.3]
#[test]
fn nothing_is_sent_into_a_squatted_directory_or_to_another_users_listener() {
    let base = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let runtime = base.path().join("run");
    let state = base.path().join("state");
    let squat = runtime.join("phux-mio");
    std::fs::create_dir_all(&squat).expect("mkdir");
    // The drop box the listener writes what it got into, writable by whoever it runs as.
    let drop_box = base.path().join("box");
    std::fs::create_dir(&drop_box).expect("mkdir");
    std::fs::set_permissions(&drop_box, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let received = drop_box.join("received");
    let socket = squat.join("squat.sock");
    let secret = ["send", "1", "my secret password", "--key", "Enter"];

    // A directory open to others (as one someone else prepared would be): refused before
    // dialling, naming the directory and what to do.
    std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    {
        let _listener = Listener::start(&socket, &received, None);
        let out = ctl_default(&runtime, &state, &secret);
        assert_refused(&out, "chmod 700", &received);
        let out = ctl_default(&runtime, &state, &["list"]);
        assert_refused(&out, &squat.display().to_string(), &received);
    }
    std::fs::remove_file(&socket).expect("rm socket");

    if rustix::process::geteuid().as_raw() != 0 {
        phux_testkit::skip!(
            "the other-uid parts need root to create a directory and a listener of another \
             user (the uid rule itself is unit-tested in verify.rs)"
        );
        return;
    }
    let nobody = 65534;
    // A directory of another user, private to them: refused by owner.
    std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    rustix::fs::chown(
        &squat,
        Some(rustix::fs::Uid::from_raw(nobody)),
        Some(rustix::fs::Gid::from_raw(nobody)),
    )
    .expect("chown");
    {
        let _listener = Listener::start(&socket, &received, Some(nobody));
        let out = ctl_default(&runtime, &state, &secret);
        assert_refused(&out, &format!("owned by uid {nobody}"), &received);
    }
    // Our own private directory, a socket file of ours, but the process listening there is
    // another user's: refused by SO_PEERCRED before HELLO.
    std::fs::remove_file(&socket).expect("rm socket");
    rustix::fs::chown(
        &squat,
        Some(rustix::fs::Uid::from_raw(nobody)),
        Some(rustix::fs::Gid::from_raw(nobody)),
    )
    .expect("chown");
    std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let listener = Listener::start(&socket, &received, Some(nobody));
    rustix::fs::chown(
        &squat,
        Some(rustix::fs::Uid::from_raw(0)),
        Some(rustix::fs::Gid::from_raw(0)),
    )
    .expect("chown");
    std::fs::set_permissions(&squat, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    rustix::fs::chown(
        &socket,
        Some(rustix::fs::Uid::from_raw(0)),
        Some(rustix::fs::Gid::from_raw(0)),
    )
    .expect("chown");
    let out = ctl_default(&runtime, &state, &secret);
    assert_refused(&out, &format!("runs as uid {nobody}"), &received);
    drop(listener);
}

// [CLIENT.JOURNAL.10] Read-only commands need no state directory and create none; a relative
// --socket names the socket in the working directory.
#[test]
fn read_only_commands_create_no_state_and_a_relative_socket_works() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let _server = ServerAt::start(&socket);
    let state = dir.path().join("state");
    let run = |args: &[&str], home: Option<&Path>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_phuxctl"));
        cmd.args(["--socket", "s.sock"])
            .args(args)
            .current_dir(dir.path())
            .env_remove("XDG_STATE_HOME")
            .env_remove(PHUXCTL_TEST_HOOK)
            .stdin(Stdio::null());
        match home {
            Some(h) => cmd.env("XDG_STATE_HOME", h),
            None => cmd.env_remove("HOME"),
        };
        cmd.output().expect("phuxctl")
    };
    let out = run(&["spawn", "--", "cat"], Some(&state));
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(!state.exists(), "spawn created the state directory");
    for args in [&["list"][..], &["screen", &id], &["outbox", "list"]] {
        let out = run(args, Some(&state));
        assert!(out.status.success(), "{args:?}: {out:?}");
        // Without any state directory at all (no HOME, no XDG_STATE_HOME), too.
        let out = run(args, None);
        assert!(out.status.success(), "{args:?} without HOME: {out:?}");
    }
    assert!(
        !state.exists(),
        "a read-only command created the state directory"
    );
    // Sending creates it, private.
    let out = run(&["send", &id, "hi"], Some(&state));
    assert!(out.status.success(), "{out:?}");
    let meta = std::fs::metadata(state.join("phux-mio/outbox")).expect("outbox dir");
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
}

// [CLIENT.JOURNAL.6] [CLIENT.JOURNAL.7] [CLIENT.JOURNAL.8] A corrupted middle record: read-only
// commands work and say so; a send refuses once, naming the file and the offset, moves the
// bad bytes aside and keeps every record after them. A journal that is a symlink to
// /dev/zero is refused at once, never read forever.
#[test]
fn a_damaged_journal_loses_no_record_silently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let _server = ServerAt::start(&socket);
    let ctl = Ctl::at(&socket);
    let id = ctl.spawn(&["cat"]);
    let source = dir.path().join("paste.txt");
    std::fs::write(&source, paste_content()).expect("write");
    let out = ctl
        .command(&["paste", &id, "--file", source.to_str().expect("utf-8")])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("phuxctl paste");
    assert_eq!(out.status.code(), Some(86), "{out:?}");
    let journals = ctl.journals();
    let [(journal, _)] = &journals[..] else {
        panic!("one journal: {journals:?}");
    };
    // The second record's length now claims more than the file holds.
    let mut bytes = std::fs::read(journal).expect("read");
    let first_len = u32::from_be_bytes(bytes[..4].try_into().expect("4")) as usize + 8;
    bytes[first_len..first_len + 4].copy_from_slice(&0x0001_fff0u32.to_be_bytes());
    std::fs::write(journal, &bytes).expect("write");
    let offset = format!("damaged at byte {first_len}");

    // Read-only: works, warns, changes nothing.
    let out = ctl.run(&["list"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&offset), "{stderr}");
    assert!(stderr.contains(&journal.display().to_string()), "{stderr}");
    let listed = ctl.ok(&["outbox", "list"]);
    assert_eq!(
        count(&listed, &id),
        9,
        "every record after the damage:\n{listed}"
    );
    assert_eq!(std::fs::read(journal).expect("read"), bytes);

    // A send: an error naming file and offset, nothing sent, the bytes moved aside.
    let out = ctl.run(&["send", &id, "hello"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&offset) && stderr.contains("moved to"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was sent"), "{stderr}");
    let moved = std::path::PathBuf::from(format!("{}.damaged-{first_len}", journal.display()));
    assert!(
        file_len(&moved) > 0,
        "quarantined bytes at {}",
        moved.display()
    );
    let listed = ctl.ok(&["outbox", "list"]);
    assert_eq!(count(&listed, &id), 9, "{listed}");
    let out = ctl.run(&["list"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("damaged"),
        "{out:?}"
    );

    // A symlink to /dev/zero: refused by name at once, read-only commands still work.
    std::fs::remove_file(journal).expect("rm");
    std::os::unix::fs::symlink("/dev/zero", journal).expect("symlink");
    let out = ctl.run(&["list"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{out:?}"
    );
    let out = ctl.run(&["send", &id, "hello"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{out:?}"
    );
}

// [CLIENT.PEER.2]
#[test]
fn a_too_open_socket_in_a_private_directory_is_blamed_itself() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let socket = dir.path().join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o660)).expect("chmod");
    let state = tempfile::tempdir().expect("state");
    let out = Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .arg("--socket")
        .arg(&socket)
        .arg("list")
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null())
        .output()
        .expect("phuxctl");
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("chmod 600 {}", socket.display())),
        "{stderr}"
    );
    assert!(
        !stderr.contains("chmod 700"),
        "the directory is blamed: {stderr}"
    );
}
