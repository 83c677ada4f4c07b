//! phuxctl, built by `cargo test -p phux-web` for the browser tests (spawning the recording
//! program, `phuxctl upgrade`).

#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    phux_ctl::run(phux_ctl::cli::parse())
}
