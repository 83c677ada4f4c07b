//! In-place upgrades (UPGRADE frames and SIGUSR2) under real programs on real PTYs, with
//! clients attached: vim being typed into, between upgrades and while they happen; an
//! interactive bash in the middle of a command that prints; less paging a long file; programs
//! ending while upgrades follow one another. Each upgrade is seen only as a pause: an idle
//! program's screen and modes are the same before and after it, the program's pid is the
//! same, the attached client's output seqs run on without a gap or a repeat, every
//! acknowledged keystroke lands exactly once (vim writes exactly the typed text), every line
//! the shell prints arrives once and in order (and Ctrl-C still interrupts its foreground
//! program), and every program goes on taking input and reports its exit status (and its
//! last output) at the end. Each test is skipped (phux_testkit records it) when its program
//! is not installed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use phux_proto::command::{ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{Frame, OperationId, TerminalId};

use crate::support::client::{Client, DEADLINE, is_dead, pid_of_terminal};
use crate::upgrade_chaos::{LoggedServer, apply_until_acknowledged, ping, screen};

/// Upgrade number `i` (counting from 0): an UPGRADE frame, or every third a SIGUSR2; returns
/// once the new image has adopted the state, having checked that `terminal` still runs the
/// same process.
fn upgrade(fixture: &LoggedServer, control: &mut Client, terminal: &TerminalId, i: usize) {
    let pid = pid_of_terminal(control, terminal);
    if i % 3 == 2 {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(fixture.server.pid()).expect("pid"),
            rustix::process::Signal::USR2,
        )
        .expect("SIGUSR2");
    } else {
        assert_eq!(
            control.command(Command::Upgrade { binary: None }),
            CommandResult::Ok,
            "upgrade {i}"
        );
    }
    fixture.wait_adoptions(i + 1);
    // [SERVER.UPGRADE.EXEC.5] In place: the same server process, the same program.
    let server = u32::try_from(fixture.server.pid()).expect("pid");
    assert!(!is_dead(server), "upgrade {i}: the server exited");
    assert_eq!(pid_of_terminal(control, terminal), pid, "upgrade {i}");
}

/// A client that sends input as APPLY_INPUT, one operation per keystroke, each acknowledged
/// before the next, and every third sent twice with the same id before either answer is read.
struct Typist {
    c: Client,
    terminal: TerminalId,
    next_id: u128,
    request: u32,
}

impl Typist {
    fn new(c: Client, terminal: &TerminalId, first_id: u128) -> Self {
        Self {
            c,
            terminal: terminal.clone(),
            next_id: first_id,
            request: 1_000_000,
        }
    }

    /// Sends `event` under a fresh operation id until it is acknowledged; returns the apply,
    /// so that it can be retried later.
    fn send(&mut self, event: InputEvent) -> ApplyInput {
        self.next_id += 1;
        let apply = ApplyInput {
            operation_id: OperationId::from_u128(self.next_id).expect("id"),
            terminal: self.terminal.clone(),
            events: vec![event],
        };
        let copies = if self.next_id.is_multiple_of(3) { 2 } else { 1 };
        apply_until_acknowledged(&mut self.c, &apply, copies, &mut self.request);
        apply
    }

    /// Types `text` one key per character; returns the first key's apply.
    fn type_text(&mut self, text: &str) -> Option<ApplyInput> {
        let mut first = None;
        for ch in text.chars() {
            let apply = self.send(InputEvent::Key(KeyEvent {
                text: Some(ch.to_string()),
                ..KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE)
            }));
            first.get_or_insert(apply);
        }
        first
    }

    fn press(&mut self, key: PhysicalKey) -> ApplyInput {
        self.send(InputEvent::Key(KeyEvent::press(key, ModSet::NONE)))
    }

    fn paste(&mut self, text: &str) -> ApplyInput {
        self.send(InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: text.as_bytes().to_vec(),
        }))
    }
}

/// Polls GET_SCREEN until `pred` holds; the screen it held for.
fn wait_screen(
    c: &mut Client,
    terminal: &TerminalId,
    what: &str,
    mut pred: impl FnMut(&serde_json::Value) -> bool,
) -> String {
    let end = Instant::now() + DEADLINE;
    loop {
        let json = screen(c, terminal);
        let v: serde_json::Value = serde_json::from_str(&json).expect("screen json");
        if pred(&v) {
            return json;
        }
        assert!(Instant::now() < end, "{what}; the screen: {v:#}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// GET_TERMINAL_STATE with scrollback: the screen plus the modes a program set (bracketed
/// paste, cursor keys, the alternate screen), its pid and whether it reads canonically.
fn terminal_state(c: &mut Client, terminal: &TerminalId) -> String {
    match c.command(Command::GetTerminalState {
        terminal: terminal.clone(),
        include_scrollback: true,
        max_scrollback_lines: 1000,
    }) {
        CommandResult::OkWith(CommandValue::Json(json)) => json,
        other => panic!("GET_TERMINAL_STATE: {other:?}"),
    }
}

/// The attached client's output seqs for `terminal`, checked contiguous; the last one.
fn contiguous_seqs(c: &Client, terminal: &TerminalId) -> Option<u64> {
    let mut last = None;
    for frame in &c.seen {
        if let Frame::TerminalOutput(o) = frame
            && &o.terminal == terminal
        {
            if let Some(prev) = last {
                assert_eq!(o.seq, prev + 1, "an output seq gap or repeat");
            }
            last = Some(o.seq);
        }
    }
    last
}

fn closed(c: &mut Client, terminal: &TerminalId) -> Option<i32> {
    c.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(closed) if &closed.terminal == terminal => Some(closed.exit_status),
        _ => None,
    })
}

fn attach(c: &mut Client, terminal: &TerminalId) {
    c.hello();
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
}

/// Upgrades with vim idle, typing between them.
const VIM_UPGRADES: usize = 6;
/// Upgrades while keystrokes are in flight.
const TYPING_UPGRADES: usize = 3;

#[test]
fn vim_being_typed_into_sees_upgrades_as_a_pause() {
    // [SERVER.UPGRADE.6] [SERVER.UPGRADE.7] [SERVER.UPGRADE.EXEC.5] [SERVER.UPGRADE.STATE.2]
    // [INPUT.DEDUPE.2]
    phux_testkit::require_programs!("vim");
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("typed.txt");
    let mut control = fixture.server.connect();
    control.hello();
    // No vimrc, no viminfo, no swap file; a short key-code timeout so a lone Escape leaves
    // insert mode at once.
    let vim = control.spawn(&[
        "vim",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-N",
        "-n",
        "-c",
        "set ttimeout ttimeoutlen=20",
        file.to_str().expect("utf-8 path"),
    ]);
    let mut watcher = fixture.server.connect();
    attach(&mut watcher, &vim);
    wait_screen(&mut control, &vim, "vim never started", |v| {
        v["lines"][1] == "~" && v["cursor"]["x"] == 0 && v["cursor"]["y"] == 0
    });
    let mut typist = Typist::new(fixture.server.connect(), &vim, 0x5100_0000);
    typist.c.hello();

    let mut typed: Vec<String> = Vec::new();
    let mut marks = Vec::new();
    for i in 0..VIM_UPGRADES {
        // Insert (first line) or open a line below, type a line, back to normal mode.
        let text = format!("line {i} typed while the server upgrades");
        let opener = typist
            .type_text(if i == 0 { "i" } else { "o" })
            .expect("a key");
        typist.type_text(&text);
        typist.press(PhysicalKey::ESCAPE);
        typed.push(text.clone());
        let row = i;
        let before = wait_screen(&mut control, &vim, "vim never showed the typed line", |v| {
            (0..=row).all(|r| v["lines"][r] == typed[r].as_str())
                && !v["lines"][23]
                    .as_str()
                    .is_some_and(|l| l.contains("INSERT"))
                && v["cursor"]["y"] == row
                && v["cursor"]["x"] == text.len() - 1
        });
        // Everything vim wrote so far has reached the attached client.
        ping(&mut watcher, 100 + i as u64);
        marks.push(contiguous_seqs(&watcher, &vim).expect("vim's output streamed"));
        let state = terminal_state(&mut control, &vim);

        upgrade(&fixture, &mut control, &vim, i);
        // [SERVER.UPGRADE.EXEC.5] The idle vim's screen crossed exactly, and so did the modes
        // it set (the keys it is sent are encoded by them).
        assert_eq!(screen(&mut control, &vim), before, "upgrade {i}");
        assert_eq!(terminal_state(&mut control, &vim), state, "upgrade {i}");
        // [INPUT.DEDUPE.2] A retry of a keystroke acknowledged before the upgrade is answered
        // from the ledger and not written again (a second `o` would open another line; the
        // file at the end would show it).
        assert_eq!(
            typist.c.command(Command::ApplyInput(opener)),
            CommandResult::Ok,
            "upgrade {i}"
        );
    }
    // Output after every upgrade, and no gap or repeat anywhere in the stream.
    assert!(marks.windows(2).all(|w| w[0] < w[1]), "{marks:?}");

    // [SERVER.UPGRADE.3] [SERVER.UPGRADE.EXEC.3] Then typing goes on while the server
    // upgrades: keystrokes in flight across each exec, held and written after it.
    typist.type_text("o");
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicUsize::new(0));
    let typing: JoinHandle<(Typist, String)> = {
        let (stop, progress) = (Arc::clone(&stop), Arc::clone(&progress));
        std::thread::spawn(move || {
            let mut text = String::new();
            while !stop.load(Ordering::Relaxed) {
                let word = format!("w{} ", progress.load(Ordering::Relaxed));
                typist.type_text(&word);
                text.push_str(&word);
                progress.fetch_add(1, Ordering::Relaxed);
            }
            (typist, text)
        })
    };
    let more_words = |n: usize| {
        let from = progress.load(Ordering::Relaxed);
        let end = Instant::now() + DEADLINE;
        while progress.load(Ordering::Relaxed) < from + n {
            assert!(Instant::now() < end, "typing stalled");
            assert!(!typing.is_finished(), "the typist failed");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    for i in VIM_UPGRADES..VIM_UPGRADES + TYPING_UPGRADES {
        more_words(3);
        upgrade(&fixture, &mut control, &vim, i);
    }
    more_words(3);
    stop.store(true, Ordering::Relaxed);
    let (mut typist, text) = typing.join().expect("the typist");
    typist.press(PhysicalKey::ESCAPE);
    typed.push(text);

    typist.type_text(":wq");
    typist.press(PhysicalKey::ENTER);
    assert_eq!(closed(&mut watcher, &vim), Some(0), "vim's exit status");
    contiguous_seqs(&watcher, &vim);
    let mut expected = typed.join("\n");
    expected.push('\n');
    assert_eq!(
        std::fs::read_to_string(&file).expect("vim wrote the file"),
        expected
    );
    for c in [&mut control, &mut watcher, &mut typist.c] {
        assert!(!c.eof);
        assert!(!c.seen.iter().any(|f| matches!(f, Frame::Detached(_))));
    }
}

const SHELL_UPGRADES: usize = 5;
/// Lines the shell prints between one upgrade and the next.
const LINES_BETWEEN: usize = 10;

/// The output's lines, each as the terminal would leave it: what follows a line's last CR
/// (bash writes `ESC[?2004l CR` before a command's output).
fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            l.rsplit('\r').next().unwrap_or(l).to_owned()
        })
        .collect()
}

/// The numbers of the `line N` lines, in the order they came.
fn numbered(bytes: &[u8]) -> Vec<u64> {
    lines_of(bytes)
        .iter()
        .filter_map(|l| l.strip_prefix("line ")?.parse().ok())
        .collect()
}

/// Reads the attached client's frames until its output of `terminal` satisfies `pred`.
fn wait_output(c: &mut Client, terminal: &TerminalId, what: &str, pred: impl Fn(&[u8]) -> bool) {
    let end = Instant::now() + DEADLINE;
    while !pred(&c.output_of(terminal)) {
        assert!(
            c.recv(end).is_some(),
            "{what}; output so far: {:?}",
            String::from_utf8_lossy(&c.output_of(terminal))
        );
    }
}

#[test]
fn a_shell_mid_command_prints_every_line_once_across_upgrades() {
    // [SERVER.UPGRADE.6] [SERVER.UPGRADE.7] [SERVER.UPGRADE.EXEC.5]
    phux_testkit::require_programs!("bash");
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let stop = dir.path().join("stop");
    let mut control = fixture.server.connect();
    control.hello();
    let shell = control.spawn(&[
        "env",
        &format!("STOP={}", stop.display()),
        "PS1=$ ",
        "bash",
        "--norc",
        "--noprofile",
        "-i",
    ]);
    let mut watcher = fixture.server.connect();
    attach(&mut watcher, &shell);
    wait_screen(&mut control, &shell, "no prompt", |v| v["lines"][0] == "$");
    let mut typist = Typist::new(fixture.server.connect(), &shell, 0x5200_0000);
    typist.c.hello();
    // Prints numbered lines until the test lets it stop: the upgrades come while it runs.
    typist.paste("while [ ! -e \"$STOP\" ]; do echo line $((++i)); sleep 0.02; done; echo DONE");
    typist.press(PhysicalKey::ENTER);

    // Lines before the first upgrade, between each two, and after the last.
    for i in 0..=SHELL_UPGRADES {
        let want = (i + 1) * LINES_BETWEEN;
        wait_output(&mut watcher, &shell, "the shell stopped printing", |b| {
            numbered(b).len() >= want
        });
        if i < SHELL_UPGRADES {
            upgrade(&fixture, &mut control, &shell, i);
        }
    }
    std::fs::write(&stop, "").expect("stop");
    wait_output(&mut watcher, &shell, "no DONE", |b| {
        lines_of(b).iter().any(|l| l == "DONE")
    });
    // [SERVER.UPGRADE.7] Every line, once, in order, in frames whose seqs run on.
    let out = watcher.output_of(&shell);
    let lines = numbered(&out);
    assert!(
        lines.len() >= (SHELL_UPGRADES + 1) * LINES_BETWEEN,
        "{lines:?}"
    );
    assert!(
        lines.iter().copied().eq(1..=lines.len() as u64),
        "lines lost, repeated or out of order: {lines:?}"
    );
    contiguous_seqs(&watcher, &shell);

    // The same shell takes another command, then exits with the status it is told.
    typist.paste("echo after $((6*7))");
    typist.press(PhysicalKey::ENTER);
    wait_output(&mut watcher, &shell, "the next command did not run", |b| {
        lines_of(b).iter().any(|l| l == "after 42")
    });
    // A foreground program started before an upgrade is interrupted by Ctrl-C after it: the
    // terminal's line discipline and the shell's job control are as they were.
    let bash = pid_of_terminal(&mut control, &shell);
    typist.paste("sleep 1000");
    typist.press(PhysicalKey::ENTER);
    let children = format!("/proc/{bash}/task/{bash}/children");
    let end = Instant::now() + DEADLINE;
    while std::fs::read_to_string(&children)
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        assert!(Instant::now() < end, "sleep never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    upgrade(&fixture, &mut control, &shell, SHELL_UPGRADES);
    typist.send(InputEvent::Key(KeyEvent {
        unshifted_codepoint: Some(u32::from('c')),
        ..KeyEvent::press(PhysicalKey::KEY_C, ModSet::CTRL)
    }));
    typist.paste("echo status $?");
    typist.press(PhysicalKey::ENTER);
    wait_output(&mut watcher, &shell, "Ctrl-C did not end sleep", |b| {
        lines_of(b).iter().any(|l| l == "status 130")
    });
    typist.paste("exit 3");
    typist.press(PhysicalKey::ENTER);
    assert_eq!(
        closed(&mut watcher, &shell),
        Some(3),
        "the shell's exit status"
    );
    contiguous_seqs(&watcher, &shell);
    for c in [&mut control, &mut watcher, &mut typist.c] {
        assert!(!c.eof);
        assert!(!c.seen.iter().any(|f| matches!(f, Frame::Detached(_))));
    }
}

/// Rows in the file `less` pages through; more than a few screens.
const LESS_ROWS: usize = 300;

#[test]
fn less_pages_a_long_file_across_upgrades() {
    // [SERVER.UPGRADE.6] [SERVER.UPGRADE.7] [SERVER.UPGRADE.EXEC.5] [SERVER.UPGRADE.STATE.2]
    phux_testkit::require_programs!("less");
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("long.txt");
    let mut rows: Vec<String> = (1..=LESS_ROWS).map(|n| format!("row {n}")).collect();
    rows.push(String::new());
    std::fs::write(&file, rows.join("\n")).expect("write");
    let mut control = fixture.server.connect();
    control.hello();
    // No LESS options from the environment, no history file.
    let less = control.spawn(&[
        "env",
        "-u",
        "LESS",
        "LESSHISTFILE=-",
        "less",
        file.to_str().expect("utf-8 path"),
    ]);
    let mut watcher = fixture.server.connect();
    attach(&mut watcher, &less);
    let mut typist = Typist::new(fixture.server.connect(), &less, 0x5300_0000);
    typist.c.hello();

    // A page shown from `top`, the prompt drawn under it and the cursor after the prompt:
    // less is idle.
    let page = |top: usize| {
        move |v: &serde_json::Value| {
            let prompt = v["lines"][23].as_str().unwrap_or_default();
            (0..23).all(|r| {
                let want = top + r;
                want > LESS_ROWS && v["lines"][r] == "~"
                    || v["lines"][r] == format!("row {want}").as_str()
            }) && !prompt.is_empty()
                && v["cursor"]["y"] == 23
                && v["cursor"]["x"] == prompt.chars().count()
        }
    };
    // (keys, the row then at the top)
    let steps: [(&str, usize); 5] = [
        ("", 1),
        (" ", 24),
        ("jjj", 27),
        ("G", LESS_ROWS - 22),
        ("g", 1),
    ];
    for (i, (keys, top)) in steps.into_iter().enumerate() {
        typist.type_text(keys);
        let before = wait_screen(&mut control, &less, "less did not page", page(top));
        let state = terminal_state(&mut control, &less);
        upgrade(&fixture, &mut control, &less, i);
        // [SERVER.UPGRADE.EXEC.5] The page and the modes crossed exactly, and less still
        // pages from there.
        assert_eq!(screen(&mut control, &less), before, "upgrade {i}");
        assert_eq!(terminal_state(&mut control, &less), state, "upgrade {i}");
    }
    typist.type_text("q");
    assert_eq!(closed(&mut watcher, &less), Some(0), "less's exit status");
    contiguous_seqs(&watcher, &less);
    for c in [&mut control, &mut watcher, &mut typist.c] {
        assert!(!c.eof);
        assert!(!c.seen.iter().any(|f| matches!(f, Frame::Detached(_))));
    }
}

/// Programs that end while the server upgrades, one after another.
const ENDING: i32 = 8;

#[test]
fn programs_ending_across_upgrades_report_their_output_and_status() {
    // [SERVER.UPGRADE.EXEC.5] [SERVER.UPGRADE.STATE.2]
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let go = dir.path().join("go");
    let mut control = fixture.server.connect();
    control.hello();
    let mut watcher = fixture.server.connect();
    watcher.hello();
    let mut terminals = Vec::new();
    for k in 1..=ENDING {
        // Each waits for the go file, then ends k*30 ms later, its last words just before.
        let script = format!(
            "while [ ! -e {go} ]; do sleep 0.01; done; sleep 0.{k:02}; sleep 0.{k:02}; \
             sleep 0.{k:02}; echo bye{k}; exit {k}",
            go = go.display()
        );
        let t = control.spawn(&["sh", "-c", &script]);
        assert_eq!(
            watcher.command(Command::AttachTerminal {
                terminal: t.clone()
            }),
            CommandResult::Ok
        );
        terminals.push((k, t));
    }
    std::fs::write(&go, "").expect("go");
    let mut i = 0;
    let end = Instant::now() + DEADLINE;
    let all_closed = |w: &Client| {
        terminals.iter().all(|(_, t)| {
            w.seen
                .iter()
                .any(|f| matches!(f, Frame::TerminalClosed(c) if &c.terminal == t))
        })
    };
    while !all_closed(&watcher) {
        assert!(Instant::now() < end, "not every program's end was reported");
        if i % 3 == 2 {
            rustix::process::kill_process(
                rustix::process::Pid::from_raw(fixture.server.pid()).expect("pid"),
                rustix::process::Signal::USR2,
            )
            .expect("SIGUSR2");
        } else {
            assert_eq!(
                control.command(Command::Upgrade { binary: None }),
                CommandResult::Ok,
                "upgrade {i}"
            );
        }
        fixture.wait_adoptions(i + 1);
        i += 1;
        ping(&mut watcher, 200 + i as u64);
    }
    for (k, t) in &terminals {
        let status = watcher.seen.iter().find_map(|f| match f {
            Frame::TerminalClosed(c) if &c.terminal == t => Some(c.exit_status),
            _ => None,
        });
        assert_eq!(status, Some(Some(*k)), "terminal {k}");
        let out = String::from_utf8_lossy(&watcher.output_of(t)).into_owned();
        assert!(out.contains(&format!("bye{k}")), "terminal {k}: {out:?}");
    }
    assert!(i > 0, "every program ended before the first upgrade");
}
