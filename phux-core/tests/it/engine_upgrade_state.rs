//! The decisive property of the upgrade state ([SERVER.UPGRADE.STATE.2]): an engine restored
//! from an exported image behaves exactly as the engine that exported it. Engine A runs a
//! generated schedule; at a generated point where it is quiet its state goes through
//! export, encode, decode and restore into engine B; then A and B are fed the same remaining
//! events and must ask for the same actions, byte for byte. The driver's view of the world
//! (queued bytes, jobs in progress, spawns, kills) follows A's actions, as a real driver's
//! would.
//!
//! The schedules reach terminals cut mid-escape-sequence and mid-UTF-8 with history,
//! leases with TTLs, ledger records in every state (bound, in flight behind an upgrade,
//! final), connections mid-frame and before HELLO, paused streams, pending spawns and
//! pending upgrades.
#![cfg(feature = "sim")]

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use phux_core::Instant;
use phux_core::server::{
    ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent,
    WriteOutcome,
};
use phux_core::sim::{apply_input, command_frame, hello_frame, paste, untrusted_paste};
use phux_core::upgrade::{self, ImageError, STATE_VERSION};
use phux_proto::command::{AcquireMode, Command, Signal, StateScope};
use phux_proto::frame::{
    SpawnTerminal, SubscribeEvents, TerminalResize, TerminalSize, ViewportInfo, ViewportResize,
};
use phux_proto::{Frame, GroupId, TerminalId};
use proptest::prelude::*;

/// Output fragments: whole lines, and pieces cut inside escape sequences, OSC strings and
/// UTF-8 characters, so a chunk often ends mid-sequence.
const OUTPUT: &[&[u8]] = &[
    b"plain line\r\n",
    b"\x1b[1;31mred\x1b[m and \x1b[4",
    b"2mgreen\x1b[m\r\n",
    b"\xe4\xb8",
    b"\xad\xe6\x96\x87 wide\r\n",
    b"\x1b]2;a ti",
    b"tle\x07",
    b"\x1b[?1049h alt screen \x1b[2;3H",
    b"\x1b[?1049l",
    b"\x1b[6n\x1b[c",
    b"\x1b[?2004h\x1b[?1h",
    b"\x07\x07",
    b"\x1b[>1u\x1b[",
    b"?u",
    b"e\xcc\x81 mark \x1b(0lqk\x1b(B",
    b"\x1b[3;5r\x1b7\x1b[20;20H\x1b8",
    b"one\r\ntwo\r\nthree\r\nfour\r\nfive\r\nsix\r\nseven\r\n",
];

#[derive(Clone, Debug)]
enum Step {
    Connect {
        remote: bool,
    },
    Hello {
        slot: u8,
    },
    /// A frame, all of it or only its first `cut` bytes (the rest waits in the slot).
    Frame {
        slot: u8,
        which: u8,
        t: u8,
        arg: u16,
        cut: Option<u8>,
    },
    /// The rest of a cut frame.
    Rest {
        slot: u8,
    },
    Sent {
        slot: u8,
        bytes: u16,
    },
    Disconnect {
        slot: u8,
    },
    SpawnDone {
        ok: bool,
    },
    Output {
        t: u8,
        pieces: Vec<u8>,
    },
    WriteDone {
        t: u8,
        outcome: u8,
    },
    Exit {
        t: u8,
    },
    Advance {
        ms: u16,
    },
    Timeout,
    UpgradeSignal,
    UpgradeFailed,
    UpgradeDone,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => any::<bool>().prop_map(|remote| Step::Connect { remote }),
        3 => any::<u8>().prop_map(|slot| Step::Hello { slot }),
        12 => (any::<u8>(), any::<u8>(), any::<u8>(), any::<u16>(), proptest::option::weighted(0.2, any::<u8>()))
            .prop_map(|(slot, which, t, arg, cut)| Step::Frame { slot, which, t, arg, cut }),
        1 => any::<u8>().prop_map(|slot| Step::Rest { slot }),
        3 => (any::<u8>(), any::<u16>()).prop_map(|(slot, bytes)| Step::Sent { slot, bytes }),
        1 => any::<u8>().prop_map(|slot| Step::Disconnect { slot }),
        3 => proptest::bool::weighted(0.85).prop_map(|ok| Step::SpawnDone { ok }),
        6 => (any::<u8>(), proptest::collection::vec(any::<u8>(), 1..6))
            .prop_map(|(t, pieces)| Step::Output { t, pieces }),
        4 => (any::<u8>(), any::<u8>()).prop_map(|(t, outcome)| Step::WriteDone { t, outcome }),
        1 => any::<u8>().prop_map(|t| Step::Exit { t }),
        3 => (0u16..4000).prop_map(|ms| Step::Advance { ms }),
        1 => Just(Step::Timeout),
        1 => Just(Step::UpgradeSignal),
        1 => Just(Step::UpgradeFailed),
        1 => Just(Step::UpgradeDone),
    ]
}

/// A few live connections and terminals first, so most schedules start deep.
fn prelude() -> Vec<Step> {
    let frame = |slot, which, t| Step::Frame {
        slot,
        which,
        t,
        arg: 0,
        cut: None,
    };
    vec![
        Step::Connect { remote: false },
        Step::Hello { slot: 0 },
        Step::Connect { remote: false },
        Step::Hello { slot: 1 },
        frame(0, 0, 0),
        frame(1, 0, 0),
        Step::SpawnDone { ok: true },
        Step::SpawnDone { ok: true },
        frame(0, 1, 0),
        frame(1, 1, 1),
        Step::Output {
            t: 0,
            pieces: vec![16, 16, 16, 1, 3],
        },
    ]
}

fn config() -> ServerConfig {
    let mut config = ServerConfig::new(vec![0x42; 16]);
    config.default_size = (20, 6);
    config.scrollback_lines = 24;
    config.output_budget = 8 * 1024;
    config.control_budget = 8 * 1024;
    config.max_jobs_per_terminal = 6;
    config.max_terminals = 4;
    config
}

/// What a driver knows, learned from engine A's actions.
#[derive(Default)]
struct World {
    now: Instant,
    next_conn: u64,
    next_pid: u32,
    /// Open connections by slot order, with bytes queued for them and a cut frame's rest.
    conns: Vec<(ConnId, usize, Vec<u8>)>,
    spawns: VecDeque<LocalTerminal>,
    terminals: Vec<LocalTerminal>,
    jobs: BTreeMap<LocalTerminal, VecDeque<JobId>>,
    killed: VecDeque<LocalTerminal>,
    request_id: u32,
}

/// An event with its bytes owned, so the same event can be fed to two engines.
#[derive(Clone, Debug)]
enum Ev {
    Connected(ConnId, PeerInfo),
    Received(ConnId, Vec<u8>),
    Sent(ConnId, usize),
    Disconnected(ConnId),
    Spawned(LocalTerminal, u32),
    SpawnFailed(LocalTerminal),
    Output(LocalTerminal, Vec<u8>),
    WriteDone(LocalTerminal, JobId, WriteOutcome),
    Exited(LocalTerminal),
    Timeout,
    UpgradeRequested,
    UpgradeFailed,
    UpgradeDone,
}

impl Ev {
    fn event(&self) -> ServerEvent<'_> {
        match self {
            Self::Connected(conn, peer) => ServerEvent::Connected {
                conn: *conn,
                peer: *peer,
            },
            Self::Received(conn, bytes) => ServerEvent::Received { conn: *conn, bytes },
            Self::Sent(conn, bytes) => ServerEvent::Sent {
                conn: *conn,
                bytes: *bytes,
            },
            Self::Disconnected(conn) => ServerEvent::Disconnected { conn: *conn },
            Self::Spawned(terminal, pid) => ServerEvent::Spawned {
                terminal: *terminal,
                pid: *pid,
            },
            Self::SpawnFailed(terminal) => ServerEvent::SpawnFailed {
                terminal: *terminal,
                message: "no".into(),
            },
            Self::Output(terminal, bytes) => ServerEvent::PtyOutput {
                terminal: *terminal,
                bytes,
            },
            Self::WriteDone(terminal, job, outcome) => ServerEvent::WriteDone {
                terminal: *terminal,
                job: *job,
                outcome: *outcome,
            },
            Self::Exited(terminal) => ServerEvent::ChildExited {
                terminal: *terminal,
                exit_status: Some(0),
            },
            Self::Timeout => ServerEvent::Timeout,
            Self::UpgradeRequested => ServerEvent::UpgradeRequested { binary: None },
            Self::UpgradeFailed => ServerEvent::UpgradeFailed {
                reason: "generated".into(),
            },
            Self::UpgradeDone => ServerEvent::UpgradeDone,
        }
    }
}

fn drain(engine: &mut ServerEngine) -> Vec<ServerAction> {
    std::iter::from_fn(|| engine.poll_action()).collect()
}

impl World {
    fn slot(&self, slot: u8) -> Option<usize> {
        (!self.conns.is_empty()).then(|| usize::from(slot) % self.conns.len())
    }

    fn terminal(&self, t: u8) -> TerminalId {
        match self.terminals.len() {
            0 => TerminalId::Local(1 + u32::from(t % 3)),
            n => TerminalId::from(self.terminals[usize::from(t) % n]),
        }
    }

    fn live(&self, t: u8) -> Option<LocalTerminal> {
        (!self.terminals.is_empty()).then(|| self.terminals[usize::from(t) % self.terminals.len()])
    }

    /// Learns from engine A's actions what a driver would.
    fn learn(&mut self, actions: &[ServerAction]) {
        for action in actions {
            match action {
                ServerAction::Send { conn, bytes } => self.queue(*conn, bytes.len()),
                ServerAction::SendShared { conn, frame } => self.queue(*conn, frame.len()),
                ServerAction::Spawn { terminal, .. } => self.spawns.push_back(*terminal),
                ServerAction::Write { terminal, job, .. } => {
                    self.jobs.entry(*terminal).or_default().push_back(*job);
                }
                ServerAction::Kill { terminal } => {
                    self.spawns.retain(|t| t != terminal);
                    self.killed.push_back(*terminal);
                }
                _ => {}
            }
        }
    }

    fn queue(&mut self, conn: ConnId, len: usize) {
        if let Some(c) = self.conns.iter_mut().find(|c| c.0 == conn) {
            c.1 += len;
        }
    }

    fn frame(&mut self, which: u8, t: u8, arg: u16) -> Frame {
        self.request_id += 1;
        let rid = self.request_id;
        let terminal = self.terminal(t);
        let command = |command| command_frame(rid, command);
        match which % 20 {
            0 => {
                let mut spawn = SpawnTerminal::new(rid, GroupId(1));
                spawn.initial_size = Some(TerminalSize { cols: 20, rows: 6 });
                Frame::SpawnTerminal(spawn)
            }
            1 => command(Command::AttachTerminal { terminal }),
            2 | 3 => command(apply_input(
                u128::from(arg % 6) + 1,
                &terminal,
                vec![paste(format!("op{}", arg % 9).as_bytes())],
            )),
            4 => command(apply_input(
                1 + u128::from(arg % 6),
                &terminal,
                vec![untrusted_paste(b"x\n")],
            )),
            5 => command(Command::AcquireInput {
                terminal,
                mode: if arg.is_multiple_of(2) {
                    AcquireMode::Cooperative
                } else {
                    AcquireMode::Seize
                },
                ttl_ms: u32::from(arg % 5) * 700,
            }),
            6 => command(Command::ReleaseInput { terminal }),
            7 => command(Command::RouteInput {
                terminal,
                event: paste(b"r"),
            }),
            8 => command(Command::GetScreen {
                terminal,
                request_scrollback: Some(u32::from(arg % 4)),
                cells: arg.is_multiple_of(2),
            }),
            9 => command(Command::GetTerminalState {
                terminal,
                include_scrollback: true,
                max_scrollback_lines: arg % 10,
            }),
            10 => Frame::SubscribeEvents(SubscribeEvents {
                terminal: (arg.is_multiple_of(2)).then_some(terminal),
            }),
            11 => command(Command::SubscribeTerminalEvents {
                terminal,
                event_types: Vec::new(),
            }),
            12 => Frame::TerminalResize(TerminalResize {
                terminal,
                size: TerminalSize {
                    cols: 10 + arg % 20,
                    rows: 3 + arg % 6,
                },
            }),
            13 => command(Command::DetachTerminal { terminal }),
            14 => command(Command::Upgrade { binary: None }),
            15 => command(Command::SignalTerminal {
                terminal,
                signal: if arg.is_multiple_of(2) {
                    Signal::Freeze
                } else {
                    Signal::Resume
                },
            }),
            16 => command(Command::GetState {
                scope: StateScope::Server,
            }),
            // Sizes that differ, so the smallest among several clients ([SERVER.SIZE.1]) is
            // a decision a restored engine must make as the exporter would.
            17 => Frame::ViewportResize(ViewportResize {
                viewport: ViewportInfo {
                    cols: 10 + arg % 70,
                    rows: 3 + arg % 20,
                    pixel_w: Some(800),
                    pixel_h: Some(480),
                },
            }),
            18 => command(Command::KillTerminal { terminal }),
            _ => Frame::Ping(phux_proto::frame::Ping {
                nonce: u64::from(arg),
            }),
        }
    }

    /// The events one step makes, given what the driver knows.
    fn events(&mut self, step: &Step) -> Vec<Ev> {
        let mut out = Vec::new();
        match step {
            Step::Connect { remote } => {
                if self.conns.len() < 4 {
                    self.next_conn += 1;
                    let id = ConnId(self.next_conn);
                    self.conns.push((id, 0, Vec::new()));
                    let peer = if *remote {
                        PeerInfo::remote()
                    } else {
                        PeerInfo::local()
                    };
                    out.push(Ev::Connected(id, peer));
                }
            }
            Step::Hello { slot } => {
                if let Some(i) = self.slot(*slot) {
                    out.push(Ev::Received(self.conns[i].0, hello_frame().to_bytes()));
                }
            }
            Step::Frame {
                slot,
                which,
                t,
                arg,
                cut,
            } => {
                if let Some(i) = self.slot(*slot) {
                    let bytes = self.frame(*which, *t, *arg).to_bytes();
                    let (now, rest) = match cut {
                        Some(c) => bytes.split_at(usize::from(*c) % bytes.len()),
                        None => (&bytes[..], &[][..]),
                    };
                    let conn = &mut self.conns[i];
                    let mut send = std::mem::take(&mut conn.2);
                    send.extend_from_slice(now);
                    conn.2 = rest.to_vec();
                    out.push(Ev::Received(conn.0, send));
                }
            }
            Step::Rest { slot } => {
                if let Some(i) = self.slot(*slot) {
                    let rest = std::mem::take(&mut self.conns[i].2);
                    out.push(Ev::Received(self.conns[i].0, rest));
                }
            }
            Step::Sent { slot, bytes } => {
                if let Some(i) = self.slot(*slot) {
                    let n = usize::from(*bytes).min(self.conns[i].1);
                    self.conns[i].1 -= n;
                    out.push(Ev::Sent(self.conns[i].0, n));
                }
            }
            Step::Disconnect { slot } => {
                if let Some(i) = self.slot(*slot) {
                    out.push(Ev::Disconnected(self.conns.remove(i).0));
                }
            }
            Step::SpawnDone { ok } => {
                if let Some(t) = self.spawns.pop_front() {
                    if *ok {
                        self.next_pid += 1;
                        self.terminals.push(t);
                        out.push(Ev::Spawned(t, 100 + self.next_pid));
                    } else {
                        out.push(Ev::SpawnFailed(t));
                    }
                }
            }
            Step::Output { t, pieces } => {
                if let Some(t) = self.live(*t) {
                    let bytes: Vec<u8> = pieces
                        .iter()
                        .flat_map(|&p| OUTPUT[usize::from(p) % OUTPUT.len()].iter().copied())
                        .collect();
                    out.push(Ev::Output(t, bytes));
                }
            }
            Step::WriteDone { t, outcome } => {
                if let Some(t) = self.live(*t)
                    && let Some(job) = self.jobs.get_mut(&t).and_then(VecDeque::pop_front)
                {
                    let outcome = match outcome % 5 {
                        0 | 4 => WriteOutcome::Written,
                        1 => WriteOutcome::NotWritten,
                        2 => WriteOutcome::Unknown,
                        _ => WriteOutcome::CanonicalRefused { limit: 4095 },
                    };
                    out.push(Ev::WriteDone(t, job, outcome));
                }
            }
            Step::Exit { t } => {
                if let Some(t) = self.live(*t) {
                    out.push(self.exit(t));
                }
            }
            Step::Advance { ms } => {
                self.now += Duration::from_millis(u64::from(*ms));
                out.push(Ev::Timeout);
            }
            Step::Timeout => out.push(Ev::Timeout),
            Step::UpgradeSignal => out.push(Ev::UpgradeRequested),
            Step::UpgradeFailed => out.push(Ev::UpgradeFailed),
            Step::UpgradeDone => out.push(Ev::UpgradeDone),
        }
        // Kills are carried out at once: the child is reaped, its jobs are abandoned.
        while let Some(t) = self.killed.pop_front() {
            out.push(self.exit(t));
        }
        out
    }

    fn exit(&mut self, t: LocalTerminal) -> Ev {
        self.terminals.retain(|x| *x != t);
        self.jobs.remove(&t);
        Ev::Exited(t)
    }
}

/// Feeds `ev` to A (and B), learning from A's actions; B must ask for exactly the same.
fn feed(
    world: &mut World,
    a: &mut ServerEngine,
    b: Option<&mut ServerEngine>,
    ev: &Ev,
) -> Result<Vec<ServerAction>, TestCaseError> {
    let now = world.now;
    a.handle(now, ev.event());
    let from_a = drain(a);
    if let Some(b) = b {
        b.handle(now, ev.event());
        let from_b = drain(b);
        prop_assert_eq!(&from_a, &from_b, "after {:?}", ev);
        prop_assert_eq!(a.poll_timeout(), b.poll_timeout());
        prop_assert_eq!(a.is_upgrading(), b.is_upgrading());
    }
    world.learn(&from_a);
    Ok(from_a)
}

/// Completes every job in progress (as a driver waiting for quiet does), then the image.
fn quiesce(
    world: &mut World,
    a: &mut ServerEngine,
    mut b: Option<&mut ServerEngine>,
) -> Result<(), TestCaseError> {
    let jobs: Vec<(LocalTerminal, JobId)> = world
        .jobs
        .iter_mut()
        .flat_map(|(t, q)| q.drain(..).map(|j| (*t, j)).collect::<Vec<_>>())
        .collect();
    for (t, job) in jobs {
        feed(
            world,
            a,
            b.as_deref_mut(),
            &Ev::WriteDone(t, job, WriteOutcome::Written),
        )?;
    }
    prop_assert!(a.upgrade_quiet());
    Ok(())
}

/// The engine's image, made both ways: from a copy of the state, and straight from the
/// engine; they must be the same bytes.
fn image(engine: &ServerEngine) -> Vec<u8> {
    let state = engine.export_state().expect("quiet");
    let image = upgrade::encode_image(&state, &0u8);
    assert_eq!(engine.export_image(&0u8).expect("quiet"), image);
    image
}

fn run(steps: &[Step], split: usize) -> Result<(), TestCaseError> {
    let mut world = World::default();
    let mut a = ServerEngine::new(config());
    let all: Vec<Step> = prelude().into_iter().chain(steps.iter().cloned()).collect();
    let split = split.min(all.len());
    for step in &all[..split] {
        for ev in world.events(step) {
            feed(&mut world, &mut a, None, &ev)?;
        }
    }
    quiesce(&mut world, &mut a, None)?;
    let bytes = image(&a);
    let (state, host): (_, u8) = upgrade::decode_image(&bytes).expect("the image reads back");
    prop_assert_eq!(host, 0);
    let mut b = ServerEngine::from_state(config(), state).expect("the state restores");
    // The image is exact: the restored engine's own image is the same bytes.
    prop_assert_eq!(image(&b), bytes);
    for step in &all[split..] {
        for ev in world.events(step) {
            feed(&mut world, &mut a, Some(&mut b), &ev)?;
        }
    }
    quiesce(&mut world, &mut a, Some(&mut b))?;
    prop_assert_eq!(image(&a), image(&b), "the same state at the end");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_restored_engine_does_exactly_what_the_exporter_would(
        steps in proptest::collection::vec(step(), 0..80),
        split in any::<prop::sample::Index>(),
    ) {
        let split = split.index(steps.len() + prelude().len() + 1);
        run(&steps, split)?;
    }

    /// [SERVER.UPGRADE.STATE.5] Arbitrary bytes are refused with a typed error, never a
    /// panic, with or without a valid header in front.
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        header in any::<bool>(),
    ) {
        let mut bytes = Vec::new();
        if header {
            bytes.extend_from_slice(&upgrade::MAGIC);
            bytes.extend_from_slice(&STATE_VERSION.to_le_bytes());
            bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
        }
        bytes.extend_from_slice(&body);
        if let Ok((state, ())) = upgrade::decode_image::<()>(&bytes) {
            // Whatever decodes restores or is refused, typed.
            let _ = ServerEngine::from_state(state.config().clone(), state);
        }
    }

    /// [SERVER.UPGRADE.STATE.5] A real image with one byte changed is refused or restores
    /// into an engine that runs.
    #[test]
    fn a_corrupted_image_is_refused_or_runs(
        steps in proptest::collection::vec(step(), 0..30),
        at in any::<prop::sample::Index>(),
        value in any::<u8>(),
    ) {
        let mut world = World::default();
        let mut a = ServerEngine::new(config());
        for step in prelude().iter().chain(&steps) {
            for ev in world.events(step) {
                feed(&mut world, &mut a, None, &ev)?;
            }
        }
        quiesce(&mut world, &mut a, None)?;
        let mut bytes = image(&a);
        let i = at.index(bytes.len());
        bytes[i] = value;
        if let Ok((state, _)) = upgrade::decode_image::<u8>(&bytes)
            && let Ok(mut b) = ServerEngine::from_state(config(), state)
        {
            for step in prelude() {
                for ev in world.events(&step) {
                    b.handle(world.now, ev.event());
                    drain(&mut b);
                }
            }
        }
    }
}

#[test]
fn an_unknown_version_is_refused_before_its_body() {
    // [SERVER.UPGRADE.STATE.3]
    let a = ServerEngine::new(config());
    let mut bytes = image(&a);
    bytes[8..12].copy_from_slice(&(STATE_VERSION + 1).to_le_bytes());
    assert_eq!(upgrade::image_version(&bytes), Ok(STATE_VERSION + 1));
    assert_eq!(
        upgrade::decode_image::<u8>(&bytes).map(|_| ()),
        Err(ImageError::UnknownVersion {
            found: STATE_VERSION + 1,
            supported: STATE_VERSION
        })
    );
    assert!(upgrade::reads_version(STATE_VERSION));
    assert!(!upgrade::reads_version(STATE_VERSION + 1));
    assert!(!upgrade::reads_version(0));
}

#[test]
fn a_truncated_image_is_refused_typed() {
    // [SERVER.UPGRADE.STATE.1] [SERVER.UPGRADE.STATE.5]
    let mut world = World::default();
    let mut a = ServerEngine::new(config());
    for step in prelude() {
        for ev in world.events(&step) {
            feed(&mut world, &mut a, None, &ev).unwrap();
        }
    }
    let bytes = image(&a);
    for len in 0..bytes.len() {
        let err = upgrade::decode_image::<u8>(&bytes[..len])
            .map(|_| ())
            .unwrap_err();
        if len < 20 {
            assert_eq!(err, ImageError::NotAnImage, "{len}");
        } else {
            assert!(
                matches!(err, ImageError::Truncated { .. }),
                "{len}: {err:?}"
            );
        }
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(
        upgrade::decode_image::<u8>(&longer),
        Err(ImageError::Corrupt(_))
    ));
    assert_eq!(
        upgrade::decode_image::<u8>(b"not an image at all")
            .map(|_| ())
            .unwrap_err(),
        ImageError::NotAnImage
    );
}

#[test]
fn a_state_under_another_server_id_is_refused() {
    let a = ServerEngine::new(config());
    let state = a.export_state().unwrap();
    let mut other = config();
    other.server_id = vec![1; 16];
    assert!(ServerEngine::from_state(other, state).is_err());
}

/// An upgrade while two clients of different sizes are attached to one terminal: the restored
/// engine knows both viewports, so when the smaller client detaches it grows the terminal to
/// the other's size, as the engine that exported it does (before state version 4 it did not,
/// knowing no viewport).
#[test]
fn an_upgrade_mid_attach_keeps_the_smallest_size_decision() {
    // [SERVER.UPGRADE.STATE.6] [SERVER.UPGRADE.STATE.2] [SERVER.SIZE.1]
    let frame = |slot, which, arg| Step::Frame {
        slot,
        which,
        t: 0,
        arg,
        cut: None,
    };
    let before = [
        frame(0, 17, 30), // slot 0 (attached to t0) declares 40x13
        frame(1, 1, 0),   // slot 1 attaches to t0 too
        frame(1, 17, 15), // and declares 25x18: t0 is 25x13
    ];
    let mut world = World::default();
    let mut a = ServerEngine::new(config());
    for step in prelude().iter().chain(&before) {
        for ev in world.events(step) {
            feed(&mut world, &mut a, None, &ev).unwrap();
        }
    }
    quiesce(&mut world, &mut a, None).unwrap();
    let t0 = world.terminals[0];
    let (state, _): (_, u8) = upgrade::decode_image(&image(&a)).expect("reads back");
    let mut b = ServerEngine::from_state(config(), state).expect("restores");
    let mut after = Vec::new();
    for ev in world.events(&frame(1, 13, 0)) {
        // slot 1 detaches from t0
        after.extend(feed(&mut world, &mut a, Some(&mut b), &ev).unwrap());
    }
    assert!(
        after.iter().any(|action| matches!(
            action,
            ServerAction::Resize { terminal, cols: 40, rows: 13 } if *terminal == t0
        )),
        "t0 grows back to slot 0's viewport: {after:?}"
    );
    assert_eq!(image(&a), image(&b));
}

/// One schedule that is sure to reach, at the split, every state the property names: output
/// cut mid-sequence and mid-character with history, a lease with a TTL, ledger records final
/// and in flight (held behind the pending upgrade), a stream paused for a slow reader, a
/// connection before HELLO and one mid-frame.
#[test]
fn a_schedule_through_every_kind_of_state() {
    let frame = |slot, which, t, arg| Step::Frame {
        slot,
        which,
        t,
        arg,
        cut: None,
    };
    let before = vec![
        frame(0, 5, 0, 1), // slot 0 takes t0's lease, TTL 700 ms
        Step::Output {
            t: 0,
            pieces: vec![16, 16, 16, 1, 3],
        }, // history, cut mid-CSI... and mid-UTF-8
        frame(0, 2, 0, 1), // APPLY_INPUT op 2 on t0
        Step::WriteDone { t: 0, outcome: 0 }, // written: final
        frame(1, 2, 1, 2), // APPLY_INPUT op 3 on t1
        Step::WriteDone { t: 1, outcome: 1 }, // not written: final
        frame(0, 14, 0, 0), // UPGRADE from slot 0
        frame(0, 2, 0, 4), // APPLY_INPUT op 5 on t0: held, in flight
        Step::Output {
            t: 1,
            pieces: vec![16; 60],
        },
        Step::Output {
            t: 1,
            pieces: vec![16; 60],
        },
        Step::Output {
            t: 1,
            pieces: vec![16; 60],
        },
        Step::Output {
            t: 1,
            pieces: vec![16; 60],
        }, // slot 1 never reads: its stream is paused
        Step::Connect { remote: false }, // slot 2: before HELLO
        Step::Connect { remote: true },  // slot 3
        Step::Hello { slot: 3 },
        Step::Frame {
            slot: 3,
            which: 8,
            t: 0,
            arg: 3,
            cut: Some(9),
        }, // mid-frame
        Step::Output {
            t: 0,
            pieces: vec![5],
        }, // a title cut mid-OSC
    ];
    let after = vec![
        Step::Rest { slot: 3 },
        Step::Hello { slot: 2 },
        Step::Output {
            t: 0,
            pieces: vec![4, 6, 9],
        },
        Step::Sent {
            slot: 1,
            bytes: u16::MAX,
        },
        Step::Output {
            t: 1,
            pieces: vec![0],
        },
        Step::Advance { ms: 800 }, // the lease lapses
        Step::UpgradeDone,         // OK to slot 0; the held job goes out
        Step::WriteDone { t: 0, outcome: 0 },
        frame(0, 2, 0, 4), // the retry is answered from the ledger
        frame(2, 8, 0, 1),
        frame(1, 9, 1, 5),
        Step::Advance { ms: 3000 },
        Step::Timeout,
    ];
    let split = prelude().len() + before.len();
    // The state at the split holds what this test claims it does.
    let mut world = World::default();
    let mut a = ServerEngine::new(config());
    for step in prelude().iter().chain(&before) {
        for ev in world.events(step) {
            feed(&mut world, &mut a, None, &ev).unwrap();
        }
    }
    quiesce(&mut world, &mut a, None).unwrap();
    assert!(a.is_upgrading());
    assert_eq!(a.connection_count(), 4);
    assert!(
        a.buffered_bytes(ConnId(4)).is_some_and(|n| n > 0),
        "mid-frame"
    );
    let state = format!("{:?}", a.export_state().unwrap());
    for needle in [
        "phase: AwaitHello",     // a connection before HELLO
        "state: InFlight",       // the APPLY_INPUT held behind the upgrade
        "state: Final(Written)", // and the completed ones
        "state: Final(NotWritten)",
        "held: [(JobId(",    // its job, held
        "paused_at: Some(",  // the slow reader's stream
        "expires_at: Some(", // the lease's deadline
        "requester: Some(",  // the upgrade's requester
    ] {
        assert!(state.contains(needle), "{needle} not in the state");
    }
    let steps: Vec<Step> = before.into_iter().chain(after).collect();
    run(&steps, split).unwrap();
    // And the same split with the upgrade failing instead.
    let mut failing = steps.clone();
    for s in &mut failing {
        if matches!(s, Step::UpgradeDone) {
            *s = Step::UpgradeFailed;
        }
    }
    run(&failing, split).unwrap();
}
