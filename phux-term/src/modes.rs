//! The terminal modes that change how input is encoded.
//!
//! [`Terminal`](crate::Terminal) tracks them from the program's output; an input encoder
//! (phux-core's `InputEncoder`) reads one snapshot per batch. One definition, so the two can
//! never disagree.

/// Which mouse events the program asked for (DEC private modes 9 / 1000 / 1002 / 1003).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(serde::Serialize, serde::Deserialize)]
pub enum MouseTracking {
    /// No mouse reporting.
    #[default]
    Off,
    /// Mode 9: X10 compatibility, presses only.
    X10,
    /// Mode 1000: presses and releases.
    Normal,
    /// Mode 1002: presses, releases and motion while a button is down.
    ButtonEvent,
    /// Mode 1003: all motion.
    AnyEvent,
}

/// How mouse reports are encoded (DEC private modes 1005 / 1006 / 1015 / 1016).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(serde::Serialize, serde::Deserialize)]
pub enum MouseEncoding {
    /// `CSI M Cb Cx Cy`, one byte each (coordinates up to 223).
    #[default]
    X10,
    /// Mode 1005: the same, coordinates as UTF-8.
    Utf8,
    /// Mode 1006: `CSI < b ; x ; y M/m`.
    Sgr,
    /// Mode 1015: `CSI b ; x ; y M`.
    Urxvt,
    /// Mode 1016: SGR with pixel coordinates.
    SgrPixels,
}

/// The kitty keyboard protocol's progressive-enhancement flags (`CSI = flags u`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(serde::Serialize, serde::Deserialize)]
pub struct KittyFlags(pub u8);

impl KittyFlags {
    /// 0b1: disambiguate escape codes.
    pub const DISAMBIGUATE: u8 = 0b1;
    /// 0b10: report event types (press, repeat, release).
    pub const REPORT_EVENT_TYPES: u8 = 0b10;
    /// 0b100: report alternate keys.
    pub const REPORT_ALTERNATE_KEYS: u8 = 0b100;
    /// 0b1000: report all keys as escape codes.
    pub const REPORT_ALL_KEYS: u8 = 0b1000;
    /// 0b10000: report associated text.
    pub const REPORT_ASSOCIATED_TEXT: u8 = 0b1_0000;
    /// Every defined flag.
    pub const ALL: u8 = 0b1_1111;

    /// Whether `flag` is set.
    pub fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

/// Everything the input encoder needs to know about the terminal, as one snapshot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(serde::Serialize, serde::Deserialize)]
pub struct TerminalModes {
    /// DECCKM (`CSI ? 1 h`): cursor keys send `SS3 A` instead of `CSI A`.
    pub application_cursor_keys: bool,
    /// DECKPAM (`ESC =`) / DECKPNM (`ESC >`): the keypad sends application sequences.
    pub application_keypad: bool,
    /// DECBKM (`CSI ? 67 h`): Backspace sends BS (0x08) instead of DEL (0x7f).
    pub backarrow_sends_backspace: bool,
    /// LNM (`CSI 20 h`): Enter sends CR LF instead of CR.
    pub line_feed_mode: bool,
    /// Mode 2004: pastes are wrapped in `CSI 200 ~` / `CSI 201 ~`.
    pub bracketed_paste: bool,
    /// Mode 1004: focus changes are reported as `CSI I` / `CSI O`.
    pub focus_reporting: bool,
    /// Mouse tracking mode.
    pub mouse_tracking: MouseTracking,
    /// Mouse report encoding.
    pub mouse_encoding: MouseEncoding,
    /// The kitty keyboard flags in force on the active screen.
    pub kitty_flags: KittyFlags,
    /// Whether the alternate screen is active (the kitty flag stack is per screen).
    pub alternate_screen: bool,
}
