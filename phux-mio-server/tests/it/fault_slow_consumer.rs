//! A slow consumer: one attached client stops reading while the child writes a large amount of
//! output. The server's memory stays within a fixed bound, the other attached client receives
//! every byte (its TERMINAL_OUTPUT bytes add up to the child's output size, in contiguous
//! sequence), and the one that stopped reading is tombstoned: it finds
//! BOOTSTRAP_TOMBSTONE{OUTBOUND_GAP} once it reads again.
//!
//! The child writes 32 MiB (eight times the 4 MiB per-connection output budget) rather than
//! 1 GiB: the test server is a debug build that parses every byte into its screen model, which
//! on a loaded 2-core machine streams about 1 MiB/s, so 1 GiB (or even 256 MiB) would take
//! many minutes. `FAULT_SLOW_BYTES=<n>` runs another size (1073741824 for the full 1 GiB).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::frame::{CommandFrame, TombstoneReason};
use phux_proto::{Frame, OperationId, TerminalId};

use crate::support::client::Server;
use crate::support::faults::{self, FrameStream, hello_frame, paste_command, vm_rss_kib};

const DEFAULT_BYTES: u64 = 32 * 1024 * 1024;
/// Server RSS over its baseline allowed while the output streams (its per-connection output
/// budget is 4 MiB; the rest is slack for allocator behaviour).
const RSS_BOUND_KIB: u64 = 64 * 1024;
/// The whole stream must finish within this.
const STREAM_DEADLINE: Duration = Duration::from_mins(5);

/// HELLO, then ATTACH_TERMINAL; returns once the bootstrap is complete.
fn attach(s: &mut FrameStream, terminal: &TerminalId) {
    s.send(&hello_frame());
    s.wait_for("HELLO_OK", |f| matches!(f, Frame::HelloOk(_)).then_some(()));
    s.send(&Frame::Command(CommandFrame {
        request_id: 1,
        command: Command::AttachTerminal {
            terminal: terminal.clone(),
        },
    }));
    let mut ok = false;
    let mut ready = false;
    while !(ok && ready) {
        s.wait_for("attach", |f| {
            match f {
                Frame::CommandResult(r) if r.request_id == 1 => {
                    assert_eq!(r.result, CommandResult::Ok, "attach refused");
                    ok = true;
                }
                Frame::BootstrapReady(_) => ready = true,
                _ => {}
            }
            Some(())
        });
    }
}

#[test]
fn a_client_that_stops_reading_is_tombstoned_while_memory_stays_bounded_and_others_get_everything()
{
    // [QUEUE.OUTPUT.1] [QUEUE.BOUND.1] [BOOTSTRAP.TOMBSTONE.1] [OUTPUT.SEQ.2]
    let total: u64 = std::env::var("FAULT_SLOW_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_BYTES);
    let server = Server::start();
    let server_pid = u32::try_from(server.pid()).expect("pid");
    let mut control = server.connect();
    control.hello();
    // The child turns echo off, says so, and waits for a line, so both clients are attached
    // before it speaks and its output after `ready` is exactly the `y`s.
    let script =
        format!("stty -echo; printf ready; read go; head -c {total} /dev/zero | tr '\\0' y");
    let terminal = control.spawn(&["sh", "-c", &script]);
    let ready_end = Instant::now() + faults::DEADLINE;
    loop {
        let screen = control.command(Command::GetScreen {
            terminal: terminal.clone(),
            request_scrollback: None,
            cells: false,
        });
        if matches!(&screen, CommandResult::OkWith(CommandValue::Json(j)) if j.contains("ready")) {
            break;
        }
        assert!(
            Instant::now() < ready_end,
            "the child never got ready: {screen:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut reader = FrameStream::connect(&server.socket);
    attach(&mut reader, &terminal);
    let mut slow = FrameStream::connect(&server.socket);
    attach(&mut slow, &terminal);
    // From here on `slow` reads nothing until the stream is over.

    let baseline = vm_rss_kib(server_pid).expect("rss");
    let max_rss = Arc::new(AtomicU64::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let max_rss = Arc::clone(&max_rss);
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut samples = 0u64;
            while !done.load(Ordering::SeqCst) {
                if let Some(rss) = vm_rss_kib(server_pid) {
                    max_rss.fetch_max(rss, Ordering::SeqCst);
                    samples += 1;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            samples
        })
    };

    let started = Instant::now();
    reader.send(&paste_command(
        2,
        OperationId::from_u128(0x510e).expect("id"),
        &terminal,
        b"go\n".to_vec(),
    ));
    let end = started + STREAM_DEADLINE;
    let mut received: u64 = 0;
    // Anything but the `y`s: at most the `ready` the child printed before attaching ended.
    let mut other_bytes = Vec::new();
    let mut last_seq: Option<u64> = None;
    let mut gaps = 0u64;
    let mut reader_tombstoned = false;
    loop {
        let Some(frame) = reader.recv(end) else {
            panic!(
                "the reader stopped after {received} of {total} bytes (eof: {})",
                reader.eof
            );
        };
        match frame {
            Frame::TerminalOutput(o) if o.terminal == terminal => {
                if let Some(last) = last_seq
                    && o.seq != last + 1
                {
                    gaps += 1;
                }
                last_seq = Some(o.seq);
                let before = other_bytes.len();
                other_bytes.extend(o.bytes.iter().filter(|&&b| b != b'y'));
                received += (o.bytes.len() - (other_bytes.len() - before)) as u64;
            }
            Frame::BootstrapTombstone(t) if t.terminal == terminal => reader_tombstoned = true,
            Frame::TerminalClosed(c) if c.terminal == terminal => break,
            _ => {}
        }
    }
    let elapsed = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let samples = sampler.join().expect("sampler");
    let max = max_rss.load(Ordering::SeqCst);
    let growth = max.saturating_sub(baseline);

    // The slow client reads again: the server tombstoned its stream (or detached it).
    let mut slow_saw = None;
    let mut slow_output: u64 = 0;
    let slow_end = Instant::now() + faults::DEADLINE;
    while slow_saw.is_none() {
        match slow.recv(slow_end) {
            Some(Frame::BootstrapTombstone(t)) if t.terminal == terminal => {
                slow_saw = Some(format!(
                    "BOOTSTRAP_TOMBSTONE {:?} last_valid_seq {}",
                    t.reason, t.last_valid_seq
                ));
                assert_eq!(t.reason, TombstoneReason::OutboundGap);
            }
            Some(Frame::Detached(d)) => slow_saw = Some(format!("DETACHED {:?}", d.reason)),
            Some(Frame::TerminalOutput(o)) => slow_output += o.bytes.len() as u64,
            Some(_) => {}
            None => panic!("the slow client saw neither a tombstone nor DETACHED"),
        }
    }
    println!(
        "slow consumer: child wrote {total} bytes; reader received {received} bytes in {elapsed:?} \
         ({:.1} MiB/s), seq gaps {gaps}; server VmRSS baseline {baseline} KiB, max {max} KiB \
         (growth {growth} KiB, {samples} samples); slow client got {slow_output} output bytes \
         before: {}",
        f64::from(u32::try_from(received / 1024).unwrap_or(u32::MAX))
            / 1024.0
            / elapsed.as_secs_f64(),
        slow_saw.as_deref().unwrap_or_default()
    );
    assert!(!reader_tombstoned, "the reading client was tombstoned too");
    assert_eq!(received, total, "the reading client missed output");
    assert!(
        other_bytes.is_empty() || other_bytes == b"ready",
        "unexpected output: {:?}",
        String::from_utf8_lossy(&other_bytes)
    );
    assert_eq!(gaps, 0, "the reading client's output seq has gaps");
    assert!(
        growth < RSS_BOUND_KIB,
        "server RSS grew {growth} KiB over its baseline"
    );
    assert!(
        slow_output < total,
        "the slow client was sent everything: nothing was bounded"
    );
}
