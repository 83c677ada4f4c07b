//! No import circle between the modules of a crate: where two modules use each other, neither
//! can be read, tested or moved without the other, and a newcomer cannot tell which one owns
//! the types. One owns them, the other uses them.
//!
//! What counts as a use: every path a source file names that starts with `crate::`, `super::`
//! or `self::`, or with the name of a module declared beside it (`use run::Bounds` in
//! `netfuzz/mod.rs`), in a `use` tree or in code. A module and the modules it contains are one
//! thing here (a child using its parent's items, a parent re-exporting a child's, is how Rust
//! splits a type's code across files), so a use between two modules counts between the
//! ancestors of each that are siblings: `driver::upgrade` using `run` is `driver` using `run`.
//! A circle is then a strongly connected set of siblings. Comments, strings and paths into
//! other crates do not count; methods called on a value are not paths and do not either.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::workspace::{root, rust_files};

/// A module's path from its crate's root (`["driver", "upgrade"]`); the root is empty.
type ModPath = Vec<String>;

/// One use of a module by another, for the message: the file and the path it names.
#[derive(Debug, Clone)]
struct Evidence {
    file: PathBuf,
    path: String,
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let root = root();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("workspace root")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    crates.sort();
    assert!(crates.len() >= 8, "found only {} crates", crates.len());
    let mut circles = Vec::new();
    for src in &crates {
        let crate_name = src
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        circles.extend(
            circles_of(src)
                .into_iter()
                .map(|c| format!("{crate_name}: {c}")),
        );
    }
    assert!(
        circles.is_empty(),
        "modules that import each other (move the shared types to the one that owns them, or \
         to a module of their own):\n{}",
        circles.join("\n")
    );
}

#[test]
fn a_circle_through_a_child_module_is_found() {
    // The shape issue 40 found in the mio server: driver/mod.rs declares driver/upgrade.rs,
    // which used run.rs, which used driver/mod.rs.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "pub mod driver;\npub mod run;\nmod leaf;\n");
    write(
        "driver/mod.rs",
        "mod upgrade;\nuse upgrade::Up;\npub struct Driver;\n",
    );
    write(
        "driver/upgrade.rs",
        "use super::Driver;\n// use crate::leaf::X; is a comment\npub struct Up;\n\
         fn f() { let s = \"crate::leaf::Y is prose\"; crate::run::go(); }\n",
    );
    write(
        "run.rs",
        "use crate::{leaf, driver::{self, Driver}};\npub fn go() {}\n",
    );
    write("leaf.rs", "use std::io;\nuse phux_proto::Frame;\n");
    let found = circles_of(src);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("driver -> run") && found[0].contains("run -> driver"),
        "{found:?}"
    );
    // One way only is no circle; nor is a child using its parent, nor a comment or prose in
    // a string.
    write("run.rs", "use crate::leaf;\npub fn go() {}\n");
    assert!(circles_of(src).is_empty(), "{:?}", circles_of(src));
    // A path a macro is given as a string is a use.
    write(
        "leaf.rs",
        "#[derive(Deserialize)]\nstruct S {\n    #[serde(with = \"crate::run::codec\")]\n    x: u8,\n}\n",
    );
    let found = circles_of(src);
    assert!(
        found.len() == 1 && found[0].contains("leaf -> run"),
        "{found:?}"
    );
    write("leaf.rs", "use std::io;\n");
    // An inline module's `super` is its file's module: `tests` using `super::x` uses the
    // file's child `x`, not a sibling of the file.
    write(
        "leaf.rs",
        "mod x;\n#[cfg(test)]\nmod tests {\n    use super::x::Y;\n}\n",
    );
    write("leaf/x.rs", "pub struct Y;\n");
    write("x.rs", "use crate::leaf;\n");
    write(
        "lib.rs",
        "pub mod driver;\npub mod run;\nmod leaf;\nmod x;\n",
    );
    assert!(circles_of(src).is_empty(), "{:?}", circles_of(src));
}

/// The circles among the modules of the crate whose sources are in `src`, one line each.
fn circles_of(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    // Lifted edges: (from, to) siblings -> the first use seen.
    let mut edges: BTreeMap<(ModPath, ModPath), Evidence> = BTreeMap::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let here = module_of(src, file);
        for (inline, path) in paths_in(&text) {
            let mut current = here.clone();
            current.extend(inline.iter().cloned());
            let Some(target) = resolve(&current, &path, &modules) else {
                continue;
            };
            let Some(edge) = lift(&here, &target) else {
                continue;
            };
            edges.entry(edge).or_insert_with(|| Evidence {
                file: file.strip_prefix(src).unwrap_or(file).to_owned(),
                path: path.join("::"),
            });
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .map(|set| {
            let inside: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| set.contains(a) && set.contains(b))
                .map(|((a, b), e)| {
                    format!(
                        "{} -> {} ({}: {})",
                        name(a),
                        name(b),
                        e.file.display(),
                        e.path
                    )
                })
                .collect();
            inside.join("; ")
        })
        .collect()
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// The module a file is: `a/b.rs` and `a/b/mod.rs` are `a::b`, `lib.rs` and `main.rs` the root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    } else if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The module `path`, named in module `current`, refers to: the longest prefix of its
/// absolute form that is a file's module. `None` for another crate's path.
fn resolve(current: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut abs: ModPath = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("self" | "super") => current.clone(),
        Some(first) => {
            // A module declared beside the path (a child of `current`); else another crate's,
            // or an inline module of this very file.
            let mut child = current.clone();
            child.push(first.to_owned());
            if !modules.contains(&child) {
                return None;
            }
            current.clone()
        }
        None => return None,
    };
    let mut rest = path;
    if matches!(path.first().map(String::as_str), Some("crate" | "self")) {
        rest = &path[1..];
    }
    while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
        abs.pop()?;
        rest = tail;
    }
    abs.extend(rest.iter().cloned());
    // Longest prefix that is a file's module (items and inline modules live in their file).
    while !modules.contains(&abs) {
        abs.pop()?;
    }
    Some(abs)
}

/// The edge `from -> to` between the ancestors of each that are siblings, or `None` when one
/// contains the other.
fn lift(from: &ModPath, to: &ModPath) -> Option<(ModPath, ModPath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// Tarjan's strongly connected components with more than one member.
fn strongly_connected(edges: &BTreeMap<(ModPath, ModPath), Evidence>) -> Vec<BTreeSet<ModPath>> {
    let mut graph: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        graph.entry(a).or_default().push(b);
        graph.entry(b).or_default();
    }
    let nodes: Vec<&ModPath> = graph.keys().copied().collect();
    let mut index: BTreeMap<&ModPath, (usize, usize)> = BTreeMap::new();
    let mut stack: Vec<&ModPath> = Vec::new();
    let mut on_stack: BTreeSet<&ModPath> = BTreeSet::new();
    let mut out = Vec::new();
    let mut next = 0;
    // Iterative, with an explicit stack of (node, next neighbour to visit).
    for &start in &nodes {
        if index.contains_key(start) {
            continue;
        }
        let mut work: Vec<(&ModPath, usize)> = vec![(start, 0)];
        index.insert(start, (next, next));
        next += 1;
        stack.push(start);
        on_stack.insert(start);
        while let Some(&mut (node, ref mut at)) = work.last_mut() {
            let neighbours = &graph[node];
            if let Some(&to) = neighbours.get(*at) {
                *at += 1;
                if !index.contains_key(to) {
                    index.insert(to, (next, next));
                    next += 1;
                    stack.push(to);
                    on_stack.insert(to);
                    work.push((to, 0));
                } else if on_stack.contains(to) {
                    let low = index[to].0.min(index[node].1);
                    index.get_mut(node).expect("indexed").1 = low;
                }
                continue;
            }
            work.pop();
            let (own, low) = index[node];
            if let Some(&(parent, _)) = work.last() {
                let parent_low = index[parent].1.min(low);
                index.get_mut(parent).expect("indexed").1 = parent_low;
            }
            if own == low {
                let mut set = BTreeSet::new();
                while let Some(member) = stack.pop() {
                    on_stack.remove(member);
                    set.insert(member.clone());
                    if member == node {
                        break;
                    }
                }
                if set.len() > 1 {
                    out.push(set);
                }
            }
        }
    }
    out
}

/// A token of Rust source, as far as paths need: identifiers, `::`, and the punctuation that
/// shapes `use` trees and module bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Other,
}

/// Every path of ours `text` names, each with the inline modules (`mod tests { .. }`) it is
/// inside of. `use` trees are expanded to one path per leaf.
fn paths_in(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let toks = tokens(text);
    let mut out = Vec::new();
    // Inline modules open around this point, with the brace depth each closes at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Ident(kw) if kw == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    depth += 1;
                    inline.push((name.clone(), depth));
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(kw) if kw == "use" => {
                let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                let mut j = i + 1;
                let mut leaves = Vec::new();
                use_tree(&toks, &mut j, &mut Vec::new(), &mut leaves);
                out.extend(leaves.into_iter().map(|l| (names.clone(), l)));
                i = j;
                continue;
            }
            Tok::Ident(first) => {
                // A path in code: `a::b::c`, not preceded by `::` (its middle).
                let after_sep = i > 0 && toks[i - 1] == Tok::PathSep;
                if !after_sep && first != "$crate" && toks.get(i + 1) == Some(&Tok::PathSep) {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while toks.get(j) == Some(&Tok::PathSep) {
                        match toks.get(j + 1) {
                            Some(Tok::Ident(seg)) => path.push(seg.clone()),
                            _ => break,
                        }
                        j += 2;
                    }
                    let names = inline.iter().map(|(n, _)| n.clone()).collect();
                    out.push((names, path));
                    i = j;
                    continue;
                }
            }
            Tok::Open => depth += 1,
            Tok::Close => {
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads one `use` tree from `toks[*at]` on, pushing each leaf's full path onto `leaves`; stops
/// before the `,`, `}` or `;` that ends it.
fn use_tree(toks: &[Tok], at: &mut usize, prefix: &mut Vec<String>, leaves: &mut Vec<Vec<String>>) {
    let base = prefix.len();
    loop {
        match toks.get(*at) {
            // `x as y`: the alias is no path.
            Some(Tok::Ident(seg)) if seg == "as" => *at += 2,
            Some(Tok::Ident(seg)) => {
                // `a::{self, ..}` names `a` itself.
                if seg != "self" || prefix.is_empty() {
                    prefix.push(seg.clone());
                }
                *at += 1;
            }
            // `::`, or the `*` of a glob (whose leaf is the module before it).
            Some(Tok::PathSep | Tok::Other) => *at += 1,
            Some(Tok::Open) => {
                *at += 1;
                loop {
                    match toks.get(*at) {
                        Some(Tok::Close) => {
                            *at += 1;
                            break;
                        }
                        Some(Tok::Comma) => *at += 1,
                        Some(Tok::Semi) | None => break,
                        Some(_) => use_tree(toks, at, prefix, leaves),
                    }
                }
                prefix.truncate(base);
                return;
            }
            Some(Tok::Comma | Tok::Close | Tok::Semi) | None => {
                if prefix.len() > base {
                    leaves.push(prefix.clone());
                }
                prefix.truncate(base);
                return;
            }
        }
    }
}

/// Tokens of `text` with comments, strings and character literals left out.
fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut nest = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        nest += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        nest -= 1;
                        i += 2;
                        if nest == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'"' => {
                let end = skip_string(b, i + 1);
                // A string that is one path of ours names it for a macro
                // (`#[serde(with = "crate::ledger::sorted_map")]`): it counts as the path.
                let body = text.get(i + 1..end.saturating_sub(1)).unwrap_or_default();
                let segs: Vec<&str> = body.split("::").collect();
                let ours = matches!(segs[0], "crate" | "self" | "super") && segs.len() > 1;
                if ours && segs.iter().all(|s| is_ident(s)) {
                    for (k, seg) in segs.iter().enumerate() {
                        if k > 0 {
                            out.push(Tok::PathSep);
                        }
                        out.push(Tok::Ident((*seg).to_owned()));
                    }
                    // Ended, as a path in code is, by what cannot continue it.
                    out.push(Tok::Other);
                }
                i = end;
            }
            b'b' if b.get(i + 1) == Some(&b'"') => i = skip_string(b, i + 2),
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    let len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if b.get(i + 1 + len) == Some(&b'\'') {
                        i += 2 + len;
                    } else {
                        i += 1;
                        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                            i += 1;
                        }
                    }
                }
            }
            b':' if b.get(i + 1) == Some(&b':') => {
                out.push(Tok::PathSep);
                i += 2;
            }
            b'{' | b'}' | b',' | b';' => {
                out.push(match b[i] {
                    b'{' => Tok::Open,
                    b'}' => Tok::Close,
                    b',' => Tok::Comma,
                    _ => Tok::Semi,
                });
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                let start = i;
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &text[start..i];
                if let ("r" | "br", Some(hashes)) = (word, raw_string_hashes(b, i)) {
                    // A raw string: skip to its closing quote and as many `#`.
                    let mut close = vec![b'"'];
                    close.extend(std::iter::repeat_n(b'#', hashes));
                    i += hashes + 1;
                    while i < b.len() && !b[i..].starts_with(&close) {
                        i += 1;
                    }
                    i += close.len();
                } else if word == "r" && b.get(i) == Some(&b'#') {
                    // `r#ident` is `ident`: the next word is pushed as it is.
                    i += 1;
                } else {
                    out.push(Tok::Ident(word.to_owned()));
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                out.push(Tok::Other);
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The index after the string whose body starts at `i`.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// After an `r` or `br` ending at `i`: how many `#` open the raw string there, if one does.
fn raw_string_hashes(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some(j - i)
}
