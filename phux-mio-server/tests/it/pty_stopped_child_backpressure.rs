//! A stopped child stops reading: the input queue fills and writes report WouldBlock instead of
//! blocking the caller; after SIGCONT the queue drains and writes are accepted again.

use std::time::Instant;

use phux_mio_server::{GroupSignal, PtyWrite, SpawnSpec, spawn};

use crate::support::common::{Output, eventually, proc_state};

/// If this much is accepted without WouldBlock, writes are not being throttled at all.
const CAP: usize = 16 << 20;

/// What a full queue may still take once the kernel has moved its last input along.
const SLACK: usize = 64 << 10;

#[test]
fn stopped_child_fills_the_queue_without_blocking_the_writer() {
    // -echo: the test then counts only what cat itself writes back.
    let child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", "stty -echo; echo READY; exec cat"]))
        .expect("spawn");
    let mut out = Output::new(&child);
    assert!(out.wait_for(&child, "READY"), "output: {:?}", out.text());

    child.signal_group(GroupSignal::Freeze).expect("SIGSTOP");
    assert!(eventually(|| proc_state(child.pid()) == Some('T')));

    // Complete lines: a canonical queue holding only a partial line discards instead of
    // throttling, so lines are what exercises back-pressure.
    let line = [b"x".repeat(63), b"\n".to_vec()].concat();
    let mut accepted = 0usize;
    let started = Instant::now();
    loop {
        match child.write(&line).expect("write") {
            PtyWrite::Written(n) => accepted += n,
            PtyWrite::WouldBlock => break,
            PtyWrite::Gone => panic!("the terminal hung up"),
        }
        assert!(
            accepted < CAP,
            "{accepted} bytes accepted by a stopped child"
        );
    }
    let filled_in = started.elapsed();
    assert!(accepted > 0, "the queue took nothing");
    println!("queue filled after {accepted} bytes in {filled_in:?}");
    // Still full: a stopped child reads nothing more. The kernel moves what it took into the
    // line discipline from a worker, so a little room may still open after the first
    // WouldBlock (a loaded machine runs that worker late): a little more is taken, then
    // nothing.
    let mut more = 0usize;
    loop {
        match child.write(&line).expect("write") {
            PtyWrite::Written(n) => more += n,
            PtyWrite::WouldBlock => break,
            PtyWrite::Gone => panic!("the terminal hung up"),
        }
        assert!(more < SLACK, "{more} more bytes taken by a stopped child");
    }

    child.signal_group(GroupSignal::Resume).expect("SIGCONT");
    // cat drains the queue once it runs; keep reading its output (so it never blocks on a
    // full output buffer) and retry the marker until the queue has room.
    let marker = b"END-OF-BACKPRESSURE\n";
    let mut sent = false;
    assert!(
        out.wait_until(&child, |_| {
            if !sent {
                sent = child.write(marker).expect("write") == PtyWrite::Written(marker.len());
            }
            sent
        }),
        "the queue never drained"
    );
    assert!(
        out.wait_for(&child, "END-OF-BACKPRESSURE\r\n"),
        "marker never echoed"
    );
    // cat wrote back every accepted line, those taken after the first WouldBlock included
    // ("\n" became "\r\n" on output).
    let lines = out.text().matches(&"x".repeat(63)).count();
    assert_eq!(lines * 64, accepted + more);
}
