//! A frozen child whose PTY input queue is full: the pending APPLY_INPUT resolves as
//! INPUT_DELIVERY_UNKNOWN within the 5 s bound (plus scheduling slack) while another
//! terminal's input still flows.

use std::time::{Duration, Instant};

use phux_proto::command::{ApplyInput, Command, CommandResult, Signal};
use phux_proto::frame::CommandFrame;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

use crate::support::client::Server;

fn paste(id: u128, terminal: &TerminalId, data: Vec<u8>) -> Command {
    Command::ApplyInput(ApplyInput {
        operation_id: OperationId::from_u128(id).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data,
        })],
    })
}

#[test]
fn a_stalled_pty_resolves_unknown_within_the_bound_and_other_terminals_flow() {
    // [INPUT.LANE.2] [INPUT.ORDER.2] [SERVER.PTY.1]
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let stalled = c.spawn(&["cat"]);
    let healthy = c.spawn(&["cat"]);
    assert_eq!(
        c.command(Command::SignalTerminal {
            terminal: stalled.clone(),
            signal: Signal::Freeze
        }),
        CommandResult::Ok
    );

    // 60 KiB of short lines: far more than a stopped reader's input queue takes.
    let line = [b'x'; 99]
        .iter()
        .copied()
        .chain(*b"\n")
        .collect::<Vec<u8>>();
    let big: Vec<u8> = line
        .iter()
        .copied()
        .cycle()
        .take(600 * line.len())
        .collect();
    let started = Instant::now();
    c.send(&Frame::Command(CommandFrame {
        request_id: 900,
        command: paste(1, &stalled, big),
    }));

    // Meanwhile the other terminal takes acknowledged input promptly: every answer comes
    // before the stalled operation's, which waits out the 5 s lane bound. (An order, not a
    // stopwatch: a loaded machine slows both, a healthy job queued behind the stalled one
    // would come after it.)
    for i in 0..5u128 {
        assert_eq!(
            c.command(paste(100 + i, &healthy, b"ping\n".to_vec())),
            CommandResult::Ok
        );
        assert!(
            !c.seen
                .iter()
                .any(|f| matches!(f, Frame::CommandResult(r) if r.request_id == 900)),
            "healthy operation {i} was answered only after the stalled one"
        );
    }

    let result = c.wait_for("the stalled operation's result", |f| match f {
        Frame::CommandResult(r) if r.request_id == 900 => Some(r.result.clone()),
        _ => None,
    });
    let waited = started.elapsed();
    let CommandResult::Error { code, .. } = result else {
        panic!("stalled write answered {result:?}")
    };
    assert_eq!(code, ErrorCode::INPUT_DELIVERY_UNKNOWN);
    assert!(
        waited >= Duration::from_millis(4500),
        "resolved before the bound: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(20),
        "resolved far after the bound: {waited:?}"
    );
    println!("stalled APPLY_INPUT resolved INPUT_DELIVERY_UNKNOWN after {waited:?}");

    // The frozen child resumes; the server stays healthy.
    assert_eq!(
        c.command(Command::SignalTerminal {
            terminal: stalled,
            signal: Signal::Resume
        }),
        CommandResult::Ok
    );
    assert_eq!(
        c.command(paste(200, &healthy, b"after\n".to_vec())),
        CommandResult::Ok
    );
}
