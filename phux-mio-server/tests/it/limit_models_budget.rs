//! The terminals' memory budget holds against a peer that fills screens: spawned empty, then
//! filled to their last cell with combining marks on both screens (nothing scrolls, so there is
//! no history to shed), terminals make the server hold no more than the budget and a stated
//! margin. The big spawns are refused, a second screenful of a size that fits is refused, and a
//! resize to the largest size grows nothing ([SERVER.LIMIT.6], [SERVER.LIMIT.7]).

use std::fmt::Write as _;
use std::path::Path;

use phux_proto::command::{Command, CommandResult, CommandValue, StateScope, TerminalInfo};
use phux_proto::frame::{SpawnError, SpawnResult, SpawnTerminal, TerminalResize, TerminalSize};
use phux_proto::{Frame, GroupId, TerminalId};

use crate::support::client::Client;
use crate::support::common::eventually;
use crate::support::faults::{ServerProc, private_tempdir};

const BUDGET_MIB: u64 = 64;
/// What the server may hold beyond the budget: the allocator's own overhead on the bytes the
/// models count (malloc's chunk headers and rounding, a B-tree node's slack), and its buffers.
const MARGIN_MIB: u64 = 16;
/// The attack's screens: the largest a terminal may have.
const COLS: u16 = 1024;
const ROWS: u16 = 512;
/// A size whose screens fit the budget twice (28.6 MiB reserved each).
const FITS: (u16, u16) = (1024, 100);

/// Both screens of a terminal of `FITS`, every cell an `e` with eight combining marks (the most
/// a cell takes), written row by row with cursor moves so nothing scrolls. (A terminal that
/// had grown would show it in GET_STATE.)
fn fill(path: &Path) {
    let cell = format!("e{}", "\u{301}".repeat(8));
    let row = cell.repeat(usize::from(FITS.0));
    let mut text = String::new();
    for screen in ["", "\x1b[?1049h"] {
        text.push_str(screen);
        for y in 1..=FITS.1 {
            let _ = write!(text, "\x1b[{y};1H{row}");
        }
    }
    std::fs::write(path, text).expect("write the fill");
}

fn spawn(
    c: &mut Client,
    request_id: u32,
    (cols, rows): (u16, u16),
    argv: &[String],
) -> SpawnResult {
    let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
    spawn.command = Some(argv.to_vec());
    spawn.initial_size = Some(TerminalSize { cols, rows });
    c.send(&Frame::SpawnTerminal(spawn));
    c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) if s.request_id == request_id => Some(s.result.clone()),
        _ => None,
    })
}

fn state(c: &mut Client) -> Vec<TerminalInfo> {
    match c.command(Command::GetState {
        scope: StateScope::Server,
    }) {
        CommandResult::OkWith(CommandValue::State(s)) => s.terminals,
        other => panic!("GET_STATE: {other:?}"),
    }
}

fn refused_for_memory(result: &SpawnResult) -> bool {
    matches!(result, SpawnResult::Err(SpawnError::SpawnFailed(why)) if why.contains("memory budget"))
}

#[test]
fn screens_filled_after_an_empty_spawn_stay_within_the_budget() {
    // [SERVER.LIMIT.6] [SERVER.LIMIT.7]
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let budget = BUDGET_MIB.to_string();
    let server = ServerProc::start_with(&socket, None, &["--models-budget-mib", &budget]);
    let mut c = Client::unix(&socket);
    c.hello();
    let (data, go) = (dir.path().join("fill"), dir.path().join("go"));
    fill(&data);
    // Each program waits for the go file, then fills its screens and says so in its title.
    let argv: Vec<String> = [
        "/bin/sh",
        "-c",
        "while [ ! -e \"$1\" ]; do sleep 0.05; done; cat \"$0\"; printf '\\033]2;filled\\007'; \
         exec sleep 100000",
        data.to_str().expect("utf-8"),
        go.to_str().expect("utf-8"),
    ]
    .map(str::to_owned)
    .to_vec();
    let before = server.rss_kib();
    let mut request_id = 1;
    // Eight terminals of the largest size, as in the attack: none fits.
    for _ in 0..8 {
        let result = spawn(&mut c, request_id, (COLS, ROWS), &argv);
        assert!(refused_for_memory(&result), "{result:?}");
        request_id += 1;
    }
    // Smaller ones until the budget is spent: two fit.
    let mut ids: Vec<TerminalId> = Vec::new();
    loop {
        match spawn(&mut c, request_id, FITS, &argv) {
            SpawnResult::Ok(id) => ids.push(id),
            refused @ SpawnResult::Err(_) => {
                assert!(refused_for_memory(&refused), "{refused:?}");
                break;
            }
        }
        request_id += 1;
        assert!(ids.len() <= 8, "the budget never ran out");
    }
    assert_eq!(ids.len(), 2, "spawned {ids:?}");
    // Each then asks for the largest screens: they grow along neither axis.
    for id in &ids {
        c.send(&Frame::TerminalResize(TerminalResize {
            terminal: id.clone(),
            size: TerminalSize {
                cols: COLS,
                rows: ROWS,
            },
        }));
    }
    for info in state(&mut c) {
        assert_eq!((info.cols, info.rows), FITS, "{info:?}");
    }
    std::fs::write(&go, b"").expect("go");
    assert!(
        eventually(|| state(&mut c)
            .iter()
            .all(|t| t.title.as_deref() == Some("filled"))),
        "the screens were never filled: {:?}",
        state(&mut c)
    );
    let after = server.rss_kib();
    let grew_mib = after.saturating_sub(before) / 1024;
    eprintln!(
        "models budget: {BUDGET_MIB} MiB; server RSS {before} KiB before, {after} KiB with {} \
         filled {}x{} terminals ({grew_mib} MiB more)",
        ids.len(),
        FITS.0,
        FITS.1
    );
    assert!(
        grew_mib <= BUDGET_MIB + MARGIN_MIB,
        "the server grew by {grew_mib} MiB under a budget of {BUDGET_MIB} MiB"
    );
}
