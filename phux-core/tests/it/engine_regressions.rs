//! Regression tests for engine bugs the harness found: each is a spec clause the engine once
//! broke (wrong JSON key, one bell per chunk, a viewport without pixels resetting the cell
//! size, the queue-full check before paste safety, a spawner left unanswered after a kill).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use phux_core::server::ServerConfig;
use phux_core::sim::{
    Harness, apply_input, error_code, events, expect_json, paste, server_id_for, untrusted_paste,
};
use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::event::AgentEvent;
use phux_proto::frame::SpawnResult;
use phux_proto::{ErrorCode, Frame, TerminalId};

#[test]
fn bell_event_per_bel() {
    // [EVENT.KIND.1]: two BELs in one chunk are two bell events; a BEL ending an OSC is none.
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.subscribe_all(c);
    h.pty(&t).script(b"a\x07b\x07\x1b]2;x\x07");
    let ev = events(&h.settle_recv(c));
    assert_eq!(
        ev.iter().filter(|(_, e)| *e == AgentEvent::Bell).count(),
        2,
        "{ev:?}"
    );
}

#[test]
fn get_terminal_state_modes_use_the_spec_keys() {
    // [SCREEN.STATE.5]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t)
        .script(b"\x1b[?1h\x1b[?2004h\x1b[?1002h\x1b[?1006h\x1b[>5u");
    h.settle();
    let v = expect_json(h.request(
        c,
        Command::GetTerminalState {
            terminal: t,
            include_scrollback: false,
            max_scrollback_lines: 0,
        },
    ));
    let m = &v["modes"];
    for key in [
        "application_cursor_keys",
        "application_keypad",
        "backarrow_sends_backspace",
        "line_feed_mode",
        "bracketed_paste",
        "focus_reporting",
        "alternate_screen",
        "mouse_tracking",
        "mouse_encoding",
        "kitty_flags",
    ] {
        assert!(m.get(key).is_some(), "missing modes.{key}: {m}");
    }
    assert_eq!(m["application_cursor_keys"], true);
    assert_eq!(m["bracketed_paste"], true);
    assert_eq!(m["mouse_tracking"], "button_event");
    assert_eq!(m["mouse_encoding"], "sgr");
    assert_eq!(m["kitty_flags"], 5);
}

#[test]
fn viewport_resize_without_both_pixel_sizes_keeps_the_cell_size() {
    // [INPUT.ATOM.1]: the cell size is that of the last VIEWPORT_RESIZE carrying BOTH pixel
    // dimensions; one with only pixel_h must not change it.
    use phux_proto::frame::{ViewportInfo, ViewportResize};
    use phux_proto::input::{InputEvent, ModSet, MouseAction, MouseButton, MouseEvent};
    let mut h = Harness::new();
    h.spawn_mode = phux_core::sim::ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(b"\x1b[?1000h\x1b[?1006h");
    h.settle();
    let click = InputEvent::Mouse(MouseEvent {
        action: MouseAction::Press,
        button: MouseButton::Left,
        mods: ModSet::NONE,
        x: 25.0,
        y: 45.0,
    });
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
    h.send(
        c,
        &Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols: 80,
                rows: 24,
                pixel_w: None,
                pixel_h: Some(480),
            },
        }),
    );
    assert_eq!(
        h.request(c, apply_input(1, &t, vec![click])),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"\x1b[<0;3;3M".as_slice());
}

#[test]
fn apply_input_paste_safety_is_checked_before_the_queue() {
    // [INPUT.APPLY.2]: step 6 (paste safety, 203) comes before step 8 (queue full, 202).
    let mut config = ServerConfig::new(server_id_for(1));
    config.max_jobs_per_terminal = 1;
    let mut h = Harness::with_config(config);
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).lose_next_completions(1);
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"~")
            }
        ),
        Some(CommandResult::Ok)
    );
    let r = h.request(c, apply_input(1, &t, vec![untrusted_paste(b"a\nb")]));
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::UNSAFE_PASTE),
        "{r:?}"
    );
}

#[test]
fn kill_before_the_spawn_completes_still_answers_the_spawner() {
    // [SPAWN.REPLY.1]: every SPAWN_TERMINAL gets exactly one TERMINAL_SPAWNED, even when
    // another client kills the terminal id before the driver reports the spawn.
    let mut h = Harness::new();
    let a = h.client();
    let b = h.client();
    h.hold_spawns(true);
    h.send(
        a,
        &Frame::SpawnTerminal(phux_proto::frame::SpawnTerminal::new(
            5,
            phux_proto::GroupId(1),
        )),
    );
    h.settle();
    let _ = h.request(
        b,
        Command::KillTerminal {
            terminal: TerminalId::Local(1),
        },
    );
    h.hold_spawns(false);
    h.release_spawns();
    h.settle();
    let got = h.recv(a);
    let spawned: Vec<_> = got
        .iter()
        .filter(|f| matches!(f, Frame::TerminalSpawned(s) if s.request_id == 5))
        .collect();
    assert_eq!(spawned.len(), 1, "{got:?}");
    let _ = SpawnResult::Ok(TerminalId::Local(1));
}

// [TERMINAL.RESIZE.3] A hostile TERMINAL_RESIZE (found by the `server_engine` fuzzer: a
// 65,535 × 65,535 resize made the screen model allocate billions of cells) is clamped.
#[test]
fn a_huge_resize_is_clamped() {
    use phux_proto::frame::{TerminalResize, TerminalSize};
    let mut h = Harness::new();
    let a = h.client();
    let t = h.spawn(a);
    h.send(
        a,
        &Frame::TerminalResize(TerminalResize {
            terminal: t.clone(),
            size: TerminalSize {
                cols: u16::MAX,
                rows: u16::MAX,
            },
        }),
    );
    h.drive();
    let state = h.request(
        a,
        Command::GetScreen {
            terminal: t,
            request_scrollback: None,
            cells: false,
        },
    );
    let Some(CommandResult::OkWith(CommandValue::Json(json))) = state else {
        panic!("{state:?}")
    };
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["cols"].as_u64(), v["rows"].as_u64()),
        (Some(1024), Some(512))
    );
}
