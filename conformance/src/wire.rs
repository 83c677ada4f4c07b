//! `phux-conformance wire`: one frame between hex wire bytes and the text notation.

use std::process::ExitCode;

use clap::Subcommand;
use phux_proto::hex::to_hex;
use phux_proto::notation::NotationError;
use phux_proto::{DecodeError, DecodeErrorKind, Frame};

/// The exit status for input that does not decode or parse (clap uses 2 for bad usage too:
/// either way, the input was wrong).
const EXIT_BAD_INPUT: u8 = 2;

#[derive(Debug, Subcommand)]
pub(crate) enum WireCommand {
    /// Decode one whole frame and print it in the notation.
    ///
    /// The frame is given as hex, header included (`0000000c7f010408deadbeefcafef00d`);
    /// whitespace between digits is ignored. The decoder is phux-proto's strict one: if the
    /// bytes do not decode, the typed error and its wire error code are printed to stderr and
    /// the exit status is 2.
    Decode {
        /// The frame's bytes in hex, e.g. `0000000c7f010408deadbeefcafef00d`.
        hex: String,
    },
    /// Parse one frame written in the notation and print its canonical bytes as lowercase hex.
    ///
    /// Example: `phux-conformance wire encode 'PING{nonce=0xdeadbeefcafef00d}'` prints
    /// `0000000c7f010408deadbeefcafef00d`. On a notation error (with its line and column, or
    /// the path to the bad field) the exit status is 2.
    Encode {
        /// The frame in the notation, e.g. `PING{nonce=0xdeadbeefcafef00d}`.
        notation: String,
    },
}

/// Why a `wire` command failed.
#[derive(Debug)]
enum WireError {
    /// The argument is not hex.
    Hex(&'static str),
    /// The bytes are not a frame.
    Decode(DecodeError),
    /// The bytes are not exactly one frame (too few, or more after it): not an error a
    /// stream decoder reports, so no wire code.
    NotOneFrame(String),
    /// The text is not a frame.
    Notation(NotationError),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Hex(why) => write!(f, "bad hex: {why}"),
            Self::Decode(e) => {
                let code = e.code();
                write!(f, "decode error: {e}\nwire code: {code} ({})", code.0)?;
                if matches!(e.kind(), DecodeErrorKind::FrameLength { .. }) {
                    // [FRAME.VIOLATION.1] The code's name says "large"; phux sends it for a
                    // length of 0 as well.
                    write!(f, ", phux's code for any length outside 1..=16 MiB")?;
                }
                Ok(())
            }
            Self::NotOneFrame(why) => write!(f, "{why}"),
            Self::Notation(e) => write!(f, "notation error: {e}"),
        }
    }
}

pub(crate) fn run(command: &WireCommand) -> ExitCode {
    let outcome = match command {
        WireCommand::Decode { hex } => decode(hex),
        WireCommand::Encode { notation } => encode(notation),
    };
    match outcome {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("phux-conformance wire: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Hex in, notation out: exactly one whole frame.
fn decode(hex: &str) -> Result<String, WireError> {
    let bytes = parse_hex(hex).map_err(WireError::Hex)?;
    let frame = Frame::decode(&bytes).map_err(|e| match e.kind() {
        // A stream decoder waits for the rest of a frame, and takes bytes after one as the
        // next frame's: neither is a framing violation of the stream.
        DecodeErrorKind::FrameTruncated { available, .. } if available < 4 => {
            WireError::NotOneFrame(format!(
                "incomplete frame: {available} byte(s); a frame starts with a 4-byte length, \
                 then a type byte"
            ))
        }
        DecodeErrorKind::FrameTruncated { needed, available } => WireError::NotOneFrame(format!(
            "incomplete frame: its header declares {needed} bytes, {available} given"
        )),
        DecodeErrorKind::TrailingBytes { extra } => WireError::NotOneFrame(format!(
            "{extra} byte(s) after the frame: `wire decode` takes exactly one frame ({} bytes \
             here, as its header declares)",
            bytes.len() - extra
        )),
        _ => WireError::Decode(e),
    })?;
    Ok(frame.to_string())
}

/// Notation in, hex out.
fn encode(notation: &str) -> Result<String, WireError> {
    let frame: Frame = notation.parse().map_err(WireError::Notation)?;
    Ok(to_hex(&frame.to_bytes()))
}

pub(crate) fn parse_hex(text: &str) -> Result<Vec<u8>, &'static str> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace())
        .map(|b| match b {
            b'0'..=b'9' => Ok(b - b'0'),
            b'a'..=b'f' => Ok(b - b'a' + 10),
            b'A'..=b'F' => Ok(b - b'A' + 10),
            _ => Err("only hex digits and whitespace may appear"),
        })
        .collect::<Result<_, _>>()?;
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits");
    }
    Ok(digits.chunks_exact(2).map(|p| p[0] << 4 | p[1]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_parses_with_whitespace_and_rejects_junk() {
        assert_eq!(parse_hex("00 0A\nff"), Ok(vec![0x00, 0x0a, 0xff]));
        assert_eq!(parse_hex("abc"), Err("odd number of hex digits"));
        assert!(parse_hex("0x00").is_err());
        assert_eq!(to_hex(&[0x00, 0xab]), "00ab");
    }

    #[test]
    fn decode_then_encode_is_the_identity_on_a_vector() {
        // The APPLY_INPUT fixture (vectors.md, cmd_apply_input_inline_fixture).
        let hex = "000000303101040401020304020425145a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a0000000005\
                   0002020003000000000568656c6c6f";
        let text = decode(hex).unwrap();
        assert_eq!(
            text,
            "COMMAND{request_id=16909060 command=APPLY_INPUT{\
             operation_id=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a terminal=local:5 \
             events=[FOCUS{event=gained} PASTE{trust=trusted data=\"hello\"}]}}"
        );
        assert_eq!(encode(&text).unwrap(), hex);
    }

    #[test]
    fn errors_carry_the_typed_decode_error_and_its_code() {
        // [FRAME.LENGTH.1] length 0 is a framing violation.
        let e = decode("0000000003").unwrap_err().to_string();
        assert!(e.contains("wire code: FRAME_TOO_LARGE (4)"), "{e}");
        assert!(e.contains("outside 1..=16 MiB"), "{e}");
        // Too few bytes, or more than one frame: said as such, with no wire code.
        for (hex, said) in [
            ("", "incomplete frame: 0 byte(s)"),
            ("000000", "incomplete frame: 3 byte(s)"),
            ("00000001", "header declares 5 bytes, 4 given"),
            (
                "0000000c7f010408deadbeefcafef00d00",
                "1 byte(s) after the frame",
            ),
        ] {
            let e = decode(hex).unwrap_err().to_string();
            assert!(e.contains(said), "{hex:?}: {e}");
            assert!(!e.contains("wire code"), "{hex:?}: {e}");
        }
        let e = decode("0000000102").unwrap_err().to_string();
        assert!(e.contains("unknown frame type 0x02"), "{e}");
        assert!(e.contains("wire code: UNKNOWN_MESSAGE_TYPE (2)"), "{e}");
        let e = encode("PING{}").unwrap_err().to_string();
        assert_eq!(
            e,
            "notation error: PING: missing required field \"nonce\" in PING"
        );
    }
}
