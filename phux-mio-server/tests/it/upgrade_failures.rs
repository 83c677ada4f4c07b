//! An upgrade that cannot happen changes nothing: a new binary that exits at once, one that
//! hangs, one that refuses the state version, one that is not there. Each time the requester
//! gets an ERROR naming the reason, every client is still served, the terminals still run, and
//! a later good upgrade works. A second UPGRADE while one is under way is refused. And a new
//! image that cannot read the state goes back to the previous binary with the reason.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::CommandFrame;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, TerminalId};

use crate::support::client::{Client, DEADLINE, Server, contains, pid_of_terminal};
use crate::support::common::{eventually, proc_state};
use crate::upgrade_chaos::{LoggedServer, paste, ping, screen, settled_fds_of};

pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

pub(crate) fn upgrade_to(c: &mut Client, binary: &Path) -> CommandResult {
    c.command(Command::Upgrade {
        binary: Some(binary.to_str().expect("utf-8").to_owned()),
    })
}

/// The ERROR an upgrade got, with its text; panics on anything else.
pub(crate) fn refusal(result: CommandResult) -> String {
    match result {
        CommandResult::Error { code, message } => {
            // [SERVER.UPGRADE.EXEC.4] Request-scoped: the server failed, not the request.
            assert_eq!(code, ErrorCode::INTERNAL_ERROR, "{message}");
            message
        }
        other => panic!("the upgrade did not fail: {other:?}"),
    }
}

/// Every client answers a ping and a command, and the echo terminal still echoes.
pub(crate) fn all_served(clients: &mut [&mut Client], echo: &TerminalId, round: u64) {
    for (i, c) in clients.iter_mut().enumerate() {
        ping(c, round * 100 + i as u64);
        let _ = screen(c, echo);
        assert!(!c.eof);
    }
    let word = format!("alive{round}");
    let first = &mut *clients[0];
    assert_eq!(
        first.command(Command::ApplyInput(paste(
            0x5500_0000 + u128::from(round),
            echo,
            format!("{word}\n").as_bytes()
        ))),
        CommandResult::Ok
    );
    let end = Instant::now() + DEADLINE;
    while !screen(first, echo).contains(&word) {
        assert!(Instant::now() < end, "the terminal stopped running");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_failed_upgrade_leaves_everything_serving_and_a_later_one_works() {
    // [SERVER.UPGRADE.EXEC.2] [SERVER.UPGRADE.EXEC.4] [SERVER.UPGRADE.4] [SERVER.UPGRADE.5]
    let mut fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = fixture.server.connect();
    let hello = a.hello();
    let mut b = fixture.server.connect();
    b.hello();
    let echo = a.spawn(&["cat"]);
    let inherited = |c: &mut Client| {
        let t = c.spawn(&["sleep", "100000"]);
        settled_fds_of(pid_of_terminal(c, &t))
    };
    let baseline = inherited(&mut a);
    assert_eq!(
        b.command(Command::AttachTerminal {
            terminal: echo.clone()
        }),
        CommandResult::Ok
    );
    all_served(&mut [&mut a, &mut b], &echo, 1);

    let exits = script(dir.path(), "exits", "exit 0");
    let text = refusal(upgrade_to(&mut a, &exits));
    assert!(
        text.contains("upgrade failed") && text.contains("without confirming"),
        "{text}"
    );
    all_served(&mut [&mut a, &mut b], &echo, 2);

    let refuses = script(
        dir.path(),
        "refuses",
        "echo \"state version $2 is not one I read\" >&2; exit 3",
    );
    let text = refusal(upgrade_to(&mut b, &refuses));
    assert!(
        text.contains("is not one I read") && text.contains("exit status: 3"),
        "{text}"
    );
    all_served(&mut [&mut a, &mut b], &echo, 3);

    let text = refusal(upgrade_to(
        &mut a,
        Path::new("/nonexistent/phux-mio-server"),
    ));
    assert!(text.contains("cannot run"), "{text}");
    all_served(&mut [&mut a, &mut b], &echo, 4);

    // One that hangs is killed at the check's deadline; meanwhile everyone is served, and a
    // second upgrade is refused at once.
    let hangs = script(dir.path(), "hangs", "exec sleep 100000");
    a.send(&Frame::Command(CommandFrame {
        request_id: 9000,
        command: Command::Upgrade {
            binary: Some(hangs.to_str().expect("utf-8").to_owned()),
        },
    }));
    let second = b.command(Command::Upgrade { binary: None });
    assert!(
        matches!(&second, CommandResult::Error { .. }),
        "a second upgrade was not refused: {second:?}"
    );
    ping(&mut b, 77);
    let hung = a.wait_for("the hung upgrade's answer", |f| match f {
        Frame::CommandResult(r) if r.request_id == 9000 => Some(r.result.clone()),
        _ => None,
    });
    let text = refusal(hung);
    assert!(text.contains("did not answer"), "{text}");
    all_served(&mut [&mut a, &mut b], &echo, 5);
    assert_eq!(fixture.adoptions(), 0, "a failed upgrade exec'd");

    // One that says it reads our version and then removes itself: the file it was is still
    // what runs next (it was opened once), and it cannot adopt the state on trial. The server
    // serves on, and the next child inherits nothing new.
    let version = phux_core::upgrade::STATE_VERSION;
    let vanishes = dir.path().join("vanishes");
    let vanishes = script(
        dir.path(),
        "vanishes",
        &format!(
            "echo '{}'; rm -f {}",
            phux_mio_server::upgrade::check_line(version),
            vanishes.display()
        ),
    );
    let text = refusal(upgrade_to(&mut a, &vanishes));
    assert!(text.contains("cannot adopt"), "{text}");
    assert!(!vanishes.exists());
    // [SERVER.UPGRADE.EXEC.7]
    assert_eq!(inherited(&mut a), baseline);
    all_served(&mut [&mut a, &mut b], &echo, 6);
    assert_eq!(fixture.adoptions(), 0, "a failed upgrade exec'd");

    // The real binary still upgrades, and the server is the same one.
    let good = PathBuf::from(env!("CARGO_BIN_EXE_phux-mio-server"));
    assert_eq!(upgrade_to(&mut a, &good), CommandResult::Ok);
    assert_eq!(fixture.adoptions(), 1);
    all_served(&mut [&mut a, &mut b], &echo, 7);
    let mut c = fixture.server.connect();
    assert_eq!(c.hello().server_id, hello.server_id);
    assert!(fixture.server.process.try_wait().expect("wait").is_none());
}

#[test]
fn check_upgrade_confirms_its_version_and_refuses_others() {
    // [SERVER.UPGRADE.EXEC.8]
    let exe = env!("CARGO_BIN_EXE_phux-mio-server");
    let version = phux_core::upgrade::STATE_VERSION;
    let out = std::process::Command::new(exe)
        .args(["--check-upgrade", &version.to_string()])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    assert!(contains(
        &out.stdout,
        phux_mio_server::upgrade::check_line(version).as_bytes()
    ));
    let out = std::process::Command::new(exe)
        .args(["--check-upgrade", &(version + 1000).to_string()])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty());
    assert!(contains(&out.stderr, b"cannot read upgrade state version"));
}

#[test]
fn check_adopt_refuses_what_is_not_an_image_saying_why_on_stderr() {
    // [SERVER.UPGRADE.EXEC.12] (Every upgrade that succeeds passed it with a real image.)
    let exe = env!("CARGO_BIN_EXE_phux-mio-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, b"phuxstat but not an image").expect("write");
    for stdin in [
        std::process::Stdio::from(std::fs::File::open(&garbage).expect("open")),
        std::process::Stdio::null(),
    ] {
        let out = std::process::Command::new(exe)
            .arg("--check-adopt")
            .stdin(stdin)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        assert!(contains(&out.stderr, b"cannot adopt this image"), "{out:?}");
    }
}

#[test]
fn a_new_image_that_cannot_read_the_state_goes_back_to_the_previous_binary() {
    // [SERVER.UPGRADE.EXEC.6] The "previous binary" is a script that records how it was
    // exec'd; the "image" is not one.
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("args");
    let previous = script(
        dir.path(),
        "previous",
        &format!("printf '%s\\n' \"$@\" > {}", record.display()),
    );
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, b"not an image at all").expect("write");
    let exe = env!("CARGO_BIN_EXE_phux-mio-server");
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("exec 5<\"$1\" 6<\"$2\"; exec \"$0\" --adopt-image 6 --previous-exe 5")
        .arg(exe)
        .arg(&previous)
        .arg(&garbage)
        .status()
        .expect("run");
    assert!(status.success(), "{status:?}");
    let args = std::fs::read_to_string(&record).expect("the previous binary ran");
    let args: Vec<&str> = args.lines().collect();
    // [SERVER.UPGRADE.EXEC.7] Its own descriptor named, for it to close.
    assert_eq!(
        &args[..5],
        [
            "--adopt-image",
            "6",
            "--previous-exe",
            "5",
            "--adopt-failed"
        ],
        "{args:?}"
    );
    assert!(args[5].contains("cannot read the state"), "{args:?}");
}

#[test]
fn a_server_without_terminals_upgrades_and_answers() {
    // [SERVER.UPGRADE.EXEC.4] The smallest case: one client, nothing else.
    let server = Server::start();
    let mut c = server.connect();
    let hello = c.hello();
    assert_eq!(
        c.command(Command::Upgrade { binary: None }),
        CommandResult::Ok
    );
    ping(&mut c, 1);
    let mut d = server.connect();
    assert_eq!(d.hello().server_id, hello.server_id);
    // [SERVER.UPGRADE.EXEC.14] The upgraded process shows the arguments it was started with
    // (`pgrep -f`), and nothing of the handover (upgrade_argv.rs checks them one by one).
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", server.pid())).expect("cmdline");
    let socket = server.socket.to_str().expect("utf-8");
    assert!(!contains(&cmdline, b"--adopt-image"), "{cmdline:?}");
    assert!(
        contains(&cmdline, socket.as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
}

#[test]
fn a_write_that_cannot_finish_fails_the_upgrade_and_is_then_delivered() {
    // [SERVER.UPGRADE.EXEC.3] A stopped child leaves its paste half written: the upgrade waits
    // for it no longer than its bound, fails naming the terminal, and the paste is delivered
    // once the child runs again.
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("read.log");
    std::fs::write(&out, "").expect("create");
    let mut a = fixture.server.connect();
    a.hello();
    let terminal = a.spawn(&[
        "sh",
        "-c",
        &format!("stty -echo; echo READY; exec cat >> {}", out.display()),
    ]);
    let end = Instant::now() + DEADLINE;
    while !screen(&mut a, &terminal).contains("READY") {
        assert!(Instant::now() < end, "the child never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        a.command(Command::SignalTerminal {
            terminal: terminal.clone(),
            signal: phux_proto::command::Signal::Freeze,
        }),
        CommandResult::Ok
    );
    let child = pid_of_terminal(&mut a, &terminal);
    assert!(eventually(|| proc_state(child) == Some('T')), "not stopped");
    // Far more than a terminal's input queue holds (some 68 KiB: the line discipline's 4 KiB
    // and the flip buffers' 64 KiB): three plain-input jobs of 60 KiB, the last in progress.
    let chunks: Vec<String> = (0..3)
        .map(|c| {
            use std::fmt::Write as _;
            let mut chunk = String::new();
            for i in 0..3600 {
                let _ = writeln!(chunk, "chunk{c}-line{i:05}");
            }
            chunk
        })
        .collect();
    for (i, chunk) in chunks.iter().enumerate() {
        a.send(&Frame::Command(CommandFrame {
            request_id: 7000 + i as u32,
            command: Command::RouteInput {
                terminal: terminal.clone(),
                event: InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: chunk.clone().into_bytes(),
                }),
            },
        }));
    }
    // On the same connection, so the jobs are under way before the upgrade begins.
    let text = refusal(a.command(Command::Upgrade { binary: None }));
    let mut b = fixture.server.connect();
    b.hello();
    assert!(
        text.contains("input in progress") && text.contains(&terminal.to_string()),
        "{text}"
    );
    ping(&mut b, 1);
    assert_eq!(fixture.adoptions(), 0);
    assert_eq!(
        b.command(Command::SignalTerminal {
            terminal: terminal.clone(),
            signal: phux_proto::command::Signal::Resume,
        }),
        CommandResult::Ok
    );
    // Every byte reaches the child once, in order.
    let want = chunks.concat();
    let end = Instant::now() + DEADLINE;
    while std::fs::read_to_string(&out).unwrap_or_default().len() < want.len() {
        assert!(Instant::now() < end, "the input never arrived whole");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(std::fs::read_to_string(&out).expect("read"), want);
    // And now the upgrade goes through.
    assert_eq!(
        b.command(Command::Upgrade { binary: None }),
        CommandResult::Ok
    );
}

#[test]
fn a_shutdown_during_the_check_ends_the_check_too() {
    // [SERVER.UPGRADE.EXEC.2] [SERVER.SHUTDOWN.3] A binary that hangs in its check is not left
    // running when the server stops meanwhile.
    let mut fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("check.pid");
    let hangs = script(
        dir.path(),
        "hangs",
        &format!("echo $$ > {}; exec sleep 100000", pidfile.display()),
    );
    let mut a = fixture.server.connect();
    a.hello();
    a.send(&Frame::Command(CommandFrame {
        request_id: 1,
        command: Command::Upgrade {
            binary: Some(hangs.to_str().expect("utf-8").to_owned()),
        },
    }));
    let end = Instant::now() + DEADLINE;
    let check: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < end, "the check never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let server = rustix::process::Pid::from_raw(fixture.server.pid()).expect("pid");
    rustix::process::kill_process(server, rustix::process::Signal::TERM).expect("SIGTERM");
    assert_eq!(fixture.server.wait_exit(), Some(0));
    assert!(
        eventually(|| crate::support::client::is_dead(check)),
        "the check outlived the server"
    );
}
