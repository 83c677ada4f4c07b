//! Section 8, upgrade: the in-place upgrade of a loaded server (see `phux_bench::upgrade`).

use serde_json::json;

use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::upgrade::{CLIENTS, TERMINALS, UPGRADES, measure};

use super::summary_json;

/// The bound on the median upgrade, request to OK, in ms.
const P50_BOUND_MS: f64 = 100.0;

pub(crate) fn section_upgrade(
    report: &mut Report,
    server_bin: Option<&std::path::Path>,
) -> phux_bench::error::Result<()> {
    println!(
        "\n== 8. upgrade: {TERMINALS} terminals x 2,000 lines of history, {CLIENTS} attached \
         clients, {UPGRADES} upgrades =="
    );
    let outcome = measure(server_bin)?;
    let ms = |s: Option<phux_bench::stats::Summary>, f: fn(&phux_bench::stats::Summary) -> f64| {
        s.map(|s| f(&s) / 1000.0)
    };
    let rows = vec![
        vec![
            "request to OK (new image serving)".to_owned(),
            outcome
                .upgrade
                .map_or_else(|| "-".into(), |s| s.n.to_string()),
            fmt(ms(outcome.upgrade, |s| s.p50), 1),
            fmt(ms(outcome.upgrade, |s| s.p99), 1),
            fmt(ms(outcome.upgrade, |s| s.max), 1),
        ],
        vec![
            "honest client's ping round trip".to_owned(),
            outcome
                .honest
                .map_or_else(|| "-".into(), |s| s.n.to_string()),
            fmt(ms(outcome.honest, |s| s.p50), 1),
            fmt(ms(outcome.honest, |s| s.p99), 1),
            fmt(ms(outcome.honest, |s| s.max), 1),
        ],
    ];
    print!(
        "{}",
        table(&["what", "n", "p50 ms", "p99 ms", "max ms"], &rows)
    );
    println!(
        "  attached clients that lost their connection: {}",
        outcome.dropped
    );
    report.target(
        "upgrade: p50 request to OK (ms)",
        ms(outcome.upgrade, |s| s.p50),
        Op::AtMost,
        P50_BOUND_MS,
    );
    report.json.insert(
        "upgrade".into(),
        json!({
            "terminals": TERMINALS,
            "clients": CLIENTS,
            "upgrade": summary_json(outcome.upgrade),
            "honest_ping": summary_json(outcome.honest),
            "dropped_clients": outcome.dropped,
        }),
    );
    Ok(())
}
