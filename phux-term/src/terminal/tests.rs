use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::grid::{Cell, Grid, Mark, Pen};
use crate::modes::{KittyFlags, MouseEncoding, MouseTracking};
use crate::tracker;

mod hostile;
mod recordings;
mod replies;
mod state;
mod vs_vt100;
mod xterm;

fn term_with(bytes: &[u8]) -> Terminal {
    let mut t = Terminal::new(20, 5, 100);
    t.advance(bytes);
    t
}

fn screen(t: &Terminal, scrollback: Option<u32>, cells: bool) -> Value {
    serde_json::from_str(&t.screen_json(7, scrollback, cells)).unwrap()
}

/// A cell as seen from outside its row: character, wide and continuation flags, pen.
type CellDump = (char, bool, bool, Pen);
type GridDump = Vec<(Vec<CellDump>, bool, Vec<Mark>)>;

/// Every cell, soft-wrap flag and mark of a grid (marks in their per-cell order). Cells are
/// dumped with their pens, not their rows' style ids, which depend on a row's history.
fn grid_dump(g: &Grid) -> GridDump {
    g.iter()
        .map(|r| {
            let marks = r.marks().collect();
            let cells = r
                .cells
                .iter()
                .map(|&c| (c.ch(), c.is_wide(), c.is_wide_cont(), r.pen(c)));
            (cells.collect(), r.wrapped, marks)
        })
        .collect()
}

/// The drawing state a fresh terminal must reach from the bootstrap: the active screen (and
/// the main one behind the alternate), cursor, pen, cursor look, region, modes that change
/// drawing, and the saved cursors that can still be restored.
fn drawing(t: &Terminal) -> String {
    let vt = &t.vt;
    let behind = vt.alt_active.then(|| grid_dump(vt.other()));
    format!(
        "{:?}",
        (
            grid_dump(&vt.screen),
            behind,
            vt.cur,
            vt.pen,
            (vt.cursor_hidden, vt.cursor_style, vt.alt_active),
            (vt.top, vt.bottom, vt.origin, vt.autowrap, vt.insert),
            vt.charsets,
            &vt.tabs,
            vt.saved[usize::from(vt.alt_active)],
            vt.alt_active.then_some(vt.saved[0]),
        )
    )
}

/// Everything observable about a terminal, for equality checks.
fn observable(
    t: &Terminal,
) -> (
    String,
    TerminalModes,
    Option<String>,
    Value,
    [KittyStack2; 2],
) {
    (
        drawing(t),
        t.modes(),
        t.title().map(str::to_owned),
        t.screen_value(0, Some(0), true),
        [kitty(t, false), kitty(t, true)],
    )
}

type KittyStack2 = (u8, Vec<u8>);

fn kitty(t: &Terminal, alternate: bool) -> KittyStack2 {
    let s = t.vt.tracker.kitty_stack(alternate);
    (s.current().0, s.saved().to_vec())
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
fn split_ingest(bytes: &[u8], at: usize) -> Terminal {
    let mut t = Terminal::new(20, 5, 10);
    t.advance(&bytes[..at]);
    t.advance(&bytes[at..]);
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
        t.advance(enter);
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(0),
            "the alternate stack is separate"
        );
        t.advance(b"\x1b[>8u\x1b[=2;2u");
        assert_eq!(t.modes().kitty_flags, KittyFlags(10));
        t.advance(leave);
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(3),
            "back to the main stack"
        );
        t.advance(enter);
        assert_eq!(
            t.modes().kitty_flags,
            KittyFlags(10),
            "the alternate stack persisted"
        );
        t.advance(b"\x1b[<5u");
        t.advance(leave);
    }
    t.advance(b"\x1b[<u");
    assert_eq!(t.modes().kitty_flags, KittyFlags(1));
    t.advance(b"\x1b[<9u");
    assert_eq!(t.modes().kitty_flags, KittyFlags(0));
}

#[test]
fn ris_resets_every_mode_and_both_kitty_stacks() {
    let t =
        term_with(b"\x1b[>1u\x1b[?1;67;2004;1004;1000;1015h\x1b=\x1b[20h\x1b[?1049h\x1b[>7uX\x1bc");
    assert_eq!(t.modes(), TerminalModes::default());
    assert_eq!(kitty(&t, false), (0, vec![]));
    assert_eq!(kitty(&t, true), (0, vec![]));
    assert!(!t.vt.alt_active);
    assert_eq!(screen(&t, None, false)["lines"][0], "");
}

#[test]
fn mode_1047_switches_the_grid() {
    let mut t = term_with(b"main");
    t.advance(b"\x1b[?1047h\x1b[Halt");
    assert!(t.vt.alt_active);
    assert_eq!(screen(&t, None, false)["lines"][0], "alt");
    t.advance(b"\x1b[?1047l");
    assert!(!t.vt.alt_active);
    assert_eq!(screen(&t, None, false)["lines"][0], "main");
    // xterm: leaving 1047 clears the alternate screen; 47 keeps it.
    t.advance(b"\x1b[?47h");
    assert_eq!(screen(&t, None, false)["lines"][0], "");
    t.advance(b"\x1b[Hkept\x1b[?47l\x1b[?47h");
    assert_eq!(screen(&t, None, false)["lines"][0], "kept");
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
    // phux's shape (L1.md §6.1), every style key present; `text` and `wide` beyond it.
    assert_eq!(
        cells[0],
        serde_json::json!({"row": 1, "col": 0, "text": "r", "wide": false, "style": {
            "bold": true, "faint": false, "italic": false, "underline": false, "blink": false,
            "inverse": false, "invisible": false, "strikethrough": false, "overline": false,
            "fg": {"kind": "palette", "index": 1}, "bg": {"kind": "default"}}})
    );
    assert_eq!(
        (
            &cells[3]["col"],
            &cells[3]["style"]["bg"],
            &cells[3]["text"]
        ),
        (
            &Value::from(4),
            &serde_json::json!({"kind": "palette", "index": 4}),
            &Value::from(" ")
        )
    );
    // Without `cells`, no cells key; without a title, no title key.
    let v = screen(&term_with(b"x\x1b[?25l\x1b[38;2;1;2;255mY"), None, false);
    assert!(v.get("cells").is_none() && v.get("title").is_none());
    assert_eq!(v["cursor"]["visible"], false);
    let v = screen(&term_with(b"\x1b[38;2;1;2;255m\xe4\xb8\xad"), None, true);
    assert_eq!(
        v["cells"][0]["style"]["fg"],
        serde_json::json!({"kind": "rgb", "r": 1, "g": 2, "b": 255})
    );
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
    let mut t = Terminal::new(4, 2, 3);
    t.advance(b"l1\r\nl2\r\nabcdefg\r\nl4\r\nl5");
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
    t.advance(b"\x1b[3J");
    assert_eq!(t.scrollback_len(), 0);
    t.advance(b"\x1b[?1049h1\r\n2\r\n3\r\n\x1b[3J\x1b[?1049l");
    assert_eq!(t.scrollback_len(), 0);
    t.advance(b"\r\nx");
    assert_eq!(
        screen(&t, Some(0), false)["scrollback"],
        serde_json::json!(["l4"])
    );
}

// [SCREEN.JSON.3] The alternate screen has no history above it: none is shown while it is,
// and the main screen's comes back with the main screen (the phux reference shows the same).
#[test]
fn no_scrollback_above_the_alternate_screen() {
    let mut t = Terminal::new(4, 2, 10);
    t.advance(b"a\r\nb\r\nc");
    let main = screen(&t, Some(0), false);
    assert_eq!(main["scrollback"], serde_json::json!(["a"]));
    t.advance(b"\x1b[?1049h");
    let alt = screen(&t, Some(0), false);
    assert_eq!(alt["scrollback"], serde_json::json!([]));
    assert_eq!(alt["soft_wrap"]["scrollback"], serde_json::json!([]));
    let limits = crate::ScreenLimits {
        scrollback_bytes: 1,
        cells_bytes: usize::MAX,
    };
    let bounded: Value =
        serde_json::from_str(&t.screen_json_within(1, Some(0), false, limits).unwrap()).unwrap();
    assert!(
        bounded.get("scrollback_truncated").is_none(),
        "nothing was left out"
    );
    t.advance(b"\x1b[?1049l");
    assert_eq!(screen(&t, Some(0), false)["scrollback"], main["scrollback"]);
}

#[test]
fn title_and_bells() {
    let mut t = Terminal::new(10, 2, 0);
    assert_eq!(t.title(), None);
    t.advance(b"\x1b]0;one\x07\x07a\x07");
    assert_eq!(t.title(), Some("one"));
    assert_eq!(t.take_bells(), 2, "the BEL ending the OSC is not a bell");
    assert_eq!(t.take_bells(), 0);
    t.advance(b"\x1b]2;two; with semicolon\x1b\\");
    assert_eq!(t.title(), Some("two; with semicolon"));
    t.advance(b"\x1b]1;icon only\x07");
    assert_eq!(t.title(), Some("two; with semicolon"));
}

#[test]
fn a_wide_character_cut_by_a_resize_loses_its_combining_marks() {
    let mut t = Terminal::new(12, 4, 0);
    // 中 in columns 0-1, 😀 with a combining grave in 2-3; three columns cut the emoji.
    t.advance("中😀\u{300}".as_bytes());
    t.resize(3, 1);
    let v = screen(&t, Some(0), false);
    assert_eq!(v["lines"], serde_json::json!(["中"]), "no orphaned mark");
    let mut fresh = Terminal::new(3, 1, 0);
    fresh.advance(&t.bootstrap());
    assert_eq!(drawing(&t), drawing(&fresh));
}

#[test]
fn resize_clamps_and_keeps_content() {
    let mut t = Terminal::new(0, 0, 10);
    assert_eq!(t.size(), (1, 1));
    t.resize(10, 3);
    t.advance(b"a\r\nb\r\nc");
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

/// The bootstrap rebuilds `original` on a fresh terminal of ours, and its screen on a fresh
/// `vt100` parser.
fn assert_rebuilt(original: &Terminal) {
    let (cols, rows) = original.size();
    let bootstrap = original.bootstrap();
    let mut fresh = Terminal::new(cols, rows, 0);
    fresh.advance(&bootstrap);
    assert_same(original, &fresh);
    let mut reference = vs_vt100::parser(cols, rows);
    reference.process(&bootstrap);
    vs_vt100::assert_screen_matches(original, reference.screen(), "bootstrap on vt100");
}

fn assert_same(a: &Terminal, b: &Terminal) {
    assert_eq!(drawing(a), drawing(b));
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
    let mut t = Terminal::new(30, 8, 10);
    t.advance(VARIED);
    assert_rebuilt(&t);
    // Pending wrap: the cursor sits past the last column.
    t.advance(b"\x1b[8;1H0123456789012345678901234567890123456789");
    assert_rebuilt(&t);
}

#[test]
fn bootstrap_rebuilds_the_alternate_screen_and_the_main_one_behind_it() {
    let mut t = Terminal::new(30, 8, 10);
    t.advance(VARIED);
    t.advance(b"\x1b[?1049h\x1b[>3u\x1b[>5u\x1b[2J\x1b[3;3H\x1b[7mfull screen\x1b[m\x1b[?25h");
    let (cols, rows) = t.size();
    let mut fresh = Terminal::new(cols, rows, 0);
    fresh.advance(&t.bootstrap());
    assert_same(&t, &fresh);
    for side in [&mut t, &mut fresh] {
        side.advance(b"\x1b[?1049l");
    }
    assert_same(&t, &fresh);
}

#[test]
fn bootstrap_of_a_fresh_terminal_is_a_no_op_screen() {
    let t = Terminal::new(10, 3, 0);
    assert_rebuilt(&t);
}

#[test]
fn bootstrap_rebuilds_a_full_kitty_stack() {
    let mut t = Terminal::new(10, 3, 0);
    for f in 1..=20u8 {
        t.advance(format!("\x1b[>{}u", f & 0x1f).as_bytes());
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
        // Character sets, insert mode, saved cursors, the pending wrap.
        2 => prop::sample::select(&[
            "\x1b(0", "\x1b)0", "\x1b*A", "\x1b+0", "\x1b(B", "\x0e", "\x0f", "\x1bN",
            "\x1bO", "\x1bn", "\x1bo", "\x1b[4h", "\x1b[4l", "\x1b7", "\x1b8", "lqk#_~",
            "\x1b[1;12Hxy", "\x1b#8",
        ][..]).prop_map(|s| s.as_bytes().to_vec()),
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

/// Colour-heavy streams: many distinct pens, text (wide and combining too), cursor moves,
/// erases, inserts and deletes, line feeds.
fn styled_stream() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        4 => any::<[u8; 3]>()
            .prop_map(|[r, g, b]| format!("\x1b[38;2;{r};{g};{b}m").into_bytes()),
        2 => any::<u8>().prop_map(|i| format!("\x1b[48;5;{i}m").into_bytes()),
        1 => prop::sample::select(&["\x1b[m", "\x1b[1;7m", "\x1b[4;49m", "\x1b[5;8;9;21;44m", "\x1b[2;25;28;29;24m"][..])
            .prop_map(|s| s.as_bytes().to_vec()),
        4 => "[a-z]{1,4}".prop_map(String::into_bytes),
        1 => prop::sample::select(&["\u{4e2d}", "e\u{301}"][..]).prop_map(|s| s.as_bytes().to_vec()),
        3 => (1u16..4, 1u16..8).prop_map(|(y, x)| format!("\x1b[{y};{x}H").into_bytes()),
        2 => (prop::sample::select(&[b'K', b'J', b'X', b'@', b'P', b'L', b'M'][..]), 0u16..3)
            .prop_map(|(f, n)| {
                let mut s = format!("\x1b[{n}").into_bytes();
                s.push(f);
                s
            }),
        1 => Just(b"\r\n".to_vec()),
    ];
    proptest::collection::vec(token, 0..80).prop_map(|t| t.concat())
}

proptest! {
    /// Collecting every row's style table (as a full table is) changes nothing observable,
    /// then or after more output: styles are only ever read through the row's table.
    #[test]
    fn collecting_style_tables_changes_nothing(first in styled_stream(), then in styled_stream()) {
        let mut kept = Terminal::new(6, 3, 4);
        let mut collected = Terminal::new(6, 3, 4);
        kept.advance(&first);
        collected.advance(&first);
        collected.vt.screen.collect_styles_for_test();
        prop_assert_eq!(observable(&kept), observable(&collected));
        prop_assert_eq!(kept.bootstrap(), collected.bootstrap());
        kept.advance(&then);
        collected.advance(&then);
        prop_assert_eq!(observable(&kept), observable(&collected));
        prop_assert_eq!(kept.bootstrap(), collected.bootstrap());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut t = Terminal::new(13, 4, 5);
        t.advance(&bytes);
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
        let mut whole = Terminal::new(12, 4, 6);
        whole.advance(&bytes);
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut chunked = Terminal::new(12, 4, 6);
        let mut start = 0;
        for p in points.into_iter().chain(std::iter::once(bytes.len())) {
            chunked.advance(&bytes[start..p]);
            start = p;
        }
        prop_assert_eq!(observable(&whole), observable(&chunked));
    }

    #[test]
    fn bootstrap_rebuilds_any_stream(bytes in stream()) {
        let mut t = Terminal::new(12, 4, 0);
        t.advance(&bytes);
        let mut fresh = Terminal::new(12, 4, 0);
        fresh.advance(&t.bootstrap());
        prop_assert_eq!(t.modes(), fresh.modes());
        prop_assert_eq!(t.title(), fresh.title());
        prop_assert_eq!(drawing(&t), drawing(&fresh));
    }

    /// Any output interleaved with any resizes keeps the grid's invariants: the cursor and
    /// saved cursors on the screen, every row as wide as the screen, nothing but blanks past a
    /// row's used bound, marks only on used cells; and the bootstrap still rebuilds it.
    #[test]
    fn output_and_resizes_keep_the_grid_consistent(
        steps in proptest::collection::vec(
            (stream(), proptest::option::of((0u16..30, 0u16..10))),
            1..12,
        ),
    ) {
        let mut t = Terminal::new(12, 4, 5);
        for (bytes, resize) in steps {
            t.advance(&bytes);
            if let Some((cols, rows)) = resize {
                t.resize(cols, rows);
            }
            let vt = &t.vt;
            let (cols, rows) = t.size();
            prop_assert!(vt.cur.x < cols && vt.cur.y < rows);
            prop_assert!(vt.top < vt.bottom || rows == 1);
            prop_assert!(vt.bottom < rows);
            prop_assert!(vt.saved.iter().all(|s| s.x < cols && s.y < rows));
            prop_assert_eq!(vt.tabs.len(), usize::from(cols));
            for grid in [&vt.screen, vt.other()] {
                if grid.rows() == 0 {
                    continue;
                }
                prop_assert_eq!(grid.rows(), rows);
                for row in grid.iter() {
                    prop_assert_eq!(row.cells.len(), usize::from(cols));
                    let used = usize::from(row.used());
                    prop_assert!(row.cells[used..].iter().all(|&c| c == Cell::BLANK));
                    prop_assert!(row.marks().all(|(col, _)| usize::from(col) < used));
                }
            }
            let _ = t.screen_json(1, Some(0), true);
            let mut fresh = Terminal::new(cols, rows, 0);
            fresh.advance(&t.bootstrap());
            prop_assert_eq!(drawing(&t), drawing(&fresh), "bootstrap after resizes");
        }
    }

    /// The modes as the grid's parser hands them to the tracker are the modes the tracker's
    /// own byte scanner reads from the same stream, however it is split.
    #[test]
    fn modes_match_the_tracker_scanning_the_bytes_itself(
        bytes in stream(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let mut t = Terminal::new(12, 4, 0);
        let mut scanner = tracker::ModeTracker::default();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut start = 0;
        for p in points.into_iter().chain(std::iter::once(bytes.len())) {
            let chunk = &bytes[start..p];
            t.advance(chunk);
            let mut rest = chunk;
            while !rest.is_empty() {
                rest = &rest[scanner.advance(rest).consumed..];
            }
            start = p;
        }
        prop_assert_eq!(t.modes(), scanner.modes());
        for alternate in [false, true] {
            prop_assert_eq!(t.vt.tracker.kitty_stack(alternate), scanner.kitty_stack(alternate));
        }
        prop_assert_eq!(scanner.alternate_screen(), t.vt.alt_active, "the grid's screen");
    }
}

fn lines(t: &Terminal) -> Vec<String> {
    let v = t.screen_value(0, None, false);
    v["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

fn cursor(t: &Terminal) -> (u16, u16, bool) {
    (t.vt.cur.x, t.vt.cur.y, t.vt.cur.pending)
}

/// The stream the chunking property found: `vte` 0.15 swallowed the space after a character
/// completed across a read boundary (`\xc2` | `\x80 \x80`), moving the cursor.
#[test]
fn a_character_split_across_reads_loses_nothing_after_it() {
    let bytes = b"\xe4\xb8\xad\xf0\x9f\x98\x80\xe4\xb8\xad\xf0\x9f\x98\x80\x1b[?1049h\x1b]2;t;i\x07 \n\r\na\n\x00\x00\xc2\x80 \x80\x1b[?1047h\x1b[3J\x00";
    let mut whole = Terminal::new(12, 4, 6);
    whole.advance(bytes);
    for at in 0..=bytes.len() {
        let t = split_ingest_sized(bytes, at, 12, 4);
        assert_eq!(observable(&t), observable(&whole), "split at {at}");
    }
    // Every UTF-8 character, split at every byte, prints once.
    for text in ["\u{e9}", "\u{4e2d}", "\u{1f600}", "a\u{301}"] {
        let mut input = text.as_bytes().to_vec();
        input.extend_from_slice(b" \x80z");
        let mut whole = Terminal::new(12, 4, 0);
        whole.advance(&input);
        for at in 0..=input.len() {
            let t = split_ingest_sized(&input, at, 12, 4);
            assert_eq!(drawing(&t), drawing(&whole), "{text:?} split at {at}");
        }
    }
}

fn split_ingest_sized(bytes: &[u8], at: usize, cols: u16, rows: u16) -> Terminal {
    let mut t = Terminal::new(cols, rows, 6);
    t.advance(&bytes[..at]);
    t.advance(&bytes[at..]);
    t
}

#[test]
fn invalid_utf8_shows_replacement_characters() {
    // A broken sequence is one U+FFFD, and the byte that broke it starts afresh; a lone C1
    // byte is a control we ignore.
    let t = term_with(b"a\xe4\xb8b\xffc\x85d\xf0\x9f\x1b[1mE");
    assert_eq!(lines(&t)[0], "a\u{fffd}b\u{fffd}cd\u{fffd}E");
}

#[test]
fn wide_and_combining_characters() {
    let mut t = Terminal::new(6, 3, 0);
    // A wide character that does not fit in the last column wraps whole, and the row it left
    // is soft-wrapped though its last cell is empty: xterm's `WrapLine` marks the row it
    // leaves (`LINEWRAPPED`) whatever that cell holds (vt100 does not). The bootstrap keeps it.
    t.advance("abcde\u{4e2d}e\u{301}".as_bytes());
    assert_eq!(lines(&t), ["abcde", "\u{4e2d}e\u{301}", ""]);
    let v = t.screen_value(0, None, false);
    assert_eq!(v["soft_wrap"]["lines"], serde_json::json!([0]));
    let mut fresh = Terminal::new(6, 3, 0);
    fresh.advance(&t.bootstrap());
    assert_same(&t, &fresh);
    // Overwriting half of a wide character blanks the other half.
    t.advance(b"\x1b[2;2Hx");
    assert_eq!(lines(&t)[1], " xe\u{301}");
    assert_eq!(cursor(&t), (2, 1, false));
}

#[test]
fn autowrap_and_pending_wrap() {
    let mut t = Terminal::new(4, 3, 0);
    t.advance(b"abcd");
    assert_eq!(cursor(&t), (3, 0, true), "wrap pending on the last column");
    t.advance(b"\rX");
    assert_eq!(lines(&t)[0], "Xbcd", "CR cancels the pending wrap");
    t.advance(b"\x1b[1;4Hde");
    assert_eq!(lines(&t)[..2], ["Xbcd", "e"]);
    // DECAWM off: the last column is overwritten.
    t.advance(b"\x1b[?7l\x1b[3;1Hwxyz123");
    assert_eq!(lines(&t)[2], "wxy3");
    assert_eq!(cursor(&t), (3, 2, true), "pending, taken only under DECAWM");
    t.advance(b"\x1b[?7h\x1b[3;4H45");
    assert_eq!(
        lines(&t)[2],
        "5",
        "the screen scrolled: 45 wrapped onto a new row"
    );
}

#[test]
fn scroll_regions_insert_delete_and_scroll() {
    let mut t = Terminal::new(5, 5, 10);
    t.advance(b"1\r\n2\r\n3\r\n4\r\n5");
    // DECSTBM 2..4: scrolling inside it keeps rows 1 and 5, and sends nothing to history.
    t.advance(b"\x1b[2;4r\x1b[4;1H\nx");
    assert_eq!(lines(&t), ["1", "3", "4", "x", "5"]);
    assert_eq!(t.scrollback_len(), 0);
    t.advance(b"\x1b[2;1H\x1bM");
    assert_eq!(
        lines(&t),
        ["1", "", "3", "4", "5"],
        "RI at the top scrolls down"
    );
    t.advance(b"\x1b[3;1H\x1b[L");
    assert_eq!(lines(&t), ["1", "", "", "3", "5"], "IL within the region");
    t.advance(b"\x1b[2;1H\x1b[2M");
    assert_eq!(lines(&t), ["1", "3", "", "", "5"], "DL within the region");
    t.advance(b"\x1b[r\x1b[2S");
    assert_eq!(lines(&t), ["", "", "5", "", ""], "SU over the whole screen");
    assert_eq!(
        t.scrollback_len(),
        2,
        "SU with the region at the top keeps history"
    );
    t.advance(b"\x1b[T");
    assert_eq!(lines(&t), ["", "", "", "5", ""], "SD");
}

#[test]
fn erase_insert_delete_characters() {
    let mut t = Terminal::new(8, 2, 0);
    t.advance(b"abcdefgh\x1b[1;3H\x1b[2P");
    assert_eq!(lines(&t)[0], "abefgh", "DCH");
    t.advance(b"\x1b[3@");
    assert_eq!(lines(&t)[0], "ab   efg", "ICH");
    t.advance(b"\x1b[1;2H\x1b[44m\x1b[2X");
    assert_eq!(lines(&t)[0], "a    efg", "ECH");
    let v = t.screen_value(0, None, true);
    assert_eq!(v["cells"][0]["text"], "", "an erased cell holds no text");
    assert_eq!(
        v["cells"][0]["style"]["bg"]["index"], 4,
        "but keeps the pen's background"
    );
    t.advance(b"\x1b[m\x1b[1;7H\x1b[1K");
    assert_eq!(lines(&t)[0], "       g", "EL 1");
    t.advance(b"\x1b[2;1Hxyz\x1b[1;1H\x1b[J");
    assert_eq!(lines(&t), ["", ""], "ED 0");
}

#[test]
fn tabs_stops_and_movement() {
    let mut t = Terminal::new(20, 2, 0);
    t.advance(b"\tA");
    assert_eq!(lines(&t)[0], "        A", "default stops every 8");
    t.advance(b"\x1b[1;4H\x1bH\r\tB");
    assert_eq!(lines(&t)[0], "   B    A", "HTS sets a stop");
    t.advance(b"\x1b[3g\r\tC");
    assert_eq!(
        cursor(&t),
        (19, 0, true),
        "TBC 3 clears them all: HT goes to the last column, then C"
    );
    assert!(lines(&t)[0].ends_with('C'));
    t.advance(b"\x1b[2;1H\x1bH\x1b[2;11H\x1bH\x1b[2;15H\x1b[Z");
    assert_eq!(cursor(&t), (10, 1, false), "CBT");
    t.advance(b"\r\x1b[2I");
    assert_eq!(cursor(&t), (19, 1, false), "CHT past the last stop");
}

#[test]
fn cursor_save_restore_and_the_1049_screen() {
    let mut t = Terminal::new(10, 3, 0);
    t.advance(b"\x1b[2;3H\x1b[31m\x1b7\x1b[m\x1b[H\x1b8X");
    let v = t.screen_value(0, None, true);
    assert_eq!(lines(&t)[1], "  X");
    assert_eq!(
        v["cells"][0]["style"]["fg"]["index"], 1,
        "DECRC restores the pen"
    );
    t.advance(b"\x1b[3;5H\x1b[?1049h");
    assert_eq!(
        cursor(&t),
        (4, 2, false),
        "the cursor stays where it was (xterm)"
    );
    assert_eq!(lines(&t), ["", "", ""], "1049 clears the alternate screen");
    t.advance(b"\x1b[Halt\x1b[?1049l");
    assert_eq!(lines(&t)[1], "  X");
    assert_eq!(
        cursor(&t),
        (4, 2, false),
        "1049 restores the cursor saved on entry"
    );
}

#[test]
fn index_next_line_origin_mode_repeat_and_lnm() {
    let mut t = Terminal::new(6, 4, 0);
    t.advance(b"ab\x1bDc\x1bEd");
    assert_eq!(lines(&t)[..3], ["ab", "  c", "d"]);
    t.advance(b"\x1b[2;3r\x1b[?6h\x1b[5;2HO");
    assert_eq!(
        cursor(&t),
        (2, 2, false),
        "origin mode clamps CUP to the region"
    );
    t.advance(b"\x1b[?6l\x1b[r\x1b[4;1Hz\x1b[3b");
    assert_eq!(lines(&t)[3], "zzzz", "REP repeats the last character");
    t.advance(b"\x1b[20h\x1b[1;3H\n");
    assert_eq!(cursor(&t), (0, 1, false), "LNM: LF also returns");
}

/// Where we follow xterm and `vt100` does not. The differential tests steer around these
/// cases; here they are pinned.
#[test]
fn xterm_behaviour_where_vt100_differs() {
    // Cursor motion cancels the wrap-pending state (xterm cursor.c resets do_wrap in
    // CursorUp / CursorDown / CursorBack / xtermIndex): the next character lands on the moved
    // row's last column. vt100 keeps its cursor past the edge and wraps again.
    let mut t = Terminal::new(4, 3, 0);
    t.advance(b"abcd\nX");
    assert_eq!(lines(&t)[..2], ["abcd", "   X"]);
    // BS from the wrap-pending state steps back from the last column (xterm CursorBack).
    let mut t = Terminal::new(4, 2, 0);
    t.advance(b"abcd\x08X");
    assert_eq!(lines(&t)[0], "abXd");
    // EL from the wrap-pending state erases the last column (the cursor is on it).
    let mut t = Terminal::new(4, 2, 0);
    t.advance(b"abcd\x1b[K");
    assert_eq!(lines(&t)[0], "abc");
    // DECSTBM homes the cursor to the screen's first row (origin mode off), and a region of
    // fewer than two rows is ignored. vt100 moves to the region's top and resets instead.
    let mut t = Terminal::new(4, 5, 0);
    t.advance(b"\x1b[3;5r");
    assert_eq!((cursor(&t), t.vt.top, t.vt.bottom), ((0, 0, false), 2, 4));
    t.advance(b"\x1b[4;4r");
    assert_eq!((t.vt.top, t.vt.bottom), (2, 4));
    // IL and DL move the cursor to the first column; vt100 keeps it. (More in
    // `xterm::il_and_dl_home_the_column`.)
    let mut t = Terminal::new(4, 3, 0);
    t.advance(b"ab\x1b[L");
    assert_eq!((lines(&t)[1].as_str(), cursor(&t)), ("ab", (0, 0, false)));
    // CUU from below the region stops at its top; RI above it moves up without scrolling.
    t.advance(b"\x1b[5;1H\x1b[r\x1b[2;3r\x1b[5;1H\x1b[9A");
    assert_eq!(cursor(&t).1, 1);
    t.advance(b"\x1b[1;1Htop\x1bM");
    assert_eq!((lines(&t)[0].as_str(), cursor(&t).1), ("top", 0));
    // The alternate screen shares the cursor, and 1049 while already there saves the cursor
    // and clears it (xterm `srm_OPT_ALTBUF_CURSOR`: `CursorSave`, `ToAlternate`, which does
    // nothing there, and `ClearScreen`).
    let mut t = Terminal::new(6, 3, 0);
    t.advance(b"\x1b[2;4H\x1b[?47h");
    assert_eq!(cursor(&t), (3, 1, false));
    t.advance(b"keep\x1b[?1049h");
    assert_eq!((lines(&t)[1].as_str(), cursor(&t)), ("", (1, 2, false)));
    // Each screen has its own saved cursor, pen included.
    let mut t = Terminal::new(6, 3, 0);
    t.advance(b"\x1b[31m\x1b7\x1b[?1049h\x1b[32m\x1b7\x1b[?1049lR");
    assert_eq!(
        t.screen_value(0, None, true)["cells"][0]["style"]["fg"]["index"],
        1
    );
    // HT keeps the wrap-pending state (xterm `TabToNextStop`); vt100 clamps its cursor back
    // onto the last column. (More in `xterm::a_tab_keeps_the_pending_wrap`.)
    let mut t = Terminal::new(4, 2, 0);
    t.advance(b"abcd\tX");
    assert_eq!(lines(&t), ["abcd", "X"]);
    // Bold and faint are two attributes (xterm); vt100 keeps the last set.
    let t = term_with(b"\x1b[1;2mx");
    let v = t.screen_value(0, None, true);
    assert_eq!(
        (
            &v["cells"][0]["style"]["bold"],
            &v["cells"][0]["style"]["faint"]
        ),
        (&Value::Bool(true), &Value::Bool(true))
    );
}

// [SCREEN.JSON.2] with history capture: `yes`-like output fills history row by row.
#[test]
fn history_captures_rows_as_they_leave() {
    let mut t = Terminal::new(10, 3, 5);
    for i in 0..20 {
        t.advance(format!("line {i}\r\n").as_bytes());
    }
    assert_eq!(t.scrollback_len(), 5);
    let v = screen(&t, Some(0), false);
    assert_eq!(
        v["scrollback"],
        serde_json::json!(["line 13", "line 14", "line 15", "line 16", "line 17"])
    );
    assert_eq!(v["lines"], serde_json::json!(["line 18", "line 19", ""]));
}

/// An idle terminal costs little and cells and history are allocated as they are written
/// (issue 38: an idle terminal at most tmux's 5 KiB of server memory).
#[test]
fn memory_per_terminal() {
    // A 40-byte header per row and the tab stops: no cells until a row is written.
    let headers = 24 * 40 + 80;
    let idle = Terminal::new(80, 24, 2000);
    assert_eq!(idle.heap_bytes(), headers, "idle");
    // A prompt costs the one row it is on: six bytes a cell.
    let mut prompt = Terminal::new(80, 24, 2000);
    prompt.advance(b"$ ");
    assert_eq!(prompt.heap_bytes(), headers + 80 * 6, "a prompt");
    assert_eq!(lines(&prompt)[0], "$", "the prompt reads back");
    assert!(lines(&prompt)[1..].iter().all(String::is_empty));
    assert_rebuilt(&prompt);
    // Six bytes a cell once every row is written.
    let grid = 80 * 24 * 6 + headers;
    // A full screen of plain text allocates nothing more: no styles, no marks.
    let mut screen = Terminal::new(80, 24, 2000);
    for y in 0..24 {
        screen.advance(&[b'x'; 80]);
        if y < 23 {
            screen.advance(b"\r\n");
        }
    }
    assert_eq!(screen.scrollback_len(), 0);
    assert_eq!(screen.heap_bytes(), grid, "full screen");
    // Colours cost a small table per row that has them: here 4 styles a row.
    let mut coloured = Terminal::new(80, 24, 2000);
    for y in 0..24 {
        let line =
            "\x1b[1;32muser\x1b[0m:\x1b[1;34m~/src\x1b[0m$ \x1b[7m ls \x1b[m \x1b[31mred\x1b[m";
        coloured.advance(line.as_bytes());
        if y < 23 {
            coloured.advance(b"\r\n");
        }
    }
    assert!(
        coloured.heap_bytes() <= grid + 24 * 96,
        "coloured: {}",
        coloured.heap_bytes()
    );
    let mut full = Terminal::new(80, 24, 2000);
    let line = [b'x'; 80];
    for _ in 0..2100 {
        full.advance(&line);
        full.advance(b"\r\n");
    }
    assert_eq!(full.scrollback_len(), 2000);
    // About a byte per column of history (the log's capacity at most twice its 160 KB of
    // text, plus the row index): far below a cell per column.
    assert!(
        full.heap_bytes() <= grid + (352 << 10),
        "full: {}",
        full.heap_bytes()
    );
}

/// One row painted over cell by cell in far more pens than its style table holds (10 columns:
/// 2 * 10 + 16 styles): every cell keeps its own pen, in GET_SCREEN and the bootstrap, and the
/// table stays within its bound.
#[test]
fn a_row_painted_in_more_pens_than_its_table_holds_keeps_every_cell_s_pen() {
    let mut t = Terminal::new(10, 2, 0);
    let mut want = vec![Value::Null; 10];
    for n in 0..1000u32 {
        let x = (n * 7 % 10) as usize;
        let (hi, lo) = ((n >> 8) as u8, n as u8);
        // Written characters in a true-colour foreground, erased cells in a palette background.
        if n % 3 == 0 {
            let bytes = format!("\x1b[m\x1b[1;{}H\x1b[48;5;{lo}m\x1b[X", x + 1);
            t.advance(bytes.as_bytes());
            want[x] =
                serde_json::json!(["", {"kind": "default"}, {"kind": "palette", "index": lo}]);
        } else {
            let c = char::from(b'a' + (n % 26) as u8);
            let bytes = format!("\x1b[m\x1b[1;{}H\x1b[38;2;{hi};{lo};9m{c}", x + 1);
            t.advance(bytes.as_bytes());
            let fg = serde_json::json!({"kind": "rgb", "r": hi, "g": lo, "b": 9});
            want[x] = serde_json::json!([c.to_string(), fg, {"kind": "default"}]);
        }
    }
    let v = screen(&t, None, true);
    let got: Vec<Value> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::json!([c["text"], c["style"]["fg"], c["style"]["bg"]]))
        .collect();
    assert_eq!(got, want);
    assert_rebuilt(&t);
    let fresh = Terminal::new(10, 2, 0);
    // The row's extra parts (56 bytes), its table at the bound, and the table's index by pen
    // (about 20 bytes a pen, plus the map) once it outgrows a linear search.
    let table = 56 + (2 * 10 + 16) * (size_of::<Pen>() + 20) + 24;
    assert!(
        t.heap_bytes() <= fresh.heap_bytes() + table,
        "{}",
        t.heap_bytes()
    );
}

/// A cursor saved wrap-pending over an empty last column of a soft-wrapped row (a wide
/// character that did not fit wrapped it): the bootstrap saves it before drawing the row, as
/// erasing the space that makes the wrap pending would end the row's soft wrap afterwards.
#[test]
fn bootstrap_keeps_a_soft_wrap_under_a_saved_pending_cursor() {
    for alternate in [false, true] {
        let mut t = Terminal::new(12, 5, 0);
        if alternate {
            t.advance(b"main\x1b[?1049h");
        }
        // The cursor saved wrap-pending at the end of row 1, whose last column is then erased;
        // a wide character that does not fit the last column wraps the row again.
        t.advance("\x1b[2;1H############\x1b7\x1b[X\x1b[2;11Hx\u{4e2d}".as_bytes());
        assert!(
            t.vt.screen.row(1).wrapped,
            "the wide character wrapped row 1"
        );
        let mut fresh = Terminal::new(12, 5, 0);
        fresh.advance(&t.bootstrap());
        assert_eq!(
            drawing(&t),
            drawing(&fresh),
            "alternate screen: {alternate}"
        );
    }
}

/// A one-column screen whose row soft-wrapped over a cleared cell (DECRC gives back a
/// pending wrap after 1049 cleared the screen) is rebuilt by the bootstrap, wrap included.
#[test]
fn bootstrap_keeps_a_one_column_wrap_over_an_empty_cell() {
    let mut t = Terminal::new(1, 4, 5);
    t.advance(b"\x1b[?1049h \x1b[?1049h\x1b8 ");
    assert!(t.vt.screen.row(0).wrapped);
    let mut fresh = Terminal::new(1, 4, 0);
    fresh.advance(&t.bootstrap());
    assert_eq!(drawing(&t), drawing(&fresh));
}
