//! Fuzz target bodies, so the cargo-fuzz shims in `fuzz/` stay three lines and stable
//! `#[test]`s replay the committed corpus through exactly the same code; and the naive models
//! the ledger and lease proptests and fuzzers share. Not part of the public API, and compiled
//! only with the `fuzzing` feature (which the fuzz crate and phux-core's own tests enable).
//!
//! Each target takes the fuzzer's raw bytes and panics when a property fails.

mod lease;
mod ledger;
mod server;

pub use lease::{LeaseModel, LeaseOut, LeaseStep, run_lease};
pub use ledger::{LedgerModel, LedgerOut, LedgerScenario, LedgerStep, final_result, run_ledger};
pub use server::{ServerRunStats, ServerSchedule, ServerStep, prelude, run_server};

use phux_proto::Frame;
use phux_proto::decode_error::DecodeError;
use phux_proto::framing::{self, HEADER_LEN};

use crate::framing::FrameDecoder;

/// Arbitrary bytes through [`Frame::decode`] (see `phux_proto::fuzzing::frame_decode`) and
/// through a [`FrameDecoder`] fed in chunk sizes derived from the input.
///
/// Properties: nothing panics; the chunked decoder yields exactly what a byte-by-byte walk of
/// the headers with [`Frame::decode`] yields (frames, errors, the fuse after a framing error);
/// it never buffers more than the input nor more than one frame plus one push; every frame it
/// yields re-encodes canonically.
pub fn frame_decode(data: &[u8]) {
    phux_proto::fuzzing::frame_decode(data);
    let expected = walk(data);
    let got = chunked(data);
    assert_eq!(
        got, expected,
        "chunked decoding differs from the header walk"
    );
}

/// What a stream decodes to: each frame or error in order, then whether it fused.
type Outcome = (Vec<Result<Frame, DecodeError>>, bool);

/// The reference: walk the headers, decode each whole frame with `Frame::decode`.
fn walk(mut data: &[u8]) -> Outcome {
    let mut out = Vec::new();
    loop {
        match framing::parse_header(data) {
            Ok(None) => return (out, false),
            Err(e) => {
                out.push(Err(e));
                return (out, true);
            }
            Ok(Some(h)) => {
                let Some(frame) = data.get(..h.frame_len()) else {
                    return (out, false);
                };
                let result = Frame::decode(frame);
                let fused = matches!(&result, Err(e) if e.is_framing());
                out.push(result);
                if fused {
                    return (out, true);
                }
                data = &data[h.frame_len()..];
            }
        }
    }
}

/// The decoder under test, fed in chunks whose sizes cycle through values taken from the
/// input's first bytes (1..=64, or the whole rest).
fn chunked(data: &[u8]) -> Outcome {
    let sizes: Vec<usize> = data
        .iter()
        .take(4)
        .map(|&b| {
            if b >= 0xf0 {
                usize::MAX
            } else {
                1 + usize::from(b % 64)
            }
        })
        .collect();
    let mut decoder = FrameDecoder::new();
    let mut out = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .min(rest.len());
        i += 1;
        decoder.push(&rest[..n]);
        rest = &rest[n..];
        assert!(
            decoder.buffered() <= data.len(),
            "buffered more than the input"
        );
        loop {
            match decoder.poll_frame() {
                Ok(None) => break,
                Ok(Some(frame)) => out.push(Ok(frame)),
                Err(e) => {
                    let framing = e.is_framing();
                    out.push(Err(e.clone()));
                    if framing {
                        // [FRAME.LENGTH.1] Fused: the same error forever, nothing buffered.
                        assert!(decoder.is_failed());
                        assert_eq!(decoder.poll_frame(), Err(e));
                        decoder.push(rest);
                        assert_eq!(decoder.buffered(), 0, "a fused decoder buffers");
                        return (out, true);
                    }
                }
            }
        }
        // Waiting for more: the buffer holds one partial frame, never more.
        let buffered = decoder.buffered();
        if buffered >= HEADER_LEN {
            let consumed = data.len() - rest.len();
            let pending = &data[consumed - buffered..];
            let frame_len = framing::parse_header(pending)
                .ok()
                .flatten()
                .map_or(0, |h| h.frame_len());
            assert!(
                buffered < frame_len,
                "{buffered} bytes buffered for a {frame_len}-byte frame"
            );
        }
    }
    assert!(!decoder.is_failed());
    (out, false)
}

mod structured {
    use arbitrary::{Arbitrary, Unstructured};
    use phux_proto::input::{InputEvent, KeyEvent, ModSet, PhysicalKey};

    use crate::encoder::{
        BatchError, CellGeometry, MAX_ENCODED_BATCH, encode_batch, encode_event, encode_key,
        paste_is_unsafe, types_input,
    };
    use crate::modes::TerminalModes;

    /// [INPUT.DEDUPE.*] The ledger against its naive model.
    pub fn ledger_model(data: &[u8]) {
        if let Ok(scenario) = super::LedgerScenario::arbitrary(&mut Unstructured::new(data)) {
            super::run_ledger(&scenario);
        }
    }

    /// [LEASE.*] The lease table against its naive model.
    pub fn lease_model(data: &[u8]) {
        if let Ok(steps) = Vec::<super::LeaseStep>::arbitrary(&mut Unstructured::new(data)) {
            super::run_lease(&steps);
        }
    }

    /// An arbitrary schedule against the server engine (see `fuzzing::server`).
    pub fn server_engine(data: &[u8]) {
        if let Ok(schedule) = super::ServerSchedule::arbitrary(&mut Unstructured::new(data)) {
            super::run_server(&schedule);
        }
    }

    /// Keys whose press with text and no modifiers types that text in default modes.
    const TEXT_KEYS: [PhysicalKey; 8] = [
        PhysicalKey::UNIDENTIFIED,
        PhysicalKey::KEY_A,
        PhysicalKey::KEY_Z,
        PhysicalKey::DIGIT5,
        PhysicalKey::SEMICOLON,
        PhysicalKey::SPACE,
        PhysicalKey::INTL_RO,
        PhysicalKey(0x00ff_ffff),
    ];

    /// Arbitrary events × arbitrary [`TerminalModes`] × [`CellGeometry`].
    ///
    /// Properties: nothing panics; a batch is the concatenation of its events' encodings, or
    /// refused for the first unsafe paste (step 7) or for crossing [`MAX_ENCODED_BATCH`]
    /// (step 8) and for nothing else; a printable key press with text and no modifiers in
    /// default modes encodes to exactly its text.
    pub fn input_encoder(data: &[u8]) {
        let mut u = Unstructured::new(data);
        let Ok((modes, w, h, events)) =
            <(TerminalModes, u16, u16, Vec<InputEvent>)>::arbitrary(&mut u)
        else {
            return;
        };
        let cells = CellGeometry {
            cell_width_px: w.max(1),
            cell_height_px: h.max(1),
        };
        let mut each = Vec::new();
        let mut first_unsafe = None;
        let mut first_silent = None;
        for (i, event) in events.iter().enumerate() {
            let before = each.len();
            let result = encode_event(event, &modes, cells, &mut each);
            if let InputEvent::Key(key) = event
                && each.len() == before
                && types_input(key)
            {
                first_silent.get_or_insert(i);
            }
            if let InputEvent::Paste(p) = event
                && paste_is_unsafe(p, &modes)
            {
                // [INPUT.PASTE.SAFE.5] The encoder refuses an unsafe paste and appends nothing.
                assert!(result.is_err(), "unsafe paste encoded");
                assert_eq!(each.len(), before);
                first_unsafe.get_or_insert(i);
            } else {
                assert!(result.is_ok(), "{result:?} for {event:?}");
            }
        }
        match encode_batch(&events, &modes, cells) {
            Ok(bytes) => {
                assert!(first_unsafe.is_none());
                // [INPUT.APPLY.13] A batch with a key that types nothing is never OK.
                assert!(first_silent.is_none(), "a silent key was accepted");
                // [INPUT.APPLY.8]
                assert!(bytes.len() <= MAX_ENCODED_BATCH);
                assert_eq!(
                    bytes, each,
                    "a batch is not the concatenation of its events"
                );
            }
            // [INPUT.APPLY.7] The first unsafe paste refuses the batch.
            Err(BatchError::UnsafePaste { index }) => assert_eq!(Some(index), first_unsafe),
            Err(BatchError::TooLarge { len }) => {
                assert!(first_unsafe.is_none());
                assert!(len > MAX_ENCODED_BATCH && each.len() > MAX_ENCODED_BATCH);
            }
            Err(BatchError::TypesNothing { index }) => {
                assert!(first_unsafe.is_none());
                assert_eq!(Some(index), first_silent);
            }
            Err(e) => panic!("unexpected batch error {e}"),
        }

        // [INPUT.ENCODE.KEY.1] Printable text typed with no modifiers is the text itself.
        let Ok((key, text)) = <(u8, String)>::arbitrary(&mut u) else {
            return;
        };
        let text: String = text.chars().filter(|c| !c.is_control()).collect();
        if text.is_empty() {
            return;
        }
        let event = KeyEvent {
            text: Some(text.clone()),
            ..KeyEvent::press(TEXT_KEYS[usize::from(key) % TEXT_KEYS.len()], ModSet::NONE)
        };
        let mut out = Vec::new();
        encode_key(&event, &TerminalModes::default(), &mut out);
        assert_eq!(out, text.as_bytes(), "{event:?}");
    }
}

pub use structured::{input_encoder, lease_model, ledger_model, server_engine};
