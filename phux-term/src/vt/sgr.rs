//! SGR (`CSI ... m`): the pen's colours and attributes.

use super::Vt;
use crate::grid::{
    ATTR_MASK, BG_ATTR_MASK, BLINK, BOLD, Color, DIM, DOUBLE_UNDERLINE, INVERSE, INVISIBLE, ITALIC,
    Pen, STRIKETHROUGH, UNDERLINE,
};

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
                // [xterm] bold and faint are two attributes (ctlseqs: SGR 1 "Bold", 2 "Faint";
                // charproc.c sets BOLD and ATR_FAINT apart): both can be on, 22 clears both.
                // vt100 keeps one intensity, the last set.
                [1] => pen.fg |= BOLD,
                [2] => pen.fg |= DIM,
                [3] => pen.fg |= ITALIC,
                [4] => pen.fg |= UNDERLINE,
                // [xterm] SGR 6 (rapid blink, ECMA-48) falls through to 5's BLINK in charproc.c.
                [5 | 6] => pen.bg |= BLINK,
                [7] => pen.fg |= INVERSE,
                [8] => pen.bg |= INVISIBLE,
                [9] => pen.bg |= STRIKETHROUGH,
                // [xterm] ctlseqs: SGR 21 "Doubly-underlined (ISO 6429)" (ATR_DBL_UNDER), not
                // "bold off"; 24 "Not underlined" clears it as well as 4.
                [21] => pen.bg |= DOUBLE_UNDERLINE,
                [22] => pen.fg &= !(BOLD | DIM),
                [23] => pen.fg &= !ITALIC,
                [24] => {
                    pen.fg &= !UNDERLINE;
                    pen.bg &= !DOUBLE_UNDERLINE;
                }
                [25] => pen.bg &= !BLINK,
                [27] => pen.fg &= !INVERSE,
                [28] => pen.bg &= !INVISIBLE,
                [29] => pen.bg &= !STRIKETHROUGH,
                [n @ 30..=37] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 30) as u8).pack(),
                [n @ 90..=97] => pen.fg = (pen.fg & ATTR_MASK) | Color::Idx((n - 82) as u8).pack(),
                [39] => pen.fg &= ATTR_MASK,
                [n @ 40..=47] => {
                    pen.bg = (pen.bg & BG_ATTR_MASK) | Color::Idx((n - 40) as u8).pack();
                }
                [n @ 100..=107] => {
                    pen.bg = (pen.bg & BG_ATTR_MASK) | Color::Idx((n - 92) as u8).pack();
                }
                [49] => pen.bg &= BG_ATTR_MASK,
                [38, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.fg = (pen.fg & ATTR_MASK) | c.pack(),
                    Ok(None) => {}
                    Err(()) => break,
                },
                [48, ..] => match extended(group, &mut it) {
                    Ok(Some(c)) => pen.bg = (pen.bg & BG_ATTR_MASK) | c.pack(),
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
