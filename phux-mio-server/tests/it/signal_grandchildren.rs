//! SIGNAL_TERMINAL reaches the whole process group — the child and its grandchildren — and the
//! terminal stays addressable, with every change broadcast as terminal_control.

use std::time::{Duration, Instant};

use phux_proto::Frame;
use phux_proto::command::{Command, CommandResult, Signal};
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle};

use crate::support::client::{Client, DEADLINE, Server, is_dead, pid_of_terminal};

/// The process state letter from /proc (R, S, T, Z, ...), or None once gone.
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rfind(')')
        .and_then(|i| stat.get(i + 2..))
        .and_then(|rest| rest.chars().next())
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut kids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            continue;
        };
        let ppid = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(pid) {
            kids.push(p);
        }
    }
    kids
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn control(c: &mut Client, action: ControlAction) -> Lifecycle {
    c.wait_for("terminal_control", |f| match f {
        Frame::Event(e) => match &e.event {
            AgentEvent::TerminalControl(tc) if tc.action == action => Some(tc.lifecycle),
            _ => None,
        },
        _ => None,
    })
}

#[test]
fn freeze_resume_interrupt_terminate_reach_grandchildren() {
    // [SIGNAL.GROUP.1] [SIGNAL.ADDRESS.1] [SIGNAL.LIFECYCLE.1] [SIGNAL.EVENT.1]
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["sh", "-c", "sleep 1000 & sleep 1000 & wait"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let shell = pid_of_terminal(&mut c, &terminal);
    wait_until("two grandchildren", || children_of(shell).len() >= 2);
    let grandchildren = children_of(shell);

    let signal = |c: &mut Client, signal| {
        assert_eq!(
            c.command(Command::SignalTerminal {
                terminal: terminal.clone(),
                signal
            }),
            CommandResult::Ok
        );
    };
    signal(&mut c, Signal::Freeze);
    assert_eq!(control(&mut c, ControlAction::Frozen), Lifecycle::Frozen);
    for &g in &grandchildren {
        wait_until("a frozen grandchild", || state(g) == Some('T'));
    }
    signal(&mut c, Signal::Resume);
    assert_eq!(control(&mut c, ControlAction::Resumed), Lifecycle::Running);
    for &g in &grandchildren {
        wait_until("a resumed grandchild", || state(g) != Some('T'));
    }
    // The terminal is still there and answers.
    assert!(matches!(
        c.command(Command::GetScreen {
            terminal: terminal.clone(),
            request_scrollback: None,
            cells: false
        }),
        CommandResult::OkWith(_)
    ));
    signal(&mut c, Signal::Terminate);
    control(&mut c, ControlAction::Terminated);
    for &g in &grandchildren {
        wait_until("a terminated grandchild", || is_dead(g));
    }
    // The shell dies too; TERMINAL_CLOSED follows and the id is then unknown.
    let t = terminal.clone();
    c.wait_for("TERMINAL_CLOSED", |f| {
        matches!(f, Frame::TerminalClosed(cl) if cl.terminal == t).then_some(())
    });
    let after = c.command(Command::SignalTerminal {
        terminal,
        signal: Signal::Kill,
    });
    assert!(
        matches!(after, CommandResult::Error { code, .. } if code == phux_proto::ErrorCode::TERMINAL_NOT_FOUND),
        "{after:?}"
    );
}
