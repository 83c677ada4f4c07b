//! The APPLY_INPUT payload digest: "same id ⇒ same canonical payload".

use phux_proto::command::ApplyInput;
use sha2::{Digest, Sha256};

pub use crate::ledger::PayloadDigest;

impl PayloadDigest {
    /// [INPUT.DEDUPE.4] SHA-256 of `COMMAND{request_id = 0, APPLY_INPUT{...}}` as our
    /// canonical encoder writes it (phux 0.8 section 8.4), so request ids, field order and
    /// non-canonical encodings of a retry do not matter.
    pub fn of(apply: &ApplyInput) -> Self {
        Self::of_in(apply, &mut Vec::new())
    }

    /// As [`Self::of`], encoding into `scratch` (cleared first): a caller that keeps its
    /// buffer hashes every payload without an allocation.
    pub fn of_in(apply: &ApplyInput, scratch: &mut Vec<u8>) -> Self {
        scratch.clear();
        scratch.reserve(apply.value_len() + 16);
        apply.encode_command(0, scratch);
        Self(Sha256::digest(scratch.as_slice()).into())
    }
}
