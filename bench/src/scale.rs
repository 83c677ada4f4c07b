//! Section 4: many terminals and connections on one server. Memory per terminal (server RSS
//! delta / count) against tmux with as many windows, memory per connection, and APPLY_INPUT
//! latency while 100 terminals stream output.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult, Signal};
use phux_proto::{Frame, TerminalId};

use crate::client::Client;
use crate::error::{Context, Error, Result};
use crate::latency::{PhuxTerm, sink_argv};
use crate::payload::line_text;
use crate::procs::{PhuxServer, WARM, self_exe, settled_rss};
use crate::tmux::Tmux;

/// What each terminal holds while idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Nothing written: a fresh, empty screen.
    Idle,
    /// 24 full lines of 80 columns: a full screen, no history.
    Screen,
    /// 2,024 full lines: a full screen and 2,000 lines of history.
    History,
}

impl Fill {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Screen => "full screen",
            Self::History => "screen + 2,000 lines history",
        }
    }

    fn lines(self) -> usize {
        match self {
            Self::Idle => 0,
            Self::Screen => 24,
            Self::History => 2024,
        }
    }
}

/// Writes the fill text (80-column lines, no newline after the last, so the screen ends
/// exactly full) into `dir`; its path.
pub fn fill_file(dir: &Path, fill: Fill) -> Result<std::path::PathBuf> {
    let path = dir.join(format!("fill-{}.txt", fill.lines()));
    let mut text = Vec::new();
    for i in 0..fill.lines() {
        if i > 0 {
            text.push(b'\n');
        }
        text.extend_from_slice(&line_text(i));
        // 79 characters plus one more: all 80 columns used.
        text.push(b'|');
    }
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&text))
        .context("writing the fill file")?;
    Ok(path)
}

/// The command a terminal holding `file` runs: `cat` after printing it, or plain `cat`.
pub fn fill_argv(file: Option<&Path>) -> Vec<String> {
    match file {
        None => vec!["cat".to_owned()],
        Some(f) => vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "cat \"$0\"; exec cat".to_owned(),
            f.to_string_lossy().into_owned(),
        ],
    }
}

/// Spawns `count` terminals on one connection, pipelined in batches.
pub(crate) fn spawn_many(c: &mut Client, argv: &[String], count: usize) -> Result<Vec<TerminalId>> {
    let mut ids = Vec::with_capacity(count);
    let mut left = count;
    while left > 0 {
        let batch = left.min(32);
        let reqs: Vec<u32> = (0..batch)
            .map(|_| c.send_spawn(argv))
            .collect::<Result<_>>()?;
        for r in reqs {
            ids.push(c.wait_spawned(r)?);
        }
        left -= batch;
    }
    Ok(ids)
}

/// KiB of `server`'s RSS per terminal (a fresh server: ours or the reference), for `count`
/// terminals holding `fill`.
pub fn phux_per_terminal(server: &PhuxServer, fill: Fill, count: usize, dir: &Path) -> Result<f64> {
    let mut c = server.client()?;
    let before = settled_rss(
        server.pid(),
        Duration::from_millis(500),
        Duration::from_secs(5),
    )?;
    let file = match fill {
        Fill::Idle => None,
        _ => Some(fill_file(dir, fill)?),
    };
    let ids = spawn_many(&mut c, &fill_argv(file.as_deref()), count)?;
    // The fill text is in once the last terminal's screen shows its last line.
    if fill != Fill::Idle
        && let Some(last) = ids.last()
    {
        let want = String::from_utf8_lossy(&line_text(fill.lines() - 1)).into_owned();
        let end = Instant::now() + Duration::from_mins(1);
        while !c.screen(last)?.contains(&want) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let after = settled_rss(
        server.pid(),
        Duration::from_secs(1),
        Duration::from_secs(30),
    )?;
    Ok(after.saturating_sub(before) as f64 / count as f64)
}

/// KiB of tmux server RSS per window, for `count` windows holding `fill`.
pub fn tmux_per_window(fill: Fill, count: usize, dir: &Path) -> Result<f64> {
    let tmux = Tmux::new();
    tmux.new_session("scale", &["cat".to_owned()], 2000)?;
    let pid = tmux.server_pid()?;
    let mut ctl = tmux.control("scale")?;
    let before = settled_rss(pid, Duration::from_millis(500), Duration::from_secs(5))?;
    let file = match fill {
        Fill::Idle => None,
        _ => Some(fill_file(dir, fill)?),
    };
    let cmd = match &file {
        None => "new-window -d cat".to_owned(),
        Some(f) => format!("new-window -d \"cat '{}'; exec cat\"", f.display()),
    };
    let mut left = count;
    while left > 0 {
        let batch = left.min(32);
        for _ in 0..batch {
            ctl.send(&cmd)?;
        }
        for _ in 0..batch {
            ctl.wait_end(|_| {})?;
        }
        left -= batch;
    }
    // A control client that does not read makes tmux stop reading the panes (control-mode
    // flow control), so it leaves before the panes' output is taken in.
    drop(ctl);
    let after = settled_rss(pid, Duration::from_secs(1), Duration::from_secs(30))?;
    Ok(after.saturating_sub(before) as f64 / count as f64)
}

/// KiB of server RSS per connection that has completed HELLO, for `count` connections.
pub fn phux_per_connection(server_bin: Option<&Path>, count: usize) -> Result<f64> {
    let server = PhuxServer::start(server_bin)?;
    let first = server.client()?;
    let before = settled_rss(
        server.pid(),
        Duration::from_millis(500),
        Duration::from_secs(5),
    )?;
    let mut conns = Vec::with_capacity(count);
    for _ in 0..count {
        conns.push(server.client()?);
    }
    let after = settled_rss(
        server.pid(),
        Duration::from_secs(1),
        Duration::from_secs(30),
    )?;
    drop(conns);
    drop(first);
    Ok(after.saturating_sub(before) as f64 / count as f64)
}

/// APPLY_INPUT samples (µs) on a quiet terminal, alternating rounds with `streams` other
/// terminals frozen (A) and streaming about `rate` bytes/s each to an attached reader (B).
pub struct LoadedApply {
    /// Samples with the streams frozen.
    pub quiet: Vec<f64>,
    /// Samples with the streams running.
    pub loaded: Vec<f64>,
    /// Output bytes the reader received while streaming.
    pub streamed: u64,
    /// Seconds the streams ran in the loaded rounds (warm-up and operations).
    pub loaded_secs: f64,
}

fn signal_all(c: &mut Client, ids: &[TerminalId], signal: Signal) -> Result<()> {
    let reqs: Vec<u32> = ids
        .iter()
        .map(|t| {
            c.send_command(Command::SignalTerminal {
                terminal: t.clone(),
                signal,
            })
        })
        .collect::<Result<_>>()?;
    for r in reqs {
        match c.wait_result(r)? {
            CommandResult::Ok => {}
            other => return Err(Error::Protocol(format!("SIGNAL_TERMINAL: {other:?}"))),
        }
    }
    Ok(())
}

/// Runs the loaded APPLY_INPUT comparison.
pub fn apply_under_load(
    server_bin: Option<&Path>,
    streams: usize,
    rate: u64,
    rounds: usize,
    ops: usize,
) -> Result<LoadedApply> {
    let server = PhuxServer::start(server_bin)?;
    let exe = self_exe()?.to_string_lossy().into_owned();
    let argv = vec![
        exe,
        "__stream".to_owned(),
        "--rate".to_owned(),
        rate.to_string(),
    ];
    let mut ctl = server.client()?;
    let ids = spawn_many(&mut ctl, &argv, streams)?;
    // One reader attached to every stream, draining on its own thread.
    let mut reader = server.client()?;
    for t in &ids {
        reader.attach(t)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let streamed = Arc::new(AtomicU64::new(0));
    let (stop2, streamed2) = (Arc::clone(&stop), Arc::clone(&streamed));
    let drain = std::thread::spawn(move || -> Result<()> {
        while !stop2.load(Ordering::Relaxed) {
            if let Frame::TerminalOutput(o) = reader.recv()? {
                streamed2.fetch_add(o.bytes.len() as u64, Ordering::Relaxed);
            }
        }
        Ok(())
    });
    let mut probe = PhuxTerm::start(&server, &sink_argv())?;
    std::thread::sleep(WARM);
    // Start every stream, then freeze them for the first quiet round.
    for t in &ids {
        let go = ctl.apply_paste(t, b"\r");
        match ctl.command(go)? {
            CommandResult::Ok => {}
            other => return Err(Error::Protocol(format!("starting a stream: {other:?}"))),
        }
    }
    signal_all(&mut ctl, &ids, Signal::Freeze)?;
    let mut out = LoadedApply {
        quiet: Vec::new(),
        loaded: Vec::new(),
        streamed: 0,
        loaded_secs: 0.0,
    };
    for _ in 0..rounds {
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..ops {
            out.quiet.push(probe.apply()?);
        }
        signal_all(&mut ctl, &ids, Signal::Resume)?;
        // The rate counts the warm-up too: a quick run's operations take a few milliseconds,
        // less than one of the streams' 40 ms bursts.
        let (b0, t0) = (streamed.load(Ordering::Relaxed), Instant::now());
        std::thread::sleep(WARM);
        for _ in 0..ops {
            out.loaded.push(probe.apply()?);
        }
        out.loaded_secs += t0.elapsed().as_secs_f64();
        out.streamed += streamed.load(Ordering::Relaxed) - b0;
        signal_all(&mut ctl, &ids, Signal::Freeze)?;
    }
    stop.store(true, Ordering::Relaxed);
    // Wake the reader with one more stream burst so it sees the stop flag.
    signal_all(&mut ctl, &ids, Signal::Resume)?;
    let _ = drain.join();
    Ok(out)
}
