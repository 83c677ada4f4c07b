//! INPUT_KEY / INPUT_PASTE / INPUT_MOUSE / INPUT_FOCUS and VIEWPORT_RESIZE.

use crate::TerminalId;
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
