//! Fuzz finds that are not fixed yet, in code outside the fuzzing harness. Each input lives in
//! `fuzz/regressions/known_crashes/<target>/` (which the main replay does not read) and is
//! replayed here, ignored by default so the suite stays green and CI is not taken down while
//! the bug is open. Reproduce with `cargo test -p phux-core --test fuzz_known_crashes --
//! --ignored`. When a bug is fixed, move its file to `fuzz/regressions/<target>/` (the main
//! replay then keeps it fixed) and delete its test here.

use std::path::Path;

fn known(target: &str, name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions/known_crashes")
        .join(target)
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Bug 1: TERMINAL_RESIZE (or SPAWN_TERMINAL's initial_size) with a huge size, from any
/// client past HELLO, makes the terminal's screen allocate cols × rows cells (61184 × 60021
/// here; libFuzzer stopped it at 2 GiB RSS). Ignored: replaying it exhausts memory.
#[test]
#[ignore = "known crash: unbounded terminal size allocates gigabytes (see the doc comment)"]
fn bug_1_huge_terminal_resize_exhausts_memory() {
    phux_core::fuzzing::server_engine_unguarded(&known("server_engine", "bug-1.bin"));
}
