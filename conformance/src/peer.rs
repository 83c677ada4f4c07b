//! Live phux servers for differential checks: the phux reference or ours, each started on a
//! socket in a scratch directory with a HOME and XDG directories of its own, ended when dropped,
//! and a blocking [`Client`] to talk to it.
//!
//! The reference is an external binary, never part of this repository: [`reference_binary`]
//! takes it from `PHUX_REF_BIN`, else from `../shared/interop/phux-0.22.0/phux` beside the
//! workspace when that file exists. A test without it skips through `phux_testkit::skip!`
//! (recorded, so CI lists it):
//!
//! ```no_run
//! use phux_conformance::peer::{PeerError, Server};
//!
//! let reference = match Server::reference() {
//!     Ok(server) => server,
//!     Err(PeerError::NoReference) => return, // a test records the skip here
//!     Err(e) => panic!("the phux reference did not start: {e}"),
//! };
//! let mut client = reference.client().expect("HELLO");
//! assert_eq!(client.hello_ok().server_id.len(), 16);
//! ```
//!
//! [`Server::start_ours`] starts a `phux-mio-server` binary the same way, so one tool can put
//! the same frames to both and compare what comes back.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use phux_core::framing::FrameDecoder;
use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{CommandFrame, HelloOk, SpawnResult, SpawnTerminal, TerminalSize};
use phux_proto::{DecodeError, Frame, GroupId, TerminalId};

/// The variable naming the phux reference binary.
pub const REFERENCE_ENV: &str = phux_testkit::REF_BIN_VAR;

/// Where the reference is looked for when [`REFERENCE_ENV`] is unset, relative to the
/// workspace root (the interop peers sit beside a checkout, never inside it).
pub const REFERENCE_DEFAULT: &str = phux_testkit::REF_BIN_DEFAULT;

/// How long starting a server, a HELLO or a command may take. Generous: a loaded 2-core
/// machine can take seconds to schedule a freshly started process.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// Why a server could not be started or talked to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// No reference binary: the variable is unset and the default path holds nothing.
    #[error(
        "no phux reference binary: set {REFERENCE_ENV} (default {REFERENCE_DEFAULT} beside the \
         workspace)"
    )]
    NoReference,
    /// An I/O error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The server's bytes do not decode.
    #[error("the server sent bytes that do not decode: {0}")]
    Decode(#[from] DecodeError),
    /// The server closed the connection.
    #[error("the server closed the connection")]
    Closed,
    /// Nothing came within the deadline.
    #[error("no {0} within {DEADLINE:?}")]
    Timeout(&'static str),
    /// The server process ended, or never listened.
    #[error("the {name} server {what}; its log: {log}")]
    ServerDown {
        /// Which server.
        name: &'static str,
        /// What went wrong.
        what: String,
        /// The end of what it wrote.
        log: String,
    },
    /// The server answered something the client did not expect.
    #[error("unexpected answer: {0}")]
    Unexpected(String),
}

impl PeerError {
    fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// The phux reference binary: `PHUX_REF_BIN` when set (even if it names nothing, so that a
/// typo is reported rather than skipped), else [`REFERENCE_DEFAULT`] when that file exists
/// (one place decides: `phux_testkit::reference_bin`).
pub fn reference_binary() -> Option<PathBuf> {
    phux_testkit::reference_bin().ok()
}

/// A phux server process on a socket of its own, killed and reaped on drop; its scratch
/// directory (socket, HOME, XDG directories, log) is removed with it.
#[derive(Debug)]
pub struct Server {
    name: &'static str,
    process: Child,
    socket: PathBuf,
    log: PathBuf,
    // Dropped after the process is reaped (fields drop in order, after `Drop::drop`).
    scratch: tempfile::TempDir,
}

impl Server {
    /// The phux reference, if its binary is there ([`reference_binary`]).
    pub fn reference() -> Result<Self, PeerError> {
        let bin = reference_binary().ok_or(PeerError::NoReference)?;
        Self::start_reference(&bin)
    }

    /// The phux reference for a test: `None` once the skip is recorded when its binary is
    /// absent (the test returns then); any other failure to start it fails the test.
    #[allow(clippy::panic)]
    pub fn reference_or_skip() -> Option<Self> {
        match Self::reference() {
            Ok(server) => Some(server),
            Err(e @ PeerError::NoReference) => {
                phux_testkit::skip!("{e}");
                None
            }
            Err(e) => panic!("the phux reference did not start: {e}"),
        }
    }

    /// `bin server --socket S`: the phux reference CLI's server.
    pub fn start_reference(bin: &Path) -> Result<Self, PeerError> {
        Self::start("reference", bin, |socket| {
            vec!["server".into(), "--socket".into(), socket.into()]
        })
    }

    /// `bin --socket S --log-level error --shell /bin/sh`: our `phux-mio-server`.
    pub fn start_ours(bin: &Path) -> Result<Self, PeerError> {
        Self::start("phux-mio-server", bin, |socket| {
            vec![
                "--socket".into(),
                socket.into(),
                "--log-level".into(),
                "error".into(),
                "--shell".into(),
                "/bin/sh".into(),
            ]
        })
    }

    fn start(
        name: &'static str,
        bin: &Path,
        args: impl FnOnce(&Path) -> Vec<std::ffi::OsString>,
    ) -> Result<Self, PeerError> {
        let scratch = tempfile::Builder::new()
            .prefix("phux-peer-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| PeerError::io("create a scratch directory", e))?;
        let dir = scratch.path();
        let run = dir.join("run");
        for sub in ["run", "config", "state", "data", "cache"] {
            let path = dir.join(sub);
            std::fs::create_dir(&path).map_err(|e| PeerError::io("create a scratch dir", e))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| PeerError::io("chmod a scratch dir", e))?;
        }
        let socket = run.join("server.sock");
        let log = dir.join("server.log");
        let log_file = File::create(&log).map_err(|e| PeerError::io("create the log", e))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| PeerError::io("share the log", e))?;
        let process = Process::new(bin)
            .args(args(&socket))
            .env("HOME", dir)
            .env("XDG_RUNTIME_DIR", &run)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_STATE_HOME", dir.join("state"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .env("SHELL", "/bin/sh")
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err)
            .spawn()
            .map_err(|e| PeerError::io(format!("start {}", bin.display()), e))?;
        let mut server = Self {
            name,
            process,
            socket,
            log,
            scratch,
        };
        server.wait_listening()?;
        Ok(server)
    }

    /// Polls until the socket accepts a connection, or the process dies, or the deadline.
    fn wait_listening(&mut self) -> Result<(), PeerError> {
        let until = Instant::now() + DEADLINE;
        loop {
            if UnixStream::connect(&self.socket).is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.process.try_wait() {
                return Err(self.down(format!("exited before listening ({status})")));
            }
            if Instant::now() >= until {
                return Err(self.down(format!("never listened within {DEADLINE:?}")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn down(&self, what: String) -> PeerError {
        PeerError::ServerDown {
            name: self.name,
            what,
            log: self.log_tail(),
        }
    }

    /// Which server this is (`reference` or `phux-mio-server`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The server's socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// The server's scratch directory (its HOME).
    pub fn home(&self) -> &Path {
        self.scratch.path()
    }

    /// The last 4 KiB of what the server wrote to stdout and stderr, for failure reports.
    pub fn log_tail(&self) -> String {
        let mut text = std::fs::read(&self.log).unwrap_or_default();
        let keep = text.len().saturating_sub(4096);
        text.drain(..keep);
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(None))
    }

    /// A new connection that has done its HELLO.
    pub fn client(&self) -> Result<Client, PeerError> {
        Client::connect(&self.socket)
    }
}

/// How long a server may take to end its terminals after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

impl Drop for Server {
    fn drop(&mut self) {
        // SIGTERM first, so the server ends its terminals' process groups itself; SIGKILL
        // when it does not go within the grace.
        if let Some(pid) = rustix::process::Pid::from_raw(self.process.id().cast_signed()) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let until = Instant::now() + STOP_GRACE;
        while matches!(self.process.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A blocking client connection: frames out, frames in, commands answered by request id.
/// Frames that arrive while it waits for something else are kept, in order, for [`recv`].
///
/// [`recv`]: Client::recv
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    decoder: FrameDecoder,
    backlog: VecDeque<Frame>,
    next_request: u32,
    /// Always set once [`Client::connect`] returns.
    hello_ok: Option<HelloOk>,
}

/// The HELLO a [`Client`] sends: layer 1, no native codecs, the largest chunk sizes.
pub fn hello() -> Frame {
    "HELLO{client_name=\"phux-conformance\" version={major=0 minor=8 patch=0} \
     capabilities={color=true_color layers=l1 images=none kbd_protocols=none hyperlinks=false \
     output_mode=raw bootstrap_profiles=synthesized_vt_raw native_codecs=none \
     native_features=none max_chunk_bytes=262144 max_history_page_bytes=1048576}}"
        .parse()
        .unwrap_or_else(|e| unreachable!("the fixed HELLO parses: {e}"))
}

impl Client {
    /// Connects to `socket` and does the HELLO exchange.
    pub fn connect(socket: &Path) -> Result<Self, PeerError> {
        let stream = UnixStream::connect(socket)
            .map_err(|e| PeerError::io(format!("connect to {}", socket.display()), e))?;
        let mut client = Self {
            stream,
            decoder: FrameDecoder::default(),
            backlog: VecDeque::new(),
            next_request: 1,
            hello_ok: None,
        };
        client.send(&hello())?;
        match client.recv_until(Instant::now() + DEADLINE)? {
            Some(Frame::HelloOk(ok)) => {
                client.hello_ok = Some(ok);
                Ok(client)
            }
            Some(other) => Err(PeerError::Unexpected(format!(
                "{other} instead of HELLO_OK"
            ))),
            None => Err(PeerError::Timeout("HELLO_OK")),
        }
    }

    /// The server's HELLO_OK.
    pub fn hello_ok(&self) -> &HelloOk {
        self.hello_ok
            .as_ref()
            .unwrap_or_else(|| unreachable!("connect returns only after HELLO_OK"))
    }

    /// Sends one frame.
    pub fn send(&mut self, frame: &Frame) -> Result<(), PeerError> {
        self.send_bytes(&frame.to_bytes())
    }

    /// Sends bytes as they are.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> Result<(), PeerError> {
        self.stream
            .write_all(bytes)
            .map_err(|e| PeerError::io("send to the server", e))
    }

    /// The next frame, waiting at most `wait`; `None` when nothing came.
    pub fn recv(&mut self, wait: Duration) -> Result<Option<Frame>, PeerError> {
        self.recv_until(Instant::now() + wait)
    }

    fn recv_until(&mut self, until: Instant) -> Result<Option<Frame>, PeerError> {
        if let Some(frame) = self.backlog.pop_front() {
            return Ok(Some(frame));
        }
        let mut buf = [0u8; 16 * 1024];
        loop {
            if let Some(frame) = self.decoder.poll_frame()? {
                return Ok(Some(frame));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            // A zero timeout means "block forever" to the socket: never pass one.
            let wait = (until - now).max(Duration::from_millis(1));
            self.stream
                .set_read_timeout(Some(wait))
                .map_err(|e| PeerError::io("set a read timeout", e))?;
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(PeerError::Closed),
                Ok(n) => self.decoder.push(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(PeerError::io("read from the server", e)),
            }
        }
    }

    /// Sends `command` with a fresh request id and returns that id without waiting: several
    /// commands may be in flight; [`Client::wait_result`] collects each answer.
    pub fn send_command(&mut self, command: Command) -> Result<u32, PeerError> {
        let request_id = self.fresh_request_id();
        self.send(&Frame::Command(CommandFrame {
            request_id,
            command,
        }))?;
        Ok(request_id)
    }

    /// Waits for the COMMAND_RESULT of `request_id`; other frames stay for [`Client::recv`].
    pub fn wait_result(&mut self, request_id: u32) -> Result<CommandResult, PeerError> {
        let frame = self.wait_for(
            "COMMAND_RESULT",
            |f| matches!(f, Frame::CommandResult(r) if r.request_id == request_id),
        )?;
        match frame {
            Frame::CommandResult(r) => Ok(r.result),
            other => Err(PeerError::Unexpected(other.to_string())),
        }
    }

    /// Sends `command` and waits for its result.
    pub fn command(&mut self, command: Command) -> Result<CommandResult, PeerError> {
        let id = self.send_command(command)?;
        self.wait_result(id)
    }

    /// Spawns `argv` at `size` and returns the new terminal's id. The connection may be
    /// attached to it by the server (ours does so implicitly); its output stays in the backlog.
    pub fn spawn(&mut self, argv: &[String], size: TerminalSize) -> Result<TerminalId, PeerError> {
        let request_id = self.send_spawn(argv, size)?;
        self.wait_spawned(request_id)
    }

    /// Sends a SPAWN_TERMINAL of `argv` at `size` and returns its request id without waiting:
    /// several spawns may be under way; [`Client::wait_spawned`] collects each answer.
    pub fn send_spawn(&mut self, argv: &[String], size: TerminalSize) -> Result<u32, PeerError> {
        let request_id = self.fresh_request_id();
        let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
        spawn.command = Some(argv.to_vec());
        spawn.initial_size = Some(size);
        self.send(&Frame::SpawnTerminal(spawn))?;
        Ok(request_id)
    }

    /// Waits for the TERMINAL_SPAWNED of `request_id` and returns the new terminal's id; other
    /// frames stay for [`Client::recv`].
    pub fn wait_spawned(&mut self, request_id: u32) -> Result<TerminalId, PeerError> {
        let frame = self.wait_for(
            "TERMINAL_SPAWNED",
            |f| matches!(f, Frame::TerminalSpawned(s) if s.request_id == request_id),
        )?;
        match frame {
            Frame::TerminalSpawned(s) => match s.result {
                SpawnResult::Ok(id) => Ok(id),
                SpawnResult::Err(e) => Err(PeerError::Unexpected(format!("spawn failed: {e:?}"))),
            },
            other => Err(PeerError::Unexpected(other.to_string())),
        }
    }

    /// Reads until a frame matches `want`, keeping the others (in order) for later.
    fn wait_for(
        &mut self,
        what: &'static str,
        want: impl Fn(&Frame) -> bool,
    ) -> Result<Frame, PeerError> {
        if let Some(i) = self.backlog.iter().position(&want) {
            return Ok(self.backlog.remove(i).unwrap_or_else(|| unreachable!()));
        }
        let until = Instant::now() + DEADLINE;
        let mut kept = VecDeque::new();
        let found = loop {
            // Read past the backlog: it was searched above.
            let backlog = std::mem::take(&mut self.backlog);
            let next = self.recv_until(until);
            self.backlog = backlog;
            match next {
                Ok(Some(frame)) if want(&frame) => break Ok(frame),
                Ok(Some(frame)) => kept.push_back(frame),
                Ok(None) => break Err(PeerError::Timeout(what)),
                Err(e) => break Err(e),
            }
        };
        self.backlog.extend(kept);
        found
    }

    fn fresh_request_id(&mut self) -> u32 {
        let id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        id
    }
}
