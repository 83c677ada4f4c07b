//! Twenty in-place upgrades in a row (UPGRADE frames and SIGUSR2) under load, and no client can
//! tell but for a pause: a client streams a terminal printing numbered lines, another sends
//! APPLY_INPUT with unique tokens and same-id retries to a terminal that appends its input to
//! a file, another holds a lease, another watches events. Afterwards: every acknowledged token
//! was written exactly once, the streamed output has contiguous seqs and every numbered line
//! in order, no client was disconnected, the lease is still held, a quiet terminal's screen is
//! the same before and after each upgrade, and the server kept its pid and its server_id.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use phux_proto::command::{AcquireMode, ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::event::AgentEvent;
use phux_proto::frame::{CommandFrame, Ping, SubscribeEvents};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

use crate::support::client::{Client, DEADLINE, Server, pid_of_terminal};

const UPGRADES: usize = 20;
/// Every this many upgrades, one comes from SIGUSR2 instead of an UPGRADE frame.
const SIGNAL_EVERY: usize = 4;
/// What the new image logs once it has adopted the state: counted to see a SIGUSR2 upgrade
/// finish, and to see that an UPGRADE's OK came after an exec.
const ADOPTED: &str = "upgrade: adopted the state";

/// A server started with an info log in a file, so that its upgrades can be counted.
pub(crate) struct LoggedServer {
    pub(crate) server: Server,
    pub(crate) log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoggedServer {
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("server.log");
        let server = Server::start_with(&[
            "--log-level".as_ref(),
            "info".as_ref(),
            "--log-file".as_ref(),
            log.as_os_str(),
            "--shell".as_ref(),
            "/bin/sh".as_ref(),
        ]);
        Self {
            server,
            log,
            _dir: dir,
        }
    }

    /// How many adoptions the log shows.
    pub(crate) fn adoptions(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches(ADOPTED)
            .count()
    }

    /// Waits until the log shows `n` adoptions.
    pub(crate) fn wait_adoptions(&self, n: usize) {
        let end = Instant::now() + DEADLINE;
        while self.adoptions() < n {
            assert!(
                Instant::now() < end,
                "upgrade {n} never finished; log:\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub(crate) fn paste(id: u128, terminal: &TerminalId, data: &[u8]) -> ApplyInput {
    ApplyInput {
        operation_id: OperationId::from_u128(id).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: data.to_vec(),
        })],
    }
}

pub(crate) fn screen(c: &mut Client, terminal: &TerminalId) -> String {
    match c.command(Command::GetScreen {
        terminal: terminal.clone(),
        request_scrollback: Some(0),
        cells: true,
    }) {
        CommandResult::OkWith(CommandValue::Json(json)) => json,
        other => panic!("GET_SCREEN: {other:?}"),
    }
}

/// A PING answered by its PONG.
pub(crate) fn ping(c: &mut Client, nonce: u64) {
    c.send(&Frame::Ping(Ping { nonce }));
    c.wait_for("PONG", |f| match f {
        Frame::Pong(p) if p.nonce == nonce => Some(()),
        _ => None,
    });
}

/// Sends one APPLY_INPUT per token, each acknowledged before the next; every third is sent
/// twice with the same id before either answer is read (a retry racing the original across
/// whatever the server is doing). Returns the tokens acknowledged OK.
fn input_loop(mut c: Client, terminal: &TerminalId, stop: &AtomicBool) -> Vec<u64> {
    let mut acked = Vec::new();
    let mut request = 1000;
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        k += 1;
        let apply = paste(
            0x7700_0000 + u128::from(k),
            terminal,
            format!("tok{k}\n").as_bytes(),
        );
        let copies = if k.is_multiple_of(3) { 2 } else { 1 };
        apply_until_acknowledged(&mut c, &apply, copies, &mut request);
        // Answered OK from the ledger the second time too: the same id is never written again.
        if k.is_multiple_of(5) {
            assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
        }
        acked.push(k);
    }
    acked
}

/// Sends `apply` `copies` times at once (a retry racing its original), then until it is
/// acknowledged: a copy refused while the original is still in its lane ([INPUT.LANE.1]) is
/// sent again until the ledger answers OK. `request` is the last request id used.
pub(crate) fn apply_until_acknowledged(
    c: &mut Client,
    apply: &ApplyInput,
    copies: usize,
    request: &mut u32,
) {
    let mut pending = Vec::new();
    for _ in 0..copies {
        *request += 1;
        c.send(&Frame::Command(CommandFrame {
            request_id: *request,
            command: Command::ApplyInput(apply.clone()),
        }));
        pending.push(*request);
    }
    // The answers may come in either order (a refused retry before the original's OK).
    let mut ok = false;
    while !pending.is_empty() {
        let (id, result) = c.wait_for("APPLY_INPUT's result", |f| match f {
            Frame::CommandResult(r) if pending.contains(&r.request_id) => {
                Some((r.request_id, r.result.clone()))
            }
            _ => None,
        });
        pending.retain(|p| *p != id);
        match result {
            CommandResult::Ok => ok = true,
            CommandResult::Error { code, .. } if code == ErrorCode::RESOURCE_EXHAUSTED => {}
            other => panic!("{apply:?}: {other:?}"),
        }
    }
    let end = Instant::now() + DEADLINE;
    while !ok {
        assert!(Instant::now() < end, "{apply:?} never resolved");
        match c.command(Command::ApplyInput(apply.clone())) {
            CommandResult::Ok => ok = true,
            CommandResult::Error { code, .. } if code == ErrorCode::RESOURCE_EXHAUSTED => {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => panic!("{apply:?} retry: {other:?}"),
        }
    }
}

/// A process's open descriptors and what each names.
pub(crate) fn fds_of(pid: u32) -> Vec<(i32, String)> {
    let dir = format!("/proc/{pid}/fd");
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(Result::ok)
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            Some((fd, target.display().to_string()))
        })
        .collect()
}

/// The descriptors above stderr a child holds once it has settled: a program just started
/// may hold a file of its own for a moment (`sleep` reads the locale's gconv cache), so the
/// listing is taken again until two readings 100 ms apart agree.
pub(crate) fn settled_fds_of(pid: u32) -> Vec<(i32, String)> {
    let above_stderr = || {
        let mut fds = fds_of(pid);
        fds.retain(|(fd, _)| *fd > 2);
        fds
    };
    let end = Instant::now() + DEADLINE;
    let mut last = above_stderr();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = above_stderr();
        if now == last || Instant::now() >= end {
            return now;
        }
        last = now;
    }
}

fn count_lines(path: &Path) -> std::collections::HashMap<String, usize> {
    let mut counts = std::collections::HashMap::new();
    for line in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *counts.entry(line.to_owned()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn twenty_upgrades_under_load_are_seen_as_a_pause() {
    // [SERVER.UPGRADE.EXEC.1] [SERVER.UPGRADE.EXEC.3] [SERVER.UPGRADE.EXEC.5]
    // [SERVER.UPGRADE.EXEC.7] [SERVER.ID.1] [SERVER.UPGRADE.3] [SERVER.UPGRADE.6]
    // [SERVER.UPGRADE.7] [SERVER.UPGRADE.STATE.2]
    let mut fixture = LoggedServer::start();
    let server = &fixture.server;
    let dir = tempfile::tempdir().expect("tempdir");
    let counted = dir.path().join("counted.log");
    std::fs::write(&counted, "").expect("create");

    let mut control = server.connect();
    let hello = control.hello();
    let stream_term = control.spawn(&[
        "sh",
        "-c",
        "i=0; while [ $i -lt 10000000 ]; do i=$((i+1)); echo L$i; \
         case $i in *00) sleep 0.01;; esac; done",
    ]);
    let count_term = control.spawn(&[
        "sh",
        "-c",
        &format!("stty -echo; exec cat >> {}", counted.display()),
    ]);
    let quiet_term = control.spawn(&[
        "sh",
        "-c",
        "printf 'quiet \\033[1;31mscreen\\033[0m\\n\\033]0;a title\\007'; exec sleep 100000",
    ]);
    let end = Instant::now() + DEADLINE;
    while !screen(&mut control, &quiet_term).contains("quiet screen") {
        assert!(Instant::now() < end, "the quiet terminal never drew");
        std::thread::sleep(Duration::from_millis(10));
    }
    // What a child inherits from whoever started the server (a test harness's jobserver
    // pipe, say), before any upgrade.
    let baseline_term = control.spawn(&["sleep", "100000"]);
    let baseline = settled_fds_of(pid_of_terminal(&mut control, &baseline_term));
    let pids: Vec<u32> = [&stream_term, &count_term, &quiet_term]
        .iter()
        .map(|t| pid_of_terminal(&mut control, t))
        .collect();

    let mut streamer = server.connect();
    streamer.hello();
    assert_eq!(
        streamer.command(Command::AttachTerminal {
            terminal: stream_term.clone()
        }),
        CommandResult::Ok
    );
    let mut holder = server.connect();
    holder.hello();
    assert_eq!(
        holder.command(Command::AcquireInput {
            terminal: quiet_term.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        }),
        CommandResult::Ok
    );
    let mut watcher = server.connect();
    watcher.hello();
    watcher.send(&Frame::SubscribeEvents(SubscribeEvents { terminal: None }));
    ping(&mut watcher, 1);

    let mut typist = server.connect();
    typist.hello();
    let stop = Arc::new(AtomicBool::new(false));
    let input: JoinHandle<Vec<u64>> = {
        let stop = Arc::clone(&stop);
        let terminal = count_term.clone();
        std::thread::spawn(move || input_loop(typist, &terminal, &stop))
    };

    for i in 0..UPGRADES {
        let before = screen(&mut control, &quiet_term);
        if i % SIGNAL_EVERY == SIGNAL_EVERY - 1 {
            rustix::process::kill_process(
                rustix::process::Pid::from_raw(server.pid()).expect("pid"),
                rustix::process::Signal::USR2,
            )
            .expect("SIGUSR2");
        } else {
            // The OK comes from the new image: the log shows the adoption by then.
            assert_eq!(
                control.command(Command::Upgrade { binary: None }),
                CommandResult::Ok,
                "upgrade {i}"
            );
            assert_eq!(fixture.adoptions(), i + 1, "an OK without an exec");
        }
        fixture.wait_adoptions(i + 1);
        // [SERVER.UPGRADE.EXEC.5] [SERVER.UPGRADE.STATE.2] The screen model crossed exactly,
        // and the incarnation is the same one.
        assert_eq!(screen(&mut control, &quiet_term), before, "upgrade {i}");
        let mut newcomer = server.connect();
        assert_eq!(newcomer.hello().server_id, hello.server_id, "upgrade {i}");
    }

    stop.store(true, Ordering::Relaxed);
    let acked = input.join().expect("the input client");
    assert!(!acked.is_empty());

    // Exactly once: a marker sent last reaches the file after any duplicate would have.
    let mut typist = server.connect();
    typist.hello();
    assert_eq!(
        typist.command(Command::ApplyInput(paste(
            0x7800_0001,
            &count_term,
            b"marker\n"
        ))),
        CommandResult::Ok
    );
    let end = Instant::now() + DEADLINE;
    while !count_lines(&counted).contains_key("marker") {
        assert!(Instant::now() < end, "the marker never reached the file");
        std::thread::sleep(Duration::from_millis(10));
    }
    let counts = count_lines(&counted);
    for k in &acked {
        assert_eq!(
            counts.get(&format!("tok{k}")).copied(),
            Some(1),
            "tok{k} was acknowledged; the file holds it that many times"
        );
    }
    assert_eq!(
        counts.len(),
        acked.len() + 1,
        "only acknowledged tokens and the marker are in the file"
    );

    // The lease is still held: another client's input is gated, the holder is still there.
    assert!(matches!(
        control.command(Command::ApplyInput(paste(0x7800_0002, &quiet_term, b"x"))),
        CommandResult::Error { code, .. } if code == ErrorCode::INPUT_LEASE_HELD
    ));
    ping(&mut holder, 2);

    // The watcher still gets events.
    let fresh = control.spawn(&["sleep", "100000"]);
    watcher.wait_for("PANE_SPAWNED", |f| match f {
        Frame::Event(e) if matches!(e.event, AgentEvent::PaneSpawned) => {
            (e.terminal.as_ref() == Some(&fresh)).then_some(())
        }
        _ => None,
    });

    // [SERVER.UPGRADE.EXEC.7] A program started after the upgrades inherited nothing of the
    // handover, and the server holds no image or previous binary any more.
    let fresh_pid = pid_of_terminal(&mut control, &fresh);
    let inherited = settled_fds_of(fresh_pid);
    assert_eq!(
        inherited, baseline,
        "a new child inherited more than the first ones"
    );
    let server_pid = u32::try_from(server.pid()).expect("pid");
    let left: Vec<_> = fds_of(server_pid)
        .into_iter()
        .filter(|(_, target)| {
            target.contains("phux-mio-upgrade") || target.contains("phux-mio-server")
        })
        .collect();
    assert!(left.is_empty(), "the server still holds {left:?}");

    // The streamed output: stop the program, then every line it printed, in order, in frames
    // whose seqs have no gap and no repeat.
    assert_eq!(
        control.command(Command::KillTerminal {
            terminal: stream_term.clone()
        }),
        CommandResult::Ok
    );
    streamer.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(c) if c.terminal == stream_term => Some(()),
        _ => None,
    });
    let mut last_seq = None;
    let mut text = Vec::new();
    for frame in &streamer.seen {
        if let Frame::TerminalOutput(o) = frame
            && o.terminal == stream_term
        {
            if let Some(prev) = last_seq {
                assert_eq!(o.seq, prev + 1, "an output seq gap or repeat");
            }
            last_seq = Some(o.seq);
            text.extend_from_slice(&o.bytes);
        }
    }
    let text = String::from_utf8_lossy(&text);
    // Live output began where the attach found the program, perhaps mid-line, and the kill may
    // have cut the last line: every line between is whole, and they count up by one.
    let lines: Vec<&str> = text.split("\r\n").collect();
    let whole = lines
        .get(1..lines.len().saturating_sub(1))
        .unwrap_or_default();
    assert!(
        whole.len() > 100,
        "too little output streamed: {} lines",
        whole.len()
    );
    let first: u64 = whole[0]
        .strip_prefix('L')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a numbered line: {:?}", whole[0]));
    for (n, line) in (first..).zip(whole) {
        assert_eq!(
            *line,
            format!("L{n}"),
            "the stream skipped or repeated a line"
        );
    }

    // Nobody was disconnected; the same server, the same pids, the same server_id.
    for (c, nonce) in [
        (&mut control, 10),
        (&mut streamer, 11),
        (&mut holder, 12),
        (&mut watcher, 13),
    ] {
        ping(c, nonce);
        assert!(!c.eof);
        assert!(!c.seen.iter().any(|f| matches!(f, Frame::Detached(_))));
    }
    let mut late = server.connect();
    assert_eq!(late.hello().server_id, hello.server_id);
    assert_eq!(
        [&count_term, &quiet_term]
            .iter()
            .map(|t| pid_of_terminal(&mut late, t))
            .collect::<Vec<_>>(),
        pids[1..]
    );
    assert!(
        fixture
            .server
            .process
            .try_wait()
            .expect("try_wait")
            .is_none()
    );
}
