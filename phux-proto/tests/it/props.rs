//! Property tests: every frame kind round-trips through the canonical encoding, canonical
//! bytes re-encode identically, and no input (arbitrary, truncated or mutated) panics.

use proptest::prelude::*;

mod strategies {
    use arbitrary::{Arbitrary, Unstructured};
    use phux_proto::Frame;
    use phux_proto::frame::*;
    use proptest::prelude::*;

    /// How many frame kinds `frame_of_kind` builds.
    pub(crate) const KINDS: usize = 26;

    /// A frame of kind `kind` (`0..KINDS`) built from `seed` through the `arbitrary` impls,
    /// which keep every wire invariant (non-zero ids, bounds, legal pairs).
    pub(crate) fn frame_of_kind(kind: usize, seed: &[u8]) -> Frame {
        let u = &mut Unstructured::new(seed);
        fn a<'a, T: Arbitrary<'a>>(u: &mut Unstructured<'a>) -> T {
            T::arbitrary(u).expect("arbitrary never fails on short input")
        }
        match kind {
            0 => Frame::Hello(a(u)),
            1 => Frame::HelloOk(a(u)),
            2 => Frame::Ping(a(u)),
            3 => Frame::Pong(a(u)),
            4 => Frame::Detach,
            5 => Frame::Detached(a(u)),
            6 => Frame::Error(a(u)),
            7 => Frame::Command(a(u)),
            8 => Frame::CommandResult(a(u)),
            9 => Frame::InputKey(a(u)),
            10 => Frame::InputPaste(a(u)),
            11 => Frame::InputMouse(a(u)),
            12 => Frame::InputFocus(a(u)),
            13 => Frame::ViewportResize(a(u)),
            14 => Frame::SpawnTerminal(a(u)),
            15 => Frame::TerminalResize(a(u)),
            16 => Frame::TerminalClosed(a(u)),
            17 => Frame::TerminalSpawned(a(u)),
            18 => Frame::TerminalOutput(a(u)),
            19 => Frame::BootstrapBegin(a(u)),
            20 => Frame::BootstrapChunk(a(u)),
            21 => Frame::BootstrapReady(a(u)),
            22 => Frame::BootstrapTombstone(a(u)),
            23 => Frame::SubscribeEvents(a(u)),
            24 => Frame::Event(a::<EventFrame>(u)),
            _ => Frame::Bell(a(u)),
        }
    }

    /// Any frame, every kind equally likely.
    pub(crate) fn frame() -> impl Strategy<Value = Frame> {
        (0..KINDS, proptest::collection::vec(any::<u8>(), 0..512))
            .prop_map(|(kind, seed)| frame_of_kind(kind, &seed))
    }

    /// Every vector's bytes, from the committed vector file.
    pub(crate) fn vector_bytes() -> Vec<Vec<u8>> {
        let text = include_str!("../../testdata/vectors.md");
        let mut out = Vec::new();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line == "```"
                && let Some(hex) = lines.next()
            {
                let hex = hex.trim();
                out.push(
                    (0..hex.len())
                        .step_by(2)
                        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                        .collect(),
                );
                lines.next();
            }
        }
        out
    }
}

use phux_proto::Frame;
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{CommandFrame, TerminalOutput, TerminalOutputView};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    // [FIELD.CANON.1] decode(encode(v)) == v, and encode(decode(b)) == b for canonical b.
    #[test]
    fn every_frame_round_trips(frame in strategies::frame()) {
        let bytes = frame.to_bytes();
        let decoded = Frame::decode(&bytes);
        prop_assert_eq!(decoded.as_ref(), Ok(&frame), "bytes {:02x?}", bytes);
        prop_assert_eq!(decoded.unwrap().to_bytes(), bytes);
    }

    // The borrowed form a server fans out encodes exactly as the owned frame, after
    // whatever is already in the buffer.
    #[test]
    fn borrowed_terminal_output_encodes_as_the_frame(
        seed in proptest::collection::vec(any::<u8>(), 0..512),
        prefix in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let Frame::TerminalOutput(out) = strategies::frame_of_kind(18, &seed) else {
            unreachable!("kind 18 is TERMINAL_OUTPUT");
        };
        let mut borrowed = prefix.clone();
        out.borrowed().encode(&mut borrowed);
        let mut owned = prefix;
        Frame::TerminalOutput(out).encode(&mut owned);
        prop_assert_eq!(borrowed, owned);
    }

    // A server fanning a chunk out encodes its head once and appends each viewer's tail:
    // together they are exactly the frame, and any stream and bootstrap fit the same head.
    #[test]
    fn terminal_output_head_and_tail_make_the_frame(
        seed in proptest::collection::vec(any::<u8>(), 0..512),
        other_seed in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let Frame::TerminalOutput(out) = strategies::frame_of_kind(18, &seed) else {
            unreachable!("kind 18 is TERMINAL_OUTPUT");
        };
        let Frame::TerminalOutput(other) = strategies::frame_of_kind(18, &other_seed) else {
            unreachable!("kind 18 is TERMINAL_OUTPUT");
        };
        let viewer = TerminalOutput { stream: other.stream, bootstrap: other.bootstrap, ..out.clone() };
        let mut head = Vec::new();
        out.borrowed().encode_head(&mut head);
        let mut split = head.clone();
        split.extend_from_slice(viewer.borrowed().tail().as_bytes());
        let mut whole = Vec::new();
        Frame::TerminalOutput(viewer.clone()).encode(&mut whole);
        prop_assert_eq!(&split, &whole);
        prop_assert_eq!(Frame::decode(&split), Ok(Frame::TerminalOutput(viewer)));
    }

    // An APPLY_INPUT encoded from a borrow (what the server hashes) is exactly the COMMAND
    // frame the owned command encodes.
    #[test]
    fn borrowed_apply_input_encodes_as_the_command_frame(
        seed in proptest::collection::vec(any::<u8>(), 0..512),
        request_id in any::<u32>(),
        prefix in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        let apply: ApplyInput = arbitrary::Arbitrary::arbitrary(
            &mut arbitrary::Unstructured::new(&seed),
        ).expect("arbitrary never fails on short input");
        let mut borrowed = prefix.clone();
        apply.encode_command(request_id, &mut borrowed);
        let mut owned = prefix;
        Frame::Command(CommandFrame { request_id, command: Command::ApplyInput(apply) })
            .encode(&mut owned);
        prop_assert_eq!(borrowed, owned);
    }

    // The borrowed decode a client uses for output agrees with the owned one on every frame,
    // and on arbitrary bodies behind a TERMINAL_OUTPUT header: the same frame or the same
    // error, and `None` for any other well-formed frame.
    #[test]
    fn terminal_output_view_decodes_as_the_frame(
        frame in strategies::frame(),
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let bytes = frame.to_bytes();
        match (TerminalOutputView::decode(&bytes), frame) {
            (Ok(Some(view)), Frame::TerminalOutput(out)) => prop_assert_eq!(view.into_owned(), out),
            (Ok(None), other) => prop_assert!(!matches!(other, Frame::TerminalOutput(_))),
            (got, frame) => prop_assert!(false, "{:?} decoded as {:?}", frame, got),
        }
        let mut raw = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        raw.push(0x90);
        raw.extend_from_slice(&body);
        let owned = Frame::decode(&raw);
        match TerminalOutputView::decode(&raw) {
            Ok(Some(view)) => prop_assert_eq!(owned, Ok(Frame::TerminalOutput(view.into_owned()))),
            Ok(None) => prop_assert!(false, "type 0x90 is TERMINAL_OUTPUT"),
            Err(e) => prop_assert_eq!(owned, Err(e)),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Frame::decode(&bytes);
        let _ = phux_proto::framing::parse_header(&bytes);
    }

    // Arbitrary bodies behind a valid header for every type byte: decoding reaches every
    // body decoder, and whatever decodes is canonical after one re-encode.
    #[test]
    fn arbitrary_bodies_never_panic(tag in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        bytes.push(tag);
        bytes.extend_from_slice(&body);
        if let Ok(frame) = Frame::decode(&bytes) {
            let canonical = frame.to_bytes();
            prop_assert_eq!(Frame::decode(&canonical), Ok(frame));
        }
    }
}

#[test]
fn every_kind_is_generated() {
    for kind in 0..strategies::KINDS {
        let frame = strategies::frame_of_kind(kind, &[0x5a; 64]);
        assert_eq!(Frame::decode(&frame.to_bytes()), Ok(frame), "kind {kind}");
    }
}

/// Every truncation and every single-byte mutation (all 256 values) of every vector: no
/// panic, and a frame that decodes re-encodes to something that decodes the same.
#[test]
fn truncations_and_mutations_of_every_vector_never_panic() {
    let mut checked = 0usize;
    for bytes in strategies::vector_bytes() {
        for cut in 0..bytes.len() {
            let _ = Frame::decode(&bytes[..cut]);
            checked += 1;
        }
        let mut mutated = bytes.clone();
        for i in 0..bytes.len() {
            for value in 0..=255u8 {
                mutated[i] = value;
                if let Ok(frame) = Frame::decode(&mutated) {
                    assert_eq!(Frame::decode(&frame.to_bytes()).as_ref(), Ok(&frame));
                }
                checked += 1;
            }
            mutated[i] = bytes[i];
        }
    }
    assert!(checked > 100_000, "only {checked} inputs");
}
