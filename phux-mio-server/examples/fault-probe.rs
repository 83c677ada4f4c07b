//! The probe child of the fault tests (`tests/it/support/faults.rs`): `fault-probe probe` is
//! `phux-conformance probe`, the same code (`phux_probe::run`), built by
//! `cargo test -p phux-mio-server` with the tests so they need not invoke cargo to build
//! another package's binary. The probe starts its grandchild as `<this exe> probe --grandchild`,
//! which lands here too.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use phux_probe::ProbeArgs;

/// Only the conformance tool's `probe` command.
#[derive(Debug, Parser)]
#[command(name = "fault-probe")]
enum Cli {
    /// Run the probe child on this terminal.
    Probe(ProbeArgs),
}

fn main() -> ExitCode {
    let Cli::Probe(args) = Cli::parse();
    phux_probe::run(&args)
}
