//! The real phux server (`phux_mio_server::run::main`) as an example of this package, so that
//! `cargo test -p phux-conformance`, which builds a package's examples before its tests, gives
//! the integration tests a current server binary without any test invoking cargo. The tests find
//! it at `<target>/<profile>/examples/conformance-test-server`.

use std::process::ExitCode;

fn main() -> ExitCode {
    phux_mio_server::run::main(std::env::args_os())
}
