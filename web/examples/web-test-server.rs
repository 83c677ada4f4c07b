//! The real server, built by `cargo test -p phux-web` (which builds a package's examples
//! before its tests) so the browser tests start it without invoking cargo.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    phux_mio_server::run::main(std::env::args_os())
}
