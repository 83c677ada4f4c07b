//! Runs `phux-conformance probe` on a real PTY and reads its reports.
//!
//! Every wait polls the master (or the pidfd) with a generous deadline: a loaded 2-core
//! machine may take seconds to schedule the probe, and no test sleeps for a fixed time.

#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use phux_mio_server::child::{ChildExit, GroupSignal, PtyChild, SpawnSpec, spawn};
use phux_mio_server::pty::{PtyRead, PtyWrite};
use rustix::event::{PollFd, PollFlags, Timespec};

/// How long any single expectation may take.
pub const DEADLINE: Duration = Duration::from_secs(30);

pub struct Probe {
    pub child: PtyChild,
    /// Every byte the terminal showed.
    pub output: Vec<u8>,
    /// How much of `output` has been split into lines.
    parsed: usize,
    /// Reports not yet taken, in order: (seq, body).
    queue: Vec<(u64, String)>,
    next_seq: u64,
}

impl Probe {
    /// The spec of a plain probe: `<exe> probe`, the inherited environment.
    pub fn spec() -> SpawnSpec {
        SpawnSpec::new(env!("CARGO_BIN_EXE_phux-conformance")).args(["probe"])
    }

    /// Spawns the probe and waits for `PROBE 0 READY`.
    pub fn spawn() -> Self {
        Self::spawn_with(&Self::spec())
    }

    /// Spawns the probe from `spec` and waits for `PROBE 0 READY`.
    pub fn spawn_with(spec: &SpawnSpec) -> Self {
        let child = spawn(spec).expect("spawn the probe on a PTY");
        let mut probe = Self {
            child,
            output: Vec::new(),
            parsed: 0,
            queue: Vec::new(),
            next_seq: 0,
        };
        probe.expect("READY");
        probe
    }

    /// Writes all of `bytes` to the terminal's input.
    pub fn send(&mut self, bytes: &[u8]) {
        let deadline = Instant::now() + DEADLINE;
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.child.write(rest).expect("write to the master") {
                PtyWrite::Written(n) => rest = &rest[n..],
                PtyWrite::WouldBlock => {
                    assert!(Instant::now() < deadline, "the probe stopped reading");
                    self.pump(PollFlags::OUT);
                }
                PtyWrite::Gone => panic!("the terminal hung up"),
            }
        }
    }

    /// Writes what the terminal accepts without blocking, up to `limit` bytes of `byte`;
    /// returns how many it took before it refused more.
    pub fn fill(&mut self, byte: u8, limit: usize) -> usize {
        let chunk = vec![byte; 4096];
        let mut total = 0;
        while total < limit {
            let want = chunk.len().min(limit - total);
            match self
                .child
                .write(&chunk[..want])
                .expect("write to the master")
            {
                PtyWrite::Written(n) => total += n,
                PtyWrite::WouldBlock => break,
                PtyWrite::Gone => panic!("the terminal hung up"),
            }
        }
        total
    }

    pub fn signal(&self, sig: GroupSignal) {
        self.child.signal_group(sig).expect("signal the group");
    }

    /// The next report's body, which must carry the next sequence number.
    pub fn next(&mut self) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if !self.queue.is_empty() {
                let (seq, body) = self.queue.remove(0);
                assert_eq!(seq, self.next_seq, "report sequence ({body})");
                self.next_seq += 1;
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "no report within {DEADLINE:?}; output so far: {:?}",
                String::from_utf8_lossy(&self.output)
            );
            self.pump(PollFlags::IN);
        }
    }

    /// The next report must be exactly `body`.
    pub fn expect(&mut self, body: &str) {
        assert_eq!(self.next(), body);
    }

    /// Sends one command line (with LF) and returns the report it got.
    pub fn command(&mut self, line: &str) -> String {
        self.send(format!("{line}\n").as_bytes());
        self.next()
    }

    /// Collects READ reports until they carry `len` payload bytes; returns the joined hex.
    pub fn read_payload(&mut self, len: usize) -> String {
        let mut hex = String::new();
        while hex.len() < len * 2 {
            let body = self.next();
            let part = body
                .strip_prefix("READ ")
                .unwrap_or_else(|| panic!("expected READ, got {body}"));
            hex.push_str(part);
        }
        assert_eq!(hex.len(), len * 2, "more payload than sent: {hex}");
        hex
    }

    /// Waits for the child to exit, reading its output meanwhile.
    pub fn wait_exit(&mut self) -> ChildExit {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(exit) = self.child.try_wait().expect("waitid") {
                return exit;
            }
            assert!(Instant::now() < deadline, "the probe did not exit");
            let pidfd = self.child.pidfd();
            let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&timeout(100)));
            self.drain();
        }
    }

    /// Waits up to 100 ms for `flags` on the master, then reads what is there.
    fn pump(&mut self, flags: PollFlags) {
        if let Some(master) = self.child.master_fd() {
            let mut fds = [PollFd::new(&master, flags | PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&timeout(100)));
        }
        self.drain();
    }

    fn drain(&mut self) {
        let mut buf = [0u8; 8192];
        while let Ok(PtyRead::Data(n)) = self.child.read(&mut buf) {
            self.output.extend_from_slice(&buf[..n]);
        }
        // Reports are "\r\nPROBE <seq> <body>\r\n"; anything else (echo) is not a report.
        while let Some(end) = find(&self.output[self.parsed..], b"\r\n") {
            let line = &self.output[self.parsed..self.parsed + end];
            if let Some(rest) = line.strip_prefix(b"PROBE ") {
                let text = String::from_utf8_lossy(rest).into_owned();
                let (seq, body) = text.split_once(' ').expect("PROBE <seq> <body>");
                self.queue
                    .push((seq.parse().expect("decimal seq"), body.to_owned()));
            }
            self.parsed += end + 2;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn timeout(ms: u64) -> Timespec {
    Timespec::try_from(Duration::from_millis(ms)).expect("small timeout")
}
