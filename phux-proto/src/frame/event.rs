//! SUBSCRIBE_EVENTS (0x41) and EVENT (0xb3).

use crate::TerminalId;
use crate::event::AgentEvent;

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
