//! `phux-mio-server`: the phux reference server on real PTYs.

use std::process::ExitCode;

fn main() -> ExitCode {
    phux_mio_server::run::main(std::env::args_os())
}
