//! SUBSCRIBE / EVENT.

use super::*;

#[test]
fn subscribe_events_has_no_reply_and_repeats_are_no_ops() {
    // [SUBSCRIBE.EVENTS.1] [SUBSCRIBE.EVENTS.2] [SUBSCRIBE.EVENTS.5] [EVENT.DELIVERY.1]
    let mut h = Harness::new();
    let c = h.client();
    let t0 = h.spawn(c);
    h.subscribe_all(c);
    h.subscribe_all(c);
    h.send(
        c,
        &Frame::SubscribeEvents(SubscribeEvents {
            terminal: Some(t0.clone()),
        }),
    );
    assert!(h.settle_recv(c).is_empty());
    let t = h.spawn(c);
    h.pty(&t).script(b"\x07");
    h.pty(&t0).script(b"\x07");
    let got = h.settle_recv(c);
    let ev = events(&got);
    assert_eq!(
        ev.iter()
            .filter(|e| **e == (Some(t.clone()), AgentEvent::Bell))
            .count(),
        1,
        "{ev:?}"
    );
    assert_eq!(
        ev.iter()
            .filter(|e| **e == (Some(t0.clone()), AgentEvent::Bell))
            .count(),
        1,
        "{ev:?}"
    );
}

#[test]
fn subscribe_events_for_one_terminal_only_hears_that_terminal() {
    // [SUBSCRIBE.EVENTS.3]
    let mut h = Harness::new();
    let c = h.client();
    let a = h.spawn(c);
    let b = h.spawn(c);
    h.send(
        c,
        &Frame::SubscribeEvents(SubscribeEvents {
            terminal: Some(a.clone()),
        }),
    );
    h.pty(&a).script(b"\x07");
    h.pty(&b).script(b"\x07");
    let ev = events(&h.settle_recv(c));
    assert_eq!(ev, vec![(Some(a), AgentEvent::Bell)]);
}

#[test]
fn subscribe_events_to_a_satellite_is_an_error_frame() {
    // [SUBSCRIBE.EVENTS.4]
    let mut h = Harness::new();
    let c = h.client();
    h.send(
        c,
        &Frame::SubscribeEvents(SubscribeEvents {
            terminal: Some(sat()),
        }),
    );
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id.is_none() && e.code == ErrorCode::UNSUPPORTED_SATELLITE_ROUTE),
        "{got:?}"
    );
    assert!(h.conn(c).is_open());
}

#[test]
fn subscribe_terminal_events_replies_and_filters() {
    // [SUBSCRIBE.TERMINAL.1] [SUBSCRIBE.TERMINAL.2] [SUBSCRIBE.TERMINAL.3]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    let r = h.request(
        c,
        Command::SubscribeTerminalEvents {
            terminal: TerminalId::Local(99),
            event_types: vec![],
        },
    );
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
    let r = h.request(
        c,
        Command::SubscribeTerminalEvents {
            terminal: t.clone(),
            event_types: vec![TerminalEventType(0x77)],
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
    // An unknown type selects nothing, but terminal_control always arrives.
    h.pty(&t).script(b"\x07");
    h.request(
        c,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: phux_proto::command::Signal::Interrupt,
        },
    );
    let ev = events(&h.settle_recv(c));
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(
        matches!(&ev[0].1, AgentEvent::TerminalControl(tc) if tc.action == ControlAction::Interrupted)
    );
}

#[test]
fn title_changed_event() {
    // [EVENT.KIND.2]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.subscribe_all(c);
    h.pty(&t).script(b"\x1b]2;build\x07");
    let ev = events(&h.settle_recv(c));
    assert_eq!(
        ev,
        vec![(
            Some(t.clone()),
            AgentEvent::TitleChanged {
                title: "build".into()
            }
        )]
    );
    // Output that leaves the title alone, or sets it to what it was, announces nothing.
    h.pty(&t).script(b"compiling\r\n\x1b]2;build\x07done\r\n");
    assert_eq!(events(&h.settle_recv(c)), vec![]);
    h.pty(&t).script(b"\x1b]0;test\x07");
    assert_eq!(
        events(&h.settle_recv(c)),
        vec![(
            Some(t),
            AgentEvent::TitleChanged {
                title: "test".into()
            }
        )]
    );
}

#[test]
fn terminal_control_reaches_every_kind_of_subscriber_once_in_order() {
    // [EVENT.CONTROL.1] [EVENT.CONTROL.2] [EVENT.CONTROL.3] [EVENT.DELIVERY.1] [EVENT.DELIVERY.3]
    let mut h = Harness::new();
    let actor = h.client();
    let viewer = h.client();
    let scoped = h.client();
    let server = h.client();
    let filtered = h.client();
    let both = h.client();
    let bystander = h.client();
    let t = h.spawn(actor);
    h.request(
        viewer,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.send(
        scoped,
        &Frame::SubscribeEvents(SubscribeEvents {
            terminal: Some(t.clone()),
        }),
    );
    h.subscribe_all(server);
    h.request(
        filtered,
        Command::SubscribeTerminalEvents {
            terminal: t.clone(),
            event_types: vec![TerminalEventType(1)],
        },
    );
    h.request(
        both,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.subscribe_all(both);
    h.request(
        both,
        Command::SubscribeTerminalEvents {
            terminal: t.clone(),
            event_types: vec![],
        },
    );
    h.request(
        actor,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    for c in [actor, viewer, scoped, server, filtered, both, bystander] {
        h.recv(c);
    }
    h.request(
        actor,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: phux_proto::command::AcquireMode::Cooperative,
            ttl_ms: 0,
        },
    );
    h.request(
        actor,
        Command::SignalTerminal {
            terminal: t.clone(),
            signal: phux_proto::command::Signal::Freeze,
        },
    );
    for c in [actor, viewer, scoped, server, filtered, both] {
        let ev = events(&h.recv(c));
        let controls: Vec<_> = ev
            .iter()
            .filter_map(|(_, e)| match e {
                AgentEvent::TerminalControl(tc) => Some(*tc),
                _ => None,
            })
            .collect();
        assert_eq!(controls.len(), 2, "{c:?}: {ev:?}");
        assert_eq!(controls[0].action, ControlAction::Acquired);
        assert!(controls[0].input_holder.is_some());
        assert_eq!(controls[0].lifecycle, Lifecycle::Running);
        assert_eq!(controls[1].action, ControlAction::Frozen);
        assert_eq!(controls[1].lifecycle, Lifecycle::Frozen);
        assert_eq!(controls[1].input_holder, controls[0].input_holder);
    }
    assert!(events(&h.recv(bystander)).is_empty());
}
