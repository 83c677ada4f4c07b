//! `phux-conformance fuzz`: a stateful network fuzzer for any phux server.
//!
//! A campaign runs *sessions*, each a pure function of `(seed, session number)`
//! ([`session::generate`]): a HELLO, a `/bin/cat` terminal, then commands aimed at the
//! terminals the server gave the session (attach, screens, leases, signals, resizes,
//! subscriptions, APPLY_INPUT with new, retried and conflicting operation ids), mixed with
//! frames from phux-proto's `arbitrary` impls, field-level mutations of encoded frames
//! ([`mutate::Mutation`]: wrong tags, duplicate or missing fields, non-canonical varints,
//! truncation, huge lengths), protocol-order violations (frames before HELLO, after DETACH, a
//! second HELLO) and now and then a flood of requests while the client does not read.
//!
//! Nothing a session sends can do lasting harm: [`shadow::Shadow`] frames the byte stream as
//! the server will and refuses any frame that would SHUTDOWN, UPGRADE, DETACH_CLIENTS,
//! PUT_FILE, spawn anything but `/bin/cat`, or name a terminal the session did not spawn
//! (also inside bytes our decoder refuses, since a lenient server might read them); each
//! session kills its terminals at the end.
//!
//! The oracles ([`run`]): an honest side connection gets PONG within a bound after every
//! batch, and the server keeps accepting connections; every reply decodes under our strict
//! decoder; every COMMAND and SPAWN_TERMINAL is answered exactly once, and nothing is answered
//! that was not asked; no BOOTSTRAP_CHUNK exceeds the negotiated `max_chunk_bytes`; a server
//! closes only after DETACHED, and only when a rule was broken; a client that stops reading
//! finds at most the queue bound waiting; and, with `--pid`, the server's RSS and descriptor
//! count stay bounded.
//!
//! A finding is minimised ([`shrink`]: ddmin over actions, then over the bytes of mutated
//! frames) and written as a transcript `netfuzz/NNN-<kind>.phuxt` under `--out`, with the raw
//! bytes beside it; `phux-conformance run --transcripts OUT --socket …` replays it. Before it
//! is written, [`replay::check`] runs it against our engine (it must PASS) and against the
//! server it was found on (it must FAIL); one that does not do both is written apart, as
//! `unconfirmed/NNN-<kind>.phuxt.txt` with the reason, and is no case.

pub mod emit;
pub mod finding;
#[doc(hidden)]
pub mod fuzzing;
pub mod mutate;
pub mod oracle;
pub mod replay;
pub mod rng;
pub mod run;
pub mod session;
pub mod shadow;
pub mod shrink;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use crate::transport::{Connector, ExecConnector, InProcess, SocketConnector, WsConnector};
use run::{Bounds, Finding, Kind, run_session};
use session::{Action, Shape, generate};

/// `phux-conformance fuzz`'s arguments.
#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// A running server's Unix socket.
    #[arg(long, value_name = "PATH", group = "fuzz_target")]
    pub socket: Option<PathBuf>,
    /// Start a server per session with this shell command (one client on its stdio).
    #[arg(long, value_name = "CMD", group = "fuzz_target")]
    pub exec: Option<String>,
    /// Our own engine, in this process, on a virtual clock.
    #[arg(long, group = "fuzz_target")]
    pub in_process: bool,
    /// A running server's WebSocket listener, `ws://HOST:PORT/` (one binary message per frame).
    #[arg(long, value_name = "URL", group = "fuzz_target")]
    pub ws: Option<String>,
    /// With --ws: the file holding the listener's secret.
    #[arg(long, value_name = "PATH", requires = "ws")]
    pub ws_secret_file: Option<PathBuf>,
    /// With --ws: the Origin to send (default: none, a non-browser client).
    #[arg(long, value_name = "ORIGIN", requires = "ws")]
    pub ws_origin: Option<String>,
    /// How long to fuzz (`90s`, `10m`, `1h`; a bare number is seconds).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Stop after this many sessions.
    #[arg(long)]
    pub sessions: Option<u64>,
    /// The campaign's seed (default: from the clock; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where findings are written (`netfuzz/NNN-kind.phuxt` and `.bin`, plus a prelude).
    #[arg(long, value_name = "DIR", default_value = "netfuzz-findings")]
    pub out: PathBuf,
    /// Most actions per session after HELLO.
    #[arg(long, default_value_t = 40)]
    pub max_actions: usize,
    /// Share of actions that are arbitrary frames.
    #[arg(long, default_value_t = 0.15)]
    pub arbitrary: f64,
    /// Share of actions sent mutated.
    #[arg(long, default_value_t = 0.15)]
    pub mutate: f64,
    /// Share of sessions with a protocol-order violation.
    #[arg(long, default_value_t = 0.05)]
    pub violation: f64,
    /// Share of sessions with a flood while not reading.
    #[arg(long, default_value_t = 0.03)]
    pub flood: f64,
    /// An honest PING must be answered within this many milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub liveness_ms: u64,
    /// How long owed replies may take at the end of a session, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub grace_ms: u64,
    /// Bytes a client that stopped reading may find waiting (server queue plus kernel buffers).
    #[arg(long, default_value_t = 8 * 1024 * 1024)]
    pub queue_bound: usize,
    /// Sessions minimisation may run per finding.
    #[arg(long, default_value_t = 500)]
    pub minimise_budget: usize,
    /// Time minimisation may take per finding (`90s`, `5m`).
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
    pub minimise_time: Duration,
    /// The server's pid, for the resource oracle (RSS and descriptors from /proc).
    #[arg(long)]
    pub pid: Option<u32>,
    /// With `--pid`: stop the campaign when the server's RSS passes this many MiB (a server
    /// that grows without bound must not take the host down with it).
    #[arg(long, default_value_t = 4096)]
    pub max_rss_mb: u64,
    /// Clamp the terminal sizes sessions ask for to 1024 x 512 (the spec's bound), to fuzz on
    /// past a server known not to clamp them.
    #[arg(long)]
    pub clamp_sizes: bool,
    /// Print session N of the seed's campaign (its actions) and exit.
    #[arg(long, value_name = "N")]
    pub print_session: Option<u64>,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, ""), |i| s.split_at(i));
    let n: u64 = num.parse().map_err(|_| format!("not a duration: {s}"))?;
    Ok(match unit {
        "" | "s" => Duration::from_secs(n),
        "ms" => Duration::from_millis(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("unknown unit in {s} (ms, s, m, h)")),
    })
}

/// A campaign's settings, for the library.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The seed.
    pub seed: u64,
    /// Stop after this long.
    pub duration: Duration,
    /// Stop after this many sessions.
    pub max_sessions: Option<u64>,
    /// Session shape.
    pub shape: Shape,
    /// Oracle bounds.
    pub bounds: Bounds,
    /// Sessions minimisation may run per finding.
    pub minimise_budget: usize,
    /// Time minimisation may take per finding.
    pub minimise_time: Duration,
    /// The server's pid, for the resource oracle.
    pub pid: Option<u32>,
    /// With `pid`: the RSS (KiB) past which the campaign stops.
    pub max_rss_kb: u64,
    /// Print a progress line on stderr once a second.
    pub progress: bool,
    /// Stop at the first finding.
    pub stop_at_first: bool,
    /// Write each finding here as soon as it is minimised (see [`write_findings`]).
    pub out: Option<PathBuf>,
    /// Check each finding's transcript against our engine in process (it must PASS) and
    /// against the target (it must FAIL) before writing it as a case.
    pub check_replay: bool,
    /// How long a replay step waits on a real transport.
    pub replay_timeout: Duration,
}

impl Default for Campaign {
    fn default() -> Self {
        Self {
            seed: 0,
            duration: Duration::from_mins(1),
            max_sessions: None,
            shape: Shape::default(),
            bounds: Bounds::default(),
            minimise_budget: 500,
            minimise_time: Duration::from_mins(2),
            pid: None,
            max_rss_kb: 4 * 1024 * 1024,
            progress: false,
            stop_at_first: false,
            out: None,
            check_replay: true,
            replay_timeout: Duration::from_secs(5),
        }
    }
}

/// A finding, minimised, with its transcript.
#[derive(Clone, Debug)]
pub struct Reported {
    /// What was found.
    pub finding: Finding,
    /// The session number that first showed it.
    pub session: u64,
    /// How many sessions showed a finding of this kind.
    pub count: u64,
    /// The session as generated.
    pub original: Vec<Action>,
    /// The minimised session.
    pub minimised: Vec<Action>,
    /// Sessions run to minimise it.
    pub minimise_runs: usize,
    /// The transcript.
    pub transcript: String,
    /// The raw bytes the minimised session sent.
    pub raw: Vec<u8>,
    /// Whether the transcript passes against our engine and fails against the target.
    pub replay: replay::Replay,
}

/// What a campaign did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Sessions run (minimisation runs not counted).
    pub sessions: u64,
    /// Frames sent.
    pub frames: u64,
    /// Time spent fuzzing (minimisation and replay checks excluded).
    pub fuzzing: Duration,
    /// Wall time of the whole campaign, minimisation and replay checks included.
    pub wall: Duration,
    /// Time spent minimising findings and checking their transcripts.
    pub minimising: Duration,
    /// Findings, one per kind, in the order found.
    pub findings: Vec<Reported>,
    /// What the resource oracle saw, if it saw growth.
    pub resources: Option<String>,
}

impl Report {
    /// Sessions per second.
    #[allow(clippy::cast_precision_loss)] // A rate for people to read.
    pub fn sessions_per_sec(&self) -> f64 {
        self.sessions as f64 / self.fuzzing.as_secs_f64().max(1e-9)
    }
    /// Frames per second.
    #[allow(clippy::cast_precision_loss)] // A rate for people to read.
    pub fn frames_per_sec(&self) -> f64 {
        self.frames as f64 / self.fuzzing.as_secs_f64().max(1e-9)
    }
}

/// RSS (KiB) and open descriptors of a process.
fn resources(pid: u32) -> Option<(u64, usize)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count();
    Some((rss, fds))
}

/// Runs a campaign against `connector`.
pub fn campaign(connector: &dyn Connector, c: &Campaign) -> Report {
    let mut report = Report::default();
    let mut by_kind: BTreeMap<Kind, usize> = BTreeMap::new();
    let started = Instant::now();
    let mut minimising = Duration::ZERO;
    let mut last_progress = Instant::now();
    let mut baseline: Option<(u64, usize)> = None;
    let mut resource_reported = false;
    let mut last_resources: Option<(u64, usize)> = None;
    let mut number = 0u32;
    loop {
        // `duration` bounds the wall time, minimisation and replay checks included.
        if started.elapsed() >= c.duration || c.max_sessions.is_some_and(|m| report.sessions >= m) {
            break;
        }
        let index = report.sessions;
        let actions = generate(rng::Rng::session_seed(c.seed, index), &c.shape);
        let out = run_session(connector, &actions, &c.bounds);
        report.sessions += 1;
        report.frames += out.frames as u64;
        if let Some(f) = out.finding {
            if let Some(&i) = by_kind.get(&f.kind) {
                report.findings[i].count += 1;
            } else {
                let t0 = Instant::now();
                number += 1;
                // Minimisation gets what is left of the campaign's time (at least a few
                // seconds, so a finding near the end is still cut down a little).
                let left = c.duration.saturating_sub(started.elapsed());
                let budget = c.minimise_time.min(left.max(Duration::from_secs(5)));
                let reported =
                    minimise_and_write(connector, c, number, index, &actions, &f, budget);
                minimising += t0.elapsed();
                by_kind.insert(reported.finding.kind.clone(), report.findings.len());
                let down = reported.finding.kind == Kind::ServerDown;
                report.findings.push(reported);
                if let Some(dir) = &c.out
                    && let Err(e) = write_findings(dir, &report)
                {
                    eprintln!("netfuzz: {}: {e}", dir.display());
                }
                if c.stop_at_first || down {
                    break;
                }
            }
        }
        if let Some(pid) = c.pid
            && let Some(now) = resources(pid)
        {
            last_resources = Some(now);
            if now.0 > c.max_rss_kb {
                // The campaign stops; the server is not ours to stop, and it is still there.
                let what = format!(
                    "RSS {} KiB after session {index} (over the {} KiB cap); the campaign \
                     stopped, and the server under test (pid {pid}, {} fds) is still running \
                     with that memory: this campaign does not stop it, so end it yourself if \
                     it keeps growing",
                    now.0, c.max_rss_kb, now.1
                );
                eprintln!("netfuzz: resource oracle: {what}");
                report.resources = Some(what);
                break;
            }
            match baseline {
                None if index >= 20 => baseline = Some(now),
                Some((rss, fds))
                    if !resource_reported && (now.0 > 2 * rss + 64 * 1024 || now.1 > fds + 64) =>
                {
                    resource_reported = true;
                    let what = format!(
                        "grew from {rss} KiB / {fds} fds to {} KiB / {} fds by session {index}",
                        now.0, now.1
                    );
                    eprintln!("netfuzz: resource oracle: pid {pid} {what}");
                    report.resources = Some(what);
                }
                _ => {}
            }
        }
        if c.progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            report.fuzzing = started.elapsed().saturating_sub(minimising);
            let server = last_resources.map_or(String::new(), |(rss, fds)| {
                format!("  server {} MiB, {fds} fds", rss / 1024)
            });
            eprintln!(
                "netfuzz: {:>6.0}s  {} sessions ({:.1}/s)  {} frames ({:.0}/s)  {} findings{server}",
                report.fuzzing.as_secs_f64(),
                report.sessions,
                report.sessions_per_sec(),
                report.frames,
                report.frames_per_sec(),
                report.findings.len()
            );
        }
    }
    report.fuzzing = started.elapsed().saturating_sub(minimising);
    report.wall = started.elapsed();
    report.minimising = minimising;
    report
}

fn minimise_and_write(
    connector: &dyn Connector,
    c: &Campaign,
    number: u32,
    session: u64,
    actions: &[Action],
    finding: &Finding,
    time: Duration,
) -> Reported {
    let label = format!("finding {number} ({})", finding.kind.slug());
    let m = shrink::minimise(
        connector,
        actions,
        &finding.kind,
        &c.bounds,
        c.minimise_budget,
        time,
        c.progress.then_some(label.as_str()),
    );
    // The minimised session's own run gives the transcript (and its detail).
    let out = run_session(connector, &m.actions, &c.bounds);
    let (out, shown) = match &out.finding {
        Some(f) if f.kind == finding.kind => (out.clone(), f.clone()),
        _ => (run_session(connector, actions, &c.bounds), finding.clone()),
    };
    let note = format!(
        "Found by `phux-conformance fuzz --seed {}` in session {session}; {} actions minimised \
         to {} in {} runs.\nRaw frames carry the terminal ids of the run that wrote this (a \
         fresh server gives the same).",
        c.seed,
        actions.len(),
        m.actions.len(),
        m.runs
    );
    let transcript = emit::transcript(number, &shown, &out, c.bounds.queue_bound, &note);
    let replay = if c.check_replay {
        if c.progress {
            eprintln!("netfuzz: {label}: checking that its transcript replays both ways");
        }
        replay::check(&transcript, &InProcess, connector, c.replay_timeout)
    } else {
        replay::Replay::Unconfirmed("not checked (check_replay off)".into())
    };
    Reported {
        finding: shown,
        session,
        count: 1,
        original: actions.to_vec(),
        minimised: m.actions,
        minimise_runs: m.runs,
        transcript,
        raw: emit::raw_stream(&out),
        replay,
    }
}

/// Writes the findings under `dir`: `prelude.phuxt`, and per finding `netfuzz/NNN-kind.phuxt`
/// and `.bin` when its transcript replays both ways ([`replay::check`]), otherwise
/// `unconfirmed/NNN-kind.phuxt.txt` (not a case: the runner does not load it) opening with
/// why, and the `.bin`.
pub fn write_findings(dir: &Path, report: &Report) -> std::io::Result<()> {
    let area = dir.join("netfuzz");
    std::fs::create_dir_all(&area)?;
    let prelude = dir.join("prelude.phuxt");
    if !prelude.exists() {
        // The runner's first handshake uses the prelude's `Hello` and `HelloOk`.
        std::fs::write(&prelude, include_str!("../../transcripts/prelude.phuxt"))?;
    }
    for (i, r) in report.findings.iter().enumerate() {
        let stem = format!("{:03}-{}", i + 1, r.finding.kind.slug());
        match &r.replay {
            replay::Replay::Confirmed => {
                std::fs::write(area.join(format!("{stem}.phuxt")), &r.transcript)?;
                std::fs::write(area.join(format!("{stem}.bin")), &r.raw)?;
            }
            replay::Replay::Unconfirmed(why) => {
                let apart = dir.join("unconfirmed");
                std::fs::create_dir_all(&apart)?;
                let text = format!(
                    "# Not a case: this transcript does not replay both ways ({why}).\n{}",
                    r.transcript
                );
                std::fs::write(apart.join(format!("{stem}.phuxt.txt")), text)?;
                std::fs::write(apart.join(format!("{stem}.bin")), &r.raw)?;
            }
        }
    }
    Ok(())
}

/// `phux-conformance fuzz`.
pub fn run(args: &FuzzArgs) -> ExitCode {
    let shape = Shape {
        max_actions: args.max_actions,
        arbitrary: args.arbitrary,
        mutate: args.mutate,
        violation: args.violation,
        flood: args.flood,
    };
    if let Some(n) = args.print_session {
        let seed = args.seed.unwrap_or_default();
        for a in generate(rng::Rng::session_seed(seed, n), &shape) {
            println!("{a:?}");
        }
        return ExitCode::SUCCESS;
    }
    let connector: Box<dyn Connector> = if let Some(path) = &args.socket {
        Box::new(SocketConnector {
            path: path.clone(),
            probe: None,
        })
    } else if let Some(cmd) = &args.exec {
        // Each connection runs the command: a server of its own (`--stdio`) per session.
        Box::new(ExecConnector {
            command: cmd.clone(),
            probe: None,
            shared: false,
        })
    } else if args.in_process {
        Box::new(InProcess)
    } else if let Some(url) = &args.ws {
        match WsConnector::new(
            url,
            args.ws_secret_file.as_deref(),
            args.ws_origin.clone(),
            None,
        ) {
            Ok(c) => Box::new(c),
            Err(e) => {
                eprintln!("phux-conformance fuzz: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        eprintln!(
            "phux-conformance fuzz: give --socket PATH, --exec CMD, --ws URL or --in-process"
        );
        return ExitCode::from(2);
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    eprintln!("netfuzz: {} seed {seed}", connector.describe());
    let c = Campaign {
        seed,
        duration: args.duration,
        max_sessions: args.sessions,
        shape,
        bounds: Bounds {
            liveness: Duration::from_millis(args.liveness_ms),
            grace: Duration::from_millis(args.grace_ms),
            queue_bound: args.queue_bound,
            clamp_sizes: args.clamp_sizes,
            ..Bounds::default()
        },
        minimise_budget: args.minimise_budget,
        minimise_time: args.minimise_time,
        pid: args.pid,
        max_rss_kb: args.max_rss_mb * 1024,
        progress: true,
        stop_at_first: false,
        out: Some(args.out.clone()),
        check_replay: true,
        replay_timeout: Duration::from_secs(5),
    };
    let report = campaign(connector.as_ref(), &c);
    println!(
        "netfuzz: {} sessions, {} frames in {:.1}s of fuzzing ({:.2} sessions/s, {:.0} frames/s), \
         {} findings; {:.1}s in all, {:.1}s of it minimising and checking findings",
        report.sessions,
        report.frames,
        report.fuzzing.as_secs_f64(),
        report.sessions_per_sec(),
        report.frames_per_sec(),
        report.findings.len(),
        report.wall.as_secs_f64(),
        report.minimising.as_secs_f64()
    );
    if report.wall > args.duration + Duration::from_secs(1) {
        println!(
            "  over --duration {:.0}s by {:.1}s: the last finding's minimisation (at least 5 s) \
             and its replay checks (each step up to 5 s) ran past the end",
            args.duration.as_secs_f64(),
            report.wall.saturating_sub(args.duration).as_secs_f64()
        );
    }
    for (i, r) in report.findings.iter().enumerate() {
        let replay = match &r.replay {
            replay::Replay::Confirmed => {
                "replays: PASS against our engine, FAIL against the target".to_owned()
            }
            replay::Replay::Unconfirmed(why) => format!("NOT written as a case: {why}"),
        };
        println!(
            "  {:03} {} ×{}: {} (session {}, {} → {} actions); {replay}",
            i + 1,
            r.finding.kind.slug(),
            r.count,
            r.finding.detail,
            r.session,
            r.original.len(),
            r.minimised.len()
        );
    }
    if let Some(r) = &report.resources {
        println!("  resource oracle: {r}");
    }
    if report.findings.is_empty() && report.resources.is_none() {
        return ExitCode::SUCCESS;
    }
    println!("  written under {}", args.out.display());
    ExitCode::FAILURE
}
