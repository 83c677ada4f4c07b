//! `phux-bench`: the phux server against the physical limit of the machine and against tmux
//! and dtach, measured side by side in one run (loopback only, bounded in time).
//!
//! Each figure is taken against its baseline in the same run, round by round (A B A B), and
//! reported as medians, p99s and ratios next to the targets of the benchmark issue.
// Figures are statistics of timings and byte counts far below 2^52: the float conversions
// lose nothing that matters, and spelling each one out would bury the arithmetic.
#![allow(clippy::cast_precision_loss, clippy::cast_sign_loss)]

mod sections;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use phux_bench::error::{self, Result};
use phux_bench::report::Report;
use phux_bench::roles::{self, RelayMode};
use phux_bench::{payload, tmux};

use sections::{
    section_ack, section_commands, section_core, section_echo, section_hostile, section_scale,
    section_ssh, section_throughput, section_upgrade,
};

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

    /// With `--only hostile`: run only the attacks whose name contains this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    attack: Vec<String>,

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
    /// 6. APPLY_INPUT and echo through `ssh localhost ... bridge` (a loopback sshd of its own).
    Ssh,
    /// 7. The hostile world, each attack with an honest client alongside (`--only hostile`).
    Hostile,
    /// 8. The in-place upgrade of a loaded server (runs a built phux-mio-server binary).
    Upgrade,
    /// 9. SPAWN_TERMINAL and GET_SCREEN latency against the phux reference.
    Commands,
}

/// The helper roles the bench runs as copies of itself (hidden from --help).
#[derive(Debug, Subcommand)]
enum Role {
    #[command(name = "__serve", hide = true)]
    Serve {
        #[arg(long)]
        socket: PathBuf,
        /// Serve WebSocket clients too, on this loopback address (`phux-mio-server --listen-ws`).
        #[arg(long)]
        listen_ws: Option<std::net::SocketAddr>,
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
    /// `phux-mio-server bridge --socket`: the far side of the ssh section.
    #[command(name = "__bridge", hide = true)]
    Bridge {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        no_handoff: bool,
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
    /// How long section 3 watches the server's CPU with nothing to do.
    idle_watch: std::time::Duration,
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
                idle_watch: std::time::Duration::from_secs(3),
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
                idle_watch: std::time::Duration::from_secs(10),
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
        Some(Role::Serve { socket, listen_ws }) => roles::serve(socket, *listen_ws),
        Some(Role::Writer {
            lines,
            hold,
            end_marker,
        }) => payload::writer(*lines, *hold, *end_marker),
        Some(Role::Stream { rate }) => payload::stream(*rate),
        Some(Role::Relay { socket, mode, argv }) => roles::relay(socket, *mode, argv),
        Some(Role::Bridge { socket, no_handoff }) => {
            let mut args = vec!["phux-mio-server".into(), "bridge".into(), "--socket".into()];
            args.push(socket.clone().into_os_string());
            if *no_handoff {
                args.push("--no-handoff".into());
            }
            return phux_mio_server::run::main(args);
        }
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
    // The hostile section runs only when named: its attacks load the machine for minutes.
    (cli.only.is_empty() && s != Section::Hostile) || cli.only.contains(&s)
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
    let reference = match phux_bench::procs::reference_bin() {
        Ok(bin) => {
            println!("  the phux reference: {}", bin.display());
            Some(bin)
        }
        Err(why) => {
            report.note(format!(
                "{why}: the phux reference's comparisons are skipped"
            ));
            None
        }
    };
    let reference = reference.as_deref();
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
    // Absolute: the ssh section runs it in a login shell whose directory is the home one.
    let server_bin = cli
        .server_bin
        .as_deref()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()));
    let server_bin = server_bin.as_deref();
    type SectionFn<'a> = &'a dyn Fn(&mut Report) -> Result<()>;
    let sections: [(Section, SectionFn<'_>); 9] = [
        (Section::Throughput, &|r| {
            section_throughput(r, &plan, server_bin, reference, have_tmux, have_dtach)
        }),
        (Section::Ack, &|r| {
            section_ack(r, &plan, server_bin, reference, have_tmux)
        }),
        (Section::Echo, &|r| {
            section_echo(r, &plan, server_bin, reference, have_tmux)
        }),
        (Section::Scale, &|r| {
            section_scale(r, &plan, server_bin, reference, have_tmux)
        }),
        (Section::Core, &|r| section_core(r, cli)),
        (Section::Ssh, &|r| section_ssh(r, &plan, server_bin)),
        (Section::Hostile, &|r| {
            section_hostile(r, server_bin, &cli.attack);
            Ok(())
        }),
        (Section::Upgrade, &|r| section_upgrade(r, server_bin)),
        (Section::Commands, &|r| {
            section_commands(r, &plan, server_bin, reference)
        }),
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

/// /proc/loadavg's first three fields (the machine is shared; a busy one skews everything).
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
