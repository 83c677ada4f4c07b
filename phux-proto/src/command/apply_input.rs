//! APPLY_INPUT (0x14): the acknowledged input batch, its bounds and its exact encoded length.

use crate::ids::{OperationId, TerminalId};
use crate::input::InputEvent;

/// The most events one APPLY_INPUT may carry: the reference's bound, so one acknowledged job
/// stays small enough to write as a single PTY job.
pub const MAX_APPLY_INPUT_EVENTS: usize = 256;

/// The largest APPLY_INPUT command value (tag byte included): the reference's 64 KiB bound,
/// which also caps what the dedupe ledger hashes per operation.
pub const MAX_APPLY_INPUT_LEN: usize = 64 * 1024;

/// APPLY_INPUT (0x14): `operation_id[16] ‖ TerminalId ‖ u16 count ‖ InputEvent×count`.
///
/// Decoding enforces count ≤ [`MAX_APPLY_INPUT_EVENTS`] and the whole command value ≤
/// [`MAX_APPLY_INPUT_LEN`]; a count of 0 decodes (the server refuses it with INVALID_COMMAND).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct ApplyInput {
    /// The client-chosen, non-zero operation id (the dedupe key).
    pub operation_id: OperationId,
    /// The terminal.
    pub terminal: TerminalId,
    /// The events, written to the PTY as one job.
    pub events: Vec<InputEvent>,
}

/// The encoded length of a TerminalId.
pub(crate) fn terminal_id_len(id: &TerminalId) -> usize {
    match id {
        TerminalId::Local(_) => 5,
        TerminalId::Satellite { host, .. } => 1 + 4 + host.len() + 4,
    }
}

/// The encoded length of an InputEvent, tag byte included.
pub(crate) fn input_event_len(event: &InputEvent) -> usize {
    1 + match event {
        InputEvent::Key(key) => {
            13 + 1
                + key.text.as_ref().map_or(0, |t| 4 + t.len())
                + 1
                + if key.unshifted_codepoint.is_some() {
                    4
                } else {
                    0
                }
        }
        InputEvent::Mouse(_) => 26,
        InputEvent::Focus(_) => 1,
        InputEvent::Paste(paste) => 1 + 4 + paste.data.len(),
    }
}

impl ApplyInput {
    /// The length of the encoded command value, tag byte included (what
    /// [`MAX_APPLY_INPUT_LEN`] bounds).
    pub fn value_len(&self) -> usize {
        1 + 16
            + terminal_id_len(&self.terminal)
            + 2
            + self.events.iter().map(input_event_len).sum::<usize>()
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for ApplyInput {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut value = Self {
            operation_id: u.arbitrary()?,
            terminal: u.arbitrary()?,
            events: Vec::new(),
        };
        let mut len = value.value_len();
        for event in u.arbitrary_iter::<InputEvent>()? {
            let event = event?;
            let event_len = input_event_len(&event);
            if value.events.len() == MAX_APPLY_INPUT_EVENTS || len + event_len > MAX_APPLY_INPUT_LEN
            {
                break;
            }
            len += event_len;
            value.events.push(event);
        }
        Ok(value)
    }
}

// ---- codec ----

use crate::atoms::{Result, Wire, limit};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Put, Reader};

impl ApplyInput {
    pub(super) fn read_body(value_len: usize, r: &mut Reader<'_>) -> Result<Self> {
        // [INPUT.APPLY.1] The whole command value is at most 64 KiB.
        if value_len > MAX_APPLY_INPUT_LEN {
            return Err(limit("APPLY_INPUT length", MAX_APPLY_INPUT_LEN, value_len));
        }
        // [INPUT.APPLY.2] The operation id is not all-zero.
        let operation_id = OperationId::new(r.array()?)
            .ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroOperationId))?;
        let terminal = TerminalId::read(r)?;
        let count = usize::from(r.u16()?);
        // [INPUT.APPLY.3] At most 256 events; 0 decodes (the server refuses it later).
        if count > MAX_APPLY_INPUT_EVENTS {
            return Err(limit("APPLY_INPUT events", MAX_APPLY_INPUT_EVENTS, count));
        }
        let mut events = Vec::with_capacity(r.capacity_for(count, 2));
        for _ in 0..count {
            events.push(InputEvent::read(r)?);
        }
        Ok(Self {
            operation_id,
            terminal,
            events,
        })
    }

    pub(crate) fn write_body(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.operation_id.bytes());
        self.terminal.write(out);
        out.put_u16(self.events.len() as u16);
        for e in &self.events {
            e.write(out);
        }
    }
}
