//! Helpers shared by the fault-injection tests: a server launcher that can restart on the same
//! socket path and raise its descriptor limit, memory readings from /proc, a seeded RNG, the
//! probe child, and frame helpers for raw sockets. Figures go to stdout with `println!` so
//! `cargo test -- --nocapture` shows them.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{ClientCapabilities, CommandFrame, Hello, ProtocolVersion};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};

pub(crate) use super::launch::Nofile;

/// Generous on purpose: a loaded 2-core machine can take seconds to schedule anything.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// A server process on a socket path the test chooses, so a second incarnation can take over
/// the same path after the first one exits.
pub(crate) struct ServerProc {
    pub(crate) process: Child,
}

impl ServerProc {
    /// Starts the server on `socket` and waits for its ready line.
    pub(crate) fn start(socket: &Path) -> Self {
        Self::start_with(socket, None, &[])
    }

    /// Like [`Self::start`], under the descriptor limits `nofile` and with `args` after the
    /// usual ones.
    pub(crate) fn start_with(socket: &Path, nofile: Option<Nofile>, args: &[&str]) -> Self {
        // FAULT_SERVER_LOG=info (or debug) shows what the server did when a test fails.
        let log = std::env::var("FAULT_SERVER_LOG").unwrap_or_else(|_| "error".to_owned());
        Self {
            process: super::client::launch_server_with(socket, nofile, &log, args),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.id()
    }

    /// Whether the process is still running (not exited, not a zombie).
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(None))
    }

    /// The server's resident set size in KiB.
    pub(crate) fn rss_kib(&self) -> u64 {
        vm_rss_kib(self.pid()).expect("server VmRSS")
    }

    /// SIGTERM, then waits for the exit; the exit code.
    pub(crate) fn terminate(&mut self) -> Option<i32> {
        let pid =
            rustix::process::Pid::from_raw(i32::try_from(self.pid()).expect("pid")).expect("pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        super::client::wait_exit(&mut self.process, "server did not exit after SIGTERM")
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// `VmRSS` of a process from /proc, in KiB.
pub(crate) fn vm_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// `VmHWM`, the peak resident set size of a process, in KiB: what it held at its worst,
/// however briefly, without sampling.
pub(crate) fn vm_hwm_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A scratch directory created 0700 (the server refuses a socket directory others can write).
pub(crate) fn private_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .expect("tempdir")
}

/// Raises this process's soft descriptor limit to at least `want` (bounded by the hard limit);
/// the limit now in force.
pub(crate) fn raise_nofile(want: u64) -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if current >= want {
        return current;
    }
    let target = limit.maximum.map_or(want, |max| max.min(want));
    limit.current = Some(target);
    setrlimit(Resource::Nofile, limit).expect("setrlimit NOFILE");
    target
}

/// The run's seed: `FAULT_SEED` when set (decimal), else `default`. Printed by each test so a
/// failing run can be replayed.
pub(crate) fn seed(default: u64) -> u64 {
    std::env::var("FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// splitmix64: a small seeded RNG, so a failing run can be replayed from its printed seed.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub(crate) fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    pub(crate) fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    /// A fresh nonzero operation id.
    pub(crate) fn operation_id(&mut self) -> OperationId {
        loop {
            let id = (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64());
            if let Some(op) = OperationId::from_u128(id) {
                return op;
            }
        }
    }
}

/// The probe child: the `fault-probe` example of this package, a `phux-conformance probe` with
/// the probe crate's code (`phux_probe::run`). `cargo test` builds a package's examples before
/// it runs its tests, so nothing here invokes cargo; the example sits in
/// `<target>/<profile>/examples/`, beside the `deps/` directory this test binary runs from.
/// Panics, saying how to build it, when it is missing.
pub(crate) fn probe_binary() -> PathBuf {
    super::launch::example("fault-probe", "phux-mio-server")
}

/// HELLO with the default capabilities.
pub(crate) fn hello_frame() -> Frame {
    Frame::Hello(Hello {
        client_name: "phux-fault-tests".to_owned(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
}

/// An APPLY_INPUT COMMAND with one trusted paste.
pub(crate) fn paste_command(
    request_id: u32,
    op: OperationId,
    terminal: &TerminalId,
    data: Vec<u8>,
) -> Frame {
    Frame::Command(CommandFrame {
        request_id,
        command: Command::ApplyInput(ApplyInput {
            operation_id: op,
            terminal: terminal.clone(),
            events: vec![InputEvent::Paste(PasteEvent {
                trust: PasteTrust::Trusted,
                data,
            })],
        }),
    })
}

/// A blocking socket that frames what it reads, for tests that must not keep every frame in
/// memory (the slow-consumer test reads hundreds of MiB).
pub(crate) struct FrameStream {
    pub(crate) stream: UnixStream,
    buf: Vec<u8>,
    start: usize,
    chunk: Vec<u8>,
    pub(crate) eof: bool,
}

impl FrameStream {
    pub(crate) fn connect(path: &Path) -> Self {
        Self::new(UnixStream::connect(path).expect("connect"))
    }

    pub(crate) fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            start: 0,
            chunk: vec![0; 64 * 1024],
            eof: false,
        }
    }

    pub(crate) fn send(&mut self, frame: &Frame) {
        self.stream.write_all(&frame.to_bytes()).expect("send");
    }

    /// The next frame, or `None` at end of stream or once `end` passes.
    pub(crate) fn recv(&mut self, end: Instant) -> Option<Frame> {
        loop {
            let pending = self.buf.get(self.start..).unwrap_or_default();
            if let Some(len) = pending.first_chunk::<4>().map(|b| u32::from_be_bytes(*b)) {
                let total = 4 + len as usize;
                if pending.len() >= total {
                    let frame =
                        Frame::decode(&pending[..total]).expect("server sent an undecodable frame");
                    self.start += total;
                    return Some(frame);
                }
            }
            if self.eof {
                return None;
            }
            // Compact before reading so the buffer holds at most one frame plus one read.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            self.stream
                .set_read_timeout(Some((end - now).max(Duration::from_millis(1))))
                .expect("timeout");
            match self.stream.read(&mut self.chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.buf.extend_from_slice(&self.chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None;
                }
                Err(_) => self.eof = true,
            }
        }
    }

    /// Reads frames until `pick` returns something; panics on deadline or end of stream.
    pub(crate) fn wait_for<T>(
        &mut self,
        what: &str,
        mut pick: impl FnMut(&Frame) -> Option<T>,
    ) -> T {
        let end = Instant::now() + DEADLINE;
        loop {
            match self.recv(end) {
                Some(frame) => {
                    if let Some(found) = pick(&frame) {
                        return found;
                    }
                }
                None => panic!("no {what} (eof: {})", self.eof),
            }
        }
    }
}

/// Polls `cond` every few milliseconds until it holds; false on deadline.
pub(crate) fn eventually(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// p50 and max of a set of durations.
pub(crate) fn p50_max(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let p50 = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
    let max = sorted.last().copied().unwrap_or_default();
    (p50, max)
}
