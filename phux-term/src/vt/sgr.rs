//! SGR (`CSI ... m`): the pen's colours and attributes.

use super::Vt;
use crate::grid::{ATTR_MASK, BOLD, Color, DIM, INVERSE, ITALIC, Pen, UNDERLINE};

impl Vt {
    pub(super) fn sgr(&mut self) {
        if self.params.len == 0 {
            self.pen = Pen::default();
            return;
        }
        let mut it = self.params.iter();
        let mut pen = self.pen;
        // An extended colour: `38;5;n`, `38;2;r;g;b` or their colon forms (also with the
        // colour-space id `38:2:cs:r:g:b`). `Err` stops the whole sequence and `Ok(None)`
        // skips an unknown colon form, as in vt100.
        fn extended<'a>(
            group: &[u16],
            it: &mut impl Iterator<Item = &'a [u16]>,
        ) -> Result<Option<Color>, ()> {
            let byte = |v: u16| u8::try_from(v).map_err(|_| ());
            match group {
                [_, 5, i] => Ok(Some(Color::Idx(byte(*i)?))),
                [_, 2, r, g, b] | [_, 2, _, r, g, b] => {
                    Ok(Some(Color::Rgb(byte(*r)?, byte(*g)?, byte(*b)?)))
                }
                [_] => {
                    let mut next = || match it.next() {
                        Some(&[v]) => byte(v),
                        _ => Err(()),
                    };
                    match next()? {
                        5 => Ok(Some(Color::Idx(next()?))),
                        2 => Ok(Some(Color::Rgb(next()?, next()?, next()?))),
                        _ => Err(()),
                    }
                }
                _ => Ok(None),
            }
        }
        while let Some(group) = it.next() {
            match group {
                [0] => pen = Pen::default(),
                // Bold and dim are one intensity setting, as in vt100.
                [1] => pen.fg = (pen.fg & !(BOLD | DIM)) | BOLD,
                [2] => pen.fg = (pen.fg & !(BOLD | DIM)) | DIM,
                [3] => pen.fg |= ITALIC,
                [4] => pen.fg |= UNDERLINE,
                [7] => pen.fg |= INVERSE,
                [22] => pen.fg &= !(BOLD | DIM),
                [23] => pen.fg &= !ITALIC,
                [24] => pen.fg &= !UNDERLINE,
                [27] => pen.fg &= !INVERSE,
                [n @ 30..=37] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 30) as u8).pack(),
                [n @ 90..=97] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 82) as u8).pack(),
                [39] => pen.fg &= ATTR_MASK,
                [n @ 40..=47] => pen.bg = Color::Idx((n - 40) as u8).pack(),
                [n @ 100..=107] => pen.bg = Color::Idx((n - 92) as u8).pack(),
                [49] => pen.bg = 0,
                [38, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.fg = (pen.fg & ATTR_MASK) | c.pack(),
                    Ok(None) => {}
                    Err(()) => break,
                },
                [48, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.bg = c.pack(),
                    Ok(None) => {}
                    Err(()) => break,
                },
                // Underline colour: consumed so its numbers are not read as attributes.
                [58, ..] if extended(group, &mut it).is_err() => break,
                _ => {}
            }
        }
        self.pen = pen;
    }
}
