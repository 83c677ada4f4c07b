//! Behaviour pinned to xterm's: each test names its evidence (a section of ctlseqs or the
//! xterm source function) and the `printf` that shows it on an 80-column xterm.

use super::{assert_same, cursor, lines};
use crate::Terminal;
use crate::grid::{BOLD, DIM, DOUBLE_UNDERLINE, Pen, UNDERLINE};

fn term(bytes: &[u8]) -> Terminal {
    let mut t = Terminal::new(80, 24, 0);
    t.advance(bytes);
    t
}

/// The bootstrap rebuilds `original` on a fresh terminal of ours (not checked on `vt100`, which
/// lacks most of what is tested here).
fn assert_rebuilt(original: &Terminal) {
    let (cols, rows) = original.size();
    let mut fresh = Terminal::new(cols, rows, 0);
    fresh.advance(&original.bootstrap());
    assert_same(original, &fresh);
}

/// The pen of the cell at `x`, `y`.
fn pen_at(t: &Terminal, x: u16, y: u16) -> Pen {
    let row = t.vt.screen.row(y);
    row.pen(row.cells[usize::from(x)])
}

/// ctlseqs, "Character Attributes (SGR)": `Ps = 1` Bold, `Ps = 2` Faint, `Ps = 2 2` Normal
/// (neither bold nor faint). xterm's charproc.c keeps BOLD and ATR_FAINT as separate flags.
/// `printf '\033[1;2mx\033[22my\n'`: x is bold and faint, y neither.
#[test]
fn bold_and_faint_are_kept_together_and_sgr_22_clears_both() {
    let t = term(b"\x1b[1;2mx\x1b[22my");
    assert!(pen_at(&t, 0, 0).has(BOLD) && pen_at(&t, 0, 0).has(DIM));
    assert_eq!(pen_at(&t, 1, 0), Pen::default());
    let t = term(b"\x1b[2;1mx");
    assert!(
        pen_at(&t, 0, 0).has(BOLD) && pen_at(&t, 0, 0).has(DIM),
        "either order"
    );
    assert_rebuilt(&t);
}

/// ctlseqs, "Character Attributes (SGR)": `Ps = 2 1` Doubly-underlined (ISO 6429), `Ps = 2 4`
/// Not underlined (neither singly nor doubly; charproc.c clears UNDERLINE and ATR_DBL_UNDER).
/// `printf '\033[21mx\033[4my\033[24mz\n'`: x doubly underlined, y both, z neither.
#[test]
fn sgr_21_is_double_underline_and_sgr_24_clears_it() {
    let t = term(b"\x1b[21mx\x1b[4my\x1b[24mz");
    let (x, y, z) = (pen_at(&t, 0, 0), pen_at(&t, 1, 0), pen_at(&t, 2, 0));
    assert!(x.has_bg(DOUBLE_UNDERLINE) && !x.has(UNDERLINE));
    assert!(y.has_bg(DOUBLE_UNDERLINE) && y.has(UNDERLINE));
    assert_eq!(z, Pen::default());
    // A background colour set or reset after it keeps it.
    let t = term(b"\x1b[21;44;49;48;5;9;41mx");
    assert!(pen_at(&t, 0, 0).has_bg(DOUBLE_UNDERLINE));
    assert_rebuilt(&t);
    assert_eq!(lines(&t)[0], "x");
    assert_eq!(cursor(&t), (1, 0, false));
}

/// ctlseqs, "CSI Pm h Set Mode (SM)": `Ps = 4` Insert Mode (IRM); xterm's `WriteText` calls
/// `InsertChar` before writing when INSERT is set, so what passes the right margin is lost.
/// `printf 'abcdef\r\033[4hXY\033[4l\n'`: `XYabcdef`.
#[test]
fn insert_mode_pushes_the_row_right() {
    let t = term(b"abcdef\r\x1b[4hXY\x1b[4l\n");
    assert_eq!(lines(&t)[0], "XYabcdef");
    assert!(!t.vt.insert, "CSI 4 l resets it");
    // Past the right margin: the row's last characters are lost, wide ones too.
    let mut t = Terminal::new(6, 2, 0);
    t.advance(b"abcd\xe4\xb8\xad\r\x1b[4hX");
    assert_eq!(lines(&t)[0], "Xabcd");
    t.advance("\u{4e2d}".as_bytes());
    assert_eq!(lines(&t)[0], "X\u{4e2d}abc");
    assert_eq!(cursor(&t), (3, 0, false));
    assert_rebuilt(&t);
    // Replace mode again: overwrites.
    t.advance(b"\x1b[4lZ");
    assert_eq!(lines(&t)[0], "X\u{4e2d}Zbc");
}

/// xterm's `TabToNextStop` (tabs.c) sets `cur_col` without resetting `do_wrap`: an HT in the
/// wrap-pending state leaves the cursor on the last column, still pending (ctlseqs: HT
/// "Horizontal Tab"). `printf '%080d\tV\n' 0`: V starts the next row.
#[test]
fn a_tab_keeps_the_pending_wrap() {
    let mut t = term(format!("{:080}\tV\n", 0).as_bytes());
    assert_eq!(lines(&t)[..2], ["0".repeat(80), "V".to_owned()]);
    // CHT too (the same function), and a tab that merely reaches the last column does not
    // make the cursor pending.
    t.advance(format!("\r{:080}\x1b[3IW\r\n\x1b[3g\tY", 0).as_bytes());
    assert_eq!(lines(&t)[3], "W");
    assert_eq!(lines(&t)[4], format!("{}Y", " ".repeat(79)));
}

/// xterm's `CursorSave` keeps `do_wrap` (`sc->wrap_flag`) and `CursorRestore` sets it again
/// after moving (cursor.c; ctlseqs: "ESC 7 Save Cursor (DECSC)", "ESC 8 Restore Cursor
/// (DECRC)"). `printf '\033[1;79HAB\0337\033[3;1HQ\0338X'`: X wraps to row 2, B stays.
#[test]
fn decrc_restores_the_pending_wrap() {
    let mut t = term(b"\x1b[1;79HAB\x1b7\x1b[3;1HQ\x1b8");
    assert_eq!(cursor(&t), (79, 0, true));
    assert_rebuilt(&t);
    t.advance(b"X");
    assert_eq!(
        lines(&t)[..3],
        [format!("{}AB", " ".repeat(78)), "X".into(), "Q".into()]
    );
    // The bootstrap makes a saved pending wrap on an emptied last column too.
    let mut t = term(b"\x1b[1;79HAB\x1b7\x1b[2J\x1b[44m\x1b[1;80H\x1b[X\x1b[m\x1b[3;1H");
    assert_rebuilt(&t);
    t.advance(b"\x1b8X");
    assert_eq!(lines(&t)[1], "X");
    // And the 1049 screen's saved cursor, on an emptied last column too.
    for clear in ["", "\x1b[K"] {
        let mut t = term(format!("\x1b[1;79HAB\x1b[?1049h\x1b[5;5Hx{clear}").as_bytes());
        if !clear.is_empty() {
            t.advance(b"\x1b[?47l\x1b[1;80H\x1b[K\x1b[?47h");
        }
        assert_rebuilt(&t);
        t.advance(b"\x1b[?1049lY");
        assert_eq!(lines(&t)[1], "Y");
    }
}

/// DECSC does not save DECAWM: xterm's `DECSC_FLAGS` are ATTRIBUTES, ORIGIN and PROTECTED
/// (charproc.c), and `CursorRestore` restores only those. `printf
/// '\0337\033[?7l\0338\033[1;79HABC\033[?7h'`: C overwrites B (`AC` at columns 79-80).
#[test]
fn decrc_leaves_autowrap_as_it_is() {
    let mut t = term(b"\x1b7\x1b[?7l\x1b8\x1b[1;79HABC");
    assert!(!t.vt.autowrap);
    assert_eq!(
        lines(&t)[..2],
        [format!("{}AC", " ".repeat(78)), String::new()]
    );
    assert_rebuilt(&t);
    t.advance(b"\x1b[?7h\x1b[?7l\x1b7\x1b[?7h\x1b8");
    assert!(t.vt.autowrap, "nor does DECRC turn it off");
}

/// REP repeats the character printed last only while nothing but combining marks came after
/// it: `doparsing` sets `lastchar` for each printed character, its combining path goes on to
/// the next character before the line that would change it, and back in the ground state
/// after anything else (a control, a finished sequence, REP itself) it sets `lastchar` to -1,
/// for which `CASE_REP` (`CharWidth(lastchar) > 0`) does nothing. `CASE_REP` passes the
/// character as written to `dotext` with GL's set. `printf 'q\033(0\033[2b\033(Bq\033[b'`:
/// `qqq`; `printf 'e\xcc\x81\033[2b'`: `éee`; `printf '\033*0\033Nq\033[b'`: `─q`.
#[test]
fn rep_repeats_only_right_after_a_printed_character() {
    let t = term(b"q\x1b(0\x1b[2b\x1b(Bq\x1b[b");
    assert_eq!(
        lines(&t)[0],
        "qqq",
        "nothing after ESC ( 0, the second q once"
    );
    let t = term("e\u{301}\x1b[2b".as_bytes());
    assert_eq!(lines(&t)[0], "e\u{301}ee");
    let t = term(b"\x1b*0\x1bNq\x1b[b");
    assert_eq!(
        lines(&t)[0],
        "\u{2500}q",
        "through GL, not the single shift's set"
    );
    for between in ["\r\n", "\x1b[1m", "\x07", "\x1b]0;t\x07", "\x1b[b"] {
        let t = term(format!("ab{between}\x1b[3b").as_bytes());
        assert_eq!(
            lines(&t).concat(),
            if between == "\x1b[b" { "abb" } else { "ab" },
            "{between:?}"
        );
    }
}

/// DECRC in origin mode keeps the row within the bottom margin: xterm's `CursorRestore` moves
/// with `CursorSet(row - top_marg, ...)`, which in origin mode clamps to `bot_marg`.
/// `printf '\033[?6h\033[4;1H\0337\033[1;3r\0338X'`: X on row 3.
#[test]
fn decrc_in_origin_mode_stays_within_the_region() {
    let t = term(b"\x1b[?6h\x1b[4;1H\x1b7\x1b[1;3r\x1b8X");
    assert_eq!(lines(&t)[2], "X");
}

/// Resetting DECAWM keeps a pending wrap: xterm's `srm_DECAWM` (charproc.c) only changes the
/// WRAPAROUND flag, never `do_wrap`, and a character that finds `do_wrap` set wraps only under
/// WRAPAROUND. `printf '\033[1;80HA\033[?7l\033[?7hB'`: B starts row 2;
/// `printf '\033[1;80HA\033[?7lB'`: B overwrites A.
#[test]
fn resetting_autowrap_keeps_the_pending_wrap() {
    let t = term(b"\x1b[1;80HA\x1b[?7l");
    assert!(t.vt.cur.pending, "still pending with DECAWM reset");
    assert_rebuilt(&t);
    let t = term(b"\x1b[1;80HA\x1b[?7l\x1b[?7hB");
    assert_eq!(
        lines(&t)[..2],
        [format!("{}A", " ".repeat(79)), "B".to_owned()]
    );
    let t = term(b"\x1b[1;80HA\x1b[?7lB");
    assert_eq!(
        lines(&t)[..2],
        [format!("{}B", " ".repeat(79)), String::new()]
    );
    assert_eq!((t.vt.cur.x, t.vt.cur.y, t.vt.cur.pending), (79, 0, true));
}

/// Writing the last column with DECAWM reset still makes the wrap pending: xterm's `dotext`
/// sets `do_wrap` whenever a write reaches the right margin (`cur_col < next_col`), WRAPAROUND
/// or not; only taking it depends on WRAPAROUND. So a wrap made while DECAWM was reset is taken
/// once DECAWM is set again: `printf '\033[?7l\033[1;79HAB\033[?7hC'` puts C on row 2.
#[test]
fn a_write_without_autowrap_leaves_the_wrap_pending() {
    let t = term(b"\x1b[?7l\x1b[1;79HAB");
    assert_eq!((t.vt.cur.x, t.vt.cur.y, t.vt.cur.pending), (79, 0, true));
    assert_rebuilt(&t);
    let t = term(b"\x1b[?7l\x1b[1;79HAB\x1b[?7hC");
    assert_eq!(
        lines(&t)[..2],
        [format!("{}AB", " ".repeat(78)), "C".to_owned()]
    );
    // A run longer than the row, as one write.
    let t = term(b"\x1b[?7l\x1b[1;75Hvwxyz12\x1b[?7h3");
    assert_eq!(
        lines(&t)[..2],
        [format!("{}vwxyz2", " ".repeat(74)), "3".to_owned()]
    );
}

/// ctlseqs: "CSI Pm e Line Position Relative [rows] (VPR)"; xterm's `CASE_VPR` is
/// `CursorSet(CursorRow + n)`, bounded like VPA by the screen (the region only in origin
/// mode), not by the bottom margin as CUD is. `printf
/// '\033[2J\033[5;10r\033[6;1H\033[10eV\033[r'`: V on row 16.
#[test]
fn vpr_is_not_stopped_by_the_bottom_margin() {
    let mut t = term(b"\x1b[2J\x1b[5;10r\x1b[6;1H\x1b[10eV\x1b[r");
    assert_eq!(lines(&t)[15], "V");
    t.advance(b"\x1b[20;3H\x1b[99eW");
    assert_eq!(
        (lines(&t)[23].as_str(), cursor(&t)),
        ("  W", (3, 23, false))
    );
    // In origin mode it stays within the region, as CUP does.
    t.advance(b"\x1b[5;10r\x1b[?6h\x1b[2;1H\x1b[99eO\x1b[?6l\x1b[r");
    assert_eq!(lines(&t)[9], "O");
}

/// ctlseqs: "ESC # 8 DEC Screen Alignment Test (DECALN)"; xterm's `CASE_DECALN` resets the
/// margins, homes the cursor and fills the screen with E in no attributes. `printf
/// '\033[3;5r\033[31m\033[5;5Hx\033#8'`: a screen of E, cursor home.
#[test]
fn decaln_fills_the_screen_with_e() {
    let mut t = Terminal::new(6, 3, 0);
    t.advance(b"abcdefgh\xe4\xb8\xad\x1b[2;3r\x1b[31m\x1b[3;2Hx\x1b#8");
    assert_eq!(lines(&t), ["EEEEEE"; 3]);
    assert_eq!(cursor(&t), (0, 0, false));
    assert_eq!((t.vt.top, t.vt.bottom), (0, 2));
    assert_eq!(pen_at(&t, 1, 2), Pen::default(), "not in the pen");
    assert!(t.vt.screen.iter().all(|r| !r.wrapped));
    assert_rebuilt(&t);
}

/// A pending wrap restored onto a last column emptied since it was saved (xterm
/// `CursorRestore` sets `do_wrap` whatever the cell holds) is rebuilt by the bootstrap.
#[test]
fn a_restored_pending_wrap_over_an_empty_cell_is_rebuilt() {
    let mut t = Terminal::new(4, 3, 0);
    t.advance(b"\x1b[3;1Habcd\x1b7\r\n\x1b[31m\x1b8");
    assert_eq!(
        (lines(&t), cursor(&t)),
        (
            vec![String::new(), "abcd".into(), String::new()],
            (3, 2, true)
        )
    );
    assert_rebuilt(&t);
    t.advance(b"X");
    assert_eq!(lines(&t), ["abcd", "", "X"]);
}

/// ctlseqs "Controls beginning with ESC": `ESC ( C` Designate G0 Character Set, with `C = 0`
/// DEC Special Character and Line Drawing Set and `C = B` United States (USASCII); the
/// characters are those of xterm's `dec2ucs` (fontutils.c). `printf '\033(0lqqk\033(B\n'`:
/// `┌──┐`.
#[test]
fn dec_special_graphics_in_g0() {
    let t = term(b"\x1b(0lqqk\x1b(B\n");
    assert_eq!(lines(&t)[0], "\u{250c}\u{2500}\u{2500}\u{2510}");
    let t = term(b"\x1b(0x`afgjklmnopqrstuvwxyz{|}~_ABC\x1b(Bx");
    assert_eq!(lines(&t)[0], "│◆▒°±┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£· ABCx");
    assert_eq!(cursor(&t), (31, 0, false));
}

/// ctlseqs: `ESC ) C` Designate G1 Character Set; SO "Switch to Alternate Character Set:
/// invokes the G1 character set", SI "invokes the G0 character set". `printf
/// '\033)0\016lqqk\017q\n'`: `┌──┐q`.
#[test]
fn g1_invoked_into_gl_with_so_and_si() {
    let mut t = term(b"\x1b)0\x0elqqk\x0fq\r\n");
    assert_eq!(lines(&t)[0], "┌──┐q");
    // Only printable GL bytes are mapped: UTF-8 text stays as it is.
    t.advance("\x0eé中x\x0f\r".as_bytes());
    assert_eq!(lines(&t)[1], "é中│");
    // Designating a set not modelled leaves the register as it was.
    t.advance(b"\n\x1b)<\x0eq\x0f");
    assert_eq!(lines(&t)[2], "─");
}

/// ctlseqs: `ESC ( A` United Kingdom (UK): `#` is the pound sign (charsets.c
/// `xtermCharSetOut`, `nrc_British`). `printf '\033(A#\033(B#\n'`: `£#`.
#[test]
fn uk_set_shows_a_pound_sign() {
    let t = term(b"\x1b(A#3\x1b(B#\n");
    assert_eq!(lines(&t)[0], "£3#");
}

/// ctlseqs: `ESC N` Single Shift Select of G2 Character Set (SS2), `ESC O` of G3 (SS3):
/// "affects next character only"; `ESC * C` / `ESC + C` designate G2 / G3. `printf
/// '\033*0\033+A\033Nqq\033O#\n'`: `─q£`.
#[test]
fn single_shifts_map_the_next_character_only() {
    let mut t = term(b"\x1b*0\x1b+A\x1bNqq\x1bO#\n");
    assert_eq!(lines(&t)[0], "─q£");
    assert!(!t.vt.charsets.active(), "the fast path is back");
    // A control between the shift and the character does not end it; a character decoded
    // from UTF-8 does (it is shown as it is).
    t.advance("\x1bN\rx\x1bNéx".as_bytes());
    assert_eq!(lines(&t)[1], "│éx");
    // LS2 / LS3 lock G2 / G3 into GL; SI returns to G0.
    t.advance(b"\r\n\x1bnq\x1boq#\x0fq");
    assert_eq!(lines(&t)[2], "─q£q");
}

/// xterm's `CursorSave` saves the character sets (`saveCharsets`, `curgl`) and
/// `CursorRestore` restores them; RIS resets them. `printf '\033(0\0337\033(Bq\0338q\n'`:
/// `─` (the restored G0 draws over the q).
#[test]
fn decsc_saves_the_character_sets_and_the_bootstrap_rebuilds_them() {
    let mut t = term(b"\x1b(0\x1b7\x1b(Bq\x1b8q\r\n");
    assert_eq!(lines(&t)[0], "─");
    // Every register, GL, a saved set of them and a pending single shift.
    t.advance(b"\x1b)A\x1b*0\x1b+0\x0e\x1b7\x0f\x1b(A\x1b)B\x1bO");
    assert_rebuilt(&t);
    let mut fresh = Terminal::new(80, 24, 0);
    fresh.advance(&t.bootstrap());
    for side in [&mut t, &mut fresh] {
        side.advance(b"q#q#\x1b8\x1b[3;1Hq#\x0fq");
    }
    assert_eq!(lines(&t), lines(&fresh));
    assert_eq!(lines(&t)[1..3], ["─£q£", "q£─"]);
    t.advance(b"\x1bc");
    assert!(!t.vt.charsets.active(), "RIS: ASCII again");
    t.advance(b"q#");
    assert_eq!(lines(&t)[0], "q#");
}

/// ctlseqs, "Character Attributes (SGR)": `Ps = 5` Blink, `8` Invisible, `9` Crossed-out,
/// `21` Doubly-underlined; `25` Steady, `28` Visible, `29` Not crossed-out, `24` Not
/// underlined. `printf '\033[5;8;9;21mx\033[25my\033[28mz\033[29mw\033[24mv\n'`. The screen
/// document shows each as a style key that is true when set (`double_underline` only then, with
/// `underline` true: phux's `underline` is any underline); the bootstrap rebuilds them.
#[test]
fn blink_invisible_strikethrough_and_double_underline_in_the_document_and_bootstrap() {
    let t = term(b"\x1b[5;8;9;21mx\x1b[25my\x1b[28mz\x1b[29mw\x1b[24mv\x1b[5;9m");
    let v = t.screen_value(0, None, true);
    let keys = ["blink", "invisible", "strikethrough", "double_underline"];
    let shown: Vec<Vec<&str>> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            keys.iter()
                .copied()
                .filter(|k| c["style"].get(*k) == Some(&true.into()))
                .collect()
        })
        .collect();
    assert_eq!(
        shown,
        [
            keys.to_vec(),
            vec!["invisible", "strikethrough", "double_underline"],
            vec!["strikethrough", "double_underline"],
            vec!["double_underline"],
        ],
        "v has the default style: no cell"
    );
    assert_eq!(
        v["cells"][3]["style"]["underline"], true,
        "double counts as underlined"
    );
    assert_eq!(lines(&t)[0], "xyzwv");
    assert_rebuilt(&t);
    let mut fresh = Terminal::new(80, 24, 0);
    fresh.advance(&t.bootstrap());
    assert_eq!(fresh.screen_value(0, None, true), v);
}

/// RIS forgets the character REP would repeat: xterm's `VTReset` ends in a `longjmp` back to
/// `VTparse`, whose `init_parser` sets `lastchar` to -1, so `CASE_REP` finds nothing to
/// repeat. `printf 'a\033c\033[3bx'`: only x, in the first column.
#[test]
fn rep_after_ris_repeats_nothing() {
    let t = term(b"a\x1bc\x1b[3bx");
    assert_eq!(lines(&t)[0], "x");
    let t = term(b"a\x1bcb\x1b[2b");
    assert_eq!(lines(&t)[0], "bbb");
}

/// 1049 and the pending wrap: xterm's `srm_OPT_ALTBUF_CURSOR` set is `CursorSave`,
/// `ToAlternate`, `ClearScreen` (whose `ResetWrap` cancels it), also when the alternate screen
/// is already shown (`ToAlternate` then does nothing, the save and the clear still happen);
/// reset is `FromAlternate`, `CursorRestore` (which gives back the saved wrap).
/// `printf '\033[1;80HA\033[?1049hB'`: B in column 80 of row 1;
/// `printf '\033[1;80HA\033[?1049h\033[?1049lB'`: B starts row 2 of the main screen.
/// (A bare 47 / 1047 switch keeps the wrap in xterm and not here: see `switch_screen`.)
#[test]
fn entering_1049_cancels_the_pending_wrap_and_leaving_restores_it() {
    let t = term(b"\x1b[1;80HA\x1b[?1049hB");
    assert_eq!(lines(&t)[0], format!("{}B", " ".repeat(79)));
    assert_eq!(cursor(&t), (79, 0, true));
    let mut t = term(b"\x1b[1;80HA\x1b[?1049h");
    assert_eq!(cursor(&t), (79, 0, false), "1049 set cancels it");
    assert_rebuilt(&t);
    t.advance(b"\x1b[?1049l");
    assert_eq!(
        cursor(&t),
        (79, 0, true),
        "1049 reset restores the saved one"
    );
    assert_rebuilt(&t);
    t.advance(b"B");
    assert_eq!(lines(&t)[..2], [format!("{}A", " ".repeat(79)), "B".into()]);
    // 1049 set on the alternate screen saves (its own slot) and clears it again.
    let mut t = term(b"\x1b[?1049hxy\x1b[44m\x1b[?1049h");
    assert_eq!(lines(&t)[0], "");
    assert_eq!(pen_at(&t, 0, 0).bg, crate::grid::Color::Idx(4).pack());
    assert_rebuilt(&t);
    t.advance(b"\x1b[5;5H\x1b8z");
    assert_eq!(
        lines(&t)[0],
        "  z",
        "DECRC finds the cursor saved on the alternate screen"
    );
}

/// Overwriting one half of a wide character blanks the other: xterm's `WriteText` finds it
/// with `DamagedCurCells` and clears it with `ClearInLine` (`ClearCells`: a space in the pen's
/// colours, no attributes), except for a write starting at the last column, where
/// `DamagedCells` finds nothing (`nn` is 0) and `ScrnWriteText` turns the first half into a
/// space keeping its own attributes and colours. `printf '\033[4;41m中\033[m\033[44m\033[1;1Hx'`:
/// column 2 a blue blank, not underlined; `printf '\033[1;79H\033[4;41m中\033[m\033[1;80Hx'`:
/// column 79 a red, underlined blank.
#[test]
fn the_half_a_write_leaves_of_a_wide_character_is_a_blank_in_the_pen() {
    let blue = crate::grid::Color::Idx(4).pack();
    let red_underlined = Pen {
        fg: UNDERLINE,
        bg: crate::grid::Color::Idx(1).pack(),
    };
    for at in ["1", "2"] {
        let t = term(format!("\x1b[4;41m中\x1b[m\x1b[44m\x1b[1;{at}Hx").as_bytes());
        let other = u16::from(at == "1");
        assert_eq!(
            pen_at(&t, other, 0),
            Pen { fg: 0, bg: blue },
            "writing at column {at}"
        );
        assert_eq!(lines(&t)[0].trim(), "x");
        assert_rebuilt(&t);
    }
    let t = term("\x1b[1;79H\x1b[4;41m中\x1b[m\x1b[44m\x1b[1;80Hx".as_bytes());
    assert_eq!(
        pen_at(&t, 78, 0),
        red_underlined,
        "at the last column: its own style"
    );
    assert_eq!(lines(&t)[0], format!("{}x", " ".repeat(79)));
    assert_rebuilt(&t);
    // A wide character over the first half of another: both neighbours blank, in the pen.
    let t = term("中文\x1b[44m\x1b[1;2H字".as_bytes());
    assert_eq!(lines(&t)[0], " 字");
    assert_eq!([pen_at(&t, 0, 0).bg, pen_at(&t, 3, 0).bg], [blue, blue]);
    assert_rebuilt(&t);
    // DCH and ECH cutting one clear the other half in the pen too (`DeleteChar`,
    // `ClearRight`).
    let t = term("ab中cd\x1b[44m\x1b[1;4H\x1b[P".as_bytes());
    assert_eq!(lines(&t)[0], "ab cd");
    assert_eq!(pen_at(&t, 2, 0).bg, blue);
    let t = term("ab中cd\x1b[44m\x1b[1;4H\x1b[X".as_bytes());
    assert_eq!(lines(&t)[0], "ab  cd");
    assert_eq!([pen_at(&t, 2, 0).bg, pen_at(&t, 3, 0).bg], [blue, blue]);
}

/// IRM and ICH inside a wide character, or cutting one at the right margin: xterm's
/// `InsertChar` clears it first (`DamagedCurCells`, `ClearInLine`: blanks in the pen's
/// colours), then shifts. `printf '中文\033[1;2H\033[4hx\033[4l'`: ` x 文` (the 中 is gone);
/// on a 6-column screen `printf 'abcd中\r\033[42m\033[4hX'`: `Xabcd` and a green last column.
#[test]
fn insertion_inside_a_wide_character_clears_it() {
    let t = term("中文\x1b[1;2H\x1b[4hx\x1b[4l".as_bytes());
    assert_eq!(lines(&t)[0], " x 文");
    assert_rebuilt(&t);
    let t = term("中文\x1b[1;2H\x1b[@".as_bytes());
    assert_eq!(lines(&t)[0], "   文");
    let mut t = Terminal::new(6, 2, 0);
    t.advance("abcd中\r\x1b[42m\x1b[4hX".as_bytes());
    assert_eq!(lines(&t)[0], "Xabcd");
    assert_eq!(pen_at(&t, 5, 0).bg, crate::grid::Color::Idx(2).pack());
    assert_rebuilt(&t);
}

/// A wide character with one column left: xterm's `dotext` fits nothing there; with DECAWM
/// it wraps first (`force_wrap`, then `WrapLine`), leaving the last column as it was; without
/// DECAWM the character is dropped and no wrap is pending. `printf '\033[1;80Hx\033[1;80H中'`:
/// x stays, 中 starts row 2; `printf '\033[?7l\033[1;80H中Z\033[?7hW'`: Z in column 80 (its
/// write makes a wrap pending), W starts row 2.
#[test]
fn a_wide_character_at_the_last_column() {
    let t = term("\x1b[1;80Hx\x1b[1;80H中".as_bytes());
    assert_eq!(
        lines(&t)[..2],
        [format!("{}x", " ".repeat(79)), "中".into()]
    );
    assert_eq!(cursor(&t), (2, 1, false));
    let t = term("\x1b[?7l\x1b[1;80H中".as_bytes());
    assert_eq!((lines(&t)[0].as_str(), cursor(&t)), ("", (79, 0, false)));
    let t = term("\x1b[?7l\x1b[1;80H中Z\x1b[?7hW".as_bytes());
    assert_eq!(lines(&t)[..2], [format!("{}Z", " ".repeat(79)), "W".into()]);
    // REP repeats it, dropped again.
    let t = term("\x1b[?7l\x1b[1;79H中\x1b[2b".as_bytes());
    assert_eq!((lines(&t)[0].trim(), cursor(&t)), ("中", (79, 0, false)));
}

/// Where a combining mark goes: xterm's `doparsing` puts it on `last_written_col` /
/// `last_written_row` while `char_was_written` holds (set by `dotext`, cleared by `ResetWrap`,
/// which every cursor motion and edit calls and a tab does not), else on the cell under the
/// cursor (`cur_col`). `printf 'abc\033[2D\xcc\x81'`: on b; `printf 'ab\t\xcc\x81'`: on b;
/// `printf 'ab\r\xcc\x81'`: on a; `printf '\033[1;79HAB\xcc\x81'`: on B.
#[test]
fn a_combining_mark_joins_the_last_written_cell_or_the_one_under_the_cursor() {
    let t = term("abc\x1b[2D\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], "ab\u{301}c");
    assert_eq!(cursor(&t), (1, 0, false), "the cursor stays");
    assert_rebuilt(&t);
    let t = term("ab\t\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], "ab\u{301}");
    assert_eq!(cursor(&t), (8, 0, false));
    let t = term("ab\r\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], "a\u{301}b");
    let t = term("\x1b[1;79HAB\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], format!("{}AB\u{301}", " ".repeat(78)));
    // On the second half of a wide character: its first half.
    let t = term("中\x1b[1;2H\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], "中\u{301}");
    // After DECRC (which calls `CursorSet`): under the cursor, even with the wrap pending.
    let t = term("\x1b[1;79HAB\x1b7\x1b[3;1HQ\x1b8\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], format!("{}AB\u{301}", " ".repeat(78)));
    // On a cell an erase left (a space in xterm's `ClearCells`): a blank with the mark.
    let t = term("xyz\x1b[D\x1b[K\u{301}".as_bytes());
    assert_eq!(lines(&t)[0], "xy \u{301}");
    assert_rebuilt(&t);
    // On a cell never written: the same, a deliberate deviation (xterm writes the mark as a
    // character of its own there and moves on; see `differential`). After `CSI 2 J`, as at
    // the start of every bootstrap, xterm's cells hold spaces (`ClearBufRows` → `ClearCells`)
    // and it attaches the mark as we do.
    for clear in ["", "\x1b[2J"] {
        let t = term(format!("{clear}\x1b[1;5H\u{301}").as_bytes());
        assert_eq!(lines(&t)[0], "     \u{301}", "after {clear:?}");
        assert_eq!(cursor(&t), (4, 0, false), "after {clear:?}");
        assert_rebuilt(&t);
    }
}

/// The bootstrap gives back a pending wrap over an emptied last column with DECRC, which
/// also restores the saved character sets: the live ones are set from those.
#[test]
fn a_restored_pending_wrap_with_other_character_sets_is_rebuilt() {
    let t = term(b"\x1b[?1047h\x1b[1;80Hx\x1b(0\x1b7\x1b(B\x1b[2J\x1b8\x1b(B");
    assert!(!t.vt.charsets.active());
    assert_rebuilt(&t);
}

/// IL and DL move the cursor to the left margin (the first column) first: xterm's `CASE_IL` /
/// `CASE_DL` (charproc.c) call `set_cur_col(screen, ScrnLeftMargin(xw))` before `InsertLine` /
/// `DeleteLine`, whatever the row; those return at once when the row is outside the scroll
/// region, and reset the wrap (`ResetWrap`) only inside it. ECMA-48 IL / DL also move the active
/// position to the line home position. `printf 'abcdef\033[1;4H\033[LZ\n'`: `Z` above `abcdef`;
/// `printf 'abcdef\r\nghi\033[1;4H\033[MZ\n'`: `Zhi`.
#[test]
fn il_and_dl_home_the_column() {
    let t = term(b"abcdef\x1b[1;4H\x1b[LZ");
    assert_eq!(lines(&t)[..2], ["Z", "abcdef"]);
    assert_eq!(cursor(&t), (1, 0, false));
    assert_rebuilt(&t);
    let t = term(b"abcdef\r\nghi\x1b[1;4H\x1b[MZ");
    assert_eq!(lines(&t)[..2], ["Zhi", ""]);
    assert_rebuilt(&t);
    // Outside the scroll region nothing moves but the cursor: `printf
    // '\033[2;3r\033[1;5Hab\033[LZ\033[MY\033[r\n'`: `Y   ab` on the first row.
    let t = term(b"\x1b[2;3r\x1b[1;5Hab\x1b[LZ\x1b[MY");
    assert_eq!(lines(&t)[..2], ["Y   ab", ""]);
    assert_eq!(cursor(&t), (1, 0, false));
    // A pending wrap is cancelled: `printf '\033[1;80HA\033[LB\n'`: B on the first row, A
    // pushed down to the second, still in the last column.
    let t = term(b"\x1b[1;80HA\x1b[LB");
    assert_eq!(lines(&t)[0], "B");
    assert_eq!(lines(&t)[1], format!("{}A", " ".repeat(79)));
    assert_rebuilt(&t);
    // Outside the region the edit does not reset the wrap: xterm keeps `char_was_written`, so
    // a combining mark still joins the character written last (`printf
    // '\033[2;3r\033[1;5Hab\033[L\xcc\x81\033[r\n'`: `ab́`). (xterm also keeps `do_wrap`, a
    // wrap pending over the first column; we drop it, see `Vt::home_for_line_edit`.)
    let t = term(b"\x1b[2;3r\x1b[1;5Hab\x1b[L\xcc\x81");
    assert_eq!(lines(&t)[0], "    ab\u{301}");
    assert_eq!(cursor(&t), (0, 0, false));
}

/// RIS discards the scrollback with the screen: xterm's `CASE_RIS` is `VTReset(xw, True,
/// True)`, and `ReallyReset` sets `savedlines = 0` when its `saved` flag is set (ctlseqs: "ESC
/// c Full Reset (RIS)"). `printf 'a\nb\nc\nd\033c'` on a 4x2 xterm: nothing to scroll back to.
#[test]
fn ris_discards_the_scrollback() {
    let mut t = Terminal::new(4, 2, 100);
    t.advance(b"a\r\nb\r\nc\r\nd");
    assert_eq!(t.scrollback_len(), 2);
    t.advance(b"\x1bcx");
    assert_eq!(t.scrollback_len(), 0);
    assert_eq!(
        t.screen_value(0, Some(0), false)["scrollback"],
        serde_json::json!([])
    );
    assert_eq!(lines(&t), ["x", ""]);
    // The history keeps its capacity: new rows go there again.
    t.advance(b"\r\ny\r\nz");
    assert_eq!(t.scrollback_len(), 1);
    assert_rebuilt(&t);
}

/// SGR 6 (rapidly blinking, ECMA-48) blinks as SGR 5 does: xterm's SGR switch lets `case 5`
/// fall through to `case 6`, which sets BLINK; 25 ends both. `printf '\033[6mab\033[25mc\n'`:
/// a and b blink, c does not.
#[test]
fn sgr_6_blinks() {
    let t = term(b"\x1b[6mab\x1b[25mc");
    let v = t.screen_value(0, None, true);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "c has the default style: {cells:?}");
    assert!(cells.iter().all(|c| c["style"]["blink"] == true));
    assert_rebuilt(&t);
}

/// Which erases end a row's soft wrap: xterm's `ClearRight` (EL 0, ECH, the cursor row of ED 0)
/// ends with `LineClrWrapped` ("with the right part cleared, we can't be wrapping") whatever it
/// erased, and `ClearBufRows` (the whole rows of ED) clears the mark of each row; `ClearLeft`
/// (EL 1, the cursor row of ED 1) and `ClearLine` (EL 2) leave it. On a 4-column xterm,
/// `printf 'abcdef\033[1;1H\033[X'` unwraps the first row, `printf 'abcdef\033[1;1H\033[2K'`
/// does not.
#[test]
fn which_erases_end_a_soft_wrap() {
    let wrapped = |bytes: &[u8]| first_row_wraps_after(&[b"\x1b[1;1H", bytes].concat());
    assert!(wrapped(b""));
    assert!(!wrapped(b"\x1b[X"), "ECH");
    assert!(!wrapped(b"\x1b[K"), "EL 0");
    assert!(wrapped(b"\x1b[1;4H\x1b[1K"), "EL 1");
    assert!(wrapped(b"\x1b[2K"), "EL 2");
    assert!(!wrapped(b"\x1b[J"), "ED 0");
    assert!(wrapped(b"\x1b[1;4H\x1b[1J"), "ED 1 on the row");
    assert!(!wrapped(b"\x1b[2;1H\x1b[1J"), "ED 1 below the row");
    assert!(!wrapped(b"\x1b[2J"), "ED 2");
}

/// A wide character that does not fit the last column wraps, and marks the row it leaves as
/// soft-wrapped though that column holds nothing: xterm's `dotext` wraps it with `WrapLine`,
/// which sets `LINEWRAPPED` on the row. `printf ' \xe4\xb8\xad'` on a 2-column xterm: a space,
/// then the wide character on the next row, one line for selection.
#[test]
fn a_wide_character_that_does_not_fit_wraps_its_row() {
    let mut t = Terminal::new(2, 2, 0);
    t.advance(" \u{4e2d}".as_bytes());
    assert_eq!(lines(&t), ["", "\u{4e2d}"]);
    assert!(t.vt.screen.row(0).wrapped);
    assert_eq!(
        t.screen_value(0, None, false)["soft_wrap"]["lines"],
        serde_json::json!([0])
    );
    assert_rebuilt(&t);
    // The mark stays when the row's text changes later, as in xterm.
    t.advance(b"\x1b[1;1Hx");
    assert!(t.vt.screen.row(0).wrapped);
    assert_rebuilt(&t);
}

/// ICH, and a write in insert mode, leave the row's soft wrap: xterm's `InsertChar` and
/// `ScrnInsertChar` shift the cells and never clear `LINEWRAPPED` (`ScrnDeleteChar` does, so
/// DCH ends it). `printf 'abcdef\033[1;2H\033[@'` on a 4-column xterm: the first row still runs
/// on into the second for selection; `printf 'abcdef\033[1;2H\033[P'` ends it.
#[test]
fn inserting_keeps_a_soft_wrap_deleting_ends_it() {
    let wrapped = |bytes: &[u8]| first_row_wraps_after(&[b"\x1b[1;2H", bytes].concat());
    assert!(wrapped(b"\x1b[@"), "ICH");
    assert!(wrapped(b"\x1b[4hxy"), "IRM");
    assert!(!wrapped(b"\x1b[P"), "DCH");
}

/// Whether the first row of a 4x3 terminal still soft-wraps once `abcdef` (which wraps it) and
/// then `bytes` are written; the bootstrap rebuilds the screen either way.
fn first_row_wraps_after(bytes: &[u8]) -> bool {
    let mut t = Terminal::new(4, 3, 0);
    t.advance(b"abcdef");
    t.advance(bytes);
    assert_rebuilt(&t);
    t.vt.screen.row(0).wrapped
}
