//! `phux-mio-server`: the phux reference server on real PTYs.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    phux_mio_server::run::main(std::env::args_os())
}
