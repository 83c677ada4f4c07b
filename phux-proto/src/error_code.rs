//! Wire error codes (u16), one table for value, name and scope.

use std::fmt;

/// Who an error is about: the whole connection, one terminal, or one request.
///
/// A Rust-side classification only; it never crosses the wire.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ErrorScope {
    /// The connection as a whole.
    Connection,
    /// One terminal; unknown codes are treated as this scope.
    Terminal,
    /// One request.
    Request,
}

/// A wire error code. Open: unknown values stay representable and re-encode exactly.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorCode(pub u16);

macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $scope:ident;)*) => {
        impl ErrorCode {
            $($(#[$doc])* pub const $name: Self = Self($value);)*

            /// Every code phux 0.8 names, in table order.
            pub const KNOWN: &'static [Self] = &[$(Self::$name),*];

            /// The code's upper-case wire name, if it is a known code.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// Looks a code up by its upper-case wire name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $(stringify!($name) => Some(Self::$name),)*
                    _ => None,
                }
            }

            /// The code's scope; unknown codes are terminal-scoped (phux 0.8 section 4.3).
            pub fn scope(self) -> ErrorScope {
                match self.0 {
                    $($value => ErrorScope::$scope,)*
                    _ => ErrorScope::Terminal,
                }
            }
        }
    };
}

error_codes! {
    /// The peer speaks another protocol version, or sent a frame before HELLO.
    VERSION_INCOMPATIBLE = 1, Connection;
    /// A frame type this endpoint does not know.
    UNKNOWN_MESSAGE_TYPE = 2, Terminal;
    /// Bytes that do not decode as the frame they claim to be.
    MALFORMED_MESSAGE = 3, Terminal;
    /// A frame header that violates framing (length 0 or over 16 MiB).
    FRAME_TOO_LARGE = 4, Connection;
    /// No bootstrap profile both sides support.
    CODEC_UNAVAILABLE = 6, Terminal;
    /// The request needs an attachment the client does not have.
    NOT_ATTACHED = 100, Request;
    /// The client is already attached.
    ALREADY_ATTACHED = 101, Request;
    /// No such session.
    SESSION_NOT_FOUND = 102, Request;
    /// No such window.
    WINDOW_NOT_FOUND = 103, Request;
    /// No such terminal.
    TERMINAL_NOT_FOUND = 104, Terminal;
    /// No such client.
    CLIENT_NOT_FOUND = 105, Request;
    /// Satellite routing is not available on this server.
    UNSUPPORTED_SATELLITE_ROUTE = 106, Terminal;
    /// The satellite cannot be reached.
    SATELLITE_UNREACHABLE = 107, Terminal;
    /// A command that breaks a rule (bad arguments, unknown tag, reused operation id).
    INVALID_COMMAND = 200, Connection;
    /// The peer may not do this.
    PERMISSION_DENIED = 201, Connection;
    /// A bounded resource is full; retry later.
    RESOURCE_EXHAUSTED = 202, Terminal;
    /// An untrusted paste that is not safe to write.
    UNSAFE_PASTE = 203, Request;
    /// Another client holds the terminal's input lease.
    INPUT_LEASE_HELD = 204, Request;
    /// The write may or may not have happened; never resubmit automatically.
    INPUT_DELIVERY_UNKNOWN = 205, Request;
    /// A canonical-mode line longer than the terminal's limit.
    CANONICAL_LIMIT_EXCEEDED = 206, Request;
    /// No byte was written; the operation may be submitted again.
    INPUT_NOT_WRITTEN = 207, Request;
    /// The server failed internally.
    INTERNAL_ERROR = 65535, Terminal;
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The wire name for known codes, `0x`-prefixed hex otherwise.
impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "0x{:04x}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_codes_stay_open() {
        for code in ErrorCode::KNOWN {
            assert_eq!(ErrorCode::from_name(code.name().unwrap()), Some(*code));
        }
        assert_eq!(ErrorCode(5).name(), None);
        assert_eq!(ErrorCode(5).to_string(), "0x0005");
        assert_eq!(ErrorCode(5).scope(), ErrorScope::Terminal);
        assert_eq!(ErrorCode::INPUT_NOT_WRITTEN.scope(), ErrorScope::Request);
    }
}
