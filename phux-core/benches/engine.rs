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
use phux_core::server::{ConnId, LocalTerminal, ServerEvent, WriteOutcome};
use phux_core::sim::{Harness, PTY_READ, command_frame, hello_frame};
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{InputKey, SpawnTerminal};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PhysicalKey};
use phux_proto::{Frame, GroupId, OperationId, TerminalId};

/// A server in the simulator's harness with one spawned terminal and `viewers` connections
/// attached to it (the first connection is the first viewer, or a bare client when `viewers`
/// is 0). The harness performs the engine's actions as a driver whose sends are read at once
/// and whose writes wait for [`Rig::complete_write`] (scripted), keeping no records or log,
/// so what is timed is the engine plus the harness's bookkeeping of one driver.
struct Rig {
    h: Harness,
    conns: Vec<ConnId>,
    terminal: LocalTerminal,
}

impl Rig {
    fn new(viewers: u64) -> Self {
        let mut h = Harness::new();
        h.log.set_enabled(false);
        h.set_recording(false);
        h.set_raw_reads(true);
        h.set_scripted_writes(true);
        let mut rig = Self {
            h,
            conns: Vec::new(),
            terminal: LocalTerminal(0),
        };
        for _ in 0..viewers.max(1) {
            let conn = rig.hello();
            rig.conns.push(conn);
        }
        rig.terminal = rig.spawn();
        let t = TerminalId::from(rig.terminal);
        for i in 0..viewers {
            let attach = Command::AttachTerminal {
                terminal: t.clone(),
            };
            let conn = rig.conns[i as usize];
            rig.receive(conn, &command_frame(2, attach));
        }
        rig
    }

    /// A connection that said HELLO.
    fn hello(&mut self) -> ConnId {
        let conn = self.h.connect();
        self.receive(conn, &hello_frame());
        conn
    }

    /// Spawns a terminal for the first connection; returns it.
    fn spawn(&mut self) -> LocalTerminal {
        let before: Vec<LocalTerminal> = self.h.ptys.keys().copied().collect();
        let spawn = Frame::SpawnTerminal(SpawnTerminal::new(1, GroupId(1)));
        self.receive(self.conns[0], &spawn);
        let terminal = self.h.ptys.keys().find(|t| !before.contains(t)).copied();
        terminal.expect("the engine asked for no spawn")
    }

    /// Adds `count` idle terminals, spawned after the one the rig works on.
    fn with_idle_terminals(mut self, count: usize) -> Self {
        for _ in 0..count {
            self.spawn();
        }
        self
    }

    /// Adds `count` connections that said HELLO and nothing more.
    fn with_idle_conns(mut self, count: u64) -> Self {
        for _ in 0..count {
            self.hello();
        }
        self
    }

    fn receive(&mut self, conn: ConnId, frame: &Frame) {
        self.receive_bytes(conn, &frame.to_bytes());
    }

    /// A frame's bytes as the driver hands them over: the timed benches encode theirs first.
    fn receive_bytes(&mut self, conn: ConnId, bytes: &[u8]) {
        self.h.send_raw(conn, bytes);
        self.settle();
    }

    /// Performs what the engine asks; the clients' reads are dropped.
    fn settle(&mut self) {
        self.h.settle();
        for &conn in &self.conns {
            black_box(self.h.take_received(conn));
        }
    }

    /// One APPLY_INPUT round trip: the request's bytes, the write's completion, the reply.
    fn apply(&mut self, frame: &[u8]) {
        self.receive_bytes(self.conns[0], frame);
        self.complete_write();
        // Virtual time moves on so that records expire (600 s) before the ledger fills
        // (65,536): the steady state of a busy server.
        self.h.now += std::time::Duration::from_millis(10);
    }

    fn complete_write(&mut self) {
        let job = self.h.complete_write(self.terminal, WriteOutcome::Written);
        job.expect("a Write action");
        self.settle();
    }

    /// One PTY read handed to the engine, as the driver reads it.
    fn pty_output(&mut self, bytes: &[u8]) {
        let (now, terminal) = (self.h.now, self.terminal);
        self.h
            .server
            .handle(now, ServerEvent::PtyOutput { terminal, bytes });
        self.settle();
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
                    rig.receive_bytes(rig.conns[0], &frame);
                    let mid = std::time::Instant::now();
                    rig.complete_write();
                    let end = std::time::Instant::now();
                    spent += if first_half { mid - start } else { end - mid };
                    rig.h.now += std::time::Duration::from_millis(10);
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
            rig.receive_bytes(rig.conns[0], &keystroke);
            rig.complete_write();
        });
    });

    let line: Vec<u8> = (0..79u8).map(|i| b'!' + i % 94).chain(*b"\r\n").collect();
    let chunk: Vec<u8> = line.iter().copied().cycle().take(PTY_READ).collect();
    group.throughput(Throughput::Bytes(chunk.len() as u64));
    for viewers in [1, 8] {
        let mut rig = Rig::new(viewers);
        group.bench_function(
            BenchmarkId::new("output_4KiB", format!("{viewers}_viewers")),
            |b| {
                b.iter(|| rig.pty_output(black_box(&chunk)));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
