//! A program that asks its terminal for the device attributes and the cursor position at start
//! gets exactly one correct answer to each, from the server, with no client attached and with
//! one attached ([OUTPUT.REPLY.1]).

use phux_proto::command::{ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};

use std::time::{Duration, Instant};

use crate::support::client::{Client, DEADLINE, Server};

/// Raw mode; says READY and waits for one byte of input (so the test decides when it asks,
/// after its own setup); asks DA1 and CPR from the top-left corner; collects what comes back until the input has been quiet for a second after both
/// answers (or 30 s pass), then prints it in hex and idles.
const PROGRAM: &str = r#"
import os, select, sys, termios, time, tty
fd = sys.stdin.fileno()
tty.setraw(fd, termios.TCSANOW)
os.write(1, b"READY")
os.read(fd, 1)
os.write(1, b"\x1b[H\x1b[c\x1b[6n")
got = b""
end = time.monotonic() + 30
while time.monotonic() < end:
    ready, _, _ = select.select([fd], [], [], 1.0)
    if ready:
        got += os.read(fd, 256)
    elif b"c" in got and b"R" in got:
        break
os.write(1, b"\r\nGOT:" + got.hex().encode() + b":END\r\n")
time.sleep(600)
"#;

/// One DA1 answer and one CPR for the cursor in the top-left corner, nothing else.
fn expected() -> String {
    format!("GOT:{}:END", hex(b"\x1b[?62;22c\x1b[1;1R"))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The byte the program waits for, as acknowledged input from `c`.
fn go(c: &mut Client, t: &TerminalId) {
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(1).expect("id"),
        terminal: t.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"g".to_vec(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
}

/// The terminal's screen document (GET_SCREEN) once it contains `needle`; panics at the
/// deadline.
fn wait_screen(c: &mut Client, t: &TerminalId, needle: &str) -> String {
    let end = Instant::now() + DEADLINE;
    loop {
        let reply = c.command(Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: None,
            cells: false,
        });
        let CommandResult::OkWith(CommandValue::Json(json)) = reply else {
            panic!("GET_SCREEN: {reply:?}");
        };
        if json.contains(needle) {
            return json;
        }
        assert!(Instant::now() < end, "no {needle:?} on the screen: {json}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the terminal's live output received by `c` contains `needle`.
fn wait_output(c: &mut Client, t: &TerminalId, needle: &str) {
    while !String::from_utf8_lossy(&c.output_of(t)).contains(needle) {
        c.wait_for(needle, |f| match f {
            Frame::TerminalOutput(o) if &o.terminal == t => Some(()),
            _ => None,
        });
    }
}

#[test]
fn queries_at_start_are_answered_once_with_no_client_attached() {
    // [OUTPUT.REPLY.1]
    phux_testkit::require_programs!("python3");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let t = c.spawn(&["python3", "-c", PROGRAM]);
    wait_screen(&mut c, &t, "READY");
    go(&mut c, &t);
    // The program prints what it got once its input has been quiet.
    let text = wait_screen(&mut c, &t, ":END");
    assert!(text.contains(&expected()), "screen: {text}");
}

#[test]
fn queries_at_start_are_answered_once_with_a_client_attached() {
    // [OUTPUT.REPLY.1] The attached client's output carries the queries; the program's only
    // answers are the server's.
    phux_testkit::require_programs!("python3");
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let t = c.spawn(&["python3", "-c", PROGRAM]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: t.clone()
        }),
        CommandResult::Ok
    );
    wait_output(&mut c, &t, "READY");
    go(&mut c, &t);
    wait_output(&mut c, &t, ":END");
    let output = String::from_utf8_lossy(&c.output_of(&t)).into_owned();
    assert!(output.contains("\x1b[H\x1b[c\x1b[6n"), "output: {output:?}");
    assert!(output.contains(&expected()), "output: {output:?}");
}
