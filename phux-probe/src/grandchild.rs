//! The grandchild: a process in the probe's process group that reports the signals it gets.
//!
//! It talks to the probe over pipes, one line per event (`READY`, `SIGNAL <SIG>`), and the
//! probe relays each as a report of its own: one writer on the terminal keeps reports whole
//! and in one sequence. Its stdin is a pipe from the probe, so it exits as soon as the probe
//! is gone, whatever killed the probe: no orphan outlives a test.

use std::io::{Read as _, Write as _};
use std::process::ExitCode;

use signal_hook::iterator::Signals;

use crate::machine::GrandchildEvent;
use crate::signal::ProbeSignal;

/// A grandchild line longer than this is noise, not a report: it is dropped.
const MAX_GRANDCHILD_LINE: usize = 64;

/// Splits the grandchild's output into lines, across reads.
#[derive(Debug, Default)]
pub(crate) struct LineSplitter {
    partial: Vec<u8>,
    overlong: bool,
}

impl LineSplitter {
    /// Feeds one read; returns the events of the lines it completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<GrandchildEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            if b == b'\n' {
                if !std::mem::take(&mut self.overlong) {
                    events.extend(GrandchildEvent::parse_line(&self.partial));
                }
                self.partial.clear();
            } else if self.partial.len() < MAX_GRANDCHILD_LINE {
                self.partial.push(b);
            } else {
                self.overlong = true;
            }
        }
        events
    }
}

/// `phux-conformance probe --grandchild`: catch the probe's signals, report each on stdout,
/// exit when stdin ends.
pub(crate) fn run() -> ExitCode {
    let Ok(mut signals) = Signals::new(ProbeSignal::ALL.map(raw_signal)) else {
        return ExitCode::FAILURE;
    };
    let mut stdout = std::io::stdout().lock();
    // READY only once the handlers are in place: a signal sent after it is never lost.
    if writeln!(stdout, "READY")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    // The probe holds the other end of stdin: end of input means the probe is gone.
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin();
        let mut sink = [0u8; 64];
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => std::process::exit(0),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => std::process::exit(0),
            }
        }
    });
    for raw in signals.forever() {
        let Some(sig) = from_raw_signal(raw) else {
            continue;
        };
        if writeln!(stdout, "SIGNAL {}", sig.name())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// The signal's number on this OS.
pub(crate) fn raw_signal(sig: ProbeSignal) -> i32 {
    use signal_hook::consts::signal as s;
    match sig {
        ProbeSignal::Int => s::SIGINT,
        ProbeSignal::Term => s::SIGTERM,
        ProbeSignal::Hup => s::SIGHUP,
        ProbeSignal::Usr1 => s::SIGUSR1,
        ProbeSignal::Usr2 => s::SIGUSR2,
        ProbeSignal::Cont => s::SIGCONT,
        ProbeSignal::Winch => s::SIGWINCH,
    }
}

/// The probe signal with this number, if it is one.
pub(crate) fn from_raw_signal(raw: i32) -> Option<ProbeSignal> {
    ProbeSignal::ALL.into_iter().find(|&s| raw_signal(s) == raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_across_reads_and_junk_is_dropped() {
        let mut lines = LineSplitter::default();
        assert_eq!(lines.push(b"REA"), vec![]);
        assert_eq!(
            lines.push(b"DY\nSIGNAL INT\nSIG"),
            vec![
                GrandchildEvent::Ready,
                GrandchildEvent::Signal(ProbeSignal::Int)
            ]
        );
        assert_eq!(
            lines.push(b"NAL CONT\nhello\nSIGNAL KILL\n"),
            vec![GrandchildEvent::Signal(ProbeSignal::Cont)]
        );
        // An overlong line is dropped whole, even if its tail looks like a report.
        let mut long = vec![b'x'; 100];
        long.extend_from_slice(b"READY\nREADY\n");
        assert_eq!(lines.push(&long), vec![GrandchildEvent::Ready]);
    }
}
