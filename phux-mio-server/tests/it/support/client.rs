//! A tiny protocol client for the end-to-end tests: start the real server binary, connect
//! over its socket or its stdio, send frames built with `phux_proto::Frame`, and read frames
//! (decoded with `Frame::decode`) against a generous deadline. No fixed sleeps.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use phux_proto::command::{Command, CommandResult, CommandValue};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, HelloOk, ProtocolVersion, SpawnTerminal,
};
use phux_proto::{Frame, GroupId, TerminalId};

pub(crate) use super::launch::{self, DEADLINE};

/// Starts the server binary on `socket` and waits for its ready line (see [`launch`]).
pub(crate) fn launch_server(socket: &Path, nofile: Option<u64>, log_level: &str) -> Child {
    launch::launch_server(
        Path::new(env!("CARGO_BIN_EXE_phux-mio-server")),
        socket,
        nofile,
        log_level,
    )
}

/// [`launch_server`] with the descriptor limits apart and `args` after the usual ones.
pub(crate) fn launch_server_with(
    socket: &Path,
    nofile: Option<launch::Nofile>,
    log_level: &str,
    args: &[&str],
) -> Child {
    launch::launch_server_with(
        Path::new(env!("CARGO_BIN_EXE_phux-mio-server")),
        socket,
        nofile,
        log_level,
        args,
    )
}

/// The pid of a terminal's child, from GET_TERMINAL_STATE.
pub(crate) fn pid_of_terminal(c: &mut Client, terminal: &TerminalId) -> u32 {
    let r = c.command(Command::GetTerminalState {
        terminal: terminal.clone(),
        include_scrollback: false,
        max_scrollback_lines: 0,
    });
    let CommandResult::OkWith(CommandValue::Json(json)) = r else {
        panic!("GET_TERMINAL_STATE: {r:?}")
    };
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    v["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .expect("pid")
}

/// The server binary under test, running until dropped (then killed).
pub(crate) struct Server {
    pub(crate) process: Child,
    pub(crate) socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `phux-mio-server --socket <tempdir>/s.sock` and waits for its ready line.
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let process = launch_server(&socket, None, "warn");
        Self {
            process,
            socket,
            _dir: dir,
        }
    }

    /// Starts the server binary on a socket in a fresh directory with `args` after
    /// `--socket <dir>/s.sock`, and waits for its ready line.
    pub(crate) fn start_with(args: &[&std::ffi::OsStr]) -> Self {
        Self::start_under_shell(":", args)
    }

    /// [`Self::start_with`], the server started by `/bin/sh` after the shell ran `prelude`
    /// (`trap '' HUP`: what `nohup` does to it).
    pub(crate) fn start_under_shell(prelude: &str, args: &[&std::ffi::OsStr]) -> Self {
        use std::io::{BufRead, BufReader};
        use std::process::{Command as Process, Stdio};

        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let mut process = Process::new("/bin/sh")
            .arg("-c")
            .arg(format!("{prelude}; exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_phux-mio-server"))
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start server");
        let stdout = process.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(DEADLINE)
            .expect("server never printed its ready line");
        assert!(line.starts_with("phux-mio-server listening on"), "{line:?}");
        Self {
            process,
            socket,
            _dir: dir,
        }
    }

    pub(crate) fn connect(&self) -> Client {
        Client::unix(&self.socket)
    }

    pub(crate) fn pid(&self) -> i32 {
        i32::try_from(self.process.id()).expect("pid")
    }

    /// Waits for the server to exit; its exit code.
    pub(crate) fn wait_exit(&mut self) -> Option<i32> {
        wait_exit(&mut self.process, "server did not exit")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// One client connection: frames out on a writer, bytes in through a reader thread.
pub(crate) struct Client {
    writer: Box<dyn Write + Send>,
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    /// The reader saw end of stream.
    pub(crate) eof: bool,
    /// Every frame received so far, in order.
    pub(crate) seen: Vec<Frame>,
    next_request: u32,
    /// For a socket client: a handle to shut the connection down when the client is dropped
    /// (the reader thread's clone would otherwise keep it open).
    socket: Option<UnixStream>,
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(socket) = &self.socket {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Client {
    pub(crate) fn unix(path: &Path) -> Self {
        Self::over_unix(UnixStream::connect(path).expect("connect"))
    }

    /// A client on a socket the caller connected (and may also write to directly).
    pub(crate) fn over_unix(stream: UnixStream) -> Self {
        let reader = stream.try_clone().expect("clone");
        let control = stream.try_clone().expect("clone");
        let mut client = Self::over(Box::new(stream), reader);
        client.socket = Some(control);
        client
    }

    /// A client over a child's stdin/stdout (the `--stdio` server).
    pub(crate) fn stdio(
        stdin: impl Write + Send + 'static,
        stdout: impl Read + Send + 'static,
    ) -> Self {
        Self::over(Box::new(stdin), stdout)
    }

    fn over(writer: Box<dyn Write + Send>, mut reader: impl Read + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if tx.send(chunk[..n].to_vec()).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Self {
            writer,
            rx,
            buf: Vec::new(),
            eof: false,
            seen: Vec::new(),
            next_request: 1,
            socket: None,
        }
    }

    pub(crate) fn send(&mut self, frame: &Frame) {
        self.writer.write_all(&frame.to_bytes()).expect("send");
        self.writer.flush().expect("flush");
    }

    /// Writes bytes as they are: many frames in one write.
    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("send");
        self.writer.flush().expect("flush");
    }

    /// Drops the sending side (the server sees EOF on a pipe).
    pub(crate) fn close_writer(&mut self) {
        self.writer = Box::new(std::io::sink());
    }

    /// The next frame, or `None` at end of stream or deadline.
    pub(crate) fn recv(&mut self, end: Instant) -> Option<Frame> {
        loop {
            if let Some(len) = self.buf.first_chunk::<4>().map(|b| u32::from_be_bytes(*b)) {
                let total = 4 + len as usize;
                if self.buf.len() >= total {
                    let rest = self.buf.split_off(total);
                    let bytes = std::mem::replace(&mut self.buf, rest);
                    let frame = Frame::decode(&bytes).expect("server sent an undecodable frame");
                    self.seen.push(frame.clone());
                    return Some(frame);
                }
            }
            if self.eof {
                return None;
            }
            let wait = end.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(bytes) => self.buf.extend_from_slice(&bytes),
                Err(RecvTimeoutError::Disconnected) => self.eof = true,
                Err(RecvTimeoutError::Timeout) => return None,
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
                None => panic!(
                    "no {what} (eof: {}); frames seen: {:#?}",
                    self.eof, self.seen
                ),
            }
        }
    }

    /// True once the server has closed the stream (within the deadline).
    pub(crate) fn wait_eof(&mut self) -> bool {
        let end = Instant::now() + DEADLINE;
        while self.recv(end).is_some() {}
        self.eof
    }

    /// HELLO with the default capabilities; returns HELLO_OK.
    pub(crate) fn hello(&mut self) -> HelloOk {
        self.send(&Frame::Hello(Hello {
            client_name: "phux-mio-server-tests".to_owned(),
            version: ProtocolVersion::CURRENT,
            capabilities: ClientCapabilities::default(),
        }));
        self.wait_for("HELLO_OK", |f| match f {
            Frame::HelloOk(ok) => Some(ok.clone()),
            _ => None,
        })
    }

    /// Sends a COMMAND and waits for its COMMAND_RESULT.
    pub(crate) fn command(&mut self, command: Command) -> CommandResult {
        let request_id = self.next_request;
        self.next_request += 1;
        self.send(&Frame::Command(CommandFrame {
            request_id,
            command,
        }));
        self.wait_for("COMMAND_RESULT", |f| match f {
            Frame::CommandResult(r) if r.request_id == request_id => Some(r.result.clone()),
            _ => None,
        })
    }

    /// SPAWN_TERMINAL for `argv`; the new terminal's id.
    pub(crate) fn spawn(&mut self, argv: &[&str]) -> TerminalId {
        let request_id = self.next_request;
        self.next_request += 1;
        let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
        spawn.command = Some(argv.iter().map(|s| (*s).to_owned()).collect());
        self.send(&Frame::SpawnTerminal(spawn));
        self.wait_for("TERMINAL_SPAWNED", |f| match f {
            Frame::TerminalSpawned(s) if s.request_id == request_id => match &s.result {
                phux_proto::frame::SpawnResult::Ok(id) => Some(id.clone()),
                phux_proto::frame::SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
            },
            _ => None,
        })
    }

    /// The terminal's live output received so far, concatenated.
    pub(crate) fn output_of(&self, terminal: &TerminalId) -> Vec<u8> {
        self.seen
            .iter()
            .filter_map(|f| match f {
                Frame::TerminalOutput(o) if &o.terminal == terminal => Some(o.bytes.as_slice()),
                _ => None,
            })
            .flatten()
            .copied()
            .collect()
    }
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// Dead means gone or a zombie (a reaped child's /proc entry disappears).
pub(crate) fn is_dead(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat.get(i + 1..))
        .and_then(|rest| rest.trim_start().chars().next());
    matches!(state, None | Some('Z' | 'X'))
}

/// Waits for `process` to exit, at most [`DEADLINE`]; its exit code. Panics naming `what`.
pub(crate) fn wait_exit(process: &mut Child, what: &str) -> Option<i32> {
    let end = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = process.try_wait().expect("try_wait") {
            return status.code();
        }
        assert!(Instant::now() < end, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
