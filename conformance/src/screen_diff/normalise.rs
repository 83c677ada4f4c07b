//! The two differences normalised in the comparison rather than steered around in the
//! generator (see the decided-differences table in the module docs): what a blank cell's style
//! cannot show, and the reference's erased backgrounds, reported as RGB.

use std::collections::BTreeMap;

use unicode_width::UnicodeWidthChar as _;

use super::screen::{Color, Screen, Style};

/// A blank cell's foreground and the attributes that only change how a character is drawn
/// (bold, faint, italic, blink, invisible) show nowhere: not compared.
pub const BLANK_STYLE: &str = "blank-cell-style";

/// The reference reports a cell that holds only a background colour (what an erase leaves)
/// in RGB, its palette index lost: compared through the reference's palette.
pub const ERASED_BACKGROUND: &str = "erased-background-rgb";

/// Every id above.
pub const ALL: &[&str] = &[BLANK_STYLE, ERASED_BACKGROUND];

/// The reference's 256-colour palette, as it resolves each index (read from it once per
/// campaign: [`super::read_palette`]).
#[derive(Clone, Debug, Default)]
pub struct Palette(pub BTreeMap<u8, (u8, u8, u8)>);

/// Normalises `ours` and `theirs` where the table says so, calling `noted` with the id of
/// each normalisation that made a difference disappear.
pub fn normalise(
    ours: &mut Screen,
    theirs: &mut Screen,
    palette: &Palette,
    noted: &mut dyn FnMut(&'static str),
) {
    let cells: Vec<(u16, u16)> = ours
        .styles
        .keys()
        .chain(theirs.styles.keys())
        .copied()
        .collect();
    let cols = ours.size.0;
    let blanks: Vec<Vec<bool>> = ours.lines.iter().map(|l| blank_columns(l, cols)).collect();
    for at @ (row, col) in cells {
        let blank = blanks
            .get(usize::from(row))
            .and_then(|b| b.get(usize::from(col)))
            .copied()
            .unwrap_or(false);
        if !blank {
            continue;
        }
        let mut a = ours.styles.get(&at).copied().unwrap_or_default();
        let mut b = theirs.styles.get(&at).copied().unwrap_or_default();
        if a == b {
            continue;
        }
        let mut mapped = false;
        if let (Color::Palette { index }, Color::Rgb { r, g, b: blue }) = (a.bg, b.bg)
            && palette.0.get(&index) == Some(&(r, g, blue))
        {
            b.bg = a.bg;
            mapped = true;
        }
        let shown_alike = a == b;
        for style in [&mut a, &mut b] {
            hide_what_a_blank_cannot_show(style);
        }
        if a == b {
            if mapped {
                noted(ERASED_BACKGROUND);
            }
            if !shown_alike {
                noted(BLANK_STYLE);
            }
        }
        for (screen, style) in [(&mut *ours, a), (&mut *theirs, b)] {
            if style == Style::default() {
                screen.styles.remove(&at);
            } else {
                screen.styles.insert(at, style);
            }
        }
    }
}

fn hide_what_a_blank_cannot_show(style: &mut Style) {
    style.fg = Color::Default;
    style.bold = false;
    style.faint = false;
    style.italic = false;
    style.blink = false;
    style.invisible = false;
}

/// Per column of a row of `cols` columns: whether the row's text shows a blank there (a space
/// or nothing); the second column of a wide character is not blank.
fn blank_columns(line: &str, cols: u16) -> Vec<bool> {
    let mut out = Vec::with_capacity(usize::from(cols));
    for ch in line.chars() {
        match ch.width().unwrap_or(0) {
            0 => {}
            1 => out.push(ch == ' '),
            _ => out.extend([false, false]),
        }
    }
    out.resize(usize::from(cols).max(out.len()), true);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_columns_follow_widths_and_marks() {
        assert_eq!(
            blank_columns("a \u{4e2d}e\u{301}", 7),
            [false, true, false, false, false, true, true]
        );
    }

    #[test]
    fn an_erased_background_in_rgb_matches_its_palette_index() {
        let line = |s: &str| vec![s.to_owned()];
        let screen = |styles: BTreeMap<(u16, u16), Style>| Screen {
            size: (3, 1),
            cursor: None,
            lines: line("a"),
            scrollback: Vec::new(),
            wrapped_lines: None,
            styles,
            title: None,
        };
        let with_bg = |bg| Style {
            bg,
            fg: Color::Palette { index: 3 },
            ..Style::default()
        };
        let mut ours = screen([((0, 1), with_bg(Color::Palette { index: 4 }))].into());
        let rgb = Color::Rgb { r: 1, g: 2, b: 3 };
        let mut theirs = screen(
            [(
                (0, 1),
                Style {
                    bg: rgb,
                    ..Style::default()
                },
            )]
            .into(),
        );
        let palette = Palette([(4, (1, 2, 3))].into());
        let mut ids = Vec::new();
        normalise(&mut ours, &mut theirs, &palette, &mut |id| ids.push(id));
        assert_eq!(ours.styles, theirs.styles);
        assert_eq!(ids, [ERASED_BACKGROUND, BLANK_STYLE]);
        // Not on a cell that shows a character.
        let mut ours = screen([((0, 0), with_bg(Color::Palette { index: 4 }))].into());
        let mut theirs = screen(
            [(
                (0, 0),
                Style {
                    bg: rgb,
                    ..Style::default()
                },
            )]
            .into(),
        );
        normalise(&mut ours, &mut theirs, &palette, &mut |_| {});
        assert_ne!(ours.styles, theirs.styles);
    }
}
