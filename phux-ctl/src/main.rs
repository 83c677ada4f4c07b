//! `phuxctl`: the command-line client for phux-mio-server (see `phuxctl --help`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    phux_ctl::run(phux_ctl::cli::parse())
}
