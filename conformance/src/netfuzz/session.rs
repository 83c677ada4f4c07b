//! A fuzzing session as data: a list of [`Action`]s drawn from a seed. Terminal ids in an
//! action are *slots* (`local:k` means the session's k-th terminal, modulo how many it has):
//! the runner aims them at the terminals the server gave this session when it sends them, so
//! a session replays (and minimises) against any server.

use phux_proto::command::{
    AcquireMode, ApplyInput, Command, MAX_APPLY_INPUT_EVENTS, Signal, StateScope,
};
use phux_proto::frame::{
    CommandFrame, InputFocus, InputKey, InputMouse, InputPaste, SpawnTerminal, SubscribeEvents,
    TerminalResize, TerminalSize,
};
use phux_proto::input::InputEvent;
use phux_proto::{Frame, GroupId, OperationId, TerminalId};

use super::mutate::Mutation;
use super::rng::Rng;
use super::shadow::{HARMLESS_PROGRAM, command_allowed};

/// One step of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The session's HELLO.
    Hello,
    /// A PING.
    Ping(u64),
    /// SPAWN_TERMINAL of the harmless program.
    Spawn {
        /// Its request id.
        request_id: u32,
        /// Its initial size.
        size: TerminalSize,
    },
    /// A frame, its terminal slots aimed at the session's terminals when sent.
    Frame(Frame),
    /// A frame's encoding, changed.
    Mutated(Frame, Mutation),
    /// Bytes as they are (what byte-level minimisation leaves of a mutated frame).
    Raw(Vec<u8>),
    /// DETACH (later actions then test [DETACH.REQUEST.2]).
    Detach,
    /// Fill a terminal's history, stop reading, ask `count` large screens, read again: the
    /// server must not have held more than its queue bound ([QUEUE.BOUND.1]).
    Flood {
        /// The operation id of the paste that fills the history.
        operation: u128,
        /// The request id of every GET_SCREEN.
        request_id: u32,
        /// How many.
        count: u16,
    },
}

/// How a campaign shapes its sessions.
#[derive(Clone, Debug)]
pub struct Shape {
    /// The most actions after HELLO.
    pub max_actions: usize,
    /// Share of actions that are any `arbitrary` frame.
    pub arbitrary: f64,
    /// Share of actions sent mutated.
    pub mutate: f64,
    /// Share of sessions with a protocol-order violation.
    pub violation: f64,
    /// Share of sessions with a queue flood.
    pub flood: f64,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            max_actions: 40,
            arbitrary: 0.15,
            mutate: 0.15,
            violation: 0.05,
            flood: 0.03,
        }
    }
}

/// What the generator remembers while drawing one session.
struct Draw<'a> {
    rng: &'a mut Rng,
    next_request: u32,
    spawned: u32,
    /// Operations sent: id, terminal slot, events (for retries and conflicts).
    operations: Vec<(OperationId, TerminalId, Vec<InputEvent>)>,
}

/// The session of `seed`.
pub fn generate(seed: u64, shape: &Shape) -> Vec<Action> {
    generate_from(&mut Rng::new(seed), shape)
}

/// The session `rng`'s choices make.
pub fn generate_from(rng: &mut Rng, shape: &Shape) -> Vec<Action> {
    let mut d = Draw {
        rng,
        next_request: 1,
        spawned: 0,
        operations: Vec::new(),
    };
    let mut actions = vec![Action::Hello];
    actions.push(d.spawn());
    let n = 1 + d.rng.below(shape.max_actions as u64) as usize;
    for _ in 0..n {
        let a = if d.rng.chance(shape.arbitrary) {
            d.arbitrary()
        } else {
            d.valid()
        };
        let a = match a {
            Action::Frame(f) if d.rng.chance(shape.mutate) => {
                Action::Mutated(f, Mutation::random(d.rng))
            }
            a => a,
        };
        actions.push(a);
    }
    if d.rng.chance(shape.flood) {
        let at = 2 + d.rng.below((actions.len() - 1) as u64) as usize;
        let flood = Action::Flood {
            operation: u128::from(d.rng.next_u64()) << 64 | u128::from(d.rng.next_u64()) | 1,
            request_id: d.request_id(),
            count: 300,
        };
        actions.insert(at.min(actions.len()), flood);
    }
    if d.rng.chance(shape.violation) {
        match d.rng.below(3) {
            // Anything but HELLO or PING first ([HELLO.ORDER.2]).
            0 => {
                let f = d.valid();
                actions.insert(0, f);
            }
            // Frames after DETACH ([DETACH.REQUEST.2]).
            1 => {
                let at = 1 + d.rng.below(actions.len() as u64) as usize;
                actions.insert(at.min(actions.len()), Action::Detach);
            }
            // A second HELLO ([HELLO.ORDER.3]).
            _ => {
                let at = 1 + d.rng.below(actions.len() as u64) as usize;
                actions.insert(at.min(actions.len()), Action::Hello);
            }
        }
    }
    actions
}

impl Draw<'_> {
    fn request_id(&mut self) -> u32 {
        let r = self.next_request;
        self.next_request += 1;
        r
    }

    /// A slot: one of the terminals spawned so far (or slot 0).
    fn slot(&mut self) -> TerminalId {
        TerminalId::Local(self.rng.below(u64::from(self.spawned.max(1))) as u32)
    }

    fn spawn(&mut self) -> Action {
        self.spawned += 1;
        let size = if self.rng.chance(0.7) {
            TerminalSize { cols: 80, rows: 24 }
        } else {
            TerminalSize {
                cols: self.rng.edgy_u16(),
                rows: self.rng.edgy_u16(),
            }
        };
        Action::Spawn {
            request_id: self.request_id(),
            size,
        }
    }

    fn command(&mut self, command: Command) -> Action {
        Action::Frame(Frame::Command(CommandFrame {
            request_id: self.request_id(),
            command,
        }))
    }

    fn event(&mut self) -> InputEvent {
        self.rng
            .arbitrary::<InputEvent>(48)
            .unwrap_or(InputEvent::Paste(phux_proto::input::PasteEvent {
                trust: phux_proto::input::PasteTrust::Trusted,
                data: b"x".to_vec(),
            }))
    }

    /// A well-formed step of a well-behaved (if busy) client.
    fn valid(&mut self) -> Action {
        let terminal = self.slot();
        match self.rng.below(100) {
            0..=3 if self.spawned < 4 => self.spawn(),
            0..=7 => self.command(Command::AttachTerminal { terminal }),
            8..=10 => self.command(Command::DetachTerminal { terminal }),
            11..=15 => {
                let request_scrollback = match self.rng.below(3) {
                    0 => None,
                    1 => Some(0),
                    _ => Some(self.rng.below(100) as u32),
                };
                let cells = self.rng.chance(0.3);
                self.command(Command::GetScreen {
                    terminal,
                    request_scrollback,
                    cells,
                })
            }
            16..=18 => {
                let include_scrollback = self.rng.chance(0.5);
                let max_scrollback_lines = self.rng.edgy_u16();
                self.command(Command::GetTerminalState {
                    terminal,
                    include_scrollback,
                    max_scrollback_lines,
                })
            }
            19..=20 => self.command(Command::GetState {
                scope: StateScope::Server,
            }),
            21..=25 => {
                let mode = if self.rng.chance(0.5) {
                    AcquireMode::Cooperative
                } else {
                    AcquireMode::Seize
                };
                let ttl_ms = [0, 1, 50, 1000, u32::MAX][self.rng.below(5) as usize];
                self.command(Command::AcquireInput {
                    terminal,
                    mode,
                    ttl_ms,
                })
            }
            26..=28 => self.command(Command::ReleaseInput { terminal }),
            29..=33 => {
                // Mostly freeze and resume; the ones that end `cat` are rarer.
                let signal = match self.rng.below(10) {
                    0..=3 => Signal::Freeze,
                    4..=7 => Signal::Resume,
                    8 => Signal::Interrupt,
                    _ => self.rng.arbitrary::<Signal>(4).unwrap_or(Signal::Resume),
                };
                self.command(Command::SignalTerminal { terminal, signal })
            }
            34..=36 => {
                let event_types = self.rng.arbitrary(8).unwrap_or_default();
                self.command(Command::SubscribeTerminalEvents {
                    terminal,
                    event_types,
                })
            }
            37..=41 => {
                let event = self.event();
                self.command(Command::RouteInput { terminal, event })
            }
            42 => self.command(Command::KillTerminal { terminal }),
            43 => {
                let other = self.slot();
                self.command(Command::KillTerminals {
                    terminals: vec![terminal, other],
                })
            }
            44..=63 => self.apply_input(terminal),
            64..=71 => Action::Frame(Frame::TerminalResize(TerminalResize {
                terminal,
                size: TerminalSize {
                    cols: self.rng.edgy_u16(),
                    rows: self.rng.edgy_u16(),
                },
            })),
            72..=83 => Action::Frame(match self.event() {
                InputEvent::Key(event) => Frame::InputKey(InputKey { terminal, event }),
                InputEvent::Paste(event) => Frame::InputPaste(InputPaste { terminal, event }),
                InputEvent::Mouse(event) => Frame::InputMouse(InputMouse { terminal, event }),
                InputEvent::Focus(event) => Frame::InputFocus(InputFocus { terminal, event }),
            }),
            84..=88 => Action::Frame(Frame::SubscribeEvents(SubscribeEvents {
                terminal: self.rng.chance(0.5).then_some(terminal),
            })),
            89..=91 => match self.rng.arbitrary::<Frame>(24) {
                Some(f @ Frame::ViewportResize(_)) => Action::Frame(f),
                _ => Action::Ping(self.rng.next_u64()),
            },
            _ => Action::Ping(self.rng.next_u64()),
        }
    }

    /// APPLY_INPUT: a new operation, a retry of one (same payload), or a conflict (same id,
    /// another payload).
    fn apply_input(&mut self, terminal: TerminalId) -> Action {
        let roll = self.rng.below(10);
        let (operation_id, terminal, events) = match self.operations.len() {
            n if n > 0 && roll < 3 => self.operations[self.rng.below(n as u64) as usize].clone(),
            n if n > 0 && roll == 3 => {
                let (op, t, _) = self.operations[self.rng.below(n as u64) as usize].clone();
                (op, t, vec![self.event()])
            }
            _ => {
                let op = OperationId::from_u128(
                    u128::from(self.rng.next_u64()) << 64 | u128::from(self.rng.next_u64()) | 1,
                )
                .unwrap_or_else(|| unreachable!("the low bit is set"));
                let count = if self.rng.chance(0.05) {
                    // Zero events, or over the cap: refusals the spec names.
                    [0, MAX_APPLY_INPUT_EVENTS + 1][self.rng.below(2) as usize]
                } else {
                    1 + self.rng.below(4) as usize
                };
                let events = (0..count).map(|_| self.event()).collect();
                (op, terminal, events)
            }
        };
        self.operations
            .push((operation_id, terminal.clone(), events.clone()));
        self.command(Command::ApplyInput(ApplyInput {
            operation_id,
            terminal,
            events,
        }))
    }

    /// Any frame from the `arbitrary` impls, minus what must never be sent.
    fn arbitrary(&mut self) -> Action {
        let Some(mut frame) = self.rng.arbitrary::<Frame>(256) else {
            return Action::Ping(self.rng.next_u64());
        };
        match &mut frame {
            Frame::Command(c) if !command_allowed(&c.command) => {
                c.command = Command::GetState {
                    scope: StateScope::Server,
                };
            }
            Frame::SpawnTerminal(s) => {
                s.command = Some(vec![HARMLESS_PROGRAM.to_owned()]);
                s.satellite = None;
                self.spawned += 1;
            }
            // A server-direction frame is fatal at once: keep a few.
            f if f.frame_type().0 >= 0x80 && !self.rng.chance(0.1) => {
                return Action::Ping(self.rng.next_u64());
            }
            _ => {}
        }
        Action::Frame(frame)
    }
}

/// The SPAWN_TERMINAL of an [`Action::Spawn`].
pub fn spawn_frame(request_id: u32, size: TerminalSize) -> Frame {
    Frame::SpawnTerminal(SpawnTerminal {
        request_id,
        group: GroupId(1),
        command: Some(vec![HARMLESS_PROGRAM.to_owned()]),
        cwd: None,
        env: None,
        term: None,
        satellite: None,
        owner_terminal: None,
        agent_session: None,
        initial_size: Some(size),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_session() {
        let shape = Shape::default();
        assert_eq!(generate(5, &shape), generate(5, &shape));
        assert_ne!(generate(5, &shape), generate(6, &shape));
    }

    #[test]
    fn sessions_never_hold_a_forbidden_command() {
        let shape = Shape {
            arbitrary: 1.0,
            ..Shape::default()
        };
        for seed in 0..200 {
            for a in generate(seed, &shape) {
                if let Action::Frame(Frame::Command(c)) | Action::Mutated(Frame::Command(c), _) = &a
                {
                    assert!(command_allowed(&c.command), "{a:?}");
                }
            }
        }
    }
}
