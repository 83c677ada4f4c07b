//! RFC 6455 framing, the server's side, as pure state machines: [`Inbound`] turns a client's
//! masked frames into the phux byte stream the engine reads, [`Outbound`] turns the engine's
//! byte stream (whole phux frames, one after another) into unmasked binary messages, one per
//! phux frame.
//!
//! Neither allocates from a length the peer chose: a data frame's payload streams through
//! (only a control frame's ≤ 125 bytes are held), and the one-frame-per-message rule is
//! checked on the running count of payload bytes against the phux header's length.

use phux_proto::framing::{LENGTH_LEN, MAX_FRAME_LEN};
use serde::{Deserialize, Serialize};

/// The largest WebSocket message we take or send: one phux frame of the largest length
/// (its 4-byte length field plus `MAX_FRAME_LEN`). A frame header announcing more is refused
/// at once, before any of its payload is read.
pub const MAX_MESSAGE_LEN: u64 = LENGTH_LEN as u64 + MAX_FRAME_LEN as u64;

/// A control frame's payload limit (RFC 6455 §5.5).
const MAX_CONTROL_LEN: usize = 125;

/// The longest control frame the server sends: a 2-byte header and the largest payload.
pub const MAX_CONTROL_FRAME_LEN: usize = 2 + MAX_CONTROL_LEN;

/// The longest client frame header: 2 bytes, an 8-byte extended length, a 4-byte mask.
const MAX_CLIENT_HEADER_LEN: usize = 14;

/// The longest server frame header: 2 bytes, then an 8-byte extended length.
pub const MAX_HEADER_LEN: usize = 10;

/// Close status codes (RFC 6455 §7.4.1) we send.
pub mod close {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The peer broke the framing rules.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// A text message: phux speaks binary only.
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// A message that is not exactly one phux frame.
    pub const POLICY: u16 = 1008;
    /// A message larger than one phux frame can be.
    pub const TOO_BIG: u16 = 1009;
}

/// Why a client's WebSocket stream was refused. Each maps to the close code the server
/// sends before it ends the connection ([`Self::close_code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum WsError {
    /// [WS.FRAME.2] A client frame without a mask.
    #[error("a client frame was not masked")]
    Unmasked,
    /// A reserved bit set without a negotiated extension.
    #[error("a reserved bit was set (no extension was negotiated)")]
    ReservedBits,
    /// An opcode RFC 6455 does not define.
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    /// A control frame fragmented or longer than 125 bytes.
    #[error("a control frame was fragmented or longer than 125 bytes")]
    BadControl,
    /// A continuation frame with no message begun, or a new message before the last ended.
    #[error("a fragment out of order")]
    FragmentOrder,
    /// [WS.FRAME.3] A text message: phux frames travel in binary messages.
    #[error("a text message (phux frames travel in binary messages)")]
    TextMessage,
    /// [WS.FRAME.4] A frame or message announcing more than one phux frame can hold.
    #[error("a message longer than the largest phux frame")]
    TooBig,
    /// [WS.FRAME.1] A binary message that ends before, or goes on after, the one phux frame
    /// its first bytes announce.
    #[error("a binary message must carry exactly one phux frame")]
    NotOneFrame,
    /// An extended length that is not minimal, or has its top bit set.
    #[error("a malformed payload length")]
    BadLength,
}

impl WsError {
    /// The close code the server answers this with.
    pub fn close_code(self) -> u16 {
        match self {
            Self::TextMessage => close::UNSUPPORTED_DATA,
            Self::TooBig => close::TOO_BIG,
            Self::NotOneFrame => close::POLICY,
            _ => close::PROTOCOL_ERROR,
        }
    }
}

/// What one [`Inbound::decode`] call found besides payload bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// A ping whose payload the pong must carry.
    Ping(Vec<u8>),
    /// The client's close: answer it and end.
    Close,
}

/// Where the decoder is inside the client's frame stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
enum Phase {
    /// Before a frame header (its bytes gather in `head`).
    #[default]
    Header,
    /// Inside a data frame's payload.
    Data { left: u64, mask: [u8; 4], at: u8 },
    /// Inside a control frame's payload (gathered in `control`).
    Control { op: u8, left: u8, mask: [u8; 4] },
}

/// The client-to-server direction: masked frames in, the phux byte stream out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    phase: Phase,
    /// A frame header's bytes seen so far (at most 14).
    head: Vec<u8>,
    /// A control frame's payload so far (at most 125).
    control: Vec<u8>,
    /// Inside a binary message (after its first frame, before its FIN).
    in_message: bool,
    /// The current message's FIN: whether the frame being read ends it.
    fin: bool,
    /// The first bytes of the message's phux frame (its length field), until all 4 came.
    length_field: Vec<u8>,
    /// The message's payload bytes so far.
    got: u64,
    /// What the phux frame's length field announces, in message bytes (`4 + length`).
    want: Option<u64>,
    /// A fatal error: everything after it is ignored.
    failed: Option<WsError>,
}

impl Inbound {
    /// Decodes as much of `input` as it can, appending payload bytes to `out`; returns how
    /// many input bytes it consumed and the control frame it stopped at, if any (the caller
    /// answers it, then calls again with the rest). A payload never outgrows the input it
    /// came in, so `out` grows by at most `input.len()`.
    pub fn decode(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, Option<Control>), WsError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let result = self.decode_inner(input, out);
        if let Err(e) = result {
            self.failed = Some(e);
        }
        result
    }

    /// Whether this is a state decoding can reach: every buffer within its bound, every count
    /// within a message's. An upgrade's image carries it ([WS.UPGRADE.2]), and the next image
    /// must not hold more than a live decoder ever does.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.head.len() >= MAX_CLIENT_HEADER_LEN {
            return Err("a frame header longer than any");
        }
        if self.control.len() > MAX_CONTROL_LEN {
            return Err("a control payload longer than 125 bytes");
        }
        if self.length_field.len() > LENGTH_LEN {
            return Err("a phux length field longer than 4 bytes");
        }
        if self.got > MAX_MESSAGE_LEN || self.want.is_some_and(|w| w > MAX_MESSAGE_LEN) {
            return Err("a message longer than the largest phux frame");
        }
        match self.phase {
            Phase::Control { left, .. }
                if usize::from(left) + self.control.len() > MAX_CONTROL_LEN =>
            {
                Err("a control payload longer than 125 bytes")
            }
            Phase::Data { left, at, .. } if left > MAX_MESSAGE_LEN || at > 3 => {
                Err("a data frame longer than the largest phux frame")
            }
            _ => Ok(()),
        }
    }

    fn decode_inner(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, Option<Control>), WsError> {
        let mut used = 0;
        while used < input.len() {
            let rest = input.get(used..).unwrap_or_default();
            match self.phase.clone() {
                Phase::Header => {
                    let (took, done) = self.gather_header(rest)?;
                    used += took;
                    if let Some(control) = done {
                        return Ok((used, Some(control)));
                    }
                }
                Phase::Data { left, mask, at } => {
                    let n = rest.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    let start = out.len();
                    out.extend(rest.iter().take(n));
                    let tail = out.get_mut(start..).unwrap_or_default();
                    for (i, b) in tail.iter_mut().enumerate() {
                        *b ^= mask[(usize::from(at) + i) % 4];
                    }
                    // [WS.FRAME.1] Exactly one phux frame per message: the bytes past it are
                    // refused before they reach the engine.
                    self.account(out, start)?;
                    used += n;
                    let left = left - n as u64;
                    if left == 0 {
                        self.phase = Phase::Header;
                        self.end_data_frame()?;
                    } else {
                        self.phase = Phase::Data {
                            left,
                            mask,
                            at: ((usize::from(at) + n) % 4) as u8,
                        };
                    }
                }
                Phase::Control { op, left, mask } => {
                    let n = rest.len().min(usize::from(left));
                    let from = self.control.len();
                    self.control.extend(rest.iter().take(n));
                    for (i, b) in self.control.iter_mut().enumerate().skip(from) {
                        *b ^= mask[i % 4];
                    }
                    used += n;
                    let left = left - n as u8;
                    if left == 0 {
                        self.phase = Phase::Header;
                        if let Some(control) = self.end_control(op) {
                            return Ok((used, Some(control)));
                        }
                    } else {
                        self.phase = Phase::Control { op, left, mask };
                    }
                }
            }
        }
        Ok((used, None))
    }

    /// Gathers a frame header; once whole, checks it and enters its payload. A control frame
    /// with an empty payload is complete at once.
    fn gather_header(&mut self, rest: &[u8]) -> Result<(usize, Option<Control>), WsError> {
        let mut took = 0;
        for &b in rest {
            self.head.push(b);
            took += 1;
            if let Some(need) = header_len(&self.head)
                && self.head.len() == need
            {
                let done = self.enter_frame()?;
                return Ok((took, done));
            }
        }
        Ok((took, None))
    }

    fn enter_frame(&mut self) -> Result<Option<Control>, WsError> {
        let head = std::mem::take(&mut self.head);
        let (b0, b1) = (
            head.first().copied().unwrap_or(0),
            head.get(1).copied().unwrap_or(0),
        );
        let fin = b0 & 0x80 != 0;
        let op = b0 & 0x0f;
        if b0 & 0x70 != 0 {
            return Err(WsError::ReservedBits);
        }
        // [WS.FRAME.2]
        if b1 & 0x80 == 0 {
            return Err(WsError::Unmasked);
        }
        let len = payload_len(&head)?;
        let mask_at = head.len() - 4;
        let mut mask = [0u8; 4];
        mask.copy_from_slice(head.get(mask_at..).unwrap_or(&[0; 4]));
        match op {
            0x8..=0xa => {
                if !fin || len > MAX_CONTROL_LEN as u64 {
                    return Err(WsError::BadControl);
                }
                self.control.clear();
                if len == 0 {
                    return Ok(self.end_control(op));
                }
                self.phase = Phase::Control {
                    op,
                    left: len as u8,
                    mask,
                };
                Ok(None)
            }
            0x0 | 0x2 => {
                if (op == 0x0) != self.in_message {
                    return Err(WsError::FragmentOrder);
                }
                // [WS.FRAME.4] A length no phux frame can have is refused on sight, so a
                // giant header costs nothing.
                if self.got.saturating_add(len) > MAX_MESSAGE_LEN {
                    return Err(WsError::TooBig);
                }
                if op == 0x2 {
                    self.in_message = true;
                    self.got = 0;
                    self.want = None;
                    self.length_field.clear();
                }
                self.fin = fin;
                if len == 0 {
                    self.end_data_frame()?;
                } else {
                    self.phase = Phase::Data {
                        left: len,
                        mask,
                        at: 0,
                    };
                }
                Ok(None)
            }
            // [WS.FRAME.3]
            0x1 => Err(WsError::TextMessage),
            other => Err(WsError::UnknownOpcode(other)),
        }
    }

    /// Counts the payload bytes `out[start..]` just got against the phux frame's length.
    fn account(&mut self, out: &mut Vec<u8>, start: usize) -> Result<(), WsError> {
        let fresh = out.len() - start;
        for &b in out.get(start..).unwrap_or_default() {
            if self.length_field.len() < LENGTH_LEN {
                self.length_field.push(b);
            }
        }
        if self.want.is_none() && self.length_field.len() == LENGTH_LEN {
            let mut be = [0u8; LENGTH_LEN];
            be.copy_from_slice(&self.length_field);
            self.want = Some(LENGTH_LEN as u64 + u64::from(u32::from_be_bytes(be)));
        }
        self.got += fresh as u64;
        if let Some(want) = self.want
            && self.got > want
        {
            let over = usize::try_from(self.got - want).unwrap_or(usize::MAX);
            out.truncate(out.len().saturating_sub(over));
            return Err(WsError::NotOneFrame);
        }
        Ok(())
    }

    fn end_data_frame(&mut self) -> Result<(), WsError> {
        if !self.fin {
            return Ok(());
        }
        self.in_message = false;
        if self.want != Some(self.got) {
            return Err(WsError::NotOneFrame);
        }
        Ok(())
    }

    fn end_control(&mut self, op: u8) -> Option<Control> {
        let payload = std::mem::take(&mut self.control);
        match op {
            0x8 => Some(Control::Close),
            0x9 => Some(Control::Ping(payload)),
            // A pong: nothing to do (its arrival is traffic, which is what liveness needs).
            _ => None,
        }
    }
}

/// The whole header's length once its first two bytes are in (a client header carries a
/// 4-byte mask); `None` before.
fn header_len(head: &[u8]) -> Option<usize> {
    let b1 = *head.get(1)?;
    let ext = match b1 & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if b1 & 0x80 != 0 { 4 } else { 0 };
    Some(2 + ext + mask)
}

fn payload_len(head: &[u8]) -> Result<u64, WsError> {
    let b1 = head.get(1).copied().unwrap_or(0) & 0x7f;
    match b1 {
        126 => {
            let mut be = [0u8; 2];
            be.copy_from_slice(head.get(2..4).ok_or(WsError::BadLength)?);
            let len = u16::from_be_bytes(be);
            if len < 126 {
                return Err(WsError::BadLength);
            }
            Ok(u64::from(len))
        }
        127 => {
            let mut be = [0u8; 8];
            be.copy_from_slice(head.get(2..10).ok_or(WsError::BadLength)?);
            let len = u64::from_be_bytes(be);
            if u16::try_from(len).is_ok() || len >> 63 != 0 {
                return Err(WsError::BadLength);
            }
            Ok(len)
        }
        n => Ok(u64::from(n)),
    }
}

/// An unmasked server frame header for a payload of `len` bytes.
pub fn server_header(opcode: u8, len: u64) -> ([u8; MAX_HEADER_LEN], usize) {
    let mut h = [0u8; MAX_HEADER_LEN];
    h[0] = 0x80 | opcode;
    if len < 126 {
        h[1] = len as u8;
        (h, 2)
    } else if let Ok(short) = u16::try_from(len) {
        h[1] = 126;
        h[2..4].copy_from_slice(&short.to_be_bytes());
        (h, 4)
    } else {
        h[1] = 127;
        h[2..10].copy_from_slice(&len.to_be_bytes());
        (h, 10)
    }
}

/// A whole control frame from the server (a pong, a close).
pub fn control_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let payload = payload.get(..MAX_CONTROL_LEN).unwrap_or(payload);
    let (h, n) = server_header(opcode, payload.len() as u64);
    let mut frame = Vec::with_capacity(n + payload.len());
    frame.extend_from_slice(h.get(..n).unwrap_or_default());
    frame.extend_from_slice(payload);
    frame
}

/// A close frame with `code` and a `reason` (cut to fit the 125 bytes, at a char boundary).
pub fn close_frame(code: u16, reason: &[u8]) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    let room = MAX_CONTROL_LEN - payload.len();
    let mut cut = reason.len().min(room);
    while cut > 0 && std::str::from_utf8(reason.get(..cut).unwrap_or_default()).is_err() {
        cut -= 1;
    }
    payload.extend_from_slice(reason.get(..cut).unwrap_or_default());
    control_frame(0x8, &payload)
}

/// A pong carrying the ping's payload.
pub fn pong_frame(payload: &[u8]) -> Vec<u8> {
    control_frame(0xa, payload)
}

/// The server-to-client direction: where the engine's byte stream is in its current phux
/// frame, so each frame leaves as one binary message (its header written just before it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbound {
    /// Bytes of the current phux frame not yet handed to the kernel (0: at a boundary).
    left: u64,
}

impl Outbound {
    /// Whether the stream is between two messages (where a control frame may go).
    pub fn at_boundary(&self) -> bool {
        self.left == 0
    }

    /// Bytes of the current message still to go.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// At a boundary: starts the message for the phux frame whose length field is `field`,
    /// returning its header.
    pub fn start(&mut self, field: [u8; LENGTH_LEN]) -> ([u8; MAX_HEADER_LEN], usize) {
        let len = LENGTH_LEN as u64 + u64::from(u32::from_be_bytes(field));
        self.left = len;
        server_header(0x2, len)
    }

    /// `n` payload bytes (at most [`Self::left`]) went out.
    pub fn advance(&mut self, n: u64) {
        self.left = self.left.saturating_sub(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        let mut f = vec![if fin { 0x80 } else { 0 } | opcode];
        let len = payload.len();
        if len < 126 {
            f.push(0x80 | len as u8);
        } else if len <= 0xffff {
            f.push(0x80 | 0x7e);
            f.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            f.push(0x80 | 0x7f);
            f.extend_from_slice(&(len as u64).to_be_bytes());
        }
        f.extend_from_slice(&mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        f
    }

    fn phux_frame(body: &[u8]) -> Vec<u8> {
        let mut f = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        f.push(0x7f);
        f.extend_from_slice(body);
        f
    }

    fn decode_all(input: &[u8], step: usize) -> (Vec<u8>, Vec<Control>, Result<(), WsError>) {
        let mut inbound = Inbound::default();
        let mut out = Vec::new();
        let mut controls = Vec::new();
        let mut at = 0;
        while at < input.len() {
            let end = (at + step).min(input.len());
            let mut piece = &input[at..end];
            while !piece.is_empty() {
                match inbound.decode(piece, &mut out) {
                    Ok((n, c)) => {
                        controls.extend(c);
                        piece = &piece[n..];
                        at += n;
                    }
                    Err(e) => return (out, controls, Err(e)),
                }
            }
        }
        (out, controls, Ok(()))
    }

    #[test]
    fn one_frame_per_message_round_trips_at_every_split() {
        let a = phux_frame(&[1, 2, 3]);
        let b = phux_frame(&vec![9u8; 70_000]);
        let mut wire = masked(0x2, true, &a);
        // The second phux frame in three fragments, with a ping between two of them.
        wire.extend(masked(0x2, false, &b[..10]));
        wire.extend(masked(0x9, true, b"hi"));
        wire.extend(masked(0x0, false, &b[10..300]));
        wire.extend(masked(0x0, true, &b[300..]));
        for step in [1, 2, 3, 7, 64, 1 << 20] {
            let (out, controls, r) = decode_all(&wire, step);
            assert_eq!(r, Ok(()), "step {step}");
            assert_eq!(out, [a.clone(), b.clone()].concat(), "step {step}");
            assert_eq!(controls, vec![Control::Ping(b"hi".to_vec())]);
        }
    }

    #[test]
    fn a_message_with_two_frames_or_half_a_frame_is_refused() {
        let two = [phux_frame(b"ab"), phux_frame(b"cd")].concat();
        let (out, _, r) = decode_all(&masked(0x2, true, &two), 1);
        assert_eq!(r, Err(WsError::NotOneFrame));
        // Only the first frame reached the engine.
        assert_eq!(out, phux_frame(b"ab"));
        let half = &phux_frame(b"abcdef")[..6];
        let (_, _, r) = decode_all(&masked(0x2, true, half), 64);
        assert_eq!(r, Err(WsError::NotOneFrame));
        let (_, _, r) = decode_all(&masked(0x2, true, &[0, 0]), 64);
        assert_eq!(r, Err(WsError::NotOneFrame));
    }

    #[test]
    fn hostile_headers_are_refused_before_any_payload() {
        // A giant length: refused from the header alone.
        let mut giant = vec![0x82, 0x80 | 0x7f];
        giant.extend_from_slice(&(1u64 << 40).to_be_bytes());
        giant.extend_from_slice(&[0; 4]);
        assert_eq!(decode_all(&giant, 64).2, Err(WsError::TooBig));
        assert_eq!(
            decode_all(&[0x82, 0x05, 1, 2, 3, 4, 5], 64).2,
            Err(WsError::Unmasked)
        );
        assert_eq!(
            decode_all(&masked(0x1, true, b"x"), 64).2,
            Err(WsError::TextMessage)
        );
        assert_eq!(
            decode_all(&masked(0x9, false, b"x"), 64).2,
            Err(WsError::BadControl)
        );
        assert_eq!(
            decode_all(&masked(0x9, true, &[0; 126]), 64).2,
            Err(WsError::BadControl)
        );
        assert_eq!(
            decode_all(&masked(0x0, true, b"x"), 64).2,
            Err(WsError::FragmentOrder)
        );
        assert_eq!(
            decode_all(&masked(0x3, true, b"x"), 64).2,
            Err(WsError::UnknownOpcode(3))
        );
        let mut rsv = masked(0x2, true, &phux_frame(b""));
        rsv[0] |= 0x40;
        assert_eq!(decode_all(&rsv, 64).2, Err(WsError::ReservedBits));
        // A 16-bit length used for a short payload is not minimal.
        assert_eq!(
            decode_all(&[0x82, 0x80 | 0x7e, 0, 5, 0, 0, 0, 0], 64).2,
            Err(WsError::BadLength)
        );
    }

    #[test]
    fn a_decoder_stays_failed() {
        let mut inbound = Inbound::default();
        let mut out = Vec::new();
        assert!(inbound.decode(&masked(0x1, true, b"x"), &mut out).is_err());
        let good = masked(0x2, true, &phux_frame(b""));
        assert_eq!(inbound.decode(&good, &mut out), Err(WsError::TextMessage));
        assert!(out.is_empty());
    }

    #[test]
    fn close_and_ping_are_reported() {
        let (_, controls, r) = decode_all(&masked(0x8, true, &1000u16.to_be_bytes()), 1);
        assert_eq!(r, Ok(()));
        assert_eq!(controls, vec![Control::Close]);
        let (_, controls, _) = decode_all(&masked(0x9, true, b""), 64);
        assert_eq!(controls, vec![Control::Ping(Vec::new())]);
    }

    #[test]
    fn server_headers_use_the_minimal_length() {
        assert_eq!(&server_header(2, 5).0[..2], &[0x82, 5]);
        let (h, n) = server_header(2, 300);
        assert_eq!(&h[..n], &[0x82, 126, 0x01, 0x2c]);
        let (h, n) = server_header(2, 70_000);
        assert_eq!(n, 10);
        assert_eq!(&h[2..10], &70_000u64.to_be_bytes());
        let mut out = Outbound::default();
        let (h, n) = out.start(3u32.to_be_bytes());
        assert_eq!(&h[..n], &[0x82, 7]);
        assert_eq!(out.left(), 7);
        out.advance(7);
        assert!(out.at_boundary());
    }
}
