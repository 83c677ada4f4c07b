//! TERMINAL.

use super::*;

#[test]
fn attach_unknown_is_not_found() {
    // [TERMINAL.ATTACH.2]
    let mut h = Harness::new();
    let c = h.client();
    let r = h.request(
        c,
        Command::AttachTerminal {
            terminal: TerminalId::Local(77),
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}

#[test]
fn detach_terminal_is_always_ok_and_stops_output() {
    // [TERMINAL.DETACH.1] [TERMINAL.DETACH.2] [OUTPUT.ATTACH.1]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    assert_eq!(
        h.request(
            c,
            Command::DetachTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(
            c,
            Command::DetachTerminal {
                terminal: TerminalId::Local(99)
            }
        ),
        Some(CommandResult::Ok)
    );
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    assert_eq!(
        h.request(
            c,
            Command::DetachTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    h.recv(c);
    h.pty(&t).script(b"after");
    h.pty(&t).exit(0);
    let got = h.settle_recv(c);
    assert!(
        !got.iter().any(|f| matches!(
            f,
            Frame::TerminalOutput(_) | Frame::TerminalClosed(_) | Frame::BootstrapBegin(_)
        )),
        "{got:?}"
    );
}

#[test]
fn kill_terminal_kills_the_group_then_closes() {
    // [TERMINAL.KILL.1] [TERMINAL.KILL.2] [TERMINAL.KILL.3] [TERMINAL.CLOSED.2] [TERMINAL.CLOSED.4]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.subscribe_all(c);
    h.recv(c);
    assert_eq!(
        h.request(
            c,
            Command::KillTerminal {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    assert!(
        h.actions
            .iter()
            .any(|a| matches!(a, ServerAction::Kill { .. }))
    );
    let got = h.settle_recv(c);
    let closed: Vec<_> = got
        .iter()
        .filter_map(|f| match f {
            Frame::TerminalClosed(tc) => Some(tc.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(closed.len(), 1, "{got:?}");
    assert_eq!(closed[0].exit_status, None, "killed by a signal: no status");
    assert!(events(&got).contains(&(
        Some(t.clone()),
        AgentEvent::PaneClosed { exit_status: None }
    )));
    let r = h.request(
        c,
        Command::KillTerminal {
            terminal: t.clone(),
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    let r = h.request(
        c,
        Command::GetScreen {
            terminal: t,
            request_scrollback: None,
            cells: false,
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}

#[test]
fn kill_terminals_is_all_or_nothing() {
    // [TERMINAL.KILLALL.1] [TERMINAL.KILLALL.2]
    let mut h = Harness::new();
    let c = h.client();
    let a = h.spawn(c);
    let b = h.spawn(c);
    let r = h.request(
        c,
        Command::KillTerminals {
            terminals: vec![a.clone(), TerminalId::Local(999), b.clone()],
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    assert!(h.pty(&a).exit_kind().is_none() && h.pty(&b).exit_kind().is_none());
    let r = h.request(
        c,
        Command::KillTerminals {
            terminals: vec![a.clone(), b.clone(), a.clone()],
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
    let kills = h
        .actions
        .iter()
        .filter(|x| matches!(x, ServerAction::Kill { .. }))
        .count();
    assert_eq!(kills, 2, "each terminal killed once");
    assert!(h.pty(&a).is_gone() && h.pty(&b).is_gone());
}

#[test]
fn resize_sets_the_pty_size_silently() {
    // [TERMINAL.RESIZE.1] [TERMINAL.RESIZE.2]
    let mut h = Harness::new();
    let c = h.client();
    let other = h.client();
    let t = h.spawn(c);
    h.send(
        other,
        &Frame::TerminalResize(TerminalResize {
            terminal: t.clone(),
            size: TerminalSize { cols: 0, rows: 50 },
        }),
    );
    h.send(
        other,
        &Frame::TerminalResize(TerminalResize {
            terminal: TerminalId::Local(99),
            size: TerminalSize { cols: 10, rows: 10 },
        }),
    );
    h.send(
        other,
        &Frame::TerminalResize(TerminalResize {
            terminal: sat(),
            size: TerminalSize { cols: 10, rows: 10 },
        }),
    );
    assert!(h.settle_recv(other).is_empty());
    assert!(
        h.actions.iter().any(|a| matches!(
            a,
            ServerAction::Resize {
                cols: 1,
                rows: 50,
                ..
            }
        )),
        "{:?}",
        h.actions
    );
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t,
            request_scrollback: None,
            cells: false,
        },
    ));
    assert_eq!(
        (v["cols"].as_u64(), v["rows"].as_u64()),
        (Some(1), Some(50))
    );
}

#[test]
fn closed_is_sent_once_after_the_last_output_with_the_exit_status() {
    // [TERMINAL.CLOSED.1] [TERMINAL.CLOSED.2] [TERMINAL.CLOSED.3] [OUTPUT.DRAIN.1]
    let mut h = Harness::new();
    let a = h.client();
    let b = h.client();
    let t = h.spawn(a);
    for c in [a, b] {
        h.request(
            c,
            Command::AttachTerminal {
                terminal: t.clone(),
            },
        );
        h.recv(c);
    }
    h.send(
        b,
        &Frame::SubscribeEvents(SubscribeEvents {
            terminal: Some(t.clone()),
        }),
    );
    h.pty(&t).script(b"last words");
    h.pty(&t).exit(3);
    h.settle();
    for c in [a, b] {
        let got = h.recv(c);
        let out = got
            .iter()
            .position(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"last words"));
        let closed: Vec<usize> = got
            .iter()
            .enumerate()
            .filter(|(_, f)| matches!(f, Frame::TerminalClosed(_)))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(closed.len(), 1, "{got:?}");
        assert!(out.is_some_and(|o| o < closed[0]), "{got:?}");
        assert!(matches!(&got[closed[0]], Frame::TerminalClosed(tc) if tc.exit_status == Some(3)));
        if c == b {
            assert_eq!(
                events(&got)
                    .iter()
                    .filter(|(_, e)| matches!(
                        e,
                        AgentEvent::PaneClosed {
                            exit_status: Some(3)
                        }
                    ))
                    .count(),
                1
            );
        }
    }
}
