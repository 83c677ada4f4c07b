//! `phuxctl`: the command-line client for phux-mio-server (see `phuxctl --help`).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use phux_ctl::cli::Cli;

fn main() -> ExitCode {
    phux_ctl::run(Cli::parse())
}
