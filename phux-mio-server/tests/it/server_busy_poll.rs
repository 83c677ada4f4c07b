//! `--busy-poll-us`: taken at 0 (off: the loop blocks between requests, as without the option)
//! and at its maximum, where acknowledged input still reaches the program exactly once and in
//! order; refused past its maximum with a message naming the option and its range.

use std::process::{Command as Process, Stdio};

use phux_proto::OperationId;
use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};

use crate::support::client::Server;
use crate::support::common::eventually;

/// Twenty acknowledged batches, sent back to back as a script would, each answered OK, then
/// found in the program's input exactly once and in order.
fn batches_arrive_in_order(busy_poll_us: &str) {
    let server = Server::start_with(&["--busy-poll-us".as_ref(), busy_poll_us.as_ref()]);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("read.log");
    let mut client = server.connect();
    client.hello();
    let script = format!("stty raw -echo; exec cat > {}", out.display());
    let terminal = client.spawn(&["sh", "-c", &script]);
    // The file appears once cat runs, after the terminal is raw.
    assert!(eventually(|| out.exists()), "cat never started");
    let mut expected = String::new();
    for n in 1..=20u128 {
        let data = format!("[{n:02}]");
        let apply = ApplyInput {
            operation_id: OperationId::from_u128(0x5eed_0000 + n).expect("id"),
            terminal: terminal.clone(),
            events: vec![InputEvent::Paste(PasteEvent {
                trust: PasteTrust::Trusted,
                data: data.clone().into_bytes(),
            })],
        };
        assert_eq!(
            client.command(Command::ApplyInput(apply)),
            CommandResult::Ok,
            "batch {n} with --busy-poll-us {busy_poll_us}"
        );
        expected.push_str(&data);
    }
    assert!(
        eventually(|| std::fs::read_to_string(&out).is_ok_and(|t| t == expected)),
        "with --busy-poll-us {busy_poll_us} the program read {:?}, not {expected:?}",
        std::fs::read_to_string(&out)
    );
}

// [SERVER.LOOP.3]
#[test]
fn zero_turns_the_busy_poll_off_and_input_arrives_as_without_it() {
    batches_arrive_in_order("0");
}

// [SERVER.LOOP.3]
#[test]
fn the_longest_busy_poll_changes_nothing_a_client_sees() {
    batches_arrive_in_order("1000");
}

#[test]
fn a_busy_poll_past_a_millisecond_is_refused_with_the_range() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .arg("--socket")
        .arg(dir.path().join("s.sock"))
        .args(["--busy-poll-us", "1001"])
        .stdin(Stdio::null())
        .output()
        .expect("run the server");
    assert_eq!(output.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--busy-poll-us") && stderr.contains("0..=1000"),
        "the refusal names neither the option nor its range: {stderr}"
    );
    assert!(output.stdout.is_empty(), "it listened anyway");
    assert!(!dir.path().join("s.sock").exists(), "it bound the socket");
}
