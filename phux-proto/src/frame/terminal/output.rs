//! TERMINAL_OUTPUT (0x90): the owned frame, and the borrowed forms the server fans out
//! (`TerminalOutputRef`, `TerminalOutputTail`) and a client reads (`TerminalOutputView`).

use crate::ids::{BootstrapId, StreamId, TerminalId};

/// TERMINAL_OUTPUT (0x90, S→C): 1 terminal, 2 seq, 3 bytes (raw), 4 stream, 5 bootstrap.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalOutput {
    /// The terminal.
    pub terminal: TerminalId,
    /// Contiguous per (terminal, stream, bootstrap); the first live seq is `base_seq + 1`.
    pub seq: u64,
    /// The output bytes.
    pub bytes: Vec<u8>,
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

// ---- codec ----

use super::value::{bootstrap_value, stream_value, u64_value};
use crate::atoms::{Result, Wire, pos};
use crate::field::{Fields, Put, WIRE_TYPE_BYTES, once, required};
use crate::frame_type::FrameType;
use crate::framing::{LENGTH_LEN, encode_framed, split_frame};

impl TerminalOutput {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        TerminalOutputView::decode_body(body).map(TerminalOutputView::into_owned)
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        self.borrowed().encode_body(out);
    }

    /// The same frame with its bytes borrowed.
    pub fn borrowed(&self) -> TerminalOutputRef<'_> {
        TerminalOutputRef {
            terminal: &self.terminal,
            seq: self.seq,
            bytes: &self.bytes,
            stream: self.stream,
            bootstrap: self.bootstrap,
        }
    }
}

/// A TERMINAL_OUTPUT whose bytes are borrowed: a server fanning one chunk of output out to
/// many viewers encodes it for each without first copying the chunk into an owned frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TerminalOutputRef<'a> {
    /// The terminal.
    pub terminal: &'a TerminalId,
    /// See [`TerminalOutput::seq`].
    pub seq: u64,
    /// The output bytes.
    pub bytes: &'a [u8],
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

impl TerminalOutputRef<'_> {
    /// Appends the whole frame: byte for byte what [`Frame::TerminalOutput`] encodes.
    ///
    /// [`Frame::TerminalOutput`]: crate::frame::Frame::TerminalOutput
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_framed(out, FrameType::TERMINAL_OUTPUT, |out| {
            self.encode_body(out);
        });
    }

    /// Appends the frame up to and including its bytes: everything but the stream and
    /// bootstrap, which come last. Every viewer of one chunk gets the same head, so a server
    /// encodes it once and sends each viewer the head followed by its own [`Self::tail`].
    /// The length prefix already counts that tail.
    pub fn encode_head(&self, out: &mut Vec<u8>) {
        let start = out.len();
        encode_framed(out, FrameType::TERMINAL_OUTPUT, |out| {
            self.encode_shared_fields(out);
        });
        let length = (out.len() - start - LENGTH_LEN + TerminalOutputTail::LEN) as u32;
        out[start..start + LENGTH_LEN].copy_from_slice(&length.to_be_bytes());
    }

    /// The frame's last bytes, after [`Self::encode_head`]: the stream and bootstrap fields.
    pub fn tail(&self) -> TerminalOutputTail {
        TerminalOutputTail::new(self.stream, self.bootstrap)
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        self.encode_shared_fields(out);
        out.extend_from_slice(self.tail().as_bytes());
    }

    fn encode_shared_fields(&self, out: &mut Vec<u8>) {
        out.reserve(self.bytes.len() + 48);
        out.put_field_with(1, |o| self.terminal.write(o));
        out.put_field(2, &self.seq.to_be_bytes());
        out.put_field(3, self.bytes);
    }
}

/// The end of a TERMINAL_OUTPUT: fields 4 (stream) and 5 (bootstrap), the only part that
/// differs between the viewers of one chunk. Fixed-size, so a server keeps one per viewer
/// without allocating.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TerminalOutputTail([u8; 2 * U64_FIELD_LEN]);

impl TerminalOutputTail {
    /// Its length: two fields of a one-byte id, the wire type, a one-byte length and a u64.
    pub const LEN: usize = 2 * U64_FIELD_LEN;

    /// The tail for one viewer's stream and bootstrap.
    pub fn new(stream: StreamId, bootstrap: BootstrapId) -> Self {
        let mut tail = [0; Self::LEN];
        let (stream_field, bootstrap_field) = tail.split_at_mut(U64_FIELD_LEN);
        u64_field(stream_field, 4, stream.get());
        u64_field(bootstrap_field, 5, bootstrap.get());
        Self(tail)
    }

    /// The encoded fields.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A field with a one-byte id holding a big-endian u64.
const U64_FIELD_LEN: usize = 3 + 8;

/// Writes a field with a one-byte id (< 0x80, so its varint is itself) holding `v`: what
/// [`Put::put_field`] writes for it.
fn u64_field(out: &mut [u8], id: u8, v: u64) {
    let (header, value) = out.split_at_mut(3);
    header.copy_from_slice(&[id, WIRE_TYPE_BYTES, 8]);
    value.copy_from_slice(&v.to_be_bytes());
}

/// A TERMINAL_OUTPUT decoded without copying its bytes: a client that hands output straight
/// to its own screen, or only looks for something in it, needs no owned frame per chunk.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TerminalOutputView<'a> {
    /// The terminal.
    pub terminal: TerminalId,
    /// See [`TerminalOutput::seq`].
    pub seq: u64,
    /// The output bytes, borrowed from the frame.
    pub bytes: &'a [u8],
    /// The stream.
    pub stream: StreamId,
    /// The bootstrap this output follows.
    pub bootstrap: BootstrapId,
}

impl<'a> TerminalOutputView<'a> {
    /// Decodes one whole frame, checked as [`Frame::decode`] checks it, if it is a
    /// TERMINAL_OUTPUT; `Ok(None)` for a well-framed frame of any other type.
    ///
    /// [`Frame::decode`]: crate::frame::Frame::decode
    pub fn decode(frame: &'a [u8]) -> Result<Option<Self>> {
        let (frame_type, body) = split_frame(frame)?;
        if frame_type != FrameType::TERMINAL_OUTPUT {
            return Ok(None);
        }
        Self::decode_body(body)
            .map(Some)
            .map_err(|e| e.with_frame(frame_type))
    }

    fn decode_body(body: &'a [u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut terminal, mut seq, mut bytes, mut stream, mut bootstrap) =
            (None, None, None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut terminal, id, "terminal", || pos(v))?,
                2 => once(&mut seq, id, "seq", || u64_value(v))?,
                3 => once(&mut bytes, id, "bytes", || Ok(v))?,
                4 => once(&mut stream, id, "stream", || stream_value(v))?,
                5 => once(&mut bootstrap, id, "bootstrap", || bootstrap_value(v))?,
                _ => {}
            }
        }
        Ok(Self {
            terminal: required(terminal, "terminal")?,
            seq: required(seq, "seq")?,
            bytes: required(bytes, "bytes")?,
            stream: required(stream, "stream")?,
            bootstrap: required(bootstrap, "bootstrap")?,
        })
    }

    /// The owned frame, its bytes copied.
    pub fn into_owned(self) -> TerminalOutput {
        TerminalOutput {
            terminal: self.terminal,
            seq: self.seq,
            bytes: self.bytes.to_vec(),
            stream: self.stream,
            bootstrap: self.bootstrap,
        }
    }
}
