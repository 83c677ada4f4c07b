//! The raw-mode program of the key tests (`tests/it/ctl_keys_tmux.rs`): it reads its
//! terminal as a full-screen program does and appends every byte it reads to a log, so a test
//! can compare what a program reads under tmux directly with what it reads under phux.
//!
//! `key-recorder LOG [SETUP_HEX]`: puts stdin's terminal in raw mode, writes the bytes of
//! SETUP_HEX (the modes a program asks its terminal for, e.g. `1b5b3f3168` for DECCKM), then
//! `ready` and a line end, and appends what it reads to LOG until the terminal closes.

#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(log) = args.next() else {
        eprintln!("usage: key-recorder LOG [SETUP_HEX]");
        return ExitCode::from(2);
    };
    let setup = match args.next().map(|hex| unhex(&hex)) {
        None => Vec::new(),
        Some(Some(bytes)) => bytes,
        Some(None) => {
            eprintln!("key-recorder: SETUP_HEX is not hex");
            return ExitCode::from(2);
        }
    };
    match run(&log, &setup) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("key-recorder: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(log: &str, setup: &[u8]) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut termios = rustix::termios::tcgetattr(&stdin)?;
    termios.make_raw();
    rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &termios)?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let mut out = std::io::stdout();
    out.write_all(setup)?;
    out.write_all(b"ready\r\n")?;
    out.flush()?;
    let mut buf = [0u8; 4096];
    loop {
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => log.write_all(&buf[..n])?,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            // The terminal hung up: the test is over.
            Err(rustix::io::Errno::IO) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}
