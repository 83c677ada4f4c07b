//! `#[serde(with = "phux_term::bytes")]` for byte buffers: one length and the bytes, rather
//! than serde's default of a sequence of separate integers (a history log of megabytes is
//! then a copy, not a loop over every byte).

use serde::{Deserializer, Serializer};

/// Writes the bytes as one byte string.
pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(bytes)
}

/// Reads a byte string (or a sequence of bytes, from a format without byte strings).
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_byte_buf(Visitor)
}

struct Visitor;

impl<'de> serde::de::Visitor<'de> for Visitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
        Ok(v.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(v)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        // Grown as bytes arrive, never from the sequence's claimed length.
        let mut out = Vec::new();
        while let Some(b) = seq.next_element()? {
            out.push(b);
        }
        Ok(out)
    }
}
