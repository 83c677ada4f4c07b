//! Section 6, hostile, over WebSocket: each attack on the `--listen-ws` listener against a
//! fresh server, with an honest page-like client and a newcomer alongside, read as ratios to
//! the same client with no attacker in the same run (see `phux_bench::hostile_ws`).

use serde_json::json;

use phux_bench::hostile_ws::{NONE, WsOutcome, measure_ws, ws_attacks};
use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::stats::{Summary, ratio, summarize};

use super::summary_json;

/// The bounds for the honest client during an attack, in ms (as over the socket).
const P99_BOUND_MS: f64 = 100.0;
const MAX_BOUND_MS: f64 = 250.0;

/// Runs the WebSocket attacks whose report name (`ws: NAME`) passes `wanted`, between two
/// runs of the baseline.
pub(crate) fn section_hostile_ws(
    report: &mut Report,
    server_bin: Option<&std::path::Path>,
    wanted: &dyn Fn(&str) -> bool,
) {
    let chosen: Vec<_> = ws_attacks()
        .into_iter()
        .filter(|a| a.name != NONE && wanted(&format!("ws: {}", a.name)))
        .collect();
    if chosen.is_empty() {
        return;
    }
    println!(
        "\n== 6b. hostile over WebSocket: each attack with an honest page typing into cat and a \
         newcomer every 200 ms =="
    );
    let Some(none) = ws_attacks().into_iter().find(|a| a.name == NONE) else {
        return;
    };
    let mut outcomes = Vec::new();
    for attack in std::iter::once(&none)
        .chain(chosen.iter())
        .chain(std::iter::once(&none))
    {
        match measure_ws(server_bin, attack) {
            Ok(o) => {
                println!("  {}: {:.1} s", o.name, o.duration.as_secs_f64());
                outcomes.push(o);
            }
            Err(e) => report.note(format!("hostile ws {}: {e}", attack.name)),
        }
    }
    // The baseline: both runs of `none`, their samples pooled.
    let pooled = |pick: fn(&WsOutcome) -> &Vec<f64>| {
        let all: Vec<f64> = outcomes
            .iter()
            .filter(|o| o.name == NONE)
            .flat_map(|o| pick(o).iter().copied())
            .collect();
        summarize(&all)
    };
    let (base_ack, base_echo) = (pooled(|o| &o.ack), pooled(|o| &o.echo));
    let mut rows = Vec::new();
    let mut doc = serde_json::Map::new();
    let mut baseline_rows = 0;
    for o in &outcomes {
        let (ack, echo, joined) = (summarize(&o.ack), summarize(&o.echo), summarize(&o.joined));
        let ms = |s: Option<Summary>, f: fn(&Summary) -> f64| s.map(|s| f(&s) / 1000.0);
        let x = |s: Option<Summary>, b: Option<Summary>, f: fn(&Summary) -> f64| {
            ratio(s.map(|s| f(&s)), b.map(|b| f(&b)))
                .map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
        };
        let mib = |kib: u64| kib as f64 / 1024.0;
        let max = ack
            .map(|a| a.max)
            .into_iter()
            .chain(echo.map(|e| e.max))
            .reduce(f64::max)
            .map(|us| us / 1000.0);
        let label = if o.name == NONE {
            baseline_rows += 1;
            format!("{NONE} #{baseline_rows}")
        } else {
            o.name.to_owned()
        };
        rows.push(vec![
            label.clone(),
            format!("{:.1}", o.duration.as_secs_f64()),
            o.rounds.to_string(),
            fmt(ms(ack, |s| s.p50), 2),
            fmt(ms(ack, |s| s.p99), 2),
            x(ack, base_ack, |s| s.p50),
            x(ack, base_ack, |s| s.p99),
            fmt(ms(echo, |s| s.p50), 2),
            fmt(ms(echo, |s| s.p99), 2),
            x(echo, base_echo, |s| s.p50),
            x(echo, base_echo, |s| s.p99),
            fmt(max, 1),
            format!("{}/{}", o.refused, o.acked + o.refused),
            format!("{}/{}", o.joined.len(), o.joined.len() + o.turned_away),
            fmt(ms(joined, |s| s.p50), 1),
            format!("{:.0}", mib(o.rss_before)),
            format!("{:.0}", mib(o.rss_peak.saturating_sub(o.rss_before))),
            format!("{:.0}", mib(o.rss_after.saturating_sub(o.rss_before))),
            o.error.clone().unwrap_or_default(),
        ]);
        if o.name != NONE {
            let p99 = ms(ack, |s| s.p99)
                .into_iter()
                .chain(ms(echo, |s| s.p99))
                .reduce(f64::max);
            report.target(
                format!("hostile ws {}: honest p99 (ms)", o.name),
                p99,
                Op::AtMost,
                P99_BOUND_MS,
            );
            report.target(
                format!("hostile ws {}: honest max (ms)", o.name),
                max,
                Op::AtMost,
                MAX_BOUND_MS,
            );
        }
        doc.insert(
            label,
            json!({
                "seconds": o.duration.as_secs_f64(),
                "rounds": o.rounds,
                "apply_ok": summary_json(ack),
                "apply_echo": summary_json(echo),
                "acks_ok": o.acked,
                "acks_not_ok": o.refused,
                "newcomers_joined": summary_json(joined),
                "newcomers_turned_away": o.turned_away,
                "rss_before_kib": o.rss_before,
                "rss_peak_kib": o.rss_peak,
                "rss_after_kib": o.rss_after,
                "error": o.error,
            }),
        );
    }
    print!(
        "{}",
        table(
            &[
                "attack",
                "s",
                "rounds",
                "OK p50 ms",
                "OK p99 ms",
                "p50 vs none",
                "p99 vs none",
                "echo p50 ms",
                "echo p99 ms",
                "p50 vs none",
                "p99 vs none",
                "max ms",
                "acks not OK",
                "newcomers in",
                "newcomer p50 ms",
                "RSS MiB",
                "peak +MiB",
                "after +MiB",
                "attacker error",
            ],
            &rows
        )
    );
    report.json.insert("hostile_ws".into(), doc.into());
}
