//! How submitted input becomes APPLY_INPUT operations that fit the wire: each batch encodes
//! within [`MAX_APPLY_INPUT_LEN`] and [`MAX_APPLY_INPUT_EVENTS`], and a paste too large for one
//! operation is cut at UTF-8 boundaries into several, in order ([CLIENT.PASTE.1]). The
//! [`Outbox`](super::outbox::Outbox) submits what this returns.

use phux_proto::command::{ApplyInput, MAX_APPLY_INPUT_EVENTS, MAX_APPLY_INPUT_LEN};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{OperationId, TerminalId};

/// The encoded size of an APPLY_INPUT value to `terminal` with no events.
fn base_len(terminal: &TerminalId) -> usize {
    ApplyInput {
        operation_id: OperationId::from_u128(1).unwrap_or_else(|| unreachable!()),
        terminal: terminal.clone(),
        events: Vec::new(),
    }
    .value_len()
}

/// What one event adds to an APPLY_INPUT value, from the codec's own length function.
pub(super) fn event_len(terminal: &TerminalId, event: &InputEvent) -> usize {
    match event {
        // A paste's size is its fixed overhead plus its data; avoid copying the data.
        InputEvent::Paste(p) => paste_overhead(terminal) + p.data.len(),
        other => {
            ApplyInput {
                operation_id: OperationId::from_u128(1).unwrap_or_else(|| unreachable!()),
                terminal: terminal.clone(),
                events: vec![other.clone()],
            }
            .value_len()
                - base_len(terminal)
        }
    }
}

fn paste_overhead(terminal: &TerminalId) -> usize {
    ApplyInput {
        operation_id: OperationId::from_u128(1).unwrap_or_else(|| unreachable!()),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: Vec::new(),
        })],
    }
    .value_len()
        - base_len(terminal)
}

/// The most paste bytes one operation to `terminal` carries: the 64 KiB APPLY_INPUT value
/// bound less the encoding's overhead (tag, operation id, terminal id, count, event header).
pub fn max_paste_len(terminal: &TerminalId) -> usize {
    MAX_APPLY_INPUT_LEN.saturating_sub(base_len(terminal) + paste_overhead(terminal))
}

/// Splits `data` into pieces of at most `limit` bytes, never inside a UTF-8 character
/// (invalid bytes may be split anywhere; they are not characters).
pub fn split_utf8(data: &[u8], limit: usize) -> Vec<&[u8]> {
    let limit = limit.max(4);
    let mut pieces = Vec::new();
    let mut rest = data;
    while rest.len() > limit {
        // [CLIENT.PASTE.2] Back up over at most three continuation bytes (0b10xx_xxxx) so the
        // cut lands on a character's first byte.
        let mut cut = limit;
        while cut > limit - 3 && rest.get(cut).is_some_and(|b| b & 0xc0 == 0x80) {
            cut -= 1;
        }
        if rest.get(cut).is_some_and(|b| b & 0xc0 == 0x80) {
            // Four continuation bytes in a row is not UTF-8: cut at the limit.
            cut = limit;
        }
        let (piece, tail) = rest.split_at(cut);
        pieces.push(piece);
        rest = tail;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// Splits events into batches that each encode as one in-limit APPLY_INPUT: oversized
/// pastes become several pastes (cut at UTF-8 boundaries), then events are packed in order,
/// at most [`MAX_APPLY_INPUT_EVENTS`] per batch and within [`MAX_APPLY_INPUT_LEN`].
pub(super) fn split_events(terminal: &TerminalId, events: Vec<InputEvent>) -> Vec<Vec<InputEvent>> {
    let budget = MAX_APPLY_INPUT_LEN.saturating_sub(base_len(terminal));
    let max_paste = max_paste_len(terminal);
    let mut batches: Vec<Vec<InputEvent>> = Vec::new();
    let mut batch: Vec<InputEvent> = Vec::new();
    let mut batch_len = 0;
    for event in events {
        // [CLIENT.PASTE.1] A paste too large for one operation becomes several, in order.
        let pieces: Vec<InputEvent> = match event {
            InputEvent::Paste(p) if p.data.len() > max_paste => split_utf8(&p.data, max_paste)
                .into_iter()
                .map(|piece| {
                    InputEvent::Paste(PasteEvent {
                        trust: p.trust,
                        data: piece.to_vec(),
                    })
                })
                .collect(),
            other => vec![other],
        };
        for piece in pieces {
            let len = event_len(terminal, &piece);
            if !batch.is_empty()
                && (batch.len() == MAX_APPLY_INPUT_EVENTS || batch_len + len > budget)
            {
                batches.push(std::mem::take(&mut batch));
                batch_len = 0;
            }
            batch_len += len;
            batch.push(piece);
        }
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}
