//! Out of descriptors: a peer queued while `accept` fails with EMFILE is accepted once a
//! descriptor is freed, without another connect to wake the listener ([SERVER.LIMIT.4]); and
//! the server raises its soft descriptor limit to the hard one at start.

use std::time::{Duration, Instant};

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId};

use crate::support::client;

use crate::support::faults::{
    DEADLINE, FrameStream, Nofile, ServerProc, hello_frame, private_tempdir,
};

/// Low enough to run out after a few connections, high enough for the server to start.
const NOFILE: u64 = 32;

/// How long an honest HELLO may take before the test calls its connection queued. A served
/// one takes milliseconds; the queued one never comes before a descriptor is freed.
const QUEUED_AFTER: Duration = Duration::from_secs(2);

#[test]
fn a_peer_queued_at_emfile_is_accepted_once_a_descriptor_is_freed() {
    // [SERVER.LIMIT.4]
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let limits = Nofile {
        soft: NOFILE,
        hard: NOFILE,
    };
    let _server = ServerProc::start_with(&socket, Some(limits), &[]);

    let mut held = Vec::new();
    let mut queued = None;
    for _ in 0..NOFILE {
        let mut s = FrameStream::connect(&socket);
        s.send(&hello_frame());
        match s.recv(Instant::now() + QUEUED_AFTER) {
            Some(Frame::HelloOk(_)) => held.push(s),
            None => {
                queued = Some(s);
                break;
            }
            Some(other) => panic!("expected HELLO_OK, got {other:?}"),
        }
    }
    let mut queued = queued.expect("the server never ran out of descriptors");
    assert!(
        held.len() >= 3,
        "only {} connections were served",
        held.len()
    );

    // Hang up three: the server closes their sockets. No connect() follows.
    held.truncate(held.len() - 3);
    let got = queued.recv(Instant::now() + DEADLINE);
    assert!(
        matches!(got, Some(Frame::HelloOk(_))),
        "the queued peer was not served: {got:?}"
    );
    // And the next ones are served as before: with every held peer gone, new peers (as
    // many as were held, up to 8) each get HELLO_OK while the queued one stays connected.
    let again = held.len().min(8);
    drop(held);
    let mut served = Vec::new();
    for i in 0..again {
        let mut s = FrameStream::connect(&socket);
        s.send(&hello_frame());
        let got = s.recv(Instant::now() + DEADLINE);
        assert!(
            matches!(got, Some(Frame::HelloOk(_))),
            "peer {i} after the held ones left was not served: {got:?}"
        );
        served.push(s);
    }
    drop(queued);
}

#[test]
fn the_soft_descriptor_limit_is_raised_to_the_hard_one_and_children_get_the_original() {
    // [SERVER.LIMIT.4]: started at soft 64, hard 512.
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let limits = Nofile {
        soft: 64,
        hard: 512,
    };
    let server = ServerProc::start_with(&socket, Some(limits), &[]);
    let text = std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).expect("limits");
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files");
    let numbers: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
    assert_eq!(numbers, ["512", "512"], "{line}");

    // A child exits with its soft limit as its status: the one the server was started with.
    let mut c = client::Client::unix(&socket);
    c.hello();
    let terminal = c.spawn(&["/bin/sh", "-c", "read x; exit $(ulimit -Sn)"]);
    let attach = Command::AttachTerminal {
        terminal: terminal.clone(),
    };
    assert_eq!(c.command(attach), CommandResult::Ok);
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(1).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"go\r".to_vec(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
    let status = c.wait_for("TERMINAL_CLOSED", |f| match f {
        Frame::TerminalClosed(closed) if closed.terminal == terminal => Some(closed.exit_status),
        _ => None,
    });
    assert_eq!(status, Some(64));
}
