//! The program the screen differential runs inside each terminal (`phux-conformance show
//! FILE`): it writes the file to its terminal exactly, with output processing off (a stream's
//! LF must reach the terminal as LF, not CR LF), then waits to be killed, so the terminal and
//! its screen stay until they have been read.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use rustix::termios::{OptionalActions, OutputModes};

/// Writes `file` to standard output (the terminal) with OPOST off, then sleeps until killed.
/// Exits 1, saying why on standard error, when the file cannot be read or written.
pub fn run(file: &Path) -> ExitCode {
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("phux-conformance show: {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    let stdout = std::io::stdout();
    if let Ok(mut termios) = rustix::termios::tcgetattr(&stdout) {
        termios.output_modes.remove(OutputModes::OPOST);
        if let Err(e) = rustix::termios::tcsetattr(&stdout, OptionalActions::Now, &termios) {
            eprintln!("phux-conformance show: turning output processing off: {e}");
            return ExitCode::FAILURE;
        }
    }
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
        eprintln!("phux-conformance show: writing to the terminal: {e}");
        return ExitCode::FAILURE;
    }
    drop(out);
    // Until the terminal is killed (a spurious wake-up parks again).
    loop {
        std::thread::park();
    }
}
