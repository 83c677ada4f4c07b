//! KILL_TERMINAL and shutdown end a terminal as a closing terminal emulator does: SIGHUP
//! first, so a program can clean up (vim removes its swap file), and SIGKILL only for one
//! that is still there after the grace period, without holding up the server meanwhile.

use std::path::Path;
use std::time::{Duration, Instant};

use phux_mio_server::driver::KILL_GRACE;
use phux_proto::command::{Command, CommandResult, Signal};
use phux_proto::frame::DetachReason;
use phux_proto::{Frame, TerminalId};

use crate::support::client::{Client, DEADLINE, Server, is_dead, pid_of_terminal};
use crate::support::common::{eventually, proc_state};

/// Traps SIGHUP: writes "bye" to `$1/bye` and exits 0. Says it is ready in `$1/ready`.
const TRAPS_HUP: &str = "trap 'echo bye > \"$1/bye\"; exit 0' HUP; : > \"$1/ready\"; \
                         sleep 1000 & wait";
/// Ignores SIGHUP (the `exec`ed sleep inherits SIG_IGN). Says it is ready in `$1/ready`.
const IGNORES_HUP: &str = "trap '' HUP; : > \"$1/ready\"; exec sleep 1000";

fn spawn_script(c: &mut Client, script: &str, dir: &Path) -> TerminalId {
    let dir = dir.to_str().expect("utf-8 path");
    let terminal = c.spawn(&["/bin/sh", "-c", script, "sh", dir]);
    // Attached, so that TERMINAL_CLOSED comes to this client.
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let ready = Path::new(dir).join("ready");
    assert!(eventually(|| ready.exists()), "the script never got ready");
    terminal
}

fn closed(c: &mut Client, terminal: &TerminalId) -> Option<i32> {
    let t = terminal.clone();
    c.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(closed) if closed.terminal == t => Some(closed.exit_status),
        _ => None,
    })
}

fn saw_closed(c: &Client, terminal: &TerminalId) -> bool {
    c.seen
        .iter()
        .any(|f| matches!(f, Frame::TerminalClosed(closed) if &closed.terminal == terminal))
}

#[test]
fn kill_terminal_hangs_up_first_so_a_hup_trap_runs() {
    // [SERVER.SIGNAL.2]
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = spawn_script(&mut c, TRAPS_HUP, dir.path());
    assert_eq!(
        c.command(Command::KillTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    // It exited on its own (status 0) after its trap ran, not by SIGKILL.
    assert_eq!(closed(&mut c, &terminal), Some(0));
    let bye = std::fs::read_to_string(dir.path().join("bye")).expect("the HUP trap ran");
    assert_eq!(bye, "bye\n");
}

#[test]
fn kill_terminal_sigkills_a_child_that_ignores_hup_after_the_grace_without_blocking() {
    // [SERVER.SIGNAL.2]
    let dir = tempfile::tempdir().expect("tempdir");
    let other = tempfile::tempdir().expect("tempdir");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let stubborn = spawn_script(&mut c, IGNORES_HUP, dir.path());
    let pid = pid_of_terminal(&mut c, &stubborn);
    let calm = spawn_script(&mut c, TRAPS_HUP, other.path());

    let start = Instant::now();
    assert_eq!(
        c.command(Command::KillTerminal {
            terminal: stubborn.clone()
        }),
        CommandResult::Ok
    );
    // The grace does not hold up the loop: another terminal's state is served meanwhile. Only
    // the order is asserted (one round trip is short next to the grace), not a time.
    let calm_pid = pid_of_terminal(&mut c, &calm);
    assert!(
        !saw_closed(&c, &stubborn),
        "the child that ignores SIGHUP was closed before a command sent during its grace \
         was answered"
    );
    assert!(!is_dead(calm_pid));

    // SIGKILL once the grace is over: no exit status, and well within a generous bound.
    assert_eq!(closed(&mut c, &stubborn), None);
    let took = start.elapsed();
    assert!(
        took >= KILL_GRACE,
        "SIGKILL came before the grace: {took:?}"
    );
    assert!(took < KILL_GRACE + DEADLINE, "SIGKILL came late: {took:?}");
    assert!(eventually(|| is_dead(pid)), "child {pid} survived SIGKILL");
}

#[test]
fn a_frozen_child_is_resumed_so_it_can_act_on_its_sighup() {
    // [SERVER.SIGNAL.2] SIGCONT follows the SIGHUP: a stopped job handles it rather than being
    // SIGKILLed at the grace's end.
    const EXITS_7_ON_HUP: &str = "trap 'exit 7' HUP; : > \"$1/ready\"; sleep 1000 & wait";
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = spawn_script(&mut c, EXITS_7_ON_HUP, dir.path());
    let pid = pid_of_terminal(&mut c, &terminal);
    assert_eq!(
        c.command(Command::SignalTerminal {
            terminal: terminal.clone(),
            signal: Signal::Freeze,
        }),
        CommandResult::Ok
    );
    assert!(
        eventually(|| proc_state(pid) == Some('T')),
        "the child never stopped"
    );
    assert_eq!(
        c.command(Command::KillTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    assert_eq!(closed(&mut c, &terminal), Some(7));
}

#[test]
fn a_grandchild_that_ignores_hup_is_sigkilled_after_the_grace_even_when_the_child_exited() {
    // [SERVER.SIGNAL.2] The child exits on SIGHUP; a job it left in its process group ignores
    // SIGHUP and keeps the terminal open. The grace's SIGKILL reaches it all the same.
    const LEAVES_A_STUBBORN_JOB: &str = "(trap '' HUP; exec sleep 1000) & \
        echo $! > \"$1/job\"; trap 'exit 0' HUP; : > \"$1/ready\"; wait";
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = spawn_script(&mut c, LEAVES_A_STUBBORN_JOB, dir.path());
    let job: u32 = std::fs::read_to_string(dir.path().join("job"))
        .expect("job pid")
        .trim()
        .parse()
        .expect("job pid");
    assert!(!is_dead(job));
    assert_eq!(
        c.command(Command::KillTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    assert_eq!(closed(&mut c, &terminal), Some(0));
    assert!(eventually(|| is_dead(job)), "job {job} survived the kill");
}

#[test]
fn shutdown_hangs_up_every_terminal_and_sigkills_only_the_stubborn_one() {
    // [SERVER.SIGNAL.2] [SERVER.SHUTDOWN.1] [SERVER.SHUTDOWN.3]
    let polite = tempfile::tempdir().expect("tempdir");
    let stubborn = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start();
    let mut c = server.connect();
    c.hello();
    spawn_script(&mut c, TRAPS_HUP, polite.path());
    let stubborn_terminal = spawn_script(&mut c, IGNORES_HUP, stubborn.path());
    let pid = pid_of_terminal(&mut c, &stubborn_terminal);

    let start = Instant::now();
    let server_pid = rustix::process::Pid::from_raw(server.pid()).expect("pid");
    rustix::process::kill_process(server_pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let reason = c.wait_for("DETACHED", |f| match f {
        Frame::Detached(d) => Some(d.reason),
        _ => None,
    });
    assert_eq!(reason, Some(DetachReason::SERVER_SHUTDOWN));
    assert_eq!(server.wait_exit(), Some(0));
    assert!(start.elapsed() < KILL_GRACE + DEADLINE + Duration::from_secs(5));
    let bye = std::fs::read_to_string(polite.path().join("bye")).expect("the HUP trap ran");
    assert_eq!(bye, "bye\n");
    assert!(is_dead(pid), "child {pid} survived the shutdown");
    assert!(!server.socket.exists(), "socket file left behind");
}
