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
