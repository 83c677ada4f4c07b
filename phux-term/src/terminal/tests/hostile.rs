//! Hostile counts and shapes: each operation ends as xterm's would, and its work is bounded by
//! the cells it changes (checked structurally, never by timing).

use super::*;

/// The history as (text, soft-wrapped) rows, oldest first.
fn history(t: &Terminal) -> Vec<(String, bool)> {
    t.vt.history
        .newest(usize::MAX)
        .map(|(s, w)| (s.to_owned(), w))
        .collect()
}

/// A terminal fed `setup`, then `ch` and `CSI n b`; and one fed `setup` and `n + 1` copies of
/// `ch` written out.
fn rep_and_literal(
    cols: u16,
    rows: u16,
    keep: usize,
    setup: &str,
    ch: &str,
    n: u16,
) -> [Terminal; 2] {
    let mut rep = Terminal::new(cols, rows, keep);
    rep.advance(setup.as_bytes());
    rep.advance(format!("{ch}\x1b[{n}b").as_bytes());
    let mut lit = Terminal::new(cols, rows, keep);
    lit.advance(setup.as_bytes());
    lit.advance(ch.repeat(usize::from(n) + 1).as_bytes());
    [rep, lit]
}

const SETUPS: [&str; 11] = [
    "",
    "xy\r\nzw",
    "\x1b[2;3r\x1b[3;2H",
    "\x1b[2;3r\x1b[5;1H",
    "\x1b[?1049h\x1b[31mq",
    "\x1b[?7l",
    "\x1b[4h\x1b[1;2H",
    "\u{3042}\u{3042}\x1b[4h\x1b[1;2H",
    "ab\u{3042}cd\x1b[4h\x1b[1;1H\x1b[?7l",
    "\x1b[44m\x1b[2;3r\x1b[1;1H",
    "a\u{301}\x1b[1;1H",
];

#[test]
fn rep_ends_as_the_characters_written_out_would() {
    for (cols, rows) in [(1, 1), (2, 3), (3, 2), (5, 4), (7, 5)] {
        for keep in [0, 3, 100] {
            for setup in SETUPS {
                for ch in ["a", "\u{3042}", "\u{e9}"] {
                    if cols < 2 && ch == "\u{3042}" {
                        // Never drawn, so not the last character: REP repeats an older one.
                        continue;
                    }
                    for n in [1, 2, 7, 30, 61, 200, 1999, 4099] {
                        let [rep, lit] = rep_and_literal(cols, rows, keep, setup, ch, n);
                        let case = format!("{cols}x{rows} keep {keep} {setup:?} {ch} x{n}");
                        assert_eq!(drawing(&rep), drawing(&lit), "{case}");
                        assert_eq!(history(&rep), history(&lit), "{case}");
                        assert_eq!(rep.vt.history.pushed(), lit.vt.history.pushed(), "{case}");
                    }
                }
            }
        }
    }
}

#[test]
fn rep_writes_at_most_a_few_screens_of_cells() {
    // Every setup reaches the steady state, so what REP writes is bounded by the screen, not
    // by the count: 65,535 characters on a 10x4 screen write at most two screens' worth plus
    // three rows (the warm-up, the checked row, the remainder).
    for setup in SETUPS {
        for ch in ["a", "\u{3042}"] {
            let mut t = Terminal::new(10, 4, 50);
            t.advance(setup.as_bytes());
            t.advance(format!("{ch}\x1b[65535b").as_bytes());
            let written = 65_535 - t.vt.rep_skipped;
            assert!(written <= 2 * 10 * 4 + 3 * 10, "{setup:?} {ch}: {written}");
        }
    }
}

#[test]
fn rep_of_a_huge_count_fills_screen_and_history() {
    let mut t = Terminal::new(4, 2, 3);
    t.advance(b"a\x1b[65535b");
    // 65,536 characters: 16,384 full rows; the cursor waits at the end of the last.
    assert_eq!(lines(&t), ["aaaa", "aaaa"]);
    assert_eq!(cursor(&t), (3, 1, true));
    assert_eq!(history(&t), vec![("aaaa".to_owned(), true); 3]);
    assert_eq!(t.vt.history.pushed(), 16_384 - 2);
}

#[test]
fn marks_on_a_wide_row_follow_their_cells() {
    let mut t = Terminal::new(1024, 2, 0);
    let mut line = String::new();
    for i in 0..1024u16 {
        line.push(char::from(b'a' + (i % 26) as u8));
        line.push('\u{301}');
        if i % 2 == 0 {
            line.push('\u{302}');
        }
    }
    t.advance(line.as_bytes());
    let row = t.vt.screen.row(0);
    assert_eq!(row.marks().count(), 1024 + 512);
    assert_eq!(row.marks_at(1000), "\u{301}\u{302}");
    assert_eq!(row.marks_at(1023), "\u{301}");
    // Each cell takes marks up to vt100's byte bound (18), however many follow: a 1-byte
    // base and nine 2-byte marks.
    t.advance("\u{303}".repeat(100).as_bytes());
    let row = t.vt.screen.row(0);
    assert_eq!(row.marks_at(1023).chars().count(), 9);
    // DCH 2 at column 3: columns 5.. move left by two, with their marks.
    t.advance(b"\x1b[1;4H\x1b[2P");
    let row = t.vt.screen.row(0);
    assert_eq!(row.marks_at(3), "\u{301}");
    assert_eq!(row.marks_at(4), "\u{301}\u{302}");
    assert_eq!(row.marks_at(1021).chars().count(), 9);
    assert_eq!(row.marks_at(1022).chars().count(), 0);
    // ICH 3 at column 0: all move right, the last three cells go (two of them blank).
    t.advance(b"\x1b[1;1H\x1b[3@");
    let row = t.vt.screen.row(0);
    assert_eq!(row.marks_at(0).chars().count(), 0);
    assert_eq!(row.marks_at(3), "\u{301}\u{302}");
    assert_eq!(row.marks_at(1023), "\u{301}\u{302}");
    // 1,536 marks, 8 added, 3 deleted with their cells, 9 pushed off the edge.
    assert_eq!(row.marks().count(), 1536 + 8 - 3 - 9);
    // Overwriting a cell drops its marks only.
    t.advance(b"\x1b[1;5Hz");
    let row = t.vt.screen.row(0);
    assert_eq!(row.marks_at(4).chars().count(), 0);
    assert_eq!(row.marks_at(5), "\u{301}\u{302}");
}

/// A 5x4 screen of letters, three rows of history room, `setup` then `seq` applied.
fn letters_then(setup: &str, seq: &str) -> Terminal {
    let mut t = Terminal::new(5, 4, 3);
    t.advance(b"abcde\r\nfghij\r\nklmno\r\npqrst");
    t.advance(setup.as_bytes());
    t.advance(seq.as_bytes());
    t
}

#[test]
fn huge_edit_and_scroll_counts_act_as_the_screen_or_region_size() {
    // (final byte, the count that already reaches every cell or row it can)
    let ops = [
        ('@', 5),
        ('P', 5),
        ('X', 5),
        ('L', 4),
        ('M', 4),
        ('S', 4),
        ('T', 4),
    ];
    let setups = [
        "\x1b[2;3H",
        "\x1b[2;3r\x1b[2;2H",
        "\x1b[2;3r\x1b[4;4H",
        "\x1b[1;5H",
    ];
    for (fin, reach) in ops {
        for setup in setups {
            let huge = letters_then(setup, &format!("\x1b[65535{fin}"));
            let exact = letters_then(setup, &format!("\x1b[{reach}{fin}"));
            let case = format!("{setup:?} {fin}");
            assert_eq!(drawing(&huge), drawing(&exact), "{case}");
            assert_eq!(history(&huge), history(&exact), "{case}");
        }
    }
    // The screens xterm shows for the huge counts, cursor at row 2, column 3.
    let at = |fin: char| lines(&letters_then("\x1b[2;3H", &format!("\x1b[65535{fin}")));
    assert_eq!(at('@'), ["abcde", "fg", "klmno", "pqrst"]);
    assert_eq!(at('P'), ["abcde", "fg", "klmno", "pqrst"]);
    assert_eq!(at('X'), ["abcde", "fg", "klmno", "pqrst"]);
    assert_eq!(at('L'), ["abcde", "", "", ""]);
    assert_eq!(at('M'), ["abcde", "", "", ""]);
    assert_eq!(at('S'), ["", "", "", ""]);
    assert_eq!(at('T'), ["", "", "", ""]);
    // SU of the whole screen sends each row to history once, then blank rows: the history
    // holds its last three.
    let su = letters_then("", "\x1b[65535S");
    assert_eq!(
        history(&su),
        [("fghij", false), ("klmno", false), ("pqrst", false)].map(|(s, w)| (s.to_owned(), w))
    );
}

#[test]
fn insert_mode_without_autowrap_gives_one_screen_however_the_run_is_split() {
    // A run passing the margin without autowrap took a path that skipped IRM's shift when the
    // run arrived in one read, not when split.
    let bytes = b"abcdefg\x1b[1;1H\x1b[4h\x1b[?7lxyzwv";
    let whole = {
        let mut t = Terminal::new(4, 3, 0);
        t.advance(bytes);
        t
    };
    assert_eq!(
        lines(&whole),
        ["xyzv", "efg", ""],
        "xyz pushed the row right, v is last"
    );
    // The row still runs on into the next: [xterm] inserting (`InsertChar`, `ScrnInsertChar`)
    // leaves `LINEWRAPPED` as it is.
    assert!(whole.vt.screen.row(0).wrapped);
    for at in 0..bytes.len() {
        let mut t = Terminal::new(4, 3, 0);
        t.advance(&bytes[..at]);
        t.advance(&bytes[at..]);
        assert_eq!(drawing(&t), drawing(&whole), "split at {at}");
    }
}

#[test]
fn a_wide_row_of_a_pen_per_cell_keeps_every_pen() {
    // Past 32 styles a row's table is searched by an index, rebuilt when a full table is
    // collected: three passes of 1,024 pens fill, collect and look up again.
    let mut t = Terminal::new(1024, 1, 0);
    let pen = |pass: u32, x: u32| (pass * 7 + x) % 1500;
    for pass in 0..3 {
        t.advance(b"\r");
        for x in 0..1024 {
            let n = pen(pass, x);
            t.advance(format!("\x1b[38;2;{};{};1mx", n >> 8, n & 0xff).as_bytes());
        }
    }
    let row = t.vt.screen.row(0);
    for (x, &cell) in row.cells.iter().enumerate() {
        let n = pen(2, x as u32);
        let want = crate::grid::Color::Rgb((n >> 8) as u8, n as u8, 1).pack();
        assert_eq!(
            row.pen(cell).fg & !crate::grid::ATTR_MASK,
            want,
            "column {x}"
        );
    }
}

/// Dropping the history (a server over its memory budget) frees it and leaves the screen as
/// it was; new rows are retained again.
#[test]
fn clearing_the_history_frees_it_and_keeps_the_screen() {
    let mut t = Terminal::new(80, 24, 2000);
    let line: Vec<u8> = (0..79u8).map(|i| b'!' + i % 94).chain(*b"\r\n").collect();
    t.advance(&line.repeat(3000));
    let (screen_before, heap_before) = (t.screen_json(0, None, true), t.heap_bytes());
    assert_eq!(t.scrollback_len(), 2000);
    assert_eq!(t.clear_history(), 2000);
    assert_eq!(t.scrollback_len(), 0);
    assert_eq!(t.screen_json(0, None, true), screen_before);
    assert!(
        t.heap_bytes() + 150_000 < heap_before,
        "{} of {heap_before} bytes left",
        t.heap_bytes()
    );
    t.advance(&line.repeat(10));
    assert_eq!(t.scrollback_len(), 10);
}

/// Both screens of a `cols` x `rows` terminal filled the costliest way: every cell in a style
/// of its own and carrying combining marks to the most a cell takes.
fn filled_to_the_most(cols: u16, rows: u16) -> Terminal {
    use std::fmt::Write as _;

    let mut term = Terminal::new(cols, rows, 0);
    let mut fill = String::new();
    for screen in ["", "\x1b[?1049h"] {
        fill.push_str(screen);
        for y in 1..=rows {
            let _ = write!(fill, "\x1b[{y};1H");
            for x in 0..cols {
                let [red, green, blue, _] =
                    (u32::from(y) * u32::from(cols) + u32::from(x)).to_le_bytes();
                let _ = write!(fill, "\x1b[38;2;{red};{green};{blue}me");
                fill.push_str(&"\u{301}\u{302}\u{303}".repeat(4));
            }
        }
    }
    term.advance(fill.as_bytes());
    term
}

#[test]
fn the_rows_never_hold_more_than_their_bound() {
    // [SERVER.LIMIT.6] A server reserves this bound for a terminal of the size: the costliest
    // contents stay within it, and come near it (the bound is not far above the worst case).
    for (cols, rows) in [(1, 1), (3, 2), (80, 24), (300, 40)] {
        let t = filled_to_the_most(cols, rows);
        let rows_held = t.heap_bytes() - t.heap_bytes_besides_rows();
        let bound = Terminal::rows_heap_bound(cols, rows);
        assert!(rows_held <= bound, "{cols}x{rows}: {rows_held} > {bound}");
        if cols >= 80 {
            assert!(
                rows_held * 10 >= bound * 6,
                "{cols}x{rows}: {rows_held} of {bound}"
            );
        }
    }
    // A resize after the fill keeps within the new size's bound.
    let mut t = filled_to_the_most(200, 30);
    t.resize(90, 50);
    let rows_held = t.heap_bytes() - t.heap_bytes_besides_rows();
    assert!(rows_held <= Terminal::rows_heap_bound(90, 50));
}
