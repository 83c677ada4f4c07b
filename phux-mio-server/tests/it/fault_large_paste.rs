//! Large paste integrity: repeated multi-KiB and 60 KiB APPLY_INPUT pastes to the probe child
//! in raw mode (so no canonical line limit applies), each followed by the probe's `:checksum`;
//! every SHA-256 and byte count the probe reports matches what the server was asked to write.
//! `FAULT_SEED=<n>` replays a run.

use std::fmt::Write as _;
use std::time::Instant;

use phux_proto::command::{Command, CommandResult};
use phux_proto::{Frame, TerminalId};
use sha2::{Digest, Sha256};

use crate::support::client::{Client, DEADLINE, Server};
use crate::support::faults::{self, Rng, paste_command};

/// Paste sizes, in bytes, cycled through; 61,440 bytes is 60 KiB, inside the 64 KiB
/// APPLY_INPUT bound with room for the encoding's overhead.
const SIZES: [usize; 6] = [1024, 4096, 61_440, 9000, 32_768, 61_440];
const PASTES: usize = 24;

/// Printable text with multi-byte characters and line ends, never `:` (a `:` after a line end
/// would be a probe command, not payload).
fn text(rng: &mut Rng, len: usize) -> Vec<u8> {
    const PIECES: [&str; 8] = ["abc ", "XYZ-", "0123", "é", "漢字", "€", "\n", "~!@#"];
    let mut out = Vec::with_capacity(len);
    while out.len() < len - 1 {
        let piece = PIECES[rng.below(PIECES.len() as u64) as usize].as_bytes();
        if out.len() + piece.len() > len - 1 {
            out.push(b'.');
        } else {
            out.extend_from_slice(piece);
        }
    }
    // Each paste ends a line, so the command after it starts one.
    out.push(b'\n');
    out
}

/// What the probe reads for a trusted paste outside bracketed-paste mode: the server turns
/// LF into CR (our rule R15) and raw mode leaves CR as it is.
fn as_read(data: &[u8]) -> Vec<u8> {
    data.iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect()
}

/// Waits for a probe report containing `needle` in the terminal's live output after `from`;
/// returns the report's line and moves `from` past it.
fn report(c: &mut Client, terminal: &TerminalId, from: &mut usize, needle: &str) -> String {
    let end = Instant::now() + DEADLINE;
    loop {
        let out = c.output_of(terminal);
        let rest = out.get(*from..).unwrap_or_default();
        if let Some(at) = rest
            .windows(needle.len())
            .position(|w| w == needle.as_bytes())
            && let Some(len) = rest[at..].windows(2).position(|w| w == b"\r\n")
        {
            let line = String::from_utf8_lossy(&rest[at..at + len]).into_owned();
            *from += at + len;
            return line;
        }
        assert!(
            Instant::now() < end,
            "no {needle:?} report; output: {:?}",
            String::from_utf8_lossy(rest)
        );
        c.recv(end);
    }
}

fn apply(c: &mut Client, request_id: u32, rng: &mut Rng, terminal: &TerminalId, data: Vec<u8>) {
    let op = rng.operation_id();
    c.send(&paste_command(request_id, op, terminal, data));
    let result = c.wait_for("APPLY_INPUT result", |f| match f {
        Frame::CommandResult(r) if r.request_id == request_id => Some(r.result.clone()),
        _ => None,
    });
    assert_eq!(result, CommandResult::Ok, "request {request_id}");
}

#[test]
fn every_large_paste_reaches_the_child_byte_for_byte() {
    // [INPUT.APPLY.1] [INPUT.ENCODE.PASTE.1]
    let probe = faults::probe_binary();
    let seed = faults::seed(0x0060_4b1b);
    println!("large paste: FAULT_SEED={seed}");
    let mut rng = Rng::new(seed);
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let probe = probe.to_str().expect("utf-8 path");
    let terminal = c.spawn(&[probe, "probe"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let mut from = 0;
    let mut request_id = 1000;
    let mut next = || {
        request_id += 1;
        request_id
    };
    apply(
        &mut c,
        next(),
        &mut rng,
        &terminal,
        b":mark start\n".to_vec(),
    );
    report(&mut c, &terminal, &mut from, "MARK start");
    apply(&mut c, next(), &mut rng, &terminal, b":raw\n".to_vec());
    let termios = report(&mut c, &terminal, &mut from, "TERMIOS");
    assert!(termios.starts_with("TERMIOS raw"), "{termios}");

    let started = Instant::now();
    let mut total = 0usize;
    let mut largest = 0usize;
    for i in 0..PASTES {
        let data = text(&mut rng, SIZES[i % SIZES.len()]);
        let expected = as_read(&data);
        let digest = Sha256::digest(&expected)
            .iter()
            .fold(String::new(), |mut s, b| {
                let _ = write!(s, "{b:02x}");
                s
            });
        apply(&mut c, next(), &mut rng, &terminal, data.clone());
        apply(&mut c, next(), &mut rng, &terminal, b":checksum\n".to_vec());
        let line = report(&mut c, &terminal, &mut from, "CHECKSUM ");
        assert_eq!(
            line,
            format!("CHECKSUM {digest} {}", expected.len()),
            "paste {i} of {} bytes",
            data.len()
        );
        apply(
            &mut c,
            next(),
            &mut rng,
            &terminal,
            b":checksum-reset\n".to_vec(),
        );
        report(&mut c, &terminal, &mut from, "CHECKSUM-RESET");
        total += data.len();
        largest = largest.max(data.len());
    }
    println!(
        "large paste: {PASTES} pastes ({total} bytes, largest {largest}) to the probe in raw \
         mode, {PASTES} checksums matched, in {:?}",
        started.elapsed()
    );
}
