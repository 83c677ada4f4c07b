//! A same-id APPLY_INPUT retry after the connection dropped is never written twice: the child
//! appends what it reads to a file, and the file holds the line exactly once.

use std::time::{Duration, Instant};

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::frame::CommandFrame;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId};

use crate::support::client::{DEADLINE, Server};

fn count_lines(path: &std::path::Path, line: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| *l == line)
        .count()
}

#[test]
fn same_id_retry_after_a_dropped_connection_is_not_written_twice() {
    // [INPUT.DEDUPE.2] [CLIENT.RETRY.7]
    let server = Server::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("read.log");
    let mut first = server.connect();
    let hello = first.hello();
    let script = format!("stty -echo; exec cat >> {}", out.display());
    let terminal = first.spawn(&["sh", "-c", &script]);
    // Wait until the child runs with echo off, so the line is consumed by cat alone.
    std::fs::write(&out, "").expect("create log");
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(0x00c0_ffee).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"exactly-once\n".to_vec(),
        })],
    };
    // Send and drop the connection without reading the result.
    first.send(&Frame::Command(CommandFrame {
        request_id: 1,
        command: Command::ApplyInput(apply.clone()),
    }));
    drop(first);

    // Reconnect: same incarnation, so the retry with the same id is safe.
    let mut second = server.connect();
    assert_eq!(second.hello().server_id, hello.server_id);
    let end = Instant::now() + DEADLINE;
    loop {
        match second.command(Command::ApplyInput(apply.clone())) {
            CommandResult::Ok => break,
            // The original may still be in flight: the lane refuses until it resolves.
            CommandResult::Error { code, .. }
                if code == phux_proto::ErrorCode::RESOURCE_EXHAUSTED =>
            {
                assert!(Instant::now() < end, "the original never resolved");
                std::thread::sleep(Duration::from_millis(20));
            }
            other => panic!("retry answered {other:?}"),
        }
    }
    // A third try with the same id is the cached OK again, still nothing written.
    assert_eq!(
        second.command(Command::ApplyInput(apply)),
        CommandResult::Ok
    );
    while count_lines(&out, "exactly-once") < 1 {
        assert!(Instant::now() < end, "the line never reached the child");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Give a duplicate every chance to show up before checking there is none: a marker
    // written after the retries must arrive after any duplicate would have.
    let marker = ApplyInput {
        operation_id: OperationId::from_u128(0x00c0_fff0).expect("id"),
        terminal,
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"marker\n".to_vec(),
        })],
    };
    assert_eq!(
        second.command(Command::ApplyInput(marker)),
        CommandResult::Ok
    );
    while count_lines(&out, "marker") < 1 {
        assert!(Instant::now() < end, "the marker never reached the child");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        count_lines(&out, "exactly-once"),
        1,
        "log: {:?}",
        std::fs::read_to_string(&out)
    );
}
