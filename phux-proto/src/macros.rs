//! Declarative helpers for the two shapes of wire enum this crate has: open newtypes (every
//! value representable, some named) and masked bit sets (unknown bits dropped on decode).

/// An open wire enum: `pub struct $name(pub $repr)` with named constants, `name()`,
/// `from_name()`, `is_known()`, and a `Debug`/`Display` that prints the name or the hex value.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty);
        $($(#[$vdoc:meta])* $variant:ident = $value:literal,)*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct $name(pub $repr);

        impl $name {
            $($(#[$vdoc])* pub const $variant: Self = Self($value);)*

            /// Every value phux 0.8 names, in table order.
            pub const KNOWN: &'static [Self] = &[$(Self::$variant),*];

            /// The upper-case wire name, if the value is a known one.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($variant)),)*
                    _ => None,
                }
            }

            /// Looks a value up by its upper-case wire name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $(stringify!($variant) => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// Whether phux 0.8 names this value.
            pub fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(self, f)
            }
        }

        /// The wire name for known values, `0x`-prefixed hex otherwise.
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{:#04x}", self.0),
                }
            }
        }
    };
}

/// A masked bit set: the private field only ever holds known bits (`$mask`), plus any bits
/// in `$forced` that the protocol forces on. Decoding masks, so unknown bits are dropped.
macro_rules! bit_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty), mask = $mask:literal, forced = $forced:literal;
        $($(#[$vdoc:meta])* $flag:ident = $value:literal, $text:literal;)*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name($repr);

        impl $name {
            $($(#[$vdoc])* pub const $flag: Self = Self($value);)*

            /// Every bit phux 0.8 names.
            pub const KNOWN_BITS: $repr = $mask;

            const NAMES: &'static [(Self, &'static str)] = &[$((Self::$flag, $text)),*];

            /// The set with no optional bit (forced bits are still on).
            pub const fn empty() -> Self {
                Self($forced)
            }

            /// Every known bit.
            pub const fn all() -> Self {
                Self($mask | $forced)
            }

            /// Keeps the known bits of `bits` (and turns forced bits on); the rest are dropped,
            /// as a phux 0.8 decoder drops them.
            pub const fn from_bits_truncate(bits: $repr) -> Self {
                Self((bits & $mask) | $forced)
            }

            /// The wire bits.
            pub const fn bits(self) -> $repr {
                self.0
            }

            /// Whether every bit of `other` is set here.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether no bit is set.
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// The bits set in both.
            pub const fn intersection(self, other: Self) -> Self {
                Self(self.0 & other.0)
            }

            /// The lower-case names of the bits set, joined with `|`; `none` when empty.
            pub fn names(self) -> String {
                if self.is_empty() {
                    return "none".to_owned();
                }
                let parts: Vec<&str> = Self::NAMES
                    .iter()
                    .filter(|(bit, _)| self.contains(*bit))
                    .map(|(_, name)| *name)
                    .collect();
                parts.join("|")
            }

            /// Parses what `names` writes.
            pub fn from_names(text: &str) -> Option<Self> {
                if text == "none" {
                    return Some(Self::from_bits_truncate(0));
                }
                let mut bits: $repr = 0;
                for part in text.split('|') {
                    let (bit, _) = Self::NAMES.iter().find(|(_, name)| *name == part)?;
                    bits |= bit.0;
                }
                Some(Self::from_bits_truncate(bits))
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::empty()
            }
        }

        impl std::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }

        impl std::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({})", stringify!($name), self.names())
            }
        }

        #[cfg(feature = "arbitrary")]
        impl<'a> arbitrary::Arbitrary<'a> for $name {
            fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                Ok(Self::from_bits_truncate(u.arbitrary()?))
            }
        }
    };
}

pub(crate) use {bit_set, open_enum};
