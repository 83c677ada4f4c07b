//! SUBSCRIBE_EVENTS (0x41) and EVENT (0xb3).

use crate::event::AgentEvent;
use crate::ids::TerminalId;

/// SUBSCRIBE_EVENTS (0x41, C→S): field 1 terminal (absent = server-scoped).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SubscribeEvents {
    /// The terminal to watch; `None` for server-scoped events.
    pub terminal: Option<TerminalId>,
}

/// EVENT (0xb3, S→C): field 1 terminal (omitted for server-scoped events), field 2 event.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct EventFrame {
    /// The terminal the event is about, if any.
    pub terminal: Option<TerminalId>,
    /// The event.
    pub event: AgentEvent,
}

// ---- codec ----

use crate::atoms::{Result, Wire, pos};
use crate::field::{Fields, Put, once, required};

impl SubscribeEvents {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let mut terminal = None;
        while let Some((id, v)) = fields.next_field()? {
            if id == 1 {
                once(&mut terminal, id, "terminal", || pos(v))?;
            }
        }
        Ok(Self { terminal })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if let Some(t) = &self.terminal {
            out.put_field_with(1, |o| t.write(o));
        }
    }
}

impl EventFrame {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut event) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut event, id, "event", || pos(v))?,
                _ => {}
            }
        }
        Ok(Self {
            terminal,
            event: required(event, "event")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if let Some(t) = &self.terminal {
            out.put_field_with(1, |o| t.write(o));
        }
        out.put_field_with(2, |o| self.event.write(o));
    }
}
