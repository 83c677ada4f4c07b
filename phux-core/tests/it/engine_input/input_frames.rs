//! INPUT_* and ROUTE_INPUT.

use super::*;

#[test]
fn input_frames_need_an_attachment_and_get_no_reply() {
    // [INPUT.FRAME.1] [INPUT.FRAME.2] [INPUT.FRAME.3]
    let (mut h, c, t) = setup();
    h.send(c, &input_paste(&t, b"unattached", PasteTrust::Trusted));
    h.send(
        c,
        &input_paste(&TerminalId::Local(99), b"nowhere", PasteTrust::Trusted),
    );
    assert!(h.settle_recv(c).is_empty());
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.recv(c);
    h.send(c, &input_paste(&t, b"attached", PasteTrust::Trusted));
    h.send(c, &input_paste(&t, b"bad\n", PasteTrust::Untrusted));
    h.send(
        c,
        &Frame::InputFocus(InputFocus {
            terminal: t.clone(),
            event: FocusEvent::Gained,
        }),
    );
    assert!(h.settle_recv(c).is_empty());
    assert_eq!(h.pty(&t).read_log(), b"attached");
}

#[test]
fn input_frames_dropped_when_the_queue_is_full() {
    // [INPUT.FRAME.3]
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_jobs_per_terminal = 1;
    let (mut h, c, t) = setup_with(config);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    occupy_queue(&mut h, c, &t);
    h.send(c, &input_paste(&t, b"dropped", PasteTrust::Trusted));
    assert!(
        h.settle_recv(c)
            .iter()
            .all(|f| !matches!(f, Frame::CommandResult(_) | Frame::Error(_)))
    );
    assert_eq!(h.pty(&t).read_count(b"dropped"), 0);
}

#[test]
fn route_input_results() {
    // [INPUT.ROUTE.1] [INPUT.ROUTE.2] [INPUT.ROUTE.3] [INPUT.PASTE.SAFE.4]
    let (mut h, c, t) = setup();
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: TerminalId::Local(99),
            event: paste(b"a"),
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::TERMINAL_NOT_FOUND));
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"ok")
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: untrusted_paste(b"x\ny")
            }
        ),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: InputEvent::Focus(FocusEvent::Lost)
            }
        ),
        Some(CommandResult::Ok)
    );
    let holder = h.client();
    h.request(
        holder,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0,
        },
    );
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"no"),
        },
    );
    assert_eq!(code(&r), Some(ErrorCode::INPUT_LEASE_HELD));
    assert_eq!(h.pty(&t).read_log(), b"ok");
}

#[test]
fn jobs_for_one_terminal_keep_receive_order_across_clients() {
    // [COMMAND.ORDER.3] [INPUT.ORDER.1]
    let (mut h, a, t) = setup();
    let b = h.client();
    h.request(
        a,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.pty(&t).set_kernel_buffer(3);
    h.pty(&t).stall();
    h.send(a, &input_paste(&t, b"[1]", PasteTrust::Trusted));
    h.send(
        b,
        &command_frame(
            50,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"[2]"),
            },
        ),
    );
    h.send(
        a,
        &command_frame(51, apply_input(1, &t, vec![paste(b"[3"), paste(b"]")])),
    );
    h.send(
        b,
        &command_frame(
            52,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"[4]"),
            },
        ),
    );
    h.settle();
    h.pty(&t).unstall();
    h.settle();
    assert_eq!(h.pty(&t).read_log(), b"[1][2][3][4]");
}

#[test]
fn a_stalled_terminal_delays_no_other() {
    // [INPUT.ORDER.2] [QUEUE.ISOLATION.1]
    let (mut h, c, t) = setup();
    let t2 = h.spawn(c);
    h.pty(&t).set_kernel_buffer(1);
    h.pty(&t).stall();
    assert_eq!(apply(&mut h, c, 1, &t, vec![paste(b"stuck")]), None);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t2.clone(),
        },
    );
    h.recv(c);
    assert_eq!(
        apply(&mut h, c, 2, &t2, vec![paste(b"free")]),
        Some(CommandResult::Ok)
    );
    h.pty(&t2).script(b"out");
    let got = h.settle_recv(c);
    assert!(
        got.iter()
            .any(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"out"))
    );
}

#[test]
fn mouse_cell_size_comes_from_the_last_viewport_resize() {
    // [INPUT.ATOM.1] [INPUT.ENCODE.MOUSE.6]: 1 x 1 pixel cells before any VIEWPORT_RESIZE.
    let (mut h, c, t) = setup();
    h.pty(&t).script(b"\x1b[?1000h\x1b[?1006h");
    h.settle();
    let click = InputEvent::Mouse(MouseEvent {
        action: MouseAction::Press,
        button: MouseButton::Left,
        mods: ModSet::NONE,
        x: 25.0,
        y: 15.0,
    });
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![click.clone()]),
        Some(CommandResult::Ok)
    );
    h.send(
        c,
        &Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols: 80,
                rows: 24,
                pixel_w: Some(800),
                pixel_h: Some(480),
            },
        }),
    );
    assert_eq!(
        apply(&mut h, c, 2, &t, vec![click]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.pty(&t).read_log(),
        b"\x1b[<0;26;16M\x1b[<0;3;1M".as_slice()
    );
}
