//! A paste split into several operations is all-or-nothing in order, at the far end: what the
//! program reads after a part fails, in this run and after `kill -9` and `outbox resume`.

use std::path::Path;
use std::process::Stdio;

use phux_core::client::journal::{JournalRecord, decode_journal};
use phux_core::client::outbox::max_paste_len;
use phux_proto::TerminalId;

use crate::support::{Ctl, Server, wait_until};

/// The number in `local:N`.
fn terminal(id: &str) -> TerminalId {
    TerminalId::Local(
        id.trim_start_matches("local:")
            .parse()
            .expect("a local terminal id"),
    )
}

/// Waits until `path` ends with `tail`; what it holds then.
fn wait_for_tail(path: &Path, tail: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    assert!(
        wait_until(|| {
            got = std::fs::read(path).unwrap_or_default();
            got.ends_with(tail)
        }),
        "{} never ended with {:?}; it holds {} bytes",
        path.display(),
        String::from_utf8_lossy(tail),
        got.len()
    );
    got
}

// [CLIENT.SUBMIT.2] [CLIENT.SUBMIT.3] [INPUT.CANON.4]
#[test]
fn a_refused_first_part_writes_nothing_after_it() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let received = dir.path().join("received");
    // A cooked-mode `cat`: the line discipline holds at most 4,095 bytes of one line.
    let script = format!("echo ready; exec cat > '{}'", received.display());
    let id = ctl.spawn(&["/bin/sh", "-c", &script]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));

    // 64 KiB on one line, then a short tail: two operations. The first is refused (the line
    // is too long for the line discipline), so the tail must never be written.
    let mut data = vec![b'a'; 64 * 1024];
    data.extend_from_slice(b"TAIL\n");
    assert!(data.len() > max_paste_len(&terminal(&id)));
    let source = dir.path().join("paste");
    std::fs::write(&source, &data).expect("write the paste");
    let file = source.to_str().expect("utf-8 path");

    let out = ctl.run(&["paste", &id, "--file", file]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("part 1 of 2: refused: CANONICAL_LIMIT_EXCEEDED"),
        "{stdout}"
    );
    assert_eq!(
        lines[1],
        "part 2 of 2: not sent: part 1 of the same input was not delivered, so nothing after \
         it is sent",
        "{stdout}"
    );

    // The same again, as JSON: every part, with its operation and verdict.
    let out = ctl.run(&["paste", &id, "--json", "--file", file]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(doc["verdict"], "refused", "{doc}");
    assert_eq!(doc["exit"], 4, "{doc}");
    assert_eq!(doc["parts"][0]["code"], "CANONICAL_LIMIT_EXCEEDED", "{doc}");
    assert_eq!(doc["parts"][1]["verdict"], "not_sent", "{doc}");
    assert_eq!(doc["parts"][1]["after_part"], 1, "{doc}");
    assert!(
        doc["parts"][1]["operation"]
            .as_str()
            .is_some_and(|op| op.starts_with("0x")),
        "{doc}"
    );

    // What cat read: only the line sent after, nothing of either paste.
    ctl.ok(&["send", &id, "after", "--key", "Enter"]);
    let got = wait_for_tail(&received, b"after\n");
    assert_eq!(got, b"after\n", "{}", String::from_utf8_lossy(&got));
    assert!(ctl.journals().iter().all(|(_, len)| *len == 0));
}

/// The `Sent` records in `ctl`'s journal.
fn sent_ops(ctl: &Ctl) -> usize {
    ctl.journals()
        .iter()
        .map(|(path, _)| {
            decode_journal(&std::fs::read(path).unwrap_or_default())
                .records
                .iter()
                .filter(|r| matches!(r, JournalRecord::Sent { .. }))
                .count()
        })
        .sum()
}

// [CLIENT.SUBMIT.2] [CLIENT.SUBMIT.3] [CLIENT.JOURNAL.3] [CLIENT.RETRY.2] [INPUT.LANE.2]
#[test]
fn after_kill_9_outbox_resume_sends_nothing_after_an_unknown_part() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let received = dir.path().join("received");
    let go = dir.path().join("go");
    // Raw mode, and nothing read until `go` exists: the first part fills the terminal's input
    // queue and its write stalls, so the server answers it INPUT_DELIVERY_UNKNOWN after 5 s.
    let script = format!(
        "stty raw -echo; echo ready; while [ ! -e '{}' ]; do sleep 0.1; done; exec cat > '{}'",
        go.display(),
        received.display()
    );
    let id = ctl.spawn(&["/bin/sh", "-c", &script]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));

    // Three parts: a's, b's, c's.
    let max = max_paste_len(&terminal(&id));
    let mut data = vec![b'a'; max];
    data.extend(vec![b'b'; max]);
    data.extend(vec![b'c'; 1000]);
    let source = dir.path().join("paste");
    std::fs::write(&source, &data).expect("write the paste");

    let mut paste = ctl
        .command(&["paste", &id, "--file", source.to_str().expect("utf-8 path")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("phuxctl paste");
    // The first part is journaled as sent (and so may be on its way): kill -9 now, before
    // the server's answer comes.
    assert!(wait_until(|| sent_ops(&ctl) > 0), "part 1 was never sent");
    paste.kill().expect("kill -9 phuxctl");
    let _ = paste.wait();
    assert_eq!(sent_ops(&ctl), 1, "only the first part left");

    // The next run resends part 1 under its id; the server's answer for it (cached, or once
    // the 5 s bound passes) is INPUT_DELIVERY_UNKNOWN, and parts 2 and 3 are never sent.
    let out = ctl.run(&["outbox", "resume"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let verdicts: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("earlier operation"))
        .collect();
    assert_eq!(verdicts.len(), 3, "{stderr}");
    assert!(
        verdicts[0].contains("(part 1 of 3)") && verdicts[0].contains(": unknown: "),
        "{stderr}"
    );
    for (line, n) in verdicts[1..].iter().zip(2..) {
        assert!(
            line.contains(&format!("(part {n} of 3)"))
                && line.contains("not sent: part 1 of the same input was not delivered"),
            "{stderr}"
        );
    }
    assert_eq!(sent_ops(&ctl), 0, "settled and compacted");
    let list = ctl.ok(&["outbox", "list"]);
    assert_eq!(list, "nothing pending\n");

    // The program reads at last: part 1 (or some of it), then what is sent next; never a b
    // or a c.
    std::fs::write(&go, b"").expect("create go");
    ctl.ok(&["send", &id, "SYNC"]);
    let got = wait_for_tail(&received, b"SYNC");
    let body = &got[..got.len() - 4];
    assert!(
        body.iter().all(|&b| b == b'a'),
        "bytes other than part 1's reached the program: {:?}",
        String::from_utf8_lossy(&body[body.len().saturating_sub(64)..])
    );
}
