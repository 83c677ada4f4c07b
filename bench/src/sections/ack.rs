//! Section 2, ack: acknowledged input (APPLY_INPUT) latency.

use serde_json::json;

use phux_bench::error::Result;
use phux_bench::latency::{self, DirectPty, PhuxTerm, Relay, TmuxTerm, sink_argv};
use phux_bench::procs::{PhuxServer, SchedCounts};
use phux_bench::report::{Op, Report, fmt};
use phux_bench::roles::RelayMode;
use phux_bench::stats::{Summary, ratio, summarize};

use super::{latency_table, sched_json, summary_json};
use crate::Plan;

pub(crate) fn section_ack(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    reference: Option<&std::path::Path>,
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
    // The reference server stays up as long as its terminal.
    let ref_server = reference.map(PhuxServer::start_reference).transpose()?;
    let mut theirs = ref_server
        .as_ref()
        .map(|r| PhuxTerm::start(r, &sink_argv()))
        .transpose()?;
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
        if let Some(t) = theirs.as_mut() {
            t.apply()?;
        }
    }
    // What the scheduler did to our server and to the relay over the timed rounds: each serves
    // only its own operations, so its counts divided by theirs are per operation.
    let sched_pids = [server.pid(), ack.pid()];
    let sched_before = sched_pids.map(SchedCounts::of);
    let mut s: [Vec<f64>; 7] = Default::default();
    for _ in 0..plan.lat_rounds {
        for _ in 0..plan.lat_ops {
            s[0].push(phux.apply()?);
        }
        if let Some(t) = theirs.as_mut() {
            for _ in 0..plan.lat_ops {
                s[6].push(t.apply()?);
            }
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
    let sched_after = sched_pids.map(SchedCounts::of);
    let sums: Vec<Option<Summary>> = s.iter().map(|v| summarize(v)).collect();
    let names = [
        "phux APPLY_INPUT -> OK",
        "relay: socket req + PTY write + reply",
        "socket round trip alone",
        "direct PTY write alone",
        "tmux -C send-keys -> %end",
        "tmux send-keys (command)",
        "phux 0.22.0 APPLY_INPUT -> OK",
    ];
    let refs = [
        "",
        "the limit",
        "ref ~8 us",
        "",
        "ref ~18 us",
        "ref ~1.7 ms",
        "ours <= it",
    ];
    let base = sums[1];
    println!("  (ratios are to the relay: one process doing socket read, PTY write, reply)");
    print!("{}", latency_table(&names, &sums, base, &refs));
    let sum_p50 = match (sums[2], sums[3]) {
        (Some(a), Some(b)) => Some(a.p50 + b.p50),
        _ => None,
    };
    println!(
        "  socket round trip p50 + PTY write p50 = {} us",
        fmt(sum_p50, 1)
    );
    let sched = sched_json(&[
        ("phux", sched_before[0], sched_after[0], s[0].len()),
        ("relay", sched_before[1], sched_after[1], s[1].len()),
    ]);
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
        1.2,
    );
    report.target(
        "APPLY_INPUT p50 / phux 0.22.0 APPLY_INPUT p50",
        ratio(p50(0), p50(6)),
        Op::AtMost,
        1.0,
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
    doc.insert("scheduler_per_op".into(), sched);
    report
        .json
        .insert("ack_latency".into(), serde_json::Value::Object(doc));
    Ok(())
}
