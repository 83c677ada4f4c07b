//! Paste: bracketing, LF→CR, the paste sanitizer, marker neutralisation and the unsafe-paste
//! rule.
//!
//! Two layers keep a paste's data from ending or restarting a bracketed paste:
//!
//! - [`neutralize_paste`], for a client before it sends anything: xterm's and ghostty's paste
//!   sanitizer (every byte of [`is_stripped`], ESC among them, becomes a space), plus kitty's
//!   rule for the 8-bit form of the markers. A client cannot know the terminal's modes or what
//!   a server will do with its bytes, so it makes the data safe under any encoding.
//! - the encoder itself, under bracketed paste ([INPUT.ENCODE.PASTE.5]): the ESC (or C1 CSI)
//!   that would introduce a start or end marker inside the data is written as a space, so a
//!   trusted paste from any client stays inside its brackets too.

use phux_proto::input::{PasteEvent, PasteTrust};

use super::EncodeError;
use crate::modes::TerminalModes;

const BRACKET_START: &[u8] = b"\x1b[200~";
const BRACKET_END: &[u8] = b"\x1b[201~";

/// ESC, the byte that starts both 7-bit markers.
const ESC: u8 = 0x1b;

/// C1 CSI (ECMA-48's 8-bit form of `ESC [`): `9b 32 30 31 7e` is the end marker to a program
/// that reads 8-bit controls, which is why kitty strips it from pastes as well.
const C1_CSI: u8 = 0x9b;

/// Whether an untrusted paste must be refused under `modes`, the snapshot it is encoded
/// against: it is untrusted AND (not valid UTF-8, OR contains the end-of-paste marker
/// `ESC [ 2 0 1 ~`, OR contains LF while bracketed paste is off). Trusted pastes are never
/// checked.
pub fn paste_is_unsafe(paste: &PasteEvent, modes: &TerminalModes) -> bool {
    // [INPUT.PASTE.SAFE.2] Only untrusted pastes run the check.
    if paste.trust == PasteTrust::Trusted {
        return false;
    }
    let data = &paste.data;
    // [INPUT.PASTE.SAFE.5] Invalid UTF-8, the end marker (a sign that whoever made the data
    // meant to break out of a paste), or a line feed the program would take as Enter: only
    // outside a bracketed paste does LF submit a line.
    (data.contains(&b'\n') && !modes.bracketed_paste)
        || contains_end_marker(data)
        || std::str::from_utf8(data).is_err()
}

/// Whether `ESC [ 2 0 1 ~` occurs in `data`; jumps from ESC to ESC, which is much faster than
/// comparing every 6-byte window of a long paste.
fn contains_end_marker(data: &[u8]) -> bool {
    let mut rest = data;
    while let Some(i) = rest.iter().position(|&b| b == ESC) {
        let (_, tail) = rest.split_at(i);
        if tail.starts_with(BRACKET_END) {
            return true;
        }
        rest = tail.get(1..).unwrap_or_default();
    }
    false
}

/// Whether `b` is one of the controls an untrusted paste may not carry (R15): the bytes
/// xterm's default `disallowedPasteControls` (BS, DEL, ENQ, EOT, ESC, NUL, and the tty's
/// special characters at their usual values) and ghostty's paste encoder replace with a space:
/// signal and line-editing controls, and ESC, which starts every escape sequence a program
/// reads as keys or as the end of a paste.
pub(crate) fn is_stripped(b: u8) -> bool {
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

/// The paste sanitizer a client applies before sending text as a paste: every byte of
/// [`is_stripped`] (ESC, signal and line-editing controls) and every C1 CSI byte that begins
/// `200~` or `201~` outside a UTF-8 character becomes a space. Tab, CR, LF and all other
/// bytes are kept.
///
/// The result holds no bracketed-paste marker in either form, whatever the server then does:
/// a server that writes the data unchanged (ours, for a trusted paste) and one that blanks
/// controls itself (the phux reference) write the same bytes. The length never changes, so
/// splitting the result into operations cannot make a marker either.
pub fn neutralize_paste(data: &mut [u8]) {
    // [CLIENT.PASTE.4] The 8-bit markers first, while the UTF-8 around them is as sent.
    blank_c1_markers(data);
    for b in data.iter_mut() {
        if is_stripped(*b) {
            *b = b' ';
        }
    }
}

/// Replaces with a space the byte that introduces each start or end marker in `data`: the ESC
/// of `ESC [ 2 0 0 ~` / `ESC [ 2 0 1 ~`, and a C1 CSI that is not part of a UTF-8 character
/// before `2 0 0 ~` / `2 0 1 ~`. Replacing (rather than deleting, as kitty does) creates no
/// new ESC or CSI, so one pass leaves no marker behind and the length stays the same.
fn blank_markers(data: &mut [u8]) {
    let mut from = 0;
    while let Some(i) = data
        .get(from..)
        .and_then(|rest| rest.iter().position(|&b| b == ESC))
    {
        let at = from + i;
        if data
            .get(at + 1..)
            .and_then(|rest| rest.strip_prefix(b"["))
            .is_some_and(is_marker_tail)
        {
            data[at] = b' ';
        }
        from = at + 1;
    }
    blank_c1_markers(data);
}

/// Replaces with a space each C1 CSI byte outside a UTF-8 character that begins `200~` or
/// `201~` (`C3 9B`, "Û", is a character and stays).
fn blank_c1_markers(data: &mut [u8]) {
    if !data.contains(&C1_CSI) {
        return;
    }
    let mut strays = Vec::new();
    let mut offset = 0;
    for chunk in data.utf8_chunks() {
        let invalid_at = offset + chunk.valid().len();
        strays.extend(
            chunk
                .invalid()
                .iter()
                .enumerate()
                .filter(|&(_, &b)| b == C1_CSI)
                .map(|(i, _)| invalid_at + i),
        );
        offset = invalid_at + chunk.invalid().len();
    }
    for at in strays {
        if data.get(at + 1..).is_some_and(is_marker_tail) {
            data[at] = b' ';
        }
    }
}

/// Whether `rest` (what follows a CSI) is `200~` or `201~`.
fn is_marker_tail(rest: &[u8]) -> bool {
    rest.starts_with(b"200~") || rest.starts_with(b"201~")
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
/// controls replaced by spaces first; a trusted one is written exactly, except that under
/// bracketed paste a marker inside it cannot end or restart the paste.
///
/// An unsafe untrusted paste (see [`paste_is_unsafe`]) is refused and nothing is appended.
pub fn encode_paste(
    paste: &PasteEvent,
    modes: &TerminalModes,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    if paste_is_unsafe(paste, modes) {
        return Err(EncodeError::UnsafePaste);
    }
    encode_checked(paste, modes, out);
    Ok(())
}

/// [`encode_paste`] for a paste already known to pass [`paste_is_unsafe`] (APPLY_INPUT step 7
/// checked the whole batch), so a long paste is not scanned twice.
pub(super) fn encode_checked(paste: &PasteEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
    let untrusted = paste.trust == PasteTrust::Untrusted;
    out.reserve(encoded_len(paste, modes));
    // [INPUT.ENCODE.PASTE.1] Bracketed paste wraps the data in the 200/201 markers.
    if modes.bracketed_paste {
        out.extend_from_slice(BRACKET_START);
    }
    if !untrusted && modes.bracketed_paste {
        // [INPUT.ENCODE.PASTE.4] Trusted data is written exactly, but for
        // [INPUT.ENCODE.PASTE.5]: a marker in it is not one the program can act on.
        let start = out.len();
        out.extend_from_slice(&paste.data);
        blank_markers(&mut out[start..]);
    } else {
        out.extend(paste.data.iter().map(|&b| {
            // [INPUT.ENCODE.PASTE.3] An accepted untrusted paste has its signal and
            // line-editing controls and ESC replaced by a space (which also blanks every
            // marker, [INPUT.ENCODE.PASTE.5]).
            if untrusted && is_stripped(b) {
                b' '
            // [INPUT.ENCODE.PASTE.2] Without bracketing, LF becomes CR (what Enter sends).
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(trust: PasteTrust, data: &[u8]) -> PasteEvent {
        PasteEvent {
            trust,
            data: data.to_vec(),
        }
    }

    fn modes(bracketed: bool) -> TerminalModes {
        TerminalModes {
            bracketed_paste: bracketed,
            ..TerminalModes::default()
        }
    }

    fn enc(paste: &PasteEvent, bracketed: bool) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        encode_paste(paste, &modes(bracketed), &mut out).map(|()| out)
    }

    fn neutralized(data: &[u8]) -> Vec<u8> {
        let mut data = data.to_vec();
        neutralize_paste(&mut data);
        data
    }

    /// Where a marker starts in `data`, in either form, found the slow way: a C1 CSI counts
    /// unless some UTF-8 character (of 2 to 4 bytes, starting at most 3 bytes before it) holds
    /// it.
    fn markers(data: &[u8]) -> Vec<usize> {
        let in_char = |i: usize| {
            (i.saturating_sub(3)..i).any(|j| {
                (2..=4).any(|len| {
                    j + len > i
                        && data
                            .get(j..j + len)
                            .is_some_and(|c| std::str::from_utf8(c).is_ok())
                })
            })
        };
        (0..data.len())
            .filter(|&i| {
                let rest = &data[i..];
                [&b"\x1b[200~"[..], b"\x1b[201~"]
                    .iter()
                    .any(|m| rest.starts_with(m))
                    || (rest.first() == Some(&C1_CSI) && is_marker_tail(&rest[1..]) && !in_char(i))
            })
            .collect()
    }

    // [INPUT.PASTE.SAFE.5] [INPUT.PASTE.SAFE.2] The reference's rule, but for LF inside a
    // bracketed paste.
    #[test]
    fn unsafe_paste_rule() {
        use PasteTrust::{Trusted, Untrusted};
        // (trust, data, unsafe with bracketed paste off, unsafe with it on)
        let table: &[(PasteTrust, &[u8], bool, bool)] = &[
            (Untrusted, b"ls -l", false, false),
            (Untrusted, b"line\r", false, false), // CR alone is safe (and written as is)
            (Untrusted, b"\x1b[31m", false, false), // ESC alone is safe: it becomes a space
            (Untrusted, b"\x03\x04", false, false), // other controls: sanitized, not refused
            (Untrusted, b"two\nlines", true, false), // LF submits a line only unbracketed
            (Untrusted, b"\xff\xfe", true, true), // invalid UTF-8
            (Untrusted, b"x\x1b[201~y", true, true), // end marker
            (Untrusted, b"x\x1b[201", false, false), // an incomplete marker is not the marker
            (Untrusted, b"\x1b\x1b[201~", true, true), // marker right after another ESC
            (Untrusted, b"\x1b[201~", true, true), // marker alone
            (Untrusted, b"abc\x1b", false, false), // ESC as the last byte
            (Untrusted, b"\x1b[200~", false, false), // the start marker is not refused
            (Untrusted, "héllo".as_bytes(), false, false),
            (Trusted, b"two\nlines\xff\x1b[201~", false, false), // trusted is never checked
            (Untrusted, b"", false, false),
        ];
        for (trust, data, off, on) in table {
            let paste = p(*trust, data);
            assert_eq!(
                paste_is_unsafe(&paste, &modes(false)),
                *off,
                "{trust:?} {data:?}"
            );
            assert_eq!(
                paste_is_unsafe(&paste, &modes(true)),
                *on,
                "{trust:?} {data:?} bracketed"
            );
        }
    }

    // [INPUT.ENCODE.PASTE.1] [INPUT.ENCODE.PASTE.2] R15.
    #[test]
    fn bracketing_and_lf_to_cr() {
        let t = p(PasteTrust::Trusted, b"a\nb\r\nc");
        assert_eq!(enc(&t, false).unwrap(), b"a\rb\r\rc");
        assert_eq!(enc(&t, true).unwrap(), b"\x1b[200~a\nb\r\nc\x1b[201~");
        assert_eq!(
            enc(&p(PasteTrust::Trusted, b""), true).unwrap(),
            b"\x1b[200~\x1b[201~"
        );
        // [INPUT.PASTE.SAFE.5] An untrusted multi-line paste goes in whole under bracketing.
        assert_eq!(
            enc(&p(PasteTrust::Untrusted, b"a\nb"), true).unwrap(),
            b"\x1b[200~a\nb\x1b[201~"
        );
    }

    // [INPUT.ENCODE.PASTE.3] [INPUT.ENCODE.PASTE.4] R15: the sixteen stripped bytes.
    #[test]
    fn untrusted_controls_become_spaces_trusted_are_exact() {
        let stripped = [
            0x00u8, 0x03, 0x04, 0x05, 0x08, 0x0f, 0x11, 0x12, 0x13, 0x15, 0x16, 0x17, 0x1a, 0x1b,
            0x1c, 0x7f,
        ];
        for b in 0u8..=0x7f {
            let data = [b'<', b, b'>'];
            let got = enc(&p(PasteTrust::Untrusted, &data), true).unwrap();
            let mid = if stripped.contains(&b) { b' ' } else { b };
            assert_eq!(
                got,
                [BRACKET_START, &[b'<', mid, b'>'], BRACKET_END].concat()
            );
            let trusted = enc(&p(PasteTrust::Trusted, &data), true).unwrap();
            assert_eq!(trusted, [BRACKET_START, &data[..], BRACKET_END].concat());
            assert_eq!(is_stripped(b), stripped.contains(&b));
        }
        // Unbracketed untrusted: CR and TAB pass, ESC and ^C become spaces.
        assert_eq!(
            enc(&p(PasteTrust::Untrusted, b"a\tb\rc\x1bd\x03"), false).unwrap(),
            b"a\tb\rc d "
        );
    }

    // [INPUT.ENCODE.PASTE.5] Under bracketing, a trusted paste's own markers are blanked at
    // their first byte; everything else is exact. Without bracketing there is nothing to end.
    #[test]
    fn a_trusted_paste_cannot_end_its_brackets() {
        let cases: &[(&[u8], &[u8])] = &[
            (
                b"text\x1b[201~\x15echo PWNED\n",
                b"text [201~\x15echo PWNED\n",
            ),
            (b"\x1b[200~nested\x1b[201~", b" [200~nested [201~"),
            (b"\x1b\x1b[201~", b"\x1b [201~"),
            (b"\x1b[201\x1b[201~~", b"\x1b[201 [201~~"),
            (b"\x1b[202~\x1b[31m", b"\x1b[202~\x1b[31m"),
            (b"x\x9b201~y", b"x 201~y"),
            (b"\x9b200~", b" 200~"),
            // "Û201~": C3 9B is a character, not a C1 CSI.
            ("Û201~".as_bytes(), "Û201~".as_bytes()),
            (b"\x9b31m", b"\x9b31m"),
        ];
        for (data, body) in cases {
            assert_eq!(
                enc(&p(PasteTrust::Trusted, data), true).unwrap(),
                [BRACKET_START, body, BRACKET_END].concat(),
                "{data:?}"
            );
            let mut unbracketed = data.to_vec();
            for b in &mut unbracketed {
                if *b == b'\n' {
                    *b = b'\r';
                }
            }
            assert_eq!(
                enc(&p(PasteTrust::Trusted, data), false).unwrap(),
                unbracketed
            );
        }
    }

    // [CLIENT.PASTE.4] The client's sanitizer on the payload of issue 35: nothing of it can end
    // a paste, edit the line or stop a program, and the text stays readable.
    #[test]
    fn neutralized_payload() {
        assert_eq!(
            neutralized(b"text\x1b[201~\x15echo PWNED\n"),
            b"text [201~ echo PWNED\n"
        );
        assert_eq!(
            neutralized(b"a\tb\rc\n\x03\x7f\x9b201~"),
            b"a\tb\rc\n   201~"
        );
        assert_eq!(neutralized("Û201~ é".as_bytes()), "Û201~ é".as_bytes());
    }

    #[test]
    fn unsafe_paste_is_refused_by_the_encoder() {
        let mut out = b"x".to_vec();
        assert_eq!(
            encode_paste(&p(PasteTrust::Untrusted, b"a\nb"), &modes(false), &mut out),
            Err(EncodeError::UnsafePaste)
        );
        assert_eq!(out, b"x");
    }

    #[test]
    fn encoded_len_is_exact() {
        for bracketed in [false, true] {
            let paste = p(PasteTrust::Untrusted, b"abc\x1b\r");
            let mut out = Vec::new();
            encode_paste(&paste, &modes(bracketed), &mut out).unwrap();
            assert_eq!(out.len(), encoded_len(&paste, &modes(bracketed)));
        }
    }

    /// Bytes rich in the pieces markers are made of.
    fn marker_soup() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                any::<u8>().prop_map(|b| vec![b]),
                Just(b"\x1b".to_vec()),
                Just(b"[".to_vec()),
                Just(b"\x1b[200~".to_vec()),
                Just(b"\x1b[201~".to_vec()),
                Just(b"\x9b201~".to_vec()),
                Just(b"\x9b200~".to_vec()),
                Just(b"201~".to_vec()),
                Just("Û".as_bytes().to_vec()),
                Just("é\n".as_bytes().to_vec()),
            ],
            0..40,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        // [INPUT.ENCODE.PASTE.5] Whatever the data and its trust, an accepted bracketed paste
        // holds exactly two markers: the encoder's own, first and last. A trusted paste
        // differs from its data only where a marker began, by a space.
        #[test]
        fn a_bracketed_paste_holds_only_its_own_markers(
            data in marker_soup(),
            untrusted in any::<bool>(),
        ) {
            let trust = if untrusted { PasteTrust::Untrusted } else { PasteTrust::Trusted };
            let Ok(out) = enc(&p(trust, &data), true) else {
                prop_assert!(untrusted);
                return Ok(());
            };
            prop_assert_eq!(markers(&out), vec![0, out.len() - BRACKET_END.len()]);
            let body = &out[BRACKET_START.len()..out.len() - BRACKET_END.len()];
            prop_assert_eq!(body.len(), data.len());
            if !untrusted {
                let begun = markers(&data);
                for (i, (&was, &now)) in data.iter().zip(body).enumerate() {
                    if begun.contains(&i) {
                        prop_assert_eq!(now, b' ');
                    } else {
                        prop_assert_eq!(now, was);
                    }
                }
            }
        }

        // [CLIENT.PASTE.4] The client's sanitizer: same length, idempotent, no stripped byte and no marker
        // left, every other byte unchanged, UTF-8 stays UTF-8; and however the client then
        // splits the result into operations, each part, bracketed, holds only its own two
        // markers and its data exactly.
        #[test]
        fn neutralized_data_cannot_make_a_marker(data in marker_soup(), limit in 4usize..64) {
            let clean = neutralized(&data);
            prop_assert_eq!(clean.len(), data.len());
            prop_assert_eq!(neutralized(&clean), clean.clone());
            prop_assert!(!clean.iter().copied().any(is_stripped));
            prop_assert!(markers(&clean).is_empty());
            let begun = markers(&data);
            for (i, (&was, &now)) in data.iter().zip(&clean).enumerate() {
                if now != was {
                    prop_assert!(is_stripped(was) || begun.contains(&i));
                    prop_assert_eq!(now, b' ');
                }
            }
            if std::str::from_utf8(&data).is_ok() {
                prop_assert!(std::str::from_utf8(&clean).is_ok());
            }
            for piece in crate::client::outbox::split_utf8(&clean, limit) {
                let out = enc(&p(PasteTrust::Trusted, piece), true).unwrap();
                prop_assert_eq!(markers(&out), vec![0, out.len() - BRACKET_END.len()]);
                prop_assert_eq!(&out[BRACKET_START.len()..out.len() - BRACKET_END.len()], piece);
            }
        }
    }
}
