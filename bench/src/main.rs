//! `phux-bench`: the phux server against the physical limit of the machine and against tmux
//! and dtach, measured side by side in one run (loopback only, bounded in time).
//!
//! Each figure is taken against its baseline in the same run, round by round (A B A B), and
//! reported as medians, p99s and ratios next to the targets of the benchmark issue.
// Figures are statistics of timings and byte counts far below 2^52: the float conversions
// lose nothing that matters, and spelling each one out would bury the arithmetic.
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use phux_bench::error::{self, Result};
use phux_bench::latency::{
    self, DirectPty, PhuxTerm, Relay, TmuxTerm, echo_argv, letter, sink_argv,
};
use phux_bench::procs::PhuxServer;
use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::roles::{self, RelayMode};
use phux_bench::stats::{Summary, paired_ratio, ratio, summarize};
use phux_bench::{core, payload, scale, throughput, tmux};

/// Benchmarks the phux server against a direct PTY drain, a minimal relay, tmux and dtach.
///
/// Loopback only. A full run takes a few minutes (under 10), `--quick` under 2. Needs tmux
/// and dtach for the comparisons (skipped with a note when absent).
#[derive(Debug, Parser)]
#[command(name = "phux-bench", version)]
struct Cli {
    #[command(subcommand)]
    role: Option<Role>,

    /// Small sizes and fewer operations (32 MiB transfers, 200 terminals).
    #[arg(long)]
    quick: bool,

    /// Also write every figure as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Run only these sections (comma-separated or repeated).
    #[arg(long, value_name = "NAME", value_enum, value_delimiter = ',')]
    only: Vec<Section>,

    /// MiB each throughput transfer writes (default 256, 32 with --quick).
    #[arg(long, value_name = "MIB")]
    mib: Option<u64>,

    /// Throughput rounds (each contender once per round). At least 7 by default.
    #[arg(long, value_name = "N")]
    rounds: Option<usize>,

    /// Terminals for the idle and full-screen memory figures (default 1000, 200 with --quick).
    #[arg(long, value_name = "N")]
    terminals: Option<usize>,

    /// Run this `phux-mio-server` binary instead of the same server code built into the bench.
    #[arg(long, value_name = "PATH")]
    server_bin: Option<PathBuf>,

    /// Run `cargo bench -p phux-proto -p phux-core` (short settings) before collecting its
    /// figures; otherwise the latest results on disk are read.
    #[arg(long)]
    run_criterion: bool,

    /// Where criterion's results are (default: the workspace's target/criterion).
    #[arg(long, value_name = "DIR")]
    criterion_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Section {
    /// 1. Output throughput to 1 and 8 clients.
    Throughput,
    /// 2. Acknowledged input (APPLY_INPUT) latency.
    Ack,
    /// 3. Keystroke-to-echo latency.
    Echo,
    /// 4. Memory per terminal and connection; APPLY_INPUT under load.
    Scale,
    /// 5. Criterion figures of phux-proto and phux-core.
    Core,
}

/// The helper roles the bench runs as copies of itself (hidden from --help).
#[derive(Debug, Subcommand)]
enum Role {
    #[command(name = "__serve", hide = true)]
    Serve {
        #[arg(long)]
        socket: PathBuf,
    },
    #[command(name = "__writer", hide = true)]
    Writer {
        #[arg(long)]
        lines: u64,
        #[arg(long)]
        hold: bool,
        #[arg(long)]
        end_marker: bool,
    },
    #[command(name = "__stream", hide = true)]
    Stream {
        #[arg(long)]
        rate: u64,
    },
    #[command(name = "__relay", hide = true)]
    Relay {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long, value_enum)]
        mode: RelayMode,
        #[arg(last = true)]
        argv: Vec<String>,
    },
}

/// Sizes and counts for one run.
#[derive(Debug, Clone)]
struct Plan {
    mib: u64,
    rounds: usize,
    lat_rounds: usize,
    lat_ops: usize,
    cmd_ops: usize,
    terminals: usize,
    history_terminals: usize,
    connections: usize,
    streams: usize,
    stream_rate: u64,
    load_rounds: usize,
    load_ops: usize,
}

impl Plan {
    fn new(cli: &Cli) -> Self {
        let mut p = if cli.quick {
            Self {
                mib: 32,
                rounds: 7,
                lat_rounds: 7,
                lat_ops: 200,
                cmd_ops: 10,
                terminals: 200,
                history_terminals: 20,
                connections: 200,
                streams: 100,
                stream_rate: 100 * 1024,
                load_rounds: 3,
                load_ops: 200,
            }
        } else {
            Self {
                mib: 256,
                rounds: 7,
                lat_rounds: 8,
                lat_ops: 1000,
                cmd_ops: 40,
                terminals: 1000,
                history_terminals: 100,
                connections: 1000,
                streams: 100,
                stream_rate: 100 * 1024,
                load_rounds: 4,
                load_ops: 500,
            }
        };
        if let Some(m) = cli.mib {
            p.mib = m.max(1);
        }
        if let Some(r) = cli.rounds {
            p.rounds = r.max(1);
        }
        if let Some(t) = cli.terminals {
            p.terminals = t.max(1);
            p.connections = t.max(1);
            p.history_terminals = (t / 10).max(1);
        }
        p
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.role {
        Some(Role::Serve { socket }) => roles::serve(socket),
        Some(Role::Writer {
            lines,
            hold,
            end_marker,
        }) => payload::writer(*lines, *hold, *end_marker),
        Some(Role::Stream { rate }) => payload::stream(*rate),
        Some(Role::Relay { socket, mode, argv }) => roles::relay(socket, *mode, argv),
        None => run(&cli),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("phux-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn wanted(cli: &Cli, s: Section) -> bool {
    cli.only.is_empty() || cli.only.contains(&s)
}

fn run(cli: &Cli) -> Result<()> {
    let plan = Plan::new(cli);
    let started = Instant::now();
    let mut report = Report::default();
    let have_tmux = tmux::installed("tmux", "-V");
    let have_dtach = tmux::installed("dtach", "--help");
    let nofile = roles::raise_nofile();
    println!(
        "phux-bench: {} mode, {} CPUs, open-file limit {nofile}",
        if cli.quick { "quick" } else { "full" },
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
    );
    let load_start = loadavg();
    println!("  load average at start: {load_start}");
    if !have_tmux {
        report.note("tmux is not installed (apt-get install -y tmux): its comparisons are skipped");
    }
    if !have_dtach {
        report.note("dtach is not installed (apt-get install -y dtach): its comparison is skipped");
    }
    report.json.insert(
        "plan".into(),
        json!({
            "quick": cli.quick, "mib": plan.mib, "rounds": plan.rounds,
            "latency_rounds": plan.lat_rounds, "latency_ops_per_round": plan.lat_ops,
            "terminals": plan.terminals, "history_terminals": plan.history_terminals,
            "connections": plan.connections, "streams": plan.streams,
            "stream_rate": plan.stream_rate,
        }),
    );
    let server_bin = cli.server_bin.as_deref();
    type SectionFn<'a> = &'a dyn Fn(&mut Report) -> Result<()>;
    let sections: [(Section, SectionFn<'_>); 5] = [
        (Section::Throughput, &|r| {
            section_throughput(r, &plan, server_bin, have_tmux, have_dtach)
        }),
        (Section::Ack, &|r| {
            section_ack(r, &plan, server_bin, have_tmux)
        }),
        (Section::Echo, &|r| {
            section_echo(r, &plan, server_bin, have_tmux)
        }),
        (Section::Scale, &|r| {
            section_scale(r, &plan, server_bin, have_tmux)
        }),
        (Section::Core, &|r| section_core(r, cli)),
    ];
    for (s, f) in sections {
        if wanted(cli, s) {
            let t0 = Instant::now();
            if let Err(e) = f(&mut report) {
                report.note(format!("section {s:?} stopped: {e}"));
            }
            println!("  ({s:?}: {:.1} s)", t0.elapsed().as_secs_f64());
        }
    }
    println!("\n== targets (from the benchmark issue) ==");
    print!("{}", report.targets_table());
    if !report.notes.is_empty() {
        println!("\nnotes:");
        for n in &report.notes {
            println!("- {n}");
        }
    }
    let load_end = loadavg();
    println!("\nload average at start: {load_start}; at end: {load_end}");
    report.json.insert(
        "loadavg".into(),
        json!({"start": load_start, "end": load_end}),
    );
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    report
        .json
        .insert("elapsed_s".into(), json!(started.elapsed().as_secs_f64()));
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
        std::fs::write(path, text).map_err(|source| error::Error::Io {
            what: format!("writing {}", path.display()),
            source,
        })?;
    }
    Ok(())
}

// ---- 1. throughput ----

const MIB: f64 = 1_048_576.0;

fn section_throughput(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    have_tmux: bool,
    have_dtach: bool,
) -> Result<()> {
    let lines = payload::lines_for(plan.mib << 20);
    println!(
        "\n== 1. output throughput: {} MiB of 80-column text ({} lines), {} rounds ==",
        plan.mib, lines, plan.rounds
    );
    let server = PhuxServer::start(server_bin)?;
    type Runner<'a> = Box<dyn Fn() -> Result<throughput::Run> + 'a>;
    let mut contenders: Vec<(&str, &str, Runner<'_>)> = vec![
        (
            "direct PTY drain",
            "the physical limit",
            Box::new(|| throughput::direct(lines)),
        ),
        (
            "minimal relay (socket)",
            "ref 0.91x",
            Box::new(|| throughput::relay(lines)),
        ),
        (
            "phux, 1 client",
            "target >= 0.85x",
            Box::new(|| throughput::phux(&server, lines, 1, true)),
        ),
        (
            "phux, 8 clients (each)",
            "target >= 0.8x",
            Box::new(|| throughput::phux(&server, lines, 8, false)),
        ),
    ];
    // tmux -C runs at a fraction of the limit and steadily so: a quarter of the transfer
    // gives the same rate and keeps a full run inside its time budget.
    let tmux_lines = (lines / 4).max(1);
    if have_tmux {
        contenders.push((
            "tmux -C (1/4 size)",
            "ref 0.25x",
            Box::new(move || throughput::tmux_control(tmux_lines, true)),
        ));
    }
    if have_tmux {
        contenders.push((
            "tmux, attached client",
            "ref 0.63x",
            Box::new(|| throughput::tmux_attached(lines)),
        ));
    }
    if have_dtach {
        contenders.push((
            "dtach -a",
            "ref 0.86x",
            Box::new(|| throughput::dtach(lines)),
        ));
    }
    // Each contender's run in each round, None where it failed: rounds stay aligned, so
    // each can be paired with the drain's.
    let mut runs: Vec<Vec<Option<throughput::Run>>> = vec![Vec::new(); contenders.len()];
    for round in 0..plan.rounds {
        for (i, (name, _, f)) in contenders.iter().enumerate() {
            let result = f();
            match &result {
                Ok(r) => {
                    let status = if r.complete() {
                        String::new()
                    } else {
                        format!(
                            " (INCOMPLETE: {} of {} bytes, {} tombstones)",
                            r.delivered, r.expected, r.tombstones
                        )
                    };
                    println!(
                        "  round {}: {name}: {:.1} MiB/s{status}",
                        round + 1,
                        r.rate() / MIB
                    );
                }
                Err(e) => println!("  round {}: {name}: failed: {e}", round + 1),
            }
            if let Some(v) = runs.get_mut(i) {
                v.push(result.ok());
            }
        }
    }
    let rates: Vec<Vec<Option<f64>>> = runs
        .iter()
        .map(|rs| {
            rs.iter()
                .map(|r| r.as_ref().map(|r| r.rate() / MIB))
                .collect()
        })
        .collect();
    let medians: Vec<Option<Summary>> = rates
        .iter()
        .map(|rs| summarize(&rs.iter().flatten().copied().collect::<Vec<_>>()))
        .collect();
    let base = medians.first().copied().flatten().map(|s| s.p50);
    let mut rows = Vec::new();
    let mut doc = serde_json::Map::new();
    let drain_rates = rates.first().map(Vec::as_slice).unwrap_or_default();
    let paired: Vec<Option<f64>> = rates
        .iter()
        .map(|rs| paired_ratio(rs, drain_rates))
        .collect();
    for ((name, reference, _), ((rs, m), pr)) in contenders
        .iter()
        .zip(runs.iter().zip(&medians).zip(&paired))
    {
        let rs: Vec<&throughput::Run> = rs.iter().flatten().collect();
        let complete = rs.iter().filter(|r| r.complete()).count();
        let screen: Vec<bool> = rs.iter().filter_map(|r| r.screen_ok).collect();
        let r = ratio(m.map(|s| s.p50), base);
        // The server's own cost, which a loaded machine does not distort the way it does
        // rates: CPU milliseconds per MiB of terminal output.
        let cpu = summarize(
            &rs.iter()
                .filter_map(|r| Some(r.server_cpu? * 1000.0 / (r.expected as f64 / MIB)))
                .collect::<Vec<_>>(),
        );
        rows.push(vec![
            (*name).to_owned(),
            fmt(m.map(|s| s.p50), 1),
            fmt(m.map(|s| s.min), 1),
            fmt(m.map(|s| s.max), 1),
            r.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            pr.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            fmt(cpu.map(|s| s.p50), 2),
            format!("{complete}/{}", rs.len()),
            if screen.is_empty() {
                "-".into()
            } else {
                format!("{}/{}", screen.iter().filter(|b| **b).count(), screen.len())
            },
            (*reference).to_owned(),
        ]);
        doc.insert(
            (*name).to_owned(),
            json!({
                "median_mib_s": m.map(|s| s.p50), "min_mib_s": m.map(|s| s.min),
                "max_mib_s": m.map(|s| s.max), "ratio_to_drain": r,
                "paired_ratio_to_drain": pr,
                "complete_runs": complete, "runs": rs.len(),
                "screen_and_bootstrap_ok": screen,
                "secs": rs.iter().map(|r| r.secs).collect::<Vec<_>>(),
                "delivered": rs.iter().map(|r| r.delivered).collect::<Vec<_>>(),
                "tombstones": rs.iter().map(|r| r.tombstones).collect::<Vec<_>>(),
                "expected": rs.first().map(|r| r.expected),
                "server_cpu_ms_per_mib": cpu.map(|s| s.p50),
            }),
        );
    }
    print!(
        "{}",
        table(
            &[
                "contender",
                "MiB/s p50",
                "min",
                "max",
                "vs drain",
                "paired",
                "srv CPU ms/MiB",
                "complete",
                "screen ok",
                "issue"
            ],
            &rows
        )
    );
    // The drain is the limit only if it is not itself an outlier: say so when it is.
    if let Some(drain) = medians.first().copied().flatten() {
        let fastest = contenders
            .iter()
            .zip(&medians)
            .skip(1)
            .filter_map(|(c, m)| Some((c.0, m.as_ref()?.p50)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some(note) =
            fastest.and_then(|(name, p50)| throughput::slow_drain_note(&drain, name, p50))
        {
            report.note(note);
        }
    }
    let paired_of = |name: &str| {
        contenders
            .iter()
            .position(|c| c.0 == name)
            .and_then(|i| paired.get(i).copied().flatten())
    };
    report.target(
        "output to 1 client / direct drain (paired)",
        paired_of("phux, 1 client"),
        Op::AtLeast,
        0.85,
    );
    report.target(
        "output to 8 clients (each) / direct drain (paired)",
        paired_of("phux, 8 clients (each)"),
        Op::AtLeast,
        0.8,
    );
    // The runs of the contender at `i` that did not fail; None when every one failed.
    let done = |i: usize| {
        let rs: Vec<&throughput::Run> = runs.get(i)?.iter().flatten().collect();
        (!rs.is_empty()).then_some(rs)
    };
    report.target(
        "phux 1-client runs with a wrong screen/bootstrap",
        done(2).map(|rs| rs.iter().filter(|r| r.screen_ok == Some(false)).count() as f64),
        Op::AtMost,
        0.0,
    );
    // No loss at exit: the 8-client runs' writer exits right after its payload. A viewer
    // that fell a whole output budget behind is told so (BOOTSTRAP_TOMBSTONE, then a fresh
    // bootstrap): that is the protocol's slow-reader rule, counted apart from silent loss.
    let eight = done(3);
    let lost: Option<f64> = eight.as_ref().map(|rs| {
        rs.iter()
            .filter(|r| r.tombstones == 0)
            .map(|r| r.expected.saturating_sub(r.delivered) as f64)
            .sum()
    });
    report.target(
        "phux bytes silently lost when the child exits (8-client runs)",
        lost,
        Op::AtMost,
        0.0,
    );
    report.target(
        "phux 8-client runs with a slow viewer tombstoned",
        eight.map(|rs| rs.iter().filter(|r| r.tombstones > 0).count() as f64),
        Op::AtMost,
        0.0,
    );
    if have_tmux {
        match throughput::tmux_control(tmux_lines, false) {
            Ok(r) => {
                let lost = r.expected.saturating_sub(r.delivered);
                println!(
                    "  tmux -C when the child exits at once: {} of {} bytes delivered ({} lost)",
                    r.delivered, r.expected, lost
                );
                doc.insert(
                    "tmux -C, child exits".into(),
                    json!({"delivered": r.delivered, "expected": r.expected, "lost": lost}),
                );
            }
            Err(e) => report.note(format!("tmux exit check failed: {e}")),
        }
    }
    report
        .json
        .insert("throughput".into(), serde_json::Value::Object(doc));
    Ok(())
}

// ---- 2. acknowledged input ----

fn summary_json(s: Option<Summary>) -> serde_json::Value {
    s.map_or(
        serde_json::Value::Null,
        |s| json!({"n": s.n, "p50_us": s.p50, "p99_us": s.p99, "min_us": s.min, "max_us": s.max}),
    )
}

fn latency_rows(
    names: &[&str],
    sums: &[Option<Summary>],
    base: Option<Summary>,
    refs: &[&str],
) -> Vec<Vec<String>> {
    names
        .iter()
        .zip(sums)
        .zip(refs)
        .map(|((name, s), reference)| {
            vec![
                (*name).to_owned(),
                s.map_or_else(|| "-".into(), |s| s.n.to_string()),
                fmt(s.map(|s| s.p50), 1),
                fmt(s.map(|s| s.p99), 1),
                ratio(s.map(|s| s.p50), base.map(|b| b.p50))
                    .map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
                ratio(s.map(|s| s.p99), base.map(|b| b.p99))
                    .map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
                (*reference).to_owned(),
            ]
        })
        .collect()
}

fn section_ack(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    have_tmux: bool,
) -> Result<()> {
    println!(
        "\n== 2. acknowledged input: APPLY_INPUT of {} key presses -> OK; {} rounds x {} ops ==",
        latency::BATCH.len(),
        plan.lat_rounds,
        plan.lat_ops
    );
    let server = PhuxServer::start(server_bin)?;
    let mut phux = PhuxTerm::start(&server, &sink_argv())?;
    let mut ack = Relay::start(RelayMode::Ack, &sink_argv())?;
    let mut pong = Relay::start(RelayMode::Pong, &[])?;
    let mut direct = DirectPty::start(&sink_argv())?;
    let mut tmux = if have_tmux {
        Some(TmuxTerm::start(&sink_argv())?)
    } else {
        None
    };
    latency::warm_up();
    let req = latency::BATCH.as_bytes();
    // Untimed priming: first round trips fault in code and settle CPU placement.
    for _ in 0..20 {
        phux.apply()?;
        ack.round_trip(req, 1)?;
        pong.round_trip(req, 1)?;
        direct.write(req)?;
        if let Some(t) = tmux.as_mut() {
            t.send_keys_ack()?;
        }
    }
    let mut s: [Vec<f64>; 6] = Default::default();
    for _ in 0..plan.lat_rounds {
        for _ in 0..plan.lat_ops {
            s[0].push(phux.apply()?);
        }
        for _ in 0..plan.lat_ops {
            s[1].push(ack.round_trip(req, 1)?);
        }
        for _ in 0..plan.lat_ops {
            s[2].push(pong.round_trip(req, 1)?);
        }
        for _ in 0..plan.lat_ops {
            s[3].push(direct.write(req)?);
        }
        if let Some(t) = tmux.as_mut() {
            for _ in 0..plan.lat_ops {
                s[4].push(t.send_keys_ack()?);
            }
            for _ in 0..plan.cmd_ops {
                s[5].push(t.send_keys_command()?);
            }
        }
    }
    let sums: Vec<Option<Summary>> = s.iter().map(|v| summarize(v)).collect();
    let names = [
        "phux APPLY_INPUT -> OK",
        "relay: socket req + PTY write + reply",
        "socket round trip alone",
        "direct PTY write alone",
        "tmux -C send-keys -> %end",
        "tmux send-keys (command)",
    ];
    let refs = [
        "",
        "the limit",
        "ref ~8 us",
        "",
        "ref ~18 us",
        "ref ~1.7 ms",
    ];
    let base = sums[1];
    println!("  (ratios are to the relay: one process doing socket read, PTY write, reply)");
    print!(
        "{}",
        table(
            &[
                "contender",
                "n",
                "p50 us",
                "p99 us",
                "p50 vs limit",
                "p99 vs limit",
                "issue"
            ],
            &latency_rows(&names, &sums, base, &refs)
        )
    );
    let sum_p50 = match (sums[2], sums[3]) {
        (Some(a), Some(b)) => Some(a.p50 + b.p50),
        _ => None,
    };
    println!(
        "  socket round trip p50 + PTY write p50 = {} us",
        fmt(sum_p50, 1)
    );
    let p50 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p50);
    let p99 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p99);
    report.target(
        "APPLY_INPUT p50 / tmux -C %end p50",
        ratio(p50(0), p50(4)),
        Op::AtMost,
        1.0,
    );
    report.target(
        "APPLY_INPUT p50 / relay (socket RTT + PTY write) p50",
        ratio(p50(0), p50(1)),
        Op::AtMost,
        1.5,
    );
    report.target(
        "APPLY_INPUT p99 / relay (socket RTT + PTY write) p99",
        ratio(p99(0), p99(1)),
        Op::AtMost,
        2.5,
    );
    report.target(
        "tmux send-keys command p50 / APPLY_INPUT p50",
        ratio(p50(5), p50(0)),
        Op::AtLeast,
        20.0,
    );
    let mut doc = serde_json::Map::new();
    for (name, s) in names.iter().zip(&sums) {
        doc.insert((*name).to_owned(), summary_json(*s));
    }
    doc.insert("socket_rtt_plus_pty_write_p50_us".into(), json!(sum_p50));
    report
        .json
        .insert("ack_latency".into(), serde_json::Value::Object(doc));
    Ok(())
}

// ---- 3. keystroke to echo ----

fn section_echo(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    have_tmux: bool,
) -> Result<()> {
    println!(
        "\n== 3. keystroke to echo: INPUT_KEY -> TERMINAL_OUTPUT from `stty raw -echo; cat`; {} rounds x {} ops ==",
        plan.lat_rounds, plan.lat_ops
    );
    let server = PhuxServer::start(server_bin)?;
    let mut phux = PhuxTerm::start(&server, &echo_argv())?;
    let mut relay = Relay::start(RelayMode::Echo, &echo_argv())?;
    let mut direct = DirectPty::start(&echo_argv())?;
    let mut tmux = if have_tmux {
        Some(TmuxTerm::start(&echo_argv())?)
    } else {
        None
    };
    latency::warm_up();
    direct.drain()?;
    for i in 0..20 {
        let c = letter(i);
        phux.echo(c)?;
        relay.round_trip(&[c as u8], 1)?;
        direct.echo(c)?;
        if let Some(t) = tmux.as_mut() {
            t.echo(c)?;
        }
    }
    let mut s: [Vec<f64>; 4] = Default::default();
    let mut i = 0usize;
    for _ in 0..plan.lat_rounds {
        for _ in 0..plan.lat_ops {
            s[0].push(phux.echo(letter(i))?);
            i += 1;
        }
        for _ in 0..plan.lat_ops {
            s[1].push(relay.round_trip(&[letter(i) as u8], 1)?);
            i += 1;
        }
        for _ in 0..plan.lat_ops {
            s[2].push(direct.echo(letter(i))?);
            i += 1;
        }
        if let Some(t) = tmux.as_mut() {
            for _ in 0..plan.lat_ops {
                s[3].push(t.echo(letter(i))?);
                i += 1;
            }
        }
    }
    let sums: Vec<Option<Summary>> = s.iter().map(|v| summarize(v)).collect();
    let names = [
        "phux INPUT_KEY -> echo",
        "minimal relay (socket<->PTY)",
        "direct PTY write -> read",
        "tmux -C send-keys -> %output",
    ];
    let refs = ["", "ref 2.3x PTY", "ref ~32 us", "ref 2.2x PTY"];
    let base = sums[1];
    println!("  (ratios are to the minimal relay)");
    print!(
        "{}",
        table(
            &[
                "contender",
                "n",
                "p50 us",
                "p99 us",
                "p50 vs relay",
                "p99 vs relay",
                "issue"
            ],
            &latency_rows(&names, &sums, base, &refs)
        )
    );
    let p50 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p50);
    let p99 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p99);
    println!(
        "  relay / direct PTY p50: {}x, tmux -C / direct PTY p50: {}x",
        fmt(ratio(p50(1), p50(2)), 2),
        fmt(ratio(p50(3), p50(2)), 2)
    );
    report.target(
        "echo p50 / tmux -C send-keys echo p50",
        ratio(p50(0), p50(3)),
        Op::AtMost,
        1.0,
    );
    report.target(
        "echo p50 / minimal relay p50",
        ratio(p50(0), p50(1)),
        Op::AtMost,
        1.1,
    );
    report.target(
        "echo p99 / minimal relay p99",
        ratio(p99(0), p99(1)),
        Op::AtMost,
        2.0,
    );
    let mut doc = serde_json::Map::new();
    for (name, s) in names.iter().zip(&sums) {
        doc.insert((*name).to_owned(), summary_json(*s));
    }
    report
        .json
        .insert("echo_latency".into(), serde_json::Value::Object(doc));
    Ok(())
}

// ---- 4. scale ----

fn section_scale(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    have_tmux: bool,
) -> Result<()> {
    use phux_bench::scale::Fill;
    println!(
        "\n== 4. scale: {} terminals ({} with history), {} connections, {} streams ==",
        plan.terminals, plan.history_terminals, plan.connections, plan.streams
    );
    let dir = tempfile::tempdir().map_err(|source| error::Error::Io {
        what: "scratch directory".into(),
        source,
    })?;
    let mut rows = Vec::new();
    let mut doc = serde_json::Map::new();
    for fill in [Fill::Idle, Fill::Screen, Fill::History] {
        let count = if fill == Fill::History {
            plan.history_terminals
        } else {
            plan.terminals
        };
        let phux = scale::phux_per_terminal(server_bin, fill, count, dir.path());
        let tmux = have_tmux.then(|| scale::tmux_per_window(fill, count, dir.path()));
        let p = match phux {
            Ok(v) => Some(v),
            Err(e) => {
                report.note(format!("phux {} memory: {e}", fill.name()));
                None
            }
        };
        let t = match tmux {
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                report.note(format!("tmux {} memory: {e}", fill.name()));
                None
            }
            None => None,
        };
        rows.push(vec![
            format!("{} x{count}", fill.name()),
            fmt(p, 1),
            fmt(t, 1),
            ratio(p, t).map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
        ]);
        doc.insert(
            fill.name().to_owned(),
            json!({"count": count, "phux_kib": p, "tmux_kib": t, "ratio": ratio(p, t)}),
        );
        match fill {
            Fill::Idle => report.target("idle terminal, KiB of server RSS", p, Op::AtMost, 64.0),
            Fill::Screen => report.target(
                "full-screen terminal: phux KiB / tmux KiB",
                ratio(p, t),
                Op::AtMost,
                1.0,
            ),
            Fill::History => report.target(
                "2,000-line history: phux KiB / tmux KiB",
                ratio(p, t),
                Op::AtMost,
                1.0,
            ),
        }
    }
    println!("  memory per terminal (server RSS delta / count):");
    print!(
        "{}",
        table(
            &[
                "terminals holding",
                "phux KiB",
                "tmux KiB/pane",
                "phux/tmux"
            ],
            &rows
        )
    );
    println!(
        "  (issue reference for tmux: ~4 KiB idle, ~16 KiB full screen, ~856 KiB with history)"
    );
    match scale::phux_per_connection(server_bin, plan.connections) {
        Ok(kib) => {
            println!(
                "  {} connections after HELLO: {kib:.1} KiB each",
                plan.connections
            );
            doc.insert("connection_kib".into(), json!(kib));
        }
        Err(e) => report.note(format!("connection memory: {e}")),
    }
    match scale::apply_under_load(
        server_bin,
        plan.streams,
        plan.stream_rate,
        plan.load_rounds,
        plan.load_ops,
    ) {
        Ok(l) => {
            let (q, b) = (summarize(&l.quiet), summarize(&l.loaded));
            let rate = l.streamed as f64 / l.loaded_secs.max(1e-9) / MIB;
            println!(
                "  APPLY_INPUT with {} terminals frozen: p50 {} us, p99 {} us, max {} us;\n  \
                 streaming ({rate:.1} MiB/s in total to one attached reader): p50 {} us, p99 {} us, max {} us",
                plan.streams,
                fmt(q.map(|s| s.p50), 1),
                fmt(q.map(|s| s.p99), 1),
                fmt(q.map(|s| s.max), 1),
                fmt(b.map(|s| s.p50), 1),
                fmt(b.map(|s| s.p99), 1),
                fmt(b.map(|s| s.max), 1),
            );
            doc.insert(
                "apply_under_load".into(),
                json!({"streams": plan.streams, "rate_per_stream": plan.stream_rate,
                       "streamed_mib_s": rate, "quiet": summary_json(q), "loaded": summary_json(b)}),
            );
        }
        Err(e) => report.note(format!("APPLY_INPUT under load: {e}")),
    }
    report
        .json
        .insert("scale".into(), serde_json::Value::Object(doc));
    Ok(())
}

// ---- 5. core ----

fn section_core(report: &mut Report, cli: &Cli) -> Result<()> {
    println!("\n== 5. core: criterion figures of phux-proto and phux-core ==");
    if cli.run_criterion {
        core::run_criterion()?;
    }
    let dir = cli
        .criterion_dir
        .clone()
        .unwrap_or_else(core::default_criterion_dir);
    let figs = core::collect(&dir);
    if figs.is_empty() {
        report.note(format!(
            "no criterion results under {}; run with --run-criterion (or cargo bench -p phux-proto -p phux-core)",
            dir.display()
        ));
        return Ok(());
    }
    let rows: Vec<Vec<String>> = figs
        .iter()
        .map(|f| vec![f.id.clone(), format_ns(f.median_ns), fmt(f.mib_per_s(), 1)])
        .collect();
    print!("{}", table(&["benchmark", "median", "MiB/s"], &rows));
    let doc: Vec<serde_json::Value> = figs
        .iter()
        .map(|f| json!({"id": f.id, "median_ns": f.median_ns, "mib_s": f.mib_per_s()}))
        .collect();
    report.json.insert("core".into(), json!(doc));
    Ok(())
}

/// /proc/loadavg's first three fields (the machine is shared; a busy one skews everything).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}
