//! COMMAND (0x31) and COMMAND_RESULT (0xc2) envelopes; the bodies are in `crate::command`.

use crate::command::{Command, CommandResult};

/// COMMAND (0x31, C→S): field 1 request_id (absent = 0, always written), field 2 command.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CommandFrame {
    /// Correlates the COMMAND_RESULT.
    pub request_id: u32,
    /// The request.
    pub command: Command,
}

/// COMMAND_RESULT (0xc2, S→C): field 1 request_id (absent = 0), field 2 result.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CommandResultFrame {
    /// The COMMAND's request id.
    pub request_id: u32,
    /// The outcome.
    pub result: CommandResult,
}
