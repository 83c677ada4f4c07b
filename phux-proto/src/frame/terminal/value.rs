//! Whole-field values the terminal frames share: a big-endian integer, or a non-zero id.

use crate::atoms::Result;
use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::field::Reader;
use crate::ids::{BootstrapId, StreamId};

pub(super) fn u32_value(v: &[u8]) -> Result<u32> {
    Reader::new(v).u32()
}

pub(super) fn u64_value(v: &[u8]) -> Result<u64> {
    Reader::new(v).u64()
}

pub(super) fn stream_value(v: &[u8]) -> Result<StreamId> {
    // [ID.STREAM.1] Stream ids are non-zero.
    StreamId::new(u64_value(v)?).ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroId))
}

pub(super) fn bootstrap_value(v: &[u8]) -> Result<BootstrapId> {
    // [ID.STREAM.1] Bootstrap ids are non-zero.
    BootstrapId::new(u64_value(v)?).ok_or_else(|| DecodeError::new(DecodeErrorKind::ZeroId))
}
