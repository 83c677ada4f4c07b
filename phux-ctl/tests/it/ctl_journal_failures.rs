//! phuxctl's verdict is the server's: input the server wrote is reported delivered even when
//! the outbox journal cannot be brought up to date afterwards (that is said apart, with exit
//! status 6), and input the journal cannot record before its send is not sent, and phuxctl
//! says for each operation whether it stays queued or is gone. A FIFO where the compaction
//! writes its temporary file, and a file-size limit standing in for a full disk, make the
//! journal fail.

use std::process::{Command, Output};

use crate::support::{Ctl, PHUXCTL_TEST_HOOK, Server, wait_until};

const COUNTER: &str = "n=0; while read l; do n=$((n+1)); echo \"got $n: $l\"; done";

/// `phuxctl args...` under a file-size limit of `blocks` × 512 bytes, with SIGXFSZ ignored so
/// that a write past it fails (EFBIG), as on a full disk.
fn limited(ctl: &Ctl, blocks: u32, args: &[&str]) -> Output {
    let direct = ctl.command(args);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(direct.get_program())
        .args(direct.get_args());
    for (k, v) in direct.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.stdin(std::process::Stdio::null())
        .output()
        .expect("run phuxctl")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn delivered_input_is_reported_delivered_when_the_compaction_after_it_fails() {
    // [CLIENT.VERDICT.1]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    // An operation to another terminal left pending (the run ends after its send): it keeps
    // the journal non-empty, so the compaction writes a temporary file.
    let other = ctl.spawn(&["/bin/sh", "-c", COUNTER]);
    let interrupted = ctl
        .command(&["send", &other, "earlier", "--key", "Enter"])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("run phuxctl");
    assert_eq!(interrupted.status.code(), Some(86), "{interrupted:?}");

    let received = dir.path().join("received");
    let size = 200 * 1024;
    let script = format!(
        "stty raw -echo; echo ready; head -c {size} > '{}'",
        received.display()
    );
    let id = ctl.spawn(&["/bin/sh", "-c", &script]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));
    // Frozen, it reads nothing: the paste cannot be delivered until it runs again.
    ctl.ok(&["signal", "freeze", &id]);
    let source = dir.path().join("paste");
    std::fs::write(&source, vec![b'p'; size]).expect("write");
    let paste = ctl
        .command(&["paste", &id, "--file", source.to_str().expect("utf-8")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start phuxctl");
    // Its records are in the journal (after its own compaction at start): now the
    // compaction that follows the delivery will find a FIFO where it writes.
    let journal = || ctl.journals().into_iter().next();
    assert!(
        wait_until(|| journal().is_some_and(|(_, len)| len > 150_000)),
        "the paste was never journaled: {:?}",
        ctl.journals()
    );
    let (path, _) = journal().expect("journal");
    let fifo = format!("{}.tmp", path.display());
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    ctl.ok(&["signal", "resume", &id]);
    let out = paste.wait_with_output().expect("phuxctl");
    let stderr = text(&out.stderr);
    // Every part, and the paste as a whole, delivered (a large paste goes in parts).
    let stdout = text(&out.stdout);
    assert!(
        stdout.lines().all(|l| l.ends_with("delivered")),
        "{stdout}{stderr}"
    );
    assert_eq!(stdout.lines().last(), Some("delivered"), "{stdout}{stderr}");
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("could not be compacted") && stderr.contains(&fifo),
        "{stderr}"
    );
    assert!(wait_until(
        || std::fs::metadata(&received).is_ok_and(|m| m.len() as usize == size)
    ));
    // The journal still describes the outbox: the earlier operation waits, the paste does not.
    std::fs::remove_file(&fifo).expect("remove the FIFO");
    let list = ctl.ok(&["outbox", "list"]);
    assert_eq!(
        list.lines().filter(|l| l.contains("0x")).count(),
        1,
        "{list}"
    );
    assert!(list.contains(&other), "{list}");
}

#[test]
fn input_the_journal_cannot_record_is_not_sent_and_not_left_queued() {
    // [CLIENT.JOURNAL.11] [CLIENT.OUTBOX.1]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", COUNTER]);
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("paste");
    let mut data = vec![b'x'; 4000];
    data.push(b'\n');
    std::fs::write(&source, &data).expect("write");
    // 1,024 bytes: the paste's record does not fit.
    let out = limited(
        &ctl,
        2,
        &["paste", &id, "--file", source.to_str().expect("utf-8")],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(stderr.contains("nothing more was sent"), "{stderr}");
    assert!(stderr.contains("not sent, and not queued"), "{stderr}");
    // Nothing of it is left to be read as a record, or sent by a later run.
    assert!(
        ctl.journals().iter().all(|(_, len)| *len == 0),
        "{:?}",
        ctl.journals()
    );
    assert_eq!(ctl.ok(&["outbox", "list"]).trim(), "nothing pending");
    ctl.ok(&["send", &id, "after", "--key", "Enter"]);
    let screen = ctl.wait_screen(&id, "got 1", |s| s.contains("got 1: after"));
    assert!(!screen.contains("xxxx"), "{screen}");
}

#[test]
fn an_earlier_operation_the_journal_cannot_update_is_said_to_stay_queued() {
    // [CLIENT.JOURNAL.11] The earlier operation was recorded by the run that sent it; the run
    // that fails to record more says it stays queued, and it does: a later run settles it,
    // and the child reads it once.
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["/bin/sh", "-c", COUNTER]);
    let interrupted = ctl
        .command(&["send", &id, "earlier", "--key", "Enter"])
        .env(PHUXCTL_TEST_HOOK, "1")
        .output()
        .expect("run phuxctl");
    assert_eq!(interrupted.status.code(), Some(86), "{interrupted:?}");
    let before = ctl.journals()[0].1;
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("paste");
    std::fs::write(&source, vec![b'y'; 4000]).expect("write");
    // Room for the journal as it is and a little more, not for the paste.
    let blocks = u32::try_from(before / 512 + 2).expect("small");
    let out = limited(
        &ctl,
        blocks,
        &["paste", &id, "--file", source.to_str().expect("utf-8")],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not sent, and not queued"), "{stderr}");
    let list = ctl.ok(&["outbox", "list"]);
    if stderr.contains("stays queued") {
        assert!(
            list.contains(&id) && !list.contains("nothing pending"),
            "{list}"
        );
    } else {
        // Answered before the paste was refused: its verdict is in the message instead.
        assert!(stderr.contains("delivered"), "{stderr}");
    }
    ctl.ok(&["outbox", "resume"]);
    assert_eq!(ctl.ok(&["outbox", "list"]).trim(), "nothing pending");
    let screen = ctl.wait_screen(&id, "got 1", |s| s.contains("got 1: earlier"));
    assert!(!screen.contains("got 2"), "written twice: {screen}");
    assert!(!screen.contains("yyyy"), "{screen}");
}
