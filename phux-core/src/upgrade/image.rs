//! The upgrade image's bytes, the one place that decides them.
//!
//! Layout: the 8 magic bytes [`MAGIC`], the state version (`u32`, little-endian), the body's
//! length (`u64`, little-endian), then the body: `postcard` (a documented, stable serde
//! format) of `(EngineState, H)`. Nothing may follow the body.
//!
//! Versioning ([SERVER.UPGRADE.STATE.3]): a binary reads every state version it was built to
//! read ([`reads_version`]) and refuses any other with [`ImageError::UnknownVersion`], before
//! it looks at the body. A change to what the state holds or how it is laid out is a new
//! version. Versions 2 and 3 changed the driver's half only (the engine's half is laid out as
//! in version 1); version 4 appended the connections' declared viewports to the engine's half
//! ([`has_viewports`]), after the part laid out as in version 1.
//!
//! An image of a large server is tens or hundreds of megabytes: [`write_value`] writes it
//! once, straight into the driver's file (no copy of it on the heap), and a reader decodes it
//! from wherever it lies (a mapped file): nothing in a value borrows the input.
//!
//! Decoding never panics and never allocates from a count it has not checked: postcard checks
//! a byte string's or a string's length against the input left before it takes the bytes, and
//! a sequence's claimed count preallocates at most 1 MiB (serde's cautious size hint) and grows
//! only as its elements actually decode; every value that deserializes is checked against the
//! invariants the engine and the VT model rely on.
//!

use std::io::{Seek, SeekFrom, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::server::NotQuiet;

/// The state version this binary writes.
pub const STATE_VERSION: u32 = 4;

/// Every state version this binary reads.
pub const READS_VERSIONS: &[u32] = &[1, 2, 3, 4];

/// Whether the engine's half of an image of `version` ends with the connections' declared
/// viewports ([SERVER.UPGRADE.STATE.6]); before version 4 it ends with the base part.
pub(crate) fn has_viewports(version: u32) -> bool {
    version >= 4
}

/// The first bytes of every image.
pub const MAGIC: [u8; 8] = *b"phuxstat";

/// Magic, version and body length.
const HEADER_LEN: usize = 8 + 4 + 8;

/// Why bytes are not an image this binary can read.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The bytes do not start with [`MAGIC`] and a whole header.
    #[error("not a phux state image")]
    NotAnImage,
    /// A state version this binary was not built to read.
    #[error("state version {found} is not one this binary reads (it writes {supported})")]
    UnknownVersion {
        /// The image's version.
        found: u32,
        /// The version this binary writes.
        supported: u32,
    },
    /// Fewer bytes than the header says the body has.
    #[error("image truncated: the body is {expected} bytes, {found} present")]
    Truncated {
        /// The body's length, as the header says.
        expected: u64,
        /// The bytes present after the header.
        found: u64,
    },
    /// The body does not decode as this version's state, or breaks an invariant.
    #[error("image body does not decode: {0}")]
    Corrupt(String),
}

/// Whether this binary reads state version `version` (what `--check-upgrade` answers).
pub fn reads_version(version: u32) -> bool {
    READS_VERSIONS.contains(&version)
}

/// Why an image could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The engine is not quiet ([SERVER.UPGRADE.STATE.4]).
    #[error(transparent)]
    NotQuiet(#[from] NotQuiet),
    /// The output refused the bytes.
    #[error("cannot write the image: {0}")]
    Write(#[from] std::io::Error),
}

/// Writes the image of a value that serializes as `(EngineState, H)` does to `out`, from where
/// it stands, in one pass: the header with the body's length 0, the body through a small
/// buffer, then the length over the header's. Returns the image's length.
pub(crate) fn write_value<T: Serialize, W: Write + Seek>(
    value: &T,
    mut out: W,
) -> Result<u64, ExportError> {
    let start = out.stream_position()?;
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&STATE_VERSION.to_le_bytes());
    out.write_all(&header)?;
    let mut sink = Sink {
        out: &mut out,
        buf: Vec::with_capacity(SINK_BUFFER),
        written: 0,
        error: None,
    };
    let serialized = postcard::serialize_with_flavor(value, &mut sink);
    let Sink { written, error, .. } = sink;
    if let Some(e) = error {
        return Err(e.into());
    }
    // Every value postcard meets here is one it writes: only the output can fail.
    serialized.map_err(|e| std::io::Error::other(e.to_string()))?;
    let end = out.stream_position()?;
    out.seek(SeekFrom::Start(start + 12))?;
    out.write_all(&written.to_le_bytes())?;
    out.seek(SeekFrom::Start(end))?;
    Ok(end - start)
}

/// How much of the body [`write_value`] gathers before it writes: few system calls, and
/// nothing like a copy of the image.
const SINK_BUFFER: usize = 256 << 10;

/// A postcard output into a writer, through a buffer; the first error is kept for the caller.
struct Sink<'a, W: Write> {
    out: &'a mut W,
    buf: Vec<u8>,
    written: u64,
    error: Option<std::io::Error>,
}

impl<W: Write> Sink<'_, W> {
    fn drain(&mut self) -> postcard::Result<()> {
        if self.error.is_some() {
            return Err(postcard::Error::SerializeBufferFull);
        }
        if let Err(e) = self.out.write_all(&self.buf) {
            self.error = Some(e);
            return Err(postcard::Error::SerializeBufferFull);
        }
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl<W: Write> postcard::ser_flavors::Flavor for &mut Sink<'_, W> {
    type Output = ();

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        if self.buf.len() == SINK_BUFFER {
            self.drain()?;
        }
        self.buf.push(byte);
        Ok(())
    }

    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        if self.buf.len() + bytes.len() > SINK_BUFFER {
            self.drain()?;
            if bytes.len() > SINK_BUFFER {
                // A large byte string (a history log, queued output) goes out as it is.
                if let Err(e) = self.out.write_all(bytes) {
                    self.error = Some(e);
                    return Err(postcard::Error::SerializeBufferFull);
                }
                self.written += bytes.len() as u64;
                return Ok(());
            }
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        self.drain()
    }
}

/// The image of a value (one that serializes as `(EngineState, H)` does).
pub(crate) fn encode_value<T: Serialize>(value: &T) -> Vec<u8> {
    // Measured first, then written once into a buffer of the right size: an image of many
    // megabytes is never copied by a growing buffer, nor again behind its header.
    // Neither pass can fail on these types (every value postcard meets is one it writes);
    // were one to, the image's empty body is refused on reading, never misread.
    let size =
        postcard::serialize_with_flavor(value, postcard::ser_flavors::Size::default()).unwrap_or(0);
    let mut image = Vec::with_capacity(HEADER_LEN + size);
    image.extend_from_slice(&MAGIC);
    image.extend_from_slice(&STATE_VERSION.to_le_bytes());
    image.extend_from_slice(&(size as u64).to_le_bytes());
    if postcard::serialize_with_flavor(value, Append(&mut image)).is_err() {
        image.truncate(HEADER_LEN);
        image[12..HEADER_LEN].copy_from_slice(&0u64.to_le_bytes());
    }
    image
}

/// A postcard output that appends to a buffer the caller sized.
struct Append<'a>(&'a mut Vec<u8>);

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// The state version an image says it holds, without decoding its body.
pub fn image_version(bytes: &[u8]) -> Result<u32, ImageError> {
    let header = bytes.get(..HEADER_LEN).ok_or(ImageError::NotAnImage)?;
    if header[..8] != MAGIC {
        return Err(ImageError::NotAnImage);
    }
    let mut version = [0; 4];
    version.copy_from_slice(&header[8..12]);
    Ok(u32::from_le_bytes(version))
}

/// An image's version and body, the header checked: a version this binary reads
/// ([SERVER.UPGRADE.STATE.3]), and exactly the body's length after it.
pub(crate) fn body(bytes: &[u8]) -> Result<(u32, &[u8]), ImageError> {
    let version = image_version(bytes)?;
    // [SERVER.UPGRADE.STATE.3] Another version is refused before its body is read.
    if !reads_version(version) {
        return Err(ImageError::UnknownVersion {
            found: version,
            supported: STATE_VERSION,
        });
    }
    let mut len = [0; 8];
    len.copy_from_slice(&bytes[12..HEADER_LEN]);
    let expected = u64::from_le_bytes(len);
    let body = &bytes[HEADER_LEN..];
    let found = body.len() as u64;
    if found < expected {
        return Err(ImageError::Truncated { expected, found });
    }
    if found > expected {
        return Err(ImageError::Corrupt(format!(
            "{} bytes after the body",
            found - expected
        )));
    }
    Ok((version, body))
}

/// Decodes a `T` from the start of `bytes`; the bytes after it.
pub(crate) fn take<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, &[u8]), ImageError> {
    postcard::take_from_bytes::<T>(bytes).map_err(|e| ImageError::Corrupt(e.to_string()))
}

/// Decodes a `T` that must take every byte of `bytes`.
pub(crate) fn take_all<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ImageError> {
    let (value, rest) = take(bytes)?;
    if !rest.is_empty() {
        return Err(ImageError::Corrupt(format!(
            "{} bytes left after the state",
            rest.len()
        )));
    }
    Ok(value)
}
