//! The upgrade image's bytes, the one place that decides them.
//!
//! Layout: the 8 magic bytes [`MAGIC`], the state version (`u32`, little-endian), the body's
//! length (`u64`, little-endian), then the body: `postcard` (a documented, stable serde
//! format) of `(EngineState, H)`. Nothing may follow the body.
//!
//! Versioning ([SERVER.UPGRADE.STATE.3]): a binary reads every state version it was built to
//! read ([`reads_version`]) and refuses any other with [`ImageError::UnknownVersion`], before
//! it looks at the body. A change to what the state holds or how it is laid out is a new
//! version.
//!
//! Decoding never panics and never allocates from a count it has not checked: postcard checks
//! a byte string's or a string's length against the input left before it takes the bytes, and
//! a sequence's claimed count preallocates at most 1 MiB (serde's cautious size hint) and grows
//! only as its elements actually decode; every value that deserializes is checked against the
//! invariants the engine and the VT model rely on.
//!

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The state version this binary writes.
pub const STATE_VERSION: u32 = 1;

/// Every state version this binary reads.
pub const READS_VERSIONS: &[u32] = &[1];

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

/// Reads an image's body back as a `T` (the engine's state and the driver's).
pub(crate) fn decode_value<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ImageError> {
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
    let (value, rest) =
        postcard::take_from_bytes::<T>(body).map_err(|e| ImageError::Corrupt(e.to_string()))?;
    if !rest.is_empty() {
        return Err(ImageError::Corrupt(format!(
            "{} bytes left after the state",
            rest.len()
        )));
    }
    Ok(value)
}

/// `#[serde(with = "crate::upgrade::sorted_map")]` for a `HashMap`: written in key order, so
/// the same state always makes the same image (a hash map's order differs between processes).
pub(crate) mod sorted_map {
    use std::collections::HashMap;
    use std::hash::Hash;

    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<K, V, S>(map: &HashMap<K, V>, s: S) -> Result<S::Ok, S::Error>
    where
        K: Serialize + Ord,
        V: Serialize,
        S: Serializer,
    {
        let mut entries: Vec<(&K, &V)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        entries.serialize(s)
    }

    pub(crate) fn deserialize<'de, K, V, D>(d: D) -> Result<HashMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let entries = Vec::<(K, V)>::deserialize(d)?;
        let len = entries.len();
        let map: HashMap<K, V> = entries.into_iter().collect();
        if map.len() == len {
            Ok(map)
        } else {
            Err(D::Error::custom("a key appears twice"))
        }
    }
}
