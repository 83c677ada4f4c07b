//! Section 5: the criterion figures of phux-proto and phux-core, read from criterion's own
//! output (`<target>/criterion/**/new/{benchmark,estimates}.json`) after an optional run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Context, Error, Result};

/// One criterion benchmark's latest figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreFigure {
    /// The benchmark id (`group/function`).
    pub id: String,
    /// Median time per iteration, nanoseconds.
    pub median_ns: f64,
    /// Bytes per iteration, when the benchmark declares a throughput in bytes.
    pub bytes: Option<u64>,
}

impl CoreFigure {
    /// MiB/s, for byte-throughput benchmarks.
    pub fn mib_per_s(&self) -> Option<f64> {
        self.bytes
            .map(|b| b as f64 / (self.median_ns * 1e-9) / f64::from(1u32 << 20))
    }
}

/// Where cargo puts criterion's output: `$CARGO_TARGET_DIR`, else the workspace's `target`.
pub fn default_criterion_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
            PathBuf::from,
        )
        .join("criterion")
}

/// Runs the phux-proto and phux-core benches with short settings (minutes, not tens).
pub fn run_criterion() -> Result<()> {
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .args([
            "bench",
            "-p",
            "phux-proto",
            "-p",
            "phux-core",
            // Only the bench targets: the libraries' test harness refuses criterion's flags.
            "--bench",
            "*",
            "--",
            "--warm-up-time",
            "1",
            "--measurement-time",
            "2",
        ])
        .status()
        .context("running cargo bench")?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Protocol("cargo bench failed".into()))
    }
}

/// Every benchmark found under `dir`, sorted by id.
pub fn collect(dir: &Path) -> Vec<CoreFigure> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn walk(dir: &Path, out: &mut Vec<CoreFigure>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") {
            if let Some(fig) = read_one(&path) {
                out.push(fig);
            }
        } else if path.file_name().is_some_and(|n| n != "report") {
            walk(&path, out);
        }
    }
}

fn read_one(new_dir: &Path) -> Option<CoreFigure> {
    let bench = std::fs::read_to_string(new_dir.join("benchmark.json")).ok()?;
    let est = std::fs::read_to_string(new_dir.join("estimates.json")).ok()?;
    parse(&bench, &est)
}

/// Builds a figure from criterion's `benchmark.json` and `estimates.json` texts.
pub fn parse(benchmark: &str, estimates: &str) -> Option<CoreFigure> {
    let b: serde_json::Value = serde_json::from_str(benchmark).ok()?;
    let e: serde_json::Value = serde_json::from_str(estimates).ok()?;
    Some(CoreFigure {
        id: b.get("full_id")?.as_str()?.to_owned(),
        median_ns: e.get("median")?.get("point_estimate")?.as_f64()?,
        bytes: b
            .get("throughput")
            .and_then(|t| t.get("Bytes"))
            .and_then(serde_json::Value::as_u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_come_from_criterion_json() {
        let bench = r#"{"group_id":"ingest","function_id":"yes/whole","full_id":"ingest/yes/whole",
            "throughput":{"Bytes":1048576}}"#;
        let est = r#"{"mean":{"point_estimate":2.0e6},"median":{"point_estimate":1.0e7}}"#;
        let fig = parse(bench, est).expect("figure");
        assert_eq!(fig.id, "ingest/yes/whole");
        assert!((fig.median_ns - 1.0e7).abs() < 1e-6);
        // 1 MiB in 10 ms is 100 MiB/s.
        assert!((fig.mib_per_s().expect("rate") - 100.0).abs() < 1e-9);
        let no_tp = r#"{"full_id":"ledger/get","throughput":null}"#;
        assert_eq!(parse(no_tp, est).expect("figure").mib_per_s(), None);
        assert!(parse("{}", est).is_none());
    }
}
