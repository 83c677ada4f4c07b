//! `--max-terminals`: a SPAWN_TERMINAL past the cap is refused, and one is possible again once
//! a terminal is gone.

use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{SpawnError, SpawnResult, SpawnTerminal};
use phux_proto::{Frame, GroupId};

use crate::support::client;
use crate::support::faults::{DEADLINE, ServerProc, private_tempdir};

fn spawn_result(c: &mut client::Client, request_id: u32) -> SpawnResult {
    let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
    spawn.command = Some(vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        "read x".to_owned(),
    ]);
    c.send(&Frame::SpawnTerminal(spawn));
    c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) if s.request_id == request_id => Some(s.result.clone()),
        _ => None,
    })
}

#[test]
fn a_spawn_over_max_terminals_is_refused() {
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let _server = ServerProc::start_with(&socket, None, &["--max-terminals", "2"]);
    let mut c = client::Client::unix(&socket);
    c.hello();
    let SpawnResult::Ok(first) = spawn_result(&mut c, 1) else {
        panic!("the first spawn failed");
    };
    assert!(matches!(spawn_result(&mut c, 2), SpawnResult::Ok(_)));
    assert!(
        matches!(
            spawn_result(&mut c, 3),
            SpawnResult::Err(SpawnError::SpawnFailed(_))
        ),
        "a third terminal was spawned"
    );
    let kill = Command::KillTerminal { terminal: first };
    assert_eq!(c.command(kill), CommandResult::Ok);
    // The slot comes back once the killed terminal's exit is reported: poll for it.
    let end = Instant::now() + DEADLINE;
    let mut request_id = 4;
    while !matches!(spawn_result(&mut c, request_id), SpawnResult::Ok(_)) {
        assert!(Instant::now() < end, "no spawn possible after the kill");
        request_id += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_spawn_whose_screens_do_not_fit_the_memory_budget_is_refused() {
    // [SERVER.LIMIT.7] An 80x24 terminal reserves 572 KiB, a 1024x512 one 147 MiB: under a
    // budget of 1 MiB, one small one fits, and neither a big one nor a second small one does.
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let _server = ServerProc::start_with(&socket, None, &["--models-budget-mib", "1"]);
    let mut c = client::Client::unix(&socket);
    c.hello();
    let mut big = SpawnTerminal::new(1, GroupId(1));
    big.command = Some(vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        "read x".to_owned(),
    ]);
    big.initial_size = Some(phux_proto::frame::TerminalSize {
        cols: 1024,
        rows: 512,
    });
    c.send(&Frame::SpawnTerminal(big));
    let refused = |result: SpawnResult| match result {
        SpawnResult::Err(SpawnError::SpawnFailed(why)) => {
            assert!(why.contains("memory budget"), "{why}");
        }
        other => panic!("a spawn over the budget: {other:?}"),
    };
    refused(c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) if s.request_id == 1 => Some(s.result.clone()),
        _ => None,
    }));
    let small = spawn_result(&mut c, 2);
    assert!(matches!(small, SpawnResult::Ok(_)), "{small:?}");
    refused(spawn_result(&mut c, 3));
}
