//! OperationLedger at its phux capacity: lookup latency and memory.
//!
//! Targets: a lookup (a retry's `admit` of a known id, or `get`) under 1 µs, and at most
//! 16 MiB for 65,536 records. Memory is printed from the tables' allocated capacities.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use phux_core::Instant;
use phux_core::ledger::{
    Admission, CAPACITY, LedgerRefusal, OperationLedger, Owner, PayloadDigest, SHARE,
};
use phux_core::writer::WriteOutcome;
use phux_proto::OperationId;

/// Client ids are random; a splitmix64 sequence stands in for them, deterministically.
fn ids(n: usize) -> Vec<OperationId> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (0..n)
        .map(|_| {
            let v = (u128::from(next()) << 64) | u128::from(next()) | 1;
            OperationId::from_u128(v).expect("non-zero by construction")
        })
        .collect()
}

fn digest(id: OperationId) -> PayloadDigest {
    let mut d = [0; 32];
    d[..16].copy_from_slice(&id.bytes());
    PayloadDigest(d)
}

/// A ledger holding `CAPACITY` final records, all admitted at t=0, each client's share full.
fn full_ledger(ids: &[OperationId]) -> OperationLedger {
    let mut ledger = OperationLedger::new();
    for (n, &id) in ids.iter().enumerate() {
        let owner = Owner(u32::try_from(n / SHARE).unwrap());
        ledger.admit(Instant::ZERO, owner, id, digest(id)).unwrap();
        ledger.handed_off(id).unwrap();
        ledger.complete(id, WriteOutcome::Written).unwrap();
    }
    ledger
}

fn bench_ledger(c: &mut Criterion) {
    let all = ids(CAPACITY + 1);
    let (known, unseen) = all.split_at(CAPACITY);
    let mut ledger = full_ledger(known);
    assert_eq!(ledger.len(), CAPACITY);

    let bytes = ledger.heap_bytes();
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    println!(
        "ledger memory at {} records: {bytes} bytes ({mib:.2} MiB, {} bytes/record); limit 16 MiB",
        ledger.len(),
        bytes / ledger.len(),
    );
    assert!(bytes <= 16 << 20, "ledger over its 16 MiB budget");

    let now = Instant::ZERO + Duration::from_secs(1);
    let mut i = 0usize;
    c.bench_function("ledger/admit_retry_cached (65,536 held)", |b| {
        b.iter(|| {
            i = (i + 7919) % CAPACITY;
            let id = known[i];
            let got = ledger.admit(now, Owner(0), black_box(id), digest(id));
            debug_assert_eq!(got, Ok(Admission::Cached(WriteOutcome::Written)));
            black_box(got)
        });
    });
    c.bench_function("ledger/get (65,536 held)", |b| {
        b.iter(|| {
            i = (i + 7919) % CAPACITY;
            black_box(ledger.get(black_box(&known[i])))
        });
    });
    let stranger = unseen[0];
    c.bench_function("ledger/admit_unseen_refused_full", |b| {
        b.iter(|| {
            let got = ledger.admit(now, Owner(u32::MAX), black_box(stranger), digest(stranger));
            debug_assert_eq!(got, Err(LedgerRefusal::Full));
            black_box(got)
        });
    });

    // Steady state at capacity: every admission first prunes the oldest record.
    let horizon = Duration::from_micros(CAPACITY as u64);
    let mut churn = OperationLedger::with_limits(CAPACITY, horizon);
    let stream = ids(4 * CAPACITY);
    let mut t = 0u64;
    for &id in &stream[..CAPACITY] {
        churn
            .admit(Instant::from_micros(t), Owner(0), id, digest(id))
            .unwrap();
        t += 1;
    }
    let mut k = CAPACITY;
    c.bench_function("ledger/admit_fresh_with_prune (at capacity)", |b| {
        b.iter(|| {
            let id = stream[k % stream.len()];
            k += 1;
            let got = churn.admit(Instant::from_micros(t), Owner(0), id, digest(id));
            t += 1;
            black_box(got)
        });
    });
    println!(
        "churned ledger: {} records, {} bytes",
        churn.len(),
        churn.heap_bytes()
    );
}

criterion_group!(benches, bench_ledger);
criterion_main!(benches);
