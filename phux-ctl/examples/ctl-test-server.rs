//! The real server, built by `cargo test -p phux-ctl` (which builds a package's examples before
//! it runs its tests) so the integration tests can start it without invoking cargo; see
//! `tests/it/support/mod.rs`.

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    phux_mio_server::run::main(std::env::args_os())
}
