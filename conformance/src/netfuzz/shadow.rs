//! What the server makes of the bytes a session sends: the same header walk a server's
//! framing does, so the fuzzer knows which frames the server will see (a truncated frame
//! swallows the next frame's bytes), refuses bytes that would make any frame irreversible
//! or aimed at a terminal that is not the session's, and counts the replies the spec owes.

use std::collections::BTreeMap;

use phux_proto::command::Command;
use phux_proto::framing::{HEADER_LEN, MAX_FRAME_LEN};
use phux_proto::{Frame, FrameType, TerminalId};

use super::mutate::fields;

/// The only program a fuzzing session ever starts.
pub const HARMLESS_PROGRAM: &str = "/bin/cat";

/// Command tags that act on the whole server or outside it: never sent, even inside bytes
/// that our decoder refuses (a lenient server might still read them).
const FORBIDDEN_COMMAND_TAGS: [u8; 4] = [
    Command::UPGRADE,
    Command::DETACH_CLIENTS,
    Command::PUT_FILE,
    Command::SHUTDOWN,
];

/// Whether a decoded command may be sent: nothing server-wide or irreversible.
pub fn command_allowed(c: &Command) -> bool {
    !FORBIDDEN_COMMAND_TAGS.contains(&c.tag())
}

/// Every terminal id a client frame names, mutable (to aim it at the session's terminals).
pub fn terminals_mut(frame: &mut Frame) -> Vec<&mut TerminalId> {
    match frame {
        Frame::Command(c) => match &mut c.command {
            Command::AttachTerminal { terminal }
            | Command::DetachTerminal { terminal }
            | Command::KillTerminal { terminal }
            | Command::GetScreen { terminal, .. }
            | Command::RouteInput { terminal, .. }
            | Command::GetTerminalState { terminal, .. }
            | Command::SubscribeTerminalEvents { terminal, .. }
            | Command::AcquireInput { terminal, .. }
            | Command::ReleaseInput { terminal }
            | Command::SignalTerminal { terminal, .. }
            | Command::ReportAsked { terminal, .. }
            | Command::ReportAgentState { terminal, .. } => vec![terminal],
            Command::ApplyInput(a) => vec![&mut a.terminal],
            Command::PutFile(p) => vec![&mut p.terminal],
            Command::KillTerminals { terminals } => terminals.iter_mut().collect(),
            Command::GetState { .. }
            | Command::Upgrade { .. }
            | Command::DetachClients { .. }
            | Command::Shutdown => Vec::new(),
        },
        Frame::InputKey(f) => vec![&mut f.terminal],
        Frame::InputPaste(f) => vec![&mut f.terminal],
        Frame::InputMouse(f) => vec![&mut f.terminal],
        Frame::InputFocus(f) => vec![&mut f.terminal],
        Frame::TerminalResize(f) => vec![&mut f.terminal],
        Frame::SubscribeEvents(f) => f.terminal.iter_mut().collect(),
        Frame::SpawnTerminal(f) => f.owner_terminal.iter_mut().collect(),
        // Server-direction frames: a server must refuse them outright ([FRAME.TYPE.2]).
        _ => Vec::new(),
    }
}

/// Whether `frame` is one the fuzzer may let a server act on, given the session's terminals.
fn frame_allowed(frame: &Frame, own: &[TerminalId]) -> bool {
    let mut f = frame.clone();
    let aimed_at_own = terminals_mut(&mut f)
        .into_iter()
        .all(|t| matches!(t, TerminalId::Satellite { .. }) || own.contains(t));
    let harmless = match frame {
        Frame::Command(c) => command_allowed(&c.command),
        Frame::SpawnTerminal(s) => s.command.as_deref() == Some(&[HARMLESS_PROGRAM.to_owned()][..]),
        _ => true,
    };
    aimed_at_own && harmless
}

/// Whether bytes our strict decoder refuses could still act dangerously on a lenient server:
/// a COMMAND whose field 2 starts with a forbidden tag, or any SPAWN_TERMINAL.
fn undecodable_allowed(frame_type: u8, body: &[u8]) -> bool {
    match FrameType(frame_type) {
        FrameType::SPAWN_TERMINAL => false,
        FrameType::COMMAND => {
            // Look at every field's first value byte, whatever its id: a lenient decoder
            // may take a renumbered field as the command.
            let Some(spans) = fields(body) else {
                // Not even whole fields: scan every byte after a plausible header.
                return !body.iter().any(|b| FORBIDDEN_COMMAND_TAGS.contains(b));
            };
            !spans.iter().any(|f| {
                f.value(body)
                    .first()
                    .is_some_and(|b| FORBIDDEN_COMMAND_TAGS.contains(b))
            })
        }
        _ => true,
    }
}

/// The client frame types a server implements (others are fatal, [FRAME.TYPE.3]).
fn implemented(t: u8) -> bool {
    matches!(
        FrameType(t),
        FrameType::HELLO
            | FrameType::DETACH
            | FrameType::INPUT_KEY
            | FrameType::INPUT_PASTE
            | FrameType::INPUT_MOUSE
            | FrameType::INPUT_FOCUS
            | FrameType::VIEWPORT_RESIZE
            | FrameType::SPAWN_TERMINAL
            | FrameType::TERMINAL_RESIZE
            | FrameType::COMMAND
            | FrameType::SUBSCRIBE_EVENTS
            | FrameType::PING
    )
}

/// One frame as the server framed it.
#[derive(Clone, Debug)]
pub struct Framed {
    /// The type byte.
    pub frame_type: u8,
    /// The frame, when our strict decoder reads it.
    pub frame: Option<Frame>,
    /// Whether the server takes it on a live connection (no fatal frame before it, and not
    /// fatal itself): then a PING is owed its PONG and the first HELLO its HELLO_OK.
    pub live: bool,
}

/// The server's view of the stream a session writes, and what it owes in reply.
#[derive(Clone, Debug, Default)]
pub struct Shadow {
    /// Bytes sent that do not make a whole frame yet.
    pending: Vec<u8>,
    /// A framing violation was sent: the server reads nothing more ([FRAME.VIOLATION.2]).
    pub fused: bool,
    /// A frame the spec makes fatal (or DETACH) was sent: nothing after it is answered.
    pub fatal: Option<String>,
    /// HELLO was admitted.
    pub hello: bool,
    /// COMMAND request ids owed a COMMAND_RESULT (or an ERROR with that id), with counts.
    pub owed: BTreeMap<u32, usize>,
    /// SPAWN_TERMINAL request ids owed a TERMINAL_SPAWNED.
    pub owed_spawns: BTreeMap<u32, usize>,
    /// COMMANDs our decoder refuses: each may draw one ERROR ([ERROR.COMMAND.1]).
    pub bad_commands: usize,
    /// The request ids a lenient decoder reads in those COMMANDs (field 1 of four bytes), with
    /// counts: a mutation may give a refused COMMAND the id of another request, and then a
    /// reply with that id cannot be told from the other's.
    pub bad_ids: BTreeMap<u32, usize>,
    /// Decoded COMMAND request ids in the order sent (for a transcript's expectations).
    pub commands_sent: Vec<u32>,
}

impl Shadow {
    /// The frames `bytes` would complete, or `None` when one of them is not allowed (then
    /// nothing changes and the bytes must not be sent).
    pub fn admit(&mut self, bytes: &[u8], own: &[TerminalId]) -> Option<Vec<Framed>> {
        if self.fused {
            return Some(Vec::new());
        }
        let mut buf = self.pending.clone();
        buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut at = 0;
        let mut fused = false;
        while buf.len() - at >= HEADER_LEN {
            let len = u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            if len == 0 || len > MAX_FRAME_LEN {
                fused = true;
                break;
            }
            let end = at + 4 + len as usize;
            if end > buf.len() {
                break;
            }
            let frame_type = buf[at + 4];
            let frame = Frame::decode(&buf[at..end]).ok();
            let body = &buf[at + HEADER_LEN..end];
            let ok = match &frame {
                Some(f) => frame_allowed(f, own),
                None => undecodable_allowed(frame_type, body),
            };
            if !ok {
                return None;
            }
            let request_id = (frame.is_none() && FrameType(frame_type) == FrameType::COMMAND)
                .then(|| lenient_request_id(body))
                .flatten();
            out.push((
                Framed {
                    frame_type,
                    frame,
                    live: false,
                },
                request_id,
            ));
            at = end;
        }
        // A partial frame that is already a SPAWN_TERMINAL or COMMAND will be judged whole;
        // its head must not be a problem now, so nothing else to check here.
        self.pending = if fused {
            Vec::new()
        } else {
            buf[at..].to_vec()
        };
        for (f, request_id) in &mut out {
            f.live = self.account(f, *request_id);
        }
        if fused {
            self.fused = true;
            self.fatal
                .get_or_insert_with(|| "a framing violation".to_owned());
        }
        Some(out.into_iter().map(|(f, _)| f).collect())
    }

    /// How many bytes the frame under way still needs (0 when none is under way).
    pub fn missing(&self) -> usize {
        if self.fused || self.pending.is_empty() {
            return 0;
        }
        if self.pending.len() < 4 {
            return HEADER_LEN - self.pending.len();
        }
        let len = u32::from_be_bytes([
            self.pending[0],
            self.pending[1],
            self.pending[2],
            self.pending[3],
        ]) as usize;
        (4 + len).saturating_sub(self.pending.len()).max(1)
    }

    /// Takes one frame as the server will; whether the connection was live for it.
    fn account(&mut self, f: &Framed, bad_request_id: Option<u32>) -> bool {
        if self.fatal.is_some() {
            return false;
        }
        let t = f.frame_type;
        let fatal = if t >= 0x80 {
            Some("a server-direction frame type".to_owned())
        } else if !implemented(t) {
            Some(format!("an unimplemented frame type 0x{t:02x}"))
        } else if f.frame.is_none() && FrameType(t) != FrameType::COMMAND {
            Some(format!("a 0x{t:02x} frame that does not decode"))
        } else if !self.hello && !matches!(FrameType(t), FrameType::HELLO | FrameType::PING) {
            Some("a frame before HELLO".to_owned())
        } else {
            None
        };
        if let Some(why) = fatal {
            self.fatal = Some(why);
            return false;
        }
        match &f.frame {
            Some(Frame::Hello(h)) => {
                if self.hello {
                    self.fatal = Some("a second HELLO".to_owned());
                } else if h.version.major != 0 || h.version.minor != 8 {
                    self.fatal = Some("an unsupported version".to_owned());
                } else {
                    self.hello = true;
                }
            }
            Some(Frame::Detach) => self.fatal = Some("DETACH".to_owned()),
            Some(Frame::Command(c)) => {
                *self.owed.entry(c.request_id).or_default() += 1;
                self.commands_sent.push(c.request_id);
            }
            Some(Frame::SpawnTerminal(s)) => {
                *self.owed_spawns.entry(s.request_id).or_default() += 1;
            }
            None => {
                self.bad_commands += 1;
                if let Some(id) = bad_request_id {
                    *self.bad_ids.entry(id).or_default() += 1;
                }
            }
            Some(_) => {}
        }
        self.fatal.is_none()
    }

    /// Whether every reply owed has come.
    pub fn settled(&self) -> bool {
        self.owed.values().all(|n| *n == 0) && self.owed_spawns.values().all(|n| *n == 0)
    }
}

/// Field 1 of a COMMAND body read leniently (any wire type, any order), as a server that
/// accepts what our decoder refuses might read the request id.
fn lenient_request_id(body: &[u8]) -> Option<u32> {
    let spans = fields(body)?;
    let value = spans.iter().find(|f| f.id(body) == Some(1))?.value(body);
    Some(u32::from_be_bytes(value.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(text: &str) -> Vec<u8> {
        text.parse::<Frame>().unwrap().to_bytes()
    }

    #[test]
    fn refuses_shutdown_and_foreign_terminals() {
        let own = [TerminalId::Local(3)];
        let mut s = Shadow::default();
        assert!(
            s.admit(&bytes("COMMAND{request_id=1 command=SHUTDOWN}"), &own)
                .is_none()
        );
        let kill_other = bytes("COMMAND{request_id=1 command=KILL_TERMINAL{terminal=local:4}}");
        assert!(s.admit(&kill_other, &own).is_none());
        let kill_own = bytes("COMMAND{request_id=1 command=KILL_TERMINAL{terminal=local:3}}");
        // Before HELLO: fatal, so nothing is owed.
        assert_eq!(s.admit(&kill_own, &own).map(|f| f.len()), Some(1));
        assert!(s.fatal.is_some() && s.settled());
    }

    #[test]
    fn a_refused_command_keeps_the_request_id_a_lenient_reader_finds() {
        let own = [TerminalId::Local(3)];
        let mut s = Shadow {
            hello: true,
            ..Shadow::default()
        };
        // COMMAND{request_id=9, KILL_TERMINAL{local:3}} with field 2's length padded to a
        // non-canonical varint: our decoder refuses it, a lenient one reads request 9.
        let good = bytes("COMMAND{request_id=9 command=KILL_TERMINAL{terminal=local:3}}");
        let body = &good[HEADER_LEN..];
        // Field 1: 01 04 04 <4 bytes>; field 2 starts at 7: 02 04 <len>.
        let mut padded = body[..9].to_vec();
        padded.push(body[9] | 0x80);
        padded.push(0x00);
        padded.extend_from_slice(&body[10..]);
        let bad = super::super::mutate::reframe(0x31, &padded);
        assert!(Frame::decode(&bad).is_err());
        let framed = s.admit(&bad, &own).unwrap();
        assert_eq!(framed.len(), 1);
        assert!(framed[0].live);
        assert_eq!(s.bad_commands, 1);
        assert_eq!(s.bad_ids.get(&9), Some(&1));
    }

    #[test]
    fn a_split_frame_is_judged_whole_and_owed_once() {
        let own = [TerminalId::Local(3)];
        let mut s = Shadow {
            hello: true,
            ..Shadow::default()
        };
        let kill = bytes("COMMAND{request_id=9 command=KILL_TERMINAL{terminal=local:3}}");
        assert_eq!(s.admit(&kill[..7], &own).map(|f| f.len()), Some(0));
        assert_eq!(s.missing(), kill.len() - 7);
        assert_eq!(s.admit(&kill[7..], &own).map(|f| f.len()), Some(1));
        assert_eq!(s.owed.get(&9), Some(&1));
    }
}
