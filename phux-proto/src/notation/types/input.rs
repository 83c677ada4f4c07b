//! Input atoms: key, mouse, focus and paste events, their enums and the modifier set.

use crate::frame::{
    BootstrapProfiles, ImageSupport, KbdProtocols, LayerSet, NativeCodecs, NativeFeatures,
    ServerFeatures,
};
use crate::input::{
    FocusEvent, InputEvent, KeyAction, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent,
    PasteEvent, PasteTrust, PhysicalKey,
};
use crate::notation::convert::{
    Bytes, Fields, FromValue, Hex, Rec, ToValue, expected, flags, in_record, names, record,
    unknown_variant, variant_name,
};
use crate::notation::error::NotationError;
use crate::notation::value::Value;

// ---- Input atoms -----------------------------------------------------------------------

record!(KeyEvent = "" {
    req action,
    req key,
    req mods,
    req consumed_mods,
    req composing,
    opt text,
    opt unshifted_codepoint: Hex<2>,
});
record!(MouseEvent = "" { req action, req button, req mods, req x, req y });
record!(PasteEvent = "" { req trust, req data: Bytes });

/// `KEY{…}`, `MOUSE{…}`, `PASTE{…}` (the event's own fields), `FOCUS{event=gained}`.
impl ToValue for InputEvent {
    fn to_value(&self) -> Value {
        match self {
            Self::Key(key) => Value::record("KEY", key.record_fields()),
            Self::Mouse(mouse) => Value::record("MOUSE", mouse.record_fields()),
            Self::Focus(focus) => Rec::new("FOCUS").req("event", focus).build(),
            Self::Paste(paste) => Value::record("PASTE", paste.record_fields()),
        }
    }
}

impl FromValue for InputEvent {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match variant_name(value, "an input event (KEY, MOUSE, FOCUS or PASTE)")? {
            "KEY" => KeyEvent::from_record(value, "KEY").map(Self::Key),
            "MOUSE" => MouseEvent::from_record(value, "MOUSE").map(Self::Mouse),
            "PASTE" => PasteEvent::from_record(value, "PASTE").map(Self::Paste),
            "FOCUS" => in_record("FOCUS", || {
                let mut r = Fields::open(value, "FOCUS")?;
                let event = r.req("event")?;
                r.finish()?;
                Ok(Self::Focus(event))
            }),
            other => Err(unknown_variant("input event", other)),
        }
    }
}

names!(KeyAction, "key action" { Release = "release", Press = "press", Repeat = "repeat" });
names!(MouseAction, "mouse action" { Press = "press", Release = "release", Motion = "motion" });
names!(MouseButton, "mouse button" {
    Unknown = "unknown",
    Left = "left",
    Right = "right",
    Middle = "middle",
    Four = "four",
    Five = "five",
    Six = "six",
    Seven = "seven",
    Eight = "eight",
    Nine = "nine",
    Ten = "ten",
    Eleven = "eleven",
});
names!(FocusEvent, "focus event" { Gained = "gained", Lost = "lost" });
names!(PasteTrust, "paste trust" { Trusted = "trusted", Untrusted = "untrusted" });

/// The W3C `code` name (`KeyA`), or the decimal value of a key phux 0.8 does not name.
impl ToValue for PhysicalKey {
    fn to_value(&self) -> Value {
        match self.name() {
            Some(name) => Value::ident(name),
            None => Value::Int(i128::from(self.0)),
        }
    }
}

impl FromValue for PhysicalKey {
    fn from_value(value: &Value) -> Result<Self, NotationError> {
        match value {
            Value::Ident(name) => {
                Self::from_name(name).ok_or_else(|| unknown_variant("physical key", name))
            }
            Value::Int(_) | Value::HexInt { .. } => u32::from_value(value).map(Self),
            other => Err(expected("a key name (KeyA, Enter) or number", other)),
        }
    }
}

flags!(
    ModSet,
    LayerSet,
    ImageSupport,
    KbdProtocols,
    BootstrapProfiles,
    NativeCodecs,
    NativeFeatures,
    ServerFeatures,
);
