//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) and every minimized crash
//! (`fuzz/regressions/<target>/`) through the same functions the cargo-fuzz targets call, on
//! stable, every run. A failure names every failing file, not just the first.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use phux_core::fuzzing;

/// Every file of `fuzz/<kind>/<target>/`, sorted; none when the directory does not exist.
fn inputs(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
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

fn replay(target: &str, body: fn(&[u8])) {
    let corpus = inputs("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target} is empty: run fuzz/gen-corpus.sh"
    );
    let all: Vec<_> = corpus
        .into_iter()
        .chain(inputs("regressions", target))
        .collect();
    let failures: Vec<String> = all
        .iter()
        .filter(|(_, bytes)| catch_unwind(AssertUnwindSafe(|| body(bytes))).is_err())
        .map(|(path, _)| path.display().to_string())
        .collect();
    println!("{target}: {} inputs replayed", all.len());
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
}

// [FRAME.LENGTH.1] [FIELD.CANON.1]
#[test]
fn frame_decode_corpus() {
    replay("frame_decode", fuzzing::frame_decode);
}

// [INPUT.DEDUPE.2] [QUEUE.BOUND.1] and every request answered.
#[test]
fn server_engine_corpus() {
    replay("server_engine", fuzzing::server_engine);
}

// [INPUT.DEDUPE.1]-[INPUT.DEDUPE.7]
#[test]
fn ledger_model_corpus() {
    replay("ledger_model", fuzzing::ledger_model);
}

// [LEASE.*]
#[test]
fn lease_model_corpus() {
    replay("lease_model", fuzzing::lease_model);
}

// [INPUT.APPLY.7] [INPUT.APPLY.8] [INPUT.ENCODE.KEY.1]
#[test]
fn input_encoder_corpus() {
    replay("input_encoder", fuzzing::input_encoder);
}
