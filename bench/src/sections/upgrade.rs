//! Section 8, upgrade: the in-place upgrade of a loaded server (see `phux_bench::upgrade`).

use serde_json::json;

use phux_bench::report::{Op, Report, fmt, table};
use phux_bench::upgrade::{CLIENTS, TERMINALS, UPGRADES, measure};
use phux_bench::upgrade_memory::{HEAVY_TERMINALS, VIEWERS, measure_heavy};

use super::summary_json;

/// The bound on the median upgrade, request to OK, in ms.
const P50_BOUND_MS: f64 = 100.0;
/// Issue 36's bounds for the heavy case: steady-state RSS after within 10 % of before, and a
/// transient peak of at most RSS + 1.1 × the image.
const AFTER_OVER_BEFORE: f64 = 1.10;
const PEAK_IMAGES: f64 = 1.1;

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
    section_upgrade_heavy(report, server_bin)
}

/// The heavy case: the upgrade's memory and pause.
fn section_upgrade_heavy(
    report: &mut Report,
    server_bin: Option<&std::path::Path>,
) -> phux_bench::error::Result<()> {
    println!(
        "\n   heavy: {HEAVY_TERMINALS} terminals x 2,000 lines of history, {VIEWERS} viewers \
         attached to all of them that never read, one upgrade"
    );
    let h = measure_heavy(server_bin)?;
    let mib = |kib: u64| format!("{:.1}", kib as f64 / 1024.0);
    let image_mib = h.image_bytes.map(|b| b as f64 / (1024.0 * 1024.0));
    let rows = vec![
        vec!["image written".to_owned(), fmt(image_mib, 1)],
        vec!["server RSS before (settled)".to_owned(), mib(h.before_kib)],
        vec!["server RSS peak during".to_owned(), mib(h.peak_kib)],
        vec![
            "server + trial child RSS peak".to_owned(),
            mib(h.peak_with_trial_kib),
        ],
        vec!["server RSS after (settled)".to_owned(), mib(h.after_kib)],
    ];
    print!("{}", table(&["what", "MiB"], &rows));
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  pause: request to OK {:.1} ms; honest client's longest ping {} ms",
        ms(h.request_to_ok),
        fmt(h.longest_ping.map(ms), 1)
    );
    let before = h.before_kib as f64;
    let peak_images = |peak: u64| {
        image_mib.map(|image| (peak as f64 - before) / 1024.0 / image.max(f64::MIN_POSITIVE))
    };
    report.target(
        "upgrade heavy: RSS after / before",
        Some(h.after_kib as f64 / before.max(1.0)),
        Op::AtMost,
        AFTER_OVER_BEFORE,
    );
    report.target(
        "upgrade heavy: (peak - before) / image, server",
        peak_images(h.peak_kib),
        Op::AtMost,
        PEAK_IMAGES,
    );
    // The machine's transient peak: the trial adoption runs beside the old image before the
    // exec, so it counts ([SERVER.UPGRADE.EXEC.13]).
    report.target(
        "upgrade heavy: (peak - before) / image, server + trial child",
        peak_images(h.peak_with_trial_kib),
        Op::AtMost,
        PEAK_IMAGES,
    );
    report.json.insert(
        "upgrade_heavy".into(),
        json!({
            "terminals": HEAVY_TERMINALS,
            "viewers": VIEWERS,
            "image_bytes": h.image_bytes,
            "rss_before_kib": h.before_kib,
            "rss_peak_kib": h.peak_kib,
            "rss_peak_with_trial_kib": h.peak_with_trial_kib,
            "rss_after_kib": h.after_kib,
            "request_to_ok_ms": ms(h.request_to_ok),
            "longest_ping_ms": h.longest_ping.map(ms),
        }),
    );
    Ok(())
}
