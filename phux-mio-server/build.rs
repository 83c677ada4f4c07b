//! Embeds the web client the WebSocket listener serves at `/` (spec/websocket.md, WS.SITE):
//! every file of the repository's `web/dist/` (the client's built files), or, when that holds
//! no `index.html`, one placeholder page that says the client is not built. The files are part
//! of the binary, so the server serves exactly what it was built with and reads no directory
//! at run time.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// More files than a web client's build has; a runaway directory fails the build instead.
const MAX_FILES: usize = 256;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dist = manifest.join("../web/dist");
    let placeholder = manifest.join("src/ws/placeholder.html");
    println!("cargo:rerun-if-changed={}", dist.display());
    println!("cargo:rerun-if-changed={}", placeholder.display());
    let mut files = Vec::new();
    if dist.join("index.html").is_file() {
        collect(&dist, &dist, &mut files);
    }
    files.sort();
    let mut table = String::from("&[\n");
    // Paths as Rust string literals (`{:?}` of a `str` quotes and escapes).
    let literal = |path: &Path| path.to_str().expect("a UTF-8 path").to_owned();
    if files.is_empty() {
        let placeholder = literal(&placeholder);
        let _ = writeln!(
            table,
            "    (\"index.html\", include_bytes!({placeholder:?}), true),"
        );
    }
    for (name, path) in &files {
        let path = literal(path);
        let _ = writeln!(table, "    ({name:?}, include_bytes!({path:?}), false),");
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("web_files.rs"), table).expect("write the web files table");
}

/// Every regular file under `dir` (dot-files left out), by its path relative to `root`.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.is_file() {
            let rel = path.strip_prefix(root).expect("under root");
            let rel = rel.to_string_lossy().replace('\\', "/");
            files.push((rel, path.canonicalize().expect("an existing file")));
            assert!(
                files.len() <= MAX_FILES,
                "web/dist holds more than {MAX_FILES} files"
            );
        }
    }
}
