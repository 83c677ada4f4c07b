//! A 1024x512 terminal with every cell styled and a full history of wide rows: GET_SCREEN with
//! `cells` is refused RESOURCE_EXHAUSTED, and the screen reads that are answered stay within
//! the negotiated history page, far under the 16 MiB frame cap ([SCREEN.LIMIT.1],
//! [SCREEN.LIMIT.2], [SCREEN.LIMIT.3]).

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::frame::{SpawnResult, SpawnTerminal, TerminalSize};
use phux_proto::framing::MAX_FRAME_LEN;
use phux_proto::{ErrorCode, Frame, GroupId, TerminalId};

use crate::support::client::Server;
use crate::support::faults::{DEADLINE, eventually};

/// Fills 2,600 rows of 1,024 `h` (most go to history), then the whole 1024x512 viewport with
/// styled `x`, then `DONE` on the last row; then waits for stdin so the terminal stays.
const PAINTER: &str = "import sys\n\
w = sys.stdout.buffer\n\
w.write(b'h' * 1024 * 2600)\n\
w.write(b'\\x1b[H\\x1b[7;38;2;1;2;3m' + b'x' * (1024 * 512 - 1))\n\
w.write(b'\\x1b[512;1H\\x1b[mDONE')\n\
w.flush()\n\
sys.stdin.read()\n";

fn json(result: &CommandResult) -> Option<&str> {
    match result {
        CommandResult::OkWith(CommandValue::Json(text)) => Some(text),
        _ => None,
    }
}

fn get_screen(terminal: &TerminalId, cells: bool) -> Command {
    Command::GetScreen {
        terminal: terminal.clone(),
        request_scrollback: Some(0),
        cells,
    }
}

#[test]
fn screen_replies_of_a_huge_styled_screen_stay_within_the_limits() {
    let server = Server::start();
    let mut c = server.connect();
    let page = c.hello().max_history_page_bytes.get() as usize;
    let mut spawn = SpawnTerminal::new(1, GroupId(1));
    spawn.command = Some(vec!["python3".into(), "-c".into(), PAINTER.into()]);
    spawn.initial_size = Some(TerminalSize {
        cols: 1024,
        rows: 512,
    });
    c.send(&Frame::SpawnTerminal(spawn));
    let t = c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) => match &s.result {
            SpawnResult::Ok(t) => Some(t.clone()),
            SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
        },
        _ => None,
    });
    let last_row = |c: &mut crate::support::client::Client| {
        let result = c.command(Command::GetScreen {
            terminal: t.clone(),
            request_scrollback: None,
            cells: false,
        });
        let v: serde_json::Value = serde_json::from_str(json(&result).expect("a screen")).unwrap();
        v["lines"][511]
            .as_str()
            .unwrap_or_default()
            .starts_with("DONE")
    };
    assert!(
        eventually(DEADLINE, || last_row(&mut c)),
        "the painter's output never reached the screen"
    );

    // [SCREEN.LIMIT.2] Some 70 MB of cells: refused, typed.
    let refused = c.command(get_screen(&t, true));
    assert!(
        matches!(
            refused,
            CommandResult::Error {
                code: ErrorCode::RESOURCE_EXHAUSTED,
                ..
            }
        ),
        "{refused:?}"
    );

    // [SCREEN.LIMIT.1] Over 2 MB of history asked for: the newest rows within the page.
    for command in [
        get_screen(&t, false),
        Command::GetTerminalState {
            terminal: t.clone(),
            include_scrollback: true,
            max_scrollback_lines: 0,
        },
    ] {
        let result = c.command(command);
        let text = json(&result).expect("a screen document");
        // [SCREEN.LIMIT.3] Far under the frame cap.
        assert!(text.len() < MAX_FRAME_LEN as usize);
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let rows = v["scrollback"].as_array().unwrap();
        let history: usize = rows.iter().map(|r| r.as_str().unwrap().len() + 3).sum();
        assert!(!rows.is_empty() && history <= page, "{} rows", rows.len());
        assert_eq!(v["scrollback_truncated"], true);
    }
    // The server still answers.
    assert_eq!(
        c.command(Command::KillTerminal { terminal: t }),
        CommandResult::Ok
    );
}
