//! Builds the suite's files into the program (`suite::embedded`), so that an installed
//! `phux-conformance` runs from any directory: every transcript, the spec's clause files and
//! the expectations files, as `(path, include_str!(…))` pairs.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = Vec::new();
    collect(&root.join("transcripts"), "transcripts", &mut files);
    collect(&root.join("../spec"), "spec", &mut files);
    collect(&root.join("peers"), "peers", &mut files);
    for name in [
        "expectations.txt",
        "not-wire-checkable.txt",
        "phux-requirements.toml",
    ] {
        let path = root.join(name);
        if path.is_file() {
            files.push((name.to_owned(), path));
        }
    }
    files.sort();
    let mut out = String::from(
        "/// Every embedded file, `(path, text)`, in path order.\n\
         pub static FILES: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &files {
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = std::fs::write(out_dir.join("embedded.rs"), out) {
        panic!("writing embedded.rs: {e}");
    }
}

/// Every `.phuxt`, `.md` or `.toml` file under `dir`, named `prefix/<relative path>`.
fn collect(dir: &Path, prefix: &str, files: &mut Vec<(String, PathBuf)>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            collect(&path, &format!("{prefix}/{name}"), files);
        } else if path
            .extension()
            .is_some_and(|x| x == "phuxt" || x == "md" || x == "toml")
        {
            println!("cargo:rerun-if-changed={}", path.display());
            files.push((format!("{prefix}/{name}"), path));
        }
    }
}
