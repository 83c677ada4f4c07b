//! COMMAND bodies (`Command`), their outcomes (`CommandResult`, `CommandValue`) and the
//! records those carry. Each body is `tag u8 ‖ positional fields`, bounded by the TLV value.
//!
//! One module per concern: [`Command`] and its tag table and small enums (`request`), the two
//! bodies with their own bounds (`apply_input`, `put_file`), the outcome (`result`), and the
//! GET_STATE snapshot records (`snapshot`).

mod apply_input;
mod put_file;
mod request;
mod result;
mod snapshot;

pub use apply_input::{ApplyInput, MAX_APPLY_INPUT_EVENTS, MAX_APPLY_INPUT_LEN};
pub use put_file::{MAX_PUT_FILE_CHUNK_LEN, MAX_PUT_FILE_EXTENSION_LEN, MAX_PUT_FILE_LEN, PutFile};
pub use request::{AcquireMode, AgentState, Command, Signal, StateScope, TerminalEventType};
pub use result::{CommandResult, CommandValue};
pub use snapshot::{
    LayoutNode, MAX_LAYOUT_DEPTH, SessionInfo, SessionSnapshot, SplitDirection, TerminalInfo,
    WindowInfo,
};
