//! InputEncoder throughput: key events per second (legacy and kitty) and paste bytes per
//! second.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use phux_core::encoder::{CellGeometry, encode_batch, encode_key, encode_paste};
use phux_core::modes::{KittyFlags, TerminalModes};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};

/// A typing-like mix: text, Ctrl chords, cursor and function keys.
fn key_mix() -> Vec<KeyEvent> {
    let text = |key, t: &str| KeyEvent {
        text: Some(t.to_owned()),
        ..KeyEvent::press(key, ModSet::NONE)
    };
    vec![
        text(PhysicalKey::KEY_H, "h"),
        text(PhysicalKey::KEY_E, "e"),
        text(PhysicalKey::KEY_L, "l"),
        text(PhysicalKey::KEY_O, "o"),
        text(PhysicalKey::SPACE, " "),
        KeyEvent::press(PhysicalKey::KEY_C, ModSet::CTRL),
        KeyEvent::press(PhysicalKey::ARROW_UP, ModSet::NONE),
        KeyEvent::press(PhysicalKey::ARROW_LEFT, ModSet::SHIFT | ModSet::CTRL),
        KeyEvent::press(PhysicalKey::F5, ModSet::NONE),
        KeyEvent::press(PhysicalKey::ENTER, ModSet::NONE),
    ]
}

fn keys(c: &mut Criterion) {
    let events = key_mix();
    let mut group = c.benchmark_group("key");
    group.throughput(Throughput::Elements(events.len() as u64));
    for (name, flags) in [("legacy", 0), ("kitty_all_flags", KittyFlags::ALL)] {
        let modes = TerminalModes {
            kitty_flags: KittyFlags(flags),
            ..TerminalModes::default()
        };
        let mut out = Vec::with_capacity(256);
        group.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                for ev in &events {
                    encode_key(black_box(ev), &modes, &mut out);
                }
                black_box(out.len())
            });
        });
    }
    group.finish();
}

fn paste(c: &mut Criterion) {
    // 64 KiB of shell-ish text with a few controls for the sanitizer to replace.
    let data: Vec<u8> = b"echo hello world; ls -la | grep x\t\x1b\r"
        .iter()
        .copied()
        .cycle()
        .take(65_500)
        .collect();
    let mut group = c.benchmark_group("paste");
    group.throughput(Throughput::Bytes(data.len() as u64));
    for (name, trust, bracketed) in [
        ("untrusted_bracketed", PasteTrust::Untrusted, true),
        ("trusted_bracketed", PasteTrust::Trusted, true),
        ("untrusted_unbracketed", PasteTrust::Untrusted, false),
    ] {
        let ev = PasteEvent {
            trust,
            data: data.clone(),
        };
        let modes = TerminalModes {
            bracketed_paste: bracketed,
            ..TerminalModes::default()
        };
        let mut out = Vec::with_capacity(70_000);
        group.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                encode_paste(black_box(&ev), &modes, &mut out).expect("safe paste");
                black_box(out.len())
            });
        });
    }
    // The whole APPLY_INPUT path: unsafe-paste scan, then encoding into a fresh job.
    let batch = vec![InputEvent::Paste(PasteEvent {
        trust: PasteTrust::Untrusted,
        data,
    })];
    let modes = TerminalModes {
        bracketed_paste: true,
        ..TerminalModes::default()
    };
    group.bench_function("batch_untrusted_bracketed", |b| {
        b.iter(|| {
            encode_batch(black_box(&batch), &modes, CellGeometry::default())
                .expect("safe batch")
                .len()
        });
    });
    group.finish();
}

criterion_group!(benches, keys, paste);
criterion_main!(benches);
