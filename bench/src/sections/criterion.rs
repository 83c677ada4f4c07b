//! Section 5, core: the criterion figures of phux-proto and phux-core.

use serde_json::json;

use phux_bench::core;
use phux_bench::error::Result;
use phux_bench::report::{Report, fmt, table};

use crate::Cli;

pub(crate) fn section_core(report: &mut Report, cli: &Cli) -> Result<()> {
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

fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} us", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}
