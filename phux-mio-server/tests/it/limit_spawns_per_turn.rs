//! [SERVER.FAIR.3] Spawns pipelined by many connections at once are started a few a turn:
//! every one of them still starts, each child runs, and the spawners get their
//! TERMINAL_SPAWNED in the order they asked, with nothing else on the server waiting for the
//! rest to start.

use std::time::Instant;

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{Ping, SpawnResult, SpawnTerminal};
use phux_proto::{Frame, GroupId, TerminalId};

use crate::support::client;
use crate::support::faults::{DEADLINE, ServerProc, private_tempdir};

const CONNECTIONS: usize = 12;
const SPAWNS_EACH: u32 = 8;

#[test]
fn spawns_pipelined_by_many_connections_all_start_in_order() {
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let started = dir.path().join("started");
    let _server = ServerProc::start_with(&socket, None, &[]);
    let mut clients: Vec<client::Client> = (0..CONNECTIONS)
        .map(|_| {
            let mut c = client::Client::unix(&socket);
            c.hello();
            c
        })
        .collect();
    // Each child notes that it ran, then waits to be killed.
    let script = format!("echo x >> '{}'; exec cat", started.display());
    for c in &mut clients {
        let mut batch = Vec::new();
        for request_id in 1..=SPAWNS_EACH {
            let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
            spawn.command = Some(vec!["/bin/sh".into(), "-c".into(), script.clone()]);
            batch.extend_from_slice(&Frame::SpawnTerminal(spawn).to_bytes());
        }
        // A PING after the spawns: answered only after all of this connection's spawns were
        // handled (in order), though not necessarily started.
        batch.extend_from_slice(&Frame::Ping(Ping { nonce: 7 }).to_bytes());
        c.send_raw(&batch);
    }
    let mut terminals: Vec<TerminalId> = Vec::new();
    for c in &mut clients {
        let mut next = 1;
        while next <= SPAWNS_EACH {
            let result = c.wait_for("TERMINAL_SPAWNED", |f| match f {
                Frame::TerminalSpawned(s) => Some((s.request_id, s.result.clone())),
                _ => None,
            });
            assert_eq!(result.0, next, "TERMINAL_SPAWNED out of order");
            match result.1 {
                SpawnResult::Ok(id) => terminals.push(id),
                SpawnResult::Err(e) => panic!("spawn {next} failed: {e:?}"),
            }
            next += 1;
        }
    }
    assert_eq!(terminals.len(), CONNECTIONS * SPAWNS_EACH as usize);
    // Every child ran: the file gets one line per terminal (poll: a child may not have got
    // to its echo yet).
    let want = terminals.len();
    let end = Instant::now() + DEADLINE;
    loop {
        let lines = std::fs::read_to_string(&started).map_or(0, |s| s.lines().count());
        if lines == want {
            break;
        }
        assert!(
            lines < want && Instant::now() < end,
            "{lines} children ran, {want} expected"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::KillTerminals { terminals };
    assert_eq!(clients[0].command(kill), CommandResult::Ok);
}
