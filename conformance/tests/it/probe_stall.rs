//! A stalled probe on a real PTY: it reads nothing until its timer or SIGCONT, so the
//! terminal's input queue fills up; input written meanwhile is read afterwards.

use crate::probe_util::Probe;
use phux_mio_server::child::GroupSignal;

#[test]
fn a_timed_stall_reads_held_input_after_the_timer() {
    let mut p = Probe::spawn();
    p.send(b":stall 300\n:mark after\n");
    p.expect("STALLING 300");
    p.expect("RESUMED timer");
    p.expect("MARK after");
}

#[test]
fn an_endless_stall_fills_the_input_queue_until_sigcont() {
    // [INPUT.LANE.2] needs a terminal whose PTY stops accepting input: a stalled probe.
    let mut p = Probe::spawn();
    assert_eq!(p.command(":raw"), "TERMIOS raw -echo -isig -icrnl");
    p.send(b":stall\r");
    p.expect("STALLING forever");
    // The master refuses input once the kernel's buffers are full.
    let limit = 4 << 20;
    let taken = p.fill(b'x', limit);
    assert!(
        taken < limit,
        "the PTY accepted {taken} bytes from a stalled reader"
    );
    // [SIGNAL.MAP.1] RESUME is SIGCONT, which ends the stall.
    p.signal(GroupSignal::Resume);
    p.expect("RESUMED CONT");
    p.send(b"\r:count\r");
    // Everything accepted was read: the filler and the CR.
    let mut read = 0;
    let count = loop {
        let body = p.next();
        match body.strip_prefix("READ ") {
            Some(hex) => read += hex.len() / 2,
            None => break body,
        }
    };
    let (bytes, lines) = count
        .strip_prefix("COUNT ")
        .and_then(|c| c.split_once(' '))
        .expect("COUNT <bytes> <lines>");
    assert_eq!(bytes.parse::<usize>().expect("bytes"), read);
    assert_eq!(read, taken + 1);
    assert_eq!(lines, "1");
}
