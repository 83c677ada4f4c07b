//! `FrameDecoder`: incremental framing of a byte stream into frames.
//!
//! Feed it chunks of any size; it yields the same frames whether the stream arrives a byte at
//! a time or a megabyte at a time. A framing error (a declared length of 0 or over 16 MiB) is
//! reported as soon as the 4 length bytes are in, before any of the body is buffered, and
//! fuses the decoder: the stream cannot be resynchronised. A frame whose framing is intact but
//! whose body does not decode is reported and skipped; the decoder goes on with the next one.

use bytes::{Buf, BytesMut};
use phux_proto::Frame;
use phux_proto::decode_error::DecodeError;
use phux_proto::framing;

/// Splits a byte stream into decoded frames.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: BytesMut,
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
        if self.failed.is_none() {
            self.buf.extend_from_slice(bytes);
        }
    }

    /// The next frame: `Ok(None)` = need more bytes; `Err` = this frame is bad. After an
    /// error for which [`DecodeError::is_framing`] holds, every later call returns it again.
    pub fn poll_frame(&mut self) -> Result<Option<Frame>, DecodeError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        // [FRAME.LENGTH.1] The length is checked before the body is waited for or buffered.
        let header = match framing::parse_header(&self.buf) {
            Ok(Some(header)) => header,
            Ok(None) => return Ok(None),
            Err(err) => {
                self.buf = BytesMut::new();
                self.failed = Some(err.clone());
                return Err(err);
            }
        };
        let total = header.frame_len();
        if self.buf.len() < total {
            return Ok(None);
        }
        let result = Frame::decode(&self.buf[..total]);
        self.buf.advance(total);
        if self.buf.is_empty() {
            // Give a large frame's memory back instead of keeping it for the connection's life.
            self.buf = BytesMut::new();
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

    /// Bytes buffered and not yet framed.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether a framing error has fused the decoder.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }
}
