//! Ingest throughput of `TerminalState` on typical PTY output.
//!
//! The server must keep up with about 70 MiB/s of PTY output per terminal, so ingest is
//! measured on 1 MiB inputs, fed whole and in 4 KiB reads (what a PTY read returns).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phux_core::terminal::TerminalState;

const MIB: usize = 1 << 20;

/// Shell-like output: coloured prompts, `ls -l`-style listings, cursor moves and erases.
fn shell_output() -> Vec<u8> {
    let mut out = Vec::with_capacity(MIB + 4096);
    let mut i = 0u32;
    while out.len() < MIB {
        out.extend_from_slice(b"\x1b[1;32muser@host\x1b[0m:\x1b[1;34m~/src/phux\x1b[0m$ ls -l\r\n");
        for j in 0..8 {
            let line = format!(
                "-rw-r--r-- 1 user user {:>6} Jan {:>2} 12:{:02} \x1b[01;3{}mfile_{i}_{j}.rs\x1b[0m\r\n",
                (i * 7919 + j) % 100_000,
                j + 1,
                (i + j) % 60,
                j % 7 + 1,
            );
            out.extend_from_slice(line.as_bytes());
        }
        // A progress line redrawn in place, and a status line written with cursor moves.
        out.extend_from_slice(b"building [=====>    ] 60%\r\x1b[Kbuilding [==========] 100%\r\n");
        out.extend_from_slice(format!("\x1b7\x1b[24;1H\x1b[7m status {i} \x1b[m\x1b8").as_bytes());
        i += 1;
    }
    out.truncate(MIB);
    out
}

fn yes_output() -> Vec<u8> {
    b"y\n".repeat(MIB / 2)
}

/// `yes` as a PTY delivers it (the line discipline turns LF into CR LF).
fn yes_pty_output() -> Vec<u8> {
    let mut out = b"y\r\n".repeat(MIB / 3 + 1);
    out.truncate(MIB);
    out
}

fn nz(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Bytes(MIB as u64));
    for (name, input) in [
        ("shell", shell_output()),
        ("yes", yes_output()),
        ("yes-crlf", yes_pty_output()),
    ] {
        group.bench_function(format!("{name}/whole"), |b| {
            b.iter_batched_ref(
                || TerminalState::new(120, 40, 10_000),
                |t| t.ingest(black_box(&input)).unwrap(),
                criterion::BatchSize::LargeInput,
            );
        });
        // Baseline: the bare grid, no scrollback, no tracking.
        group.bench_function(format!("{name}/bare-vt100"), |b| {
            b.iter_batched_ref(
                || vt100::Parser::new(nz(40), nz(120), 0),
                |p| p.process(black_box(&input)),
                criterion::BatchSize::LargeInput,
            );
        });
        group.bench_function(format!("{name}/no-history"), |b| {
            b.iter_batched_ref(
                || TerminalState::new(120, 40, 0),
                |t| t.ingest(black_box(&input)).unwrap(),
                criterion::BatchSize::LargeInput,
            );
        });
        group.bench_function(format!("{name}/4KiB-reads"), |b| {
            b.iter_batched_ref(
                || TerminalState::new(120, 40, 10_000),
                |t| {
                    for chunk in black_box(&input).chunks(4096) {
                        t.ingest(chunk).unwrap();
                    }
                },
                criterion::BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
