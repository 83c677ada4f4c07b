//! The APPLY_INPUT payload digest: "same id ⇒ same canonical payload".

use phux_proto::Frame;
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::CommandFrame;
use sha2::{Digest, Sha256};

pub use crate::ledger::PayloadDigest;

impl PayloadDigest {
    /// [INPUT.DEDUPE.4] SHA-256 of `COMMAND{request_id = 0, APPLY_INPUT{...}}` as our
    /// canonical encoder writes it (phux 0.8 section 8.4), so request ids, field order and
    /// non-canonical encodings of a retry do not matter.
    pub fn of(apply: &ApplyInput) -> Self {
        let frame = Frame::Command(CommandFrame {
            request_id: 0,
            command: Command::ApplyInput(apply.clone()),
        });
        let mut bytes = Vec::with_capacity(64);
        frame.encode(&mut bytes);
        Self(Sha256::digest(&bytes).into())
    }
}
