//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and every minimized crash
//! (`fuzz/regressions/<target>/`) through the same functions the cargo-fuzz targets call, on
//! stable, every run. Also measures, with a counting allocator, the peak bytes `Frame::decode`
//! holds for each `frame_decode` input: never more than a small constant over the input.
//! (The allocator counts per thread, so the tests running alongside do not disturb it.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use crate::common::alloc::peak_during_decode;
use phux_proto::fuzzing;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Every file of `fuzz/<kind>/<target>/`, sorted; none when the directory does not exist.
fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(dir) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = dir
        .map(|e| e.expect("readable corpus directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("readable corpus file");
            (p, bytes)
        })
        .collect()
}

/// Runs `body` on every corpus and regression input of `target`; returns the failures.
fn replay(target: &str, body: fn(&[u8])) -> (usize, Vec<String>) {
    let corpus = inputs("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target} is empty: run fuzz/gen-corpus.sh"
    );
    let all: Vec<_> = corpus
        .into_iter()
        .chain(inputs("regressions", target))
        .collect();
    let mut failures = Vec::new();
    for (path, bytes) in &all {
        if catch_unwind(AssertUnwindSafe(|| body(bytes))).is_err() {
            failures.push(format!("{target}: {}", path.display()));
        }
    }
    (all.len(), failures)
}

/// As in `alloc_bound.rs`: a constant, plus per input byte at most half the size of the
/// densest in-memory structure a byte can become (a 2-byte focus event in APPLY_INPUT).
fn bound(len: usize) -> usize {
    1024 + size_of::<phux_proto::input::InputEvent>().div_ceil(2) * len
}

#[test]
fn corpus_and_regressions_replay_clean() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (target, body) in [
        ("frame_decode", fuzzing::frame_decode as fn(&[u8])),
        ("frame_roundtrip", fuzzing::frame_roundtrip),
        ("command_decode", fuzzing::command_decode),
    ] {
        let (n, failed) = replay(target, body);
        total += n;
        failures.extend(failed);
    }
    let mut worst = (0, 0);
    for (path, bytes) in inputs("corpus", "frame_decode")
        .into_iter()
        .chain(inputs("regressions", "frame_decode"))
    {
        let peak = peak_during_decode(&bytes);
        if peak > bound(bytes.len()) {
            failures.push(format!(
                "frame_decode: {} allocates {peak} bytes for {} input bytes",
                path.display(),
                bytes.len()
            ));
        }
        worst = worst.max((peak, bytes.len()));
    }
    println!(
        "{total} inputs replayed; worst decode peak {} bytes for a {}-byte input",
        worst.0, worst.1
    );
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
}
