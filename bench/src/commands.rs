//! Section 9: what a command costs a client, ours against the phux reference: SPAWN_TERMINAL
//! until TERMINAL_SPAWNED, and GET_SCREEN of a full 80×24 screen until its JSON.

use std::time::Instant;

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::{Frame, TerminalId};

use crate::client::{Client, spawned};
use crate::error::{Error, Result};

/// SPAWN_TERMINAL of `argv` until its TERMINAL_SPAWNED; microseconds. The terminal is then
/// killed, untimed.
pub fn spawn_once(c: &mut Client, argv: &[String]) -> Result<f64> {
    let t0 = Instant::now();
    let request = c.send_spawn(argv)?;
    let result = c.wait_for(|f| match f {
        Frame::TerminalSpawned(s) if s.request_id == request => Some(s.result.clone()),
        _ => None,
    })?;
    let us = t0.elapsed().as_secs_f64() * 1e6;
    let id = spawned(result)?;
    c.after_spawn(&id)?;
    match c.command(Command::KillTerminal { terminal: id })? {
        CommandResult::Ok => Ok(us),
        other => Err(Error::Protocol(format!("KILL_TERMINAL: {other:?}"))),
    }
}

/// GET_SCREEN of `terminal` (no history, no cells) until its JSON; microseconds.
pub fn screen_once(c: &mut Client, terminal: &TerminalId) -> Result<f64> {
    let (id, request) = c.encode_command(Command::GetScreen {
        terminal: terminal.clone(),
        request_scrollback: None,
        cells: false,
    });
    let t0 = Instant::now();
    c.send_encoded(&request)?;
    let result = c.wait_result(id)?;
    let us = t0.elapsed().as_secs_f64() * 1e6;
    match result {
        CommandResult::OkWith(CommandValue::Json(_)) => Ok(us),
        other => Err(Error::Protocol(format!("GET_SCREEN: {other:?}"))),
    }
}
