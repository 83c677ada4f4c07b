//! Positional codecs for the shared atoms: terminal ids, input events and agent events.

use crate::decode_error::{DecodeError, DecodeErrorKind};
use crate::event::{AgentEvent, Asked, ControlAction, Lifecycle, TerminalControl};
use crate::field::{Fields, Put, Reader, once, utf8};
use crate::ids::{ClientId, TerminalId};
use crate::input::{
    FocusEvent, InputEvent, KeyAction, KeyEvent, ModSet, MouseAction, MouseButton, MouseEvent,
    PasteEvent, PasteTrust, PhysicalKey,
};

pub(crate) type Result<T> = std::result::Result<T, DecodeError>;

/// A value with a positional encoding (inside a field value).
pub(crate) trait Wire: Sized {
    fn read(r: &mut Reader<'_>) -> Result<Self>;
    fn write(&self, out: &mut Vec<u8>);
}

pub(crate) fn unknown(what: &'static str, value: impl Into<u64>) -> DecodeError {
    DecodeError::new(DecodeErrorKind::UnknownEnumValue {
        what,
        value: value.into(),
    })
}

/// A field value holding exactly one positional atom (trailing bytes skipped, rule R4).
pub(crate) fn pos<T: Wire>(v: &[u8]) -> Result<T> {
    T::read(&mut Reader::new(v))
}

/// A named bound exceeded: `what` is `actual`, at most `limit`.
pub(crate) fn limit(what: &'static str, limit: usize, actual: usize) -> DecodeError {
    DecodeError::new(DecodeErrorKind::LimitExceeded {
        what,
        limit: limit as u64,
        actual: actual as u64,
    })
}

impl Wire for TerminalId {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        // [ID.TERMINAL.1] `00 ‖ id u32` local, `01 ‖ host str ‖ id u32` satellite.
        match r.u8()? {
            0 => Ok(Self::Local(r.u32()?)),
            1 => Ok(Self::Satellite {
                host: r.str()?,
                id: r.u32()?,
            }),
            tag => Err(unknown("TerminalId", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Local(id) => {
                out.put_u8(0);
                out.put_u32(*id);
            }
            Self::Satellite { host, id } => {
                out.put_u8(1);
                out.put_len_bytes(host.as_bytes());
                out.put_u32(*id);
            }
        }
    }
}

impl Wire for KeyEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let action = match r.u32()? {
            0 => KeyAction::Release,
            1 => KeyAction::Press,
            2 => KeyAction::Repeat,
            v => return Err(unknown("KeyAction", v)),
        };
        // [FIELD.OPEN.1] Unknown physical keys and modifier bits are kept (rule R5).
        let key = PhysicalKey(r.u32()?);
        let mods = ModSet(r.u16()?);
        let consumed_mods = ModSet(r.u16()?);
        let composing = r.bool()?;
        let text = r.optional(Reader::str)?;
        let unshifted_codepoint = r.optional(Reader::u32)?;
        Ok(Self {
            action,
            key,
            mods,
            consumed_mods,
            composing,
            text,
            unshifted_codepoint,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(match self.action {
            KeyAction::Release => 0,
            KeyAction::Press => 1,
            KeyAction::Repeat => 2,
        });
        out.put_u32(self.key.0);
        out.put_u16(self.mods.0);
        out.put_u16(self.consumed_mods.0);
        out.put_bool(self.composing);
        out.put_optional(self.text.as_deref(), |o, t| o.put_len_bytes(t.as_bytes()));
        out.put_optional(self.unshifted_codepoint, Put::put_u32);
    }
}

impl Wire for MouseEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let action = match r.u32()? {
            0 => MouseAction::Press,
            1 => MouseAction::Release,
            2 => MouseAction::Motion,
            v => return Err(unknown("MouseAction", v)),
        };
        let button = r.u32()?;
        let button =
            MouseButton::from_wire(button).ok_or_else(|| unknown("MouseButton", button))?;
        Ok(Self {
            action,
            button,
            mods: ModSet(r.u16()?),
            x: r.f64()?,
            y: r.f64()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(match self.action {
            MouseAction::Press => 0,
            MouseAction::Release => 1,
            MouseAction::Motion => 2,
        });
        out.put_u32(self.button.wire());
        out.put_u16(self.mods.0);
        out.put_u64(self.x.to_bits());
        out.put_u64(self.y.to_bits());
    }
}

impl Wire for FocusEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => Ok(Self::Gained),
            1 => Ok(Self::Lost),
            v => Err(unknown("FocusEvent", v)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(match self {
            Self::Gained => 0,
            Self::Lost => 1,
        });
    }
}

impl Wire for PasteEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let trust = match r.u8()? {
            0 => PasteTrust::Trusted,
            1 => PasteTrust::Untrusted,
            v => return Err(unknown("PasteTrust", v)),
        };
        Ok(Self {
            trust,
            data: r.bytes()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(match self.trust {
            PasteTrust::Trusted => 0,
            PasteTrust::Untrusted => 1,
        });
        out.put_len_bytes(&self.data);
    }
}

impl Wire for InputEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        match r.u8()? {
            0 => KeyEvent::read(r).map(Self::Key),
            1 => MouseEvent::read(r).map(Self::Mouse),
            2 => FocusEvent::read(r).map(Self::Focus),
            3 => PasteEvent::read(r).map(Self::Paste),
            tag => Err(unknown("InputEvent", tag)),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Key(e) => {
                out.put_u8(0);
                e.write(out);
            }
            Self::Mouse(e) => {
                out.put_u8(1);
                e.write(out);
            }
            Self::Focus(e) => {
                out.put_u8(2);
                e.write(out);
            }
            Self::Paste(e) => {
                out.put_u8(3);
                e.write(out);
            }
        }
    }
}

fn read_client(r: &mut Reader<'_>) -> Result<Option<ClientId>> {
    r.optional(|r| r.u32().map(ClientId))
}

impl Wire for TerminalControl {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let lifecycle = match r.u8()? {
            0 => Lifecycle::Running,
            1 => Lifecycle::Frozen,
            2 => Lifecycle::Exited,
            v => return Err(unknown("Lifecycle", v)),
        };
        let exit_status = r.optional(Reader::i32)?;
        let input_holder = read_client(r)?;
        let action = match r.u8()? {
            0 => ControlAction::Acquired,
            1 => ControlAction::Seized,
            2 => ControlAction::Released,
            3 => ControlAction::Interrupted,
            4 => ControlAction::Frozen,
            5 => ControlAction::Resumed,
            6 => ControlAction::Terminated,
            7 => ControlAction::Killed,
            8 => ControlAction::Exited,
            v => return Err(unknown("ControlAction", v)),
        };
        let actor = read_client(r)?;
        Ok(Self {
            lifecycle,
            exit_status,
            input_holder,
            action,
            actor,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u8(match self.lifecycle {
            Lifecycle::Running => 0,
            Lifecycle::Frozen => 1,
            Lifecycle::Exited => 2,
        });
        out.put_optional(self.exit_status, Put::put_i32);
        out.put_optional(self.input_holder, |o, c| o.put_u32(c.0));
        out.put_u8(match self.action {
            ControlAction::Acquired => 0,
            ControlAction::Seized => 1,
            ControlAction::Released => 2,
            ControlAction::Interrupted => 3,
            ControlAction::Frozen => 4,
            ControlAction::Resumed => 5,
            ControlAction::Terminated => 6,
            ControlAction::Killed => 7,
            ControlAction::Exited => 8,
        });
        out.put_optional(self.actor, |o, c| o.put_u32(c.0));
    }
}

/// `asked` is TLV fields, not positional: 1 id, 2 question, 3 suggestion (repeated), 4
/// elapsed seconds. Reads to the end of the given bytes.
pub(crate) fn read_asked(bytes: &[u8]) -> Result<Asked> {
    let mut fields = Fields::new(bytes);
    let (mut id, mut question, mut elapsed) = (None, None, None);
    let mut suggestions = Vec::new();
    while let Some((field, value)) = fields.next_field()? {
        match field {
            1 => once(&mut id, field, "asked.id", || utf8(value))?,
            2 => once(&mut question, field, "asked.question", || utf8(value))?,
            // [FIELD.DUP.1] Suggestions are the one repeated field, kept in order.
            3 => suggestions.push(utf8(value).map_err(|e| e.with_field("asked.suggestion"))?),
            4 => once(&mut elapsed, field, "asked.elapsed_seconds", || {
                Reader::new(value).u64()
            })?,
            _ => {}
        }
    }
    Ok(Asked {
        id: id.unwrap_or_default(),
        question: question.unwrap_or_default(),
        suggestions,
        elapsed_seconds: elapsed,
    })
}

/// Canonical `asked`: id and question always written (empty allowed), suggestions in order.
pub(crate) fn write_asked(asked: &Asked, out: &mut Vec<u8>) {
    out.put_field(1, asked.id.as_bytes());
    out.put_field(2, asked.question.as_bytes());
    for s in &asked.suggestions {
        out.put_field(3, s.as_bytes());
    }
    if let Some(secs) = asked.elapsed_seconds {
        out.put_field(4, &secs.to_be_bytes());
    }
}

impl Wire for AgentEvent {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let tag = r.u8()?;
        // [EVENT.FRAME.1] `tag ‖ u32 body_len ‖ body`; known bodies ignore trailing bytes.
        let body = r.bytes_ref()?;
        let mut b = Reader::new(body);
        Ok(match tag {
            0x00 => Self::CommandStarted,
            0x01 => Self::CommandFinished {
                exit_code: b.optional(Reader::i32)?,
            },
            0x02 => Self::TitleChanged { title: b.str()? },
            0x03 => Self::Bell,
            0x04 => Self::PaneSpawned,
            0x05 => Self::PaneClosed {
                exit_status: b.optional(Reader::i32)?,
            },
            0x06 => Self::Dirty,
            0x07 => Self::Idle,
            0x08 => Self::TerminalControl(TerminalControl::read(&mut b)?),
            0x09 => Self::Asked(read_asked(body)?),
            0x0a => Self::CwdChanged { cwd: b.str()? },
            // [EVENT.FRAME.2] Unknown tags are kept byte-exact (rule R5).
            _ => Self::Unknown {
                tag,
                body: body.to_vec(),
            },
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        let tag = match self {
            Self::CommandStarted => 0x00,
            Self::CommandFinished { .. } => 0x01,
            Self::TitleChanged { .. } => 0x02,
            Self::Bell => 0x03,
            Self::PaneSpawned => 0x04,
            Self::PaneClosed { .. } => 0x05,
            Self::Dirty => 0x06,
            Self::Idle => 0x07,
            Self::TerminalControl(_) => 0x08,
            Self::Asked(_) => 0x09,
            Self::CwdChanged { .. } => 0x0a,
            Self::Unknown { tag, .. } => *tag,
        };
        out.put_u8(tag);
        let len_at = out.len();
        out.put_u32(0);
        match self {
            Self::CommandFinished { exit_code: v } | Self::PaneClosed { exit_status: v } => {
                out.put_optional(*v, Put::put_i32);
            }
            Self::TitleChanged { title: s } | Self::CwdChanged { cwd: s } => {
                out.put_len_bytes(s.as_bytes());
            }
            Self::TerminalControl(tc) => tc.write(out),
            Self::Asked(asked) => write_asked(asked, out),
            Self::Unknown { body, .. } => out.put_bytes(body),
            Self::CommandStarted | Self::Bell | Self::PaneSpawned | Self::Dirty | Self::Idle => {}
        }
        let len = (out.len() - len_at - 4) as u32;
        out[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
    }
}
