//! Identifiers that cross the wire.

use std::fmt;

/// A terminal (pane) address. Non-hub servers only produce [`TerminalId::Local`].
///
/// Positional encoding: tag `00` ‖ id u32, or tag `01` ‖ host str ‖ id u32.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum TerminalId {
    /// A terminal owned by the server the client is talking to.
    Local(u32),
    /// A terminal on a satellite host, routed through a hub.
    Satellite {
        /// The satellite's host name.
        host: String,
        /// The terminal's id on that host.
        id: u32,
    },
}

impl TerminalId {
    /// The local id, if this is a local terminal.
    pub fn local(&self) -> Option<u32> {
        match self {
            Self::Local(id) => Some(*id),
            Self::Satellite { .. } => None,
        }
    }
}

impl fmt::Debug for TerminalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `local:3` or `satellite:"host":3`, the same text the frame notation uses.
impl fmt::Display for TerminalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(id) => write!(f, "local:{id}"),
            Self::Satellite { host, id } => write!(f, "satellite:{host:?}:{id}"),
        }
    }
}

/// A client connection's id as the server names it on the wire (u32).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ClientId(pub u32);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A terminal group id (u32). The reference server's only group is 1.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct GroupId(pub u32);

/// The client-chosen, random, non-zero 128-bit name of one APPLY_INPUT operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId([u8; 16]);

impl OperationId {
    /// Wraps 16 bytes; `None` for the all-zero id, which the wire forbids.
    pub fn new(bytes: [u8; 16]) -> Option<Self> {
        (bytes != [0; 16]).then_some(Self(bytes))
    }

    /// Builds an id from a `u128` (big-endian bytes); `None` for zero.
    pub fn from_u128(value: u128) -> Option<Self> {
        Self::new(value.to_be_bytes())
    }

    /// The 16 wire bytes.
    pub fn bytes(&self) -> [u8; 16] {
        self.0
    }

    /// The id as a `u128` (big-endian).
    pub fn as_u128(&self) -> u128 {
        u128::from_be_bytes(self.0)
    }
}

impl fmt::Debug for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// `0x` and 32 lowercase hex digits.
impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:032x}", self.as_u128())
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for OperationId {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        let mut bytes: [u8; 16] = u.arbitrary()?;
        if bytes == [0; 16] {
            bytes[15] = 1;
        }
        Ok(Self(bytes))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for OperationId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

// The all-zero id is refused here as on the wire.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for OperationId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bytes = <[u8; 16]>::deserialize(d)?;
        Self::new(bytes).ok_or_else(|| serde::de::Error::custom("zero operation id"))
    }
}

macro_rules! nonzero_u64_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        pub struct $name(u64);

        impl $name {
            /// The smallest valid id.
            pub const MIN: Self = Self(1);

            /// Wraps a value; `None` for zero, which the wire forbids.
            pub const fn new(value: u64) -> Option<Self> {
                if value == 0 { None } else { Some(Self(value)) }
            }

            /// The wire value (never zero).
            pub const fn get(self) -> u64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> arbitrary::Arbitrary<'a> for $name {
            fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                let value: u64 = u.arbitrary()?;
                Ok(Self(value.max(1)))
            }
        }

        #[cfg(feature = "serde")]
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(self.0)
            }
        }

        // Zero is refused here as on the wire: a value that decodes is a valid id.
        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let value = u64::deserialize(d)?;
                Self::new(value).ok_or_else(|| serde::de::Error::custom("zero id"))
            }
        }
    };
}

nonzero_u64_id! {
    /// A terminal output stream's id (u64, non-zero): one per subscription incarnation.
    StreamId
}

nonzero_u64_id! {
    /// A bootstrap's id (u64, non-zero) within a stream.
    BootstrapId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_operation_id_is_refused() {
        assert_eq!(OperationId::new([0; 16]), None);
        assert_eq!(OperationId::from_u128(0), None);
        let id = OperationId::from_u128(0x5a5a).unwrap();
        assert_eq!(id.as_u128(), 0x5a5a);
        assert_eq!(id.to_string(), "0x00000000000000000000000000005a5a");
    }

    #[test]
    fn terminal_id_display() {
        assert_eq!(TerminalId::Local(3).to_string(), "local:3");
        let sat = TerminalId::Satellite {
            host: "h".into(),
            id: 2,
        };
        assert_eq!(sat.to_string(), "satellite:\"h\":2");
    }

    #[test]
    fn zero_stream_and_bootstrap_ids_are_refused() {
        assert_eq!(StreamId::new(0), None);
        assert_eq!(BootstrapId::new(0), None);
        assert_eq!(StreamId::new(7).map(StreamId::get), Some(7));
    }
}
