//! Codec throughput next to a memcpy of the same bytes, in the same run.
//!
//! Targets: a 64 KiB TERMINAL_OUTPUT decodes and encodes at ≥ 0.5× memcpy; small frames
//! (INPUT_KEY, an APPLY_INPUT COMMAND with one paste) at ≥ 5 million frames/s. A summary
//! with the ratios is printed at the end (plain `Instant` loops, after criterion's runs).

// A benchmark is a driver, not protocol code: it measures wall-clock time, so the sans-IO
// clock ban does not apply, and its rates are approximate floats by nature.
#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    clippy::cast_precision_loss
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{CommandFrame, InputKey, TerminalOutput};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{BootstrapId, Frame, OperationId, StreamId, TerminalId};

fn output_frame() -> Frame {
    Frame::TerminalOutput(TerminalOutput {
        terminal: TerminalId::Local(1),
        seq: 42,
        bytes: (0..64 * 1024u32).map(|i| (i % 251) as u8).collect(),
        stream: StreamId::new(1).unwrap(),
        bootstrap: BootstrapId::new(1).unwrap(),
    })
}

fn key_frame() -> Frame {
    let mut key = KeyEvent::press(PhysicalKey::KEY_A, ModSet::NONE);
    key.text = Some("a".into());
    key.unshifted_codepoint = Some(0x61);
    Frame::InputKey(InputKey {
        terminal: TerminalId::Local(7),
        event: key,
    })
}

fn command_frame() -> Frame {
    Frame::Command(CommandFrame {
        request_id: 9,
        command: Command::ApplyInput(ApplyInput {
            operation_id: OperationId::from_u128(0x5a5a).unwrap(),
            terminal: TerminalId::Local(5),
            events: vec![InputEvent::Paste(PasteEvent {
                trust: PasteTrust::Trusted,
                data: b"echo hello world".to_vec(),
            })],
        }),
    })
}

fn cases() -> [(&'static str, Frame); 3] {
    [
        ("terminal_output_64k", output_frame()),
        ("input_key", key_frame()),
        ("command_apply_input", command_frame()),
    ]
}

fn memcpy(src: &[u8], dst: &mut Vec<u8>) {
    dst.clear();
    dst.extend_from_slice(src);
}

fn bench(c: &mut Criterion) {
    for (name, frame) in cases() {
        let bytes = frame.to_bytes();
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("decode", |b| b.iter(|| Frame::decode(black_box(&bytes))));
        let mut out = Vec::with_capacity(bytes.len());
        group.bench_function("encode", |b| {
            b.iter(|| {
                out.clear();
                black_box(&frame).encode(&mut out);
            });
        });
        let mut dst = Vec::with_capacity(bytes.len());
        group.bench_function("memcpy", |b| b.iter(|| memcpy(black_box(&bytes), &mut dst)));
        group.finish();
    }
}

/// Runs `f` repeatedly for about `budget`; returns nanoseconds per call.
fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let mut iters = 1u64;
    loop {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = start.elapsed();
        if elapsed >= budget {
            return elapsed.as_nanos() as f64 / iters as f64;
        }
        iters *= 2;
    }
}

fn summary() {
    let budget = Duration::from_millis(300);
    println!("\nsummary (same run, {budget:?} per measurement):");
    println!(
        "{:<22} {:>10} {:>12} {:>12} {:>12} {:>9} {:>9}",
        "case", "bytes", "decode", "encode", "memcpy", "dec/mcp", "enc/mcp"
    );
    for (name, frame) in cases() {
        let bytes = frame.to_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut dst = Vec::with_capacity(bytes.len());
        let dec = time_per_call(budget, || {
            black_box(Frame::decode(black_box(&bytes)).ok());
        });
        let enc = time_per_call(budget, || {
            out.clear();
            black_box(&frame).encode(&mut out);
            black_box(&out);
        });
        let mcp = time_per_call(budget, || {
            memcpy(black_box(&bytes), &mut dst);
            black_box(&dst);
        });
        let rate = |ns: f64| {
            if bytes.len() > 4096 {
                format!("{:.0} MB/s", bytes.len() as f64 / ns * 1e3)
            } else {
                format!("{:.1} M/s", 1e3 / ns)
            }
        };
        // Ratio of throughputs: codec speed / memcpy speed.
        println!(
            "{:<22} {:>10} {:>12} {:>12} {:>12} {:>9.3} {:>9.3}",
            name,
            bytes.len(),
            rate(dec),
            rate(enc),
            rate(mcp),
            mcp / dec,
            mcp / enc
        );
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    summary();
}
