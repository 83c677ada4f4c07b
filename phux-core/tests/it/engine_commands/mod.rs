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

mod command;
mod remains;
mod screen;
mod spawn;
mod subscribe;
mod terminal;
