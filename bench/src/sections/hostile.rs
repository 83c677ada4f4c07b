//! Section 6, hostile: each attack of the hostile-world issue against a fresh server, with an
//! honest client alongside (see `phux_bench::hostile`).

use serde_json::json;

use phux_bench::hostile::{attacks, measure};
use phux_bench::report::{Op, Report, fmt, table};

use super::hostile_ws::section_hostile_ws;
use super::summary_json;

/// The bounds for the honest client during an attack, in ms.
const P99_BOUND_MS: f64 = 100.0;
const MAX_BOUND_MS: f64 = 250.0;

/// Runs every attack, or those whose name contains one of `only`; then the same over
/// WebSocket (names `ws: ...`).
pub(crate) fn section_hostile(
    report: &mut Report,
    server_bin: Option<&std::path::Path>,
    only: &[String],
) {
    println!("\n== 6. hostile: each attack with an honest client alongside ==");
    let mut rows = Vec::new();
    let mut doc = serde_json::Map::new();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    for attack in attacks().into_iter().filter(|a| wanted(a.name)) {
        let outcome = match measure(server_bin, &attack) {
            Ok(o) => o,
            Err(e) => {
                report.note(format!("hostile {}: {e}", attack.name));
                continue;
            }
        };
        let ms = |f: fn(&phux_bench::stats::Summary) -> f64| outcome.honest.map(|s| f(&s) / 1000.0);
        let (p50, p99, max) = (ms(|s| s.p50), ms(|s| s.p99), ms(|s| s.max));
        let mib = |kib: u64| kib as f64 / 1024.0;
        let growth = mib(outcome.rss_peak.saturating_sub(outcome.rss_before));
        let left = mib(outcome.rss_after.saturating_sub(outcome.rss_before));
        rows.push(vec![
            attack.name.to_owned(),
            format!("{:.1}", outcome.duration.as_secs_f64()),
            fmt(p50, 1),
            fmt(p99, 1),
            fmt(max, 1),
            format!("{}/{}", outcome.refused, outcome.acked + outcome.refused),
            format!("{:.0}", mib(outcome.rss_before)),
            format!("{growth:.0}"),
            format!("{left:.0}"),
            outcome.error.clone().unwrap_or_default(),
        ]);
        report.target(
            format!("hostile {}: honest p99 (ms)", attack.name),
            p99,
            Op::AtMost,
            P99_BOUND_MS,
        );
        report.target(
            format!("hostile {}: honest max (ms)", attack.name),
            max,
            Op::AtMost,
            MAX_BOUND_MS,
        );
        doc.insert(
            attack.name.to_owned(),
            json!({
                "seconds": outcome.duration.as_secs_f64(),
                "honest": summary_json(outcome.honest),
                "acks_ok": outcome.acked,
                "acks_not_ok": outcome.refused,
                "rss_before_kib": outcome.rss_before,
                "rss_peak_kib": outcome.rss_peak,
                "rss_after_kib": outcome.rss_after,
                "error": outcome.error,
            }),
        );
    }
    if rows.is_empty() && !only.is_empty() {
        section_hostile_ws(report, server_bin, &wanted);
        return;
    }
    print!(
        "{}",
        table(
            &[
                "attack",
                "s",
                "honest p50 ms",
                "p99 ms",
                "max ms",
                "acks not OK",
                "RSS MiB",
                "peak +MiB",
                "after +MiB",
                "attacker error",
            ],
            &rows
        )
    );
    report.json.insert("hostile".into(), doc.into());
    section_hostile_ws(report, server_bin, &wanted);
}
