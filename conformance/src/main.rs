//! `phux-conformance`: the wire CLI, and later the conformance runner.

fn main() {
    eprintln!("phux-conformance: not built yet");
    std::process::exit(2);
}
