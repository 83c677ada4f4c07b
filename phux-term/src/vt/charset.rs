//! Character sets: G0-G3 designations (SCS), the set invoked into GL (SI / SO / LS2 / LS3), the
//! single shifts (SS2 / SS3), and what each set shows for a printable GL byte.
//!
//! Output is UTF-8, so GR is not modelled: only printable GL bytes (0x20..=0x7e) are mapped,
//! and a character decoded from UTF-8 is shown as it is.

/// A 94-character set a G register can hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) enum Charset {
    #[default]
    Ascii,
    /// The United Kingdom set: `#` is the pound sign.
    Uk,
    /// The VT100 special graphics (line drawing) set.
    DecSpecial,
}

/// [xterm] fontutils.c `dec2ucs`: the Unicode characters xterm shows for the DEC special
/// graphics bytes 0x60..=0x7e (charsets.c `xtermCharSetOut` maps byte `b` to `dec2ucs(b -
/// 0x5f)`). 0x5f is the VT100's blank: xterm renders it as a space.
const DEC_SPECIAL: [char; 32] = [
    ' ', '\u{25c6}', '\u{2592}', '\u{2409}', '\u{240c}', '\u{240d}', '\u{240a}', '\u{00b0}',
    '\u{00b1}', '\u{2424}', '\u{240b}', '\u{2518}', '\u{2510}', '\u{250c}', '\u{2514}', '\u{253c}',
    '\u{23ba}', '\u{23bb}', '\u{2500}', '\u{23bc}', '\u{23bd}', '\u{251c}', '\u{2524}', '\u{2534}',
    '\u{252c}', '\u{2502}', '\u{2264}', '\u{2265}', '\u{03c0}', '\u{2260}', '\u{00a3}', '\u{00b7}',
];

impl Charset {
    /// The set an SCS final byte designates ([xterm] ctlseqs "Designate G0 Character Set":
    /// `0` DEC Special Character and Line Drawing Set, `A` United Kingdom (UK), `B` United
    /// States (USASCII)); `None` for a set not modelled, which leaves the register as it is.
    pub(crate) fn from_final(b: u8) -> Option<Self> {
        match b {
            b'B' => Some(Self::Ascii),
            b'A' => Some(Self::Uk),
            b'0' => Some(Self::DecSpecial),
            _ => None,
        }
    }

    /// The SCS final byte that designates this set.
    pub(crate) fn final_byte(self) -> u8 {
        match self {
            Self::Ascii => b'B',
            Self::Uk => b'A',
            Self::DecSpecial => b'0',
        }
    }

    /// What the printable GL byte `b` (0x20..=0x7e) shows in this set.
    #[inline]
    pub(crate) fn map(self, b: u8) -> char {
        match (self, b) {
            (Self::Uk, b'#') => '\u{00a3}',
            (Self::DecSpecial, 0x5f..=0x7e) => DEC_SPECIAL[usize::from(b - 0x5f)],
            _ => char::from(b),
        }
    }
}

/// The four G registers, which one is invoked into GL, and a pending single shift.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Charsets {
    pub(crate) g: [Charset; 4],
    /// The register invoked into GL (0-3).
    pub(crate) gl: u8,
    /// SS2 / SS3: the register (2 or 3) for the next printed character only; 0 for none.
    pub(crate) single: u8,
    /// Printing must map: GL holds a set other than ASCII, or a single shift is pending. Kept
    /// current by every change, so the text fast path tests one flag per run.
    active: bool,
}

impl Charsets {
    #[inline]
    pub(crate) fn active(self) -> bool {
        self.active
    }

    /// SCS: designates `set` into register `g`.
    pub(crate) fn designate(&mut self, g: usize, set: Charset) {
        self.g[g] = set;
        self.update();
    }

    /// A locking shift: register `g` into GL.
    pub(crate) fn lock(&mut self, g: u8) {
        self.gl = g;
        self.update();
    }

    /// A single shift: register `g` for the next character.
    pub(crate) fn single_shift(&mut self, g: u8) {
        self.single = g;
        self.update();
    }

    /// The set of the next printed character, ending a single shift.
    #[inline]
    pub(crate) fn next(&mut self) -> Charset {
        if self.single == 0 {
            return self.gl_set();
        }
        let set = self.g[usize::from(self.single)];
        self.single = 0;
        self.update();
        set
    }

    /// The set invoked into GL.
    pub(crate) fn gl_set(self) -> Charset {
        self.g[usize::from(self.gl)]
    }

    /// What DECSC keeps ([xterm] `CursorSave` saves `gsets`, `curgl` and `curgr`; not a
    /// pending single shift).
    pub(crate) fn saved(mut self) -> Self {
        self.single = 0;
        self.update();
        self
    }

    /// DECRC: the saved registers and GL; a pending single shift stays pending.
    pub(crate) fn restore(&mut self, saved: Self) {
        *self = Self {
            single: self.single,
            ..saved
        };
        self.update();
    }

    fn update(&mut self) {
        self.active = self.gl_set() != Charset::Ascii || self.single != 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_mapped_bytes_change() {
        for b in 0x20..=0x7e {
            assert_eq!(Charset::Ascii.map(b), char::from(b));
            let uk = if b == b'#' { '\u{a3}' } else { char::from(b) };
            assert_eq!(Charset::Uk.map(b), uk);
            if b < 0x5f {
                assert_eq!(Charset::DecSpecial.map(b), char::from(b));
            }
        }
        let line: String = (b'j'..=b'x').map(|b| Charset::DecSpecial.map(b)).collect();
        assert_eq!(line, "┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│");
        for set in [Charset::Ascii, Charset::Uk, Charset::DecSpecial] {
            assert_eq!(Charset::from_final(set.final_byte()), Some(set));
        }
    }
}
