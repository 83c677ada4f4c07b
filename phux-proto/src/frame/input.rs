//! INPUT_KEY / INPUT_PASTE / INPUT_MOUSE / INPUT_FOCUS and VIEWPORT_RESIZE.

use crate::ids::TerminalId;
use crate::input::{FocusEvent, KeyEvent, MouseEvent, PasteEvent};

/// INPUT_KEY (0x10, C→S): field 1 terminal, field 2 KeyEvent.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct InputKey {
    /// The target terminal.
    pub terminal: TerminalId,
    /// The key.
    pub event: KeyEvent,
}

/// INPUT_PASTE (0x11, C→S): field 1 terminal, field 2 PasteEvent.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct InputPaste {
    /// The target terminal.
    pub terminal: TerminalId,
    /// The paste.
    pub event: PasteEvent,
}

/// INPUT_MOUSE (0x12, C→S): field 1 terminal, field 2 MouseEvent.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct InputMouse {
    /// The target terminal.
    pub terminal: TerminalId,
    /// The mouse event.
    pub event: MouseEvent,
}

/// INPUT_FOCUS (0x14, C→S): field 1 terminal, field 2 focus u8.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct InputFocus {
    /// The target terminal.
    pub terminal: TerminalId,
    /// Gained or lost.
    pub event: FocusEvent,
}

/// The client's viewport: cells, and pixels when known.
/// Positional: `cols u16 ‖ rows u16 ‖ pixel_w optional<u16> ‖ pixel_h optional<u16>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ViewportInfo {
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// Width in pixels, if known.
    pub pixel_w: Option<u16>,
    /// Height in pixels, if known.
    pub pixel_h: Option<u16>,
}

/// VIEWPORT_RESIZE (0x20, C→S): field 1 ViewportInfo.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ViewportResize {
    /// The new viewport.
    pub viewport: ViewportInfo,
}

// ---- codec ----

use crate::atoms::{Result, Wire, pos};
use crate::field::{Fields, Put, Reader, once, required};

/// Decodes `1 TerminalId ‖ 2 <event>`, both required.
fn decode_terminal_and<T: Wire>(body: &[u8]) -> Result<(TerminalId, T)> {
    let mut fields = Fields::new(body);
    let (mut terminal, mut event) = (None, None);
    while let Some((id, v)) = fields.next_field()? {
        match id {
            1 => once(&mut terminal, id, "terminal", || pos(v))?,
            2 => once(&mut event, id, "event", || pos(v))?,
            _ => {}
        }
    }
    Ok((required(terminal, "terminal")?, required(event, "event")?))
}

fn encode_terminal_and<T: Wire>(out: &mut Vec<u8>, terminal: &TerminalId, event: &T) {
    out.put_field_with(1, |o| terminal.write(o));
    out.put_field_with(2, |o| event.write(o));
}

macro_rules! input_frame {
    ($name:ident) => {
        impl $name {
            pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
                let (terminal, event) = decode_terminal_and(body)?;
                Ok(Self { terminal, event })
            }
            pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
                encode_terminal_and(out, &self.terminal, &self.event);
            }
        }
    };
}

input_frame!(InputKey);
input_frame!(InputPaste);
input_frame!(InputMouse);
input_frame!(InputFocus);

impl Wire for ViewportInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            cols: r.u16()?,
            rows: r.u16()?,
            pixel_w: r.optional(Reader::u16)?,
            pixel_h: r.optional(Reader::u16)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u16(self.cols);
        out.put_u16(self.rows);
        out.put_optional(self.pixel_w, Put::put_u16);
        out.put_optional(self.pixel_h, Put::put_u16);
    }
}

impl ViewportResize {
    pub(crate) fn decode_body(body: &[u8]) -> Result<Self> {
        let mut fields = Fields::new(body);
        let mut viewport = None;
        while let Some((id, v)) = fields.next_field()? {
            if id == 1 {
                once(&mut viewport, id, "viewport", || pos(v))?;
            }
        }
        Ok(Self {
            viewport: required(viewport, "viewport")?,
        })
    }
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_field_with(1, |o| self.viewport.write(o));
    }
}
