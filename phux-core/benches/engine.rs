//! The server engine's own cost on the hot paths, with no I/O: what the server spends in user
//! space per acknowledged input operation, per keystroke and per PTY read fanned out to its
//! viewers. The driver adds its syscalls to these; the latency and fan-out figures of the
//! server benchmark are these plus the kernel's share.
//!
//! - `engine/apply_input`: an APPLY_INPUT of three key presses from its bytes to the `Write`
//!   action, then the `WriteDone` to the encoded COMMAND_RESULT (the whole round trip's
//!   server-side work).
//! - `engine/apply_input/crowded`: the same beside a thousand idle terminals and a thousand
//!   idle connections.
//! - `engine/input_key`: an INPUT_KEY from its bytes to the `Write` action and its completion.
//! - `engine/output_4KiB/{1,8}_viewers`: one 4 KiB PTY read of 80-column text ingested and
//!   sent to 1 or 8 attached viewers, the send buffers handed back as the driver does.

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use phux_core::Instant;
use phux_core::server::{
    ConnId, JobId, LocalTerminal, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent,
    WriteOutcome,
};
use phux_core::sim::{command_frame, hello_frame, server_id_for};
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{InputKey, SpawnTerminal};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PhysicalKey};
use phux_proto::{Frame, GroupId, OperationId, TerminalId};

/// A server with one spawned terminal and `viewers` connections attached to it (connection 1
/// is the first viewer, or a bare client when `viewers` is 0).
struct Rig {
    engine: ServerEngine,
    terminal: LocalTerminal,
    now: Instant,
    /// The last `Write` action's job, to complete.
    job: Option<JobId>,
    frame: Vec<u8>,
}

impl Rig {
    fn new(viewers: u64) -> Self {
        let mut rig = Self {
            engine: ServerEngine::new(ServerConfig::new(server_id_for(1))),
            terminal: LocalTerminal(0),
            now: Instant::ZERO,
            job: None,
            frame: Vec::new(),
        };
        for c in 1..=viewers.max(1) {
            let conn = ConnId(c);
            rig.engine.handle(
                rig.now,
                ServerEvent::Connected {
                    conn,
                    peer: PeerInfo::local(),
                },
            );
            rig.receive(conn, &hello_frame());
        }
        rig.spawn();
        let t = TerminalId::from(rig.terminal);
        for c in 1..=viewers {
            let attach = Command::AttachTerminal {
                terminal: t.clone(),
            };
            rig.receive(ConnId(c), &command_frame(2, attach));
        }
        rig
    }

    /// Spawns a terminal for connection 1; it becomes `self.terminal`.
    fn spawn(&mut self) {
        self.terminal = LocalTerminal(0);
        self.receive(
            ConnId(1),
            &Frame::SpawnTerminal(SpawnTerminal::new(1, GroupId(1))),
        );
        assert_ne!(
            self.terminal,
            LocalTerminal(0),
            "the engine asked for no spawn"
        );
        self.engine.handle(
            self.now,
            ServerEvent::Spawned {
                terminal: self.terminal,
                pid: 4242,
            },
        );
        self.drain();
    }

    /// Adds `count` idle terminals, spawned before the one the rig works on.
    fn with_idle_terminals(mut self, count: usize) -> Self {
        let busy = self.terminal;
        for _ in 0..count {
            self.spawn();
        }
        self.terminal = busy;
        self
    }

    /// Adds `count` connections that said HELLO and nothing more.
    fn with_idle_conns(mut self, count: u64) -> Self {
        for c in 1000..1000 + count {
            let conn = ConnId(c);
            self.engine.handle(
                self.now,
                ServerEvent::Connected {
                    conn,
                    peer: PeerInfo::local(),
                },
            );
            self.receive(conn, &hello_frame());
        }
        self
    }

    fn receive(&mut self, conn: ConnId, frame: &Frame) {
        self.frame.clear();
        frame.encode(&mut self.frame);
        let bytes = std::mem::take(&mut self.frame);
        self.receive_bytes(conn, &bytes);
        self.frame = bytes;
    }

    /// A frame's bytes as the driver hands them over: the timed benches encode theirs first.
    fn receive_bytes(&mut self, conn: ConnId, bytes: &[u8]) {
        self.engine
            .handle(self.now, ServerEvent::Received { conn, bytes });
        self.drain();
    }

    /// Performs the actions as a driver whose writes always succeed at once would.
    fn drain(&mut self) {
        while let Some(action) = self.engine.poll_action() {
            match action {
                ServerAction::Send { conn, bytes } => {
                    let len = bytes.len();
                    self.engine.reclaim(black_box(bytes));
                    self.engine
                        .handle(self.now, ServerEvent::Sent { conn, bytes: len });
                }
                ServerAction::SendShared { conn, frame } => {
                    let len = frame.len();
                    self.engine.reclaim_shared(black_box(frame.head));
                    self.engine
                        .handle(self.now, ServerEvent::Sent { conn, bytes: len });
                }
                ServerAction::Spawn { terminal, .. } => self.terminal = terminal,
                ServerAction::Write { job, bytes, .. } => {
                    black_box(bytes);
                    self.job = Some(job);
                }
                _ => {}
            }
        }
    }

    /// One APPLY_INPUT round trip: the request's bytes, the write's completion, the reply.
    fn apply(&mut self, frame: &[u8]) {
        self.receive_bytes(ConnId(1), frame);
        self.complete_write();
        // Virtual time moves on so that records expire (600 s) before the ledger fills
        // (65,536): the steady state of a busy server.
        self.now += std::time::Duration::from_millis(10);
    }

    fn complete_write(&mut self) {
        let job = self.job.take().expect("a Write action");
        self.engine.handle(
            self.now,
            ServerEvent::WriteDone {
                terminal: self.terminal,
                job,
                outcome: WriteOutcome::Written,
            },
        );
        self.drain();
    }
}

/// A fresh APPLY_INPUT of three key presses to `terminal` per call, as encoded bytes.
fn apply_frames(terminal: LocalTerminal) -> impl FnMut() -> Vec<u8> {
    let t = TerminalId::from(terminal);
    let mut op = 0u128;
    move || {
        op += 1;
        let apply = Command::ApplyInput(ApplyInput {
            operation_id: OperationId::from_u128(op).expect("non-zero"),
            terminal: t.clone(),
            events: "abc".chars().map(|c| InputEvent::Key(key(c))).collect(),
        });
        command_frame(10 + (op % 1000) as u32, apply).to_bytes()
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent {
        text: Some(c.to_string()),
        ..KeyEvent::press(
            PhysicalKey(PhysicalKey::KEY_A.0 + (c as u32 - 'a' as u32)),
            ModSet::NONE,
        )
    }
}

// A benchmark is a driver: it may read the clock the crate itself never touches.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");

    let mut rig = Rig::new(1);
    let mut next_apply = apply_frames(rig.terminal);
    // The same beside a thousand idle terminals and a thousand idle connections (the scale
    // section's server): nothing per operation may grow with either.
    let mut crowded = Rig::new(1).with_idle_terminals(1000).with_idle_conns(1000);
    let mut next_crowded = apply_frames(crowded.terminal);
    for (name, rig, next) in [
        ("apply_input", &mut rig, &mut next_apply),
        ("apply_input/crowded", &mut crowded, &mut next_crowded),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched_ref(&mut *next, |frame| rig.apply(frame), BatchSize::SmallInput);
        });
    }
    // The two halves of the same operation, timed apart: from the request's bytes to the
    // PTY write, and from the write's completion to the reply's bytes. The second half lies
    // between two syscalls on the acknowledgement's path.
    for (name, first_half) in [
        ("apply_input/to_write", true),
        ("apply_input/to_reply", false),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut spent = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let frame = next_apply();
                    let start = std::time::Instant::now();
                    rig.receive_bytes(ConnId(1), &frame);
                    let mid = std::time::Instant::now();
                    rig.complete_write();
                    let end = std::time::Instant::now();
                    spent += if first_half { mid - start } else { end - mid };
                    rig.now += std::time::Duration::from_millis(10);
                }
                spent
            });
        });
    }

    let mut rig = Rig::new(1);
    let keystroke = Frame::InputKey(InputKey {
        terminal: TerminalId::from(rig.terminal),
        event: key('x'),
    })
    .to_bytes();
    group.bench_function("input_key", |b| {
        b.iter(|| {
            rig.receive_bytes(ConnId(1), &keystroke);
            rig.complete_write();
        });
    });

    let line: Vec<u8> = (0..79u8).map(|i| b'!' + i % 94).chain(*b"\r\n").collect();
    let chunk: Vec<u8> = line.iter().copied().cycle().take(4096).collect();
    group.throughput(Throughput::Bytes(chunk.len() as u64));
    for viewers in [1, 8] {
        let mut rig = Rig::new(viewers);
        group.bench_function(
            BenchmarkId::new("output_4KiB", format!("{viewers}_viewers")),
            |b| {
                b.iter(|| {
                    rig.engine.handle(
                        rig.now,
                        ServerEvent::PtyOutput {
                            terminal: rig.terminal,
                            bytes: black_box(&chunk),
                        },
                    );
                    rig.drain();
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
