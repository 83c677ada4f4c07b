//! How the host's half of an image holds the byte strings it carries: kept for an adoption,
//! counted for the trial.

use serde::{Deserialize, Deserializer};

/// How the host's half holds a byte string it carries (a connection's unwritten bytes, a shared
/// frame head): an adoption keeps the bytes (`Vec<u8>`); the trial child keeps only the
/// length ([`Length`]), so checking an image whose viewers hold megabytes each costs no copy
/// of them beside the mapped image ([SERVER.UPGRADE.EXEC.13]).
pub trait Held: Sized {
    /// Reads one byte string as `phux_core::upgrade::bytes` writes it.
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

impl Held for Vec<u8> {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        phux_core::upgrade::bytes::deserialize(d)
    }
}

/// A byte string read and not kept: its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Length(pub usize);

impl Held for Length {
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(LengthVisitor)
    }
}

struct LengthVisitor;

impl<'de> serde::de::Visitor<'de> for LengthVisitor {
    type Value = Length;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a byte string")
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Length, E> {
        Ok(Length(v.len()))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Length, A::Error> {
        let mut n = 0;
        while seq.next_element::<u8>()?.is_some() {
            n += 1;
        }
        Ok(Length(n))
    }
}

/// Reads a sequence of byte strings, each as `phux_core::upgrade::bytes` reads one.
pub(super) fn byte_strings<'de, D: Deserializer<'de>, B: Held>(d: D) -> Result<Vec<B>, D::Error> {
    struct One<B>(B);
    impl<'de, B: Held> Deserialize<'de> for One<B> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            B::read(d).map(One)
        }
    }
    Ok(Vec::<One<B>>::deserialize(d)?
        .into_iter()
        .map(|o| o.0)
        .collect())
}
