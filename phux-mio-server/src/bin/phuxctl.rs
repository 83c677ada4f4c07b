//! `phuxctl`: the command-line client for phux-mio-server (see `phuxctl --help`).

use std::process::ExitCode;

use clap::Parser;
use phux_mio_server::ctl::{self, cli::Cli};

fn main() -> ExitCode {
    ctl::run(Cli::parse())
}
