//! Output read by the PTY reader thread ([OUTPUT.READER.1]): a program's bursts reach the
//! master's reader thread and come back to the loop, and the viewer sees every byte once, in
//! order, across bursts and pauses, the program's exit in the middle of a burst, and in-place
//! upgrades in the middle of a stream.

use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};
use phux_proto::{Frame, TerminalId};

use crate::output_burst_delivered::{send_go, spawn_attached};
use crate::support::client::{Client, Server};
use crate::upgrade_chaos::LoggedServer;

/// The lines `seq -f L%.0f FIRST LAST` prints, through the terminal (LF becomes CR LF).
fn numbered(first: u64, last: u64) -> Vec<u8> {
    let mut s = Vec::new();
    for n in first..=last {
        s.extend_from_slice(format!("L{n}\r\n").as_bytes());
    }
    s
}

/// The terminal's output as the viewer receives it, until it holds `end` (or the terminal
/// closes), with the seqs checked: no gap, no repeat.
fn stream_until(c: &mut Client, t: &TerminalId, end: &[u8]) -> Vec<u8> {
    let mut text = Vec::new();
    let mut last_seq: Option<u64> = None;
    let mut at = 0;
    loop {
        while let Some(frame) = c.seen.get(at) {
            at += 1;
            if let Frame::TerminalOutput(o) = frame
                && &o.terminal == t
            {
                if let Some(prev) = last_seq {
                    assert_eq!(o.seq, prev + 1, "an output seq gap or repeat");
                }
                last_seq = Some(o.seq);
                text.extend_from_slice(&o.bytes);
            }
            if matches!(frame, Frame::TerminalClosed(cl) if &cl.terminal == t) {
                return text;
            }
        }
        if text.ends_with(end) {
            return text;
        }
        c.wait_for("more of the stream", |f| Some(f.clone()));
    }
}

/// `text` is the echoed go line, then exactly `expected`.
fn assert_exact(text: &[u8], expected: &[u8]) {
    let start = text
        .windows(4)
        .position(|w| w == b"L1\r\n")
        .unwrap_or_else(|| {
            panic!(
                "the stream never started: {:?}",
                String::from_utf8_lossy(text)
            )
        });
    let got = &text[start..];
    if got != expected {
        let diverges = got
            .iter()
            .zip(expected)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(expected.len()));
        let from = diverges.saturating_sub(40);
        panic!(
            "{} bytes where {} were written; first difference at {diverges}: {:?} against {:?}",
            got.len(),
            expected.len(),
            String::from_utf8_lossy(&got[from..(diverges + 40).min(got.len())]),
            String::from_utf8_lossy(&expected[from..(diverges + 40).min(expected.len())]),
        );
    }
}

/// A counted stream in bursts (each a few KiB, written 4 KiB at a time) with pauses longer than
/// the reader thread keeps an empty master: every burst goes to the thread and comes back.
// [OUTPUT.READER.1]
#[test]
fn a_counted_stream_in_bursts_with_pauses_arrives_exactly_in_order() {
    const BURSTS: u64 = 60;
    const LINES: u64 = 2000;
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let script = format!(
        "read go; i=0; while [ $i -lt {BURSTS} ]; do \
         seq -f L%.0f $((i*{LINES}+1)) $((i*{LINES}+{LINES})) | cat; \
         i=$((i+1)); sleep 0.02; done; exec sleep 600"
    );
    let t = spawn_attached(&mut c, &script);
    send_go(&mut c, &t, 0x5ead_0001);
    let expected = numbered(1, BURSTS * LINES);
    let text = stream_until(&mut c, &t, &expected[expected.len() - 16..]);
    assert_exact(&text, &expected);
}

/// The program exits right after a large write: the master's end (EIO) comes after its last
/// byte, and the viewer gets every byte before TERMINAL_CLOSED.
// [OUTPUT.READER.1] [SERVER.PTY.3]
#[test]
fn a_child_exiting_mid_burst_has_every_byte_delivered_before_its_close() {
    const LINES: u64 = 150_000;
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let t = spawn_attached(&mut c, &format!("read go; seq -f L%.0f 1 {LINES} | cat"));
    send_go(&mut c, &t, 0x5ead_0002);
    let expected = numbered(1, LINES);
    // Read to TERMINAL_CLOSED: `end` is never matched before it, as the stream ends there.
    let text = stream_until(&mut c, &t, b"\0never\0");
    assert!(
        c.seen
            .iter()
            .any(|f| matches!(f, Frame::TerminalClosed(cl) if cl.terminal == t)),
        "the terminal did not close"
    );
    assert_exact(&text, &expected);
}

/// In-place upgrades while a program streams in bursts: the reader thread gives its masters
/// back, and its bytes are fed, before the image is taken; the viewer sees each line once.
// [OUTPUT.READER.3] [SERVER.UPGRADE.EXEC.3]
#[test]
fn upgrades_mid_burst_lose_and_repeat_nothing() {
    const UPGRADES: usize = 4;
    const BURSTS: u64 = 300;
    const LINES: u64 = 1000;
    let fixture = LoggedServer::start();
    let mut control = fixture.server.connect();
    control.hello();
    let mut viewer = fixture.server.connect();
    viewer.hello();
    let script = format!(
        "read go; i=0; while [ $i -lt {BURSTS} ]; do \
         seq -f L%.0f $((i*{LINES}+1)) $((i*{LINES}+{LINES})) | cat; \
         i=$((i+1)); sleep 0.01; done; exec sleep 600"
    );
    let t = spawn_attached(&mut viewer, &script);
    send_go(&mut viewer, &t, 0x5ead_0003);
    let expected = numbered(1, BURSTS * LINES);
    let deadline = Instant::now() + Duration::from_mins(3);
    for i in 0..UPGRADES {
        assert!(Instant::now() < deadline, "upgrades took too long");
        // Upgrades while the stream runs: each after some more of it has arrived.
        let mark = numbered(((i as u64 + 1) * 20) * LINES, ((i as u64 + 1) * 20) * LINES);
        viewer.wait_for("the stream under way", |f| match f {
            Frame::TerminalOutput(o)
                if o.terminal == t && o.bytes.windows(mark.len()).any(|w| w == mark.as_slice()) =>
            {
                Some(())
            }
            _ => None,
        });
        assert_eq!(
            control.command(Command::Upgrade { binary: None }),
            CommandResult::Ok,
            "upgrade {i}"
        );
        fixture.wait_adoptions(i + 1);
    }
    let text = stream_until(&mut viewer, &t, &expected[expected.len() - 16..]);
    assert_exact(&text, &expected);
    assert!(!viewer.seen.iter().any(|f| matches!(f, Frame::Detached(_))));
}
