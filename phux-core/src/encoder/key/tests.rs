//! Key encoding tests: legacy xterm bytes and the kitty keyboard protocol.

use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey};

use super::encode_key;
use crate::modes::{KittyFlags, TerminalModes};
use PhysicalKey as K;

const S: ModSet = ModSet::SHIFT;
const C: ModSet = ModSet::CTRL;
const A: ModSet = ModSet::ALT;
const N: ModSet = ModSet::NONE;

fn press(key: PhysicalKey, mods: ModSet) -> KeyEvent {
    KeyEvent::press(key, mods)
}

fn with_text(key: PhysicalKey, mods: ModSet, text: &str) -> KeyEvent {
    KeyEvent {
        text: Some(text.to_owned()),
        ..KeyEvent::press(key, mods)
    }
}

fn action(mut ev: KeyEvent, action: KeyAction) -> KeyEvent {
    ev.action = action;
    ev
}

fn enc(ev: &KeyEvent, modes: &TerminalModes) -> Vec<u8> {
    let mut out = Vec::new();
    encode_key(ev, modes, &mut out);
    out
}

fn kitty(flags: u8) -> TerminalModes {
    TerminalModes {
        kitty_flags: KittyFlags(flags),
        ..TerminalModes::default()
    }
}

fn check(table: &[(KeyEvent, &[u8])], modes: &TerminalModes) {
    for (ev, want) in table {
        let got = enc(ev, modes);
        assert_eq!(
            got,
            *want,
            "{ev:?} under {modes:?}: got {:?}, want {:?}",
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(want)
        );
    }
}

// xterm ctlseqs "PC-Style Function Keys" (cursor keys, Home/End, the modifier parameter
// table: 2 Shift, 3 Alt, 4 Shift+Alt, 5 Ctrl, 6 Shift+Ctrl, 7 Alt+Ctrl, 8 Shift+Alt+Ctrl,
// 9 Meta) and "VT220-Style Function Keys" (Insert 2~, Delete 3~, PageUp 5~, PageDown 6~,
// F1-F4 SS3 P..S, F5-F12 15~ 17~ 18~ 19~ 20~ 21~ 23~ 24~).
// [INPUT.ENCODE.KEY.6] [INPUT.ENCODE.KEY.7]
#[test]
fn xterm_function_keys() {
    #[rustfmt::skip]
    let normal: &[(KeyEvent, &[u8])] = &[
        (press(K::ARROW_UP, N), b"\x1b[A"),
        (press(K::ARROW_DOWN, N), b"\x1b[B"),
        (press(K::ARROW_RIGHT, N), b"\x1b[C"),
        (press(K::ARROW_LEFT, N), b"\x1b[D"),
        (press(K::HOME, N), b"\x1b[H"),
        (press(K::END, N), b"\x1b[F"),
        (press(K::ARROW_UP, S), b"\x1b[1;2A"),
        (press(K::ARROW_UP, A), b"\x1b[1;3A"),
        (press(K::ARROW_UP, S | A), b"\x1b[1;4A"),
        (press(K::ARROW_UP, C), b"\x1b[1;5A"),
        (press(K::ARROW_UP, S | C), b"\x1b[1;6A"),
        (press(K::ARROW_UP, A | C), b"\x1b[1;7A"),
        (press(K::ARROW_UP, S | A | C), b"\x1b[1;8A"),
        (press(K::ARROW_UP, ModSet::SUPER), b"\x1b[1;9A"),
        (press(K::END, C), b"\x1b[1;5F"),
        (press(K::INSERT, N), b"\x1b[2~"),
        (press(K::DELETE, N), b"\x1b[3~"),
        (press(K::PAGE_UP, N), b"\x1b[5~"),
        (press(K::PAGE_DOWN, N), b"\x1b[6~"),
        (press(K::DELETE, S), b"\x1b[3;2~"),
        (press(K::PAGE_DOWN, C), b"\x1b[6;5~"),
        (press(K::F1, N), b"\x1bOP"),
        (press(K::F2, N), b"\x1bOQ"),
        (press(K::F3, N), b"\x1bOR"),
        (press(K::F4, N), b"\x1bOS"),
        (press(K::F1, S), b"\x1b[1;2P"),
        (press(K::F4, C), b"\x1b[1;5S"),
        (press(K::F5, N), b"\x1b[15~"),
        (press(K::F6, N), b"\x1b[17~"),
        (press(K::F7, N), b"\x1b[18~"),
        (press(K::F8, N), b"\x1b[19~"),
        (press(K::F9, N), b"\x1b[20~"),
        (press(K::F10, N), b"\x1b[21~"),
        (press(K::F11, N), b"\x1b[23~"),
        (press(K::F12, N), b"\x1b[24~"),
        (press(K::F5, S), b"\x1b[15;2~"),
        (press(K::F12, A | C), b"\x1b[24;7~"),
        // F13-F25: the physical keys, as xterm 379 sends them (VT220 numbers to F20).
        (press(K::F13, N), b"\x1b[25~"),
        (press(K::F14, N), b"\x1b[26~"),
        (press(K::F15, N), b"\x1b[28~"),
        (press(K::F16, N), b"\x1b[29~"),
        (press(K::F17, N), b"\x1b[31~"),
        (press(K::F18, N), b"\x1b[32~"),
        (press(K::F19, N), b"\x1b[33~"),
        (press(K::F20, N), b"\x1b[34~"),
        (press(K::F21, N), b"\x1b[42~"),
        (press(K::F22, N), b"\x1b[43~"),
        (press(K::F23, N), b"\x1b[44~"),
        (press(K::F24, N), b"\x1b[45~"),
        (press(K::F25, N), b"\x1b[46~"),
        (press(K::F13, S), b"\x1b[25;2~"),
        (press(K::F13, C), b"\x1b[25;5~"),
        // Menu: xterm's CSI 29 ~.
        (press(K::CONTEXT_MENU, N), b"\x1b[29~"),
        (press(K::CONTEXT_MENU, S), b"\x1b[29;2~"),
        // Numpad navigation keys are their main-block twins in legacy mode.
        (press(K::NUMPAD_UP, N), b"\x1b[A"),
        (press(K::NUMPAD_BEGIN, N), b"\x1b[E"),
        (press(K::NUMPAD_PAGE_UP, N), b"\x1b[5~"),
    ];
    check(normal, &TerminalModes::default());
    // DECCKM: SS3 for unmodified cursor keys only.
    let app = TerminalModes {
        application_cursor_keys: true,
        ..TerminalModes::default()
    };
    #[rustfmt::skip]
    let app_table: &[(KeyEvent, &[u8])] = &[
        (press(K::ARROW_UP, N), b"\x1bOA"),
        (press(K::ARROW_DOWN, N), b"\x1bOB"),
        (press(K::ARROW_RIGHT, N), b"\x1bOC"),
        (press(K::ARROW_LEFT, N), b"\x1bOD"),
        (press(K::HOME, N), b"\x1bOH"),
        (press(K::END, N), b"\x1bOF"),
        (press(K::ARROW_UP, C), b"\x1b[1;5A"),
        (press(K::INSERT, N), b"\x1b[2~"),
    ];
    check(app_table, &app);
}

// kitty keyboard-protocol "Legacy functional keys", C0 controls table (Enter, Escape,
// Backspace, Tab, Space under no mods / Ctrl / Alt / Shift / Ctrl+Shift / Alt+Shift /
// Ctrl+Alt), which is xterm's behaviour too.
// [INPUT.ENCODE.KEY.3] [INPUT.ENCODE.KEY.4] [INPUT.ENCODE.KEY.5]
#[test]
fn c0_control_keys() {
    let mods = [N, C, A, S, C | S, A | S, C | A];
    #[rustfmt::skip]
    let table: &[(PhysicalKey, [&[u8]; 7])] = &[
        (K::ENTER, [b"\r", b"\r", b"\x1b\r", b"\r", b"\r", b"\x1b\r", b"\x1b\r"]),
        (K::ESCAPE, [b"\x1b", b"\x1b", b"\x1b\x1b", b"\x1b", b"\x1b", b"\x1b\x1b", b"\x1b\x1b"]),
        (K::BACKSPACE, [b"\x7f", b"\x08", b"\x1b\x7f", b"\x7f", b"\x08", b"\x1b\x7f", b"\x1b\x08"]),
        (K::TAB, [b"\t", b"\t", b"\x1b\t", b"\x1b[Z", b"\x1b[Z", b"\x1b[Z", b"\x1b\t"]),
        (K::SPACE, [b" ", b"\x00", b"\x1b ", b" ", b"\x00", b"\x1b ", b"\x1b\x00"]),
    ];
    for (key, wants) in table {
        for (m, want) in mods.iter().zip(wants) {
            let text = if *key == K::SPACE { Some(" ") } else { None };
            let ev = KeyEvent {
                text: text.map(str::to_owned),
                ..press(*key, *m)
            };
            assert_eq!(enc(&ev, &TerminalModes::default()), *want, "{key} {m:?}");
        }
    }
    // LNM: Enter is CR LF; DECBKM: Backspace is BS and Ctrl+Backspace DEL.
    let lnm = TerminalModes {
        line_feed_mode: true,
        ..TerminalModes::default()
    };
    assert_eq!(enc(&press(K::ENTER, N), &lnm), b"\r\n");
    let bkm = TerminalModes {
        backarrow_sends_backspace: true,
        ..TerminalModes::default()
    };
    assert_eq!(enc(&press(K::BACKSPACE, N), &bkm), b"\x08");
    assert_eq!(enc(&press(K::BACKSPACE, C), &bkm), b"\x7f");
}

// kitty keyboard-protocol "Legacy text keys" example table (plain, shift, alt, shift+alt)
// and the "Legacy ctrl mapping of ASCII keys" table.
// [INPUT.ENCODE.KEY.1] [INPUT.ENCODE.KEY.10] [INPUT.ENCODE.KEY.5]
#[test]
fn legacy_text_and_ctrl() {
    let d = TerminalModes::default();
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (with_text(K::KEY_I, N, "i"), b"i"),
        (with_text(K::KEY_I, S, "I"), b"I"),
        (with_text(K::KEY_I, A, "i"), b"\x1bi"),
        (with_text(K::KEY_I, S | A, "I"), b"\x1bI"),
        (with_text(K::DIGIT3, S, "#"), b"#"),
        (with_text(K::DIGIT3, A, "3"), b"\x1b3"),
        (with_text(K::SEMICOLON, S, ":"), b":"),
        (with_text(K::SEMICOLON, S | A, ":"), b"\x1b:"),
        // Ctrl mapping: letters to 1..26, and the ASCII table's others.
        (press(K::KEY_A, C), b"\x01"),
        (press(K::KEY_C, C), b"\x03"),
        (press(K::KEY_Z, C), b"\x1a"),
        (with_text(K::KEY_A, C | S, "A"), b"\x01"),
        (press(K::KEY_C, C | A), b"\x1b\x03"),
        (press(K::DIGIT2, C), b"\x00"),
        (with_text(K::DIGIT2, C | S, "@"), b"\x00"),
        (press(K::DIGIT3, C), b"\x1b"),
        (press(K::BRACKET_LEFT, C), b"\x1b"),
        (press(K::BACKSLASH, C), b"\x1c"),
        (press(K::BRACKET_RIGHT, C), b"\x1d"),
        (with_text(K::DIGIT6, C | S, "^"), b"\x1e"),
        (with_text(K::MINUS, C | S, "_"), b"\x1f"),
        (press(K::SLASH, C), b"\x1f"),
        (with_text(K::SLASH, C | S, "?"), b"\x7f"),
        (press(K::DIGIT8, C), b"\x7f"),
        // Ctrl leaves keys outside the table untouched.
        (with_text(K::DIGIT1, C, "1"), b"1"),
        (with_text(K::DIGIT9, C, "9"), b"9"),
        // Ctrl+C on a Cyrillic layout still maps through the physical key.
        (KeyEvent { unshifted_codepoint: Some(0x0441), ..with_text(K::KEY_C, C, "с") }, b"\x03"),
        // No text: derived from the US layout, shifted under Shift.
        (press(K::KEY_Q, N), b"q"),
        (press(K::KEY_Q, S), b"Q"),
        (press(K::DIGIT1, S), b"!"),
        (press(K::KEY_Q, A), b"\x1bq"),
        // Option consumed to make the text (macOS): no ESC prefix.
        (KeyEvent { consumed_mods: A, ..with_text(K::KEY_A, A, "å") }, "å".as_bytes()),
        // Super has no legacy byte: the text alone.
        (with_text(K::KEY_A, ModSet::SUPER, "a"), b"a"),
        // Multi-code-point text passes through.
        (with_text(K::KEY_E, N, "é́"), "é́".as_bytes()),
    ];
    check(table, &d);
}

fn unshifted(mut ev: KeyEvent, c: char) -> KeyEvent {
    ev.unshifted_codepoint = Some(u32::from(c));
    ev
}

// What xterm 379 (metaSendsEscape on, a US keymap, UTF-8) sent a raw-mode program for each
// chord, typed through the X server (conformance/xterm-keys.sh reproduces the table), with the
// client's `text` and without it. [INPUT.ENCODE.KEY.4] [INPUT.ENCODE.KEY.5]
#[test]
fn what_xterm_sends() {
    let d = TerminalModes::default();
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        // Ctrl: the X library's control translation, no more.
        (with_text(K::MINUS, C, "-"), b"-"),
        (press(K::MINUS, C), b"-"),
        (with_text(K::BACKQUOTE, C, "`"), b"\x00"),
        (with_text(K::BRACKET_LEFT, C | S, "{"), b"\x1b"),
        (press(K::BRACKET_LEFT, C | S), b"\x1b"),
        (with_text(K::BACKSLASH, C | S, "|"), b"\x1c"),
        (with_text(K::BRACKET_RIGHT, C | S, "}"), b"\x1d"),
        (with_text(K::BACKQUOTE, C | S, "~"), b"\x1e"),
        (with_text(K::SLASH, C | S, "?"), b"\x7f"),
        (with_text(K::DIGIT1, C, "1"), b"1"),
        (with_text(K::DIGIT0, C, "0"), b"0"),
        (with_text(K::SEMICOLON, C, ";"), b";"),
        (with_text(K::QUOTE, C, "'"), b"'"),
        (with_text(K::COMMA, C, ","), b","),
        (with_text(K::EQUAL, C, "="), b"="),
        (with_text(K::DIGIT1, C | S, "!"), b"!"),
        (press(K::DIGIT1, C | S), b"!"),
        (with_text(K::DIGIT2, C | S, "@"), b"\x00"),
        (press(K::DIGIT6, C | S), b"\x1e"),
        (with_text(K::SPACE, C | S, " "), b"\x00"),
        (with_text(K::SPACE, C | A, " "), b"\x1b\x00"),
        (with_text(K::BRACKET_LEFT, C | A, "["), b"\x1b\x1b"),
        (with_text(K::KEY_A, C | A | S, "A"), b"\x1b\x01"),
        (with_text(K::KEY_P, C | S, "P"), b"\x10"),
        // A layout's own ASCII character decides, not the US key under it: Ctrl with `)` on a
        // French keyboard (the US `-` key) is `)`.
        (unshifted(with_text(K::MINUS, C, ")"), ')'), b")"),
        // Ctrl with a character outside ASCII: the character (xterm), except on a letter key,
        // where the Latin letter's control (Ctrl+C interrupts on a Cyrillic layout).
        (unshifted(with_text(K::DIGIT2, C, "é"), 'é'), "é".as_bytes()),
        (unshifted(with_text(K::DIGIT2, C | A, "é"), 'é'), "\x1bé".as_bytes()),
        (unshifted(with_text(K::BRACKET_LEFT, C, "ü"), 'ü'), "ü".as_bytes()),
        (unshifted(with_text(K::KEY_C, C, "с"), 'с'), b"\x03"),
        (unshifted(press(K::KEY_X, C), 'ч'), b"\x18"),
        (unshifted(press(K::DIGIT4, C), '\''), b"'"),
        // Alt: ESC before the character, ASCII or not, text or derived.
        (with_text(K::KEY_A, A | S, "A"), b"\x1bA"),
        (with_text(K::SEMICOLON, A | S, ":"), b"\x1b:"),
        (press(K::SEMICOLON, A | S), b"\x1b:"),
        (unshifted(press(K::SEMICOLON, A | S), ';'), b"\x1b:"),
        (unshifted(press(K::COMMA, A | S), ','), b"\x1b<"),
        (unshifted(press(K::BRACKET_LEFT, A | S), '['), b"\x1b{"),
        (unshifted(press(K::DIGIT5, A | S), '5'), b"\x1b%"),
        (unshifted(press(K::DIGIT1, A | S), '1'), b"\x1b!"),
        (unshifted(with_text(K::DIGIT2, A, "é"), 'é'), "\x1bé".as_bytes()),
        (unshifted(press(K::DIGIT2, A), 'é'), "\x1bé".as_bytes()),
        (unshifted(press(K::MINUS, A), 'ß'), "\x1bß".as_bytes()),
        (unshifted(with_text(K::KEY_A, A, "ф"), 'ф'), "\x1bф".as_bytes()),
        (unshifted(press(K::KEY_A, A | S), 'ф'), "\x1bФ".as_bytes()),
        // Caps Lock capitalises a derived letter, Shift undoes it.
        (press(K::KEY_Q, ModSet::CAPS_LOCK), b"Q"),
        (press(K::KEY_Q, ModSet::CAPS_LOCK | S), b"q"),
        (press(K::DIGIT1, ModSet::CAPS_LOCK), b"1"),
        // Shift+Tab is CSI Z with Alt too.
        (press(K::TAB, A | S), b"\x1b[Z"),
        (press(K::TAB, C | S), b"\x1b[Z"),
    ];
    check(table, &d);
}

// xterm ctlseqs, VT220 keypad table: numeric mode sends the characters, application
// mode (DECKPAM) SS3 p..y, SS3 M (Enter), k + , m - , j * , o / , n . , l , , X =.
// [INPUT.ENCODE.KEY.8]
#[test]
fn keypad() {
    let numeric = TerminalModes::default();
    let app = TerminalModes {
        application_keypad: true,
        ..TerminalModes::default()
    };
    #[rustfmt::skip]
    let table: &[(PhysicalKey, &[u8], &[u8])] = &[
        (K::NUMPAD0, b"0", b"\x1bOp"),
        (K::NUMPAD1, b"1", b"\x1bOq"),
        (K::NUMPAD5, b"5", b"\x1bOu"),
        (K::NUMPAD9, b"9", b"\x1bOy"),
        (K::NUMPAD_ENTER, b"\r", b"\x1bOM"),
        (K::NUMPAD_ADD, b"+", b"\x1bOk"),
        (K::NUMPAD_SUBTRACT, b"-", b"\x1bOm"),
        (K::NUMPAD_MULTIPLY, b"*", b"\x1bOj"),
        (K::NUMPAD_DIVIDE, b"/", b"\x1bOo"),
        (K::NUMPAD_DECIMAL, b".", b"\x1bOn"),
        (K::NUMPAD_SEPARATOR, b",", b"\x1bOl"),
        (K::NUMPAD_EQUAL, b"=", b"\x1bOX"),
    ];
    for (key, num, appl) in table {
        assert_eq!(enc(&press(*key, N), &numeric), *num, "{key}");
        assert_eq!(enc(&press(*key, N), &app), *appl, "{key}");
    }
    // With Num Lock on the keypad types its characters under DECKPAM too (xterm); without it,
    // modifiers go between SS3 and the final (xterm's Ctrl+KP_Add is SS3 5 k).
    let nl = ModSet::NUM_LOCK;
    assert_eq!(enc(&with_text(K::NUMPAD1, nl, "1"), &app), b"1");
    assert_eq!(enc(&press(K::NUMPAD_ENTER, nl), &app), b"\r");
    assert_eq!(enc(&with_text(K::NUMPAD_ADD, nl, "+"), &app), b"+");
    assert_eq!(enc(&press(K::NUMPAD_ADD, C), &app), b"\x1bO5k");
    assert_eq!(enc(&press(K::NUMPAD1, S | A), &app), b"\x1bO4q");
    // Alt does not prefix the keypad's characters (xterm's Alt+KP_1 is 1).
    assert_eq!(enc(&with_text(K::NUMPAD1, A | nl, "1"), &numeric), b"1");
    // Numeric mode prefers the key's own text (a locale's decimal comma).
    assert_eq!(enc(&with_text(K::NUMPAD_DECIMAL, N, ","), &numeric), b",");
    let lnm = TerminalModes {
        line_feed_mode: true,
        ..TerminalModes::default()
    };
    assert_eq!(enc(&press(K::NUMPAD_ENTER, N), &lnm), b"\r\n");
}

// [INPUT.ENCODE.KEY.2] [INPUT.ENCODE.KEY.9] Releases, composition, R5 unknown keys.
#[test]
fn legacy_silences() {
    let d = TerminalModes::default();
    assert_eq!(
        enc(&action(with_text(K::KEY_A, N, "a"), KeyAction::Release), &d),
        b""
    );
    assert_eq!(
        enc(&action(with_text(K::KEY_A, N, "a"), KeyAction::Repeat), &d),
        b"a"
    );
    let composing = KeyEvent {
        composing: true,
        ..with_text(K::KEY_A, N, "a")
    };
    assert_eq!(enc(&composing, &d), b"");
    for key in [K::UNIDENTIFIED, PhysicalKey(999), PhysicalKey(u32::MAX)] {
        assert_eq!(enc(&press(key, N), &d), b"", "{key}");
        let with_cp = KeyEvent {
            unshifted_codepoint: Some(u32::from('x')),
            ..press(key, N)
        };
        assert_eq!(enc(&with_cp, &d), b"", "{key}");
        assert_eq!(enc(&with_text(key, N, "ü"), &d), "ü".as_bytes(), "{key}");
    }
    // Modifier keys, lock keys and keys with no legacy code write nothing.
    for key in [
        K::SHIFT_LEFT,
        K::CONTROL_RIGHT,
        K::CAPS_LOCK,
        K::PRINT_SCREEN,
        K::MEDIA_PLAY_PAUSE,
        K::BROWSER_BACK,
    ] {
        assert_eq!(enc(&press(key, N), &d), b"", "{key}");
    }
    // Control characters in text never reach the PTY.
    assert_eq!(enc(&with_text(K::KEY_A, N, "\x1b[31m"), &d), b"a");
    assert_eq!(enc(&with_text(K::UNIDENTIFIED, N, "\x03"), &d), b"");
}

// kitty keyboard-protocol "Disambiguate escape codes" and the "Functional key
// definitions" table. [INPUT.ENCODE.KITTY.1] [INPUT.ENCODE.KITTY.4]
#[test]
fn kitty_disambiguate() {
    let m = kitty(0b1);
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (press(K::ESCAPE, N), b"\x1b[27u"),
        (press(K::ESCAPE, S), b"\x1b[27;2u"),
        // Enter, Tab, Backspace keep their legacy bytes when unmodified...
        (press(K::ENTER, N), b"\r"),
        (press(K::TAB, N), b"\t"),
        (press(K::BACKSPACE, N), b"\x7f"),
        // ...and are CSI u with modifiers.
        (press(K::ENTER, S), b"\x1b[13;2u"),
        (press(K::TAB, S), b"\x1b[9;2u"),
        (press(K::TAB, C | S), b"\x1b[9;6u"),
        (press(K::BACKSPACE, C), b"\x1b[127;5u"),
        // Text keys: plain text unless Alt / Ctrl / Super is involved.
        (with_text(K::KEY_A, N, "a"), b"a"),
        (with_text(K::KEY_A, S, "A"), b"A"),
        (press(K::KEY_A, C), b"\x1b[97;5u"),
        (press(K::KEY_C, C), b"\x1b[99;5u"),
        (press(K::KEY_A, C | S), b"\x1b[97;6u"),
        (with_text(K::KEY_A, A, "a"), b"\x1b[97;3u"),
        (with_text(K::KEY_A, A | S, "A"), b"\x1b[97;4u"),
        (press(K::KEY_A, ModSet::SUPER), b"\x1b[97;9u"),
        (press(K::SPACE, C), b"\x1b[32;5u"),
        (press(K::BRACKET_LEFT, A), b"\x1b[91;3u"),
        // Functional keys.
        (press(K::INSERT, N), b"\x1b[2~"),
        (press(K::DELETE, N), b"\x1b[3~"),
        (press(K::PAGE_UP, N), b"\x1b[5~"),
        (press(K::PAGE_DOWN, C), b"\x1b[6;5~"),
        (press(K::ARROW_LEFT, N), b"\x1b[D"),
        (press(K::ARROW_RIGHT, N), b"\x1b[C"),
        (press(K::ARROW_UP, N), b"\x1b[A"),
        (press(K::ARROW_DOWN, S), b"\x1b[1;2B"),
        (press(K::HOME, N), b"\x1b[H"),
        (press(K::END, C), b"\x1b[1;5F"),
        (press(K::F1, N), b"\x1b[P"),
        (press(K::F2, N), b"\x1b[Q"),
        (press(K::F3, N), b"\x1b[13~"),
        (press(K::F4, N), b"\x1b[S"),
        (press(K::F1, C), b"\x1b[1;5P"),
        (press(K::F3, S), b"\x1b[13;2~"),
        (press(K::F5, N), b"\x1b[15~"),
        (press(K::F12, N), b"\x1b[24~"),
        (press(K::F13, N), b"\x1b[57376u"),
        (press(K::F25, N), b"\x1b[57388u"),
        (press(K::PRINT_SCREEN, N), b"\x1b[57361u"),
        (press(K::PAUSE, N), b"\x1b[57362u"),
        (press(K::CONTEXT_MENU, N), b"\x1b[57363u"),
        (press(K::SCROLL_LOCK, N), b"\x1b[57359u"),
        (press(K::MEDIA_PLAY_PAUSE, N), b"\x1b[57430u"),
        (press(K::AUDIO_VOLUME_MUTE, N), b"\x1b[57440u"),
        // Lock modifiers are reported for functional keys (caps_lock 64, num_lock 128)...
        (press(K::ARROW_UP, ModSet::CAPS_LOCK), b"\x1b[1;65A"),
        (press(K::ESCAPE, ModSet::NUM_LOCK), b"\x1b[27;129u"),
        // ...and for text keys sent as escape codes, but not for a key sent as its text.
        (with_text(K::KEY_A, ModSet::CAPS_LOCK, "A"), b"A"),
        (press(K::KEY_A, C | ModSet::CAPS_LOCK), b"\x1b[97;69u"),
        (press(K::KEY_A, C | ModSet::NUM_LOCK), b"\x1b[97;133u"),
        // Without report-all-keys modifier keys are not reported.
        (press(K::SHIFT_LEFT, S), b""),
        (press(K::CAPS_LOCK, N), b""),
    ];
    check(table, &m);
}

// kitty "Disambiguate": keypad keys are reported with their own KP_* codes unless they
// produce text. [INPUT.ENCODE.KITTY.5]
#[test]
fn kitty_keypad() {
    let m = kitty(0b1);
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (with_text(K::NUMPAD1, N, "1"), b"1"),
        (press(K::NUMPAD0, N), b"\x1b[57399u"),
        (press(K::NUMPAD9, N), b"\x1b[57408u"),
        (with_text(K::NUMPAD1, C, "1"), b"\x1b[57400;5u"),
        (press(K::NUMPAD_DECIMAL, N), b"\x1b[57409u"),
        (press(K::NUMPAD_DIVIDE, N), b"\x1b[57410u"),
        (press(K::NUMPAD_MULTIPLY, N), b"\x1b[57411u"),
        (press(K::NUMPAD_SUBTRACT, N), b"\x1b[57412u"),
        (press(K::NUMPAD_ADD, N), b"\x1b[57413u"),
        (press(K::NUMPAD_ENTER, N), b"\x1b[57414u"),
        (press(K::NUMPAD_EQUAL, N), b"\x1b[57415u"),
        (press(K::NUMPAD_SEPARATOR, N), b"\x1b[57416u"),
        (press(K::NUMPAD_LEFT, N), b"\x1b[57417u"),
        (press(K::NUMPAD_RIGHT, N), b"\x1b[57418u"),
        (press(K::NUMPAD_UP, N), b"\x1b[57419u"),
        (press(K::NUMPAD_DOWN, N), b"\x1b[57420u"),
        (press(K::NUMPAD_PAGE_UP, N), b"\x1b[57421u"),
        (press(K::NUMPAD_PAGE_DOWN, N), b"\x1b[57422u"),
        (press(K::NUMPAD_HOME, N), b"\x1b[57423u"),
        (press(K::NUMPAD_END, N), b"\x1b[57424u"),
        (press(K::NUMPAD_INSERT, N), b"\x1b[57425u"),
        (press(K::NUMPAD_DELETE, N), b"\x1b[57426u"),
        (press(K::NUMPAD_BEGIN, N), b"\x1b[E"),
        (press(K::NUMPAD_BEGIN, C), b"\x1b[1;5E"),
    ];
    check(table, &m);
}

// kitty "Event types": `CSI key-code;modifier:2` repeat, `:3` release, press the
// default; "Report event types" note: Enter, Tab, Backspace have no release events
// without report-all-keys. [INPUT.ENCODE.KITTY.2] [INPUT.ENCODE.KITTY.3]
#[test]
fn kitty_event_types() {
    let m = kitty(0b11);
    let rel = KeyAction::Release;
    let rep = KeyAction::Repeat;
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (press(K::ESCAPE, N), b"\x1b[27u"),
        (action(press(K::ESCAPE, N), rep), b"\x1b[27;1:2u"),
        (action(press(K::ESCAPE, N), rel), b"\x1b[27;1:3u"),
        (action(press(K::ESCAPE, C), rel), b"\x1b[27;5:3u"),
        (action(press(K::ARROW_UP, N), rel), b"\x1b[1;1:3A"),
        (action(press(K::DELETE, S), rep), b"\x1b[3;2:2~"),
        // Text keys: presses and repeats are text, a release is CSI u.
        (with_text(K::KEY_A, N, "a"), b"a"),
        (action(with_text(K::KEY_A, N, "a"), rep), b"a"),
        (action(with_text(K::KEY_A, N, "a"), rel), b"\x1b[97;1:3u"),
        (action(press(K::KEY_A, C), rel), b"\x1b[97;5:3u"),
        (action(press(K::ENTER, N), rel), b""),
        (action(press(K::TAB, N), rel), b""),
        (action(press(K::BACKSPACE, N), rel), b""),
        (action(press(K::ENTER, N), rep), b"\r"),
        (action(press(K::ENTER, S), rel), b"\x1b[13;2:3u"),
    ];
    check(table, &m);
    // Without the flag: no releases, a repeat is a press.
    let d = kitty(0b1);
    assert_eq!(enc(&action(press(K::ESCAPE, N), rel), &d), b"");
    assert_eq!(enc(&action(press(K::ESCAPE, N), rep), &d), b"\x1b[27u");
}

// kitty "Key codes" (alternate keys: `code:shifted:base`, the shifted key only with
// Shift, `code::base` for a base-layout key alone, e.g. ctrl+С on a Cyrillic layout gives
// base 99). [INPUT.ENCODE.KITTY.9]
#[test]
fn kitty_alternate_keys() {
    let m = kitty(0b101);
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (press(K::KEY_A, C | S), b"\x1b[97:65;6u"),
        (with_text(K::KEY_A, C | S, "A"), b"\x1b[97:65;6u"),
        (press(K::KEY_A, C), b"\x1b[97;5u"),
        (with_text(K::EQUAL, C | S, "+"), b"\x1b[61:43;6u"),
        (KeyEvent { unshifted_codepoint: Some(0x0441), ..press(K::KEY_C, C) }, b"\x1b[1089::99;5u"),
        (KeyEvent { unshifted_codepoint: Some(0x0441), ..with_text(K::KEY_C, C | S, "С") }, b"\x1b[1089:1057:99;6u"),
        // Only keys already sent as escape codes are affected.
        (with_text(K::KEY_A, S, "A"), b"A"),
        (press(K::ARROW_UP, S), b"\x1b[1;2A"),
    ];
    check(table, &m);
    // Alternate keys alone do not leave legacy mode.
    assert_eq!(enc(&press(K::ESCAPE, N), &kitty(0b100)), b"\x1b");
    assert_eq!(enc(&press(K::ESCAPE, N), &kitty(0b10000)), b"\x1b");
}

// kitty "Report all keys as escape codes" and "Text as code points": `shift+a -> CSI 97
// ; 2 ; 65 u`, `option+a -> CSI 97 ; ; 229 u`; modifier keys reported with their own bit
// as it is after the event (LEFT_SHIFT 57441 ...). [INPUT.ENCODE.KITTY.6]
// [INPUT.ENCODE.KITTY.7] [INPUT.ENCODE.KITTY.8] [INPUT.ENCODE.KITTY.9]
#[test]
fn kitty_report_all_and_text() {
    let all = kitty(0b1000);
    let rel = KeyAction::Release;
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        (with_text(K::KEY_A, N, "a"), b"\x1b[97u"),
        (with_text(K::KEY_A, S, "A"), b"\x1b[97;2u"),
        (press(K::ENTER, N), b"\x1b[13u"),
        (press(K::TAB, N), b"\x1b[9u"),
        (press(K::BACKSPACE, N), b"\x1b[127u"),
        (press(K::ESCAPE, N), b"\x1b[27u"),
        (with_text(K::SPACE, N, " "), b"\x1b[32u"),
        (with_text(K::NUMPAD1, N, "1"), b"\x1b[57400u"),
        (with_text(K::KEY_A, ModSet::CAPS_LOCK, "A"), b"\x1b[97;65u"),
        (press(K::SHIFT_LEFT, S), b"\x1b[57441;2u"),
        (press(K::SHIFT_LEFT, N), b"\x1b[57441;2u"),
        (press(K::CONTROL_LEFT, C), b"\x1b[57442;5u"),
        (press(K::ALT_LEFT, A), b"\x1b[57443;3u"),
        (press(K::META_LEFT, ModSet::SUPER), b"\x1b[57444;9u"),
        (press(K::SHIFT_RIGHT, S), b"\x1b[57447;2u"),
        (press(K::CONTROL_RIGHT, C), b"\x1b[57448;5u"),
        (press(K::ALT_RIGHT, A), b"\x1b[57449;3u"),
        (press(K::META_RIGHT, ModSet::SUPER), b"\x1b[57450;9u"),
        (press(K::CAPS_LOCK, N), b"\x1b[57358u"),
        (press(K::NUM_LOCK, ModSet::NUM_LOCK), b"\x1b[57360;129u"),
        // Releasing a modifier key: without event types, nothing...
        (action(press(K::SHIFT_LEFT, S), rel), b""),
        // A key with text and no known key code: key number 0.
        (with_text(K::UNIDENTIFIED, N, "é"), b"\x1b[0u"),
        (press(K::UNIDENTIFIED, N), b""),
    ];
    check(table, &all);
    // ...with them, the release clears the key's own bit.
    let events = kitty(0b1010);
    assert_eq!(
        enc(&action(press(K::CONTROL_LEFT, C), rel), &events),
        b"\x1b[57442;1:3u"
    );
    assert_eq!(
        enc(&action(press(K::CONTROL_LEFT, C | S), rel), &events),
        b"\x1b[57442;2:3u"
    );
    let text = kitty(0b11000);
    #[rustfmt::skip]
    let text_table: &[(KeyEvent, &[u8])] = &[
        (with_text(K::KEY_A, S, "A"), b"\x1b[97;2;65u"),
        (KeyEvent { consumed_mods: A, ..with_text(K::KEY_A, A, "å") }, b"\x1b[97;;229u"),
        (with_text(K::KEY_A, N, "a"), b"\x1b[97;;97u"),
        (with_text(K::KEY_E, N, "é́"), b"\x1b[101;;233:769u"),
        (with_text(K::UNIDENTIFIED, N, "é"), b"\x1b[0;;233u"),
        // Functional keys and control characters carry no text.
        (press(K::ENTER, N), b"\x1b[13u"),
        (with_text(K::KEY_A, C, "\x01"), b"\x1b[97;5u"),
    ];
    check(text_table, &text);
    // Releases carry no text.
    let text_events = kitty(0b11010);
    assert_eq!(
        enc(&action(with_text(K::KEY_A, N, "a"), rel), &text_events),
        b"\x1b[97;1:3u"
    );
    // Associated text alone (without report-all-keys) changes nothing.
    assert_eq!(enc(&with_text(K::KEY_A, N, "a"), &kitty(0b10001)), b"a");
    // Ctrl, Alt or Super make no text: none is associated (kitty sends `alt+a` with text only
    // when the system consumed Alt to type `å`, above).
    #[rustfmt::skip]
    let no_text: &[(KeyEvent, &[u8])] = &[
        (with_text(K::KEY_T, A, "t"), b"\x1b[116;3u"),
        (with_text(K::MINUS, C, "-"), b"\x1b[45;5u"),
        (with_text(K::KEY_D, S | A, "D"), b"\x1b[100;4u"),
        // A keypad key sent as an escape code carries its text and the lock modifiers, as
        // any key does (kitty strips locks only in legacy mode).
        (with_text(K::NUMPAD0, ModSet::NUM_LOCK, "0"), b"\x1b[57399;129;48u"),
        (with_text(K::NUMPAD0, C | ModSet::NUM_LOCK, "0"), b"\x1b[57399;133u"),
    ];
    check(no_text, &text);
}

// Kitty "Key codes" when the client sent no unshifted code point: the key is its text when
// the text tells it (a letter's lower case, an unshifted key's own character), else the US
// layout's key; the shifted alternate of a textless US key is the US layout's shifted key.
// [INPUT.ENCODE.KITTY.8] [INPUT.ENCODE.KITTY.9]
#[test]
fn kitty_key_code_without_unshifted_codepoint() {
    let all = kitty(0b1101);
    #[rustfmt::skip]
    let table: &[(KeyEvent, &[u8])] = &[
        // Russian п on the G key: key 1087, base layout g.
        (with_text(K::KEY_G, N, "п"), b"\x1b[1087::103u"),
        // Russian Я with Shift: key я (1103), shifted Я, base z.
        (with_text(K::KEY_Z, S, "Я"), b"\x1b[1103:1071:122;2u"),
        // French é on Digit2, unshifted: key 233, base 2.
        (with_text(K::DIGIT2, N, "é"), b"\x1b[233::50u"),
        // Shift+5 typing %: the shifted text says nothing of the key; the US 5 it is.
        (with_text(K::DIGIT5, S, "%"), b"\x1b[53:37;2u"),
        // No text: the US key, and Shift+; has : as its shifted key.
        (press(K::SEMICOLON, C | S), b"\x1b[59:58;6u"),
        // Option typed å: the text is not the key.
        (KeyEvent { consumed_mods: A, ..with_text(K::KEY_A, A, "å") }, b"\x1b[97u"),
    ];
    check(table, &all);
}

#[test]
fn kitty_composition_and_unknown_keys() {
    let all = kitty(0b11111);
    let composing = KeyEvent {
        composing: true,
        ..with_text(K::KEY_A, N, "a")
    };
    assert_eq!(enc(&composing, &all), b"");
    assert_eq!(enc(&press(PhysicalKey(4242), N), &kitty(1)), b"");
    assert_eq!(
        enc(&with_text(PhysicalKey(4242), N, "ж"), &kitty(1)),
        "ж".as_bytes()
    );
    let cp = KeyEvent {
        unshifted_codepoint: Some(u32::from('ж')),
        ..press(PhysicalKey(4242), C)
    };
    assert_eq!(enc(&cp, &kitty(1)), b"\x1b[1078;5u");
}
