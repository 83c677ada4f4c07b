//! End to end: the real server binary on a socket in a temporary directory (or on stdio),
//! real PTYs, frames built with `phux_proto::Frame` and decoded with `Frame::decode`.

use std::process::{Command as Process, Stdio};

use phux_proto::command::{ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::frame::DetachReason;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};

use crate::support::client::{self, Client, Server, contains, is_dead};

#[test]
fn hello_ok_carries_a_16_byte_server_id_that_is_the_same_for_every_client() {
    // [SERVER.ID.1] [HELLO.SERVERID.1]
    let server = Server::start();
    let a = server.connect().hello();
    let b = server.connect().hello();
    assert_eq!(a.server_id.len(), 16);
    assert_ne!(a.server_id, vec![0; 16]);
    assert_eq!(a.server_id, b.server_id);
}

#[test]
fn spawn_attach_apply_input_echoes_and_shows_on_the_screen() {
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["cat"]);
    assert!(matches!(terminal, TerminalId::Local(_)));

    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    // Bootstrap first, then live output.
    if !c.seen.iter().any(|f| matches!(f, Frame::BootstrapReady(_))) {
        c.wait_for("BOOTSTRAP_READY", |f| {
            matches!(f, Frame::BootstrapReady(_)).then_some(())
        });
    }
    let begin = c
        .seen
        .iter()
        .position(|f| matches!(f, Frame::BootstrapBegin(_)))
        .expect("BOOTSTRAP_BEGIN");
    let ready = c
        .seen
        .iter()
        .position(|f| matches!(f, Frame::BootstrapReady(_)))
        .expect("BOOTSTRAP_READY");
    assert!(begin < ready);

    let apply = ApplyInput {
        operation_id: OperationId::from_u128(0x1234).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"hello\r".to_vec(),
        })],
    };
    // OK only after the driver reported every byte written.
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    // The line discipline echoes the line, then cat writes it back: twice "hello\r\n".
    let t = terminal.clone();
    let mut live = Vec::new();
    live.extend(c.output_of(&t));
    while live.windows(7).filter(|w| w == b"hello\r\n").count() < 2 {
        c.wait_for("TERMINAL_OUTPUT", |f| match f {
            Frame::TerminalOutput(o) if o.terminal == t => Some(()),
            _ => None,
        });
        live = c.output_of(&t);
    }

    let screen = c.command(Command::GetScreen {
        terminal: terminal.clone(),
        request_scrollback: None,
        cells: false,
    });
    let CommandResult::OkWith(CommandValue::Json(json)) = screen else {
        panic!("GET_SCREEN: {screen:?}");
    };
    assert!(json.contains("\"hello\""), "screen: {json}");
}

#[test]
fn sigterm_detaches_every_client_kills_children_and_removes_the_socket() {
    // [SERVER.SHUTDOWN.1] [SERVER.SHUTDOWN.3]
    shutdown_by(rustix::process::Signal::TERM);
}

#[test]
fn sighup_shuts_down_as_sigterm_does() {
    // [SERVER.SIGNAL.1] [SERVER.SHUTDOWN.1] [SERVER.SHUTDOWN.3]
    shutdown_by(rustix::process::Signal::HUP);
}

/// Sends `signal` to a server with two clients and a running child: both clients get
/// DETACHED{SERVER_SHUTDOWN}, the child dies, the socket goes and the server exits 0.
fn shutdown_by(signal: rustix::process::Signal) {
    let mut server = Server::start();
    let mut a = server.connect();
    let mut b = server.connect();
    a.hello();
    b.hello();
    let terminal = a.spawn(&["sleep", "1000"]);
    let state = a.command(Command::GetTerminalState {
        terminal: terminal.clone(),
        include_scrollback: false,
        max_scrollback_lines: 0,
    });
    let CommandResult::OkWith(CommandValue::Json(json)) = state else {
        panic!("GET_TERMINAL_STATE: {state:?}");
    };
    let pid: u32 = json
        .split("\"pid\":")
        .nth(1)
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or_else(|| panic!("no pid in {json}"));
    assert!(!is_dead(pid), "the child should be running");

    let server_pid = rustix::process::Pid::from_raw(server.pid()).expect("pid");
    rustix::process::kill_process(server_pid, signal).expect("signal the server");

    for client in [&mut a, &mut b] {
        let reason = client.wait_for("DETACHED", |f| match f {
            Frame::Detached(d) => Some(d.reason),
            _ => None,
        });
        assert_eq!(reason, Some(DetachReason::SERVER_SHUTDOWN));
        assert!(
            client.wait_eof(),
            "the server closes the connection after DETACHED"
        );
    }
    assert_eq!(server.wait_exit(), Some(0));
    assert!(!server.socket.exists(), "socket file left behind");
    assert!(is_dead(pid), "child {pid} survived the shutdown");
}

#[test]
fn stdio_serves_one_client_and_exits_when_it_leaves() {
    // [SERVER.STDIO.1]
    let mut process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--stdio", "--log-level", "warn"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let stdin = process.stdin.take().expect("stdin");
    let stdout = process.stdout.take().expect("stdout");
    let mut c = Client::stdio(stdin, stdout);
    let ok = c.hello();
    assert_eq!(ok.server_id.len(), 16);
    let terminal = c.spawn(&["cat"]);
    assert!(matches!(terminal, TerminalId::Local(_)));
    c.close_writer();
    assert!(c.wait_eof(), "the server should close stdout");
    let end = std::time::Instant::now() + client::DEADLINE;
    let status = loop {
        if let Some(status) = process.try_wait().expect("try_wait") {
            break status;
        }
        assert!(std::time::Instant::now() < end, "server did not exit");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn child_exit_reports_its_last_output_then_terminal_closed_with_the_status() {
    // [SERVER.PTY.3] TERMINAL_CLOSED only after the PTY was read to its end.
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    // The child waits for a line so the attach is in place before it speaks and exits.
    let terminal = c.spawn(&["/bin/sh", "-c", "read x; printf 'last words\\n'; exit 3"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(7).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"go\r".to_vec(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    let t = terminal.clone();
    let status = c.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(closed) if closed.terminal == t => Some(closed.exit_status),
        _ => None,
    });
    assert_eq!(status, Some(3));
    assert!(
        contains(&c.output_of(&terminal), b"last words"),
        "output before the exit was lost: {:?}",
        String::from_utf8_lossy(&c.output_of(&terminal))
    );
}

#[test]
fn a_line_over_the_canonical_limit_is_refused_unwritten() {
    // [INPUT.CANON.2] [INPUT.CANON.4] 5,000 bytes with no terminator in cooked mode.
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["cat"]);
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(99).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: vec![b'x'; 5000],
        })],
    };
    match c.command(Command::ApplyInput(apply)) {
        CommandResult::Error { code, .. } => {
            assert_eq!(code, phux_proto::ErrorCode::CANONICAL_LIMIT_EXCEEDED);
        }
        other => panic!("expected CANONICAL_LIMIT_EXCEEDED, got {other:?}"),
    }
    // Nothing reached the terminal: the screen is still empty.
    let screen = c.command(Command::GetScreen {
        terminal,
        request_scrollback: None,
        cells: false,
    });
    let CommandResult::OkWith(CommandValue::Json(json)) = screen else {
        panic!("GET_SCREEN: {screen:?}");
    };
    assert!(!json.contains("xxxx"), "refused bytes were written: {json}");
}

#[test]
fn kill_terminal_reaps_the_child_and_the_server_keeps_serving() {
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["sleep", "1000"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    assert_eq!(
        c.command(Command::KillTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let t = terminal.clone();
    // Killed by the SIGHUP of the hangup: no exit status.
    let status = c.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(closed) if closed.terminal == t => Some(closed.exit_status),
        _ => None,
    });
    assert_eq!(status, None);
    // Still serving: a new terminal starts.
    let again = c.spawn(&["cat"]);
    assert_ne!(again, terminal);
}
