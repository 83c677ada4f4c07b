//! ERROR (0xc1).

use crate::ErrorCode;

/// ERROR (0xc1, S→C): field 1 request_id (optional), field 2 code, field 3 message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorFrame {
    /// The request this error answers, if any.
    pub request_id: Option<u32>,
    /// The code; unknown codes are kept (our rule R5).
    pub code: ErrorCode,
    /// Human-readable text, written even when empty.
    pub message: String,
}
