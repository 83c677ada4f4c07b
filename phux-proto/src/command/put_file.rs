//! PUT_FILE (0x15): one chunk of a file upload, and the bounds on chunk and upload size.

use crate::ids::TerminalId;

/// The longest PUT_FILE extension: a file-name suffix, never a path.
pub const MAX_PUT_FILE_EXTENSION_LEN: usize = 16;

/// The largest PUT_FILE chunk: 8 MiB, half the frame cap.
pub const MAX_PUT_FILE_CHUNK_LEN: usize = 8 * 1024 * 1024;

/// The largest PUT_FILE upload (`offset + len` of any chunk): 64 MiB, so an upload cannot
/// fill the server's disk through one id.
pub const MAX_PUT_FILE_LEN: u64 = 64 * 1024 * 1024;

/// PUT_FILE (0x15): `upload_id[16] ‖ TerminalId ‖ extension str ‖ offset u64 ‖ data bytes ‖
/// final u8 ‖ sha256 presence u8 ‖ [32 bytes]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PutFile {
    /// The upload's id.
    pub upload_id: [u8; 16],
    /// The terminal the file is for.
    pub terminal: TerminalId,
    /// The file-name extension (at most [`MAX_PUT_FILE_EXTENSION_LEN`] bytes).
    pub extension: String,
    /// Where this chunk starts.
    pub offset: u64,
    /// This chunk (at most [`MAX_PUT_FILE_CHUNK_LEN`]; `offset + len ≤ MAX_PUT_FILE_LEN`).
    pub data: Vec<u8>,
    /// Whether this is the last chunk (strict bool).
    pub is_final: bool,
    /// The whole file's SHA-256, on the final chunk.
    pub sha256: Option<[u8; 32]>,
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for PutFile {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut extension: String = u.arbitrary()?;
        while extension.len() > MAX_PUT_FILE_EXTENSION_LEN {
            extension.pop();
        }
        let mut data: Vec<u8> = u.arbitrary()?;
        data.truncate(MAX_PUT_FILE_CHUNK_LEN);
        let offset = u.int_in_range(0..=MAX_PUT_FILE_LEN - data.len() as u64)?;
        Ok(Self {
            upload_id: u.arbitrary()?,
            terminal: u.arbitrary()?,
            extension,
            offset,
            data,
            is_final: u.arbitrary()?,
            sha256: u.arbitrary()?,
        })
    }
}

// ---- codec ----

use crate::atoms::{Result, Wire, limit};
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::{Put, Reader};

impl PutFile {
    pub(super) fn read_body(r: &mut Reader<'_>) -> Result<Self> {
        let upload_id = r.array()?;
        let terminal = TerminalId::read(r)?;
        let extension = r.str()?;
        if extension.len() > MAX_PUT_FILE_EXTENSION_LEN {
            return Err(limit(
                "PUT_FILE extension length",
                MAX_PUT_FILE_EXTENSION_LEN,
                extension.len(),
            ));
        }
        let offset = r.u64()?;
        let data = r.bytes_ref()?;
        if data.len() > MAX_PUT_FILE_CHUNK_LEN {
            return Err(limit(
                "PUT_FILE chunk length",
                MAX_PUT_FILE_CHUNK_LEN,
                data.len(),
            ));
        }
        let end = offset.saturating_add(data.len() as u64);
        if end > MAX_PUT_FILE_LEN {
            return Err(DecodeError::new(DecodeErrorKind::LimitExceeded {
                what: "PUT_FILE end offset",
                limit: MAX_PUT_FILE_LEN,
                actual: end,
            }));
        }
        Ok(Self {
            upload_id,
            terminal,
            extension,
            offset,
            data: data.to_vec(),
            is_final: r.bool()?,
            sha256: r.optional(Reader::array)?,
        })
    }

    pub(super) fn write_body(&self, out: &mut Vec<u8>) {
        out.put_bytes(&self.upload_id);
        self.terminal.write(out);
        out.put_len_bytes(self.extension.as_bytes());
        out.put_u64(self.offset);
        out.put_len_bytes(&self.data);
        out.put_bool(self.is_final);
        out.put_optional(self.sha256.as_ref(), |o, s| o.put_bytes(s));
    }
}
