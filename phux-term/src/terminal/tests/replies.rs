//! Replies to the program's queries, each pinned to the form xterm's ctlseqs gives.

use crate::{MAX_REPLY_BYTES, Terminal};

/// What an 80x24 terminal answers to `bytes`.
fn answer(bytes: &[u8]) -> String {
    let mut t = Terminal::new(80, 24, 0);
    t.advance(bytes);
    String::from_utf8(t.take_replies()).unwrap()
}

/// ctlseqs "Send Device Attributes (Primary DA)", `CSI Ps c` with `Ps = 0` or omitted:
/// `CSI ? 6 2 ; Ps c`, a VT220 with `2 2` ANSI color. Any other Ps is not a request.
#[test]
fn primary_device_attributes() {
    assert_eq!(answer(b"\x1b[c"), "\x1b[?62;22c");
    assert_eq!(answer(b"\x1b[0c"), "\x1b[?62;22c");
    assert_eq!(answer(b"\x1b[1c"), "");
    // DA3 (`CSI = c`) is not answered.
    assert_eq!(answer(b"\x1b[=c"), "");
}

/// ctlseqs "Send Device Attributes (Secondary DA)", `CSI > Ps c`: `CSI > Pp ; Pv ; Pc c`,
/// `Pp = 1` VT220, `Pv` the firmware version, `Pc = 0`.
#[test]
fn secondary_device_attributes() {
    let v: Vec<u32> = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    let expected = format!("\x1b[>1;{};0c", v[0] * 10_000 + v[1] * 100 + v[2]);
    assert_eq!(answer(b"\x1b[>c"), expected);
    assert_eq!(answer(b"\x1b[>0c"), expected);
}

/// ctlseqs `CSI > Ps q`, `Ps = 0`: "Report xterm name and version (XTVERSION)", answered
/// `DCS > | text ST`.
#[test]
fn xtversion() {
    let expected = format!("\x1bP>|phux-rs {}\x1b\\", env!("CARGO_PKG_VERSION"));
    assert_eq!(answer(b"\x1b[>q"), expected);
    assert_eq!(answer(b"\x1b[>0q"), expected);
    // `CSI > 1 q` is not XTVERSION, and DECSCUSR (`CSI Ps SP q`) answers nothing.
    assert_eq!(answer(b"\x1b[>1q\x1b[2 q"), "");
}

/// ctlseqs "Device Status Report (DSR)": `Ps = 5` "Status Report. Result ("OK") is CSI 0 n";
/// `Ps = 6` "Report Cursor Position (CPR) [row;column]. Result is CSI r ; c R".
#[test]
fn status_and_cursor_position_reports() {
    assert_eq!(answer(b"\x1b[5n"), "\x1b[0n");
    assert_eq!(answer(b"\x1b[6n"), "\x1b[1;1R");
    assert_eq!(answer(b"\x1b[5;17H\x1b[6n"), "\x1b[5;17R");
    // After a character in the last column the cursor is still in it (wrap pending).
    assert_eq!(answer(b"\x1b[3;79HAB\x1b[6n"), "\x1b[3;80R");
    // Unknown reports are not answered.
    assert_eq!(answer(b"\x1b[7n\x1b[?5n"), "");
}

/// xterm's `CASE_CPR`: with origin mode (DECOM) set, the row counts from the top margin.
/// `printf '\033[5;20r\033[?6h\033[3;4H\033[6n'` answers `CSI 3 ; 4 R` (screen row 7).
#[test]
fn cursor_position_report_is_relative_to_the_region_in_origin_mode() {
    assert_eq!(answer(b"\x1b[5;20r\x1b[?6h\x1b[3;4H\x1b[6n"), "\x1b[3;4R");
    assert_eq!(
        answer(b"\x1b[5;20r\x1b[?6h\x1b[3;4H\x1b[?6l\x1b[6n"),
        "\x1b[1;1R"
    );
}

/// ctlseqs DSR, DEC-specific: `CSI ? 6 n` "Report Cursor Position (DECXCPR) [row;column] as
/// CSI ? r ; c ; p R" (p the page, always 1 here; the VT510 manual's DECXCPR).
#[test]
fn extended_cursor_position_report() {
    assert_eq!(answer(b"\x1b[2;3H\x1b[?6n"), "\x1b[?2;3;1R");
}

/// ctlseqs "Request ANSI Mode (DECRQM)" `CSI Ps $ p`, answered `CSI Ps ; Pm $ y` with `Pm` 0
/// not recognized, 1 set, 2 reset.
#[test]
fn ansi_mode_reports() {
    assert_eq!(answer(b"\x1b[4$p"), "\x1b[4;2$y");
    assert_eq!(answer(b"\x1b[4h\x1b[4$p"), "\x1b[4;1$y");
    assert_eq!(answer(b"\x1b[20h\x1b[20$p"), "\x1b[20;1$y");
    assert_eq!(answer(b"\x1b[3$p"), "\x1b[3;0$y");
}

/// ctlseqs "Request DEC private mode (DECRQM)" `CSI ? Ps $ p`, answered `CSI ? Ps ; Pm $ y`.
#[test]
fn dec_private_mode_reports() {
    let cases: [(&[u8], &str); 12] = [
        (b"\x1b[?7$p", "\x1b[?7;1$y"),
        (b"\x1b[?7l\x1b[?7$p", "\x1b[?7;2$y"),
        (b"\x1b[?25l\x1b[?25$p", "\x1b[?25;2$y"),
        (b"\x1b[?6h\x1b[?6$p", "\x1b[?6;1$y"),
        (b"\x1b[?1h\x1b[?1$p", "\x1b[?1;1$y"),
        (b"\x1b=\x1b[?66$p", "\x1b[?66;1$y"),
        (b"\x1b[?1049h\x1b[?1049$p", "\x1b[?1049;1$y"),
        (b"\x1b[?1049$p", "\x1b[?1049;2$y"),
        (b"\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"),
        (
            b"\x1b[?1002h\x1b[?1000$p\x1b[?1002$p",
            "\x1b[?1000;2$y\x1b[?1002;1$y",
        ),
        (b"\x1b[?1006h\x1b[?1006$p", "\x1b[?1006;1$y"),
        (b"\x1b[?9999$p", "\x1b[?9999;0$y"),
    ];
    for (query, expected) in cases {
        assert_eq!(
            answer(query),
            expected,
            "{}",
            String::from_utf8_lossy(query).escape_debug()
        );
    }
}

/// The kitty keyboard protocol: `CSI ? u` is answered `CSI ? flags u` with the flags in force
/// on the active screen.
#[test]
fn kitty_keyboard_flags_query() {
    assert_eq!(answer(b"\x1b[?u"), "\x1b[?0u");
    assert_eq!(answer(b"\x1b[>5u\x1b[?u"), "\x1b[?5u");
    // The alternate screen has its own stack.
    assert_eq!(answer(b"\x1b[>5u\x1b[?1049h\x1b[?u"), "\x1b[?0u");
}

/// No reply, echoed back to the terminal by a program (a raw-mode `cat`), is a query again:
/// an echoing child cannot start an endless exchange.
#[test]
fn an_echoed_reply_is_not_answered() {
    let queries: &[u8] = b"\x1b[c\x1b[>c\x1b[>q\x1b[5n\x1b[6n\x1b[?6n\x1b[4$p\x1b[?7$p\x1b[?u\x1b]10;?\x07\x1b]11;?\x1b\\";
    let replies = answer(queries);
    // Eleven replies, two of them ended by ST.
    assert_eq!(replies.matches('\x1b').count(), 11 + 2, "{replies:?}");
    assert_eq!(answer(replies.as_bytes()), "", "{replies:?}");
}

/// ctlseqs OSC `Ps = 1 0` / `1 1` / `1 2`: "If a "?" is given rather than a name or RGB
/// specification, xterm replies with a control sequence of the same form which can be used to
/// set the corresponding dynamic color", ended as the query was (BEL or ST); further
/// parameters apply to the next colour in turn; OSC 110-112 reset them.
#[test]
fn dynamic_colour_queries() {
    assert_eq!(answer(b"\x1b]11;?\x07"), "\x1b]11;rgb:0000/0000/0000\x07");
    assert_eq!(
        answer(b"\x1b]10;?\x1b\\"),
        "\x1b]10;rgb:e5e5/e5e5/e5e5\x1b\\"
    );
    assert_eq!(
        answer(b"\x1b]11;#ffffff\x07\x1b]10;?;?\x07"),
        "\x1b]10;rgb:e5e5/e5e5/e5e5\x07\x1b]11;rgb:ff00/ff00/ff00\x07"
    );
    assert_eq!(
        answer(b"\x1b]12;rgb:ff/00/80\x07\x1b]12;?\x07\x1b]112\x07\x1b]12;?\x07"),
        "\x1b]12;rgb:ffff/0000/8080\x07\x1b]12;rgb:e5e5/e5e5/e5e5\x07"
    );
    // A query cut short by CAN is not answered; an unknown colour leaves it unchanged.
    assert_eq!(answer(b"\x1b]11;?\x18\x1b]11;red\x07"), "");
}

/// Replies come in the order of the queries, whatever the chunking, and RIS does not take back
/// an answer already given.
#[test]
fn replies_keep_query_order_across_chunks_and_reset() {
    let stream = b"\x1b[5n\x1b[3;4H\x1b[6n\x1b[c\x1bc\x1b[6n";
    let expected = "\x1b[0n\x1b[3;4R\x1b[?62;22c\x1b[1;1R";
    for split in 0..stream.len() {
        let mut t = Terminal::new(80, 24, 0);
        t.advance(&stream[..split]);
        let mut got = t.take_replies();
        t.advance(&stream[split..]);
        got.extend(t.take_replies());
        assert_eq!(
            String::from_utf8(got).unwrap(),
            expected,
            "split at {split}"
        );
    }
}

/// A flood of queries nobody takes the answers of is bounded: whole replies up to
/// `MAX_REPLY_BYTES`, the rest dropped; taking them makes room again.
#[test]
fn unread_replies_are_bounded() {
    let mut t = Terminal::new(80, 24, 0);
    t.advance(&b"\x1b[6n".repeat(100_000));
    let replies = t.take_replies();
    let one = b"\x1b[1;1R";
    assert!(replies.len() <= MAX_REPLY_BYTES);
    assert!(replies.len() > MAX_REPLY_BYTES - one.len());
    assert_eq!(
        replies,
        one.repeat(replies.len() / one.len()),
        "whole replies only"
    );
    assert!(t.heap_bytes() < Terminal::new(80, 24, 0).heap_bytes() + 2 * MAX_REPLY_BYTES);
    assert!(t.take_replies().is_empty());
    t.advance(b"\x1b[5n");
    assert_eq!(t.take_replies(), b"\x1b[0n");
}
