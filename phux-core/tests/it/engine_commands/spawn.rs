//! SPAWN.

use super::*;

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
