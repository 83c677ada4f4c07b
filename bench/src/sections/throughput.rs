//! Section 1, throughput: output to 1 and 8 clients, the phux server against a direct PTY
//! drain, a minimal relay, tmux and dtach, round by round.

use serde_json::json;

use phux_bench::error::Result;
use phux_bench::procs::PhuxServer;
use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::stats::{Summary, paired_ratio, ratio, summarize};
use phux_bench::throughput::Reader;
use phux_bench::{payload, throughput};

use super::MIB;
use crate::Plan;

const PHUX_1: &str = "phux, 1 client";
const PHUX_8: &str = "phux, 8 clients (each)";
const PHUX_1_SLOW: &str = "phux, 1 slow client";
const PHUX_8_SLOW: &str = "phux, 8 slow clients (each)";
const REF_1: &str = "phux 0.22.0, 1 client";
const REF_8: &str = "phux 0.22.0, 8 clients (each)";
const REF_1_SLOW: &str = "phux 0.22.0, 1 slow client";
const REF_8_SLOW: &str = "phux 0.22.0, 8 slow clients (each)";

pub(crate) fn section_throughput(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    reference: Option<&std::path::Path>,
    have_tmux: bool,
    have_dtach: bool,
) -> Result<()> {
    let lines = payload::lines_for(plan.mib << 20);
    println!(
        "\n== 1. output throughput: {} MiB of 80-column text ({} lines), {} rounds ==",
        plan.mib, lines, plan.rounds
    );
    let server = PhuxServer::start(server_bin)?;
    let reference = reference.map(PhuxServer::start_reference).transpose()?;
    let slow = Reader::Slow(throughput::SLOW_FRAME_COST);
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
    ];
    // Ours and the reference side by side, for each kind of reader and number of viewers:
    // (ours' row, the reference's row, what the issue asks of ours, viewers, a holding writer,
    // the reader). Each reference row runs right after ours in every round.
    let pairs = [
        (PHUX_1, REF_1, "target >= 0.95x", 1, true, Reader::Fast),
        (PHUX_8, REF_8, "target >= 0.8x", 8, false, Reader::Fast),
        (PHUX_1_SLOW, REF_1_SLOW, ">= reference", 1, true, slow),
        (PHUX_8_SLOW, REF_8_SLOW, ">= reference", 8, false, slow),
    ];
    for (ours, theirs, target, clients, hold, reader) in pairs {
        let server = &server;
        contenders.push((
            ours,
            target,
            Box::new(move || throughput::phux(server, lines, clients, hold, reader)),
        ));
        if let Some(r) = &reference {
            contenders.push((
                theirs,
                "ours >= it",
                Box::new(move || throughput::phux(r, lines, clients, hold, reader)),
            ));
        }
    }
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
        // How the stream was cut into frames (the first viewer's, over all rounds): what a
        // reader that pays per frame pays for.
        let frames: u64 = rs.iter().filter_map(|r| r.frames).sum();
        let small: u64 = rs.iter().filter_map(|r| r.small_frames).sum();
        let framed: u64 = rs
            .iter()
            .filter(|r| r.frames.is_some())
            .map(|r| r.delivered)
            .sum();
        let frame_kib = (frames > 0).then(|| framed as f64 / frames as f64 / 1024.0);
        let small_pct = (frames > 0).then(|| small as f64 * 100.0 / frames as f64);
        rows.push(vec![
            (*name).to_owned(),
            fmt(m.map(|s| s.p50), 1),
            fmt(m.map(|s| s.min), 1),
            fmt(m.map(|s| s.max), 1),
            r.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            pr.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            fmt(cpu.map(|s| s.p50), 2),
            fmt(frame_kib, 1),
            fmt(small_pct, 1),
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
                "frames": rs.iter().map(|r| r.frames).collect::<Vec<_>>(),
                "small_frames": rs.iter().map(|r| r.small_frames).collect::<Vec<_>>(),
                "mean_frame_kib": frame_kib, "small_frame_pct": small_pct,
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
                "frame KiB",
                "<512 B %",
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
    let at = |name: &str| contenders.iter().position(|c| c.0 == name);
    let paired_of = |name: &str| at(name).and_then(|i| paired.get(i).copied().flatten());
    report.target(
        "output to 1 client / direct drain (paired)",
        paired_of(PHUX_1),
        Op::AtLeast,
        0.95,
    );
    report.target(
        "output to 8 clients (each) / direct drain (paired)",
        paired_of(PHUX_8),
        Op::AtLeast,
        0.8,
    );
    // Ours against the reference, round by round: the rounds' own ratios, as for the drain.
    if reference.is_some() {
        let mut vs = Vec::new();
        for (ours, theirs, _, _, _, _) in pairs {
            let rates_of = |name| at(name).and_then(|i| rates.get(i));
            let r = match (rates_of(ours), rates_of(theirs)) {
                (Some(a), Some(b)) => paired_ratio(a, b),
                _ => None,
            };
            vs.push(vec![
                ours.trim_start_matches("phux, ").to_owned(),
                r.map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
            ]);
            doc.insert(format!("{ours} / {theirs} (paired)"), json!(r));
            report.target(
                format!(
                    "output, {} / phux 0.22.0 (paired)",
                    ours.trim_start_matches("phux, ")
                ),
                r,
                Op::AtLeast,
                1.0,
            );
        }
        println!("  ours / phux 0.22.0, the median of the rounds' ratios:");
        print!("{}", table(&["viewers", "ours / reference"], &vs));
    }
    // The runs of a contender that did not fail; None when every one failed.
    let done = |name: &str| {
        let rs: Vec<&throughput::Run> = runs.get(at(name)?)?.iter().flatten().collect();
        (!rs.is_empty()).then_some(rs)
    };
    let screen_wrong = |name: &str| {
        done(name).map(|rs| rs.iter().filter(|r| r.screen_ok == Some(false)).count() as f64)
    };
    report.target(
        "phux 1-client runs with a wrong screen/bootstrap",
        match (screen_wrong(PHUX_1), screen_wrong(PHUX_1_SLOW)) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        },
        Op::AtMost,
        0.0,
    );
    // No loss at exit: the 8-client runs' writer exits right after its payload. A viewer
    // that fell a whole output budget behind is told so (BOOTSTRAP_TOMBSTONE, then a fresh
    // bootstrap): that is the protocol's slow-reader rule, counted apart from silent loss.
    let eight: Option<Vec<&throughput::Run>> = match (done(PHUX_8), done(PHUX_8_SLOW)) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, b) => a.or(b),
    };
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
