//! Fuzz target bodies, so the cargo-fuzz shims in `fuzz/` stay three lines and a stable
//! `#[test]` can replay the committed corpus through exactly the same code.
//!
//! Each function takes the fuzzer's raw bytes and panics when a property fails; that is how
//! libFuzzer (and the replay tests) learn about a bug. Not part of the public API.

use crate::frame::Frame;
use crate::framing;

/// Arbitrary bytes into [`Frame::decode`] and [`framing::parse_header`].
///
/// Properties: nothing panics; a header that parses agrees with [`Frame::decode`] on the
/// length; whatever decodes is canonical after one re-encode (`decode(encode(f)) == f`,
/// encoding is deterministic) and, with the `notation` feature, survives the notation round
/// trip.
pub fn frame_decode(data: &[u8]) {
    let header = framing::parse_header(data);
    let decoded = Frame::decode(data);
    match (&header, &decoded) {
        // [FRAME.LENGTH.1] Both reject the same lengths, as framing errors.
        (Err(h), Err(d)) => assert!(h.is_framing() && d.is_framing(), "{h} / {d}"),
        (Err(h), Ok(f)) => panic!("header refused ({h}) but the frame decoded: {f:?}"),
        (Ok(Some(h)), Ok(_)) => assert_eq!(h.frame_len(), data.len()),
        _ => {}
    }
    if let Ok(frame) = decoded {
        check_canonical(&frame);
    }
}

/// The canonical-encoding and (with the `notation` feature) notation properties every decoded
/// frame must have.
fn check_canonical(frame: &Frame) {
    // [FIELD.CANON.1] decode(encode(f)) == f and the encoding is a fixed point.
    let bytes = frame.to_bytes();
    let again = Frame::decode(&bytes)
        .unwrap_or_else(|e| panic!("canonical bytes do not decode: {e}: {bytes:02x?}"));
    assert_eq!(&again, frame, "decode(encode(f)) != f for {bytes:02x?}");
    assert_eq!(again.to_bytes(), bytes, "encoding is not deterministic");
    assert_eq!(
        framing::parse_header(&bytes)
            .ok()
            .flatten()
            .map(|h| h.frame_len()),
        Some(bytes.len()),
        "the header of an encoded frame does not describe it"
    );
    #[cfg(feature = "notation")]
    check_notation(frame);
}

/// `Frame::from_str(&f.to_string()) == f`.
#[cfg(feature = "notation")]
fn check_notation(frame: &Frame) {
    let text = frame.to_string();
    match text.parse::<Frame>() {
        Ok(parsed) => assert_eq!(&parsed, frame, "notation round trip changed {text}"),
        Err(e) => panic!("notation does not parse back: {e}: {text}"),
    }
}

#[cfg(feature = "arbitrary")]
mod structured {
    use arbitrary::{Arbitrary, Unstructured};

    use super::check_canonical;
    use crate::command::{MAX_APPLY_INPUT_EVENTS, MAX_APPLY_INPUT_LEN};
    use crate::field::Put;
    use crate::frame::Frame;
    use crate::frame::FrameType;
    use crate::framing::LENGTH_LEN;

    /// A structure-aware `Frame` (from the `arbitrary` impls, which keep the wire invariants)
    /// → encode → decode must give it back, and so must the notation.
    pub fn frame_roundtrip(data: &[u8]) {
        let mut u = Unstructured::new(data);
        let Ok(frame) = Frame::arbitrary(&mut u) else {
            return;
        };
        let bytes = frame.to_bytes();
        match Frame::decode(&bytes) {
            Ok(decoded) => assert_eq!(decoded, frame, "round trip changed {bytes:02x?}"),
            Err(e) => panic!("an arbitrary frame does not decode: {e}: {frame:?} {bytes:02x?}"),
        }
        check_canonical(&frame);
    }

    /// The APPLY_INPUT command tag, which the input below favours.
    const APPLY_INPUT: u8 = crate::command::Command::APPLY_INPUT;

    /// Arbitrary COMMAND bodies, APPLY_INPUT-heavy: a COMMAND frame is built around a tag and
    /// body made from the input (APPLY_INPUT three times in four, with a plausible operation
    /// id, terminal, count and event list whose parts are themselves arbitrary).
    ///
    /// Properties: nothing panics; a body that decodes is a COMMAND with the request id we
    /// wrote and round-trips canonically; APPLY_INPUT never decodes beyond its bounds; a body
    /// that does not decode is a non-framing error that names COMMAND and carries the request
    /// id (our rule R7), so the server can answer it and keep the connection.
    pub fn command_decode(data: &[u8]) {
        let mut u = Unstructured::new(data);
        let Ok(case) = CommandCase::arbitrary(&mut u) else {
            return;
        };
        let value = case.value(&mut u);
        let mut body = Vec::new();
        if case.value_first {
            body.put_field(2, &value);
            body.put_field(1, &case.request_id.to_be_bytes());
        } else {
            body.put_field(1, &case.request_id.to_be_bytes());
            body.put_field(2, &value);
        }
        if case.unknown_field {
            // [FIELD.UNKNOWN.1] Unknown fields are skipped.
            body.put_field(9, &[0xa5]);
        }
        let mut frame = Vec::with_capacity(body.len() + 5);
        frame.extend_from_slice(&((body.len() + 1) as u32).to_be_bytes());
        frame.push(FrameType::COMMAND.0);
        frame.extend_from_slice(&body);
        debug_assert!(frame.len() >= LENGTH_LEN);
        match Frame::decode(&frame) {
            Ok(Frame::Command(command)) => {
                assert_eq!(command.request_id, case.request_id);
                if let crate::command::Command::ApplyInput(apply) = &command.command {
                    assert_eq!(value.first(), Some(&APPLY_INPUT));
                    // [INPUT.APPLY.1] [INPUT.APPLY.3] The bounds hold for whatever decodes.
                    assert!(value.len() <= MAX_APPLY_INPUT_LEN, "{} bytes", value.len());
                    assert!(apply.events.len() <= MAX_APPLY_INPUT_EVENTS);
                    // [INPUT.APPLY.2]
                    assert_ne!(apply.operation_id.as_u128(), 0);
                }
                check_canonical(&Frame::Command(command));
            }
            Ok(other) => panic!("a COMMAND frame decoded as {other:?}"),
            Err(err) => {
                assert!(
                    !err.is_framing(),
                    "framing error for a well-framed COMMAND: {err}"
                );
                assert_eq!(err.frame(), Some(FrameType::COMMAND), "{err}");
                // [ERROR.COMMAND.2] The error carries the request id whatever the field order.
                assert_eq!(err.request_id(), Some(case.request_id), "{err}");
            }
        }
    }

    /// The shape of one `command_decode` case; the rest of the input fills it in.
    #[derive(Arbitrary, Debug)]
    struct CommandCase {
        request_id: u32,
        /// 0..=2 pick APPLY_INPUT, 3 any tag.
        tag_choice: u8,
        any_tag: u8,
        value_first: bool,
        unknown_field: bool,
    }

    impl CommandCase {
        fn value(&self, u: &mut Unstructured<'_>) -> Vec<u8> {
            if self.tag_choice % 4 == 3 {
                let mut value = vec![self.any_tag];
                let len = u.len();
                value.extend_from_slice(u.bytes(len).unwrap_or(&[]));
                return value;
            }
            apply_input_value(u)
        }
    }

    /// A plausible APPLY_INPUT value: `0x14 ‖ op[16] ‖ TerminalId ‖ u16 count ‖ events`, where
    /// each part may be bent (a zero id, a satellite terminal, a count that lies, an event
    /// with an unknown tag or a cut body) and the event bodies are arbitrary bytes.
    fn apply_input_value(u: &mut Unstructured<'_>) -> Vec<u8> {
        let mut out = vec![APPLY_INPUT];
        let op: [u8; 16] = u.arbitrary().unwrap_or([0x5a; 16]);
        out.extend_from_slice(&op);
        match u.int_in_range(0u8..=7).unwrap_or(0) {
            0 => {
                out.put_u8(1);
                let host: &[u8] = u.arbitrary().unwrap_or(b"h");
                out.put_len_bytes(host);
                out.put_u32(u.arbitrary().unwrap_or(1));
            }
            1 => out.put_u8(u.arbitrary().unwrap_or(2)),
            _ => {
                out.put_u8(0);
                out.put_u32(u.int_in_range(0..=4).unwrap_or(1));
            }
        }
        let events = u.int_in_range(0u16..=300).unwrap_or(1);
        // One time in eight the count lies by up to two in either direction.
        let count = if u.ratio(1, 8).unwrap_or(false) {
            match u.int_in_range(0u8..=3).unwrap_or(0) {
                0 => events.saturating_sub(2),
                1 => events.saturating_sub(1),
                2 => events + 1,
                _ => events + 2,
            }
        } else {
            events
        };
        out.put_u16(count);
        for _ in 0..events {
            if u.is_empty() {
                break;
            }
            push_event(u, &mut out);
        }
        out
    }

    /// One event, mostly well-formed: key 0x00, mouse 0x01, focus 0x02, paste 0x03.
    fn push_event(u: &mut Unstructured<'_>, out: &mut Vec<u8>) {
        let tag = match u.int_in_range(0u8..=15).unwrap_or(0) {
            0..=3 => 0x00,
            4..=6 => 0x01,
            7..=8 => 0x02,
            9..=13 => 0x03,
            _ => u.arbitrary().unwrap_or(0x04),
        };
        out.put_u8(tag);
        match tag {
            0x00 => {
                // action u32, key u32, mods u16, consumed u16, composing, text?, codepoint?
                out.put_u32(u.int_in_range(0..=3).unwrap_or(1));
                out.put_u32(u.int_in_range(0..=200).unwrap_or(20));
                out.put_u16(u.arbitrary().unwrap_or(0));
                out.put_u16(u.arbitrary().unwrap_or(0));
                out.put_u8(u.int_in_range(0..=2).unwrap_or(0));
                if u.arbitrary().unwrap_or(false) {
                    out.put_u8(1);
                    // Mostly UTF-8 (which decodes), sometimes raw bytes (which must not).
                    if u.ratio(7, 8).unwrap_or(true) {
                        let text: &str = u.arbitrary().unwrap_or("a");
                        out.put_len_bytes(text.as_bytes());
                    } else {
                        let text: &[u8] = u.arbitrary().unwrap_or(b"a");
                        out.put_len_bytes(text);
                    }
                } else {
                    out.put_u8(0);
                }
                out.put_optional(u.arbitrary::<Option<u32>>().unwrap_or(None), Put::put_u32);
            }
            0x01 => {
                // action u32, button u32, mods u16, x f64, y f64 (26 bytes).
                out.put_u32(u.int_in_range(0..=3).unwrap_or(0));
                out.put_u32(u.int_in_range(0..=12).unwrap_or(1));
                out.put_u16(u.arbitrary().unwrap_or(0));
                out.put_u64(u.arbitrary().unwrap_or(0));
                out.put_u64(u.arbitrary().unwrap_or(0));
            }
            0x02 => out.put_u8(u.int_in_range(0..=2).unwrap_or(0)),
            0x03 => {
                out.put_u8(u.int_in_range(0..=2).unwrap_or(0));
                let data: &[u8] = u.arbitrary().unwrap_or(b"x");
                out.put_len_bytes(data);
            }
            _ => {
                let len = u.int_in_range(0usize..=32).unwrap_or(0);
                out.extend_from_slice(u.bytes(len).unwrap_or(&[]));
            }
        }
    }
}

#[cfg(feature = "arbitrary")]
pub use structured::{command_decode, frame_roundtrip};
