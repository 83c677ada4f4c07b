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
        cells.iter().any(|c| c["text"] == "B" && c["bold"] == true),
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
