//! The repository's source files, walked once for the checks that read them all: the clause
//! ids they cite (`coverage.rs`) and how long each may grow.

use std::path::{Path, PathBuf};

/// The workspace root: every crate of the repository, the fuzz workspace included.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, build output and git's own files left out.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != ".git" {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The longest a source file may be: past it, a file holds more than one concept and a
/// newcomer cannot find the one that decides a rule. Split along a seam (a concept per file),
/// not at the line.
const MAX_SOURCE_LINES: usize = 800;

/// Files over the bound that landed before they were split, each with the seams to split it
/// along. The list only shrinks: a file listed here that is back under the bound fails the
/// test until its line goes.
const KNOWN_LONG: &[(&str, &str)] = &[];

/// Test code is exempt: integration tests (`tests/`) and unit tests moved beside their module
/// (`tests.rs`, or a `tests/` directory inside `src/`).
fn is_test(rel: &Path) -> bool {
    rel.file_name().is_some_and(|n| n == "tests.rs")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn no_source_file_outside_tests_is_over_800_lines() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 20, "found only {} .rs files", files.len());
    let mut long = Vec::new();
    let mut split = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap_or(file);
        if is_test(rel) {
            continue;
        }
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let lines = text.lines().count();
        let known = KNOWN_LONG.iter().any(|(path, _)| rel == Path::new(path));
        if lines > MAX_SOURCE_LINES && !known {
            long.push(format!("{} ({lines} lines)", rel.display()));
        } else if lines <= MAX_SOURCE_LINES && known {
            split.push(rel.display().to_string());
        }
    }
    long.sort();
    assert!(
        long.is_empty(),
        "source files over {MAX_SOURCE_LINES} lines (split each along a seam, a concept per \
         file):\n{}",
        long.join("\n")
    );
    assert!(
        split.is_empty(),
        "KNOWN_LONG lists files now within {MAX_SOURCE_LINES} lines (delete them): {split:?}"
    );
    for (path, _) in KNOWN_LONG {
        assert!(
            root.join(path).is_file(),
            "KNOWN_LONG lists {path}, which is gone"
        );
    }
}

#[test]
fn test_code_is_told_from_source() {
    assert!(is_test(Path::new("phux-core/tests/it/engine_leases.rs")));
    assert!(is_test(Path::new("phux-term/src/terminal/tests.rs")));
    assert!(!is_test(Path::new("phux-core/src/client/outbox.rs")));
    assert!(!is_test(Path::new(
        "conformance/src/keydiff/decided/rows.rs"
    )));
}
