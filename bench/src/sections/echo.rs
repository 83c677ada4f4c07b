//! Section 3, echo: keystroke-to-echo latency.

use phux_bench::error::Result;
use phux_bench::latency::{self, DirectPty, PhuxTerm, Relay, TmuxTerm, echo_argv, letter};
use phux_bench::procs::{PhuxServer, SchedCounts};
use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::roles::RelayMode;
use phux_bench::stats::{Summary, ratio, summarize};

use super::{latency_rows, sched_json, summary_json};
use crate::Plan;

pub(crate) fn section_echo(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    reference: Option<&std::path::Path>,
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
    let ref_server = reference.map(PhuxServer::start_reference).transpose()?;
    let mut theirs = ref_server
        .as_ref()
        .map(|r| PhuxTerm::start(r, &echo_argv()))
        .transpose()?;
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
        if let Some(t) = theirs.as_mut() {
            t.echo(c)?;
        }
    }
    // As in section 2: what the scheduler did to our server and to the relay, per keystroke.
    let sched_pids = [server.pid(), relay.pid()];
    let sched_before = sched_pids.map(SchedCounts::of);
    let mut s: [Vec<f64>; 5] = Default::default();
    let mut i = 0usize;
    for _ in 0..plan.lat_rounds {
        for _ in 0..plan.lat_ops {
            s[0].push(phux.echo(letter(i))?);
            i += 1;
        }
        if let Some(t) = theirs.as_mut() {
            for _ in 0..plan.lat_ops {
                s[4].push(t.echo(letter(i))?);
                i += 1;
            }
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
    let sched_after = sched_pids.map(SchedCounts::of);
    let sums: Vec<Option<Summary>> = s.iter().map(|v| summarize(v)).collect();
    let names = [
        "phux INPUT_KEY -> echo",
        "minimal relay (socket<->PTY)",
        "direct PTY write -> read",
        "tmux -C send-keys -> %output",
        "phux 0.22.0 INPUT_KEY -> echo",
    ];
    let refs = [
        "",
        "ref 2.3x PTY",
        "ref ~32 us",
        "ref 2.2x PTY",
        "ours <= it",
    ];
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
    let sched = sched_json(&[
        ("phux", sched_before[0], sched_after[0], s[0].len()),
        ("relay", sched_before[1], sched_after[1], s[1].len()),
    ]);
    let idle = idle_cpu(&server, plan.idle_watch);
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
        1.05,
    );
    report.target(
        "echo p50 / phux 0.22.0 echo p50",
        ratio(p50(0), p50(4)),
        Op::AtMost,
        1.0,
    );
    report.target(
        "echo p99 / minimal relay p99",
        ratio(p99(0), p99(1)),
        Op::AtMost,
        2.0,
    );
    // [SERVER.LOOP.3] A busy-poll follows requests only: nothing to do, no CPU.
    report.target(
        "server CPU while idle (client attached, terminal silent), ms per s",
        idle,
        Op::AtMost,
        1.0,
    );
    let mut doc = serde_json::Map::new();
    for (name, s) in names.iter().zip(&sums) {
        doc.insert((*name).to_owned(), summary_json(*s));
    }
    doc.insert("scheduler_per_op".into(), sched);
    doc.insert("idle_server_cpu_ms_per_s".into(), serde_json::json!(idle));
    report
        .json
        .insert("echo_latency".into(), serde_json::Value::Object(doc));
    Ok(())
}

/// The server's CPU time per second of `watch` after the timed rounds, its client still
/// attached and the terminal silent: what the server costs while nobody types. `None` where
/// /proc has no counts.
fn idle_cpu(server: &PhuxServer, watch: std::time::Duration) -> Option<f64> {
    // Past any busy-poll or deferred work the last keystroke started.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let before = SchedCounts::of(server.pid());
    std::thread::sleep(watch);
    let after = SchedCounts::of(server.pid());
    let per_s = after
        .zip(before)
        .map(|(a, b)| (a.cpu_ms - b.cpu_ms) / watch.as_secs_f64());
    let ms = fmt(per_s, 3);
    println!(
        "  server CPU while idle over {:.0} s (client attached, terminal silent): {ms} ms per s",
        watch.as_secs_f64()
    );
    per_s
}
