//! Engine tests for commands, spawning, terminals, screen reads, subscriptions and events
//! (COMMAND.*, SPAWN.*, TERMINAL.*, SCREEN.*, SUBSCRIBE.*, EVENT.*).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use phux_core::server::ServerAction;
use phux_core::sim::{Harness, command_frame, error_code, events, expect_json};
use phux_proto::command::{Command, CommandResult, CommandValue, StateScope, TerminalEventType};
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle};
use phux_proto::frame::{
    SpawnError, SpawnResult, SpawnTerminal, SubscribeEvents, TerminalResize, TerminalSize,
};
use phux_proto::{ErrorCode, Frame, GroupId, TerminalId};

fn sat() -> TerminalId {
    TerminalId::Satellite {
        host: "far".into(),
        id: 1,
    }
}

fn spawn_frame(rid: u32) -> SpawnTerminal {
    SpawnTerminal::new(rid, GroupId(1))
}

// ---- COMMAND --------------------------------------------------------------------------------

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
    let r = h.request(c, Command::Upgrade);
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

// ---- SPAWN ----------------------------------------------------------------------------------

#[test]
fn spawn_replies_once_with_its_request_id_before_pane_spawned() {
    // [SPAWN.REPLY.1] [SPAWN.ORDER.1] [SPAWN.EVENT.1] [SPAWN.ATTACH.1]
    let mut h = Harness::new();
    let c = h.client();
    let watcher = h.client();
    h.subscribe_all(c);
    h.subscribe_all(watcher);
    h.send(c, &Frame::SpawnTerminal(spawn_frame(33)));
    let got = h.settle_recv(c);
    let Some(Frame::TerminalSpawned(s)) = got.first() else {
        panic!("{got:?}")
    };
    assert_eq!(s.request_id, 33);
    let SpawnResult::Ok(t) = s.result.clone() else {
        panic!("{s:?}")
    };
    assert_eq!(
        events(&got),
        vec![(Some(t.clone()), AgentEvent::PaneSpawned)]
    );
    assert_eq!(
        got.iter()
            .filter(|f| matches!(f, Frame::TerminalSpawned(_)))
            .count(),
        1
    );
    assert_eq!(
        events(&h.recv(watcher)),
        vec![(Some(t.clone()), AgentEvent::PaneSpawned)]
    );
    // No implicit attach: output does not reach the spawner.
    h.pty(&t).script(b"hello");
    let got = h.settle_recv(c);
    assert!(
        !got.iter().any(|f| matches!(f, Frame::TerminalOutput(_))),
        "{got:?}"
    );
}

#[test]
fn spawn_refusals() {
    // [SPAWN.GROUP.1] [SPAWN.SATELLITE.1] [SPAWN.AGENT.1] [SPAWN.FAIL.1]
    let mut h = Harness::new();
    let c = h.client();
    let mut cases = Vec::new();
    cases.push((SpawnTerminal::new(1, GroupId(0)), "group"));
    cases.push((SpawnTerminal::new(2, GroupId(2)), "group"));
    let mut s = spawn_frame(3);
    s.satellite = Some("far".into());
    cases.push((s, "satellite"));
    let mut s = spawn_frame(4);
    s.agent_session = Some(Vec::new());
    cases.push((s, "agent"));
    let mut s = spawn_frame(5);
    s.agent_session = Some(vec![1; 4097]);
    cases.push((s, "agent"));
    for (spawn, what) in cases {
        let rid = spawn.request_id;
        h.send(c, &Frame::SpawnTerminal(spawn));
        let got = h.settle_recv(c);
        let [Frame::TerminalSpawned(r)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(r.request_id, rid);
        let ok = match (&r.result, what) {
            (SpawnResult::Err(SpawnError::GroupNotFound), "group") => true,
            (SpawnResult::Err(SpawnError::UnsupportedSatelliteRoute), "satellite") => true,
            (SpawnResult::Err(SpawnError::SpawnFailed(_)), "agent") => true,
            _ => false,
        };
        assert!(ok, "{what}: {r:?}");
    }
    assert!(h.actions.is_empty(), "nothing spawned: {:?}", h.actions);
    // A failed spawn creates no terminal.
    h.fail_next_spawns(1);
    h.send(c, &Frame::SpawnTerminal(spawn_frame(6)));
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::TerminalSpawned(r)] if matches!(r.result, SpawnResult::Err(SpawnError::SpawnFailed(_)))),
        "{got:?}"
    );
    assert_eq!(h.server.terminal_count(), 0);
}

#[test]
fn spawn_passes_command_env_term_cwd_and_size() {
    // [SPAWN.COMMAND.1] [SPAWN.ENV.1] [SPAWN.TERM.1] [SPAWN.CWD.1] [SPAWN.SIZE.1]
    let mut h = Harness::new();
    let c = h.client();
    let mut s = spawn_frame(0);
    s.command = Some(vec!["/bin/echo".into(), "hi".into()]);
    s.env = Some(vec![]);
    s.term = Some("vt100".into());
    s.cwd = Some("/tmp".into());
    s.initial_size = Some(TerminalSize {
        cols: 100,
        rows: 30,
    });
    h.spawn_with(c, s);
    let mut s = spawn_frame(0);
    s.initial_size = Some(TerminalSize { cols: 0, rows: 30 });
    h.spawn_with(c, s);
    let specs: Vec<_> = h
        .actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Spawn { spec, .. } => Some(spec.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        specs[0].command,
        vec!["/bin/echo".to_owned(), "hi".to_owned()]
    );
    assert_eq!(specs[0].env, Some(vec![]));
    assert_eq!(specs[0].term, "vt100");
    assert_eq!(specs[0].cwd.as_deref(), Some("/tmp"));
    assert_eq!((specs[0].cols, specs[0].rows), (100, 30));
    assert_eq!((specs[1].cols, specs[1].rows), (80, 24));
    assert_eq!(specs[1].term, "xterm-256color");
    assert!(!specs[1].command.is_empty());
}

#[test]
fn an_absent_term_keeps_the_term_of_the_given_environment() {
    // [SPAWN.ENV.1] [SPAWN.TERM.1]: `term` wins when present; absent, the env's own TERM (the
    // last one, as an environment keeps the last of duplicates) is the child's TERM.
    let mut h = Harness::new();
    let c = h.client();
    let env = |pairs: &[(&str, &str)]| {
        Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>(),
        )
    };
    for (env, term) in [
        (
            env(&[("A", "1"), ("TERM", "vt100"), ("TERM", "vt220")]),
            None,
        ),
        (env(&[("TERM", "vt100")]), Some("xterm-kitty")),
        (env(&[("A", "1")]), None),
        (None, None),
    ] {
        let mut s = spawn_frame(0);
        s.command = Some(vec!["/bin/true".into()]);
        s.env = env;
        s.term = term.map(str::to_owned);
        h.spawn_with(c, s);
    }
    let terms: Vec<String> = h
        .actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Spawn { spec, .. } => Some(spec.term.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        terms,
        ["vt220", "xterm-kitty", "xterm-256color", "xterm-256color"]
    );
}

// ---- TERMINAL -------------------------------------------------------------------------------

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

// ---- SCREEN ---------------------------------------------------------------------------------

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

// ---- SUBSCRIBE / EVENT ----------------------------------------------------------------------

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
