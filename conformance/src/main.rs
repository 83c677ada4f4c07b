//! `phux-conformance`: tools for checking a phux 0.8 server: `run` replays the transcripts
//! against a server, `coverage` prints which spec clauses they check, `wire` converts frames
//! between wire bytes and the text notation the transcripts use, `record` writes a live session
//! as a transcript draft, `keydiff` compares our key encoder with the phux reference's, and
//! `probe` is the child the transcripts run inside terminals.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use phux_conformance::coverage::{Coverage, parse_exemptions};
use phux_conformance::expectations::Expectations;
use phux_conformance::report::{self, RunInfo};
use phux_conformance::runner::CaseReport;
use phux_conformance::spec::Profile;
use phux_conformance::suite::{RunOptions, Suite, embedded};
use phux_conformance::transcript::Transcript;
use phux_conformance::transport::{
    Connector, ExecConnector, InProcess, SocketConnector, WsConnector,
};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

mod wire;

/// Conformance tooling for the phux 0.8 terminal protocol.
///
/// Frames are written in the phux-proto text notation, for example
/// `PING{nonce=0xdeadbeefcafef00d}` or
/// `COMMAND{request_id=1 command=ATTACH_TERMINAL{terminal=local:3}}`.
#[derive(Debug, Parser)]
#[command(name = "phux-conformance", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert one frame between wire bytes (hex) and the text notation.
    #[command(subcommand)]
    Wire(wire::WireCommand),
    /// Replay the transcripts against a server and report clause by clause.
    ///
    /// Exits 0 when no case FAILs or ERRORs (NON_STRICT, UNSUPPORTED and DISABLED cases do
    /// not fail the run), 1 otherwise, 2 when the suite itself cannot be loaded.
    Run(RunArgs),
    /// Print which spec clauses the transcripts check, and how much of phux 0.8's own text
    /// (the requirements matrix) the cases check under `--profile phux`.
    Coverage {
        #[command(flatten)]
        paths: PathArgs,
    },
    /// The requirements matrix of phux 0.8: every normative sentence of phux's documents,
    /// traced to our clauses and cases or to a reason.
    Matrix {
        #[command(flatten)]
        paths: PathArgs,
        /// Print the published table (conformance/PHUX-REQUIREMENTS.md) instead of the summary.
        #[arg(long)]
        markdown: bool,
        /// Print the matrix as JSON.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// A checkout of phux's `docs/spec/` (at 16f2ffdf): list its sentences with a key word
        /// that the matrix does not trace, and exit 1 if there are any.
        #[arg(long, value_name = "DIR")]
        against: Option<PathBuf>,
    },
    /// Proxy a live session and write it as a transcript draft (server-chosen ids captured).
    Record {
        /// The server's socket.
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
        /// Where to write the draft.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The socket clients connect to (default: `<out>.sock`).
        #[arg(long, value_name = "PATH")]
        listen: Option<PathBuf>,
        /// How many client connections to record, one after another.
        #[arg(long, default_value_t = 1)]
        clients: usize,
    },
    /// Run the probe child on this terminal (what transcripts spawn; see `probe` module docs).
    Probe(phux_conformance::probe::ProbeArgs),
    /// Fuzz a server with stateful sessions and oracles; findings become transcripts.
    Fuzz(phux_conformance::netfuzz::FuzzArgs),
    /// Compare our server's screens with the phux reference's: generated VT streams shown in
    /// a terminal on each, read with GET_SCREEN (see the `screen_diff` module docs).
    ///
    /// Exits 0 when every stream agrees but for the decided differences, 1 otherwise.
    ScreenDiff(ScreenDiffArgs),
    /// Write FILE to this terminal with output processing off, then wait to be killed (the
    /// program the screen differential runs in each terminal).
    Show {
        /// The bytes to write.
        file: PathBuf,
    },
    /// Compare our server's key encoder with the phux reference's, byte for byte, by what a
    /// raw-mode program reads; differences not in conformance/keydiff-decided.toml fail.
    Keydiff(phux_conformance::keydiff::KeydiffArgs),
}

#[derive(Debug, Args)]
struct ScreenDiffArgs {
    /// How many streams.
    #[arg(long, default_value_t = 1000)]
    streams: u64,
    /// The campaign's seed (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// The index of the first stream (to rerun one stream: `--first N --streams 1`).
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Streams shown at once on each server.
    #[arg(long, default_value_t = 8)]
    in_flight: usize,
    /// Stop after this many streams differ undecided.
    #[arg(long, default_value_t = 20)]
    max_findings: usize,
    /// The phux reference binary (default: $PHUX_REF_BIN, else
    /// ../shared/interop/phux-0.22.0/phux beside the workspace).
    #[arg(long, value_name = "PATH")]
    reference: Option<PathBuf>,
    /// Our server binary (default: `phux-mio-server` beside this program).
    #[arg(long, value_name = "PATH")]
    ours: Option<PathBuf>,
    /// Show this one stream (hex) instead of a campaign; needs --size.
    #[arg(long, value_name = "HEX", requires = "size")]
    replay: Option<String>,
    /// The screen size for --replay, `COLSxROWS`.
    #[arg(long, value_name = "COLSxROWS")]
    size: Option<String>,
    /// With --replay: first shrink the stream to the shortest that still differs.
    #[arg(long, requires = "replay")]
    shrink: bool,
}

#[derive(Debug, Args)]
#[group(multiple = false)]
struct Target {
    /// A running server's Unix socket (shared by every case).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Start this shell command per case; it must carry one client on its stdin and stdout:
    /// a server of its own (`phux-mio-server --stdio`) or, with `--exec-shared`, a bridge to
    /// a running server (`phux stdio-bridge --socket S`).
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// Our own engine, in this process, with simulated terminals and a virtual clock.
    #[arg(long)]
    in_process: bool,
    /// A running server's WebSocket listener, `ws://HOST:PORT/` (one binary message per phux
    /// frame): phux-mio-server's `--listen-ws` (with --ws-secret-file), or the phux
    /// reference's `--listen`.
    #[arg(long, value_name = "URL")]
    ws: Option<String>,
}

/// How a WebSocket client presents itself (with `--ws`).
#[derive(Debug, Args)]
struct WsArgs {
    /// The file holding the listener's secret (phux-mio-server prints its path at start),
    /// offered as the `phux-secret.<hex>` subprotocol. Read from a file, so it shows in no
    /// process list.
    #[arg(long, value_name = "PATH", requires = "ws")]
    ws_secret_file: Option<PathBuf>,
    /// The Origin to send, as a page of that origin would (default: none, as a non-browser
    /// client; phux-mio-server then needs --ws-allow-no-origin).
    #[arg(long, value_name = "ORIGIN", requires = "ws")]
    ws_origin: Option<String>,
}

impl WsArgs {
    /// The connector for `url`.
    fn connector(&self, url: &str, probe: Option<Vec<String>>) -> Result<WsConnector, String> {
        WsConnector::new(
            url,
            self.ws_secret_file.as_deref(),
            self.ws_origin.clone(),
            probe,
        )
    }
}

#[derive(Debug, Args)]
struct PathArgs {
    /// A transcripts directory to use instead of the one built into this program.
    #[arg(long, value_name = "DIR")]
    transcripts: Option<PathBuf>,
    /// A spec directory to use instead of the one built into this program.
    #[arg(long, value_name = "DIR")]
    spec: Option<PathBuf>,
}

impl PathArgs {
    /// The suite: built in, with files from disk where an override names them.
    fn load(&self) -> Result<Suite, String> {
        let mut suite = Suite::embedded()?;
        if let Some(dir) = &self.transcripts {
            let (prelude, transcripts) =
                phux_conformance::transcript::load_dir(dir).map_err(|e| e.to_string())?;
            let mut templates = phux_conformance::pattern::Templates::default();
            for (name, value) in prelude {
                templates.define(&name, value);
            }
            suite.templates = templates;
            suite.transcripts = transcripts;
        }
        if let Some(dir) = &self.spec {
            suite.spec = phux_conformance::spec::Spec::load(dir)?;
        }
        Ok(suite)
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    ws: WsArgs,
    /// List the selected cases with their clauses and profile; no server needed.
    #[arg(long)]
    list: bool,
    /// The child started by `--exec` bridges to a server others share: cases that end,
    /// restart or fill the server are UNSUPPORTED, and terminals are cleaned up after a case.
    #[arg(long, requires = "exec")]
    exec_shared: bool,
    /// Which rules to check: `phux` (what every phux 0.8 server must do; the default for
    /// --socket and --exec) or `phux-rs` (phux's rules and ours; the default in process).
    #[arg(long, value_parser = ["phux", "phux-rs"])]
    profile: Option<String>,
    /// Run only cases whose id starts with this (`input/004`, `lease`) or that cite a clause
    /// starting with it (`INPUT.DEDUPE`). Repeatable: a case any filter selects runs. A
    /// filter set that selects nothing exits 2.
    #[arg(long)]
    filter: Vec<String>,
    /// Stop after the first case that FAILs or ERRORs.
    #[arg(long)]
    fail_fast: bool,
    /// Also write the JSON report (summary, every case with its wire log) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Disabled cases and known deviations of the server under test: a peer file
    /// (`peers/<peer>.toml`) or `ID reason` lines (default: the repository's
    /// `expectations.txt`).
    #[arg(long, value_name = "FILE")]
    expectations: Option<PathBuf>,
    /// How long an expectation waits on a real transport, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// The probe child's argument vector as the server should run it, one `--probe` per
    /// word: `--probe /usr/local/bin/phux-conformance --probe probe` (default: this
    /// program's absolute path and `probe`).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    probe: Vec<String>,
    /// Run without a probe child: cases that need one are UNSUPPORTED.
    #[arg(long, conflicts_with = "probe")]
    no_probe: bool,
    #[command(flatten)]
    paths: PathArgs,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Wire(command) => wire::run(&command),
        Command::Run(args) => run(&args),
        Command::Coverage { paths } => coverage(&paths),
        Command::Matrix {
            paths,
            markdown,
            json,
            against,
        } => matrix(&paths, markdown, json, against.as_deref()),
        Command::Probe(args) => phux_conformance::probe::run(&args),
        Command::Fuzz(args) => phux_conformance::netfuzz::run(&args),
        Command::ScreenDiff(args) => screen_diff(&args),
        Command::Show { file } => phux_conformance::screen_diff::show::run(&file),
        Command::Keydiff(args) => phux_conformance::keydiff::cli(&args),
        Command::Record {
            socket,
            out,
            listen,
            clients,
        } => record(&socket, &out, listen, clients),
    }
}

fn screen_diff(args: &ScreenDiffArgs) -> ExitCode {
    use phux_conformance::peer::{PeerError, Server};
    use phux_conformance::screen_diff::{self, Options};
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        eprintln!("phux-conformance screen-diff: {what}: {e}");
        ExitCode::from(2)
    };
    let Ok(exe) = std::env::current_exe() else {
        return fail("this program's path", &"unknown");
    };
    let ours_bin = args
        .ours
        .clone()
        .unwrap_or_else(|| exe.with_file_name("phux-mio-server"));
    let reference = match &args.reference {
        Some(bin) => Server::start_reference(bin),
        None => Server::reference(),
    };
    let reference = match reference {
        Ok(server) => server,
        Err(e) => return fail("the reference", &e),
    };
    let ours = match Server::start_ours(&ours_bin) {
        Ok(server) => server,
        Err(e) => return fail(&format!("our server ({})", ours_bin.display()), &e),
    };
    let show = vec![exe.display().to_string(), "show".to_owned()];
    let mut bench = match screen_diff::Bench::new(&ours, &reference, show) {
        Ok(bench) => bench,
        Err(e) => return fail("connecting", &e),
    };
    // Findings already printed while the campaign ran.
    let mut printed = 0;
    let result: Result<screen_diff::Report, PeerError> = if let Some(hex) = &args.replay {
        let stream = match wire::parse_hex(hex) {
            Ok(stream) => stream,
            Err(e) => return fail("--replay", &e),
        };
        let size = args.size.as_deref().and_then(|s| {
            let (c, r) = s.split_once('x')?;
            Some((c.parse().ok()?, r.parse().ok()?))
        });
        let Some(size) = size else {
            return fail("--size", &"not COLSxROWS");
        };
        let stream = if args.shrink {
            match bench.shrink(size, &stream) {
                Ok(stream) => stream,
                Err(e) => return fail("shrinking", &e),
            }
        } else {
            stream
        };
        bench.replay(size, &stream)
    } else {
        let seed = args.seed.unwrap_or_else(clock_seed);
        println!("screen-diff: seed {seed}, {} streams", args.streams);
        let options = Options {
            seed,
            streams: args.streams,
            first: args.first,
            in_flight: args.in_flight,
            max_findings: args.max_findings,
        };
        let mut last = Instant::now();
        bench.run(&options, |r| {
            // Each finding as soon as it is found: a long campaign is worth reading meanwhile.
            for finding in &r.findings[printed..] {
                print!("{finding}");
            }
            printed = r.findings.len();
            if last.elapsed() >= Duration::from_secs(10) {
                last = Instant::now();
                println!(
                    "  {} streams, {} events, {} agree, {} findings, {:.0?}",
                    r.streams,
                    r.events,
                    r.identical,
                    r.findings.len(),
                    r.elapsed
                );
            }
        })
    };
    let report = match result {
        Ok(report) => report,
        Err(e) => return fail("the campaign", &e),
    };
    for finding in &report.findings[printed.min(report.findings.len())..] {
        print!("{finding}");
    }
    println!(
        "screen-diff: {} streams ({} events) in {:.1?}: {} agree but for decided differences, \
         {} findings",
        report.streams,
        report.events,
        report.elapsed,
        report.identical,
        report.findings.len()
    );
    for (id, n) in &report.decided {
        println!("  decided {id}: {n} streams");
    }
    if report.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A seed from the clock, for campaigns not given one.
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() ^ u64::from(d.subsec_nanos()))
}

fn record(socket: &Path, out: &Path, listen: Option<PathBuf>, clients: usize) -> ExitCode {
    let listen = listen.unwrap_or_else(|| out.with_extension("sock"));
    eprintln!(
        "phux-conformance: recording; connect to {}",
        listen.display()
    );
    // The signals are caught before the socket exists, so a client that sees it can stop it.
    let result =
        signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]).and_then(|signals| {
            let recording = phux_conformance::recorder::Recording::bind(&listen)?;
            stop_on_signal(signals, &recording, out, &listen);
            recording.run(socket, clients)
        });
    let result = result.and_then(|draft| std::fs::write(out, draft));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("phux-conformance record: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Stopped by SIGTERM, SIGINT (Ctrl-C) or SIGHUP, a recording writes the draft so far and
/// removes its socket (exit 0): stopping it is how a session with fewer clients ends.
fn stop_on_signal(
    mut signals: signal_hook::iterator::Signals,
    recording: &phux_conformance::recorder::Recording,
    out: &Path,
    listen: &Path,
) {
    let draft = recording.draft();
    let (out, listen) = (out.to_owned(), listen.to_owned());
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let text = draft.lock().map(|d| d.render()).unwrap_or_default();
            let _ = std::fs::remove_file(&listen);
            let code = match std::fs::write(&out, text) {
                Ok(()) => {
                    eprintln!(
                        "phux-conformance record: stopped; the draft so far is in {}",
                        out.display()
                    );
                    0
                }
                Err(e) => {
                    eprintln!("phux-conformance record: {}: {e}", out.display());
                    1
                }
            };
            std::process::exit(code);
        }
    });
}

/// The probe child's argument vector, when there is one to run.
fn probe_command(args: &RunArgs) -> Option<Vec<String>> {
    if args.no_probe {
        None
    } else if !args.probe.is_empty() {
        Some(args.probe.clone())
    } else {
        // This very program's `probe` subcommand (the server must be able to run it).
        std::env::current_exe()
            .ok()
            .map(|exe| vec![exe.display().to_string(), "probe".to_owned()])
    }
}

/// Fails the run's setup: exit status 2.
fn setup_error(what: impl std::fmt::Display) -> ExitCode {
    eprintln!("phux-conformance: {what}");
    ExitCode::from(2)
}

fn run(args: &RunArgs) -> ExitCode {
    let mut suite = match args.paths.load() {
        Ok(s) => s,
        Err(e) => return setup_error(e),
    };
    if let Some(path) = &args.expectations {
        let parsed = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|text| Expectations::parse(&path.display().to_string(), &text));
        match parsed {
            Ok(e) => suite.expectations = e,
            Err(e) => return setup_error(e),
        }
    }
    let profile = match args.profile.as_deref().and_then(Profile::parse) {
        Some(p) => p,
        None if args.target.in_process => Profile::PhuxRs,
        None => Profile::Phux,
    };
    let selected = suite.select(&args.filter);
    if selected.is_empty() {
        return setup_error(format!(
            "no case matches the filter {}",
            args.filter.join(", ")
        ));
    }
    if args.list {
        print!("{}", list(&suite, &selected, profile));
        return ExitCode::SUCCESS;
    }
    let probe = probe_command(args);
    let connector: Box<dyn Connector> = if let Some(path) = &args.target.socket {
        Box::new(SocketConnector {
            path: path.clone(),
            probe,
        })
    } else if let Some(cmd) = &args.target.exec {
        Box::new(ExecConnector {
            command: cmd.clone(),
            probe,
            shared: args.exec_shared,
        })
    } else if args.target.in_process {
        Box::new(InProcess)
    } else if let Some(url) = &args.target.ws {
        match args.ws.connector(url, probe) {
            Ok(c) => Box::new(c),
            Err(e) => return setup_error(e),
        }
    } else {
        return setup_error(
            "say which server: --socket PATH, --exec CMD, --ws URL or --in-process",
        );
    };
    let mut info = RunInfo::now(&connector.describe(), profile.name());
    info.peer.clone_from(&suite.expectations.peer);
    let options = RunOptions {
        filters: args.filter.clone(),
        timeout: Duration::from_millis(args.timeout_ms),
        profile,
        fail_fast: args.fail_fast,
    };
    print!("{}", report::header(&info));
    let mut previous: Option<CaseReport> = None;
    let mut stdout = std::io::stdout();
    let cases = suite.run_with(connector.as_ref(), &options, &mut |case| {
        let _ = write!(stdout, "{}", report::case(previous.as_ref(), case));
        let _ = stdout.flush();
        previous = Some(case.clone());
    });
    let cases = match cases {
        Ok(c) => c,
        Err(e) => return setup_error(e),
    };
    println!("\n{}", report::summary(&cases));
    if let Some(path) = &args.json {
        let json = report::json(&info, &cases);
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            return setup_error(format!("{}: {e}", path.display()));
        }
    }
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, report::junit(&info, &cases))
    {
        return setup_error(format!("{}: {e}", path.display()));
    }
    if cases.iter().any(|c| c.outcome.is_failure()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `--list`: each selected case with its level, clauses and whether the profile runs it.
fn list(suite: &Suite, selected: &[&Transcript], profile: Profile) -> String {
    let mut out = String::new();
    for t in selected {
        let ours = suite.ours_cited(t);
        let tag = if ours.is_empty() { "phux" } else { "phux-rs" };
        let runs = if profile == Profile::Phux && !ours.is_empty() {
            " (skipped under profile phux)"
        } else {
            ""
        };
        let needs = if t.requires.is_empty() {
            String::new()
        } else {
            format!(" requires: {}", t.requires.join(" "))
        };
        let _ = writeln!(
            out,
            "{} {} [{tag}]{runs} {}\n    clauses: {}{needs}",
            t.id,
            t.level,
            t.description,
            t.clauses.join(" ")
        );
    }
    let _ = writeln!(out, "{} cases", selected.len());
    out
}

fn coverage(paths: &PathArgs) -> ExitCode {
    let suite = match paths.load() {
        Ok(s) => s,
        Err(e) => return setup_error(e),
    };
    let text = embedded::file("not-wire-checkable.txt").unwrap_or_default();
    let exemptions = match parse_exemptions(text) {
        Ok(e) => e,
        Err(e) => return setup_error(format!("not-wire-checkable.txt: {e}")),
    };
    let cov = Coverage::new(&suite.spec, &suite.transcripts, &exemptions);
    print!("{}", cov.table());
    let ours = suite
        .spec
        .clauses
        .values()
        .filter(|c| suite.spec.is_ours(&c.id))
        .count();
    let uncited: Vec<&str> = suite.uncited_phux().iter().map(|c| c.id.as_str()).collect();
    println!(
        "\nClauses: {} in all, {ours} of phux-rs only, {} of phux citing phux's text (a \
         `> phux:` note or a row of the requirements matrix), {} of phux citing none \
         (conformance/phux-uncited.txt){}",
        suite.spec.clauses.len(),
        suite.spec.clauses.len() - ours - uncited.len(),
        uncited.len(),
        if uncited.is_empty() { "." } else { ":" }
    );
    if !uncited.is_empty() {
        println!("  {}", uncited.join(" "));
    }
    println!("\n{}", suite.matrix_report().summary());
    ExitCode::SUCCESS
}

fn matrix(paths: &PathArgs, markdown: bool, json: bool, against: Option<&Path>) -> ExitCode {
    let suite = match paths.load() {
        Ok(s) => s,
        Err(e) => return setup_error(e),
    };
    let report = suite.matrix_report();
    if let Some(dir) = against {
        return matrix_against(&suite.matrix, dir);
    }
    if markdown {
        print!("{}", report.markdown());
    } else if json {
        println!("{:#}", report.json());
    } else {
        print!("{}", report.summary());
    }
    ExitCode::SUCCESS
}

/// The key-word sentences of phux's documents in `dir` that no row of the matrix holds.
fn matrix_against(matrix: &phux_conformance::matrix::Matrix, dir: &Path) -> ExitCode {
    use phux_conformance::matrix::{keyword_sentences, normalise};
    let traced: Vec<String> = matrix.rows.iter().map(|r| normalise(&r.text)).collect();
    let mut missing = 0;
    for doc in [
        "proto.md",
        "L1.md",
        "input.md",
        "appendix-encoding.md",
        "appendix-reserved.md",
    ] {
        let path = dir.join(doc);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => return setup_error(format!("{}: {e}", path.display())),
        };
        for (section, kind, sentence) in keyword_sentences(&text) {
            let want = normalise(&sentence);
            if !traced.contains(&want) {
                missing += 1;
                println!("{doc} §{section} {}: {sentence}", kind.name());
            }
        }
    }
    println!("{missing} sentences with a key word not in the matrix");
    if missing == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
