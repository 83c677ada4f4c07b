//! The text every contender's child writes, and the child roles that write it.
//!
//! The writer is this very binary run as `phux-bench __writer`, so each contender (the
//! direct PTY drain, the phux server, tmux, dtach) receives exactly the same bytes and the
//! receiver knows how many to expect.

use std::io::Read;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::termios::{LocalModes, OptionalActions};

use crate::error::{Context, Result};
use crate::roles::wait_readable;

/// Printable columns per line; a newline follows, so each line is 80 bytes written.
pub const LINE_TEXT: usize = 79;
/// Bytes the child writes per line.
pub const LINE_BYTES: usize = LINE_TEXT + 1;
/// Bytes per line on the master: the line discipline turns LF into CR LF (ONLCR).
pub const LINE_ON_MASTER: u64 = LINE_BYTES as u64 + 1;
/// Lines per write: 819 lines are 65,520 bytes, one write a little under 64 KiB.
pub const LINES_PER_WRITE: usize = 819;
/// What the writer prints once its terminal no longer echoes, so the go line stays silent.
pub const READY: &[u8] = b"PHUX-BENCH-READY";
/// What the writer prints after its payload when asked to: a receiver that is sent a redrawn
/// screen rather than the stream knows by it that every line before it went through.
pub const END: &[u8] = b"PHUX-BENCH-END";

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The text of line `i` (without its newline): a line number and a rotating alphabet, so
/// neighbouring lines differ and a screen shows which line came last.
pub fn line_text(i: usize) -> [u8; LINE_TEXT] {
    let mut line = [b' '; LINE_TEXT];
    let slot = i % LINES_PER_WRITE;
    let head = format!("{slot:04}:");
    line[..head.len()].copy_from_slice(head.as_bytes());
    for (k, c) in line.iter_mut().enumerate().skip(head.len()) {
        *c = ALPHABET[(slot + k) % ALPHABET.len()];
    }
    line
}

/// How many lines a request for `bytes` writes (at least one).
pub fn lines_for(bytes: u64) -> u64 {
    (bytes / LINE_BYTES as u64).max(1)
}

/// The bytes a receiver of the master gets for `lines` lines.
pub fn master_bytes(lines: u64) -> u64 {
    lines * LINE_ON_MASTER
}

/// Turns the terminal's echo off so the go line does not show up in the output.
fn silence_echo() -> Result<()> {
    let stdin = rustix::stdio::stdin();
    let mut t = rustix::termios::tcgetattr(stdin).context("tcgetattr on the writer's stdin")?;
    t.local_modes.remove(LocalModes::ECHO);
    rustix::termios::tcsetattr(stdin, OptionalActions::Now, &t)
        .context("tcsetattr on the writer's stdin")
}

/// How long a holding writer waits for its release before exiting anyway: far longer than
/// any receiver takes, short enough that a receiver that died leaves nothing running for long.
const HOLD_BOUND: Duration = Duration::from_mins(1);

/// Blocks until a line (or end of input) arrives on stdin.
fn wait_line() {
    wait_line_within(None);
}

/// Blocks until a line (or end of input) arrives on stdin, or `bound` passes.
fn wait_line_within(bound: Option<Duration>) {
    let end = bound.map(|b| Instant::now() + b);
    let mut byte = [0u8; 1];
    let mut stdin = std::io::stdin().lock();
    loop {
        if let Some(end) = end {
            let left = end.saturating_duration_since(Instant::now());
            if !matches!(wait_readable(rustix::stdio::stdin(), left), Ok(true)) {
                return;
            }
        }
        match stdin.read(&mut byte) {
            Ok(0) | Err(_) => return,
            Ok(_) if byte[0] == b'\n' || byte[0] == b'\r' => return,
            Ok(_) => {}
        }
    }
}

/// Writes all of `buf` to fd 1 unbuffered (std's stdout is line-buffered).
fn write_all_stdout(mut buf: &[u8]) -> Result<()> {
    let stdout = rustix::stdio::stdout();
    while !buf.is_empty() {
        match rustix::io::write(stdout.as_fd(), buf) {
            Ok(n) => buf = buf.get(n..).unwrap_or_default(),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e).context("writing the payload"),
        }
    }
    Ok(())
}

/// `__writer`: silence echo, print [`READY`], wait for a line, write `lines` lines, (with
/// `end_marker`) print [`END`], and (with `hold`) wait for one more line (at most
/// [`HOLD_BOUND`]) before exiting.
pub fn writer(lines: u64, hold: bool, end_marker: bool) -> Result<()> {
    silence_echo()?;
    write_all_stdout(READY)?;
    write_all_stdout(b"\n")?;
    wait_line();
    let mut chunk = Vec::with_capacity(LINES_PER_WRITE * LINE_BYTES);
    for i in 0..LINES_PER_WRITE {
        chunk.extend_from_slice(&line_text(i));
        chunk.push(b'\n');
    }
    let mut left = lines;
    while left > 0 {
        let n = left.min(LINES_PER_WRITE as u64);
        write_all_stdout(chunk.get(..n as usize * LINE_BYTES).unwrap_or_default())?;
        left -= n;
    }
    if end_marker {
        write_all_stdout(&[END, b"\n"].concat())?;
    }
    if hold {
        wait_line_within(Some(HOLD_BOUND));
    }
    Ok(())
}

/// `__stream`: silence echo, wait for a line, then write about `rate` bytes per second in
/// bursts every 40 ms, forever (the server kills it).
pub fn stream(rate: u64) -> Result<()> {
    silence_echo()?;
    wait_line();
    const TICK: Duration = Duration::from_millis(40);
    let per_tick = (rate as f64 * TICK.as_secs_f64()) as usize;
    let lines = per_tick.div_ceil(LINE_BYTES).max(1);
    let mut burst = Vec::with_capacity(lines * LINE_BYTES);
    for i in 0..lines {
        burst.extend_from_slice(&line_text(i));
        burst.push(b'\n');
    }
    let mut next = Instant::now();
    loop {
        write_all_stdout(&burst)?;
        next += TICK;
        let now = Instant::now();
        // After a stop (SIGSTOP) or a slow write, carry on at the rate instead of catching up
        // in one flood.
        if next < now {
            next = now;
        }
        std::thread::sleep(next.saturating_duration_since(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_printable_distinct_and_json_safe() {
        let a = line_text(0);
        let b = line_text(1);
        assert_ne!(a, b);
        assert!(a.iter().all(|c| c.is_ascii_alphanumeric() || *c == b':'));
        assert_eq!(
            line_text(LINES_PER_WRITE),
            a,
            "the pattern repeats per write"
        );
        assert!(String::from_utf8_lossy(&line_text(818)).starts_with("0818:"));
    }

    #[test]
    fn master_byte_count_adds_a_cr_per_line() {
        assert_eq!(lines_for(256 << 20), (256 << 20) / 80);
        assert_eq!(lines_for(1), 1);
        assert_eq!(master_bytes(10), 810);
        assert_eq!(LINES_PER_WRITE * LINE_BYTES, 65_520);
    }
}
