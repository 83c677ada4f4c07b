//! The canonical-line guard counts the line that earlier batches left pending: in a cooked
//! terminal, a batch that would push the unterminated line past 4095 bytes is refused with
//! CANONICAL_LIMIT_EXCEEDED and nothing of it is written, and every batch answered OK is read
//! whole by the program (a shell `read` reports each line's length).

use std::time::Instant;

use crate::support::client::{Client, DEADLINE, Server, contains};
use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, OperationId, TerminalId};

/// Says READY only once told to (a first line, "go"): said before the test attached, it would
/// be part of the attach's bootstrap rather than of the live output the test watches.
const READER: &str =
    "stty -echo; read go; echo READY; while IFS= read -r l; do echo \"LEN ${#l}\"; done";

fn apply(c: &mut Client, terminal: &TerminalId, op: u128, data: Vec<u8>) -> CommandResult {
    c.command(Command::ApplyInput(ApplyInput {
        operation_id: OperationId::new(op.to_be_bytes()).expect("non-zero id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data,
        })],
    }))
}

fn wait_output(c: &mut Client, terminal: &TerminalId, needle: &str) {
    let end = Instant::now() + DEADLINE;
    while !contains(&c.output_of(terminal), needle.as_bytes()) {
        assert!(
            Instant::now() < end,
            "no {needle:?} in {:?}",
            String::from_utf8_lossy(&c.output_of(terminal))
        );
        c.recv(end);
    }
}

fn refused_for_the_line(result: &CommandResult) -> bool {
    matches!(result, CommandResult::Error { code, .. } if *code == ErrorCode::CANONICAL_LIMIT_EXCEEDED)
}

#[test]
fn a_batch_that_would_overflow_the_pending_line_is_refused_and_ok_means_read_whole() {
    // [INPUT.CANON.7] [INPUT.CANON.4] [INPUT.APPLY.9]
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let terminal = c.spawn(&["/bin/sh", "-c", READER]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    assert_eq!(
        apply(&mut c, &terminal, 100, b"go\n".to_vec()),
        CommandResult::Ok
    );
    wait_output(&mut c, &terminal, "READY");

    // 3000 bytes, no terminator: they wait in the line discipline.
    assert_eq!(
        apply(&mut c, &terminal, 1, vec![b'a'; 3000]),
        CommandResult::Ok
    );
    // Alone 1096 bytes fit; after the 3000 pending ones the line would be 4096 long.
    let over = apply(&mut c, &terminal, 2, vec![b'b'; 1096]);
    assert!(refused_for_the_line(&over), "{over:?}");
    // 1095 more make exactly 4095, which fits; the terminator (a pasted LF, sent as CR and
    // mapped to NL by ICRNL) ends the line.
    assert_eq!(
        apply(&mut c, &terminal, 3, vec![b'c'; 1095]),
        CommandResult::Ok
    );
    assert_eq!(
        apply(&mut c, &terminal, 4, b"\n".to_vec()),
        CommandResult::Ok
    );
    // The program read every byte of the three batches answered OK, and none of the refused
    // one: a line of 3000 + 1095 bytes.
    wait_output(&mut c, &terminal, "LEN 4095\r\n");

    // The next line starts empty: a whole 4095-byte line in one batch is accepted again,
    // and a batch that overflows on its own is refused too.
    let own = apply(&mut c, &terminal, 5, vec![b'd'; 4096]);
    assert!(refused_for_the_line(&own), "{own:?}");
    let mut line = vec![b'e'; 4095];
    line.push(b'\n');
    assert_eq!(apply(&mut c, &terminal, 6, line), CommandResult::Ok);
    wait_output(&mut c, &terminal, "LEN 4095\r\nLEN 4095\r\n");
    // No refused byte was ever read: exactly the two lines above were reported.
    let out = String::from_utf8_lossy(&c.output_of(&terminal)).into_owned();
    assert_eq!(out.matches("LEN ").count(), 2, "{out:?}");
}
