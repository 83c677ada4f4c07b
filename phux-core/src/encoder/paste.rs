//! Paste: bracketing, LF→CR, the untrusted-paste sanitizer and the unsafe-paste rule.

use phux_proto::input::{PasteEvent, PasteTrust};

use super::EncodeError;
use crate::modes::TerminalModes;

const BRACKET_START: &[u8] = b"\x1b[200~";
const BRACKET_END: &[u8] = b"\x1b[201~";

/// Whether an untrusted paste must be refused (phux 0.8 section 6.5, the reference's
/// `would_reject`): it is untrusted AND (not valid UTF-8, OR contains LF, OR contains the
/// end-of-paste marker `ESC [ 2 0 1 ~`). Trusted pastes are never checked.
pub fn paste_is_unsafe(paste: &PasteEvent) -> bool {
    // [INPUT.PASTE.SAFE.1] Only untrusted pastes run the check.
    if paste.trust == PasteTrust::Trusted {
        return false;
    }
    let data = &paste.data;
    // [INPUT.PASTE.SAFE.2] Invalid UTF-8, a line feed (it would submit a command line), or
    // the end marker (it would break out of bracketed paste) is unsafe.
    std::str::from_utf8(data).is_err()
        || data.contains(&b'\n')
        || data.windows(BRACKET_END.len()).any(|w| w == BRACKET_END)
}

/// Whether `b` is one of the controls an accepted untrusted paste may not carry (R15,
/// upstream ghostty's list: signal and line-editing controls and ESC).
fn is_stripped(b: u8) -> bool {
    matches!(
        b,
        0x00 | 0x03
            | 0x04
            | 0x05
            | 0x08
            | 0x0f
            | 0x11
            | 0x12
            | 0x13
            | 0x15
            | 0x16
            | 0x17
            | 0x1a
            | 0x1b
            | 0x1c
            | 0x7f
    )
}

/// The exact number of bytes [`encode_paste`] appends for `paste`.
pub(super) fn encoded_len(paste: &PasteEvent, modes: &TerminalModes) -> usize {
    let markers = if modes.bracketed_paste {
        BRACKET_START.len() + BRACKET_END.len()
    } else {
        0
    };
    paste.data.len().saturating_add(markers)
}

/// Appends the PTY bytes for a paste (R15): under mode 2004 `ESC[200~` ‖ data ‖ `ESC[201~`,
/// otherwise the data with every LF turned into CR. An untrusted paste has its dangerous
/// controls replaced by spaces first; a trusted one is written exactly.
///
/// An unsafe untrusted paste (see [`paste_is_unsafe`]) is refused and nothing is appended.
pub fn encode_paste(
    paste: &PasteEvent,
    modes: &TerminalModes,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if paste_is_unsafe(paste) {
        return Err(EncodeError::UnsafePaste);
    }
    let untrusted = paste.trust == PasteTrust::Untrusted;
    out.reserve(encoded_len(paste, modes));
    // [INPUT.ENCODE.PASTE.1] Bracketed paste wraps the data in the 200/201 markers.
    if modes.bracketed_paste {
        out.extend_from_slice(BRACKET_START);
    }
    if !untrusted && modes.bracketed_paste {
        // [INPUT.ENCODE.PASTE.3] Trusted data is written exactly.
        out.extend_from_slice(&paste.data);
    } else {
        out.extend(paste.data.iter().map(|&b| {
            // [INPUT.ENCODE.PASTE.2] An accepted untrusted paste has its signal and
            // line-editing controls and ESC replaced by a space.
            if untrusted && is_stripped(b) {
                b' '
            // [INPUT.ENCODE.PASTE.1] Without bracketing, LF becomes CR (what Enter sends).
            } else if b == b'\n' && !modes.bracketed_paste {
                b'\r'
            } else {
                b
            }
        }));
    }
    if modes.bracketed_paste {
        out.extend_from_slice(BRACKET_END);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(trust: PasteTrust, data: &[u8]) -> PasteEvent {
        PasteEvent {
            trust,
            data: data.to_vec(),
        }
    }

    fn enc(paste: &PasteEvent, bracketed: bool) -> Result<Vec<u8>, EncodeError> {
        let modes = TerminalModes {
            bracketed_paste: bracketed,
            ..TerminalModes::default()
        };
        let mut out = Vec::new();
        encode_paste(paste, &modes, &mut out).map(|()| out)
    }

    // [INPUT.PASTE.SAFE.1] [INPUT.PASTE.SAFE.2] Digest section 6.5: the reference's rule.
    #[test]
    fn unsafe_paste_rule() {
        use PasteTrust::{Trusted, Untrusted};
        let table: &[(PasteTrust, &[u8], bool)] = &[
            (Untrusted, b"ls -l", false),
            (Untrusted, b"line\r", false), // CR alone is safe (and written as is)
            (Untrusted, b"\x1b[31m", false), // ESC alone is safe: it becomes a space
            (Untrusted, b"\x03\x04", false), // other controls: sanitized, not refused
            (Untrusted, b"two\nlines", true), // LF
            (Untrusted, b"\xff\xfe", true), // invalid UTF-8
            (Untrusted, b"x\x1b[201~y", true), // end marker
            (Untrusted, b"x\x1b[201", false), // an incomplete marker is not the marker
            (Untrusted, "héllo".as_bytes(), false),
            (Trusted, b"two\nlines\xff\x1b[201~", false), // trusted is never checked
            (Untrusted, b"", false),
        ];
        for (trust, data, unsafe_) in table {
            assert_eq!(
                paste_is_unsafe(&p(*trust, data)),
                *unsafe_,
                "{trust:?} {data:?}"
            );
        }
    }

    // [INPUT.ENCODE.PASTE.1] R15.
    #[test]
    fn bracketing_and_lf_to_cr() {
        let t = p(PasteTrust::Trusted, b"a\nb\r\nc");
        assert_eq!(enc(&t, false).unwrap(), b"a\rb\r\rc");
        assert_eq!(enc(&t, true).unwrap(), b"\x1b[200~a\nb\r\nc\x1b[201~");
        assert_eq!(
            enc(&p(PasteTrust::Trusted, b""), true).unwrap(),
            b"\x1b[200~\x1b[201~"
        );
    }

    // [INPUT.ENCODE.PASTE.2] [INPUT.ENCODE.PASTE.3] R15: the sixteen stripped bytes.
    #[test]
    fn untrusted_controls_become_spaces_trusted_are_exact() {
        let stripped = [
            0x00u8, 0x03, 0x04, 0x05, 0x08, 0x0f, 0x11, 0x12, 0x13, 0x15, 0x16, 0x17, 0x1a, 0x1b,
            0x1c, 0x7f,
        ];
        for b in 0u8..=0x7f {
            let data = [b'<', b, b'>'];
            if b == b'\n' {
                continue; // unsafe, refused
            }
            let got = enc(&p(PasteTrust::Untrusted, &data), true).unwrap();
            let mid = if stripped.contains(&b) { b' ' } else { b };
            assert_eq!(
                got,
                [BRACKET_START, &[b'<', mid, b'>'], BRACKET_END].concat()
            );
            let trusted = enc(&p(PasteTrust::Trusted, &data), true).unwrap();
            assert_eq!(trusted, [BRACKET_START, &data[..], BRACKET_END].concat());
        }
        // Unbracketed untrusted: CR and TAB pass, ESC and ^C become spaces.
        assert_eq!(
            enc(&p(PasteTrust::Untrusted, b"a\tb\rc\x1bd\x03"), false).unwrap(),
            b"a\tb\rc d "
        );
    }

    #[test]
    fn unsafe_paste_is_refused_by_the_encoder() {
        let mut out = b"x".to_vec();
        assert_eq!(
            encode_paste(
                &p(PasteTrust::Untrusted, b"a\nb"),
                &TerminalModes::default(),
                &mut out
            ),
            Err(EncodeError::UnsafePaste)
        );
        assert_eq!(out, b"x");
    }

    #[test]
    fn encoded_len_is_exact() {
        for bracketed in [false, true] {
            let modes = TerminalModes {
                bracketed_paste: bracketed,
                ..TerminalModes::default()
            };
            let paste = p(PasteTrust::Untrusted, b"abc\x1b\r");
            let mut out = Vec::new();
            encode_paste(&paste, &modes, &mut out).unwrap();
            assert_eq!(out.len(), encoded_len(&paste, &modes));
        }
    }
}
