//! Cells, colours and pens: what one screen position holds, packed small.

/// Colour kinds, in bits 24-25 of a colour word.
const KIND_SHIFT: u32 = 24;
const KIND_IDX: u32 = 1 << KIND_SHIFT;
const KIND_RGB: u32 = 2 << KIND_SHIFT;
const KIND_MASK: u32 = 3 << KIND_SHIFT;

// Text attributes, in the foreground word above its colour.
pub(crate) const BOLD: u32 = 1 << 26;
pub(crate) const DIM: u32 = 1 << 27;
pub(crate) const ITALIC: u32 = 1 << 28;
pub(crate) const UNDERLINE: u32 = 1 << 29;
pub(crate) const INVERSE: u32 = 1 << 30;
pub(crate) const ATTR_MASK: u32 = BOLD | DIM | ITALIC | UNDERLINE | INVERSE;

// More text attributes, in the background word above its colour (the foreground word is full).
pub(crate) const DOUBLE_UNDERLINE: u32 = 1 << 26;
pub(crate) const BLINK: u32 = 1 << 27;
pub(crate) const INVISIBLE: u32 = 1 << 28;
pub(crate) const STRIKETHROUGH: u32 = 1 << 29;
pub(crate) const BG_ATTR_MASK: u32 = DOUBLE_UNDERLINE | BLINK | INVISIBLE | STRIKETHROUGH;

// Cell shape flags, in a cell's code word above the code point.
/// The left half of a double-width character.
const WIDE: u32 = 1 << 30;
/// The right half of a double-width character (holds no character of its own).
const WIDE_CONT: u32 = 1 << 31;
/// The code point's bits in a cell's code word.
const CODE_MASK: u32 = 0x1f_ffff;

/// A colour as the GET_SCREEN document and the bootstrap see it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Color {
    Default,
    Idx(u8),
    Rgb(u8, u8, u8),
}

impl Color {
    pub(crate) fn pack(self) -> u32 {
        match self {
            Self::Default => 0,
            Self::Idx(i) => KIND_IDX | u32::from(i),
            Self::Rgb(r, g, b) => {
                KIND_RGB | (u32::from(r) << 16) | (u32::from(g) << 8) | u32::from(b)
            }
        }
    }

    pub(crate) fn unpack(word: u32) -> Self {
        match word & KIND_MASK {
            KIND_IDX => Self::Idx(word as u8),
            KIND_RGB => Self::Rgb((word >> 16) as u8, (word >> 8) as u8, word as u8),
            _ => Self::Default,
        }
    }
}

/// The pen: colours and attributes applied to what is written next.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pen {
    /// Foreground colour plus [`ATTR_MASK`] bits.
    pub(crate) fg: u32,
    /// Background colour plus [`BG_ATTR_MASK`] bits.
    pub(crate) bg: u32,
}

impl Pen {
    /// Whether one of the foreground word's attributes ([`ATTR_MASK`]) is set.
    pub(crate) fn has(self, attr: u32) -> bool {
        self.fg & attr != 0
    }

    /// Whether one of the background word's attributes ([`BG_ATTR_MASK`]) is set.
    pub(crate) fn has_bg(self, attr: u32) -> bool {
        self.bg & attr != 0
    }
}

/// One screen cell: a code point, the wide-character flags and a style id, which its row
/// resolves ([`Row::pen`]; 0 is the default pen). Code point 0 is a cell nothing was written
/// to (or one that was erased): it shows as a blank, but unlike a written space it has no
/// contents. [`Cell::BLANK`] is all zero bytes.
///
/// Packed to 2-byte alignment, so 6 bytes rather than 8; the code word is still one field,
/// so reading a cell's character and shape is one (unaligned) load.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(C, packed(2))]
pub(crate) struct Cell {
    /// The code point ([`CODE_MASK`]) and the [`WIDE`] / [`WIDE_CONT`] flags.
    pub(super) code: u32,
    /// The style's id in the row's table.
    pub(super) style: u16,
}

/// Blank cells to lend out: a row whose cells were never written reads as a slice of these.
/// All zero bytes, so the static lies in zero-filled memory the process never writes, which
/// costs no resident memory however wide the widest such row.
static BLANKS: [Cell; u16::MAX as usize] = [Cell::BLANK; u16::MAX as usize];

/// A row's cells, allocated when first written: a row that never held anything (most of an
/// idle terminal's screen) costs no cells, and reads as blanks. Derefs to the row's `cols`
/// cells either way; `deref_mut` allocates them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cells {
    /// Empty while nothing was written, else `cols` cells.
    buf: Box<[Cell]>,
    cols: u16,
}

impl Cells {
    /// `cols` blank cells, not allocated yet.
    pub(crate) fn blank(cols: u16) -> Self {
        Self {
            buf: Box::default(),
            cols,
        }
    }

    /// `cols` cells starting with `written`, the rest blank; allocated only if `written` is not
    /// empty.
    pub(crate) fn from_written(cols: u16, written: impl ExactSizeIterator<Item = Cell>) -> Self {
        if written.len() == 0 {
            return Self::blank(cols);
        }
        let mut cells = Self::blank(cols);
        for (cell, w) in cells.iter_mut().zip(written) {
            *cell = w;
        }
        cells
    }

    /// Whether the cells are allocated (something was written since the row was made).
    pub(crate) fn allocated(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The same cells at a new width: those that still fit kept, new ones blank.
    pub(crate) fn resize(&mut self, cols: u16) {
        if self.allocated() {
            let mut cells = std::mem::take(&mut self.buf).into_vec();
            cells.resize(usize::from(cols), Cell::BLANK);
            self.buf = cells.into_boxed_slice();
        }
        self.cols = cols;
    }

    /// The heap they hold.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.buf.len() * size_of::<Cell>()
    }
}

impl std::ops::Deref for Cells {
    type Target = [Cell];

    #[inline]
    fn deref(&self) -> &[Cell] {
        if self.buf.is_empty() {
            &BLANKS[..usize::from(self.cols)]
        } else {
            &self.buf
        }
    }
}

impl std::ops::DerefMut for Cells {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Cell] {
        if self.buf.is_empty() && self.cols > 0 {
            self.buf = vec![Cell::BLANK; usize::from(self.cols)].into_boxed_slice();
        }
        &mut self.buf
    }
}

impl Cell {
    /// Never written, default style.
    pub(crate) const BLANK: Self = Self { code: 0, style: 0 };

    /// The right half of a double-width character: no contents, default style.
    pub(crate) const WIDE_CONT: Self = Self {
        code: WIDE_CONT,
        style: 0,
    };

    pub(crate) fn new(ch: char, style: u16) -> Self {
        Self {
            code: u32::from(ch),
            style,
        }
    }

    /// The left half of a double-width character.
    pub(crate) fn wide(ch: char, style: u16) -> Self {
        Self {
            code: u32::from(ch) | WIDE,
            style,
        }
    }

    /// A printable ASCII character: the text fast path's cell.
    #[inline]
    pub(crate) fn ascii(byte: u8, style: u16) -> Self {
        Self {
            code: u32::from(byte),
            style,
        }
    }

    /// An erased cell: no contents, the given style (erases keep the pen, as in vt100).
    pub(crate) fn erased(style: u16) -> Self {
        Self { code: 0, style }
    }

    /// A space in this cell's style, neither half of a wide character.
    pub(crate) fn space_in_its_style(self) -> Self {
        Self {
            code: u32::from(' '),
            style: self.style,
        }
    }

    /// The character (`'\0'` if none).
    pub(crate) fn ch(self) -> char {
        // Cells are only ever built from a `char`, so the fallback is never taken.
        char::from_u32(self.code & CODE_MASK).unwrap_or('\0')
    }

    /// Replaces the character, keeping the shape flags and the style.
    pub(crate) fn set_ch(&mut self, ch: char) {
        self.code = (self.code & !CODE_MASK) | u32::from(ch);
    }

    pub(crate) fn is_wide(self) -> bool {
        self.code & WIDE != 0
    }

    pub(crate) fn is_wide_cont(self) -> bool {
        self.code & WIDE_CONT != 0
    }

    pub(crate) fn has_contents(self) -> bool {
        self.code & CODE_MASK != 0
    }

    /// Whether the style differs from the default (a row interns only other pens).
    pub(crate) fn styled(self) -> bool {
        self.style != 0
    }
}

/// A combining mark: the column of the cell it belongs to and the mark.
pub(crate) type Mark = (u16, char);
