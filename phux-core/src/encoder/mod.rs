//! `InputEncoder`: input atoms to the bytes a PTY receives, under one [`TerminalModes`] snapshot.
//!
//! Pure functions, no state: the caller (the server engine) takes one snapshot of the terminal's
//! modes per batch (APPLY_INPUT step 8 encodes every event against ONE snapshot), passes the cell
//! geometry of the last VIEWPORT_RESIZE (our rule R16), and gets bytes back.
//!
//! | what | function | clauses |
//! |---|---|---|
//! | keys, legacy xterm and kitty | [`encode_key`] | INPUT.ENCODE.KEY.*, INPUT.ENCODE.KITTY.* |
//! | mouse | [`encode_mouse`] | INPUT.ENCODE.MOUSE.* |
//! | focus | [`encode_focus`] | INPUT.ENCODE.FOCUS.* |
//! | paste | [`encode_paste`], [`paste_is_unsafe`] | INPUT.ENCODE.PASTE.*, INPUT.PASTE.SAFE.* |
//! | a whole APPLY_INPUT batch (steps 7-8) | [`encode_batch`] | INPUT.APPLY.* |
//! | the canonical-line guard (at the writer) | [`crate::writer::PtyWriter`] | INPUT.CANON.* |
//!
//! Events that the terminal's modes say produce nothing (a focus change with mode 1004 off, a
//! key release in legacy mode, a mouse event with tracking off) append zero bytes and succeed.

mod key;
mod mouse;
mod paste;

pub use key::{ctrl_byte, encode_key, types_input};
pub use mouse::encode_mouse;
pub use paste::{encode_paste, neutralize_paste, paste_is_unsafe};

use phux_proto::ErrorCode;
use phux_proto::input::{FocusEvent, InputEvent};

use crate::modes::TerminalModes;

/// The most encoded PTY bytes one APPLY_INPUT batch may produce (phux 0.8 section 8.2 step 8):
/// one batch is one contiguous PTY job, so this bounds how long one job can hold a terminal.
pub const MAX_ENCODED_BATCH: usize = 65_536;

/// The size of one character cell in surface pixels, used to turn mouse pixels into cells.
///
/// Our rule R16: the cell size is the last VIEWPORT_RESIZE's `pixel_w / cols` and
/// `pixel_h / rows`; without pixel sizes it is 1x1 (cell-quantized clients then send cells).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub struct CellGeometry {
    /// Width of one cell in pixels; never 0.
    pub cell_width_px: u16,
    /// Height of one cell in pixels; never 0.
    pub cell_height_px: u16,
}

impl Default for CellGeometry {
    fn default() -> Self {
        Self::ONE_BY_ONE
    }
}

impl CellGeometry {
    /// One pixel per cell: mouse coordinates are already cells.
    pub const ONE_BY_ONE: Self = Self {
        cell_width_px: 1,
        cell_height_px: 1,
    };

    /// The geometry of a VIEWPORT_RESIZE (R16): `pixel_w / cols` by `pixel_h / rows`, each
    /// falling back to 1 when the pixel size is absent, the cell count is 0, or the quotient
    /// is 0 (a viewport narrower in pixels than in cells).
    pub fn from_viewport(cols: u16, rows: u16, pixel_w: Option<u16>, pixel_h: Option<u16>) -> Self {
        fn per_cell(pixels: Option<u16>, cells: u16) -> u16 {
            match pixels {
                Some(px) if cells > 0 => (px / cells).max(1),
                _ => 1,
            }
        }
        Self {
            cell_width_px: per_cell(pixel_w, cols),
            cell_height_px: per_cell(pixel_h, rows),
        }
    }
}

/// Why one event could not be encoded.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// An untrusted paste that breaks the unsafe-paste rule reached the encoder. Callers check
    /// [`paste_is_unsafe`] first; this is the encoder refusing to write it anyway.
    #[error("untrusted paste is unsafe (invalid UTF-8, LF, or an end-of-paste marker)")]
    UnsafePaste,
}

impl EncodeError {
    /// The wire code for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnsafePaste => ErrorCode::UNSAFE_PASTE,
        }
    }
}

/// Why an APPLY_INPUT batch was refused before any byte was handed to the PTY.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// Step 7: the event at `index` is an unsafe untrusted paste; nothing is encoded.
    #[error("APPLY_INPUT batch contains an unsafe paste (event {index})")]
    UnsafePaste {
        /// The position of the first unsafe paste in the batch.
        index: usize,
    },
    /// Step 8: the encoded bytes would exceed [`MAX_ENCODED_BATCH`].
    #[error("APPLY_INPUT encoded PTY bytes exceed 64 KiB ({len} bytes)")]
    TooLarge {
        /// The running total at the event that crossed the bound.
        len: usize,
    },
    /// Step 8: the key event at `index` types input (it carries text, or is a key that types
    /// a character) but encodes to no bytes under the terminal's modes; answering OK would
    /// report as delivered a key the program never gets.
    #[error(
        "APPLY_INPUT event {index} types input but encodes to no bytes under the terminal's modes"
    )]
    TypesNothing {
        /// The position of the key event in the batch.
        index: usize,
    },
    /// Step 8: the event at `index` could not be encoded.
    #[error("APPLY_INPUT event encoding failed (event {index}): {source}")]
    Encode {
        /// The position of the event in the batch.
        index: usize,
        /// What went wrong.
        source: EncodeError,
    },
}

impl BatchError {
    /// The wire code the APPLY_INPUT result carries (phux 0.8 section 8.2 steps 7-8).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnsafePaste { .. } => ErrorCode::UNSAFE_PASTE,
            Self::TooLarge { .. } | Self::TypesNothing { .. } | Self::Encode { .. } => {
                ErrorCode::INVALID_COMMAND
            }
        }
    }
}

/// Appends the PTY bytes for one input event to `out`.
///
/// On error nothing is appended.
pub fn encode_event(
    event: &InputEvent,
    modes: &TerminalModes,
    cells: CellGeometry,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    match event {
        InputEvent::Key(key) => {
            encode_key(key, modes, out);
            Ok(())
        }
        InputEvent::Mouse(mouse) => {
            encode_mouse(mouse, modes, cells, out);
            Ok(())
        }
        InputEvent::Focus(focus) => {
            encode_focus(*focus, modes, out);
            Ok(())
        }
        InputEvent::Paste(paste) => encode_paste(paste, modes, out),
    }
}

/// Appends the focus report for `focus`: `CSI I` (gained) / `CSI O` (lost) under mode 1004.
pub fn encode_focus(focus: FocusEvent, modes: &TerminalModes, out: &mut Vec<u8>) {
    // [INPUT.ENCODE.FOCUS.1] Focus is reported only while the program has mode 1004 on;
    // otherwise the event contributes no bytes.
    if !modes.focus_reporting {
        return;
    }
    out.extend_from_slice(match focus {
        FocusEvent::Gained => b"\x1b[I",
        FocusEvent::Lost => b"\x1b[O",
    });
}

/// What one key press usually encodes to, at most (a CSI sequence with modifiers).
const TYPICAL_EVENT_BYTES: usize = 16;

/// Encodes a whole APPLY_INPUT batch against one modes snapshot (phux 0.8 section 8.2 steps
/// 7 and 8) into one contiguous PTY job.
///
/// An all-empty batch (say, focus events with 1004 off) is `Ok` with no bytes: it still goes
/// to the writer and completes OK.
pub fn encode_batch(
    events: &[InputEvent],
    modes: &TerminalModes,
    cells: CellGeometry,
) -> Result<Vec<u8>, BatchError> {
    // [INPUT.APPLY.7] Any unsafe paste anywhere refuses the whole batch before a single
    // event is encoded (step 7 precedes step 8).
    if let Some(index) = events
        .iter()
        .position(|ev| matches!(ev, InputEvent::Paste(p) if paste_is_unsafe(p, modes)))
    {
        return Err(BatchError::UnsafePaste { index });
    }
    // Room for a typical key's bytes per event, so a short batch is encoded without
    // regrowing; bounded, since a batch holds at most 256 events.
    let mut out = Vec::with_capacity(events.len().saturating_mul(TYPICAL_EVENT_BYTES));
    for (index, event) in events.iter().enumerate() {
        // A paste's encoded size is known up front; refuse before allocating for it, so a
        // huge paste never costs more memory than the bound.
        if let InputEvent::Paste(p) = event {
            let len = out.len().saturating_add(paste::encoded_len(p, modes));
            if len > MAX_ENCODED_BATCH {
                return Err(BatchError::TooLarge { len });
            }
        }
        let before = out.len();
        match event {
            // Step 7 already vetted every paste.
            InputEvent::Paste(p) => paste::encode_checked(p, modes, &mut out),
            other => encode_event(other, modes, cells, &mut out)
                .map_err(|source| BatchError::Encode { index, source })?,
        }
        // [INPUT.APPLY.13] A key that types input must reach the program as bytes; the batch
        // is refused whole, before any of it is written.
        if out.len() == before
            && let InputEvent::Key(key) = event
            && types_input(key)
        {
            return Err(BatchError::TypesNothing { index });
        }
        // [INPUT.APPLY.8] The running total of encoded bytes must stay within 64 KiB.
        if out.len() > MAX_ENCODED_BATCH {
            return Err(BatchError::TooLarge { len: out.len() });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::{KittyFlags, MouseEncoding, MouseTracking};
    use phux_proto::input::{
        KeyAction, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent, PasteEvent, PasteTrust,
        PhysicalKey,
    };
    use proptest::prelude::*;

    fn text_key(text: &str) -> KeyEvent {
        KeyEvent {
            text: Some(text.to_owned()),
            ..KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE)
        }
    }

    fn paste(trust: PasteTrust, data: &[u8]) -> InputEvent {
        InputEvent::Paste(PasteEvent {
            trust,
            data: data.to_vec(),
        })
    }

    #[test]
    fn cell_geometry_from_viewport_r16() {
        assert_eq!(
            CellGeometry::from_viewport(80, 24, Some(800), Some(480)),
            CellGeometry {
                cell_width_px: 10,
                cell_height_px: 20
            }
        );
        assert_eq!(
            CellGeometry::from_viewport(80, 24, None, None),
            CellGeometry::ONE_BY_ONE
        );
        // Zero cells or fewer pixels than cells never yields a zero divisor.
        assert_eq!(
            CellGeometry::from_viewport(0, 24, Some(800), Some(10)),
            CellGeometry::ONE_BY_ONE
        );
        assert_eq!(CellGeometry::default(), CellGeometry::ONE_BY_ONE);
    }

    // [INPUT.ENCODE.FOCUS.1]
    #[test]
    fn focus_only_under_mode_1004() {
        let mut out = Vec::new();
        encode_focus(FocusEvent::Gained, &TerminalModes::default(), &mut out);
        assert!(out.is_empty());
        let modes = TerminalModes {
            focus_reporting: true,
            ..TerminalModes::default()
        };
        encode_focus(FocusEvent::Gained, &modes, &mut out);
        encode_focus(FocusEvent::Lost, &modes, &mut out);
        assert_eq!(out, b"\x1b[I\x1b[O");
    }

    // [INPUT.APPLY.7] One unsafe paste refuses the batch, even after events that would encode.
    #[test]
    fn batch_unsafe_paste_anywhere_refuses_everything() {
        let events = vec![
            InputEvent::Key(text_key("a")),
            paste(PasteTrust::Trusted, b"fine\n"),
            paste(PasteTrust::Untrusted, b"rm -rf /\n"),
        ];
        let err =
            encode_batch(&events, &TerminalModes::default(), CellGeometry::default()).unwrap_err();
        assert_eq!(err, BatchError::UnsafePaste { index: 2 });
        assert_eq!(err.code(), ErrorCode::UNSAFE_PASTE);
    }

    // [INPUT.APPLY.8] Exactly 64 KiB is accepted; one byte more is refused with 200.
    #[test]
    fn batch_total_bound() {
        let modes = TerminalModes::default();
        let full = vec![paste(PasteTrust::Trusted, &vec![b'x'; MAX_ENCODED_BATCH])];
        assert_eq!(
            encode_batch(&full, &modes, CellGeometry::default())
                .unwrap()
                .len(),
            MAX_ENCODED_BATCH
        );
        let over = vec![
            paste(PasteTrust::Trusted, &vec![b'x'; MAX_ENCODED_BATCH]),
            InputEvent::Key(text_key("y")),
        ];
        let err = encode_batch(&over, &modes, CellGeometry::default()).unwrap_err();
        assert_eq!(
            err,
            BatchError::TooLarge {
                len: MAX_ENCODED_BATCH + 1
            }
        );
        assert_eq!(err.code(), ErrorCode::INVALID_COMMAND);
        // Bracketing markers count: 65,524 data bytes + 12 marker bytes = 65,536.
        let bracketed = TerminalModes {
            bracketed_paste: true,
            ..modes
        };
        let fits = vec![paste(
            PasteTrust::Trusted,
            &vec![b'x'; MAX_ENCODED_BATCH - 12],
        )];
        assert!(encode_batch(&fits, &bracketed, CellGeometry::default()).is_ok());
        let spills = vec![paste(
            PasteTrust::Trusted,
            &vec![b'x'; MAX_ENCODED_BATCH - 11],
        )];
        assert_eq!(
            encode_batch(&spills, &bracketed, CellGeometry::default()),
            Err(BatchError::TooLarge {
                len: MAX_ENCODED_BATCH + 1
            })
        );
    }

    // [INPUT.APPLY.8] Focus with 1004 off contributes nothing; an all-empty batch is Ok.
    #[test]
    fn batch_all_empty_is_ok() {
        let events = vec![
            InputEvent::Focus(FocusEvent::Gained),
            InputEvent::Focus(FocusEvent::Lost),
        ];
        assert_eq!(
            encode_batch(&events, &TerminalModes::default(), CellGeometry::default()),
            Ok(Vec::new())
        );
        assert_eq!(
            encode_batch(&[], &TerminalModes::default(), CellGeometry::default()),
            Ok(Vec::new())
        );
    }

    #[test]
    fn batch_concatenates_in_order() {
        let modes = TerminalModes {
            focus_reporting: true,
            bracketed_paste: true,
            ..TerminalModes::default()
        };
        let events = vec![
            InputEvent::Focus(FocusEvent::Gained),
            InputEvent::Key(text_key("é")),
            paste(PasteTrust::Untrusted, b"a\x1bb"),
        ];
        assert_eq!(
            encode_batch(&events, &modes, CellGeometry::default()).unwrap(),
            "\x1b[Ié\x1b[200~a b\x1b[201~".as_bytes()
        );
    }

    // [INPUT.APPLY.13] A key that carries text the encoder cannot send refuses the whole
    // batch, keys before it included; keys that legitimately write nothing do not.
    #[test]
    fn batch_with_a_key_that_types_nothing_is_refused() {
        let modes = TerminalModes::default();
        let silent = KeyEvent {
            text: Some("\u{3}".to_owned()),
            ..KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE)
        };
        let events = vec![
            InputEvent::Key(text_key("a")),
            InputEvent::Key(silent.clone()),
        ];
        let err = encode_batch(&events, &modes, CellGeometry::default()).unwrap_err();
        assert_eq!(err, BatchError::TypesNothing { index: 1 });
        assert_eq!(err.code(), ErrorCode::INVALID_COMMAND);
        let legit = vec![
            InputEvent::Key(KeyEvent {
                action: KeyAction::Release,
                ..text_key("a")
            }),
            InputEvent::Key(KeyEvent {
                composing: true,
                ..text_key("a")
            }),
            InputEvent::Key(KeyEvent::press(PhysicalKey::SHIFT_LEFT, ModSet::SHIFT)),
            InputEvent::Key(KeyEvent::press(PhysicalKey::PRINT_SCREEN, ModSet::NONE)),
            InputEvent::Key(KeyEvent::press(PhysicalKey::UNIDENTIFIED, ModSet::NONE)),
        ];
        assert_eq!(
            encode_batch(&legit, &modes, CellGeometry::default()),
            Ok(Vec::new())
        );
    }

    #[test]
    fn encode_event_refuses_unsafe_paste_without_writing() {
        let mut out = b"keep".to_vec();
        let err = encode_event(
            &paste(PasteTrust::Untrusted, b"\xff"),
            &TerminalModes::default(),
            CellGeometry::default(),
            &mut out,
        )
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::UNSAFE_PASTE);
        assert_eq!(out, b"keep");
    }

    fn any_modset() -> impl Strategy<Value = ModSet> {
        any::<u16>().prop_map(ModSet)
    }

    fn any_key() -> impl Strategy<Value = KeyEvent> {
        (
            prop_oneof![
                Just(KeyAction::Press),
                Just(KeyAction::Release),
                Just(KeyAction::Repeat)
            ],
            prop_oneof![0u32..=PhysicalKey::MAX_KNOWN + 5, any::<u32>()],
            any_modset(),
            any_modset(),
            any::<bool>(),
            proptest::option::of(".{0,4}"),
            proptest::option::of(prop_oneof![0u32..0x80, any::<u32>()]),
        )
            .prop_map(
                |(action, key, mods, consumed_mods, composing, text, unshifted)| KeyEvent {
                    action,
                    key: PhysicalKey(key),
                    mods,
                    consumed_mods,
                    composing,
                    text,
                    unshifted_codepoint: unshifted,
                },
            )
    }

    fn any_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            -10.0f64..5000.0,
            any::<f64>(),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
        ]
    }

    fn any_mouse() -> impl Strategy<Value = MouseEvent> {
        (
            prop_oneof![
                Just(MouseAction::Press),
                Just(MouseAction::Release),
                Just(MouseAction::Motion)
            ],
            proptest::sample::select(MouseButton::ALL.to_vec()),
            any_modset(),
            any_f64(),
            any_f64(),
        )
            .prop_map(|(action, button, mods, x, y)| MouseEvent {
                action,
                button,
                mods,
                x,
                y,
            })
    }

    fn any_event() -> impl Strategy<Value = InputEvent> {
        prop_oneof![
            any_key().prop_map(InputEvent::Key),
            any_mouse().prop_map(InputEvent::Mouse),
            any::<bool>().prop_map(|g| InputEvent::Focus(if g {
                FocusEvent::Gained
            } else {
                FocusEvent::Lost
            })),
            (any::<bool>(), proptest::collection::vec(any::<u8>(), 0..64)).prop_map(|(t, data)| {
                InputEvent::Paste(PasteEvent {
                    trust: if t {
                        PasteTrust::Trusted
                    } else {
                        PasteTrust::Untrusted
                    },
                    data,
                })
            }),
        ]
    }

    fn any_modes() -> impl Strategy<Value = TerminalModes> {
        (
            any::<[bool; 7]>(),
            proptest::sample::select(vec![
                MouseTracking::Off,
                MouseTracking::X10,
                MouseTracking::Normal,
                MouseTracking::ButtonEvent,
                MouseTracking::AnyEvent,
            ]),
            proptest::sample::select(vec![
                MouseEncoding::X10,
                MouseEncoding::Utf8,
                MouseEncoding::Sgr,
                MouseEncoding::Urxvt,
                MouseEncoding::SgrPixels,
            ]),
            any::<u8>(),
        )
            .prop_map(|(b, mouse_tracking, mouse_encoding, kitty)| TerminalModes {
                application_cursor_keys: b[0],
                application_keypad: b[1],
                backarrow_sends_backspace: b[2],
                line_feed_mode: b[3],
                bracketed_paste: b[4],
                focus_reporting: b[5],
                mouse_tracking,
                mouse_encoding,
                kitty_flags: KittyFlags(kitty),
                alternate_screen: b[6],
            })
    }

    fn any_cells() -> impl Strategy<Value = CellGeometry> {
        (
            0u16..3000,
            0u16..200,
            any::<Option<u16>>(),
            any::<Option<u16>>(),
        )
            .prop_map(|(c, r, w, h)| CellGeometry::from_viewport(c, r, w, h))
    }

    proptest! {
        // A panic on any input is a bug: every event under every modes snapshot encodes or
        // returns an error, and an error appends nothing.
        #[test]
        fn never_panics(event in any_event(), modes in any_modes(), cells in any_cells()) {
            let mut out = b"prefix".to_vec();
            if encode_event(&event, &modes, cells, &mut out).is_err() {
                prop_assert_eq!(&out[..], b"prefix");
            }
        }

        // [INPUT.ENCODE.KEY.1] In default modes a printable key press with text and no
        // modifiers writes exactly its text.
        #[test]
        fn printable_text_is_written_verbatim(
            text in "[^\\p{Cc}\\p{Co}]{1,4}",
            key in prop_oneof![0u32..=PhysicalKey::MAX_KNOWN, any::<u32>()]
                .prop_filter("a text-producing key", |k| key::is_text_key(PhysicalKey(*k))),
        ) {
            let ev = KeyEvent {
                text: Some(text.clone()),
                ..KeyEvent::press(PhysicalKey(key), ModSet::NONE)
            };
            let mut out = Vec::new();
            encode_key(&ev, &TerminalModes::default(), &mut out);
            prop_assert_eq!(out, text.into_bytes());
        }

        // [INPUT.APPLY.13] What a keyboard sends (text without control characters, or none)
        // always reaches the program when the key types input, whatever the modes: the
        // refusal never meets an honest client.
        #[test]
        fn a_key_that_types_input_always_encodes(
            key in any_key(),
            text in proptest::option::of("[^\\p{Cc}]{1,3}"),
            modes in any_modes(),
        ) {
            let key = KeyEvent { text, ..key };
            let mut out = Vec::new();
            encode_key(&key, &modes, &mut out);
            prop_assert!(!types_input(&key) || !out.is_empty(), "{key:?} under {modes:?}");
        }

        // [INPUT.APPLY.8] Whatever the batch, an Ok result never exceeds the bound, and a
        // TooLarge refusal reports a length over it.
        #[test]
        fn batch_bound_holds(
            events in proptest::collection::vec(any_event(), 0..40),
            big in proptest::collection::vec(0usize..40_000, 0..4),
            modes in any_modes(),
        ) {
            let mut events = events;
            for n in big {
                events.push(InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: vec![b'z'; n],
                }));
            }
            match encode_batch(&events, &modes, CellGeometry::default()) {
                Ok(bytes) => prop_assert!(bytes.len() <= MAX_ENCODED_BATCH),
                Err(BatchError::TooLarge { len }) => prop_assert!(len > MAX_ENCODED_BATCH),
                Err(BatchError::UnsafePaste { index }) => {
                    prop_assert!(
                        matches!(&events[index], InputEvent::Paste(p) if paste_is_unsafe(p, &modes))
                    );
                }
                Err(BatchError::TypesNothing { index }) => {
                    let InputEvent::Key(key) = &events[index] else {
                        return Err(TestCaseError::fail("TypesNothing for a non-key event"));
                    };
                    let mut alone = Vec::new();
                    encode_key(key, &modes, &mut alone);
                    prop_assert!(types_input(key) && alone.is_empty());
                }
                Err(other) => prop_assert!(false, "unexpected {other:?}"),
            }
        }
    }
}
