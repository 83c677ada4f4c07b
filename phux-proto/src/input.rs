//! Input atoms: keys, mouse, focus and paste, as data only.
//!
//! How they become PTY bytes is phux-core's `InputEncoder`; how they become wire bytes is
//! this crate's codec.

use std::fmt;

/// A W3C `code` physical key (u32). Open: unknown values are kept exactly (our rule R5) and
/// encode to the PTY as an unidentified key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PhysicalKey(pub u32);

macro_rules! physical_keys {
    ($($name:ident = $value:literal, $code:literal;)*) => {
        impl PhysicalKey {
            $(#[doc = concat!("`", $code, "`")] pub const $name: Self = Self($value);)*

            /// The W3C `code` name, if the key is one phux 0.8 names.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some($code),)*
                    _ => None,
                }
            }

            /// Looks a key up by its W3C `code` name (`KeyA`, `Enter`, `F5`).
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($code => Some(Self::$name),)*
                    _ => None,
                }
            }
        }
    };
}

physical_keys! {
UNIDENTIFIED = 0, "Unidentified";
BACKQUOTE = 1, "Backquote";
BACKSLASH = 2, "Backslash";
BRACKET_LEFT = 3, "BracketLeft";
BRACKET_RIGHT = 4, "BracketRight";
COMMA = 5, "Comma";
DIGIT0 = 6, "Digit0";
DIGIT1 = 7, "Digit1";
DIGIT2 = 8, "Digit2";
DIGIT3 = 9, "Digit3";
DIGIT4 = 10, "Digit4";
DIGIT5 = 11, "Digit5";
DIGIT6 = 12, "Digit6";
DIGIT7 = 13, "Digit7";
DIGIT8 = 14, "Digit8";
DIGIT9 = 15, "Digit9";
EQUAL = 16, "Equal";
INTL_BACKSLASH = 17, "IntlBackslash";
INTL_RO = 18, "IntlRo";
INTL_YEN = 19, "IntlYen";
KEY_A = 20, "KeyA";
KEY_B = 21, "KeyB";
KEY_C = 22, "KeyC";
KEY_D = 23, "KeyD";
KEY_E = 24, "KeyE";
KEY_F = 25, "KeyF";
KEY_G = 26, "KeyG";
KEY_H = 27, "KeyH";
KEY_I = 28, "KeyI";
KEY_J = 29, "KeyJ";
KEY_K = 30, "KeyK";
KEY_L = 31, "KeyL";
KEY_M = 32, "KeyM";
KEY_N = 33, "KeyN";
KEY_O = 34, "KeyO";
KEY_P = 35, "KeyP";
KEY_Q = 36, "KeyQ";
KEY_R = 37, "KeyR";
KEY_S = 38, "KeyS";
KEY_T = 39, "KeyT";
KEY_U = 40, "KeyU";
KEY_V = 41, "KeyV";
KEY_W = 42, "KeyW";
KEY_X = 43, "KeyX";
KEY_Y = 44, "KeyY";
KEY_Z = 45, "KeyZ";
MINUS = 46, "Minus";
PERIOD = 47, "Period";
QUOTE = 48, "Quote";
SEMICOLON = 49, "Semicolon";
SLASH = 50, "Slash";
ALT_LEFT = 51, "AltLeft";
ALT_RIGHT = 52, "AltRight";
BACKSPACE = 53, "Backspace";
CAPS_LOCK = 54, "CapsLock";
CONTEXT_MENU = 55, "ContextMenu";
CONTROL_LEFT = 56, "ControlLeft";
CONTROL_RIGHT = 57, "ControlRight";
ENTER = 58, "Enter";
META_LEFT = 59, "MetaLeft";
META_RIGHT = 60, "MetaRight";
SHIFT_LEFT = 61, "ShiftLeft";
SHIFT_RIGHT = 62, "ShiftRight";
SPACE = 63, "Space";
TAB = 64, "Tab";
CONVERT = 65, "Convert";
KANA_MODE = 66, "KanaMode";
NON_CONVERT = 67, "NonConvert";
DELETE = 68, "Delete";
END = 69, "End";
HELP = 70, "Help";
HOME = 71, "Home";
INSERT = 72, "Insert";
PAGE_DOWN = 73, "PageDown";
PAGE_UP = 74, "PageUp";
ARROW_DOWN = 75, "ArrowDown";
ARROW_LEFT = 76, "ArrowLeft";
ARROW_RIGHT = 77, "ArrowRight";
ARROW_UP = 78, "ArrowUp";
NUM_LOCK = 79, "NumLock";
NUMPAD0 = 80, "Numpad0";
NUMPAD1 = 81, "Numpad1";
NUMPAD2 = 82, "Numpad2";
NUMPAD3 = 83, "Numpad3";
NUMPAD4 = 84, "Numpad4";
NUMPAD5 = 85, "Numpad5";
NUMPAD6 = 86, "Numpad6";
NUMPAD7 = 87, "Numpad7";
NUMPAD8 = 88, "Numpad8";
NUMPAD9 = 89, "Numpad9";
NUMPAD_ADD = 90, "NumpadAdd";
NUMPAD_BACKSPACE = 91, "NumpadBackspace";
NUMPAD_CLEAR = 92, "NumpadClear";
NUMPAD_CLEAR_ENTRY = 93, "NumpadClearEntry";
NUMPAD_COMMA = 94, "NumpadComma";
NUMPAD_DECIMAL = 95, "NumpadDecimal";
NUMPAD_DIVIDE = 96, "NumpadDivide";
NUMPAD_ENTER = 97, "NumpadEnter";
NUMPAD_EQUAL = 98, "NumpadEqual";
NUMPAD_MEMORY_ADD = 99, "NumpadMemoryAdd";
NUMPAD_MEMORY_CLEAR = 100, "NumpadMemoryClear";
NUMPAD_MEMORY_RECALL = 101, "NumpadMemoryRecall";
NUMPAD_MEMORY_STORE = 102, "NumpadMemoryStore";
NUMPAD_MEMORY_SUBTRACT = 103, "NumpadMemorySubtract";
NUMPAD_MULTIPLY = 104, "NumpadMultiply";
NUMPAD_PAREN_LEFT = 105, "NumpadParenLeft";
NUMPAD_PAREN_RIGHT = 106, "NumpadParenRight";
NUMPAD_SUBTRACT = 107, "NumpadSubtract";
NUMPAD_SEPARATOR = 108, "NumpadSeparator";
NUMPAD_UP = 109, "NumpadUp";
NUMPAD_DOWN = 110, "NumpadDown";
NUMPAD_RIGHT = 111, "NumpadRight";
NUMPAD_LEFT = 112, "NumpadLeft";
NUMPAD_BEGIN = 113, "NumpadBegin";
NUMPAD_HOME = 114, "NumpadHome";
NUMPAD_END = 115, "NumpadEnd";
NUMPAD_INSERT = 116, "NumpadInsert";
NUMPAD_DELETE = 117, "NumpadDelete";
NUMPAD_PAGE_UP = 118, "NumpadPageUp";
NUMPAD_PAGE_DOWN = 119, "NumpadPageDown";
ESCAPE = 120, "Escape";
F1 = 121, "F1";
F2 = 122, "F2";
F3 = 123, "F3";
F4 = 124, "F4";
F5 = 125, "F5";
F6 = 126, "F6";
F7 = 127, "F7";
F8 = 128, "F8";
F9 = 129, "F9";
F10 = 130, "F10";
F11 = 131, "F11";
F12 = 132, "F12";
F13 = 133, "F13";
F14 = 134, "F14";
F15 = 135, "F15";
F16 = 136, "F16";
F17 = 137, "F17";
F18 = 138, "F18";
F19 = 139, "F19";
F20 = 140, "F20";
F21 = 141, "F21";
F22 = 142, "F22";
F23 = 143, "F23";
F24 = 144, "F24";
F25 = 145, "F25";
FN = 146, "Fn";
FN_LOCK = 147, "FnLock";
PRINT_SCREEN = 148, "PrintScreen";
SCROLL_LOCK = 149, "ScrollLock";
PAUSE = 150, "Pause";
BROWSER_BACK = 151, "BrowserBack";
BROWSER_FAVORITES = 152, "BrowserFavorites";
BROWSER_FORWARD = 153, "BrowserForward";
BROWSER_HOME = 154, "BrowserHome";
BROWSER_REFRESH = 155, "BrowserRefresh";
BROWSER_SEARCH = 156, "BrowserSearch";
BROWSER_STOP = 157, "BrowserStop";
EJECT = 158, "Eject";
LAUNCH_APP1 = 159, "LaunchApp1";
LAUNCH_APP2 = 160, "LaunchApp2";
LAUNCH_MAIL = 161, "LaunchMail";
MEDIA_PLAY_PAUSE = 162, "MediaPlayPause";
MEDIA_SELECT = 163, "MediaSelect";
MEDIA_STOP = 164, "MediaStop";
MEDIA_TRACK_NEXT = 165, "MediaTrackNext";
MEDIA_TRACK_PREVIOUS = 166, "MediaTrackPrevious";
POWER = 167, "Power";
SLEEP = 168, "Sleep";
AUDIO_VOLUME_DOWN = 169, "AudioVolumeDown";
AUDIO_VOLUME_MUTE = 170, "AudioVolumeMute";
AUDIO_VOLUME_UP = 171, "AudioVolumeUp";
WAKE_UP = 172, "WakeUp";
COPY = 173, "Copy";
CUT = 174, "Cut";
PASTE = 175, "Paste";}

impl PhysicalKey {
    /// The largest value phux 0.8 names.
    pub const MAX_KNOWN: u32 = 175;
}

impl fmt::Debug for PhysicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The W3C name for known keys, the decimal value otherwise.
impl fmt::Display for PhysicalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Modifier bits (u16). Open: unknown bits are kept exactly (our rule R5).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ModSet(pub u16);

impl ModSet {
    /// No modifiers.
    pub const NONE: Self = Self(0);
    /// Shift.
    pub const SHIFT: Self = Self(0x0001);
    /// Control.
    pub const CTRL: Self = Self(0x0002);
    /// Alt / Option.
    pub const ALT: Self = Self(0x0004);
    /// Super / Command / Windows.
    pub const SUPER: Self = Self(0x0008);
    /// Caps Lock is on.
    pub const CAPS_LOCK: Self = Self(0x0010);
    /// Num Lock is on.
    pub const NUM_LOCK: Self = Self(0x0020);
    /// The Shift pressed is the right one.
    pub const SHIFT_SIDE: Self = Self(0x0040);
    /// The Control pressed is the right one.
    pub const CTRL_SIDE: Self = Self(0x0080);
    /// The Alt pressed is the right one.
    pub const ALT_SIDE: Self = Self(0x0100);
    /// The Super pressed is the right one.
    pub const SUPER_SIDE: Self = Self(0x0200);
    /// Every bit phux 0.8 names.
    pub const KNOWN_BITS: u16 = 0x03ff;

    const NAMES: [(Self, &'static str); 10] = [
        (Self::SHIFT, "shift"),
        (Self::CTRL, "ctrl"),
        (Self::ALT, "alt"),
        (Self::SUPER, "super"),
        (Self::CAPS_LOCK, "caps_lock"),
        (Self::NUM_LOCK, "num_lock"),
        (Self::SHIFT_SIDE, "shift_side"),
        (Self::CTRL_SIDE, "ctrl_side"),
        (Self::ALT_SIDE, "alt_side"),
        (Self::SUPER_SIDE, "super_side"),
    ];

    /// Whether every bit of `other` is set here.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no bit is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The lower-case names of the bits set (`shift`, `ctrl`, ...) and any unknown bits as
    /// one `0x…` value, joined with `|`; `none` when empty.
    pub fn names(self) -> String {
        if self.is_empty() {
            return "none".to_owned();
        }
        let mut parts: Vec<String> = Self::NAMES
            .iter()
            .filter(|(bit, _)| self.contains(*bit))
            .map(|(_, name)| (*name).to_owned())
            .collect();
        let unknown = self.0 & !Self::KNOWN_BITS;
        if unknown != 0 {
            parts.push(format!("0x{unknown:04x}"));
        }
        parts.join("|")
    }

    /// Parses what [`ModSet::names`] writes.
    pub fn from_names(text: &str) -> Option<Self> {
        if text == "none" {
            return Some(Self::NONE);
        }
        let mut bits = 0u16;
        for part in text.split('|') {
            if let Some(hex) = part.strip_prefix("0x") {
                bits |= u16::from_str_radix(hex, 16).ok()?;
            } else {
                let (bit, _) = Self::NAMES.iter().find(|(_, name)| *name == part)?;
                bits |= bit.0;
            }
        }
        Some(Self(bits))
    }
}

impl std::ops::BitOr for ModSet {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for ModSet {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

impl fmt::Debug for ModSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModSet({})", self.names())
    }
}

/// What happened to a key. Closed: other values are decode errors.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum KeyAction {
    /// The key went up (wire 0).
    Release,
    /// The key went down (wire 1).
    Press,
    /// The key is held and auto-repeats (wire 2).
    Repeat,
}

/// One key event, positional on the wire (15 bytes minimum).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct KeyEvent {
    /// Press, release or repeat.
    pub action: KeyAction,
    /// The physical key.
    pub key: PhysicalKey,
    /// The modifiers held.
    pub mods: ModSet,
    /// The modifiers the platform already consumed to produce `text`.
    pub consumed_mods: ModSet,
    /// Whether an input method is composing.
    pub composing: bool,
    /// The text the key produces, if any.
    pub text: Option<String>,
    /// The code point the key produces without modifiers, if known.
    pub unshifted_codepoint: Option<u32>,
}

impl KeyEvent {
    /// A press of `key` with `mods` and no text.
    pub fn press(key: PhysicalKey, mods: ModSet) -> Self {
        Self {
            action: KeyAction::Press,
            key,
            mods,
            consumed_mods: ModSet::NONE,
            composing: false,
            text: None,
            unshifted_codepoint: None,
        }
    }
}

/// What the mouse did. Closed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum MouseAction {
    /// A button went down (wire 0); wheel ticks are presses of buttons 4-7.
    Press,
    /// A button went up (wire 1).
    Release,
    /// The pointer moved (wire 2).
    Motion,
}

/// A mouse button (u32 on the wire; 0..=11, others are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum MouseButton {
    /// No button / unknown (wire 0), e.g. plain motion.
    Unknown,
    /// Left (wire 1).
    Left,
    /// Right (wire 2).
    Right,
    /// Middle (wire 3).
    Middle,
    /// Wheel up (wire 4).
    Four,
    /// Wheel down (wire 5).
    Five,
    /// Wheel left (wire 6).
    Six,
    /// Wheel right (wire 7).
    Seven,
    /// Extra button (wire 8).
    Eight,
    /// Extra button (wire 9).
    Nine,
    /// Extra button (wire 10).
    Ten,
    /// Extra button (wire 11).
    Eleven,
}

impl MouseButton {
    /// Every button in wire order (index = wire value).
    pub const ALL: [Self; 12] = [
        Self::Unknown,
        Self::Left,
        Self::Right,
        Self::Middle,
        Self::Four,
        Self::Five,
        Self::Six,
        Self::Seven,
        Self::Eight,
        Self::Nine,
        Self::Ten,
        Self::Eleven,
    ];

    /// The wire value.
    pub fn wire(self) -> u32 {
        Self::ALL.iter().position(|b| *b == self).unwrap_or(0) as u32
    }

    /// The button for a wire value, if valid.
    pub fn from_wire(value: u32) -> Option<Self> {
        Self::ALL.get(usize::try_from(value).ok()?).copied()
    }
}

/// One mouse event, positional on the wire (exactly 26 bytes).
///
/// `x`/`y` are terminal-local surface pixels. Equality compares the float bit patterns, so
/// NaN and -0.0 round-trip and compare equal to themselves.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MouseEvent {
    /// Press, release or motion.
    pub action: MouseAction,
    /// Which button.
    pub button: MouseButton,
    /// The modifiers held.
    pub mods: ModSet,
    /// Horizontal position in surface pixels.
    pub x: f64,
    /// Vertical position in surface pixels.
    pub y: f64,
}

impl PartialEq for MouseEvent {
    fn eq(&self, other: &Self) -> bool {
        self.action == other.action
            && self.button == other.button
            && self.mods == other.mods
            && self.x.to_bits() == other.x.to_bits()
            && self.y.to_bits() == other.y.to_bits()
    }
}

impl Eq for MouseEvent {}

impl std::hash::Hash for MouseEvent {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.action.hash(state);
        self.button.hash(state);
        self.mods.hash(state);
        self.x.to_bits().hash(state);
        self.y.to_bits().hash(state);
    }
}

/// Focus gained or lost (u8: 0 gained, 1 lost).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum FocusEvent {
    /// The client's view of the terminal gained focus.
    Gained,
    /// It lost focus.
    Lost,
}

/// Whether the client vouches for a paste's content (u8: 0 trusted, 1 untrusted).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum PasteTrust {
    /// Written exactly as given.
    Trusted,
    /// Checked by the unsafe-paste rule and sanitized.
    Untrusted,
}

/// A paste: trust flag and arbitrary bytes (not required to be UTF-8 on the wire).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PasteEvent {
    /// Trusted or untrusted.
    pub trust: PasteTrust,
    /// The pasted bytes.
    pub data: Vec<u8>,
}

/// One input atom as carried by ROUTE_INPUT and APPLY_INPUT (tag u8 then the atom).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum InputEvent {
    /// Tag 0x00.
    Key(KeyEvent),
    /// Tag 0x01.
    Mouse(MouseEvent),
    /// Tag 0x02.
    Focus(FocusEvent),
    /// Tag 0x03.
    Paste(PasteEvent),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_table_matches_the_digest() {
        assert_eq!(PhysicalKey::KEY_A.0, 20);
        assert_eq!(PhysicalKey::KEY_Z.0, 45);
        assert_eq!(PhysicalKey::ENTER.0, 58);
        assert_eq!(PhysicalKey::SPACE.0, 63);
        assert_eq!(PhysicalKey::NUMPAD_ENTER.0, 97);
        assert_eq!(PhysicalKey::ESCAPE.0, 120);
        assert_eq!(PhysicalKey::F1.0, 121);
        assert_eq!(PhysicalKey::F25.0, 145);
        assert_eq!(PhysicalKey::PASTE.0, PhysicalKey::MAX_KNOWN);
        assert_eq!(
            PhysicalKey::from_name("ArrowUp"),
            Some(PhysicalKey::ARROW_UP)
        );
        assert_eq!(PhysicalKey(999).to_string(), "999");
    }

    #[test]
    fn modset_names_round_trip_with_unknown_bits() {
        let mods = ModSet(0x8003);
        assert_eq!(mods.names(), "shift|ctrl|0x8000");
        assert_eq!(ModSet::from_names(&mods.names()), Some(mods));
        assert_eq!(ModSet::from_names("none"), Some(ModSet::NONE));
    }

    #[test]
    fn mouse_equality_is_bitwise() {
        let ev = MouseEvent {
            action: MouseAction::Motion,
            button: MouseButton::Unknown,
            mods: ModSet::NONE,
            x: f64::NAN,
            y: -0.0,
        };
        assert_eq!(ev, ev);
        assert_ne!(ev, MouseEvent { y: 0.0, ..ev });
        assert_eq!(MouseButton::from_wire(11), Some(MouseButton::Eleven));
        assert_eq!(MouseButton::from_wire(12), None);
        assert_eq!(MouseButton::Middle.wire(), 3);
    }
}
