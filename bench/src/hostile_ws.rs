//! The hostile world over WebSocket (`--listen-ws`): the attacks a peer of the WebSocket
//! listener can mount, each against a fresh server, while an honest page-like client (its own
//! origin, the secret, one binary message per frame) types into `cat` over its own WebSocket,
//! and a newcomer opens a fresh WebSocket every 200 ms.
//!
//! For each attack: the honest APPLY_INPUT's round trip to its OK and to the echo of its key
//! (p50, p99, max), whether any was refused or lost, how many newcomers got through the
//! handshake and HELLO and how long that took, and the server's RSS before, at its peak and
//! once the attackers had left. The attack `none` measures the same with no attacker, at the
//! start and the end of the run: the figures are read as ratios to it. The bounds that do not
//! depend on timing are phux-mio-server's tests (`ws_hostile_handshakes`,
//! `ws_framing_violations`).

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::Ping;
use phux_proto::{Frame, TerminalId};

use crate::client::{Client, READ_TIMEOUT};
use crate::error::{Context, Error, Result};
use crate::hostile::{lazy_viewers_via, ledger_flood_on, settle_down, vm_hwm_kib};
use crate::latency::{echo_argv, letter, sink_argv};
use crate::procs::{PhuxServer, rss_kib, self_exe};
use crate::ws::{WsTarget, client_frame_header, raw_exchange};

/// The listener's bounds (spec/websocket.md: [WS.HANDSHAKE.2], [WS.HANDSHAKE.3]).
const MAX_HANDSHAKES: usize = 64;
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);
/// How long the attack `none` lets the honest client and the newcomer run.
const BASELINE: Duration = Duration::from_secs(4);
/// How often a newcomer opens a fresh WebSocket, and how long it may take.
const NEWCOMER_EVERY: Duration = Duration::from_millis(200);
const NEWCOMER_LIMIT: Duration = Duration::from_secs(5);
/// How long an attack is kept up (repeated) at least.
const MIN_ATTACK: Duration = Duration::from_secs(3);

/// One attack on the WebSocket listener.
pub struct WsAttack {
    /// Short name, as in the report.
    pub name: &'static str,
    /// The attacker: does its worst through the listener, bounded, and returns once its
    /// connections are closed.
    pub run: fn(&WsTarget) -> Result<()>,
}

/// The name of the attack that is no attack: the baseline.
pub const NONE: &str = "none (baseline)";

/// What one attack did to the honest client, the newcomers and the server's memory.
#[derive(Debug, Clone)]
pub struct WsOutcome {
    /// The attack's name.
    pub name: &'static str,
    /// Honest APPLY_INPUT round trips to OK, in µs.
    pub ack: Vec<f64>,
    /// The same operations' round trips to the echo of their key, in µs.
    pub echo: Vec<f64>,
    /// Honest APPLY_INPUTs answered OK.
    pub acked: usize,
    /// Honest APPLY_INPUTs answered otherwise.
    pub refused: usize,
    /// Newcomers that got through handshake and HELLO: how long it took, in µs.
    pub joined: Vec<f64>,
    /// Newcomers refused or timed out.
    pub turned_away: usize,
    /// Server RSS before the attack, KiB.
    pub rss_before: u64,
    /// The server's peak RSS (VmHWM) by the end of the attack, KiB.
    pub rss_peak: u64,
    /// Server RSS once the attackers had left and it settled (at most 10 s), KiB.
    pub rss_after: u64,
    /// How long the attack ran.
    pub duration: Duration,
    /// How many times the attack was mounted (a short one is repeated for 3 s).
    pub rounds: usize,
    /// The attacker's error, if it stopped early.
    pub error: Option<String>,
}

/// The attacks, `none` first; run `none` again last for a baseline at both ends.
pub fn ws_attacks() -> Vec<WsAttack> {
    vec![
        WsAttack {
            name: NONE,
            run: idle,
        },
        WsAttack {
            name: "100 viewers never reading, 1 MiB/s",
            run: lazy_viewers,
        },
        WsAttack {
            name: "a viewer reading 10 KiB/s of 1 MiB/s",
            run: slow_viewer,
        },
        WsAttack {
            name: "65,536 APPLY_INPUT, no terminal",
            run: ledger_flood,
        },
        WsAttack {
            name: "20,000 APPLY_INPUT pipelined to cat",
            run: apply_flood,
        },
        WsAttack {
            name: "200 x header announcing 1 TiB",
            run: giant_headers,
        },
        WsAttack {
            name: "200 x 16 MiB message, all but 1 byte",
            run: partial_messages,
        },
        WsAttack {
            name: "200 x message past its phux frame",
            run: past_the_frame,
        },
        WsAttack {
            name: "slowloris: 64 handshakes trickling 11 s",
            run: slowloris,
        },
        WsAttack {
            name: "slowloris: 64 held + 1,000 beyond the bound",
            run: beyond_the_bound,
        },
        WsAttack {
            name: "handshake flood: 2,000 with a wrong secret",
            run: wrong_secret_flood,
        },
        WsAttack {
            name: "handshake flood: 1,000 upgrades + HELLO",
            run: upgrade_flood,
        },
        WsAttack {
            name: "200 x 64 KiB request",
            run: giant_requests,
        },
    ]
}

/// Runs `attack` against a fresh server with a WebSocket listener, the honest client and the
/// newcomer alongside.
pub fn measure_ws(server_bin: Option<&std::path::Path>, attack: &WsAttack) -> Result<WsOutcome> {
    let server = PhuxServer::start_ws(server_bin)?;
    let target = server
        .ws
        .clone()
        .ok_or_else(|| Error::Protocol("no WebSocket listener".into()))?;
    let pid = server.pid();
    let mut honest = Honest::start(&target)?;
    // Warm: the terminal's program is up and the first round trips are not timed.
    for _ in 0..20 {
        honest.once()?;
    }
    honest.reset();
    let rss_before = rss_kib(pid)?;
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let mut rounds = 0;
    let (honest, newcomers, attacked) = std::thread::scope(|s| {
        let h = s.spawn(|| honest.run(&stop).map(|()| honest));
        let n = s.spawn(|| newcomers(&target, &stop));
        // A short attack is repeated until it has lasted long enough for the honest client's
        // percentiles to mean something.
        let mut attacked = Ok(());
        while attacked.is_ok() && (rounds == 0 || started.elapsed() < MIN_ATTACK) {
            attacked = (attack.run)(&target);
            rounds += 1;
        }
        stop.store(true, Ordering::SeqCst);
        (h.join(), n.join(), attacked)
    });
    let duration = started.elapsed();
    let panicked = |who: &str| Error::Protocol(format!("the {who} panicked"));
    let honest = honest.map_err(|_| panicked("honest client"))??;
    let (joined, turned_away) = newcomers.map_err(|_| panicked("newcomer"))?;
    let rss_peak = vm_hwm_kib(pid)?;
    let rss_after = settle_down(pid, rss_before, Duration::from_secs(10))?;
    Ok(WsOutcome {
        name: attack.name,
        ack: honest.ack,
        echo: honest.echo,
        acked: honest.acked,
        refused: honest.refused,
        joined,
        turned_away,
        rss_before,
        rss_peak,
        rss_after,
        duration,
        rounds,
        error: attacked.err().map(|e| e.to_string()),
    })
}

/// The honest page: attached to `cat` over its WebSocket, it types one key per APPLY_INPUT,
/// 5 ms apart, and times the OK and the echo.
struct Honest {
    c: Client,
    terminal: TerminalId,
    n: usize,
    ack: Vec<f64>,
    echo: Vec<f64>,
    acked: usize,
    refused: usize,
}

impl Honest {
    fn start(target: &WsTarget) -> Result<Self> {
        let mut c = Client::connect_ws(target)?;
        c.hello()?;
        let terminal = c.spawn(&echo_argv())?;
        c.attach(&terminal)?;
        Ok(Self {
            c,
            terminal,
            n: 0,
            ack: Vec::new(),
            echo: Vec::new(),
            acked: 0,
            refused: 0,
        })
    }

    fn reset(&mut self) {
        self.ack.clear();
        self.echo.clear();
        self.acked = 0;
        self.refused = 0;
    }

    fn run(&mut self, stop: &AtomicBool) -> Result<()> {
        while !stop.load(Ordering::SeqCst) {
            self.once()?;
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// One key: APPLY_INPUT, then its OK and its echo, in whichever order they come.
    fn once(&mut self) -> Result<()> {
        let key = letter(self.n);
        self.n += 1;
        let apply = self.c.apply_keys(&self.terminal, &key.to_string());
        let (id, bytes) = self.c.encode_command(apply);
        let t0 = Instant::now();
        self.c.send_encoded(&bytes)?;
        let (mut ok, mut echoed) = (None, false);
        while ok.is_none() || (ok == Some(true) && !echoed) {
            match self.c.recv()? {
                Frame::CommandResult(r) if r.request_id == id => {
                    let us = t0.elapsed().as_secs_f64() * 1e6;
                    let good = r.result == CommandResult::Ok;
                    if good {
                        self.ack.push(us);
                        self.acked += 1;
                    } else {
                        self.refused += 1;
                    }
                    ok = Some(good);
                }
                Frame::TerminalOutput(o)
                    if o.terminal == self.terminal && o.bytes.contains(&(key as u8)) =>
                {
                    if !echoed {
                        self.echo.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                    echoed = true;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// A fresh WebSocket every [`NEWCOMER_EVERY`] until `stop`: handshake and HELLO timed, or
/// counted as turned away.
fn newcomers(target: &WsTarget, stop: &AtomicBool) -> (Vec<f64>, usize) {
    let (mut joined, mut away) = (Vec::new(), 0);
    while !stop.load(Ordering::SeqCst) {
        let t0 = Instant::now();
        let ok = target
            .handshake_as(&target.secret, NEWCOMER_LIMIT)
            .and_then(|ws| {
                let mut c = Client::over_ws(ws);
                c.hello()
            });
        match ok {
            Ok(()) => joined.push(t0.elapsed().as_secs_f64() * 1e6),
            Err(_) => away += 1,
        }
        std::thread::sleep(NEWCOMER_EVERY);
    }
    (joined, away)
}

fn dial(target: &WsTarget) -> Result<Client> {
    let mut c = Client::connect_ws(target)?;
    c.hello()?;
    Ok(c)
}

// An attack's signature: the baseline is the attack that does nothing.
#[allow(clippy::unnecessary_wraps)]
fn idle(_: &WsTarget) -> Result<()> {
    std::thread::sleep(BASELINE);
    Ok(())
}

fn lazy_viewers(target: &WsTarget) -> Result<()> {
    lazy_viewers_via(&|| dial(target))
}

/// A terminal printing 1 MiB/s, and one viewer reading 1 KiB every 100 ms for 5 s.
fn slow_viewer(target: &WsTarget) -> Result<()> {
    let mut c = dial(target)?;
    let t = c.spawn(&[
        self_exe()?.display().to_string(),
        "__stream".into(),
        "--rate".into(),
        (1024 * 1024).to_string(),
    ])?;
    let mut v = dial(target)?;
    v.send_command(Command::AttachTerminal {
        terminal: t.clone(),
    })?;
    let tcp = v
        .ws_mut()
        .ok_or_else(|| Error::Protocol("not a WebSocket".into()))?
        .tcp();
    tcp.set_read_timeout(Some(Duration::from_millis(100)))
        .context("socket timeout")?;
    let mut buf = [0u8; 1024];
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        // The server may shed this reader ([QUEUE.BOUND.1]): then there is nothing to read.
        let _ = std::io::Read::read(tcp, &mut buf);
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(v);
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

fn ledger_flood(target: &WsTarget) -> Result<()> {
    ledger_flood_on(dial(target)?)
}

/// 40 batches of 500 APPLY_INPUTs (one key each) to `cat >/dev/null`, each batch sent at once
/// (one message per frame) and its last result waited for.
fn apply_flood(target: &WsTarget) -> Result<()> {
    let mut c = dial(target)?;
    let t = c.spawn(&sink_argv())?;
    for _ in 0..40 {
        let mut batch = Vec::new();
        let mut last = 0;
        for _ in 0..500 {
            let apply = c.apply_keys(&t, "a");
            let (rid, bytes) = c.encode_command(apply);
            batch.extend(bytes);
            last = rid;
        }
        c.send_encoded(&batch)?;
        c.wait_result(last)?;
    }
    c.command(Command::KillTerminal { terminal: t })?;
    Ok(())
}

/// 200 upgraded connections each send a binary frame header announcing 1 TiB and wait for
/// the end ([WS.FRAME.4]: refused from the header alone).
fn giant_headers(target: &WsTarget) -> Result<()> {
    for _ in 0..200 {
        let mut ws = target.handshake(READ_TIMEOUT)?;
        let answer = raw_exchange(
            ws.get_mut(),
            &client_frame_header(2, 1 << 40),
            Duration::from_secs(5),
        );
        expect_close(&answer, 1009)?;
    }
    Ok(())
}

/// 200 connections say HELLO, then each sends all but the last byte of one message carrying
/// a command frame of nearly 16 MiB (the frame limit) and waits: the WebSocket form of the
/// socket's partial frames, 3 GiB in all.
fn partial_messages(target: &WsTarget) -> Result<()> {
    let len: u32 = (16 << 20) - 64;
    let mut message = client_frame_header(2, 4 + u64::from(len));
    message.extend_from_slice(&len.to_be_bytes());
    message.push(0x31);
    message.resize(message.len() + len as usize - 2, 0);
    let mut conns = Vec::new();
    let end = Instant::now() + Duration::from_mins(1);
    for _ in 0..200 {
        if Instant::now() > end {
            return Err(Error::Timeout(format!(
                "{} partial messages sent in a minute",
                conns.len()
            )));
        }
        let mut c = dial(target)?;
        if let Some(ws) = c.ws_mut() {
            let tcp = ws.tcp();
            // A server that stops reading this connection (its budget spent) without closing
            // it costs the attacker this long, not the run.
            let _ = tcp.set_write_timeout(Some(Duration::from_secs(2)));
            // The server may refuse the frame or drop the connection part-way: either is fine.
            let _ = tcp.write_all(&message);
        }
        conns.push(c);
    }
    std::thread::sleep(Duration::from_secs(2));
    drop(conns);
    Ok(())
}

/// 200 connections say HELLO, then send one message holding a PING and four bytes more
/// ([WS.FRAME.1]: the PING answered, then close 1008).
fn past_the_frame(target: &WsTarget) -> Result<()> {
    let mut body = Frame::Ping(Ping { nonce: 7 }).to_bytes();
    body.extend_from_slice(&[0, 0, 0, 0]);
    let mut message = client_frame_header(2, body.len() as u64);
    message.extend_from_slice(&body);
    for _ in 0..200 {
        let mut c = dial(target)?;
        let ws = c
            .ws_mut()
            .ok_or_else(|| Error::Protocol("not a WebSocket".into()))?;
        let answer = raw_exchange(ws.tcp(), &message, Duration::from_secs(5));
        expect_close(&answer, 1008)?;
    }
    Ok(())
}

/// Fails unless `answer` (what the server sent) holds a close frame with `code`.
fn expect_close(answer: &[u8], code: u16) -> Result<()> {
    let [hi, lo] = code.to_be_bytes();
    if answer
        .windows(4)
        .any(|w| w.first() == Some(&0x88) && w.get(2..) == Some(&[hi, lo][..]))
    {
        Ok(())
    } else {
        Err(Error::Protocol(format!(
            "no close {code} in the server's last {} bytes",
            answer.len()
        )))
    }
}

/// `n` connections that begin a request and send nothing more yet.
fn loris(target: &WsTarget, n: usize) -> Result<Vec<TcpStream>> {
    (0..n)
        .map(|_| {
            let mut t = TcpStream::connect(target.addr).context("connect")?;
            t.write_all(b"GET / HTTP/1.1\r\n").context("send")?;
            Ok(t)
        })
        .collect()
}

/// The bound's worth of handshakes, each trickling one header byte a second for longer than
/// the handshake bound ([WS.HANDSHAKE.3]: each cut at 10 s; meanwhile the door is full).
fn slowloris(target: &WsTarget) -> Result<()> {
    let mut held = loris(target, MAX_HANDSHAKES)?;
    let end = Instant::now() + HANDSHAKE_BOUND + Duration::from_secs(1);
    while Instant::now() < end {
        std::thread::sleep(Duration::from_secs(1));
        for t in &mut held {
            // A connection the server cut refuses the byte; that is the point.
            let _ = t.write_all(b"X");
        }
    }
    Ok(())
}

/// The bound's worth of handshakes held, then 1,000 more, each closed at once
/// ([WS.HANDSHAKE.2]), then all let go.
fn beyond_the_bound(target: &WsTarget) -> Result<()> {
    // The server has seen the last round's handshakes end, and then holds this round's: the
    // door is full before the first one beyond it.
    std::thread::sleep(Duration::from_millis(300));
    let held = loris(target, MAX_HANDSHAKES)?;
    std::thread::sleep(Duration::from_millis(300));
    let (mut closed, mut kept) = (0, 0);
    for _ in 0..1000 {
        let Ok(mut t) = TcpStream::connect(target.addr) else {
            continue;
        };
        let t0 = Instant::now();
        let answer = raw_exchange(&mut t, b"GET / HT", Duration::from_secs(1));
        if answer.is_empty() && t0.elapsed() < Duration::from_millis(900) {
            closed += 1;
        } else {
            // A slot was free (a newcomer's ended meanwhile): this one waits in its handshake.
            kept += 1;
            if kept > 20 {
                break;
            }
        }
    }
    drop(held);
    if closed < 900 {
        return Err(Error::Protocol(format!(
            "{closed} handshakes over the bound were closed at once, {kept} were kept"
        )));
    }
    Ok(())
}

/// Four threads, each opening `per_thread` WebSockets with `one`.
fn in_four(per_thread: usize, one: &(dyn Fn() -> Result<()> + Sync)) -> Result<()> {
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..per_thread).try_for_each(|_| one())))
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or(Err(Error::Protocol("panicked".into()))))
    })
}

/// 2,000 upgrade requests with a wrong secret, four at a time ([WS.AUTH.1]: 403 each).
fn wrong_secret_flood(target: &WsTarget) -> Result<()> {
    let wrong = "0".repeat(64);
    in_four(500, &|| match target.handshake_as(&wrong, NEWCOMER_LIMIT) {
        Ok(_) => Err(Error::Protocol("a wrong secret was let in".into())),
        Err(_) => Ok(()),
    })
}

/// 1,000 upgrades with the secret, each saying HELLO and leaving, four at a time.
fn upgrade_flood(target: &WsTarget) -> Result<()> {
    in_four(250, &|| dial(target).map(drop))
}

/// 200 requests of 64 KiB of headers, four at a time ([WS.HANDSHAKE.1]: 431 after 8 KiB).
fn giant_requests(target: &WsTarget) -> Result<()> {
    let mut request = target.raw_request();
    request.truncate(request.len() - 2);
    request.extend_from_slice(b"X-Pad: ");
    request.resize(request.len() + 64 * 1024, b'a');
    in_four(50, &|| {
        let mut t = TcpStream::connect(target.addr).context("connect")?;
        let answer = raw_exchange(&mut t, &request, Duration::from_secs(5));
        if answer.starts_with(b"HTTP/1.1 431 ") {
            Ok(())
        } else {
            Err(Error::Protocol(format!(
                "a giant request was answered {:?}",
                String::from_utf8_lossy(answer.get(..40.min(answer.len())).unwrap_or_default())
            )))
        }
    })
}
