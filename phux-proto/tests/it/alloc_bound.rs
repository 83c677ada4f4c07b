//! Decoding never allocates from an unchecked length: a counting global allocator measures
//! the peak bytes held during each decode of truncated, mutated and huge-declared-length
//! inputs. (The allocator counts per thread, so the tests running alongside do not disturb it.)

use crate::common::alloc::peak_during_decode;
use phux_proto::Frame;

/// The bound: a small constant, plus per input byte at most the in-memory size of the
/// densest structure a byte can become (a 2-byte focus event in an APPLY_INPUT list is one
/// `InputEvent`, whose size is the factor).
fn bound(len: usize) -> usize {
    let per_byte = size_of::<phux_proto::input::InputEvent>().div_ceil(2);
    1024 + per_byte * len
}

fn vectors() -> Vec<Vec<u8>> {
    let text = include_str!("../../testdata/vectors.md");
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line == "```"
            && let Some(hex) = lines.next()
        {
            let hex = hex.trim();
            out.push(
                (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect(),
            );
            lines.next();
        }
    }
    out
}

/// Frames whose inner lengths and counts claim far more than is present.
fn huge_declared() -> Vec<Vec<u8>> {
    let frame = |tag: u8, body: &[u8]| {
        let mut f = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        f.push(tag);
        f.extend_from_slice(body);
        f
    };
    vec![
        // HELLO client_name with a field length of 16 MiB and 3 bytes present.
        frame(
            0x01,
            &[0x01, 0x04, 0x80, 0x80, 0x80, 0x08, b'a', b'b', b'c'],
        ),
        // INPUT_PASTE whose u32 data length is 0xffffffff.
        frame(
            0x11,
            &[
                0x01, 0x04, 0x05, 0, 0, 0, 0, 1, 0x02, 0x04, 0x05, 0, 0xff, 0xff, 0xff, 0xff,
            ],
        ),
        // KILL_TERMINALS with count 0xffff and one id present.
        frame(0x31, &[0x02, 0x04, 0x08, 0x09, 0xff, 0xff, 0, 0, 0, 0, 1]),
        // GET_STATE reply: a snapshot claiming 2^32-1 sessions.
        frame(
            0xc2,
            &[0x02, 0x04, 0x07, 0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0],
        ),
        // SPAWN_TERMINAL command list claiming 2^32-1 args, env likewise.
        frame(
            0x22,
            &[
                0x03, 0x04, 0x04, 0xff, 0xff, 0xff, 0xff, 0x05, 0x04, 0x04, 0xff, 0xff, 0xff, 0xff,
            ],
        ),
        // APPLY_INPUT with count 256 and nothing after.
        {
            let mut v = vec![0x02, 0x04, 0x19, 0x14];
            v.extend_from_slice(&[0x5a; 16]);
            v.extend_from_slice(&[0, 0, 0, 0, 1, 0x01, 0x00]);
            frame(0x31, &v)
        },
        // A header declaring 16 MiB with 5 bytes present.
        vec![0x01, 0x00, 0x00, 0x00, 0x90],
    ]
}

#[test]
fn decode_allocates_at_most_a_constant_plus_the_input() {
    let mut worst = (0usize, 0usize);
    let mut check = |bytes: &[u8]| {
        let peak = peak_during_decode(bytes);
        assert!(
            peak <= bound(bytes.len()),
            "{peak} bytes for a {}-byte input {bytes:02x?}",
            bytes.len()
        );
        if peak > worst.0 {
            worst = (peak, bytes.len());
        }
    };
    for bytes in huge_declared() {
        let peak = peak_during_decode(&bytes);
        // Huge declared lengths allocate nothing beyond a small constant.
        assert!(peak <= 1024, "{peak} bytes for {bytes:02x?}");
        check(&bytes);
    }
    for bytes in vectors() {
        for cut in 0..=bytes.len() {
            check(&bytes[..cut]);
        }
        let mut mutated = bytes.clone();
        for i in 0..bytes.len() {
            for value in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                mutated[i] = value;
                check(&mutated);
            }
            mutated[i] = bytes[i];
        }
    }
    // A 1 MiB TERMINAL_OUTPUT: the payload is copied once, nothing more.
    let big = Frame::TerminalOutput(phux_proto::frame::TerminalOutput {
        terminal: phux_proto::TerminalId::Local(1),
        seq: 1,
        bytes: vec![0x61; 1 << 20],
        stream: phux_proto::StreamId::new(1).unwrap(),
        bootstrap: phux_proto::BootstrapId::new(1).unwrap(),
    })
    .to_bytes();
    let peak = peak_during_decode(&big);
    assert!(peak <= (1 << 20) + 1024, "{peak}");
    println!("worst peak: {} bytes for a {}-byte input", worst.0, worst.1);
}
