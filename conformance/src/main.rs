//! `phux-conformance`: tools for checking a phux 0.8 server: `run` replays the transcripts
//! against a server, `coverage` prints which spec clauses they check, `wire` converts frames
//! between wire bytes and the text notation the transcripts use, `record` writes a live session
//! as a transcript draft, and `probe` is the child
//! the transcripts run inside terminals.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use phux_conformance::coverage::{Coverage, parse_exemptions};
use phux_conformance::report;
use phux_conformance::suite::{Paths, Suite};
use phux_conformance::transport::{Connector, ExecConnector, InProcess, SocketConnector};

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
    /// Print which spec clauses the transcripts check.
    Coverage {
        #[command(flatten)]
        paths: PathArgs,
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
}

#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct Target {
    /// A running server's Unix socket.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Start a server per transcript with this shell command; it must serve one client on
    /// its stdin and stdout (e.g. `phux-mio-server --stdio`).
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// Our own engine, in this process, with simulated terminals and a virtual clock.
    #[arg(long)]
    in_process: bool,
}

#[derive(Debug, Args)]
struct PathArgs {
    /// The transcripts directory (default: the repository's).
    #[arg(long, value_name = "DIR")]
    transcripts: Option<PathBuf>,
    /// The spec directory (default: the repository's).
    #[arg(long, value_name = "DIR")]
    spec: Option<PathBuf>,
}

impl PathArgs {
    fn paths(&self) -> Paths {
        let mut paths = Paths::default();
        if let Some(t) = &self.transcripts {
            paths.transcripts.clone_from(t);
        }
        if let Some(s) = &self.spec {
            paths.spec.clone_from(s);
        }
        paths
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    target: Target,
    /// Run only cases whose id starts with this (`input/004`, `lease`) or that cite a clause
    /// starting with it (`INPUT.DEDUPE`).
    #[arg(long)]
    filter: Option<String>,
    /// Also write the JSON report (with every case's wire log) here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// How long an expectation waits on a real transport, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// The probe child's command line as the server should run it (default: this program's
    /// `probe` subcommand; `none` to run without a probe).
    #[arg(long)]
    probe: Option<String>,
    #[command(flatten)]
    paths: PathArgs,
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Wire(command) => wire::run(&command),
        Command::Run(args) => run(&args),
        Command::Coverage { paths } => coverage(&paths.paths()),
        Command::Probe(args) => phux_conformance::probe::run(&args),
        Command::Fuzz(args) => phux_conformance::netfuzz::run(&args),
        Command::Record {
            socket,
            out,
            listen,
            clients,
        } => record(&socket, &out, listen, clients),
    }
}

fn record(socket: &Path, out: &Path, listen: Option<PathBuf>, clients: usize) -> ExitCode {
    let listen = listen.unwrap_or_else(|| out.with_extension("sock"));
    eprintln!(
        "phux-conformance: recording; connect to {}",
        listen.display()
    );
    let result = phux_conformance::recorder::record(socket, &listen, clients)
        .and_then(|draft| std::fs::write(out, draft));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("phux-conformance record: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The probe child's argument vector, when there is one to run.
fn probe_command(arg: Option<&str>) -> Option<Vec<String>> {
    match arg {
        Some("none") => None,
        Some(cmd) => Some(cmd.split_whitespace().map(str::to_owned).collect()),
        // This very program's `probe` subcommand (the server must be able to run it).
        None => std::env::current_exe()
            .ok()
            .map(|exe| vec![exe.display().to_string(), "probe".to_owned()]),
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let suite = match Suite::load(&args.paths.paths()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("phux-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let probe = probe_command(args.probe.as_deref());
    let connector: Box<dyn Connector> = if let Some(path) = &args.target.socket {
        Box::new(SocketConnector {
            path: path.clone(),
            probe,
        })
    } else if let Some(cmd) = &args.target.exec {
        Box::new(ExecConnector {
            command: cmd.clone(),
            probe,
        })
    } else {
        Box::new(InProcess)
    };
    let cases = match suite.run(
        connector.as_ref(),
        args.filter.as_deref(),
        Duration::from_millis(args.timeout_ms),
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("phux-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report::tree(&connector.describe(), &cases));
    if let Some(path) = &args.json {
        let json = report::json(&connector.describe(), &cases);
        let text = serde_json::to_string_pretty(&json).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("phux-conformance: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if cases.iter().any(|c| c.outcome.is_failure()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn coverage(paths: &Paths) -> ExitCode {
    let suite = match Suite::load(paths) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("phux-conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let exemptions = std::fs::read_to_string(&paths.not_wire_checkable)
        .map_err(|e| e.to_string())
        .and_then(|t| parse_exemptions(&t));
    let exemptions = match exemptions {
        Ok(e) => e,
        Err(e) => {
            eprintln!(
                "phux-conformance: {}: {e}",
                paths.not_wire_checkable.display()
            );
            return ExitCode::from(2);
        }
    };
    let cov = Coverage::new(&suite.spec, &suite.transcripts, &exemptions);
    print!("{}", cov.table());
    ExitCode::SUCCESS
}
