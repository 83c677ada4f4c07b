//! The model as data: a terminal written out and read back is the same terminal, now and
//! after any further output, however the stream was cut ([SERVER.UPGRADE.STATE.2]).

use super::*;

fn round_trip(t: &Terminal) -> Terminal {
    let bytes = postcard::to_stdvec(t).expect("a model serializes");
    postcard::from_bytes(&bytes).expect("and reads back")
}

fn image(t: &Terminal) -> Vec<u8> {
    postcard::to_stdvec(t).expect("a model serializes")
}

/// Everything a server reads from a model: the screen document with cells and all history,
/// the bootstrap, modes, title, and the bells and replies waiting to be taken.
fn everything(t: &mut Terminal) -> (String, Vec<u8>, TerminalModes, Option<String>, u32, Vec<u8>) {
    (
        t.screen_json(1, Some(0), true),
        t.bootstrap(),
        t.modes(),
        t.title().map(str::to_owned),
        t.take_bells(),
        t.take_replies(),
    )
}

/// Ends mid-sequence and mid-character: the parser's state must cross the round trip.
fn cut_stream() -> impl Strategy<Value = Vec<u8>> {
    const TAILS: &[&[u8]] = &[
        b"",
        b"\x1b",
        b"\x1b[",
        b"\x1b[3",
        b"\x1b[38;2;1",
        b"\x1b[?104",
        b"\x1b]2;half a ti",
        b"\x1bP1$",
        b"\xe4",
        b"\xe4\xb8",
        b"\xf0\x9f\x98",
        b"\x1b(",
        b"\x1b[>",
        b"\x1b[5",
    ];
    (stream(), prop::sample::select(TAILS)).prop_map(|(mut s, tail)| {
        s.extend_from_slice(tail);
        s
    })
}

/// Queries the model answers, and their completions for the other side of a cut.
fn queries() -> impl Strategy<Value = Vec<u8>> {
    const QUERIES: &[&[u8]] = &[
        b"\x1b[c",
        b"6n",
        b"\x1b[6n",
        b"\x1b[?u",
        b"\x1b[?2004$p",
        b"$p",
        b"\x1b]10;?\x07",
        b"\x1b]11;?\x1b\\",
        b"0c",
        b"\x07\x07",
        b"\xb8\xad text",
        b"\x98\x80",
    ];
    prop::sample::select(QUERIES).prop_map(<[u8]>::to_vec)
}

proptest! {
    #[test]
    fn a_round_trip_changes_nothing_now_or_later(
        before in cut_stream(),
        styled in styled_stream(),
        after in proptest::collection::vec(prop_oneof![stream(), queries(), styled_stream()], 0..6),
        resize in proptest::option::of((1u16..30, 1u16..10)),
        resized_before in proptest::option::of((1u16..30, 1u16..10)),
    ) {
        let mut a = Terminal::new(12, 4, 30);
        a.advance(&styled);
        // A resize before the alternate screen was ever entered leaves it narrower or wider
        // than the screen: a state that must read back too.
        if let Some((cols, rows)) = resized_before {
            a.resize(cols, rows);
        }
        a.advance(b"\r\n");
        a.advance(&before);
        let mut b = round_trip(&a);
        prop_assert_eq!(image(&a), image(&b), "the image is exact");
        prop_assert_eq!(everything(&mut a), everything(&mut b));
        if let Some((cols, rows)) = resize {
            a.resize(cols, rows);
            b.resize(cols, rows);
        }
        for chunk in &after {
            a.advance(chunk);
            b.advance(chunk);
            prop_assert_eq!(everything(&mut a), everything(&mut b));
            prop_assert_eq!(observable(&a), observable(&b));
        }
        prop_assert_eq!(image(&a), image(&b));
    }

    /// [SERVER.UPGRADE.STATE.5] Bytes that are not a model are refused, never a panic; a model that reads back is
    /// one the terminal can run on.
    #[test]
    fn arbitrary_bytes_never_make_a_model_that_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        if let Ok(mut t) = postcard::from_bytes::<Terminal>(&bytes) {
            t.advance(b"x\x1b[2J\x1b[10;10Hy\r\n\x1b[?1049h");
            let _ = everything(&mut t);
        }
    }

    /// A corrupted image is refused or runs: flipping any byte of a real one never panics.
    #[test]
    fn a_corrupted_model_is_refused_or_runs(
        bytes in stream(),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
    ) {
        let mut t = Terminal::new(7, 3, 5);
        t.advance(&bytes);
        let mut image = image(&t);
        let i = at.index(image.len());
        image[i] = value;
        if let Ok(mut t) = postcard::from_bytes::<Terminal>(&image) {
            t.advance(b"x\x1b[2J\x1b[3;3Hy\r\n\x1b[?1049h\x1b[Lz");
            t.resize(9, 2);
            let _ = everything(&mut t);
        }
    }
}

#[test]
fn a_terminal_with_history_and_both_screens_round_trips() {
    let mut a = Terminal::new(20, 5, 100);
    for i in 0..60 {
        a.advance(format!("\x1b[3{}mline {i} \u{4e2d}e\u{301}\r\n", i % 8).as_bytes());
    }
    a.advance(b"\x1b]2;the title\x07\x1b[?1049h\x1b[>5u\x1b[2;4r\x1b[?1h\x1b[?2004h alt");
    a.advance(b"\x1b[6n\x07");
    let mut b = round_trip(&a);
    assert_eq!(b.scrollback_len(), a.scrollback_len());
    assert_eq!(everything(&mut a), everything(&mut b));
    a.advance(b"\x1b[?1049l\x1b[<u more\r\n");
    b.advance(b"\x1b[?1049l\x1b[<u more\r\n");
    assert_eq!(everything(&mut a), everything(&mut b));
}

#[test]
fn a_truncated_model_is_refused() {
    let mut a = Terminal::new(5, 2, 3);
    a.advance(b"one\r\ntwo\r\nthree");
    let bytes = image(&a);
    for len in 0..bytes.len() {
        assert!(
            postcard::from_bytes::<Terminal>(&bytes[..len]).is_err(),
            "{len} of {} bytes",
            bytes.len()
        );
    }
}
