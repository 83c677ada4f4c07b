//! The frame header: `length u32 BE` (type byte + body) then `type u8`.

use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::frame_type::FrameType;

/// Header bytes: the 4-byte length and the type byte.
pub const HEADER_LEN: usize = 5;

/// The length field's width.
pub const LENGTH_LEN: usize = 4;

/// The largest `length`: 16 MiB, phux 0.8's cap, so a receiver's buffer per connection is
/// bounded no matter what a peer declares.
pub const MAX_FRAME_LEN: u32 = 16 * 1024 * 1024;

/// A parsed header.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FrameHeader {
    /// The declared length: type byte plus body (`1..=MAX_FRAME_LEN`).
    pub length: u32,
    /// The type byte.
    pub frame_type: FrameType,
}

impl FrameHeader {
    /// The whole frame's size: `4 + length`.
    pub fn frame_len(&self) -> usize {
        LENGTH_LEN + self.length as usize
    }

    /// The body's size: `length - 1`.
    pub fn body_len(&self) -> usize {
        self.length as usize - 1
    }
}

/// Checks a declared length.
pub(crate) fn check_length(length: u32) -> Result<(), DecodeError> {
    // [FRAME.LENGTH.1] The length is 1..=16 MiB; anything else is a framing violation.
    if length == 0 || length > MAX_FRAME_LEN {
        return Err(DecodeError::new(DecodeErrorKind::FrameLength {
            len: length,
        }));
    }
    Ok(())
}

/// Parses the header at the start of `buf`: `Ok(None)` when more bytes are needed, `Err` for
/// a length outside `1..=16 MiB` (reported as soon as the 4 length bytes are in, so a bad
/// stream fails before its type byte arrives).
pub fn parse_header(buf: &[u8]) -> Result<Option<FrameHeader>, DecodeError> {
    let Some(len_bytes) = buf.first_chunk::<LENGTH_LEN>() else {
        return Ok(None);
    };
    let length = u32::from_be_bytes(*len_bytes);
    check_length(length)?;
    Ok(buf.get(LENGTH_LEN).map(|&tag| FrameHeader {
        length,
        frame_type: FrameType(tag),
    }))
}

/// Appends the length prefix, the type byte and the body `body` writes.
pub(crate) fn encode_framed(
    out: &mut Vec<u8>,
    frame_type: FrameType,
    body: impl FnOnce(&mut Vec<u8>),
) {
    let start = out.len();
    out.extend_from_slice(&[0; LENGTH_LEN]);
    out.push(frame_type.0);
    body(out);
    // [FRAME.HEADER.1] The length counts the type byte and body, not itself.
    let length = (out.len() - start - LENGTH_LEN) as u32;
    out[start..start + LENGTH_LEN].copy_from_slice(&length.to_be_bytes());
}

/// Checks one whole frame's header against its length and splits off the body, as
/// [`Frame::decode`] does before decoding the body.
pub(crate) fn split_frame(frame: &[u8]) -> Result<(FrameType, &[u8]), DecodeError> {
    let Some(len_bytes) = frame.first_chunk::<LENGTH_LEN>() else {
        return Err(DecodeError::new(DecodeErrorKind::FrameTruncated {
            needed: LENGTH_LEN,
            available: frame.len(),
        }));
    };
    let length = u32::from_be_bytes(*len_bytes);
    check_length(length)?;
    let needed = LENGTH_LEN + length as usize;
    let frame_type = frame.get(LENGTH_LEN).copied().map(FrameType);
    let with_type = |e: DecodeError| match frame_type {
        Some(t) => e.with_frame(t),
        None => e,
    };
    if frame.len() < needed {
        return Err(with_type(DecodeError::new(
            DecodeErrorKind::FrameTruncated {
                needed,
                available: frame.len(),
            },
        )));
    }
    if frame.len() > needed {
        return Err(with_type(DecodeError::new(
            DecodeErrorKind::TrailingBytes {
                extra: frame.len() - needed,
            },
        )));
    }
    Ok((FrameType(frame[LENGTH_LEN]), &frame[HEADER_LEN..]))
}

/// `bytes` cut where the frames it holds end, by their declared lengths: each whole frame,
/// then what is left (not a whole frame, or from a zero length on) as one piece. What a
/// transport of one message per frame (WebSocket) sends for bytes a client wrote in one go; a
/// cut a peer must refuse stays in the rest, for the peer to see as it was written.
pub fn frame_pieces(bytes: &[u8]) -> Vec<&[u8]> {
    let mut pieces = Vec::new();
    let mut rest = bytes;
    while let Some(len) = rest
        .first_chunk::<LENGTH_LEN>()
        .map(|b| u32::from_be_bytes(*b))
    {
        let total = LENGTH_LEN + len as usize;
        if len == 0 || rest.len() < total {
            break;
        }
        let (frame, after) = rest.split_at(total);
        pieces.push(frame);
        rest = after;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_cut_into_their_frames_and_a_rest() {
        let a = [0, 0, 0, 2, 0x7f, 1];
        let b = [0, 0, 0, 1, 0x7e];
        let both = [&a[..], &b[..], &[0, 0, 0, 9, 1][..]].concat();
        assert_eq!(
            frame_pieces(&both),
            vec![&a[..], &b[..], &[0, 0, 0, 9, 1][..]]
        );
        assert_eq!(frame_pieces(&[0, 0]), vec![&[0, 0][..]]);
        assert_eq!(frame_pieces(&[0, 0, 0, 0, 1]), vec![&[0, 0, 0, 0, 1][..]]);
        assert!(frame_pieces(&[]).is_empty());
    }

    // [FRAME.LENGTH.1]
    #[test]
    fn header_needs_five_bytes_and_a_legal_length() {
        assert_eq!(parse_header(&[]), Ok(None));
        assert_eq!(parse_header(&[0, 0, 0]), Ok(None));
        assert_eq!(parse_header(&[0, 0, 0, 1]), Ok(None));
        let header = parse_header(&[0, 0, 0, 1, 0x03]).unwrap().unwrap();
        assert_eq!(header.frame_type, FrameType::DETACH);
        assert_eq!(header.frame_len(), 5);
        assert_eq!(header.body_len(), 0);
        for bad in [[0, 0, 0, 0], [0x01, 0, 0, 1], [0xff; 4]] {
            let err = parse_header(&bad).unwrap_err();
            assert!(err.is_framing());
            assert_eq!(err.code(), crate::error_code::ErrorCode::FRAME_TOO_LARGE);
        }
        assert!(parse_header(&[0x01, 0, 0, 0, 0x90]).unwrap().is_some());
    }
}
