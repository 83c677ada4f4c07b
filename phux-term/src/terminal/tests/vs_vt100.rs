//! Differential tests: our grid against `vt100` on streams shaped like real program output.
//!
//! Both get the same bytes; after every token the visible screens must agree cell by cell
//! (text, colours, attributes, width), row by row (soft wraps) and in the cursor (position,
//! wrap-pending state, visibility, active screen).
//!
//! Where we follow xterm and `vt100` does not, the runner steers around the case (each one is
//! pinned by `xterm_behaviour_where_vt100_differs` in the parent module):
//! - cursor motion, erase, insert and delete cancel the wrap-pending state (xterm resets
//!   `do_wrap`; vt100 keeps its cursor past the edge): such tokens get a CR first when the
//!   cursor is wrap-pending;
//! - CUU / CUD / CNL / CPL outside the scroll region stop at its edge, and RI above it does
//!   not scroll (xterm `CursorUp` / `CursorDown` / `RevIndex`): skipped outside the region;
//! - DECSTBM homes to the first row (vt100: to the region's top): a CUP follows it;
//! - a wide character that does not fit the last column marks the row it wraps out of as
//!   soft-wrapped (xterm `WrapLine` sets `LINEWRAPPED` whatever the last cell holds; vt100 only
//!   when it holds something), and the mark stays when the last cell is written later: a row
//!   vt100 marks must be marked here, not the other way round (the differential against the
//!   phux reference, which marks as xterm does, checks both ways); and ECH ends a row's soft
//!   wrap (xterm `ClearRight` ends with `LineClrWrapped`; vt100 keeps it): ECH is skipped on a
//!   soft-wrapped row;
//! - IL and DL move the cursor to the first column (xterm `CASE_IL` / `CASE_DL`; vt100 keeps
//!   the column): a CR follows them;
//! - the alternate screen shares the cursor, keeps one scroll region for both screens, and a
//!   saved cursor (pen included) per screen; 1049 while already on the alternate screen saves
//!   the cursor and clears it again (xterm; vt100 does nothing): a switch is followed by
//!   `CSI r` and a CUP, DECSC / DECRC only run on the main screen, and a second 1049h is
//!   skipped;
//! - bold and faint are two attributes, both can be on (xterm; vt100 keeps one intensity, the
//!   last set): SGR 1 and 2 are sent as `22;1` and `22;2`;
//! - HT keeps the wrap-pending state (xterm `TabToNextStop` sets the column and leaves
//!   `do_wrap`; vt100 clamps its cursor back onto the last column): a CR first when pending;
//! - erased cells keep only the background colour (xterm `ClearCells` clears the attributes;
//!   vt100 keeps the whole pen), and blanks that ICH, DCH, IL, DL and scrolling bring in get
//!   it too (xterm clears them with `ClearCells`; vt100 leaves them default): the style of an
//!   empty cell is not compared here (the `differential` tests against alacritty do);
//! - a wide character cut in two: the half left is cleared (xterm `WriteText`, `DeleteChar`
//!   and `InsertChar` clear it with `ClearInLine`: the background colour, no attributes), and
//!   ICH inside one clears both halves (vt100 keeps it whole): an empty cell here against a
//!   space in vt100 counts as the same blank, a space in the default foreground here against
//!   one in vt100 is compared in its background only, and ICH is skipped inside a wide
//!   character;
//! - REP repeats only right after a printed character (xterm's `doparsing` sets `lastchar` to
//!   -1 once back in the ground state after anything else; vt100 keeps its last character):
//!   skipped unless the last token printed one (and no CR goes first);
//! - not in vt100 at all, so not generated here: 1047 (vt100 ignores it), DECAWM, IND, NEL,
//!   HTS / TBC / CHT / CBT, LNM, SCOSC / SCORC, origin mode, SGR 58, colon colours with a
//!   colour-space id, emoji presentation selectors, invalid UTF-8 (we show U+FFFD, vt100
//!   drops it), character sets (SCS designations, SO / SI, LS2 / LS3, SS2 / SS3: vt100 ignores
//!   them and shows `lqqk` where xterm draws `┌──┐`), IRM, VPR, DECALN, and SGR 5 / 8 / 9 / 21
//!   and their resets (pinned in `xterm`).

use proptest::prelude::*;

use crate::Terminal;
use crate::grid::{BOLD, Color, DIM, INVERSE, ITALIC, UNDERLINE};

pub(super) fn parser(cols: u16, rows: u16) -> vt100::Parser {
    let n = |v: u16| std::num::NonZeroU16::new(v).unwrap();
    vt100::Parser::new(n(rows), n(cols), 0)
}

fn their_color(c: vt100::Color) -> Color {
    match c {
        vt100::Color::Default => Color::Default,
        vt100::Color::Idx(i) => Color::Idx(i),
        vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

/// The first difference between our visible screen and `theirs`, if any.
pub(super) fn difference(ours: &Terminal, theirs: &vt100::Screen) -> Option<String> {
    let vt = &ours.vt;
    let (cols, rows) = ours.size();
    let (their_rows, their_cols) = theirs.size();
    if (their_cols.get(), their_rows.get()) != (cols, rows) {
        return Some("size".into());
    }
    for (y, row) in vt.screen.iter().enumerate() {
        let yy = y as u16;
        // Ours marks rows vt100 does not (see the module doc): only its marks are checked.
        if theirs.row_wrapped(yy) && !row.wrapped {
            return Some(format!("row {y}: soft wrap ours {}", row.wrapped));
        }
        for (x, &cell) in row.cells.iter().enumerate() {
            let Some(their) = theirs.cell(yy, x as u16) else {
                return Some(format!("cell {y},{x} missing"));
            };
            let mut text = String::new();
            if cell.has_contents() {
                text.push(cell.ch());
                text.push_str(row.marks_at(x as u16));
            }
            let pen = row.pen(cell);
            let ours = (
                text,
                cell.is_wide(),
                cell.is_wide_cont(),
                Color::unpack(pen.fg),
                Color::unpack(pen.bg),
                [BOLD, DIM, ITALIC, UNDERLINE, INVERSE].map(|a| pen.has(a)),
            );
            let theirs = (
                their.contents().to_owned(),
                their.is_wide(),
                their.is_wide_continuation(),
                their_color(their.fgcolor()),
                their_color(their.bgcolor()),
                [
                    their.bold(),
                    their.dim(),
                    their.italic(),
                    their.underline(),
                    their.inverse(),
                ],
            );
            // The half a write leaves of a wide character it cuts: a space in vt100 (in the
            // pen), an erased cell here (xterm `ClearInLine`), both blank (see the module doc).
            let their_blank = !their.has_contents()
                || (their.contents() == " " && !their.is_wide() && !their.is_wide_continuation());
            if !cell.has_contents() && their_blank {
                continue;
            }
            // The first half left on the last column but one: a space in its own style here
            // (xterm `ScrnWriteText`), an empty cell in vt100.
            if cell.ch() == ' ' && !their.has_contents() && !their.is_wide_continuation() {
                continue;
            }
            // The same half left as a space: in the background colour only here, in the
            // whole pen in vt100 (see the module doc).
            if cell.ch() == ' ' && pen.fg == 0 && their.contents() == " " {
                if ours.4 != theirs.4 {
                    return Some(format!("cell {y},{x}: background ours {:?}", ours.4));
                }
                continue;
            }
            if ours != theirs {
                return Some(format!("cell {y},{x}: ours {ours:?}, vt100 {theirs:?}"));
            }
        }
    }
    let (row, col) = theirs.cursor_position();
    let their_cursor = (col.min(cols - 1), row, col >= cols);
    let our_cursor = (vt.cur.x, vt.cur.y, vt.cur.pending);
    if our_cursor != their_cursor {
        return Some(format!(
            "cursor (x, y, pending): ours {our_cursor:?}, vt100 {their_cursor:?}"
        ));
    }
    if vt.cursor_hidden != theirs.hide_cursor() {
        return Some("cursor visibility".into());
    }
    if vt.alt_active != theirs.alternate_screen() {
        return Some("active screen".into());
    }
    None
}

pub(super) fn assert_screen_matches(ours: &Terminal, theirs: &vt100::Screen, what: &str) {
    if let Some(d) = difference(ours, theirs) {
        panic!("{what}: {d}\nours: {:#?}", ours.screen_value(0, None, true));
    }
}

/// How the runner treats a token (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Plain,
    /// Gets a CR first when the cursor is wrap-pending.
    CancelsPending,
    /// Vertical motion: skipped outside the scroll region, CR first when wrap-pending.
    Vertical,
    /// RI: skipped above the scroll region, CR first when wrap-pending.
    ReverseIndex,
    /// DECSC / DECRC: main screen only. (Both save the wrap-pending state: xterm
    /// `CursorSave` keeps `do_wrap`, vt100 its past-the-edge column.)
    SaveRestore,
    /// Enters the alternate screen with 1049: skipped when already there.
    Enter1049,
}

fn csi(params: &str, fin: char) -> Vec<u8> {
    format!("\x1b[{params}{fin}").into_bytes()
}

fn token(cols: u16, rows: u16) -> impl Strategy<Value = (Vec<u8>, Kind)> {
    use Kind::{CancelsPending as C, Plain as P};
    let plain = |s: &'static str| Just((s.as_bytes().to_vec(), P));
    let n = || 0u16..6;
    let row = move || 0..rows + 2;
    let col = move || 0..cols + 2;
    let color = prop_oneof![
        (30u16..38).prop_map(|n| n.to_string()),
        (40u16..48).prop_map(|n| n.to_string()),
        (90u16..98).prop_map(|n| n.to_string()),
        (100u16..108).prop_map(|n| n.to_string()),
        any::<u8>().prop_map(|i| format!("38;5;{i}")),
        any::<u8>().prop_map(|i| format!("48:5:{i}")),
        any::<[u8; 3]>().prop_map(|[r, g, b]| format!("38;2;{r};{g};{b}")),
        any::<[u8; 3]>().prop_map(|[r, g, b]| format!("48:2:{r}:{g}:{b}")),
        prop::sample::select(
            &[
                "0", "22;1", "22;2", "3", "4", "7", "22", "23", "24", "27", "39", "49", ""
            ][..]
        )
        .prop_map(str::to_owned),
    ];
    prop_oneof![
        8 => "[ -~]{1,24}".prop_map(|s| (s.into_bytes(), P)),
        2 => prop::sample::select(&["\u{4e2d}\u{6587}", "\u{1f600}", "\u{e9}t\u{e9}", "e\u{301}", "\u{ff71}", "\u{d55c}\u{ae00}x", "\u{2500}\u{2502}"][..])
            .prop_map(|s| (s.as_bytes().to_vec(), P)),
        3 => plain("\r\n"),
        1 => plain("\r"),
        1 => Just((b"\n".to_vec(), Kind::Vertical)),
        1 => Just((b"\x08".to_vec(), C)),
        1 => Just((b"\t".to_vec(), C)),
        1 => plain("\x07"),
        3 => prop::collection::vec(color, 1..4).prop_map(|c| (csi(&c.join(";"), 'm'), P)),
        3 => (row(), col()).prop_map(|(r, c)| (csi(&format!("{r};{c}"), 'H'), P)),
        1 => col().prop_map(|c| (csi(&c.to_string(), 'G'), P)),
        1 => n().prop_map(|k| (csi(&k.to_string(), 'C'), P)),
        1 => n().prop_map(|k| (csi(&k.to_string(), 'D'), C)),
        1 => (prop::sample::select(&['A', 'B', 'E', 'F'][..]), n())
            .prop_map(|(f, k)| (csi(&k.to_string(), f), Kind::Vertical)),
        1 => row().prop_map(|r| (csi(&r.to_string(), 'd'), C)),
        2 => (prop::sample::select(&['J', 'K'][..]), 0u16..3)
            .prop_map(|(f, k)| (csi(&k.to_string(), f), C)),
        2 => (prop::sample::select(&['@', 'P', 'X', 'L', 'M', 'S', 'T', 'b'][..]), n())
            .prop_map(|(f, k)| {
                let mut s = csi(&k.to_string(), f);
                if matches!(f, 'L' | 'M') {
                    // IL and DL home the column in xterm only (see the module doc).
                    s.push(b'\r');
                }
                (s, C)
            }),
        1 => (1..rows, 1..=rows, row(), col()).prop_map(move |(t, b, r, c)| {
            let (t, b) = if t < b { (t, b) } else { (1, rows) };
            let mut s = csi(&format!("{t};{b}"), 'r');
            s.extend(csi(&format!("{r};{c}"), 'H'));
            (s, P)
        }),
        1 => Just((b"\x1bM".to_vec(), Kind::ReverseIndex)),
        1 => prop::sample::select(&["\x1b7", "\x1b8"][..])
            .prop_map(|s| (s.as_bytes().to_vec(), Kind::SaveRestore)),
        1 => (prop::sample::select(&["?1049h", "?1049l", "?47h", "?47l"][..]), row(), col())
            .prop_map(|(m, r, c)| {
                let mut s = csi(m, ' ');
                s.pop();
                s.extend(csi("", 'r'));
                s.extend(csi(&format!("{r};{c}"), 'H'));
                let kind = if m == "?1049h" { Kind::Enter1049 } else { P };
                (s, kind)
            }),
        1 => prop::sample::select(&["\x1b[?25l", "\x1b[?25h", "\x1bc"][..])
            .prop_map(|s| (s.as_bytes().to_vec(), P)),
    ]
}

fn case() -> impl Strategy<Value = (u16, u16, Vec<(Vec<u8>, Kind)>)> {
    (2u16..14, 2u16..7).prop_flat_map(|(cols, rows)| {
        (
            Just(cols),
            Just(rows),
            prop::collection::vec(token(cols, rows), 1..60),
        )
    })
}

/// Narrow screens and long, colour-heavy streams: cells painted over in place in a new true
/// colour again and again, so rows fill their style tables (2 * cols + 16 entries) and
/// collect them many times.
fn colourful_case() -> impl Strategy<Value = (u16, u16, Vec<(Vec<u8>, Kind)>)> {
    (2u16..5, 2u16..4).prop_flat_map(|(cols, rows)| {
        let painted = (1..=rows, 1..=cols, any::<[u8; 3]>(), any::<bool>(), "[a-z]").prop_map(
            |(y, x, [r, g, b], back, text)| {
                let ground = if back { 48 } else { 38 };
                let mut s = csi(&format!("{y};{x}"), 'H');
                s.extend(csi(&format!("{ground};2;{r};{g};{b}"), 'm'));
                s.extend(text.into_bytes());
                (s, Kind::Plain)
            },
        );
        let tokens = prop_oneof![1 => token(cols, rows), 12 => painted];
        (
            Just(cols),
            Just(rows),
            prop::collection::vec(tokens, 50..200),
        )
    })
}

/// Feeds `tokens` to both terminals, steering around the known differences (see the module
/// doc), comparing the screens after each; then the bootstrap on a fresh vt100.
fn run(cols: u16, rows: u16, tokens: Vec<(Vec<u8>, Kind)>) -> Result<(), TestCaseError> {
    let mut ours = Terminal::new(cols, rows, 10);
    let mut theirs = parser(cols, rows);
    let mut fed: Vec<u8> = Vec::new();
    for (bytes, kind) in tokens {
        let vt = &ours.vt;
        let (y, pending) = (vt.cur.y, vt.cur.pending);
        let skip = match kind {
            Kind::Vertical => y < vt.top || y > vt.bottom,
            Kind::ReverseIndex => y < vt.top,
            Kind::SaveRestore => vt.alt_active,
            Kind::Enter1049 => vt.alt_active,
            Kind::Plain | Kind::CancelsPending => false,
        };
        // ECH on a soft-wrapped row (see the module doc).
        let ech = bytes.first() == Some(&0x1b) && bytes.last() == Some(&b'X');
        if ech && vt.screen.row(y).wrapped {
            continue;
        }
        // REP but right after a printed character (see the module doc).
        let rep = bytes.first() == Some(&0x1b) && bytes.last() == Some(&b'b');
        let nothing_to_repeat = vt.last_char.is_none() || pending;
        // ICH inside a wide character (see the module doc).
        let ich = bytes.first() == Some(&0x1b) && bytes.last() == Some(&b'@');
        let in_wide = vt.screen.row(y).cells[usize::from(vt.cur.x)].is_wide_cont();
        if skip || (rep && nothing_to_repeat) || (ich && in_wide && !pending) {
            continue;
        }
        let mut input = Vec::new();
        let cr_first = !matches!(kind, Kind::Plain | Kind::SaveRestore | Kind::Enter1049);
        if pending && cr_first {
            input.push(b'\r');
        }
        input.extend_from_slice(&bytes);
        ours.advance(&input);
        theirs.process(&input);
        fed.extend_from_slice(&input);
        if let Some(d) = difference(&ours, theirs.screen()) {
            prop_assert!(false, "{}\nafter {:?}", d, String::from_utf8_lossy(&fed));
        }
    }
    // And the bootstrap rebuilds the same screen on a fresh vt100.
    let mut fresh = parser(cols, rows);
    fresh.process(&ours.bootstrap());
    if let Some(d) = difference(&ours, fresh.screen()) {
        prop_assert!(
            false,
            "bootstrap: {}\nafter {:?}",
            d,
            String::from_utf8_lossy(&fed)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn our_screen_matches_vt100((cols, rows, tokens) in case()) {
        run(cols, rows, tokens)?;
    }
}

proptest! {
    // Long cases: fewer of them (still some 600 collections a run).
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn our_screen_matches_vt100_through_style_collections(
        (cols, rows, tokens) in colourful_case(),
    ) {
        run(cols, rows, tokens)?;
    }
}
