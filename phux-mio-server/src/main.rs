//! `phux-mio-server`: the phux reference server on real PTYs.

use std::fs::OpenOptions;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Mutex;

use clap::Parser;
use phux_core::server::{ServerConfig, ServerEngine};
use phux_mio_server::config::Config;
use phux_mio_server::driver::{Driver, Listen};
use phux_mio_server::socket::{DirPolicy, ServerSocket, socket_path};
use tracing::{error, info};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let config = Config::parse();
    if let Err(e) = init_logging(&config) {
        eprintln!("phux-mio-server: {e}");
        return ExitCode::from(2);
    }
    match serve(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!(error = %e, "fatal");
            eprintln!("phux-mio-server: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    // [SERVER.ID.1] One draw from the OS RNG at start, kept for the life of the process.
    let server_id = phux_mio_server::server_id()?;
    let mut engine_config = ServerConfig::new(server_id.to_vec());
    engine_config.default_command = config.default_command();
    let engine = ServerEngine::new(engine_config);

    if config.stdio {
        // [SERVER.STDIO.1] One client on stdin/stdout; stdout carries only the protocol.
        info!("serving one client on stdin/stdout");
        return Ok(Driver::new(engine, Listen::Stdio)?.run()?);
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
    let driver = Driver::new(engine, Listen::Socket(socket))?;
    info!(socket = %path.display(), "listening");
    // Scripts wait for this line before connecting.
    let mut out = std::io::stdout().lock();
    writeln!(out, "phux-mio-server listening on {}", path.display())?;
    out.flush()?;
    drop(out);
    driver.run()?;
    Ok(())
}

fn init_logging(config: &Config) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let filter = EnvFilter::new(config.log_level.directive());
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match &config.log_file {
        Some(path) => {
            let file = OpenOptions::new().create(true).append(true).open(path)?;
            builder
                .with_ansi(false)
                .with_writer(Mutex::new(file))
                .try_init()?;
        }
        None => builder.with_writer(std::io::stderr).try_init()?,
    }
    Ok(())
}
