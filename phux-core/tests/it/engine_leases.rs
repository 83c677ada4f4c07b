//! Engine tests for input leases and signals (LEASE.*, SIGNAL.*).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use std::time::Duration;

use phux_core::server::{ConnId, ServerAction};
use phux_core::sim::{ChildMode, Harness, apply_input, error_code, paste};
use phux_proto::command::{AcquireMode, Command, CommandResult, Signal};
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle, TerminalControl};
use phux_proto::frame::{InputPaste, SubscribeEvents, TerminalResize, TerminalSize};
use phux_proto::input::{PasteEvent, PasteTrust};
use phux_proto::{ClientId, ErrorCode, Frame, TerminalId};

fn setup() -> (Harness, ConnId, ConnId, TerminalId) {
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    let a = h.client();
    let b = h.client();
    let t = h.spawn(a);
    for c in [a, b] {
        h.send(
            c,
            &Frame::SubscribeEvents(SubscribeEvents { terminal: None }),
        );
    }
    h.settle();
    h.recv(a);
    h.recv(b);
    (h, a, b, t)
}

fn acquire(
    h: &mut Harness,
    c: ConnId,
    t: &TerminalId,
    mode: AcquireMode,
    ttl_ms: u32,
) -> Option<CommandResult> {
    h.request(
        c,
        Command::AcquireInput {
            terminal: t.clone(),
            mode,
            ttl_ms,
        },
    )
}

fn controls(frames: &[Frame]) -> Vec<TerminalControl> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(e) => match &e.event {
                AgentEvent::TerminalControl(tc) => Some(*tc),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The ClientId the engine gave a connection, learned from its own ACQUIRED event.
fn client_id(h: &mut Harness, c: ConnId, t: &TerminalId) -> ClientId {
    assert_eq!(
        acquire(h, c, t, AcquireMode::Seize, 0),
        Some(CommandResult::Ok)
    );
    let cs = controls(&h.recv(c));
    let id = cs.last().and_then(|tc| tc.actor).unwrap();
    h.request(
        c,
        Command::ReleaseInput {
            terminal: t.clone(),
        },
    );
    for conn in h.conns.keys().copied().collect::<Vec<_>>() {
        h.recv(conn);
    }
    id
}

#[test]
fn acquire_and_release_unknown_terminal() {
    // [LEASE.ACQUIRE.1] [LEASE.ACQUIRE.5]: the caller is neither attached nor subscribed.
    let mut h = Harness::new();
    let c = h.client();
    for command in [
        Command::AcquireInput {
            terminal: TerminalId::Local(9),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        },
        Command::ReleaseInput {
            terminal: TerminalId::Local(9),
        },
    ] {
        assert_eq!(
            h.request(c, command).as_ref().and_then(error_code),
            Some(ErrorCode::TERMINAL_NOT_FOUND)
        );
    }
    let t = h.spawn(c);
    assert_eq!(
        h.request(
            c,
            Command::AcquireInput {
                terminal: t.clone(),
                mode: AcquireMode::Cooperative,
                ttl_ms: 0
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(c, Command::ReleaseInput { terminal: t }),
        Some(CommandResult::Ok)
    );
}

#[test]
fn cooperative_acquire_grants_refuses_and_broadcasts() {
    // [LEASE.ACQUIRE.2] [LEASE.ACQUIRE.3] [LEASE.ACQUIRE.4] [EVENT.CONTROL.2]
    let (mut h, a, b, t) = setup();
    assert_eq!(
        acquire(&mut h, a, &t, AcquireMode::Cooperative, 0),
        Some(CommandResult::Ok)
    );
    let ca = controls(&h.recv(a));
    let cb = controls(&h.recv(b));
    assert_eq!(ca, cb);
    assert_eq!(ca.len(), 1);
    assert_eq!(ca[0].action, ControlAction::Acquired);
    assert_eq!(ca[0].input_holder, ca[0].actor);
    assert_eq!(ca[0].exit_status, None);
    // Re-acquire by the holder: granted, ACQUIRED again.
    assert_eq!(
        acquire(&mut h, a, &t, AcquireMode::Cooperative, 0),
        Some(CommandResult::Ok)
    );
    assert_eq!(controls(&h.recv(b))[0].action, ControlAction::Acquired);
    h.recv(a);
    // Another client's cooperative acquire: 204, nothing broadcast.
    let r = acquire(&mut h, b, &t, AcquireMode::Cooperative, 0);
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    assert!(controls(&h.recv(a)).is_empty());
    assert!(controls(&h.recv(b)).is_empty());
}

#[test]
fn seize_takes_the_lease_and_says_seized() {
    // [LEASE.SEIZE.1] [LEASE.SEIZE.2]
    let (mut h, a, b, t) = setup();
    assert_eq!(
        acquire(&mut h, b, &t, AcquireMode::Seize, 0),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        controls(&h.recv(a))[0].action,
        ControlAction::Acquired,
        "seize of an open lease"
    );
    h.recv(b);
    assert_eq!(
        acquire(&mut h, a, &t, AcquireMode::Seize, 0),
        Some(CommandResult::Ok)
    );
    let cb = controls(&h.recv(b));
    assert_eq!(cb[0].action, ControlAction::Seized);
    assert_eq!(cb[0].input_holder, cb[0].actor);
    h.recv(a);
    assert_eq!(
        acquire(&mut h, a, &t, AcquireMode::Seize, 0),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        controls(&h.recv(b))[0].action,
        ControlAction::Acquired,
        "seize by the holder"
    );
}

#[test]
fn release_by_holder_and_by_non_holder() {
    // [LEASE.RELEASE.1] [LEASE.RELEASE.2]
    let (mut h, a, b, t) = setup();
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    h.recv(a);
    h.recv(b);
    assert_eq!(
        h.request(
            b,
            Command::ReleaseInput {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    assert!(controls(&h.recv(a)).is_empty());
    assert_eq!(
        h.request(
            a,
            Command::ReleaseInput {
                terminal: t.clone()
            }
        ),
        Some(CommandResult::Ok)
    );
    let cb = controls(&h.recv(b));
    assert_eq!(cb.len(), 1);
    assert_eq!(
        (cb[0].action, cb[0].input_holder),
        (ControlAction::Released, None)
    );
    assert!(cb[0].actor.is_some());
    assert_eq!(
        acquire(&mut h, b, &t, AcquireMode::Cooperative, 0),
        Some(CommandResult::Ok)
    );
}

#[test]
fn disconnect_releases_with_the_departed_client_as_actor() {
    // [LEASE.DISCONNECT.1] [DETACH.CLOSE.1]
    let (mut h, a, b, t) = setup();
    let a_id = client_id(&mut h, a, &t);
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    h.recv(b);
    h.send(a, &Frame::Detach);
    h.settle();
    let cb = controls(&h.recv(b));
    assert_eq!(cb.len(), 1, "{cb:?}");
    assert_eq!(
        (cb[0].action, cb[0].input_holder, cb[0].actor),
        (ControlAction::Released, None, Some(a_id))
    );
    assert_eq!(
        acquire(&mut h, b, &t, AcquireMode::Cooperative, 0),
        Some(CommandResult::Ok)
    );
}

#[test]
fn ttl_expires_on_the_virtual_clock() {
    // [LEASE.TTL.1] [LEASE.TTL.4] [LEASE.TTL.5]
    let (mut h, a, b, t) = setup();
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 1000);
    h.recv(b);
    h.advance(Duration::from_millis(999));
    let r = h.request(
        b,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"x"),
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD),
        "held before expiry"
    );
    assert!(controls(&h.recv(b)).is_empty());
    h.advance(Duration::from_millis(1));
    let cb = controls(&h.recv(b));
    assert_eq!(cb.len(), 1, "{cb:?}");
    assert_eq!(
        (cb[0].action, cb[0].input_holder, cb[0].actor),
        (ControlAction::Released, None, None)
    );
    assert_eq!(
        h.request(
            b,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"y")
            }
        ),
        Some(CommandResult::Ok)
    );
}

#[test]
fn ttl_expiry_applies_to_a_frame_at_the_instant_without_a_timer() {
    // [LEASE.TTL.5]: a frame processed exactly at the expiry sees the lease open.
    let (mut h, a, b, t) = setup();
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 1000);
    h.now += Duration::from_secs(1);
    let r = h.request(
        b,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"y"),
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
}

#[test]
fn ttl_zero_never_expires_and_each_acquire_replaces_the_expiry() {
    // [LEASE.TTL.2] [LEASE.TTL.3]
    let (mut h, a, b, t) = setup();
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    h.advance(Duration::from_hours(1));
    assert_eq!(
        acquire(&mut h, b, &t, AcquireMode::Cooperative, 0)
            .as_ref()
            .and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 500);
    h.advance(Duration::from_millis(400));
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 500);
    h.advance(Duration::from_millis(400));
    assert_eq!(
        acquire(&mut h, b, &t, AcquireMode::Cooperative, 0)
            .as_ref()
            .and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    acquire(&mut h, b, &t, AcquireMode::Seize, 100);
    h.advance(Duration::from_millis(100));
    assert_eq!(
        acquire(&mut h, a, &t, AcquireMode::Cooperative, 0),
        Some(CommandResult::Ok),
        "the seizer's ttl applied"
    );
}

#[test]
fn lease_gates_every_input_path_but_not_the_holder() {
    // [LEASE.GATE.1] [LEASE.GATE.2] [LEASE.GATE.3] [LEASE.GATE.4]
    let (mut h, a, b, t) = setup();
    for c in [a, b] {
        h.request(
            c,
            Command::AttachTerminal {
                terminal: t.clone(),
            },
        );
    }
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    let p = |data: &[u8]| {
        Frame::InputPaste(InputPaste {
            terminal: t.clone(),
            event: PasteEvent {
                trust: PasteTrust::Trusted,
                data: data.to_vec(),
            },
        })
    };
    h.send(b, &p(b"[b-frame]"));
    let r = h.request(
        b,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"[b-route]"),
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    let r = h.request(b, apply_input(1, &t, vec![paste(b"[b-apply]")]));
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
    h.send(a, &p(b"[a-frame]"));
    assert_eq!(
        h.request(
            a,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"[a-route]")
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(a, apply_input(2, &t, vec![paste(b"[a-apply]")])),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"[a-frame][a-route][a-apply]");
}

#[test]
fn lease_change_does_not_recall_a_handed_off_job() {
    // [LEASE.GATE.5]
    let (mut h, a, b, t) = setup();
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    let rid = h.next_request_id();
    h.send(
        a,
        &phux_core::sim::command_frame(rid, apply_input(1, &t, vec![paste(b"queued")])),
    );
    h.settle();
    acquire(&mut h, b, &t, AcquireMode::Seize, 0);
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.take_result(a, rid), Some(CommandResult::Ok));
    assert_eq!(h.pty(&t).read_log(), b"queued");
}

#[test]
fn lease_does_not_gate_signals_resize_kill_or_reads() {
    // [LEASE.GATE.6]
    let (mut h, a, b, t) = setup();
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    assert_eq!(
        h.request(
            b,
            Command::SignalTerminal {
                terminal: t.clone(),
                signal: Signal::Interrupt
            }
        ),
        Some(CommandResult::Ok)
    );
    h.send(
        b,
        &Frame::TerminalResize(TerminalResize {
            terminal: t.clone(),
            size: TerminalSize { cols: 90, rows: 20 },
        }),
    );
    h.settle();
    assert!(h.actions.iter().any(|x| matches!(
        x,
        ServerAction::Resize {
            cols: 90,
            rows: 20,
            ..
        }
    )));
    assert!(matches!(
        h.request(
            b,
            Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: None,
                cells: false
            }
        ),
        Some(CommandResult::OkWith(_))
    ));
    assert_eq!(
        h.request(b, Command::KillTerminal { terminal: t }),
        Some(CommandResult::Ok)
    );
}

#[test]
fn exit_ends_the_lease_without_released() {
    // [LEASE.EXIT.1] [SIGNAL.EVENT.2] [SIGNAL.LIFECYCLE.2]
    let (mut h, a, b, t) = setup();
    h.request(
        b,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    acquire(&mut h, a, &t, AcquireMode::Cooperative, 0);
    h.recv(b);
    h.pty(&t).exit(7);
    let got = h.settle_recv(b);
    let cb = controls(&got);
    assert_eq!(cb.len(), 1, "{cb:?}");
    assert_eq!(
        cb[0],
        TerminalControl {
            lifecycle: Lifecycle::Exited,
            exit_status: Some(7),
            input_holder: None,
            action: ControlAction::Exited,
            actor: None
        }
    );
    let exited = got
        .iter()
        .position(
            |f| matches!(f, Frame::Event(e) if matches!(e.event, AgentEvent::TerminalControl(_))),
        )
        .unwrap();
    let closed = got
        .iter()
        .position(|f| matches!(f, Frame::TerminalClosed(_)))
        .unwrap();
    assert!(exited < closed, "EXITED before TERMINAL_CLOSED: {got:?}");
}

// ---- SIGNAL -------------------------------------------------------------------------------------

#[test]
fn every_signal_maps_broadcasts_and_keeps_the_terminal() {
    // [SIGNAL.MAP.1] [SIGNAL.GROUP.1] [SIGNAL.REPLY.1] [SIGNAL.EVENT.1] [SIGNAL.LIFECYCLE.1]
    // [SIGNAL.ADDRESS.1]: the child ignores INTERRUPT and TERMINATE here.
    let (mut h, a, b, t) = setup();
    h.pty(&t).set_fatal_signals(&[]);
    acquire(&mut h, b, &t, AcquireMode::Cooperative, 0);
    h.recv(a);
    h.recv(b);
    let cases = [
        (
            Signal::Interrupt,
            ControlAction::Interrupted,
            Lifecycle::Running,
        ),
        (Signal::Freeze, ControlAction::Frozen, Lifecycle::Frozen),
        (
            Signal::Interrupt,
            ControlAction::Interrupted,
            Lifecycle::Frozen,
        ),
        (Signal::Resume, ControlAction::Resumed, Lifecycle::Running),
        (
            Signal::Terminate,
            ControlAction::Terminated,
            Lifecycle::Running,
        ),
        (Signal::Resume, ControlAction::Resumed, Lifecycle::Running),
    ];
    for (signal, action, lifecycle) in cases {
        assert_eq!(
            h.request(
                a,
                Command::SignalTerminal {
                    terminal: t.clone(),
                    signal
                }
            ),
            Some(CommandResult::Ok)
        );
        let cb = controls(&h.recv(b));
        assert_eq!(cb.len(), 1, "{signal:?}: {cb:?}");
        assert_eq!(
            (cb[0].action, cb[0].lifecycle, cb[0].exit_status),
            (action, lifecycle, None),
            "{signal:?}"
        );
        assert!(cb[0].input_holder.is_some(), "the current holder");
        assert!(cb[0].actor.is_some() && cb[0].actor != cb[0].input_holder);
        let r = h.request(
            a,
            Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: None,
                cells: false,
            },
        );
        assert!(
            matches!(r, Some(CommandResult::OkWith(_))),
            "still addressable after {signal:?}"
        );
    }
    assert_eq!(
        h.pty(&t).signals(),
        &[
            Signal::Interrupt,
            Signal::Freeze,
            Signal::Interrupt,
            Signal::Resume,
            Signal::Terminate,
            Signal::Resume
        ]
    );
    assert_eq!(
        h.request(
            a,
            Command::SignalTerminal {
                terminal: t.clone(),
                signal: Signal::Kill
            }
        ),
        Some(CommandResult::Ok)
    );
    let got = h.settle_recv(b);
    let cb = controls(&got);
    assert_eq!(
        cb.iter().map(|c| c.action).collect::<Vec<_>>(),
        vec![ControlAction::Killed, ControlAction::Exited],
        "{cb:?}"
    );
    assert_eq!(
        cb[0].lifecycle,
        Lifecycle::Running,
        "unchanged until the child exits"
    );
    let r = h.request(
        a,
        Command::SignalTerminal {
            terminal: t,
            signal: Signal::Interrupt,
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}

#[test]
fn frozen_terminal_reads_nothing_until_resumed() {
    // [SIGNAL.LIFECYCLE.1] [SIGNAL.ADDRESS.1]: input to a frozen terminal is accepted and waits.
    let (mut h, a, _b, t) = setup();
    h.pty(&t).set_kernel_buffer(4);
    h.request(
        a,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: Signal::Freeze,
        },
    );
    let rid = h.next_request_id();
    h.send(
        a,
        &phux_core::sim::command_frame(rid, apply_input(1, &t, vec![paste(b"while frozen")])),
    );
    h.settle();
    assert_eq!(h.take_result(a, rid), None);
    assert!(h.pty(&t).read_log().is_empty());
    h.request(
        a,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: Signal::Resume,
        },
    );
    h.settle();
    assert_eq!(h.take_result(a, rid), Some(CommandResult::Ok));
    assert_eq!(h.pty(&t).read_log(), b"while frozen");
}

#[test]
fn exit_from_frozen_is_exited() {
    // [SIGNAL.LIFECYCLE.2]
    let (mut h, a, b, t) = setup();
    h.request(
        a,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: Signal::Freeze,
        },
    );
    h.recv(b);
    h.request(
        a,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: Signal::Kill,
        },
    );
    let cb = controls(&h.settle_recv(b));
    assert_eq!(
        cb.last().map(|c| (c.lifecycle, c.action)),
        Some((Lifecycle::Exited, ControlAction::Exited))
    );
    assert_eq!(cb[0].lifecycle, Lifecycle::Frozen);
}

#[test]
fn signal_unknown_terminal() {
    // [SIGNAL.REPLY.1]
    let mut h = Harness::new();
    let c = h.client();
    let r = h.request(
        c,
        Command::SignalTerminal {
            terminal: TerminalId::Local(5),
            signal: Signal::Kill,
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}
