//! Section 1: output throughput. A child writes the same text into its PTY for every
//! contender; we time from the go line to the last expected byte at the receiver.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use phux_mio_server::{PtyChild, PtyRead, SpawnSpec};
use phux_proto::command::CommandResult;
use phux_proto::frame::{TerminalOutputView, TombstoneReason};
use phux_proto::{Frame, TerminalId};

use crate::client::Client;
use crate::error::{Context, Error, Result};
use crate::latency::Relay;
use crate::payload::{END, READY, line_text, master_bytes};
use crate::procs::{PhuxServer, WARM, cpu_secs, self_exe};
use crate::roles::{RelayMode, spawn_pty, wait_readable, write_pty};
use crate::stats::{Summary, ratio};
use crate::tmux::{Line, Tmux, classify, unescaped_len};

/// One timed transfer.
#[derive(Debug, Clone)]
pub struct Run {
    /// Seconds from the go line to the last expected byte (at the slowest receiver).
    pub secs: f64,
    /// Bytes the receiver expected (the writer's lines as the master delivers them).
    pub expected: u64,
    /// Bytes the (least served) receiver actually got.
    pub delivered: u64,
    /// Stream restarts (BOOTSTRAP_TOMBSTONE) a phux receiver saw; each means a gap.
    pub tombstones: u64,
    /// For phux with `hold`: GET_SCREEN and a fresh attach's bootstrap both show the last line.
    pub screen_ok: Option<bool>,
    /// For phux: CPU seconds the server spent from the go line to the last expected byte.
    pub server_cpu: Option<f64>,
    /// For phux: the TERMINAL_OUTPUT frames the first viewer received (its bytes over this are
    /// the mean frame size).
    pub frames: Option<u64>,
    /// For phux: how many of those frames carried fewer than [`SMALL_FRAME`] bytes.
    pub small_frames: Option<u64>,
}

/// A TERMINAL_OUTPUT shorter than this is "small" in the frame-size figures: the cost a
/// reader pays per frame is spent on few bytes.
pub const SMALL_FRAME: usize = 512;

/// How a phux viewer reads its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// As fast as Rust reads: each frame's bytes are looked at in place and counted.
    Fast,
    /// A realistic client (a script, a browser): it spends this long on every frame it
    /// receives before reading the next, busy (its CPU competes with the server's).
    Slow(Duration),
}

/// The slow reader's cost per frame: a few microseconds, what a script's frame parsing or a
/// browser's message event costs, far below what its terminal emulator then spends per byte.
pub const SLOW_FRAME_COST: Duration = Duration::from_micros(5);

/// Burns `d` of CPU time, as a reader busy with a frame would.
fn busy(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

impl Run {
    /// Bytes per second, counting only what was delivered.
    pub fn rate(&self) -> f64 {
        self.delivered.min(self.expected) as f64 / self.secs.max(1e-9)
    }

    /// Everything arrived, nothing was dropped or restarted.
    pub fn complete(&self) -> bool {
        self.delivered >= self.expected && self.tombstones == 0
    }
}

/// How long a viewer waits for more of its stream before it counts the run as cut short.
const STALL: Duration = Duration::from_secs(10);

/// A generous bound for one transfer: 1 MiB/s plus slack (the slowest contender, tmux
/// control mode, manages well over 10 MiB/s).
fn transfer_deadline(expected: u64) -> Duration {
    Duration::from_secs(30 + expected / (1 << 20))
}

fn writer_argv(lines: u64, hold: bool) -> Result<Vec<String>> {
    let mut argv = vec![
        self_exe()?.to_string_lossy().into_owned(),
        "__writer".to_owned(),
        "--lines".to_owned(),
        lines.to_string(),
    ];
    if hold {
        argv.push("--hold".to_owned());
    }
    Ok(argv)
}

/// How a [`read_master`] loop ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The reader said it had what it wanted.
    Done,
    /// The master reached end of file (or was closed).
    Eof,
    /// The deadline passed first.
    Deadline,
}

/// Reads the master chunk by chunk, handing each to `on_data`, until `on_data` says it is
/// done, the master ends, or `end` passes.
fn read_master(
    child: &PtyChild,
    end: Instant,
    mut on_data: impl FnMut(&[u8]) -> bool,
) -> Result<Ended> {
    let mut buf = vec![0u8; 64 * 1024];
    while let Some(fd) = child.master_fd() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Ended::Deadline);
        }
        if !wait_readable(fd, left.min(Duration::from_secs(1)))? {
            continue;
        }
        match child.read(&mut buf).context("reading the master")? {
            PtyRead::Data(n) => {
                if on_data(buf.get(..n).unwrap_or_default()) {
                    return Ok(Ended::Done);
                }
            }
            PtyRead::WouldBlock => {}
            PtyRead::Eof => break,
        }
    }
    Ok(Ended::Eof)
}

/// Reads the master until `pred(all read so far)`; the bytes read. An error if the master
/// ends or the deadline passes first.
fn read_until(
    child: &PtyChild,
    deadline: Duration,
    pred: impl Fn(&[u8]) -> bool,
) -> Result<Vec<u8>> {
    let mut got = Vec::new();
    let ended = read_master(child, Instant::now() + deadline, |b| {
        got.extend_from_slice(b);
        pred(&got)
    })?;
    match ended {
        Ended::Done => Ok(got),
        Ended::Eof => Err(Error::Protocol("the child's output ended early".into())),
        Ended::Deadline => Err(Error::Timeout("the child's ready line".into())),
    }
}

/// Reads whatever the master holds now, without waiting: what came before the timed part.
fn discard_pending(child: &PtyChild) -> Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    while let PtyRead::Data(_) = child.read(&mut buf).context("reading the master")? {}
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Reads a master until `expected` bytes have arrived (or it ends, or the transfer's deadline
/// passes). Returns (seconds from `t0`, bytes read).
fn drain_master(child: &PtyChild, t0: Instant, expected: u64) -> Result<(f64, u64)> {
    let mut count = 0u64;
    // Stops at the last expected byte: a holding writer would keep the master open.
    read_master(child, t0 + transfer_deadline(expected), |b| {
        count += b.len() as u64;
        count >= expected
    })?;
    Ok((t0.elapsed().as_secs_f64(), count))
}

/// Reads and discards a master's output until it ends or `bound` passes.
fn await_eof(child: &PtyChild, bound: Duration) -> Result<()> {
    read_master(child, Instant::now() + bound, |_| false).map(drop)
}

/// The physical limit: this process reads the writer's PTY master directly.
pub fn direct(lines: u64) -> Result<Run> {
    let child = spawn_pty(&writer_argv(lines, false)?)?;
    // The ready line's end too: it is written apart from the word, and must not be counted.
    let ready_line = [READY, b"\r\n"].concat();
    read_until(&child, Duration::from_secs(30), |b| {
        contains(b, &ready_line)
    })?;
    std::thread::sleep(WARM);
    discard_pending(&child)?;
    let expected = master_bytes(lines);
    let t0 = Instant::now();
    write_pty(&child, b"\n")?;
    let (secs, delivered) = drain_master(&child, t0, expected)?;
    Ok(Run {
        secs,
        expected,
        delivered,
        tombstones: 0,
        screen_ok: None,
        server_cpu: None,
        frames: None,
        small_frames: None,
    })
}

struct Viewed {
    count: u64,
    done: Option<Instant>,
    tombstones: u64,
    frames: u64,
    small_frames: u64,
}

/// Receives one viewer's stream until TERMINAL_CLOSED, signalling `tx` once `expected`
/// bytes are in. Output is read borrowed, as a viewer feeding its own screen would read it;
/// the few other frames are decoded whole.
fn view(
    mut c: Client,
    t: &TerminalId,
    expected: u64,
    reader: Reader,
    tx: &mpsc::Sender<()>,
) -> Result<Viewed> {
    let mut v = Viewed {
        count: 0,
        done: None,
        tombstones: 0,
        frames: 0,
        small_frames: 0,
    };
    // A server that drops a slow viewer's output silently leaves it waiting for bytes that
    // never come: after a stall the run counts what arrived (INCOMPLETE) instead of waiting
    // out the transfer's whole deadline.
    c.set_read_timeout(STALL)?;
    let watched = c.wait_for_raw(|raw| {
        if let Some(o) = TerminalOutputView::decode(raw)? {
            if let Reader::Slow(cost) = reader {
                busy(cost);
            }
            if &o.terminal == t {
                v.frames += 1;
                v.small_frames += u64::from(o.bytes.len() < SMALL_FRAME);
                v.count += o.bytes.len() as u64;
                if v.done.is_none() && v.count >= expected {
                    v.done = Some(Instant::now());
                    let _ = tx.send(());
                }
            }
            return Ok(None);
        }
        Ok(match Frame::decode(raw)? {
            Frame::BootstrapTombstone(b)
                if &b.terminal == t && b.reason == TombstoneReason::OutboundGap =>
            {
                v.tombstones += 1;
                None
            }
            Frame::TerminalClosed(closed) if &closed.terminal == t => Some(()),
            _ => None,
        })
    });
    if v.done.is_none() {
        let _ = tx.send(());
    }
    match watched {
        Ok(()) => Ok(v),
        Err(Error::Timeout(_)) => Ok(v),
        Err(e) => Err(e),
    }
}

/// Polls GET_SCREEN until it contains `needle`.
fn wait_screen(ctl: &mut Client, t: &TerminalId, needle: &str) -> Result<()> {
    let end = Instant::now() + Duration::from_secs(30);
    while !ctl.screen(t)?.contains(needle) {
        if Instant::now() >= end {
            return Err(Error::Timeout(format!("`{needle}` on the screen")));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn ok_or(result: CommandResult, what: &str) -> Result<()> {
    match result {
        CommandResult::Ok => Ok(()),
        other => Err(Error::Protocol(format!("{what}: {other:?}"))),
    }
}

/// A phux server (ours or the reference) delivering to `clients` attached viewers, each
/// reading as `reader` says. With `hold` the writer stays after its payload, so GET_SCREEN and
/// a fresh bootstrap can be checked for the last line; without it the writer exits at once
/// (the no-loss-on-exit check).
pub fn phux(
    server: &PhuxServer,
    lines: u64,
    clients: usize,
    hold: bool,
    reader: Reader,
) -> Result<Run> {
    let mut ctl = server.client()?;
    let t = ctl.spawn(&writer_argv(lines, hold)?)?;
    let mut viewers = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut v = server.client()?;
        v.attach(&t)?;
        viewers.push(v);
    }
    wait_screen(&mut ctl, &t, std::str::from_utf8(READY).unwrap_or_default())?;
    std::thread::sleep(WARM);
    for v in &mut viewers {
        v.sync()?;
    }
    let expected = master_bytes(lines);
    let (tx, rx) = mpsc::channel();
    let handles: Vec<_> = viewers
        .into_iter()
        .map(|v| {
            let (t, tx) = (t.clone(), tx.clone());
            std::thread::spawn(move || view(v, &t, expected, reader, &tx))
        })
        .collect();
    let go = ctl.apply_paste(&t, b"\r");
    let cpu0 = cpu_secs(server.pid())?;
    let t0 = Instant::now();
    let id = ctl.send_command(go)?;
    ok_or(ctl.wait_result(id)?, "go")?;
    let end = t0 + transfer_deadline(expected);
    for _ in 0..clients {
        if rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
            .is_err()
        {
            break;
        }
    }
    let server_cpu = Some(cpu_secs(server.pid())? - cpu0);
    let mut screen_ok = None;
    if hold {
        let last = String::from_utf8_lossy(&line_text((lines - 1) as usize)).into_owned();
        let on_screen = ctl.screen(&t)?.contains(&last);
        let mut fresh = server.client()?;
        let boot = fresh.attach(&t)?;
        let in_bootstrap = contains(&boot, last.as_bytes());
        drop(fresh);
        screen_ok = Some(on_screen && in_bootstrap);
        let release = ctl.apply_paste(&t, b"\r");
        ok_or(ctl.command(release)?, "release")?;
    }
    let mut run = Run {
        secs: 0.0,
        expected,
        delivered: u64::MAX,
        tombstones: 0,
        screen_ok,
        server_cpu,
        frames: None,
        small_frames: None,
    };
    for h in handles {
        let v = h
            .join()
            .map_err(|_| Error::Protocol("a viewer thread panicked".into()))??;
        if run.frames.is_none() {
            run.frames = Some(v.frames);
            run.small_frames = Some(v.small_frames);
        }
        let done = v.done.unwrap_or_else(Instant::now);
        run.secs = run.secs.max((done - t0).as_secs_f64());
        run.delivered = run.delivered.min(v.count);
        run.tombstones += v.tombstones;
    }
    Ok(run)
}

/// tmux control mode (`tmux -C`) receiving the pane's output as `%output` lines. With `hold`
/// the pane's writer stays until we have everything; without it, it exits at once (tmux then
/// closes the pane and the session).
pub fn tmux_control(lines: u64, hold: bool) -> Result<Run> {
    let tmux = Tmux::new();
    tmux.new_session("bench", &writer_argv(lines, hold)?, 2000)?;
    let pane = tmux.pane("bench")?;
    let end = Instant::now() + Duration::from_secs(30);
    while !tmux
        .run(&["capture-pane", "-p", "-t", &pane])?
        .contains(std::str::from_utf8(READY).unwrap_or_default())
    {
        if Instant::now() >= end {
            return Err(Error::Timeout("the writer in tmux".into()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut ctl = tmux.control("bench")?;
    std::thread::sleep(WARM);
    ctl.send("display-message -p sync")?;
    ctl.wait_end(|_| {})?;
    let expected = master_bytes(lines);
    let t0 = Instant::now();
    ctl.send(&format!("send-keys -t {pane} Enter"))?;
    let mut count = 0u64;
    let mut done = None;
    while let Some(line) = ctl.next_line()? {
        match classify(line) {
            Line::Output(d) => {
                count += unescaped_len(d);
                if count >= expected {
                    done = Some(t0.elapsed().as_secs_f64());
                    break;
                }
            }
            Line::Exit => break,
            Line::End | Line::Other => {}
        }
        if t0.elapsed() > transfer_deadline(expected) {
            break;
        }
    }
    let secs = done.unwrap_or_else(|| t0.elapsed().as_secs_f64());
    if hold {
        let _ = ctl.send(&format!("send-keys -t {pane} Enter"));
    }
    Ok(Run {
        secs,
        expected,
        delivered: count,
        tombstones: 0,
        screen_ok: None,
        server_cpu: None,
        frames: None,
        small_frames: None,
    })
}

/// tmux with an ordinary client attached through a PTY we drain: the way people use it. The
/// client is sent what changed on the screen, not the stream, so the transfer is done when
/// the line the writer prints after its payload ([`END`]) reaches the client: tmux handles
/// the pane's output in order, so every payload byte went through before it.
pub fn tmux_attached(lines: u64) -> Result<Run> {
    let tmux = Tmux::new();
    let mut argv = writer_argv(lines, true)?;
    argv.push("--end-marker".to_owned());
    tmux.new_session("bench", &argv, 2000)?;
    let attach = spawn_pty(&tmux.argv(&["attach-session", "-t", "bench"]))?;
    read_until(&attach, Duration::from_secs(30), |b| contains(b, READY))?;
    std::thread::sleep(WARM);
    discard_pending(&attach)?;
    let expected = master_bytes(lines);
    let t0 = Instant::now();
    write_pty(&attach, b"\r")?;
    // The end of the last read is kept, so that a marker split between two reads is seen.
    let mut window: Vec<u8> = Vec::new();
    let ended = read_master(&attach, t0 + transfer_deadline(expected), |b| {
        window.drain(..window.len().saturating_sub(END.len()));
        window.extend_from_slice(b);
        contains(&window, END)
    })?;
    let done = (ended == Ended::Done).then(|| t0.elapsed().as_secs_f64());
    // Release the writer; dropping `tmux` then ends its server, and the client with it.
    write_pty(&attach, b"\r")?;
    Ok(Run {
        secs: done.unwrap_or_else(|| t0.elapsed().as_secs_f64()),
        expected,
        delivered: if done.is_some() { expected } else { 0 },
        tombstones: 0,
        screen_ok: None,
        server_cpu: None,
        frames: None,
        small_frames: None,
    })
}

/// `dtach -a` (no screen tracking) attached through a PTY we drain; the writer runs under
/// `dtach -n` and holds after its payload until every byte is in.
pub fn dtach(lines: u64) -> Result<Run> {
    let dir = tempfile::tempdir().context("scratch directory")?;
    let sock = dir.path().join("dtach.sock");
    let sock_s = sock.to_string_lossy().into_owned();
    let status = Command::new("dtach")
        .args(["-n", &sock_s, "-E", "-z"])
        .args(writer_argv(lines, true)?)
        .stdin(Stdio::null())
        .status()
        .context("dtach -n")?;
    if !status.success() {
        return Err(Error::Protocol("dtach -n failed".into()));
    }
    let attach = phux_mio_server::spawn(
        &SpawnSpec::new("dtach").args(["-a", &sock_s, "-E", "-z", "-r", "none"]),
    )
    .map_err(|e| Error::Protocol(format!("spawn dtach -a: {e}")))?;
    std::thread::sleep(WARM);
    discard_pending(&attach)?;
    let expected = master_bytes(lines);
    let t0 = Instant::now();
    write_pty(&attach, b"\n")?;
    let (secs, delivered) = drain_master(&attach, t0, expected)?;
    // Released only now: dtach drops the last few KiB of a child that exits right after
    // writing them, which would cut the stream short rather than measure its rate. The
    // session then ends, and so does the attached dtach: wait for that, so the release is
    // forwarded before the attached end is killed and no session is left behind.
    write_pty(&attach, b"\n")?;
    await_eof(&attach, Duration::from_secs(10))?;
    Ok(Run {
        secs,
        expected,
        delivered,
        tombstones: 0,
        screen_ok: None,
        server_cpu: None,
        frames: None,
        small_frames: None,
    })
}

/// A minimal relay (`__relay --mode echo`: PTY output copied to a Unix socket, nothing
/// parsed or kept) delivering to one socket reader.
pub fn relay(lines: u64) -> Result<Run> {
    let mut relay = Relay::start(RelayMode::Echo, &writer_argv(lines, false)?)?;
    let conn = relay.conn();
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = Vec::new();
    while !contains(&seen, READY) {
        let n = conn.read(&mut buf).context("reading the relay")?;
        if n == 0 {
            return Err(Error::Protocol("the relay closed early".into()));
        }
        seen.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    std::thread::sleep(WARM);
    while wait_readable(&*conn, Duration::ZERO)? {
        if conn.read(&mut buf).context("reading the relay")? == 0 {
            break;
        }
    }
    let expected = master_bytes(lines);
    let t0 = Instant::now();
    conn.write_all(b"\n").context("go")?;
    let mut count = 0u64;
    let mut done = None;
    loop {
        let n = conn.read(&mut buf).context("reading the relay")?;
        if n == 0 {
            break;
        }
        count += n as u64;
        if done.is_none() && count >= expected {
            done = Some(t0.elapsed().as_secs_f64());
        }
    }
    Ok(Run {
        secs: done.unwrap_or_else(|| t0.elapsed().as_secs_f64()),
        expected,
        delivered: count,
        tombstones: 0,
        screen_ok: None,
        server_cpu: None,
        frames: None,
        small_frames: None,
    })
}

/// How far above the direct drain a contender's median may come before the drain, not the
/// contender, is the likelier explanation. Every contender reads the same kind of master, so
/// none can beat the reader that does nothing else by much. A drain's rounds on a VM scatter
/// widely (see bench/README), and a run can draw several slow ones.
pub const ABOVE_LIMIT: f64 = 1.1;

/// A note for a run whose direct drain came out below `contender`'s median `p50` by more
/// than [`ABOVE_LIMIT`]: the ratios to the drain in that run overstate everyone.
pub fn slow_drain_note(drain: &Summary, contender: &str, p50: f64) -> Option<String> {
    ratio(Some(p50), Some(drain.p50))
        .is_some_and(|r| r > ABOVE_LIMIT)
        .then(|| {
            format!(
                "the direct drain was slow in this run: its median {:.1} MiB/s (rounds \
                 {:.1}-{:.1}) is below {contender}'s {p50:.1}; ratios to the drain overstate \
                 every contender here, so compare over several runs",
                drain.p50, drain.min, drain.max
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(p50: f64, min: f64, max: f64) -> Summary {
        Summary {
            n: 7,
            p50,
            p99: max,
            min,
            max,
        }
    }

    #[test]
    fn a_contender_well_above_the_drain_flags_the_drain() {
        let note = slow_drain_note(&drain(46.4, 44.0, 74.8), "phux, 1 client", 65.9).expect("note");
        assert!(
            note.contains("46.4") && note.contains("44.0-74.8"),
            "{note}"
        );
        assert!(note.contains("phux, 1 client's 65.9"), "{note}");
    }

    #[test]
    fn a_contender_near_or_below_the_drain_is_not_flagged() {
        assert_eq!(
            slow_drain_note(&drain(70.0, 60.0, 80.0), "relay", 75.0),
            None
        );
        assert_eq!(
            slow_drain_note(&drain(70.0, 60.0, 80.0), "relay", 40.0),
            None
        );
        assert_eq!(slow_drain_note(&drain(0.0, 0.0, 0.0), "relay", 40.0), None);
    }
}
