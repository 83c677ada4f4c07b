//! A `phuxctl paste` killed with SIGKILL in the middle, after part of the paste reached the
//! program and before the rest did, is finished by the next run (`phuxctl outbox resume`):
//! the program reads every byte exactly once, in order. No exit hook: a real `kill -9` of the
//! real binary at a moment the test observes from outside (the program's file growing).

use std::io::Write as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Ctl, DEADLINE, Server, wait_until};

/// Records `r<NNNNN>;` in order, so a byte lost, repeated or moved shows in a compare.
fn content(records: usize) -> Vec<u8> {
    (0..records)
        .flat_map(|i| format!("r{i:05};").into_bytes())
        .collect()
}

#[test]
fn a_paste_killed_mid_way_is_finished_by_the_next_run_exactly_once() {
    // [CLIENT.OUTBOX.5] [CLIENT.PASTE.2] [INPUT.DEDUPE.2]
    phux_testkit::require_programs!("python3");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let received = dir.path().join("received.bin");
    let data = content(100_000); // 700,000 bytes: several operations of the outbox
    // Raw mode, no echo; the program reads slowly (about 200 KB/s), so each operation's write
    // completes well within its bound while the whole paste takes seconds.
    let reader = format!(
        "import os, sys, time\nf = open('{}', 'wb', buffering=0)\nprint('ready', flush=True)\n\
         while True:\n    b = os.read(0, 4096)\n    if not b: break\n    f.write(b)\n    \
         time.sleep(0.02)\n",
        received.display()
    );
    let script = "stty raw -echo; exec python3 -c \"$0\"";
    let id = ctl.spawn(&["/bin/sh", "-c", script, &reader]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));

    let mut paste = ctl
        .command(&["paste", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start phuxctl paste");
    paste
        .stdin
        .take()
        .expect("stdin")
        .write_all(&data)
        .expect("write the paste");
    // Mid-way: some of it has reached the program, not all.
    let started = Instant::now();
    let mid = loop {
        let len = std::fs::metadata(&received).map_or(0, |m| m.len() as usize);
        if len > 0 {
            break len;
        }
        assert!(started.elapsed() < DEADLINE, "nothing of the paste arrived");
        assert!(
            paste.try_wait().expect("try_wait").is_none(),
            "phuxctl finished before anything arrived"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    paste.kill().expect("SIGKILL phuxctl");
    let status = paste.wait().expect("reap phuxctl");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "phuxctl ended before the kill ({status:?}), after {mid} bytes"
    );
    let at_kill = std::fs::metadata(&received).map_or(0, |m| m.len() as usize);
    assert!(
        at_kill < data.len(),
        "the paste had all arrived before the kill; nothing was interrupted"
    );
    // What is left waits in the journal.
    assert!(
        ctl.journals().iter().any(|(_, len)| *len > 0),
        "the killed paste left nothing in the outbox: {:?}",
        ctl.journals()
    );

    let resumed = ctl.run(&["outbox", "resume"]);
    assert!(resumed.status.success(), "{resumed:?}");
    // A marker sent after the resume: once the program has read it, it has read everything
    // written before it, a repeat included.
    assert_eq!(ctl.ok(&["send", &id, "END!"]).trim(), "delivered");
    assert!(
        wait_until(|| std::fs::read(&received).is_ok_and(|b| b.ends_with(b"END!"))),
        "after the resume the program never read the marker ({} bytes read)",
        std::fs::metadata(&received).map_or(0, |m| m.len())
    );
    let got = std::fs::read(&received).expect("read received");
    let want = [data.as_slice(), b"END!"].concat();
    assert_eq!(
        got.len(),
        want.len(),
        "killed after {at_kill} bytes, the program read {} bytes (a repeat or a loss)",
        got.len()
    );
    assert!(
        got == want,
        "the paste arrived changed (killed after {at_kill} bytes)"
    );
}
