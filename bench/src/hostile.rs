//! The hostile world: each attack of the hostile-world issue, with bounded sizes, against a
//! fresh server while an honest client pings and sends APPLY_INPUT alongside.
//!
//! For each attack: the honest client's round trips during it (p50, p99, max), whether any of
//! its acknowledged input was refused or lost, the server's RSS before, at its peak (VmHWM) and
//! once the attackers have left (settled, at most 10 s later). Timings are only reported here;
//! the bounds that do not depend on timing are asserted by phux-mio-server's tests.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{Ping, SpawnTerminal, TerminalResize, TerminalSize};
use phux_proto::{Frame, GroupId, TerminalId};

use crate::client::Client;
use crate::error::{Context, Error, Result};
use crate::procs::{PhuxServer, rss_kib, self_exe};
use crate::stats::{Summary, summarize};

/// One attack: its name, what the issue measured, and the attacker's work (which returns
/// once the attack is over and its connections are closed).
pub struct Attack {
    /// Short name, as in the report.
    pub name: &'static str,
    /// The attacker: connects to the socket and does its worst, bounded.
    pub run: fn(&Path) -> Result<()>,
}

/// What one attack did to the honest client and to the server's memory.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The attack's name.
    pub name: &'static str,
    /// Honest round trips (PING and APPLY_INPUT) while the attack ran, in µs.
    pub honest: Option<Summary>,
    /// Honest APPLY_INPUTs answered OK, and those answered otherwise (lost or refused).
    pub acked: usize,
    /// Honest APPLY_INPUTs not answered OK.
    pub refused: usize,
    /// Server RSS before the attack, KiB.
    pub rss_before: u64,
    /// The server's peak RSS (VmHWM) by the end of the attack, KiB.
    pub rss_peak: u64,
    /// Server RSS once the attackers had left and it settled (at most 10 s), KiB.
    pub rss_after: u64,
    /// How long the attack ran.
    pub duration: Duration,
    /// The attacker's error, if it stopped early.
    pub error: Option<String>,
}

/// Every attack of the table that a client can mount (SIGHUP, logs and `--stdio` are
/// the server's own settings and have their tests).
pub fn attacks() -> Vec<Attack> {
    vec![
        Attack {
            name: "REP a\\e[65535b x100000",
            run: rep_flood,
        },
        Attack {
            name: "REP x20000 in 20 terminals at once",
            run: rep_flood_many,
        },
        Attack {
            name: "yes in 100 terminals at once",
            run: yes_many,
        },
        Attack {
            name: "combining marks, 1024 cols",
            run: combining_marks,
        },
        Attack {
            name: "3 x 40 pipelined GET_SCREEN of marks",
            run: screen_read_flood,
        },
        Attack {
            name: "GET_SCREEN cells+history, 1024x512",
            run: huge_screen_reads,
        },
        Attack {
            name: "re-ATTACH x200, never reading",
            run: reattach_never_reading,
        },
        Attack {
            name: "40 x 16 MiB header before HELLO",
            run: pre_hello_headers,
        },
        Attack {
            name: "200 x 16 MiB partial frame after HELLO",
            run: partial_frames_after_hello,
        },
        Attack {
            name: "65,536 APPLY_INPUT, no terminal",
            run: ledger_flood,
        },
        Attack {
            name: "spawn 1,200, kill 1,200",
            run: spawn_and_kill_1200,
        },
        Attack {
            name: "spawn 2,000, kill 2,000",
            run: spawn_and_kill_2000,
        },
        Attack {
            name: "spawn 1,200 from 30 connections",
            run: spawn_from_many,
        },
        Attack {
            name: "100 lazy viewers",
            run: lazy_viewers,
        },
        Attack {
            name: "TERMINAL_RESIZE flood",
            run: resize_flood,
        },
        Attack {
            name: "command flood (PING+GET_STATE)",
            run: command_flood,
        },
    ]
}

/// Runs `attack` against a fresh server with the honest client alongside.
pub fn measure(server_bin: Option<&Path>, attack: &Attack) -> Result<Outcome> {
    let server = PhuxServer::start(server_bin)?;
    let pid = server.pid();
    let socket = server.socket.clone();
    let mut setup = server.client()?;
    let target = setup.spawn(&sh("stty raw -echo; exec cat >/dev/null"))?;
    // The honest client's terminal is ready and the server warm before the baseline.
    std::thread::sleep(Duration::from_millis(300));
    let rss_before = rss_kib(pid)?;
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (honest, attacked) = std::thread::scope(|s| {
        let honest = s.spawn(|| honest_client(&socket, &target, &stop));
        let attacked = (attack.run)(&socket);
        stop.store(true, Ordering::SeqCst);
        (honest.join(), attacked)
    });
    let duration = started.elapsed();
    let honest = honest.map_err(|_| Error::Protocol("the honest client panicked".into()))??;
    let rss_peak = vm_hwm_kib(pid)?;
    // The attackers are gone; memory should come back within 10 s.
    let rss_after = settle_down(pid, rss_before, Duration::from_secs(10))?;
    drop(setup);
    Ok(Outcome {
        name: attack.name,
        honest: summarize(&honest.samples),
        acked: honest.acked,
        refused: honest.refused,
        rss_before,
        rss_peak,
        rss_after,
        duration,
        error: attacked.err().map(|e| e.to_string()),
    })
}

struct Honest {
    samples: Vec<f64>,
    acked: usize,
    refused: usize,
}

/// PING and APPLY_INPUT in turn, 5 ms apart, until `stop`; each round trip timed.
fn honest_client(socket: &Path, target: &TerminalId, stop: &AtomicBool) -> Result<Honest> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let mut h = Honest {
        samples: Vec::new(),
        acked: 0,
        refused: 0,
    };
    let mut nonce = 0u64;
    while !stop.load(Ordering::SeqCst) {
        nonce += 1;
        let t0 = Instant::now();
        c.send(&Frame::Ping(Ping { nonce }))?;
        c.wait_for(|f| matches!(f, Frame::Pong(p) if p.nonce == nonce).then_some(()))?;
        h.samples.push(t0.elapsed().as_secs_f64() * 1e6);
        let apply = c.apply_paste(target, b"x");
        let t0 = Instant::now();
        let result = c.command(apply)?;
        h.samples.push(t0.elapsed().as_secs_f64() * 1e6);
        if result == CommandResult::Ok {
            h.acked += 1;
        } else {
            h.refused += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(h)
}

/// Samples RSS every 100 ms until it is within 10% (and 4 MiB) of `base`, or `limit` passes.
pub(crate) fn settle_down(pid: u32, base: u64, limit: Duration) -> Result<u64> {
    let end = Instant::now() + limit;
    loop {
        let now = rss_kib(pid)?;
        if now <= base + (base / 10).max(4096) || Instant::now() >= end {
            return Ok(now);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The peak resident set size of `pid`, KiB.
pub(crate) fn vm_hwm_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("VmHWM")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| Error::Protocol("no VmHWM".into()))
}

fn sh(script: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

fn python(code: &str) -> Vec<String> {
    vec!["python3".into(), "-c".into(), code.into()]
}

/// Spawns `argv` on a terminal of `cols` x `rows`.
fn spawn_sized(c: &mut Client, argv: Vec<String>, cols: u16, rows: u16) -> Result<TerminalId> {
    let (rid, _) = c.encode_command(Command::GetState {
        scope: phux_proto::command::StateScope::Server,
    });
    let mut spawn = SpawnTerminal::new(rid, GroupId(1));
    spawn.command = Some(argv);
    spawn.initial_size = Some(TerminalSize { cols, rows });
    c.send(&Frame::SpawnTerminal(spawn))?;
    c.wait_spawned(rid)
}

/// Polls GET_TERMINAL_STATE until the terminal is gone: its program exited and its output
/// was all read.
fn wait_gone(c: &mut Client, t: &TerminalId, limit: Duration) -> Result<()> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let state = c.command(Command::GetTerminalState {
            terminal: t.clone(),
            include_scrollback: false,
            max_scrollback_lines: 0,
        })?;
        if !matches!(state, CommandResult::OkWith(_)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(Error::Timeout("the attacking program to exit".into()))
}

/// Polls GET_SCREEN until the screen shows `marker`: the program's output is all in.
fn wait_screen(c: &mut Client, t: &TerminalId, marker: &str, limit: Duration) -> Result<()> {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if c.screen(t)?.contains(marker) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(Error::Timeout(format!("{marker} on the screen")))
}

fn rep_flood(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let t = c.spawn(&python(
        "import sys; sys.stdout.buffer.write(b'a\\x1b[65535b' * 100000); sys.stdout.flush()",
    ))?;
    wait_gone(&mut c, &t, Duration::from_mins(2))
}

/// Twenty terminals printing REPs at once: each source's turn is bounded, so the wait of the
/// others grows with the number of busy sources unless a whole turn is bounded too. The
/// REPs come from a file `cat` prints: twenty interpreters starting at once would take the
/// two cores from the server for a moment, which is not the server's doing.
fn rep_flood_many(socket: &Path) -> Result<()> {
    let dir = tempfile::tempdir().context("scratch directory")?;
    let file = dir.path().join("rep");
    std::fs::write(&file, b"a\x1b[65535b".repeat(20_000)).context("the REP file")?;
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let argv = vec!["/bin/cat".to_owned(), file.display().to_string()];
    let terminals = spawn_pipelined(&mut c, &argv, 20)?;
    for t in &terminals {
        wait_gone(&mut c, t, Duration::from_mins(2))?;
    }
    Ok(())
}

/// A hundred terminals printing as fast as they can for five seconds: cheap output, but each
/// terminal a busy source, and each fills its history.
fn yes_many(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let argv = sh("exec yes 'the quick brown fox jumps over the lazy dog'");
    let terminals = spawn_pipelined(&mut c, &argv, 100)?;
    std::thread::sleep(Duration::from_secs(5));
    c.command(Command::KillTerminals { terminals })?;
    Ok(())
}

/// A 1024x512 terminal that was sent `units` letters, each with eight combining marks.
fn paint_marks(c: &mut Client, units: usize) -> Result<TerminalId> {
    let t = spawn_sized(
        c,
        python(&format!(
            "import sys\n\
             w = sys.stdout.buffer\n\
             unit = ('e' + '\\u0301\\u0302\\u0303\\u0304' * 2).encode()\n\
             w.write(unit * {units})\n\
             w.write(b'\\x1b[HDONE')\n\
             w.flush()\n\
             sys.stdin.read()"
        )),
        1024,
        512,
    )?;
    wait_screen(c, &t, "DONE", Duration::from_mins(2))?;
    Ok(t)
}

fn combining_marks(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    // 9 MB of a base letter followed by combining marks, over a 1024x512 screen.
    let t = paint_marks(&mut c, 9_000_000 / 17)?;
    c.screen(&t)?;
    c.attach(&t)?;
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

/// A 1024x512 screen of letters with eight combining marks each (a 9 MB document), read by
/// three connections with 40 pipelined GET_SCREENs each: every read is the largest document
/// the screen makes, and each connection's turn holds several of them.
fn screen_read_flood(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let t = paint_marks(&mut c, 1024 * 512)?;
    let mut readers = Vec::new();
    for _ in 0..3 {
        let mut r = Client::connect(socket)?;
        r.hello()?;
        let mut batch = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..40 {
            let (id, bytes) = r.encode_command(Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: None,
                cells: false,
            });
            batch.extend_from_slice(&bytes);
            ids.push(id);
        }
        r.send_encoded(&batch)?;
        readers.push((r, ids));
    }
    // A reader the server sheds for the replies it let pile up ([SERVER.LIMIT.5]) stops there.
    for (mut r, ids) in readers {
        for id in ids {
            if r.wait_result(id).is_err() {
                break;
            }
        }
    }
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

/// A 1024x512 terminal whose every cell has its own colour, over 2,000 rows of history.
fn paint_huge_screen(c: &mut Client) -> Result<TerminalId> {
    let t = spawn_sized(
        c,
        python(
            "import sys\n\
             w = sys.stdout.buffer\n\
             w.write(b'h' * 1024 * 2600)\n\
             w.write(b'\\x1b[H' + b''.join(b'\\x1b[38;5;%dmx' % (i % 256) for i in range(1024 * 512 - 8)))\n\
             w.write(b'\\x1b[512;1H\\x1b[mDONE')\n\
             w.flush()\n\
             sys.stdin.read()",
        ),
        1024,
        512,
    )?;
    wait_screen(c, &t, "DONE", Duration::from_mins(2))?;
    Ok(t)
}

fn huge_screen_reads(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let t = paint_huge_screen(&mut c)?;
    for _ in 0..10 {
        for (scrollback, cells) in [(Some(0), true), (Some(0), false)] {
            // Refused (cells) or bounded (history): either way a reply, never a frame over
            // the limit (the client would fail on one).
            c.command(Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: scrollback,
                cells,
            })?;
        }
    }
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

fn reattach_never_reading(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let t = paint_huge_screen(&mut c)?;
    let mut lazy = Client::connect(socket)?;
    lazy.hello()?;
    for _ in 0..200 {
        let (_, bytes) = lazy.encode_command(Command::AttachTerminal {
            terminal: t.clone(),
        });
        lazy.send_encoded(&bytes)?;
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(lazy);
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

fn pre_hello_headers(socket: &Path) -> Result<()> {
    let mut conns = Vec::new();
    for _ in 0..40 {
        let mut s = UnixStream::connect(socket).context("connect")?;
        s.set_nonblocking(true).context("nonblocking")?;
        let mut bytes = (16u32 << 20).to_be_bytes().to_vec();
        bytes.push(0x01);
        bytes.extend(std::iter::repeat_n(0u8, 60 * 1024));
        // The server refuses the frame as soon as it sees the header; the rest may not go in.
        let _ = s.write(&bytes);
        conns.push(s);
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(conns);
    Ok(())
}

/// 200 connections say HELLO, then each sends all but the last byte of a command frame of
/// nearly 16 MiB (the frame limit) and waits: each within its limits, together 3 GiB held.
fn partial_frames_after_hello(socket: &Path) -> Result<()> {
    let len: u32 = (16 << 20) - 64;
    let mut frame = len.to_be_bytes().to_vec();
    frame.push(0x31);
    frame.resize(len as usize - 1, 0);
    let mut conns = Vec::new();
    for _ in 0..200 {
        let mut c = Client::connect(socket)?;
        c.hello()?;
        // The server may refuse the frame or drop the connection part-way: either is fine.
        let _ = c.send_encoded(&frame);
        conns.push(c);
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(conns);
    Ok(())
}

fn ledger_flood(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    ledger_flood_on(c)
}

/// 65,536 APPLY_INPUTs for a terminal that does not exist, 256 at a time, through `c` (after
/// its HELLO).
pub(crate) fn ledger_flood_on(mut c: Client) -> Result<()> {
    let nowhere = TerminalId::Local(4_000_000_000);
    for _ in 0..65_536 / 256 {
        let mut batch = Vec::new();
        let mut last = 0;
        for _ in 0..256 {
            let apply = c.apply_paste(&nowhere, b"n");
            let (rid, bytes) = c.encode_command(apply);
            batch.extend(bytes);
            last = rid;
        }
        c.send_encoded(&batch)?;
        c.wait_result(last)?;
    }
    Ok(())
}

/// The 1,200 spawns, pipelined by one connection, then one KILL_TERMINALS of all.
fn spawn_and_kill_1200(socket: &Path) -> Result<()> {
    spawn_and_kill(socket, 1200)
}

/// Nearly the default cap on this two-core host (half its 4,096 PTYs): the issue killed
/// 4,087 at once when the cap was every PTY.
fn spawn_and_kill_2000(socket: &Path) -> Result<()> {
    spawn_and_kill(socket, 2000)
}

/// `count` spawns of `argv` sent at once, then their terminals as they are reported.
fn spawn_pipelined(c: &mut Client, argv: &[String], count: usize) -> Result<Vec<TerminalId>> {
    let ids: Vec<u32> = (0..count)
        .map(|_| c.send_spawn(argv))
        .collect::<Result<_>>()?;
    ids.into_iter().map(|id| c.wait_spawned(id)).collect()
}

fn spawn_and_kill(socket: &Path, count: usize) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let argv = sh("exec cat");
    let terminals = spawn_pipelined(&mut c, &argv, count)?;
    c.command(Command::KillTerminals { terminals })?;
    Ok(())
}

/// 30 connections pipeline 40 spawns each at the same moment: the server may start a few a
/// turn per connection, but every connection has a turn, so only a bound across them keeps
/// the others' waits short ([SERVER.FAIR.3]).
fn spawn_from_many(socket: &Path) -> Result<()> {
    let argv = sh("exec cat");
    let mut clients = Vec::new();
    for _ in 0..30 {
        let mut c = Client::connect(socket)?;
        c.hello()?;
        clients.push(c);
    }
    let mut asked = Vec::new();
    for c in &mut clients {
        let ids: Vec<u32> = (0..40)
            .map(|_| c.send_spawn(&argv))
            .collect::<Result<_>>()?;
        asked.push(ids);
    }
    let mut terminals = Vec::new();
    for (c, ids) in clients.iter_mut().zip(asked) {
        for id in ids {
            terminals.push(c.wait_spawned(id)?);
        }
    }
    clients[0].command(Command::KillTerminals { terminals })?;
    Ok(())
}

fn lazy_viewers(socket: &Path) -> Result<()> {
    lazy_viewers_via(&|| {
        let mut c = Client::connect(socket)?;
        c.hello()?;
        Ok(c)
    })
}

/// A terminal printing 1 MiB/s, and 100 connections (each from `dial`, after HELLO) that
/// attach to it and never read, for 5 s.
pub(crate) fn lazy_viewers_via(dial: &dyn Fn() -> Result<Client>) -> Result<()> {
    let mut c = dial()?;
    let exe: PathBuf = self_exe()?;
    let t = c.spawn(&[
        exe.display().to_string(),
        "__stream".into(),
        "--rate".into(),
        (1024 * 1024).to_string(),
    ])?;
    let mut viewers = Vec::new();
    for _ in 0..100 {
        let mut v = dial()?;
        let (_, bytes) = v.encode_command(Command::AttachTerminal {
            terminal: t.clone(),
        });
        v.send_encoded(&bytes)?;
        viewers.push(v);
    }
    std::thread::sleep(Duration::from_secs(5));
    drop(viewers);
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

fn resize_flood(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    let t = c.spawn(&sh("exec cat"))?;
    for round in 0..50u16 {
        let mut batch = Vec::new();
        for i in 0..2000u16 {
            let size = TerminalSize {
                cols: 200 + (i + round) % 2 * 800,
                rows: 50 + (i + round) % 2 * 400,
            };
            Frame::TerminalResize(TerminalResize {
                terminal: t.clone(),
                size,
            })
            .encode(&mut batch);
        }
        c.send_encoded(&batch)?;
    }
    c.sync()?;
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

fn command_flood(socket: &Path) -> Result<()> {
    let mut c = Client::connect(socket)?;
    c.hello()?;
    for _ in 0..100 {
        let mut batch = Vec::new();
        let mut last = 0;
        for n in 0..500u64 {
            Frame::Ping(Ping { nonce: n }).encode(&mut batch);
            let (rid, bytes) = c.encode_command(Command::GetState {
                scope: phux_proto::command::StateScope::Server,
            });
            batch.extend(bytes);
            last = rid;
        }
        c.send_encoded(&batch)?;
        c.wait_result(last)?;
    }
    Ok(())
}
