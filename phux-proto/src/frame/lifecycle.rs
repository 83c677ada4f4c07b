//! PING / PONG / DETACH / DETACHED.

use crate::macros::open_enum;

/// PING (0x7f, C→S): field 1 nonce u64.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Ping {
    /// Echoed back in PONG.
    pub nonce: u64,
}

/// PONG (0xff, S→C): field 1 nonce u64, the PING's.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Pong {
    /// The PING's nonce.
    pub nonce: u64,
}

open_enum! {
    /// Why a connection ends (u8). Open (our rule R5): an unknown value decodes, is kept and
    /// re-encodes exactly; a reader treats it as unstated.
    pub struct DetachReason(u8);
    /// The client sent DETACH.
    REQUESTED = 0,
    /// The server is stopping.
    SERVER_SHUTDOWN = 1,
    /// The session was killed.
    SESSION_KILLED = 2,
    /// Another connection replaced this one.
    REPLACED = 3,
    /// The peer broke the protocol (after an ERROR).
    PROTOCOL_ERROR = 4,
    /// The server failed internally.
    INTERNAL_ERROR = 255,
}

/// DETACHED (0x82, S→C): field 1 reason (optional), field 2 message (omitted when empty).
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Detached {
    /// The reason, if stated (unknown values kept as they are).
    pub reason: Option<DetachReason>,
    /// Human-readable text; empty when absent.
    pub message: String,
}

impl Detached {
    /// The reason if it is one phux 0.8 names; an unknown value counts as unstated.
    pub fn known_reason(&self) -> Option<DetachReason> {
        self.reason.filter(|r| r.is_known())
    }
}

// ---- codec ----

use crate::atoms::Result;
use crate::field::{Fields, Put, Reader, once, required, utf8};

fn decode_nonce(body: &[u8]) -> Result<u64> {
    let mut fields = Fields::new(body);
    let mut nonce = None;
    while let Some((id, v)) = fields.next_field()? {
        if id == 1 {
            once(&mut nonce, id, "nonce", || Reader::new(v).u64())?;
        }
    }
    required(nonce, "nonce")
}

impl Ping {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        decode_nonce(body).map(|nonce| Self { nonce })
    }
    #[allow(clippy::trivially_copy_pass_by_ref)] // same shape as every other frame
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.nonce.to_be_bytes());
    }
}

impl Pong {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        decode_nonce(body).map(|nonce| Self { nonce })
    }
    #[allow(clippy::trivially_copy_pass_by_ref)] // same shape as every other frame
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field(1, &self.nonce.to_be_bytes());
    }
}

/// DETACH has no fields; any present are validated as TLV and ignored.
pub(crate) fn decode_detach(body: &[u8]) -> Result<()> {
    let mut fields = Fields::new(body);
    while fields.next_field()?.is_some() {}
    Ok(())
}

impl Detached {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let (mut reason, mut message) = (None, None);
        while let Some((id, v)) = fields.next_field()? {
            match id {
                // [DETACH.REASON.1] Unknown reasons decode and are kept (rule R5).
                1 => once(&mut reason, id, "reason", || {
                    Reader::new(v).u8().map(DetachReason)
                })?,
                2 => once(&mut message, id, "message", || utf8(v))?,
                _ => {}
            }
        }
        Ok(Self {
            reason,
            message: message.unwrap_or_default(),
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if let Some(reason) = self.reason {
            out.put_field(1, &[reason.0]);
        }
        if !self.message.is_empty() {
            out.put_field(2, self.message.as_bytes());
        }
    }
}
