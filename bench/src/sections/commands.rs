//! Section 9, commands: SPAWN_TERMINAL and GET_SCREEN latency, ours against the phux
//! reference, round by round.

use std::time::{Duration, Instant};

use phux_bench::commands::{screen_once, spawn_once};
use phux_bench::error::{Error, Result};
use phux_bench::procs::PhuxServer;
use phux_bench::report::{Op, Report};
use phux_bench::scale::{Fill, fill_argv, fill_file};
use phux_bench::stats::{Summary, ratio, summarize};

use super::{latency_table, summary_json};
use crate::Plan;

/// One server's terminal with a full screen, and the connection that reads it.
struct Screened {
    client: phux_bench::client::Client,
    terminal: phux_proto::TerminalId,
}

impl Screened {
    fn start(server: &PhuxServer, argv: &[String], last_line: &str) -> Result<Self> {
        let mut client = server.client()?;
        let terminal = client.spawn(argv)?;
        let end = Instant::now() + Duration::from_secs(30);
        while !client.screen(&terminal)?.contains(last_line) {
            if Instant::now() >= end {
                return Err(Error::Timeout("the full screen".into()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Self { client, terminal })
    }
}

pub(crate) fn section_commands(
    report: &mut Report,
    plan: &Plan,
    server_bin: Option<&std::path::Path>,
    reference: Option<&std::path::Path>,
) -> Result<()> {
    println!(
        "\n== 9. commands: SPAWN_TERMINAL -> TERMINAL_SPAWNED ({} per round) and GET_SCREEN of a \
         full 80x24 screen ({} per round); {} rounds ==",
        plan.cmd_ops, plan.lat_ops, plan.lat_rounds
    );
    let Some(reference) = reference else {
        report.note("section 9 compares with the phux reference, which is not there: skipped");
        return Ok(());
    };
    let dir = tempfile::tempdir().map_err(|source| Error::Io {
        what: "scratch directory".into(),
        source,
    })?;
    let fill = fill_file(dir.path(), Fill::Screen)?;
    let argv = fill_argv(Some(&fill));
    let last = String::from_utf8_lossy(&phux_bench::payload::line_text(23)).into_owned();
    let servers = [
        PhuxServer::start(server_bin)?,
        PhuxServer::start_reference(reference)?,
    ];
    let mut spawners = servers
        .iter()
        .map(PhuxServer::client)
        .collect::<Result<Vec<_>>>()?;
    let mut screens = servers
        .iter()
        .map(|s| Screened::start(s, &argv, &last))
        .collect::<Result<Vec<_>>>()?;
    let cat = vec!["cat".to_owned()];
    // Untimed priming: the first spawns and reads fault in code on both sides.
    for (c, s) in spawners.iter_mut().zip(&mut screens) {
        for _ in 0..3 {
            spawn_once(c, &cat)?;
            screen_once(&mut s.client, &s.terminal)?;
        }
    }
    let mut spawn: [Vec<f64>; 2] = Default::default();
    let mut screen: [Vec<f64>; 2] = Default::default();
    for _ in 0..plan.lat_rounds {
        for (k, (c, s)) in spawners.iter_mut().zip(&mut screens).enumerate() {
            for _ in 0..plan.cmd_ops {
                spawn[k].push(spawn_once(c, &cat)?);
            }
            for _ in 0..plan.lat_ops {
                screen[k].push(screen_once(&mut s.client, &s.terminal)?);
            }
        }
    }
    let sums: Vec<Option<Summary>> = spawn.iter().chain(&screen).map(|v| summarize(v)).collect();
    let names = [
        "phux SPAWN_TERMINAL -> TERMINAL_SPAWNED",
        "phux 0.22.0 SPAWN_TERMINAL",
        "phux GET_SCREEN (80x24, full)",
        "phux 0.22.0 GET_SCREEN",
    ];
    let refs = ["ours <= it", "", "ours <= it", ""];
    println!("  (ratios are each to the reference's own row below it)");
    for pair in [0, 2] {
        print!(
            "{}",
            latency_table(
                &names[pair..pair + 2],
                &sums[pair..pair + 2],
                sums[pair + 1],
                &refs[pair..pair + 2]
            )
        );
    }
    let p50 = |i: usize| sums.get(i).copied().flatten().map(|s| s.p50);
    report.target(
        "SPAWN_TERMINAL p50 / phux 0.22.0 p50",
        ratio(p50(0), p50(1)),
        Op::AtMost,
        1.0,
    );
    report.target(
        "GET_SCREEN p50 / phux 0.22.0 p50",
        ratio(p50(2), p50(3)),
        Op::AtMost,
        1.0,
    );
    let mut doc = serde_json::Map::new();
    for (name, s) in names.iter().zip(&sums) {
        doc.insert((*name).to_owned(), summary_json(*s));
    }
    report
        .json
        .insert("commands".into(), serde_json::Value::Object(doc));
    Ok(())
}
