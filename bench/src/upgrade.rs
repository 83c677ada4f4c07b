//! The in-place upgrade under load: a server holding 100 terminals of 2,000 lines of history
//! each, with 10 clients attached (each to 10 of them, reading everything), upgraded again
//! and again. For each upgrade, the time from the UPGRADE request to its OK (which the new
//! image sends, so the OK means the new image serves); alongside, an honest client pings every
//! 5 ms, and its longest round trip is the longest stall a client saw.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use phux_proto::Frame;
use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::Ping;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::payload::line_text;
use crate::procs::{PhuxServer, WARM, self_exe};
use crate::scale::{Fill, fill_file, spawn_many};
use crate::stats::{Summary, summarize};

/// The load the issue names.
pub const TERMINALS: usize = 100;
/// Attached clients, each attached to `TERMINALS / CLIENTS` terminals.
pub const CLIENTS: usize = 10;
/// Upgrades measured (the issue asks for at least 10).
pub const UPGRADES: usize = 12;

/// What the upgrades took and what the honest client saw.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Request to OK, per upgrade, µs.
    pub upgrade: Option<Summary>,
    /// The honest client's ping round trips over the whole run, µs.
    pub honest: Option<Summary>,
    /// Attached clients that lost their connection (should be 0).
    pub dropped: usize,
}

/// The `phux-mio-server` binary to upgrade: `server_bin`, else the one next to this bench
/// binary (cargo builds both into the same directory). The bench's own `__serve` role cannot
/// be upgraded: the new image must be a server binary.
pub fn server_binary(server_bin: Option<&Path>) -> Result<PathBuf> {
    if let Some(bin) = server_bin {
        return Ok(bin.to_owned());
    }
    let sibling = self_exe()?
        .parent()
        .map(|dir| dir.join("phux-mio-server"))
        .filter(|p| p.is_file());
    sibling.ok_or_else(|| {
        Error::Protocol(
            "no phux-mio-server next to phux-bench: build it (cargo build --release -p \
             phux-mio-server) or pass --server-bin"
                .into(),
        )
    })
}

/// Runs the measurement.
pub fn measure(server_bin: Option<&Path>) -> Result<Outcome> {
    let bin = server_binary(server_bin)?;
    let server = PhuxServer::start(Some(&bin))?;
    let dir = tempfile::tempdir().map_err(|e| Error::Protocol(format!("tempdir: {e}")))?;
    let file = fill_file(dir.path(), Fill::History)?;
    let argv = vec![
        "sh".to_owned(),
        "-c".to_owned(),
        "cat \"$0\"; exec cat".to_owned(),
        file.to_string_lossy().into_owned(),
    ];
    let mut setup = server.client()?;
    let ids = spawn_many(&mut setup, &argv, TERMINALS)?;
    let want = String::from_utf8_lossy(&line_text(2023)).into_owned();
    let end = Instant::now() + Duration::from_mins(2);
    for id in &ids {
        while !setup.screen(id)?.contains(&want) {
            if Instant::now() > end {
                return Err(Error::Protocol(format!("{id} never showed its history")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let stop = AtomicBool::new(false);
    let socket = server.socket.clone();
    let result = std::thread::scope(|s| -> Result<Outcome> {
        let mut readers = Vec::new();
        for chunk in ids.chunks(TERMINALS / CLIENTS) {
            let mut c = server.client()?;
            for id in chunk {
                c.attach(id)?;
            }
            let stop = &stop;
            readers.push(s.spawn(move || attached_reader(c, stop)));
        }
        std::thread::sleep(WARM);
        let honest = s.spawn(|| honest_pinger(&socket, &stop));
        let mut samples = Vec::new();
        let mut failure = None;
        for _ in 0..UPGRADES {
            let t0 = Instant::now();
            match setup.command(Command::Upgrade { binary: None }) {
                Ok(CommandResult::Ok) => samples.push(t0.elapsed().as_secs_f64() * 1e6),
                Ok(other) => {
                    failure = Some(format!("upgrade answered {other:?}"));
                    break;
                }
                Err(e) => {
                    failure = Some(format!("upgrade: {e}"));
                    break;
                }
            }
            // Some time between upgrades for the attached clients' and the pinger's traffic.
            std::thread::sleep(Duration::from_millis(200));
        }
        stop.store(true, Ordering::SeqCst);
        let honest = honest
            .join()
            .map_err(|_| Error::Protocol("the pinger panicked".into()))??;
        let dropped = readers
            .into_iter()
            .map(|r| r.join().unwrap_or(false))
            .filter(|ok| !ok)
            .count();
        if let Some(f) = failure {
            return Err(Error::Protocol(f));
        }
        Ok(Outcome {
            upgrade: summarize(&samples),
            honest: summarize(&honest),
            dropped,
        })
    });
    drop(setup);
    result
}

/// Reads everything the attached terminals send until `stop`; false if the connection broke.
fn attached_reader(mut c: Client, stop: &AtomicBool) -> bool {
    let mut nonce = 0u64;
    while !stop.load(Ordering::SeqCst) {
        nonce += 1;
        // A ping now and then keeps the read from waiting for the socket's timeout.
        if c.send(&Frame::Ping(Ping { nonce })).is_err() {
            return false;
        }
        let got = c.wait_for(|f| match f {
            Frame::Pong(p) if p.nonce == nonce => Some(()),
            _ => None,
        });
        if got.is_err() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Pings every 5 ms until `stop`; every round trip, µs.
pub(crate) fn honest_pinger(socket: &Path, stop: &AtomicBool) -> Result<Vec<f64>> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let mut samples = Vec::new();
    let mut nonce = 0u64;
    while !stop.load(Ordering::SeqCst) {
        nonce += 1;
        let t0 = Instant::now();
        c.send(&Frame::Ping(Ping { nonce }))?;
        c.wait_for(|f| match f {
            Frame::Pong(p) if p.nonce == nonce => Some(()),
            _ => None,
        })?;
        samples.push(t0.elapsed().as_secs_f64() * 1e6);
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(samples)
}
