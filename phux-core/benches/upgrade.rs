//! What an in-place upgrade costs the engine, for the state the issue names: 100 terminals
//! holding 2,000 lines of history each, with 10 clients attached to all of them.
//!
//! - `upgrade/export`: [`ServerEngine::export_state`] (a copy of everything);
//! - `upgrade/encode`: the image written from the state;
//! - `upgrade/decode`: the image read back (every model checked);
//! - `upgrade/restore`: [`ServerEngine::from_state`];
//! - `upgrade/export_image`: [`ServerEngine::export_image`], the image straight from the
//!   engine (export and encode without the copy);
//! - `upgrade/round_trip`: export_image, decode and restore: what the two images spend
//!   between the request and the new image serving, the exec and the driver's own state
//!   aside.
//!
//! Before timing it prints the image's size.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use phux_core::server::{ServerConfig, ServerEngine, ServerEvent};
use phux_core::sim::{Harness, command_frame, server_id_for};
use phux_core::upgrade;
use phux_proto::command::Command;
use phux_proto::frame::{SpawnTerminal, TerminalSize};
use phux_proto::{GroupId, TerminalId};

const TERMINALS: usize = 100;
const HISTORY: usize = 2000;
const CLIENTS: usize = 10;

/// The engine after 100 terminals each printed 2,000 lines of coloured 80-column text plus a
/// screenful, with 10 clients attached to every terminal and their queues drained.
fn busy_server() -> ServerEngine {
    let mut config = ServerConfig::new(server_id_for(1));
    config.scrollback_lines = HISTORY;
    let mut h = Harness::with_config(config);
    h.log.set_enabled(false);
    h.set_recording(false);
    let clients: Vec<_> = (0..CLIENTS).map(|_| h.client()).collect();
    let mut terminals = Vec::new();
    for _ in 0..TERMINALS {
        let mut spawn = SpawnTerminal::new(0, GroupId(1));
        spawn.initial_size = Some(TerminalSize { cols: 80, rows: 24 });
        terminals.push(h.spawn_with(clients[0], spawn));
    }
    for (n, t) in terminals.iter().enumerate() {
        let local = phux_core::server::LocalTerminal::of(t).expect("a local terminal");
        let mut out = Vec::new();
        for line in 0..HISTORY + 24 {
            out.extend_from_slice(
                format!(
                    "\x1b[3{}m{n:03}:{line:05}\x1b[m the quick brown fox jumps over the lazy dog, {line:>20}\r\n",
                    line % 8
                )
                .as_bytes(),
            );
        }
        for chunk in out.chunks(4096) {
            h.server.handle(
                h.now,
                ServerEvent::PtyOutput {
                    terminal: local,
                    bytes: chunk,
                },
            );
            h.settle();
        }
    }
    for &c in &clients {
        for t in &terminals {
            h.send(
                c,
                &command_frame(
                    7,
                    Command::AttachTerminal {
                        terminal: TerminalId::clone(t),
                    },
                ),
            );
        }
        h.settle();
        black_box(h.recv(c));
    }
    std::mem::replace(
        &mut h.server,
        ServerEngine::new(ServerConfig::new(Vec::new())),
    )
}

fn bench(c: &mut Criterion) {
    let engine = busy_server();
    let config = ServerConfig::new(engine.server_id().to_vec());
    let state = engine.export_state().expect("quiet");
    let image = upgrade::encode_image(&state, &());
    let (decoded, ()) = upgrade::decode_image(&image).expect("reads back");
    let restored = ServerEngine::from_state(config.clone(), decoded).expect("restores");
    assert_eq!(restored.terminal_count(), TERMINALS);
    assert_eq!(restored.connection_count(), CLIENTS);
    eprintln!(
        "upgrade image: {TERMINALS} terminals x {HISTORY} history lines, {CLIENTS} clients: \
         {} bytes ({} KiB)",
        image.len(),
        image.len() / 1024,
    );

    let mut g = c.benchmark_group("upgrade");
    g.sample_size(20);
    g.bench_function("export", |b| b.iter(|| black_box(engine.export_state())));
    g.bench_function("encode", |b| {
        b.iter(|| black_box(upgrade::encode_image(&state, &())));
    });
    g.bench_function("decode", |b| {
        b.iter(|| black_box(upgrade::decode_image::<()>(&image)));
    });
    g.bench_function("restore", |b| {
        b.iter_batched(
            || state.clone(),
            |s| black_box(ServerEngine::from_state(config.clone(), s)),
            BatchSize::LargeInput,
        );
    });
    g.bench_function("export_image", |b| {
        b.iter(|| black_box(engine.export_image(&())));
    });
    g.bench_function("round_trip", |b| {
        b.iter(|| {
            let image = engine.export_image(&()).expect("quiet");
            let (state, ()) = upgrade::decode_image(&image).expect("reads back");
            black_box(ServerEngine::from_state(config.clone(), state))
        });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
