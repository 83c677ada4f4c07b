//! The helper processes the bench runs as copies of itself: the phux server (built from the
//! same library as `phux-mio-server`) and the minimal relays that stand for "the least a
//! server could do" in the latency comparisons.

use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixListener;
use std::path::Path;

use phux_core::server::{ServerConfig, ServerEngine};
use phux_mio_server::driver::{Driver, Listen};
use phux_mio_server::socket::{DirPolicy, ServerSocket};
use phux_mio_server::ws::WsOptions;
use phux_mio_server::{PtyChild, PtyRead, PtyWrite, SpawnSpec};
use rustix::event::{PollFd, PollFlags};
use rustix::process::{Resource, Rlimit};

use crate::error::{Context, Error, Result};

/// Raises the soft open-file limit to the hard one: 1,000 terminals need a master and a
/// pidfd each, 1,000 connections a socket each.
pub fn raise_nofile() -> u64 {
    let limit = rustix::process::getrlimit(Resource::Nofile);
    if let Some(max) = limit.maximum {
        let _ = rustix::process::setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(max),
                maximum: Some(max),
            },
        );
    }
    rustix::process::getrlimit(Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// The connection and terminal caps the bench's server runs with: above any plan's load.
pub const SCALE_LIMIT: usize = 4096;

/// `__serve`: the phux server on `socket` (and WebSocket clients on `listen_ws`), exactly as
/// `phux-mio-server --socket [--listen-ws]` runs it, without a log subscriber (so nothing is
/// formatted on the hot path).
pub fn serve(socket: &Path, listen_ws: Option<std::net::SocketAddr>) -> Result<()> {
    raise_nofile();
    let server_id = phux_mio_server::server_id().context("server id")?;
    let mut config = ServerConfig::new(server_id.to_vec());
    // The scale section offers more connections and terminals than the server's defaults
    // admit (those protect a shared host); the bench measures the server at that load.
    config.max_connections = SCALE_LIMIT;
    config.max_terminals = SCALE_LIMIT;
    let engine = ServerEngine::new(config);
    let bound = ServerSocket::bind_with(socket, DirPolicy::Explicit)
        .map_err(|e| Error::Protocol(format!("cannot bind {}: {e}", socket.display())))?;
    let ws = listen_ws
        .map(|addr| {
            WsOptions {
                addr,
                allow_remote: false,
                origins: Vec::new(),
                allow_no_origin: false,
                secret_file: None,
            }
            .open(socket)
            .map_err(|e| Error::Protocol(e.to_string()))
        })
        .transpose()?;
    let mut driver = Driver::new(engine, Listen::Socket(bound)).context("starting the driver")?;
    let mut out = io::stdout().lock();
    if let Some((door, secret)) = ws {
        let addr = door.addr();
        driver.enable_ws(door).context("the WebSocket listener")?;
        // The line `phux-mio-server` prints, before the ready line.
        writeln!(
            out,
            "phux-mio-server websocket on ws://{addr}/ (secret in {})",
            secret.display()
        )
        .context("stdout")?;
    }
    writeln!(out, "phux-mio-server listening on {}", socket.display()).context("stdout")?;
    out.flush().context("stdout")?;
    drop(out);
    driver.run().context("the server loop")
}

/// What a relay does with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RelayMode {
    /// Reply one byte to every read: a bare Unix-socket request/response.
    Pong,
    /// Write the request to the PTY, then reply one byte: the least an acknowledged-input
    /// server can do.
    Ack,
    /// Copy socket bytes to the PTY and PTY output to the socket: a minimal terminal relay.
    Echo,
}

/// `__relay`: bind `socket`, start `argv` on a PTY (not for [`RelayMode::Pong`]), print a
/// ready line, serve one connection until it closes.
pub fn relay(socket: &Path, mode: RelayMode, argv: &[String]) -> Result<()> {
    let listener = UnixListener::bind(socket).context("binding the relay socket")?;
    let child = match mode {
        RelayMode::Pong => None,
        RelayMode::Ack | RelayMode::Echo => Some(spawn_pty(argv)?),
    };
    let mut out = io::stdout().lock();
    writeln!(out, "relay ready").context("stdout")?;
    out.flush().context("stdout")?;
    drop(out);
    let (mut conn, _) = listener.accept().context("relay accept")?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut pty_buf = vec![0u8; 64 * 1024];
    loop {
        let mut fds = vec![PollFd::new(&conn, PollFlags::IN)];
        let master = child.as_ref().and_then(PtyChild::master_fd);
        if let Some(m) = master.as_ref() {
            fds.push(PollFd::new(m, PollFlags::IN));
        }
        rustix::event::poll(&mut fds, None).context("relay poll")?;
        let conn_ready = fds.first().is_some_and(|f| !f.revents().is_empty());
        let pty_ready = fds.get(1).is_some_and(|f| !f.revents().is_empty());
        drop(fds);
        if conn_ready {
            let n = conn.read(&mut buf).context("relay read")?;
            if n == 0 {
                return Ok(());
            }
            let req = buf.get(..n).unwrap_or_default();
            if let Some(c) = &child {
                write_pty(c, req)?;
            }
            if mode != RelayMode::Echo {
                conn.write_all(b"K").context("relay reply")?;
            }
        }
        if pty_ready && let Some(c) = &child {
            loop {
                match c.read(&mut pty_buf).context("relay PTY read")? {
                    PtyRead::Data(n) => {
                        if mode == RelayMode::Echo {
                            conn.write_all(pty_buf.get(..n).unwrap_or_default())
                                .context("relay forward")?;
                        }
                    }
                    PtyRead::WouldBlock => break,
                    PtyRead::Eof => return Ok(()),
                }
            }
        }
    }
}

/// Starts `argv` (a program and its arguments) on a fresh PTY.
pub fn spawn_pty(argv: &[String]) -> Result<PtyChild> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Error::Protocol("no command to spawn".into()))?;
    phux_mio_server::spawn(&SpawnSpec::new(program).args(args))
        .map_err(|e| Error::Protocol(format!("spawn {program}: {e}")))
}

/// Writes all of `bytes` to the non-blocking master, waiting for room when it is full.
pub fn write_pty(child: &PtyChild, mut bytes: &[u8]) -> Result<()> {
    while !bytes.is_empty() {
        match child.write(bytes).context("PTY write")? {
            PtyWrite::Written(n) => bytes = bytes.get(n..).unwrap_or_default(),
            PtyWrite::WouldBlock => {
                if let Some(m) = child.master_fd() {
                    let mut fds = [PollFd::new(&m, PollFlags::OUT)];
                    rustix::event::poll(&mut fds, None).context("PTY poll")?;
                }
            }
            PtyWrite::Gone => return Err(Error::Protocol("the PTY hung up".into())),
        }
    }
    Ok(())
}

/// Waits up to `timeout` for `fd` to become readable; false on timeout.
pub fn wait_readable(fd: impl AsFd, timeout: std::time::Duration) -> Result<bool> {
    let ts = rustix::event::Timespec {
        tv_sec: timeout.as_secs().cast_signed(),
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let n = rustix::event::poll(&mut fds, Some(&ts)).context("poll")?;
    Ok(n > 0)
}
