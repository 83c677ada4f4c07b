//! Ingest throughput of `Terminal` on typical PTY output, next to a bare `vt100` parser.
//!
//! The server must keep up with about 70 MiB/s of PTY output per terminal, so ingest is
//! measured on 1 MiB inputs: fed whole, and in 64 KiB and 4 KiB reads (what PTY reads return),
//! with the server's default 2,000-row history. After the criterion groups a summary pass
//! times each variant against bare `vt100` in alternating rounds and prints medians and ratios.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phux_term::Terminal;

const MIB: usize = 1 << 20;
/// `ServerConfig::scrollback_lines`' default.
const HISTORY: usize = 2000;
const COLS: u16 = 80;
const ROWS: u16 = 24;

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

/// `yes` as a PTY delivers it (the line discipline turns LF into CR LF).
fn yes_output() -> Vec<u8> {
    let mut out = b"y\r\n".repeat(MIB / 3 + 1);
    out.truncate(MIB);
    out
}

/// Full 80-column lines of text, as the server throughput benchmark's writer produces: every
/// line scrolls into the history.
fn text_output() -> Vec<u8> {
    let line: Vec<u8> = (0..79u8).map(|i| b'!' + i % 94).chain(*b"\r\n").collect();
    let mut out = line.repeat(MIB / line.len() + 1);
    out.truncate(MIB);
    out
}

fn nz(v: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(v).unwrap()
}

fn ours(input: &[u8], read: usize) {
    let mut t = Terminal::new(COLS, ROWS, HISTORY);
    for chunk in input.chunks(read) {
        t.advance(black_box(chunk));
    }
    black_box(&t);
}

fn bare(input: &[u8], read: usize) {
    let mut p = vt100::Parser::new(nz(ROWS), nz(COLS), 0);
    for chunk in input.chunks(read) {
        p.process(black_box(chunk));
    }
    black_box(&p);
}

fn inputs() -> [(&'static str, Vec<u8>); 3] {
    [
        ("shell", shell_output()),
        ("yes-crlf", yes_output()),
        ("text-80col", text_output()),
    ]
}

const READS: [(&str, usize); 3] = [("whole", MIB), ("64KiB", 64 << 10), ("4KiB", 4 << 10)];

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("ingest");
    group.throughput(Throughput::Bytes(MIB as u64));
    for (name, input) in inputs() {
        for (read_name, read) in READS {
            group.bench_function(format!("{name}/{read_name}"), |b| {
                b.iter(|| ours(&input, read));
            });
        }
        // Baseline: the bare grid, no history, no mode tracking.
        group.bench_function(format!("{name}/bare-vt100"), |b| {
            b.iter(|| bare(&input, MIB));
        });
    }
    group.finish();
    // `PHUX_BENCH_SUMMARY=0` skips the summary (when profiling one variant).
    if std::env::var_os("PHUX_BENCH_SUMMARY").is_none_or(|v| v != "0") {
        summary();
    }
}

/// Medians of alternating rounds (ours, bare, ours, bare, ...), printed with ratios. A
/// benchmark is a driver, so it may read the clock the crate itself never touches.
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::cast_precision_loss
)]
fn summary() {
    const ROUNDS: usize = 9;
    let mib_s = |f: &dyn Fn()| {
        let start = std::time::Instant::now();
        f();
        1.0 / start.elapsed().as_secs_f64()
    };
    println!(
        "\n{:<20} {:>12} {:>12} {:>8}",
        "input/read", "ours MiB/s", "vt100 MiB/s", "ratio"
    );
    for (name, input) in inputs() {
        for (read_name, read) in READS {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                a.push(mib_s(&|| ours(&input, read)));
                b.push(mib_s(&|| bare(&input, read)));
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (a, b) = (median(&mut a), median(&mut b));
            println!(
                "{:<20} {a:>12.1} {b:>12.1} {:>8.2}",
                format!("{name}/{read_name}"),
                a / b
            );
        }
    }
    memory();
}

/// Heap bytes held by one terminal: idle, with a full screen, with a full history.
fn memory() {
    let idle = Terminal::new(COLS, ROWS, HISTORY);
    let mut screen = Terminal::new(COLS, ROWS, HISTORY);
    let line: Vec<u8> = (0..COLS).map(|i| b'a' + (i % 26) as u8).collect();
    for _ in 0..ROWS - 1 {
        screen.advance(&line);
        screen.advance(b"\r\n");
    }
    let mut full = Terminal::new(COLS, ROWS, HISTORY);
    for _ in 0..HISTORY + usize::from(ROWS) {
        full.advance(&line);
        full.advance(b"\r\n");
    }
    println!(
        "\nbytes per terminal ({COLS}x{ROWS}, {HISTORY} history; the struct is {} more): \
         idle {}, full screen {}, full history {} ({} rows)",
        size_of::<Terminal>(),
        idle.heap_bytes(),
        screen.heap_bytes(),
        full.heap_bytes(),
        full.scrollback_len(),
    );
}

/// Hostile output: sequences whose counts or shapes could make one byte cost far more than
/// the cells it changes. Each case is a terminal size and an input; the figure to watch is the
/// time per case, which must stay proportional to the input (every VT operation linear in the
/// cells it touches, counts clamped as xterm clamps them).
fn hostile_inputs() -> Vec<(&'static str, u16, u16, Vec<u8>)> {
    let rep = |ch: &str, n: usize| format!("{ch}\x1b[65535b").repeat(n).into_bytes();
    let seq = |s: &str, n: usize| format!("a{s}").repeat(n).into_bytes();
    // A 1024-column row of characters each carrying marks, rewritten again and again.
    let marks = "e\u{301}\u{302}\u{303}".repeat(1024 * 16).into_bytes();
    let wide = "\u{3042}".repeat(1024 * 64).into_bytes();
    // Half-width then wide over it, breaking and rebuilding pairs at every cell.
    let wide_mix = "a\u{3042}\x1b[D".repeat(1024 * 16).into_bytes();
    // Every cell of a 1024-column row in a pen of its own.
    let pens: Vec<u8> = (0..1024u32 * 16)
        .flat_map(|i| format!("\x1b[38;2;{};{};{}mx", i % 251, (i / 251) % 256, i % 7).into_bytes())
        .collect();
    // Tab stops cleared, then CHT / CBT of 65,535 across a 1024-column row.
    let tabs = format!("\x1b[3g{}", "\x1b[65535I\x1b[65535Z".repeat(10_000)).into_bytes();
    // IRM: every wide character shifts the row's rest.
    let irm = format!("\x1b[4h{}", "\u{3042}\r".repeat(64 * 1024)).into_bytes();
    vec![
        ("pens-1024col", 1024, ROWS, pens),
        ("tabs-65535-1024col", 1024, ROWS, tabs),
        ("irm-wide-1024col", 1024, ROWS, irm),
        ("rep-65535-ascii", COLS, ROWS, rep("a", 1000)),
        ("rep-65535-wide", COLS, ROWS, rep("\u{3042}", 1000)),
        ("rep-65535-ascii-1024col", 1024, ROWS, rep("a", 1000)),
        (
            "rep-65535-wide-irm-1024col",
            1024,
            ROWS,
            [b"\x1b[4h".to_vec(), rep("\u{3042}", 100)].concat(),
        ),
        ("marks-1024col", 1024, ROWS, marks),
        ("wide-1024col", 1024, ROWS, wide),
        ("wide-overwrite-1024col", 1024, ROWS, wide_mix),
        ("ich-65535", COLS, ROWS, seq("\x1b[65535@", 10_000)),
        ("dch-65535", COLS, ROWS, seq("\x1b[65535P", 10_000)),
        ("ech-65535", COLS, ROWS, seq("\x1b[65535X", 10_000)),
        ("il-65535", COLS, ROWS, seq("\x1b[65535L", 10_000)),
        ("dl-65535", COLS, ROWS, seq("\x1b[65535M", 10_000)),
        ("su-65535", COLS, ROWS, seq("\x1b[65535S", 10_000)),
        ("sd-65535", COLS, ROWS, seq("\x1b[65535T", 10_000)),
    ]
}

fn hostile(c: &mut Criterion) {
    let mut group = c.benchmark_group("hostile");
    group.sample_size(10);
    for (name, cols, rows, input) in hostile_inputs() {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut t = Terminal::new(cols, rows, HISTORY);
                t.advance(black_box(&input));
                black_box(&t);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench, hostile);
criterion_main!(benches);
