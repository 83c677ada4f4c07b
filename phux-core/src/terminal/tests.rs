use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::modes::{KittyFlags, MouseEncoding, MouseTracking};

fn term_with(bytes: &[u8]) -> TerminalState {
    let mut t = TerminalState::new(20, 5, 100);
    t.ingest(bytes).unwrap();
    t
}

fn screen(t: &TerminalState, scrollback: Option<u32>, cells: bool) -> Value {
    serde_json::from_str(&t.screen_json(7, scrollback, cells)).unwrap()
}

/// Everything observable about a terminal, for equality checks.
fn observable(
    t: &TerminalState,
) -> (
    String,
    TerminalModes,
    Option<String>,
    Value,
    [KittyStack2; 2],
) {
    (
        t.screen().contents_formatted(),
        t.modes(),
        t.title().map(str::to_owned),
        t.screen_value(0, Some(0), true),
        [kitty(t, false), kitty(t, true)],
    )
}

type KittyStack2 = (u8, Vec<u8>);

fn kitty(t: &TerminalState, alternate: bool) -> KittyStack2 {
    let s = t.tracker.kitty_stack(alternate);
    (s.current().0, s.saved().to_vec())
}

// [OUTPUT.SEQ.1]
#[test]
fn seq_starts_at_one_and_is_contiguous() {
    let mut t = TerminalState::new(80, 24, 0);
    assert_eq!(t.seq(), 0);
    assert_eq!(t.ingest(b"a"), Ok(1));
    assert_eq!(
        t.ingest(b""),
        Ok(2),
        "every chunk is stamped, even an empty one"
    );
    assert_eq!(t.ingest(b"b"), Ok(3));
    assert_eq!(t.seq(), 3);
}

// [OUTPUT.SEQ.2]
#[test]
fn seq_exhaustion_is_an_error_and_changes_nothing() {
    let mut t = TerminalState::new(10, 2, 0);
    t.set_seq_for_test(u64::MAX - 1);
    assert_eq!(t.ingest(b"x"), Ok(u64::MAX));
    assert_eq!(t.ingest(b"y\x1b[?1h"), Err(SeqExhausted));
    assert_eq!(t.seq(), u64::MAX);
    assert_eq!(screen(&t, None, false)["lines"][0], "x");
    assert!(!t.modes().application_cursor_keys);
}

/// (name, bytes that set it, bytes that reset it, the mode read back).
type ModeCase = (
    &'static str,
    &'static [u8],
    &'static [u8],
    fn(TerminalModes) -> bool,
);

const MODE_CASES: &[ModeCase] = &[
    ("DECCKM", b"\x1b[?1h", b"\x1b[?1l", |m| {
        m.application_cursor_keys
    }),
    ("keypad", b"\x1b=", b"\x1b>", |m| m.application_keypad),
    ("DECBKM", b"\x1b[?67h", b"\x1b[?67l", |m| {
        m.backarrow_sends_backspace
    }),
    ("LNM", b"\x1b[20h", b"\x1b[20l", |m| m.line_feed_mode),
    ("bracketed paste", b"\x1b[?2004h", b"\x1b[?2004l", |m| {
        m.bracketed_paste
    }),
    ("focus", b"\x1b[?1004h", b"\x1b[?1004l", |m| {
        m.focus_reporting
    }),
    ("X10 mouse", b"\x1b[?9h", b"\x1b[?9l", |m| {
        m.mouse_tracking == MouseTracking::X10
    }),
    ("normal mouse", b"\x1b[?1000h", b"\x1b[?1000l", |m| {
        m.mouse_tracking == MouseTracking::Normal
    }),
    ("button mouse", b"\x1b[?1002h", b"\x1b[?1002l", |m| {
        m.mouse_tracking == MouseTracking::ButtonEvent
    }),
    ("any mouse", b"\x1b[?1003h", b"\x1b[?1003l", |m| {
        m.mouse_tracking == MouseTracking::AnyEvent
    }),
    ("utf8 mouse", b"\x1b[?1005h", b"\x1b[?1005l", |m| {
        m.mouse_encoding == MouseEncoding::Utf8
    }),
    ("sgr mouse", b"\x1b[?1006h", b"\x1b[?1006l", |m| {
        m.mouse_encoding == MouseEncoding::Sgr
    }),
    ("urxvt mouse", b"\x1b[?1015h", b"\x1b[?1015l", |m| {
        m.mouse_encoding == MouseEncoding::Urxvt
    }),
    ("sgr-pixels mouse", b"\x1b[?1016h", b"\x1b[?1016l", |m| {
        m.mouse_encoding == MouseEncoding::SgrPixels
    }),
    ("alternate 1049", b"\x1b[?1049h", b"\x1b[?1049l", |m| {
        m.alternate_screen
    }),
    ("alternate 47", b"\x1b[?47h", b"\x1b[?47l", |m| {
        m.alternate_screen
    }),
    ("alternate 1047", b"\x1b[?1047h", b"\x1b[?1047l", |m| {
        m.alternate_screen
    }),
    ("kitty push", b"\x1b[>5u", b"\x1b[<u", |m| {
        m.kitty_flags == KittyFlags(5)
    }),
    ("kitty set", b"\x1b[=3;1u", b"\x1b[=3;3u", |m| {
        m.kitty_flags == KittyFlags(3)
    }),
];

/// Ingests `bytes` in two pieces split at `at`.
fn split_ingest(bytes: &[u8], at: usize) -> TerminalState {
    let mut t = TerminalState::new(20, 5, 10);
    t.ingest(&bytes[..at]).unwrap();
    t.ingest(&bytes[at..]).unwrap();
    t
}

#[test]
fn every_mode_sets_and_resets_at_every_split() {
    for &(name, set, reset, read) in MODE_CASES {
        assert!(!read(TerminalModes::default()), "{name} is off by default");
        let on: Vec<u8> = [b"ab".as_slice(), set, b"cd"].concat();
        let off: Vec<u8> = [on.as_slice(), reset, b"e"].concat();
        for at in 0..=on.len() {
            assert!(
                read(split_ingest(&on, at).modes()),
                "{name} set, split at {at}"
            );
        }
        for at in 0..=off.len() {
            assert!(
                !read(split_ingest(&off, at).modes()),
                "{name} reset, split at {at}"
            );
        }
    }
}

#[test]
fn several_modes_in_one_sequence() {
    let m = term_with(b"\x1b[?1;1004;2004;1003;1006h").modes();
    assert!(m.application_cursor_keys && m.focus_reporting && m.bracketed_paste);
    assert_eq!(
        (m.mouse_tracking, m.mouse_encoding),
        (MouseTracking::AnyEvent, MouseEncoding::Sgr)
    );
    let m = term_with(b"\x1b[?1;1004;2004;1003;1006h\x1b[?1004;1006l").modes();
    assert!(!m.focus_reporting);
    assert_eq!(m.mouse_encoding, MouseEncoding::X10);
    assert!(m.bracketed_paste);
}

#[test]
fn mouse_tracking_and_encoding_follow_xterm() {
    // The last tracking mode set wins, and resetting any of them turns tracking off.
    let m = term_with(b"\x1b[?1000h\x1b[?1002h").modes();
    assert_eq!(m.mouse_tracking, MouseTracking::ButtonEvent);
    assert_eq!(
        term_with(b"\x1b[?1002h\x1b[?1000l").modes().mouse_tracking,
        MouseTracking::Off
    );
    // Resetting an encoding that is not in force leaves the one that is.
    let m = term_with(b"\x1b[?1006h\x1b[?1015h").modes();
    assert_eq!(m.mouse_encoding, MouseEncoding::Urxvt);
    let m = term_with(b"\x1b[?1006h\x1b[?1015l").modes();
    assert_eq!(m.mouse_encoding, MouseEncoding::Sgr);
}

#[test]
fn kitty_stacks_are_per_screen() {
    let mut t = term_with(b"\x1b[>1u\x1b[>3u");
    assert_eq!(t.modes().kitty_flags, KittyFlags(3));
    for (enter, leave) in [
        (b"\x1b[?1049h".as_slice(), b"\x1b[?1049l".as_slice()),
        (b"\x1b[?47h", b"\x1b[?47l"),
        (b"\x1b[?1047h", b"\x1b[?1047l"),
    ] {
        t.ingest(enter).unwrap();
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(0),
            "the alternate stack is separate"
        );
        t.ingest(b"\x1b[>8u\x1b[=2;2u").unwrap();
        assert_eq!(t.modes().kitty_flags, KittyFlags(10));
        t.ingest(leave).unwrap();
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(3),
            "back to the main stack"
        );
        t.ingest(enter).unwrap();
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(10),
            "the alternate stack persisted"
        );
        t.ingest(b"\x1b[<5u").unwrap();
        t.ingest(leave).unwrap();
    }
    t.ingest(b"\x1b[<u").unwrap();
    assert_eq!(t.modes().kitty_flags, KittyFlags(1));
    t.ingest(b"\x1b[<9u").unwrap();
    assert_eq!(t.modes().kitty_flags, KittyFlags(0));
}

#[test]
fn ris_resets_every_mode_and_both_kitty_stacks() {
    let t =
        term_with(b"\x1b[>1u\x1b[?1;67;2004;1004;1000;1015h\x1b=\x1b[20h\x1b[?1049h\x1b[>7uX\x1bc");
    assert_eq!(t.modes(), TerminalModes::default());
    assert_eq!(kitty(&t, false), (0, vec![]));
    assert_eq!(kitty(&t, true), (0, vec![]));
    assert!(!t.screen().alternate_screen());
    assert_eq!(screen(&t, None, false)["lines"][0], "");
}

#[test]
fn mode_1047_switches_the_grid() {
    let mut t = term_with(b"main");
    t.ingest(b"\x1b[?1047h\x1b[Halt").unwrap();
    assert!(t.screen().alternate_screen());
    assert_eq!(screen(&t, None, false)["lines"][0], "alt");
    t.ingest(b"\x1b[?1047l").unwrap();
    assert!(!t.screen().alternate_screen());
    assert_eq!(screen(&t, None, false)["lines"][0], "main");
}

// [SCREEN.STATE.1]
#[test]
fn screen_json_shape() {
    let t = term_with(b"\x1b]2;my title\x07hello   \r\n\x1b[1;31mred\x1b[m \x1b[44m \x1b[m\r\n0123456789abcdefghijKL");
    let v = screen(&t, None, true);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = [
        "schema_version",
        "pane",
        "cols",
        "rows",
        "cursor",
        "lines",
        "scrollback",
        "title",
        "soft_wrap",
        "cells",
    ];
    expected.sort_unstable();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    assert_eq!(keys_sorted, expected);
    assert_eq!(v["schema_version"], 3);
    assert_eq!(v["pane"], 7);
    assert_eq!(
        (v["cols"].as_u64(), v["rows"].as_u64()),
        (Some(20), Some(5))
    );
    assert_eq!(
        v["lines"],
        serde_json::json!(["hello", "red", "0123456789abcdefghij", "KL", ""])
    );
    assert_eq!(v["scrollback"], serde_json::json!([]));
    assert_eq!(v["title"], "my title");
    assert_eq!(
        v["cursor"],
        serde_json::json!({"x": 2, "y": 3, "visible": true})
    );
    assert_eq!(
        v["soft_wrap"],
        serde_json::json!({"lines": [2], "scrollback": []})
    );
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(
        cells.len(),
        4,
        "r, e, d and the blue blank; the default-styled space is not listed"
    );
    assert_eq!(
        cells[0],
        serde_json::json!({"row": 1, "col": 0, "text": "r", "fg": 1, "bg": null, "bold": true,
            "dim": false, "italic": false, "underline": false, "inverse": false, "wide": false})
    );
    assert_eq!(
        (&cells[3]["col"], &cells[3]["bg"], &cells[3]["text"]),
        (&Value::from(4), &Value::from(4), &Value::from(" "))
    );
    // Without `cells`, no cells key; without a title, no title key.
    let v = screen(&term_with(b"x\x1b[?25l\x1b[38;2;1;2;255mY"), None, false);
    assert!(v.get("cells").is_none() && v.get("title").is_none());
    assert_eq!(v["cursor"]["visible"], false);
    let v = screen(&term_with(b"\x1b[38;2;1;2;255m\xe4\xb8\xad"), None, true);
    assert_eq!(v["cells"][0]["fg"], "#0102ff");
    assert_eq!(v["cells"][0]["wide"], true);
    assert_eq!(
        v["cells"].as_array().unwrap().len(),
        1,
        "no entry for the continuation cell"
    );
}

// [SCREEN.JSON.3]
#[test]
fn scrollback_selection() {
    let mut t = TerminalState::new(4, 2, 3);
    t.ingest(b"l1\r\nl2\r\nabcdefg\r\nl4\r\nl5").unwrap();
    // Rows: l1, l2, abcd (wraps), efg, l4 | viewport: l4, l5 -> history keeps the newest 3.
    assert_eq!(t.scrollback_len(), 3);
    let none = screen(&t, None, false);
    assert_eq!(none["scrollback"], serde_json::json!([]));
    assert_eq!(none["lines"], serde_json::json!(["l4", "l5"]));
    let all = screen(&t, Some(0), false);
    assert_eq!(all["scrollback"], serde_json::json!(["l2", "abcd", "efg"]));
    assert_eq!(all["soft_wrap"]["scrollback"], serde_json::json!([1]));
    let two = screen(&t, Some(2), false);
    assert_eq!(two["scrollback"], serde_json::json!(["abcd", "efg"]));
    assert_eq!(two["soft_wrap"]["scrollback"], serde_json::json!([0]));
    assert_eq!(screen(&t, Some(99), false)["scrollback"], all["scrollback"]);
    // Reading history does not disturb the live screen.
    assert_eq!(screen(&t, None, false), none);
    // CSI 3 J clears it; output on the alternate screen never reaches it.
    t.ingest(b"\x1b[3J").unwrap();
    assert_eq!(t.scrollback_len(), 0);
    t.ingest(b"\x1b[?1049h1\r\n2\r\n3\r\n\x1b[3J\x1b[?1049l")
        .unwrap();
    assert_eq!(t.scrollback_len(), 0);
    t.ingest(b"\r\nx").unwrap();
    assert_eq!(
        screen(&t, Some(0), false)["scrollback"],
        serde_json::json!(["l4"])
    );
}

#[test]
fn title_and_bells() {
    let mut t = TerminalState::new(10, 2, 0);
    assert_eq!(t.title(), None);
    t.ingest(b"\x1b]0;one\x07\x07a\x07").unwrap();
    assert_eq!(t.title(), Some("one"));
    assert_eq!(t.take_bells(), 2, "the BEL ending the OSC is not a bell");
    assert_eq!(t.take_bells(), 0);
    t.ingest(b"\x1b]2;two; with semicolon\x1b\\").unwrap();
    assert_eq!(t.title(), Some("two; with semicolon"));
    t.ingest(b"\x1b]1;icon only\x07").unwrap();
    assert_eq!(t.title(), Some("two; with semicolon"));
}

#[test]
fn resize_clamps_and_keeps_content() {
    let mut t = TerminalState::new(0, 0, 10);
    assert_eq!(t.size(), (1, 1));
    t.resize(10, 3);
    t.ingest(b"a\r\nb\r\nc").unwrap();
    t.resize(5, 2);
    assert_eq!(t.size(), (5, 2));
    let v = screen(&t, Some(0), false);
    assert_eq!(v["lines"], serde_json::json!(["b", "c"]));
    assert_eq!(v["scrollback"], serde_json::json!(["a"]));
    t.resize(5, 4);
    let v = screen(&t, Some(0), false);
    assert_eq!(
        v["lines"],
        serde_json::json!(["b", "c", "", ""]),
        "taller: blank rows at the bottom"
    );
    assert_eq!(
        v["cursor"],
        serde_json::json!({"x": 1, "y": 1, "visible": true})
    );
    assert_eq!(v["scrollback"], serde_json::json!(["a"]));
}

fn assert_rebuilt(original: &TerminalState) {
    let (cols, rows) = original.size();
    let mut fresh = TerminalState::new(cols, rows, 0);
    fresh.ingest(&original.bootstrap()).unwrap();
    assert_same(original, &fresh);
}

fn assert_same(a: &TerminalState, b: &TerminalState) {
    let (sa, sb) = (a.screen(), b.screen());
    let (cols, rows) = a.size();
    for row in 0..rows {
        for col in 0..cols {
            assert_eq!(sa.cell(row, col), sb.cell(row, col), "cell {row},{col}");
        }
    }
    assert_eq!(sa.cursor_position(), sb.cursor_position());
    assert_eq!(sa.hide_cursor(), sb.hide_cursor());
    assert_eq!(sa.alternate_screen(), sb.alternate_screen());
    assert_eq!(sa.cursor_style(), sb.cursor_style());
    assert_eq!(
        sa.attributes_formatted(),
        sb.attributes_formatted(),
        "the pen"
    );
    assert_eq!(a.modes(), b.modes());
    assert_eq!(a.title(), b.title());
    assert_eq!(kitty(a, false), kitty(b, false));
    assert_eq!(kitty(a, true), kitty(b, true));
}

const VARIED: &[u8] = b"\x1b]2;build: ok\x07\x1b[1;32muser@host\x1b[m:\x1b[34m~/src\x1b[m$ ls -l\r\n\
    total 8\r\n-rw-r--r-- 1 u u 12 \x1b[01;34mdir\x1b[0m \x1b[3;4;7mfmt\x1b[m\r\n\
    \xe4\xb8\xad\xe6\x96\x87 wide \xf0\x9f\x98\x80!\r\n\x1b[38;5;208mpalette\x1b[48;2;10;20;30mrgb\x1b[m\r\n\
    \x1b[5;3Hmoved\x1b[2;10H\x1b[K\x1b[1;5r\x1b[4 q\x1b[?25l\
    \x1b[?1;67;2004;1004;1002;1016h\x1b=\x1b[20h\x1b[>1u\x1b[>9u\x1b[=4;2u\x1b[2;31m";

// [BOOTSTRAP.CHUNK.2] [BOOTSTRAP.CHUNK.2]
#[test]
fn bootstrap_rebuilds_screen_and_modes() {
    let mut t = TerminalState::new(30, 8, 10);
    t.ingest(VARIED).unwrap();
    assert_rebuilt(&t);
    // Pending wrap: the cursor sits past the last column.
    t.ingest(b"\x1b[8;1H0123456789012345678901234567890123456789")
        .unwrap();
    assert_rebuilt(&t);
}

#[test]
fn bootstrap_rebuilds_the_alternate_screen_and_the_main_one_behind_it() {
    let mut t = TerminalState::new(30, 8, 10);
    t.ingest(VARIED).unwrap();
    t.ingest(b"\x1b[?1049h\x1b[>3u\x1b[>5u\x1b[2J\x1b[3;3H\x1b[7mfull screen\x1b[m\x1b[?25h")
        .unwrap();
    let (cols, rows) = t.size();
    let mut fresh = TerminalState::new(cols, rows, 0);
    fresh.ingest(&t.bootstrap()).unwrap();
    assert_same(&t, &fresh);
    for side in [&mut t, &mut fresh] {
        side.ingest(b"\x1b[?1049l").unwrap();
    }
    assert_same(&t, &fresh);
}

#[test]
fn bootstrap_of_a_fresh_terminal_is_a_no_op_screen() {
    let t = TerminalState::new(10, 3, 0);
    assert_rebuilt(&t);
}

#[test]
fn bootstrap_rebuilds_a_full_kitty_stack() {
    let mut t = TerminalState::new(10, 3, 0);
    for f in 1..=20u8 {
        t.ingest(format!("\x1b[>{}u", f & 0x1f).as_bytes()).unwrap();
    }
    assert_rebuilt(&t);
}

/// Byte streams rich in the sequences the tracker and grid care about.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..8),
        2 => "[a-z \r\n]{0,12}".prop_map(String::into_bytes),
        1 => Just(b"\x1b[?1049h".to_vec()),
        1 => Just(b"\x1b[?1049l".to_vec()),
        1 => Just(b"\x1b[?1047h".to_vec()),
        1 => Just(b"\x1b[?47l".to_vec()),
        1 => Just(b"\x1b[3J".to_vec()),
        1 => Just(b"\x1bc".to_vec()),
        1 => Just(b"\x1b]2;t;i\x07".to_vec()),
        1 => Just("\u{4e2d}\u{1f600}".as_bytes().to_vec()),
        3 => (prop::sample::select(&b"?<>= "[..]), proptest::collection::vec(0u16..2100, 0..4),
              prop::sample::select(&b"hlumJrHq"[..]))
            .prop_map(|(marker, params, fin)| {
                let params: Vec<String> = params.iter().map(u16::to_string).collect();
                let mut s = vec![0x1b, b'['];
                if marker != b' ' {
                    s.push(marker);
                }
                s.extend(params.join(";").into_bytes());
                s.push(fin);
                s
            }),
    ];
    proptest::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut t = TerminalState::new(13, 4, 5);
        t.ingest(&bytes).unwrap();
        let _ = t.screen_json(1, Some(0), true);
        let _ = t.bootstrap();
        t.resize(3, 9);
        let _ = t.screen_json(1, Some(2), true);
    }

    #[test]
    fn chunking_does_not_change_the_result(
        bytes in stream(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut whole = TerminalState::new(12, 4, 6);
        whole.ingest(&bytes).unwrap();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunked = TerminalState::new(12, 4, 6);
        let mut start = 0;
        for p in points.into_iter().chain(std::iter::once(bytes.len())) {
            chunked.ingest(&bytes[start..p]).unwrap();
            start = p;
        }
        prop_assert_eq!(observable(&whole), observable(&chunked));
    }

    #[test]
    fn bootstrap_rebuilds_any_stream(bytes in stream()) {
        let mut t = TerminalState::new(12, 4, 0);
        t.ingest(&bytes).unwrap();
        let mut fresh = TerminalState::new(12, 4, 0);
        fresh.ingest(&t.bootstrap()).unwrap();
        prop_assert_eq!(t.modes(), fresh.modes());
        prop_assert_eq!(t.title(), fresh.title());
        prop_assert_eq!(t.screen().contents(), fresh.screen().contents());
        prop_assert_eq!(t.screen().cursor_position(), fresh.screen().cursor_position());
    }
}
