//! `FrameDecoder`: incremental framing of a byte stream into frames.
//!
//! Feed it chunks of any size; it yields the same frames whether the stream arrives a byte at
//! a time or a megabyte at a time. A framing error (a declared length of 0 or over 16 MiB) is
//! reported as soon as the 4 length bytes are in, before any of the body is buffered, and
//! fuses the decoder: the stream cannot be resynchronised. A frame whose framing is intact but
//! whose body does not decode is reported and skipped; the decoder goes on with the next one.

use phux_proto::Frame;
use phux_proto::decode_error::DecodeError;
use phux_proto::framing;

/// An emptied buffer up to this size is kept for the next frame: most requests fit in it, and
/// each would otherwise cost an allocation and a free. A larger one is given back, so a big
/// frame's memory is not held for the connection's life.
const KEEP_CAPACITY: usize = 4096;

/// Splits a byte stream into decoded frames.
#[derive(Clone, Debug, Default)]
pub struct FrameDecoder {
    /// Received bytes; those before `start` are already framed.
    buf: Vec<u8>,
    start: usize,
    failed: Option<DecodeError>,
}

impl FrameDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes. Call [`FrameDecoder::poll_frame`] until it returns `Ok(None)`
    /// before pushing again, so the buffer never holds more than one frame plus one read.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        // Only an incomplete frame's bytes remain before a push: move them to the front.
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next frame: `Ok(None)` = need more bytes; `Err` = this frame is bad. After an
    /// error for which [`DecodeError::is_framing`] holds, every later call returns it again.
    pub fn poll_frame(&mut self) -> Result<Option<Frame>, DecodeError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let pending = self.buf.get(self.start..).unwrap_or_default();
        // [FRAME.LENGTH.1] The length is checked before the body is waited for or buffered.
        let header = match framing::parse_header(pending) {
            Ok(Some(header)) => header,
            Ok(None) => return Ok(None),
            Err(err) => {
                self.buf = Vec::new();
                self.start = 0;
                self.failed = Some(err.clone());
                return Err(err);
            }
        };
        let total = header.frame_len();
        let Some(frame) = pending.get(..total) else {
            return Ok(None);
        };
        let result = Frame::decode(frame);
        self.start += total;
        if self.start == self.buf.len() {
            if self.buf.capacity() > KEEP_CAPACITY {
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
            self.start = 0;
        }
        match result {
            Ok(frame) => Ok(Some(frame)),
            Err(err) if err.is_framing() => {
                self.failed = Some(err.clone());
                Err(err)
            }
            Err(err) => Err(err),
        }
    }

    /// Whether [`FrameDecoder::poll_frame`] would return a frame or an error now, without
    /// more bytes: a caller that stopped polling early knows there is more to take.
    pub fn has_frame(&self) -> bool {
        if self.failed.is_some() {
            return true;
        }
        let pending = self.buf.get(self.start..).unwrap_or_default();
        match framing::parse_header(pending) {
            Ok(Some(header)) => pending.len() >= header.frame_len(),
            Ok(None) => false,
            Err(_) => true,
        }
    }

    /// Bytes buffered and not yet framed.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether a framing error has fused the decoder.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }
}

/// A decoder as data: the bytes not yet framed and whether it is fused. Only a closed
/// connection has a fused decoder, and a closed connection's decoder is never read again, so
/// the error it fused on is not carried: a fused decoder reads back fused with a framing error
/// of its own.
#[derive(serde::Serialize, serde::Deserialize)]
struct DecoderState {
    #[serde(with = "phux_term::bytes")]
    pending: Vec<u8>,
    fused: bool,
}

impl serde::Serialize for FrameDecoder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DecoderState {
            pending: self.buf.get(self.start..).unwrap_or_default().to_vec(),
            fused: self.failed.is_some(),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for FrameDecoder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let state = DecoderState::deserialize(d)?;
        let failed = state.fused.then(|| {
            DecodeError::new(phux_proto::decode_error::DecodeErrorKind::FrameLength { len: 0 })
        });
        Ok(Self {
            buf: state.pending,
            start: 0,
            failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_proto::ErrorCode;
    use phux_proto::frame::{Ping, Pong};
    use proptest::prelude::*;

    fn frames(n: u64) -> (Vec<Frame>, Vec<u8>) {
        let frames: Vec<Frame> = (0..n)
            .map(|i| {
                if i % 2 == 0 {
                    Frame::Ping(Ping { nonce: i })
                } else {
                    Frame::Pong(Pong { nonce: i })
                }
            })
            .collect();
        let bytes = frames.iter().flat_map(Frame::to_bytes).collect();
        (frames, bytes)
    }

    fn drain(decoder: &mut FrameDecoder) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Ok(Some(frame)) = decoder.poll_frame() {
            out.push(frame);
        }
        out
    }

    proptest! {
        // [FRAME.STREAM.1] The same frames whatever the read split.
        #[test]
        fn any_chunking_yields_the_same_frames(n in 1u64..20, cuts in proptest::collection::vec(1usize..64, 0..40)) {
            let (expected, bytes) = frames(n);
            let mut decoder = FrameDecoder::new();
            let mut got = Vec::new();
            let mut rest = &bytes[..];
            for cut in cuts {
                let take = cut.min(rest.len());
                decoder.push(&rest[..take]);
                rest = &rest[take..];
                got.extend(drain(&mut decoder));
            }
            decoder.push(rest);
            got.extend(drain(&mut decoder));
            prop_assert_eq!(got, expected);
            prop_assert_eq!(decoder.buffered(), 0);
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let (expected, bytes) = frames(5);
        let mut decoder = FrameDecoder::new();
        let mut got = Vec::new();
        for b in bytes {
            decoder.push(&[b]);
            got.extend(drain(&mut decoder));
        }
        assert_eq!(got, expected);
    }

    // [FRAME.LENGTH.2] An oversized length is refused from its 4 bytes, before any body.
    #[test]
    fn oversized_length_fails_before_the_body_and_fuses() {
        let mut decoder = FrameDecoder::new();
        decoder.push(&[0x01, 0x00, 0x00, 0x01]);
        let err = decoder.poll_frame().unwrap_err();
        assert_eq!(err.code(), ErrorCode::FRAME_TOO_LARGE);
        assert!(decoder.is_failed());
        assert_eq!(decoder.buffered(), 0);
        // [FRAME.VIOLATION.2] Nothing after a framing violation is looked at.
        decoder.push(&Frame::Ping(Ping { nonce: 1 }).to_bytes());
        assert_eq!(decoder.buffered(), 0);
        assert!(decoder.poll_frame().is_err());
    }

    #[test]
    fn zero_length_is_a_framing_error() {
        let mut decoder = FrameDecoder::new();
        decoder.push(&[0, 0, 0, 0]);
        assert_eq!(
            decoder.poll_frame().unwrap_err().code(),
            ErrorCode::FRAME_TOO_LARGE
        );
    }

    // [ERROR.COMMAND.1] A whole frame whose body does not decode is reported and skipped; the
    // stream stays in sync.
    #[test]
    fn a_bad_body_is_skipped_and_the_next_frame_decodes() {
        let mut decoder = FrameDecoder::new();
        // COMMAND{request_id 1, tag 0x7f}: an unknown command.
        decoder.push(&[
            0, 0, 0, 0x0c, 0x31, 0x01, 0x04, 0x04, 0, 0, 0, 1, 0x02, 0x04, 0x01, 0x7f,
        ]);
        decoder.push(&Frame::Ping(Ping { nonce: 9 }).to_bytes());
        let err = decoder.poll_frame().unwrap_err();
        assert_eq!(err.code(), ErrorCode::INVALID_COMMAND);
        assert_eq!(err.request_id(), Some(1));
        assert!(!decoder.is_failed());
        assert_eq!(
            decoder.poll_frame().unwrap(),
            Some(Frame::Ping(Ping { nonce: 9 }))
        );
    }

    #[test]
    fn a_small_buffer_is_reused_and_a_large_one_given_back() {
        let mut decoder = FrameDecoder::new();
        let ping = Frame::Ping(Ping { nonce: 1 }).to_bytes();
        decoder.push(&ping);
        assert!(matches!(decoder.poll_frame(), Ok(Some(Frame::Ping(_)))));
        let kept = decoder.buf.capacity();
        assert!(kept >= ping.len(), "the small buffer is kept: {kept}");
        decoder.push(&ping);
        assert_eq!(decoder.buf.capacity(), kept, "and reused");
        assert!(matches!(decoder.poll_frame(), Ok(Some(Frame::Ping(_)))));
        // A frame larger than the kept size (a COMMAND whose body does not decode), then a
        // small one in the same read: the memory goes once both are taken.
        let body = 2 * KEEP_CAPACITY as u32;
        let mut read = body.to_be_bytes().to_vec();
        read.push(0x31);
        read.resize(4 + body as usize, 0);
        read.extend_from_slice(&ping);
        decoder.push(&read);
        assert!(decoder.poll_frame().is_err());
        assert!(!decoder.is_failed());
        assert!(matches!(decoder.poll_frame(), Ok(Some(Frame::Ping(_)))));
        assert_eq!(decoder.buf.capacity(), 0);
        assert_eq!(decoder.buffered(), 0);
    }

    // [FRAME.STREAM.2] A declared-but-missing body is not reserved up front: memory grows only
    // with bytes that actually arrive.
    #[test]
    fn a_huge_declared_frame_does_not_reserve_its_length() {
        let mut decoder = FrameDecoder::new();
        decoder.push(&[0x01, 0x00, 0x00, 0x00, 0x90]);
        assert_eq!(decoder.poll_frame().unwrap(), None);
        assert!(
            decoder.buf.capacity() < 4096,
            "capacity {}",
            decoder.buf.capacity()
        );
    }
}
