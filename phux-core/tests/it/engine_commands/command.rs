//! COMMAND.

use super::*;

#[test]
fn every_decoded_command_gets_one_result_with_its_request_id() {
    // [COMMAND.ENVELOPE.2] [COMMAND.CORRELATE.1]: the same request id twice, echoed twice.
    let mut h = Harness::new();
    let c = h.client();
    h.send(
        c,
        &command_frame(
            7,
            Command::GetState {
                scope: StateScope::Server,
            },
        ),
    );
    h.send(
        c,
        &command_frame(
            7,
            Command::DetachTerminal {
                terminal: TerminalId::Local(1),
            },
        ),
    );
    let got = h.settle_recv(c);
    let rids: Vec<u32> = got
        .iter()
        .filter_map(|f| match f {
            Frame::CommandResult(r) => Some(r.request_id),
            _ => None,
        })
        .collect();
    assert_eq!(rids, vec![7, 7]);
}

#[test]
fn unsupported_allocated_command_is_invalid_command_and_connection_stays() {
    // [COMMAND.UNSUPPORTED.1]
    let mut h = Harness::new();
    let c = h.client();
    let r = h.request(c, Command::DetachClients { session: None });
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::INVALID_COMMAND)
    );
    assert!(h.conn(c).is_open());
}

#[test]
fn satellite_ids_are_refused_by_every_command() {
    // [COMMAND.SATELLITE.1] [TERMINAL.KILLALL.3]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    for command in [
        Command::AttachTerminal { terminal: sat() },
        Command::KillTerminal { terminal: sat() },
        Command::GetScreen {
            terminal: sat(),
            request_scrollback: None,
            cells: false,
        },
        Command::GetTerminalState {
            terminal: sat(),
            include_scrollback: false,
            max_scrollback_lines: 0,
        },
        Command::KillTerminals {
            terminals: vec![t.clone(), sat()],
        },
        Command::SignalTerminal {
            terminal: sat(),
            signal: phux_proto::command::Signal::Interrupt,
        },
    ] {
        let r = h.request(c, command.clone());
        assert_eq!(
            r.as_ref().and_then(error_code),
            Some(ErrorCode::UNSUPPORTED_SATELLITE_ROUTE),
            "{command:?}"
        );
    }
    assert!(
        h.pty(&t).exit_kind().is_none(),
        "KILL_TERMINALS with a satellite killed nothing"
    );
}

#[test]
fn ping_after_a_stalled_apply_input_is_answered_first() {
    // [COMMAND.ORDER.2]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).stall();
    h.pty(&t).set_kernel_buffer(1);
    h.send(
        c,
        &command_frame(
            1,
            phux_core::sim::apply_input(1, &t, vec![phux_core::sim::paste(b"abc")]),
        ),
    );
    h.send(c, &Frame::Ping(phux_proto::frame::Ping { nonce: 9 }));
    let got = h.settle_recv(c);
    assert!(matches!(&got[..], [Frame::Pong(_)]), "{got:?}");
}
