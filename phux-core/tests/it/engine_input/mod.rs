//! Engine tests for input: INPUT_* frames, ROUTE_INPUT, APPLY_INPUT with the dedupe ledger
//! and the acknowledgement lane, paste safety and the canonical-line guard
//! (INPUT.*, COMMAND.ORDER.3).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use std::time::Duration;

use phux_core::server::{ConnId, ServerConfig};
use phux_core::sim::{
    ChildMode, Harness, apply_input, command_frame, error_code, paste, server_id_for,
    untrusted_paste,
};
use phux_proto::command::{AcquireMode, Command, CommandResult};
use phux_proto::frame::{InputFocus, InputPaste, ViewportInfo, ViewportResize};
use phux_proto::input::{
    FocusEvent, InputEvent, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent, PasteEvent,
    PasteTrust, PhysicalKey,
};
use phux_proto::{ErrorCode, Frame, TerminalId};

/// A harness with one HELLO'd client and one Record-mode terminal.
fn setup() -> (Harness, ConnId, TerminalId) {
    setup_with(ServerConfig::new(server_id_for(1)))
}

fn setup_with(config: ServerConfig) -> (Harness, ConnId, TerminalId) {
    let mut h = Harness::with_config(config);
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    (h, c, t)
}

fn apply(
    h: &mut Harness,
    c: ConnId,
    op: u128,
    t: &TerminalId,
    events: Vec<InputEvent>,
) -> Option<CommandResult> {
    h.request(c, apply_input(op, t, events))
}

fn code(r: &Option<CommandResult>) -> Option<ErrorCode> {
    r.as_ref().and_then(error_code)
}

fn input_paste(t: &TerminalId, data: &[u8], trust: PasteTrust) -> Frame {
    Frame::InputPaste(InputPaste {
        terminal: t.clone(),
        event: PasteEvent {
            trust,
            data: data.to_vec(),
        },
    })
}

/// Keeps the terminal's pending-job queue occupied: a fire-and-forget job whose completion is
/// lost stays pending at the engine forever.
fn occupy_queue(h: &mut Harness, c: ConnId, t: &TerminalId) {
    h.pty(t).lose_next_completions(1);
    let r = h.request(
        c,
        Command::RouteInput {
            terminal: t.clone(),
            event: paste(b"~"),
        },
    );
    assert_eq!(r, Some(CommandResult::Ok));
}

mod apply_steps;
mod canonical;
mod decode_bounds;
mod dedupe;
mod input_frames;
mod lane;
