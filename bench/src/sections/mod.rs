//! The sections of a bench run, one module each, in the order they run; and what they share
//! (the MiB unit, latency rows and their JSON). These are the `phux-bench` binary's modules, not
//! the library's.

use serde_json::json;

use phux_bench::procs::SchedCounts;
use phux_bench::report::{fmt, table};
use phux_bench::stats::{Summary, ratio};

mod ack;
mod commands;
mod criterion;
mod echo;
mod hostile;
mod hostile_ws;
mod scale;
mod ssh;
mod throughput;
mod upgrade;

pub(crate) use ack::section_ack;
pub(crate) use commands::section_commands;
pub(crate) use criterion::section_core;
pub(crate) use echo::section_echo;
pub(crate) use hostile::section_hostile;
pub(crate) use scale::section_scale;
pub(crate) use ssh::section_ssh;
pub(crate) use throughput::section_throughput;
pub(crate) use upgrade::section_upgrade;

const MIB: f64 = 1_048_576.0;
fn summary_json(s: Option<Summary>) -> serde_json::Value {
    s.map_or(
        serde_json::Value::Null,
        |s| json!({"n": s.n, "p50_us": s.p50, "p99_us": s.p99, "min_us": s.min, "max_us": s.max}),
    )
}

/// The latency table of a section: each contender's n, p50 and p99, and both against `base`
/// (the limit).
fn latency_table(
    names: &[&str],
    sums: &[Option<Summary>],
    base: Option<Summary>,
    refs: &[&str],
) -> String {
    table(
        &[
            "contender",
            "n",
            "p50 us",
            "p99 us",
            "p50 vs limit",
            "p99 vs limit",
            "issue",
        ],
        &latency_rows(names, sums, base, refs),
    )
}

fn latency_rows(
    names: &[&str],
    sums: &[Option<Summary>],
    base: Option<Summary>,
    refs: &[&str],
) -> Vec<Vec<String>> {
    names
        .iter()
        .zip(sums)
        .zip(refs)
        .map(|((name, s), reference)| {
            vec![
                (*name).to_owned(),
                s.map_or_else(|| "-".into(), |s| s.n.to_string()),
                fmt(s.map(|s| s.p50), 1),
                fmt(s.map(|s| s.p99), 1),
                ratio(s.map(|s| s.p50), base.map(|b| b.p50))
                    .map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
                ratio(s.map(|s| s.p99), base.map(|b| b.p99))
                    .map_or_else(|| "-".into(), |r| format!("{r:.2}x")),
                (*reference).to_owned(),
            ]
        })
        .collect()
}

/// Prints and returns what the scheduler counted per operation for each process named in
/// `rows` (name, counts before and after the timed rounds, operations served): sleeps,
/// preemptions, CPU migrations and CPU time (/proc/PID/sched). On a quiet machine an idle CPU
/// halts, so a server that sleeps between operations pays for waking it up; under load the
/// same sleep costs little. A server that busy-polls sleeps less for more CPU: the two go
/// together. Null where /proc has no counts.
fn sched_json(
    rows: &[(&str, Option<SchedCounts>, Option<SchedCounts>, usize)],
) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    let mut line = Vec::new();
    for &(name, before, after, ops) in rows {
        let Some((sleeps, preempted, migrations, cpu_us)) =
            after.zip(before).map(|(a, b)| a.per_op(&b, ops))
        else {
            doc.insert(name.into(), serde_json::Value::Null);
            continue;
        };
        line.push(format!(
            "{name} {sleeps:.2} sleeps, {preempted:.2} preemptions, {migrations:.3} migrations, \
             {cpu_us:.1} us of CPU"
        ));
        doc.insert(
            name.into(),
            json!({"sleeps": sleeps, "preemptions": preempted, "migrations": migrations, "cpu_us": cpu_us}),
        );
    }
    if !line.is_empty() {
        println!("  per operation (/proc/PID/sched): {}", line.join("; "));
    }
    serde_json::Value::Object(doc)
}
