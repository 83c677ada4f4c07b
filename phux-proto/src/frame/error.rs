//! ERROR (0xc1).

use crate::error_code::ErrorCode;

/// ERROR (0xc1, S→C): field 1 request_id (optional), field 2 code, field 3 message.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorFrame {
    /// The request this error answers, if any.
    pub request_id: Option<u32>,
    /// The code; unknown codes are kept (our rule R5).
    pub code: ErrorCode,
    /// Human-readable text, written even when empty.
    pub message: String,
}

// ---- codec ----

use crate::atoms::Result;
use crate::field::{Fields, Put, Reader, once, required, utf8};

impl ErrorFrame {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut request_id, mut code, mut message) = (None, None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                1 => once(&mut request_id, id, "request_id", || Reader::new(v).u32())?,
                // [ERROR.CODE.1] Unknown codes are surfaced as they are (rule R5).
                2 => once(&mut code, id, "code", || {
                    Reader::new(v).u16().map(ErrorCode)
                })?,
                3 => once(&mut message, id, "message", || utf8(v))?,
                _ => {}
            }
        }
        Ok(Self {
            request_id,
            code: required(code, "code")?,
            message: required(message, "message")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if let Some(id) = self.request_id {
            out.put_field(1, &id.to_be_bytes());
        }
        out.put_field(2, &self.code.0.to_be_bytes());
        out.put_field(3, self.message.as_bytes());
    }
}
