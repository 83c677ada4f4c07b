//! GET_STATE's reply: the session snapshot and the records it lists (sessions, windows with
//! their layout trees, terminals).

use crate::ids::TerminalId;

/// The deepest window layout tree we decode: far beyond any real split layout, and low enough
/// that the recursive decoder cannot exhaust the stack.
pub const MAX_LAYOUT_DEPTH: usize = 64;

/// GET_STATE's reply (our rule R21): `u32 count ‖ SessionInfo×count ‖ u32 count ‖
/// WindowInfo×count ‖ u32 count ‖ TerminalInfo×count ‖ focused_session u32 ‖ focused_window
/// u32 ‖ focused_pane TerminalId`.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SessionSnapshot {
    /// Sessions (we send none).
    pub sessions: Vec<SessionInfo>,
    /// Windows (we send none).
    pub windows: Vec<WindowInfo>,
    /// Every live terminal.
    pub terminals: Vec<TerminalInfo>,
    /// The focused session (0).
    pub focused_session: u32,
    /// The focused window (0).
    pub focused_window: u32,
    /// The focused pane (LOCAL 0).
    pub focused_pane: TerminalId,
}

/// One session in a snapshot: `id u32 ‖ name str ‖ active_window optional<u32> ‖ created_at
/// i64 ‖ window_count u16 ‖ attached_client_count u16`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct SessionInfo {
    /// Session id.
    pub id: u32,
    /// Session name.
    pub name: String,
    /// Active window, if any.
    pub active_window: Option<u32>,
    /// Creation time (seconds since the Unix epoch).
    pub created_at: i64,
    /// Windows in the session.
    pub window_count: u16,
    /// Clients attached.
    pub attached_client_count: u16,
}

/// One window in a snapshot: `id u32 ‖ session_id u32 ‖ index u16 ‖ name str ‖ active_pane
/// optional<TerminalId> ‖ layout optional<LayoutNode>`.
#[derive(Clone, PartialEq, Eq, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct WindowInfo {
    /// Window id.
    pub id: u32,
    /// Owning session.
    pub session_id: u32,
    /// Position in the session.
    pub index: u16,
    /// Window name.
    pub name: String,
    /// Active pane, if any.
    pub active_pane: Option<TerminalId>,
    /// Split layout, if any.
    pub layout: Option<LayoutNode>,
}

/// A split direction (u8; other values are decode errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum SplitDirection {
    /// 0.
    Horizontal,
    /// 1.
    Vertical,
}

/// A window layout tree: `00 ‖ TerminalId` (leaf) or `01 ‖ dir u8 ‖ ratio f32 ‖ left ‖
/// right`. At most [`MAX_LAYOUT_DEPTH`] deep. Equality compares the ratio's bit pattern.
#[derive(Clone, Debug)]
pub enum LayoutNode {
    /// A pane.
    Leaf(TerminalId),
    /// A split of two subtrees.
    Split {
        /// Which way.
        direction: SplitDirection,
        /// The left/top share.
        ratio: f32,
        /// Left or top.
        left: Box<Self>,
        /// Right or bottom.
        right: Box<Self>,
    },
}

impl PartialEq for LayoutNode {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Leaf(a), Self::Leaf(b)) => a == b,
            (
                Self::Split {
                    direction: d1,
                    ratio: r1,
                    left: l1,
                    right: g1,
                },
                Self::Split {
                    direction: d2,
                    ratio: r2,
                    left: l2,
                    right: g2,
                },
            ) => d1 == d2 && r1.to_bits() == r2.to_bits() && l1 == l2 && g1 == g2,
            _ => false,
        }
    }
}

impl Eq for LayoutNode {}

impl LayoutNode {
    /// The tree's depth (a leaf is 1).
    pub fn depth(&self) -> usize {
        match self {
            Self::Leaf(_) => 1,
            Self::Split { left, right, .. } => 1 + left.depth().max(right.depth()),
        }
    }
}

#[cfg(feature = "arbitrary")]
impl LayoutNode {
    fn arbitrary_depth(
        u: &mut arbitrary::Unstructured<'_>,
        depth: usize,
    ) -> arbitrary::Result<Self> {
        if depth >= MAX_LAYOUT_DEPTH || !u.arbitrary::<bool>()? {
            return Ok(Self::Leaf(u.arbitrary()?));
        }
        Ok(Self::Split {
            direction: u.arbitrary()?,
            ratio: u.arbitrary()?,
            left: Box::new(Self::arbitrary_depth(u, depth + 1)?),
            right: Box::new(Self::arbitrary_depth(u, depth + 1)?),
        })
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for LayoutNode {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary_depth(u, 1)
    }
}

/// One terminal in a snapshot: `TerminalId ‖ window_id u32 ‖ cols u16 ‖ rows u16 ‖ title
/// optional<str> ‖ cwd optional<str>`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalInfo {
    /// The terminal.
    pub terminal: TerminalId,
    /// Its window (0: we have none).
    pub window_id: u32,
    /// Columns.
    pub cols: u16,
    /// Rows.
    pub rows: u16,
    /// OSC title, when set.
    pub title: Option<String>,
    /// Working directory, when known.
    pub cwd: Option<String>,
}

// ---- codec ----

use crate::atoms::{Result, Wire, limit, unknown};
use crate::field::{Put, Reader};

/// A u32-counted list; capacity bounded by what the input could hold.
fn read_list<T>(
    r: &mut Reader<'_>,
    min_len: usize,
    read: impl Fn(&mut Reader<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let count = r.u32()? as usize;
    let mut list = Vec::with_capacity(r.capacity_for(count, min_len));
    for _ in 0..count {
        list.push(read(r)?);
    }
    Ok(list)
}

fn write_list<T>(out: &mut Vec<u8>, list: &[T], write: impl Fn(&T, &mut Vec<u8>)) {
    out.put_u32(list.len() as u32);
    for item in list {
        write(item, out);
    }
}

impl Wire for SessionSnapshot {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            sessions: read_list(r, 21, SessionInfo::read)?,
            windows: read_list(r, 16, WindowInfo::read)?,
            terminals: read_list(r, 15, TerminalInfo::read)?,
            focused_session: r.u32()?,
            focused_window: r.u32()?,
            focused_pane: TerminalId::read(r)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        write_list(out, &self.sessions, SessionInfo::write);
        write_list(out, &self.windows, WindowInfo::write);
        write_list(out, &self.terminals, TerminalInfo::write);
        out.put_u32(self.focused_session);
        out.put_u32(self.focused_window);
        self.focused_pane.write(out);
    }
}

impl Wire for SessionInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            id: r.u32()?,
            name: r.str()?,
            active_window: r.optional(Reader::u32)?,
            created_at: r.i64()?,
            window_count: r.u16()?,
            attached_client_count: r.u16()?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(self.id);
        out.put_len_bytes(self.name.as_bytes());
        out.put_optional(self.active_window, Put::put_u32);
        out.put_i64(self.created_at);
        out.put_u16(self.window_count);
        out.put_u16(self.attached_client_count);
    }
}

impl Wire for WindowInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            id: r.u32()?,
            session_id: r.u32()?,
            index: r.u16()?,
            name: r.str()?,
            active_pane: r.optional(TerminalId::read)?,
            layout: r.optional(|r| LayoutNode::read_depth(r, 1))?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.put_u32(self.id);
        out.put_u32(self.session_id);
        out.put_u16(self.index);
        out.put_len_bytes(self.name.as_bytes());
        out.put_optional(self.active_pane.as_ref(), |o, t| t.write(o));
        out.put_optional(self.layout.as_ref(), |o, l| l.write(o));
    }
}

impl LayoutNode {
    fn read_depth(r: &mut Reader<'_>, depth: usize) -> Result<Self> {
        // [FIELD.LIMIT.1] Layout trees are bounded so decoding cannot exhaust the stack.
        if depth > MAX_LAYOUT_DEPTH {
            return Err(limit("layout depth", MAX_LAYOUT_DEPTH, depth));
        }
        match r.u8()? {
            0 => Ok(Self::Leaf(TerminalId::read(r)?)),
            1 => Ok(Self::Split {
                direction: match r.u8()? {
                    0 => SplitDirection::Horizontal,
                    1 => SplitDirection::Vertical,
                    v => return Err(unknown("SplitDirection", v)),
                },
                ratio: r.f32()?,
                left: Box::new(Self::read_depth(r, depth + 1)?),
                right: Box::new(Self::read_depth(r, depth + 1)?),
            }),
            tag => Err(unknown("LayoutNode", tag)),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Self::Leaf(id) => {
                out.put_u8(0);
                id.write(out);
            }
            Self::Split {
                direction,
                ratio,
                left,
                right,
            } => {
                out.put_u8(1);
                out.put_u8(*direction as u8);
                out.put_u32(ratio.to_bits());
                left.write(out);
                right.write(out);
            }
        }
    }
}

impl Wire for TerminalInfo {
    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            terminal: TerminalId::read(r)?,
            window_id: r.u32()?,
            cols: r.u16()?,
            rows: r.u16()?,
            title: r.optional(Reader::str)?,
            cwd: r.optional(Reader::str)?,
        })
    }
    fn write(&self, out: &mut Vec<u8>) {
        self.terminal.write(out);
        out.put_u32(self.window_id);
        out.put_u16(self.cols);
        out.put_u16(self.rows);
        out.put_optional(self.title.as_deref(), |o, s| o.put_len_bytes(s.as_bytes()));
        out.put_optional(self.cwd.as_deref(), |o, s| o.put_len_bytes(s.as_bytes()));
    }
}
