//! SCREEN.

use super::*;

#[test]
fn get_screen_reflects_all_stamped_output_without_attach() {
    // [SCREEN.GET.2] [SCREEN.GET.3] [SCREEN.JSON.1] [SCREEN.JSON.2] [SCREEN.JSON.4]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(b"\x1b]2;my title\x07hello   \r\nworld");
    h.settle();
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: None,
            cells: false,
        },
    ));
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["pane"], t.local().unwrap());
    assert_eq!(v["lines"].as_array().unwrap().len(), 24);
    assert_eq!(v["lines"][0], "hello");
    assert_eq!(v["lines"][1], "world");
    assert_eq!(v["title"], "my title");
    assert!(v.get("cursor").is_some() && v["scrollback"].as_array().unwrap().is_empty());
    assert!(v.get("cells").is_none());
    let unknown = h.request(
        c,
        Command::GetScreen {
            terminal: TerminalId::Local(50),
            request_scrollback: None,
            cells: false,
        },
    );
    assert_eq!(
        unknown.as_ref().and_then(error_code),
        Some(ErrorCode::TERMINAL_NOT_FOUND)
    );
}

#[test]
fn get_screen_without_title_has_no_title_and_cells_on_request() {
    // [SCREEN.JSON.4] [SCREEN.JSON.5] [SCREEN.JSON.3]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    let mut out = Vec::new();
    for i in 0..30 {
        out.extend_from_slice(format!("line{i}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\x1b[1mB\x1b[0m");
    h.pty(&t).script(&out);
    h.settle();
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: Some(2),
            cells: true,
        },
    ));
    assert!(v.get("title").is_none(), "{v}");
    assert_eq!(v["scrollback"].as_array().unwrap().len(), 2);
    assert_eq!(v["scrollback"][1], "line6");
    let cells = v["cells"].as_array().unwrap();
    assert!(
        cells
            .iter()
            .any(|c| c["text"] == "B" && c["style"]["bold"] == true),
        "{cells:?}"
    );
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t,
            request_scrollback: Some(0),
            cells: false,
        },
    ));
    assert_eq!(v["scrollback"].as_array().unwrap().len(), 7);
}

#[test]
fn get_terminal_state_has_the_extra_keys() {
    // [SCREEN.STATE.1] [SCREEN.STATE.2] [SCREEN.STATE.3] [SCREEN.STATE.4]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    let v = expect_json(h.request(
        c,
        Command::GetTerminalState {
            terminal: t.clone(),
            include_scrollback: false,
            max_scrollback_lines: 0,
        },
    ));
    for key in [
        "schema_version",
        "pane",
        "cols",
        "rows",
        "cursor",
        "lines",
        "scrollback",
        "lifecycle",
        "exit_status",
        "input_holder",
        "lease_expires_ms",
        "pid",
        "canonical",
        "modes",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["lifecycle"], "running");
    assert!(
        v["exit_status"].is_null()
            && v["input_holder"].is_null()
            && v["lease_expires_ms"].is_null()
    );
    assert_eq!(v["pid"].as_u64(), Some(u64::from(h.pty(&t).pid())));
    h.request(
        c,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: phux_proto::command::AcquireMode::Cooperative,
            ttl_ms: 2500,
        },
    );
    h.advance(std::time::Duration::from_secs(1));
    let v = expect_json(h.request(
        c,
        Command::GetTerminalState {
            terminal: t,
            include_scrollback: false,
            max_scrollback_lines: 0,
        },
    ));
    assert_eq!(v["lease_expires_ms"].as_u64(), Some(1500));
    assert!(v["input_holder"].is_number());
}

#[test]
fn get_state_lists_every_live_terminal() {
    // [SCREEN.SERVER.1]
    let mut h = Harness::new();
    let c = h.client();
    let a = h.spawn(c);
    let b = h.spawn(c);
    h.pty(&a).script(b"\x1b]0;A\x07");
    h.settle();
    let r = h.request(
        c,
        Command::GetState {
            scope: StateScope::Server,
        },
    );
    let Some(CommandResult::OkWith(CommandValue::State(s))) = r else {
        panic!("{r:?}")
    };
    assert!(s.sessions.is_empty() && s.windows.is_empty());
    assert_eq!(s.terminals.len(), 2);
    assert_eq!(s.terminals[0].terminal, a);
    assert_eq!(s.terminals[0].title.as_deref(), Some("A"));
    assert_eq!(s.terminals[1].terminal, b);
    assert_eq!(s.terminals[1].title, None);
    assert_eq!(
        (s.focused_session, s.focused_window, s.focused_pane.clone()),
        (0, 0, TerminalId::Local(0))
    );
}

/// A 1024x512 terminal with every viewport cell styled and `history` full rows of history.
fn huge_screen(h: &mut Harness, c: phux_core::server::ConnId, history: usize) -> TerminalId {
    let mut spawn = spawn_frame(0);
    spawn.initial_size = Some(TerminalSize {
        cols: 1024,
        rows: 512,
    });
    let t = h.spawn_with(c, spawn);
    let row = vec![b'h'; 1024];
    for _ in 0..history {
        h.pty(&t).script(&row);
    }
    h.settle();
    let mut styled = b"\x1b[H\x1b[7;38;2;1;2;3m".to_vec();
    styled.extend(std::iter::repeat_n(b'x', 1024 * 512 - 1));
    h.pty(&t).script(&styled);
    h.settle();
    t
}

#[test]
fn replies_from_a_huge_screen_stay_within_the_limits() {
    // [SCREEN.LIMIT.1] [SCREEN.LIMIT.2] [SCREEN.LIMIT.3] [FRAME.LENGTH.1]
    let mut h = Harness::with_config({
        let mut config = phux_core::server::ServerConfig::new(vec![7; 16]);
        config.scrollback_lines = 3000;
        config
    });
    let c = h.client();
    let t = huge_screen(&mut h, c, 3000);
    let cells = h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: Some(0),
            cells: true,
        },
    );
    assert_eq!(
        cells.as_ref().and_then(error_code),
        Some(ErrorCode::RESOURCE_EXHAUSTED),
        "{cells:?}"
    );
    // Every history row is 1024 bytes of JSON and more: a 1 MiB page holds fewer than 1024
    // of the 3000 asked for, the newest ones.
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: Some(0),
            cells: false,
        },
    ));
    let rows = v["scrollback"].as_array().unwrap();
    assert!(!rows.is_empty() && rows.len() < 1024, "{}", rows.len());
    assert!(
        rows.iter()
            .all(|r| r.as_str() == Some(&"h".repeat(1024)[..]))
    );
    assert_eq!(v["scrollback_truncated"], true);
    assert_eq!(v["lines"].as_array().unwrap().len(), 512);
    let state = expect_json(h.request(
        c,
        Command::GetTerminalState {
            terminal: t.clone(),
            include_scrollback: true,
            max_scrollback_lines: 0,
        },
    ));
    assert_eq!(state["scrollback"], v["scrollback"]);
    assert_eq!(state["scrollback_truncated"], true);
    // A request for few rows is answered whole.
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t,
            request_scrollback: Some(5),
            cells: false,
        },
    ));
    assert_eq!(v["scrollback"].as_array().unwrap().len(), 5);
    assert!(v.get("scrollback_truncated").is_none());
    // Every frame the client got decoded: none over the frame cap.
    assert!(h.conn(c).decode_errors().is_empty());
}

#[test]
fn the_history_page_a_client_negotiates_bounds_its_replies() {
    // [SCREEN.LIMIT.1]
    let mut h = Harness::new();
    let c = h.connect();
    let Frame::Hello(mut hello) = phux_core::sim::hello_frame() else {
        unreachable!()
    };
    hello.capabilities.max_history_page_bytes = phux_proto::frame::ByteLimit::new(100).unwrap();
    h.send(c, &Frame::Hello(hello));
    h.settle();
    h.recv(c);
    let t = h.spawn(c);
    let mut out = Vec::new();
    for i in 0..100 {
        out.extend_from_slice(format!("line{i:03}\r\n").as_bytes());
    }
    h.pty(&t).script(&out);
    h.settle();
    let v = expect_json(h.request(
        c,
        Command::GetScreen {
            terminal: t,
            request_scrollback: Some(0),
            cells: false,
        },
    ));
    // `"lineNNN",` is 10 bytes: ten rows fit in 100, the newest.
    let rows = v["scrollback"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    assert_eq!(rows[9], "line076");
    assert_eq!(v["scrollback_truncated"], true);
}
