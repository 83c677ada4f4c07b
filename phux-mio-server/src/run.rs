//! The server's entry point as a library function: `main.rs` calls it, and test binaries
//! (examples built by `cargo test`) run the real server through it without invoking cargo.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Parser;
use phux_core::server::ServerEngine;
use tracing::{error, info, warn};
use tracing_subscriber::EnvFilter;

use crate::config::{BridgeArgs, Command, Config};
use crate::driver::{AdoptArgs, Driver, Listen, UpgradeContext};
use crate::socket::{DirPolicy, ServerSocket, socket_path};
use crate::upgrade::{ADOPT_ENV, ADOPT_ENV_LINE, ADOPT_FAILED_ENV, Launch, check_line};

/// The mode a new `--log-file` is created with: the owner's alone ([SERVER.LOG.2]).
const LOG_FILE_MODE: u32 = 0o600;

/// Parses `args` (the program name first, as `std::env::args_os` gives it) and runs the
/// server until it is told to stop. Exit codes: 0 after a clean stop, 1 on a fatal error,
/// 2 when logging cannot be set up (clap exits by itself on a usage error).
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // [SERVER.UPGRADE.EXEC.14] An image an upgrade exec'd under the started command line finds
    // its descriptors in the environment: it adopts before anything of that command line (a
    // --detach, a socket to bind) is acted on again.
    match adopt_from_env() {
        Ok(Some((adopt, failed))) => return run_adopted(adopt, failed.as_deref()),
        Ok(None) => {}
        Err(e) => {
            eprintln!("phux-mio-server: {e}");
            return ExitCode::FAILURE;
        }
    }
    let config = Config::parse_from(args);
    if let Some(Command::Bridge(bridge)) = &config.command {
        return run_bridge(bridge);
    }
    if let Some(version) = config.check_upgrade {
        return check_upgrade(version);
    }
    if config.check_adopt {
        return check_adopt();
    }
    if let Some(image) = config.adopt_image {
        let args = AdoptArgs {
            image,
            previous_exe: config.previous_exe,
            by_env: false,
        };
        return run_adopted(args, config.adopt_failed.as_deref());
    }
    // [SERVER.DETACH.1] Out of the starting terminal's session before anything else, so its
    // hangup (which this server takes as a shutdown) never reaches it.
    if config.detach
        && let Err(e) = rustix::process::setsid()
    {
        eprintln!("phux-mio-server: --detach: cannot start a new session: {e}");
        return ExitCode::FAILURE;
    }
    if let Err(e) = init_logging(config.log_level.directive(), config.log_file.as_deref()) {
        eprintln!("phux-mio-server: {e}");
        return ExitCode::from(2);
    }
    match serve(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e),
    }
}

/// The bridge logs nothing: its stderr is often the far side of an ssh session, and it has
/// one thing to say when it fails.
fn run_bridge(args: &BridgeArgs) -> ExitCode {
    let result = phux_local::verify::target(args.socket.as_deref(), &args.name)
        .map_err(crate::bridge::BridgeError::from)
        .and_then(|target| crate::bridge::join(&target, !args.no_handoff));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("phux-mio-server bridge: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--check-upgrade VERSION`: whether this binary reads upgrade state `version`
/// ([SERVER.UPGRADE.EXEC.8]).
fn check_upgrade(version: u32) -> ExitCode {
    if phux_core::upgrade::reads_version(version) {
        println!("{}", check_line(version));
        // [SERVER.UPGRADE.EXEC.14]
        println!("{ADOPT_ENV_LINE}");
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "phux-mio-server: cannot read upgrade state version {version} (this binary reads \
             versions {:?})",
            phux_core::upgrade::READS_VERSIONS
        );
        ExitCode::FAILURE
    }
}

/// `--check-adopt`: reads the image on stdin and validates all of it as an adoption would,
/// without taking anything over ([SERVER.UPGRADE.EXEC.10]).
fn check_adopt() -> ExitCode {
    // [SERVER.UPGRADE.EXEC.12]
    let stdin = rustix::stdio::stdin();
    let result = crate::upgrade::load_image(stdin)
        .map_err(|e| format!("cannot read the image on stdin: {e}"))
        .and_then(|bytes| crate::driver::check_image(&bytes, &[]).map_err(|e| e.to_string()));
    match result {
        Ok(summary) => {
            println!("{}", crate::upgrade::adopt_line(&summary));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("phux-mio-server: cannot adopt this image: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Why [`ADOPT_ENV`] does not name what an upgrade hands over.
#[derive(Debug, thiserror::Error)]
#[error("{ADOPT_ENV}={0:?} does not name two descriptors (IMAGE PREVIOUS)")]
struct BadAdoptEnv(String);

/// The descriptors an upgrade named in [`ADOPT_ENV`] (and why the image it went to failed, from
/// [`ADOPT_FAILED_ENV`]), both taken out of the environment so that no program the server
/// starts inherits them ([SERVER.UPGRADE.EXEC.15]); `None` for a server started anew.
fn adopt_from_env() -> Result<Option<(AdoptArgs, Option<String>)>, BadAdoptEnv> {
    let Some(named) = std::env::var_os(ADOPT_ENV) else {
        return Ok(None);
    };
    let failed = std::env::var_os(ADOPT_FAILED_ENV).map(|r| r.to_string_lossy().into_owned());
    // [SERVER.UPGRADE.EXEC.15]
    // SAFETY: the first thing the process does, before it starts a thread (the log's, the
    // loop's, a child's): nothing reads or writes the environment meanwhile.
    #[allow(unsafe_code)]
    unsafe {
        std::env::remove_var(ADOPT_ENV);
        std::env::remove_var(ADOPT_FAILED_ENV);
    }
    let named = named.to_string_lossy().into_owned();
    let mut fds = named.split(' ').map(str::parse::<i32>);
    let (Some(Ok(image)), Some(Ok(previous)), None) = (fds.next(), fds.next(), fds.next()) else {
        return Err(BadAdoptEnv(named));
    };
    let args = AdoptArgs {
        image,
        // An image taking its state back has the previous binary's descriptor only to close.
        previous_exe: Some(previous),
        by_env: true,
    };
    Ok(Some((args, failed)))
}

/// `--adopt-image FD`: the new image of an upgrade takes the state over and serves on. If it
/// cannot, `adopt` has exec'd the previous binary, which takes the state back; this returns
/// only when that is impossible too.
fn run_adopted(args: AdoptArgs, failed: Option<&str>) -> ExitCode {
    let logging = |launch: &Launch| {
        if let Err(e) = init_logging(&launch.log_directive, launch.log_file.as_deref()) {
            eprintln!("phux-mio-server: {e}");
        }
    };
    let result = crate::driver::adopt(args, failed, logging)
        .map_err(std::io::Error::from)
        .and_then(Driver::run);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fatal(&e),
    }
}

fn serve(config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    // [SERVER.ID.1] One draw from the OS RNG at start, kept for the life of the process (and
    // across its upgrades).
    let server_id = crate::server_id()?;
    // [SERVER.LIMIT.4] Descriptors up to the hard limit, so that connections and terminals
    // do not run out at the default soft limit.
    match crate::nofile::raise() {
        Ok(Some((soft, hard))) => info!(soft, hard, "raised the descriptor limit"),
        Ok(None) => {}
        Err(e) => warn!(error = %e, "cannot raise the descriptor limit"),
    }
    let launch = Launch {
        server_id: server_id.to_vec(),
        default_command: config.default_command(),
        max_connections: config.max_connections as usize,
        max_terminals: config.max_terminals(),
        log_directive: config.log_level.directive().to_owned(),
        log_file: config.log_file.clone(),
        args: std::env::args_os().skip(1).collect(),
    };
    let mut engine_config = launch.engine_config();
    // [SERVER.REMAIN.1] [SERVER.REMAIN.2] From this command line (an upgraded image reads
    // them from the first one's arguments).
    engine_config.remain_on_exit = config.remain_on_exit;
    engine_config.remain_for = std::time::Duration::from_secs(config.remain_for);
    // [SERVER.UPGRADE.EXEC.1] Resolved now, as nginx does: the file may be replaced later.
    let context = std::env::current_exe().map(|binary| UpgradeContext { binary, launch });
    if let Err(e) = &context {
        warn!(error = %e, "cannot name our own binary; upgrades will be refused");
    }
    info!(
        max_connections = engine_config.max_connections,
        max_terminals = engine_config.max_terminals,
        remain_on_exit = engine_config.remain_on_exit,
        "limits"
    );
    let mut engine = ServerEngine::new(engine_config);
    // [SERVER.LIMIT.6]
    let models_budget = config.models_budget();
    info!(
        models_budget_mib = models_budget >> 20,
        "terminals' memory budget"
    );
    engine.set_models_budget(models_budget);

    if config.stdio {
        // [SERVER.STDIO.1] One client on stdin/stdout; stdout carries only the protocol.
        info!("serving one client on stdin/stdout");
        let mut driver = Driver::new(engine, Listen::Stdio)?;
        driver.set_busy_poll(config.busy_poll());
        if let Ok(context) = context {
            driver.enable_upgrade(context);
        }
        return Ok(driver.run()?);
    }

    // An explicit path may sit in a shared sticky directory such as /tmp; the default
    // directory must be private.
    let policy = if config.socket.is_some() {
        DirPolicy::Explicit
    } else {
        DirPolicy::Private
    };
    let path = socket_path(config.socket.clone(), &config.name)?;
    let socket = ServerSocket::bind_with(&path, policy)?;
    let ws = config.ws_options().map(|o| o.open(&path)).transpose()?;
    let mut driver = Driver::new(engine, Listen::Socket(socket))?;
    driver.set_busy_poll(config.busy_poll());
    if let Ok(context) = context {
        driver.enable_upgrade(context);
    }
    info!(socket = %path.display(), "listening");
    let mut out = std::io::stdout().lock();
    if let Some((door, secret)) = ws {
        let addr = door.addr();
        driver.enable_ws(door)?;
        info!(%addr, secret = %secret.display(), "WebSocket listening");
        // [WS.LISTEN.3] Before the socket's line, which scripts wait for.
        writeln!(
            out,
            "phux-mio-server websocket on ws://{addr}/ (secret in {})",
            secret.display()
        )?;
    }
    // Scripts wait for this line before connecting.
    writeln!(out, "phux-mio-server listening on {}", path.display())?;
    out.flush()?;
    drop(out);
    driver.run()?;
    Ok(())
}

fn init_logging(
    directive: &str,
    log_file: Option<&std::path::Path>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::new(directive);
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    if let Some(path) = log_file {
        // [SERVER.LOG.2] Created owner-only: even without secrets ([SERVER.LOG.1]) a log
        // tells who ran what, and when. An existing file keeps its mode.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_FILE_MODE)
            .open(path)?;
        builder
            .with_ansi(false)
            .with_writer(Mutex::new(file))
            .try_init()?;
    } else {
        // Colour only for a person at a terminal: a file or a pipe gets plain text
        // (https://no-color.org/ turns it off at a terminal too).
        let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        builder
            .with_ansi(colour)
            .with_writer(std::io::stderr)
            .try_init()?;
        LOGS_TO_STDERR.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Whether the log goes to stderr (no `--log-file`): a fatal error is then printed once, as
/// a plain line, not also as a log event.
static LOGS_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// A fatal error, said once on stderr as a plain line, and in the `--log-file` if there is one.
fn fatal(e: &dyn std::fmt::Display) -> ExitCode {
    if !LOGS_TO_STDERR.load(Ordering::Relaxed) {
        error!(error = %e, "fatal");
    }
    eprintln!("phux-mio-server: {e}");
    ExitCode::FAILURE
}
