//! `phux-conformance`: tools for checking a phux 0.8 server. Today: `wire`, which converts
//! frames between wire bytes and the text notation the transcripts use.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod wire;

/// Conformance tooling for the phux 0.8 terminal protocol.
///
/// Frames are written in the phux-proto text notation, for example
/// `PING{nonce=0xdeadbeefcafef00d}` or
/// `COMMAND{request_id=1 command=ATTACH_TERMINAL{terminal=local:3}}`.
#[derive(Debug, Parser)]
#[command(name = "phux-conformance", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert one frame between wire bytes (hex) and the text notation.
    #[command(subcommand)]
    Wire(wire::WireCommand),
    /// Run the probe child on this terminal (what transcripts spawn; see `probe` module docs).
    Probe(phux_conformance::probe::ProbeArgs),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Wire(command) => wire::run(&command),
        Command::Probe(args) => phux_conformance::probe::run(&args),
    }
}
