//! SPAWN_TERMINAL, TERMINAL_SPAWNED, TERMINAL_RESIZE, TERMINAL_CLOSED and BELL: a terminal's
//! life and its notifications.

use crate::ids::{GroupId, TerminalId};

/// A size in cells: `cols u16 ‖ rows u16`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalSize {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
}

/// SPAWN_TERMINAL (0x22, C→S). Fields 1 and 2 are always written; the rest are omitted when
/// `None`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SpawnTerminal {
    /// Field 1: correlates TERMINAL_SPAWNED (absent = 0).
    pub request_id: u32,
    /// Field 2: the group (absent = 0; the reference server accepts only 1).
    pub group: GroupId,
    /// Field 3: argv (`u32 count ‖ str×count`); `None` = the default shell.
    pub command: Option<Vec<String>>,
    /// Field 4: working directory (raw UTF-8).
    pub cwd: Option<String>,
    /// Field 5: the whole environment; `None` = inherit, `Some([])` = empty.
    pub env: Option<Vec<(String, String)>>,
    /// Field 6: `TERM` (raw UTF-8).
    pub term: Option<String>,
    /// Field 7: the satellite host to spawn on (raw UTF-8); `None` = local.
    pub satellite: Option<String>,
    /// Field 8: the terminal this one belongs to.
    pub owner_terminal: Option<TerminalId>,
    /// Field 9: opaque agent session bytes (raw).
    pub agent_session: Option<Vec<u8>>,
    /// Field 10: the initial size (0 on an axis = server default).
    pub initial_size: Option<TerminalSize>,
}

impl SpawnTerminal {
    /// A spawn of the default shell in `group` with every optional field absent.
    pub fn new(request_id: u32, group: GroupId) -> Self {
        Self {
            request_id,
            group,
            command: None,
            cwd: None,
            env: None,
            term: None,
            satellite: None,
            owner_terminal: None,
            agent_session: None,
            initial_size: None,
        }
    }
}

/// TERMINAL_RESIZE (0x23, C→S): field 1 terminal, fields 2/3 cols/rows (absent = 0).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalResize {
    /// The terminal.
    pub terminal: TerminalId,
    /// The new size.
    pub size: TerminalSize,
}

/// TERMINAL_CLOSED (0xa1, S→C): field 1 terminal, field 2 exit status (4 raw bytes, omitted
/// when the child died by a signal or its status is unknown).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalClosed {
    /// The terminal.
    pub terminal: TerminalId,
    /// `_exit(n)`'s `n`, if the child exited with one.
    pub exit_status: Option<i32>,
}

/// TERMINAL_SPAWNED (0xa2, S→C): field 1 request_id (absent = 0), field 2 result.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalSpawned {
    /// The SPAWN_TERMINAL's request id.
    pub request_id: u32,
    /// The new terminal, or why there is none.
    pub result: SpawnResult,
}

/// A spawn outcome: `00 ‖ TerminalId` or `01 ‖ SpawnError`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SpawnResult {
    /// The terminal exists.
    Ok(TerminalId),
    /// It does not.
    Err(SpawnError),
}

/// Why a spawn failed (tag u8; other tags are decode errors).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SpawnError {
    /// Tag 0: no such group.
    GroupNotFound,
    /// Tag 1: the spawn itself failed, with a reason.
    SpawnFailed(String),
    /// Tag 2: satellite routing is not available here.
    UnsupportedSatelliteRoute,
    /// Tag 3: the satellite cannot be reached, with a reason.
    SatelliteUnreachable(String),
}

/// BELL (0xb0, S→C): field 1 terminal.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Bell {
    /// The terminal that rang.
    pub terminal: TerminalId,
}

// ---- codec ----

use super::value::u32_value;
use crate::atoms::{Result, Wire, pos, unknown};
use crate::field::{Fields, Put, Reader, once, required, utf8};

fn str_list(r: &mut Reader<'_>) -> Result<Vec<String>> {
    let count = r.u32()? as usize;
    // Each str is at least its 4-byte length, so the input bounds the capacity.
    let mut list = Vec::with_capacity(r.capacity_for(count, 4));
    for _ in 0..count {
        list.push(r.str()?);
    }
    Ok(list)
}

fn env_list(r: &mut Reader<'_>) -> Result<Vec<(String, String)>> {
    let count = r.u32()? as usize;
    let mut list = Vec::with_capacity(r.capacity_for(count, 8));
    for _ in 0..count {
        list.push((r.str()?, r.str()?));
    }
    Ok(list)
}

impl Wire for TerminalSize {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            cols: r.u16()?,
            rows: r.u16()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.cols);
        out.put_u16(self.rows);
    }
}

impl SpawnTerminal {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut request_id, mut group, mut command, mut cwd, mut env) =
            (None, None, None, None, None);
        let (mut term, mut satellite, mut owner, mut agent, mut size) =
            (None, None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut request_id, id, "request_id", || u32_value(v))?,
                2 => once(&mut group, id, "group", || u32_value(v).map(GroupId))?,
                3 => once(&mut command, id, "command", || {
                    str_list(&mut Reader::new(v))
                })?,
                4 => once(&mut cwd, id, "cwd", || utf8(v))?,
                5 => once(&mut env, id, "env", || env_list(&mut Reader::new(v)))?,
                6 => once(&mut term, id, "term", || utf8(v))?,
                7 => once(&mut satellite, id, "satellite", || utf8(v))?,
                8 => once(&mut owner, id, "owner_terminal", || pos(v))?,
                9 => once(&mut agent, id, "agent_session", || Ok(v.to_vec()))?,
                10 => once(&mut size, id, "initial_size", || pos(v))?,
                _ => {}
            }
        }
        Ok(Self {
            request_id: request_id.unwrap_or(0),
            group: group.unwrap_or(GroupId(0)),
            command,
            cwd,
            env,
            term,
            satellite,
            owner_terminal: owner,
            agent_session: agent,
            initial_size: size,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.request_id.to_be_bytes());
        out.put_field(2, &self.group.0.to_be_bytes());
        if let Some(command) = &self.command {
            out.put_field_with(3, |o| {
                o.put_u32(command.len() as u32);
                for arg in command {
                    o.put_len_bytes(arg.as_bytes());
                }
            });
        }
        if let Some(cwd) = &self.cwd {
            out.put_field(4, cwd.as_bytes());
        }
        if let Some(env) = &self.env {
            out.put_field_with(5, |o| {
                o.put_u32(env.len() as u32);
                for (k, v) in env {
                    o.put_len_bytes(k.as_bytes());
                    o.put_len_bytes(v.as_bytes());
                }
            });
        }
        if let Some(term) = &self.term {
            out.put_field(6, term.as_bytes());
        }
        if let Some(satellite) = &self.satellite {
            out.put_field(7, satellite.as_bytes());
        }
        if let Some(owner) = &self.owner_terminal {
            out.put_field_with(8, |o| owner.write(o));
        }
        if let Some(agent) = &self.agent_session {
            out.put_field(9, agent);
        }
        if let Some(size) = &self.initial_size {
            out.put_field_with(10, |o| size.write(o));
        }
    }
}

impl TerminalResize {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut cols, mut rows) = (None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut cols, id, "cols", || Reader::new(v).u16())?,
                3 => once(&mut rows, id, "rows", || Reader::new(v).u16())?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            size: TerminalSize {
                cols: cols.unwrap_or(0),
                rows: rows.unwrap_or(0),
            },
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
        out.put_field(2, &self.size.cols.to_be_bytes());
        out.put_field(3, &self.size.rows.to_be_bytes());
    }
}

impl TerminalClosed {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut exit_status) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut exit_status, id, "exit_status", || Reader::new(v).i32())?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            exit_status,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
        if let Some(status) = self.exit_status {
            out.put_field(2, &status.to_be_bytes());
        }
    }
}

impl Wire for SpawnError {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::GroupNotFound),
            1 => Ok(Self::SpawnFailed(r.str()?)),
            2 => Ok(Self::UnsupportedSatelliteRoute),
            3 => Ok(Self::SatelliteUnreachable(r.str()?)),
            tag => Err(unknown("SpawnError", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::GroupNotFound => out.put_u8(0),
            Self::SpawnFailed(s) => {
                out.put_u8(1);
                out.put_len_bytes(s.as_bytes());
            }
            Self::UnsupportedSatelliteRoute => out.put_u8(2),
            Self::SatelliteUnreachable(s) => {
                out.put_u8(3);
                out.put_len_bytes(s.as_bytes());
            }
        }
    }
}

impl Wire for SpawnResult {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::Ok(TerminalId::read(r)?)),
            1 => Ok(Self::Err(SpawnError::read(r)?)),
            tag => Err(unknown("SpawnResult", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Ok(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::Err(e) => {
                out.put_u8(1);
                e.write(out);
            }
        }
    }
}

impl TerminalSpawned {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut request_id, mut result) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut request_id, id, "request_id", || u32_value(v))?,
                2 => once(&mut result, id, "result", || pos(v))?,
                _ => {}
            }
        }
        Ok(Self {
            request_id: request_id.unwrap_or(0),
            result: required(result, "result")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.request_id.to_be_bytes());
        out.put_field_with(2, |o| self.result.write(o));
    }
}

impl Bell {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let mut terminal = None;
        while let Some((id, v)) = fields.next_field()? {
            if id == 1 {
                once(&mut terminal, id, "terminal", || pos(v))?;
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.terminal.write(o));
    }
}
