//! Byte-stream transports: a Unix socket to a running server, and a server started as a
//! child that speaks on its standard input and output (`--stdio`).
//!
//! Each connection has a reader thread that forwards what it reads over a channel, so
//! `recv` can wait with a timeout on any kind of stream without non-blocking I/O.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use phux_proto::notation::Value;

use super::{ConnKey, Connector, ECHO_COMMAND, Recv, Transport, TransportError, command_list};

/// How long to wait for a child server to exit after its stdin closed, before killing it.
const CHILD_EXIT_GRACE: Duration = Duration::from_secs(2);

/// Whether a reader thread may read: a client that stops reading leaves the server's bytes
/// in the kernel's buffers, which fill, and then in the server's own queue.
#[derive(Default)]
pub(super) struct Gate {
    paused: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    pub(super) fn set(&self, paused: bool) {
        if let Ok(mut p) = self.paused.lock() {
            *p = paused;
            self.changed.notify_all();
        }
    }

    /// Whether reading is stopped now.
    pub(super) fn paused(&self) -> bool {
        self.paused.lock().is_ok_and(|p| *p)
    }

    /// Returns once reading is allowed.
    pub(super) fn wait_open(&self) {
        let Ok(mut p) = self.paused.lock() else {
            return;
        };
        while *p {
            match self.changed.wait(p) {
                Ok(guard) => p = guard,
                Err(_) => return,
            }
        }
    }
}

/// Reads `source` until EOF, forwarding chunks; `None` marks the end. It reads only while
/// `gate` is open (a read already under way when it closes still completes).
fn spawn_reader(
    mut source: impl Read + Send + 'static,
    gate: Arc<Gate>,
) -> Receiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            gate.wait_open();
            match source.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.send(None);
                    return;
                }
                Ok(n) => {
                    if tx.send(Some(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

pub(super) fn recv_from(rx: &Receiver<Option<Vec<u8>>>, eof: &mut bool, wait: Duration) -> Recv {
    if *eof {
        return Recv::Closed;
    }
    match rx.recv_timeout(wait) {
        Ok(Some(bytes)) => {
            // Take whatever else is already there in the same call.
            let mut bytes = bytes;
            while let Ok(more) = rx.try_recv() {
                if let Some(b) = more {
                    bytes.extend_from_slice(&b);
                } else {
                    *eof = true;
                    break;
                }
            }
            Recv::Bytes(bytes)
        }
        Ok(None) | Err(RecvTimeoutError::Disconnected) => {
            *eof = true;
            Recv::Closed
        }
        Err(RecvTimeoutError::Timeout) => Recv::Nothing,
    }
}

/// Variables for a real server: `$ECHO` is `cat`; `$PROBE` the probe child, when given.
pub(super) fn real_vars(probe: Option<&[String]>) -> Vec<(String, Value)> {
    let mut vars = vec![("ECHO".to_owned(), command_list(&[ECHO_COMMAND]))];
    if let Some(words) = probe {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        vars.push(("PROBE".to_owned(), command_list(&words)));
    }
    vars
}

/// A Unix socket to a server that is already running.
#[derive(Clone, Debug)]
pub struct SocketConnector {
    /// The server's socket.
    pub path: PathBuf,
    /// The probe child's command line, if the server can run it.
    pub probe: Option<Vec<String>>,
}

impl Connector for SocketConnector {
    fn kind(&self) -> &'static str {
        "socket"
    }

    fn describe(&self) -> String {
        format!("socket {}", self.path.display())
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(SocketTransport {
            path: self.path.clone(),
            probe: self.probe.clone(),
            conns: Vec::new(),
        }))
    }
}

struct SocketConn {
    stream: UnixStream,
    rx: Receiver<Option<Vec<u8>>>,
    gate: Arc<Gate>,
    eof: bool,
}

struct SocketTransport {
    path: PathBuf,
    probe: Option<Vec<String>>,
    conns: Vec<SocketConn>,
}

impl SocketTransport {
    fn conn(&mut self, conn: ConnKey) -> Result<&mut SocketConn, TransportError> {
        self.conns
            .get_mut(conn)
            .ok_or_else(|| TransportError::Unsupported(format!("no connection {conn}")))
    }
}

impl Transport for SocketTransport {
    fn virtual_time(&self) -> bool {
        false
    }

    fn shared_server(&self) -> bool {
        true
    }

    fn max_connections(&self) -> Option<usize> {
        None
    }

    fn vars(&self) -> Vec<(String, Value)> {
        real_vars(self.probe.as_deref())
    }

    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        let stream = UnixStream::connect(&self.path)
            .map_err(|e| TransportError::io(format!("connect {}", self.path.display()), e))?;
        let reader = stream
            .try_clone()
            .map_err(|e| TransportError::io("clone the socket", e))?;
        let gate = Arc::new(Gate::default());
        self.conns.push(SocketConn {
            stream,
            rx: spawn_reader(reader, Arc::clone(&gate)),
            gate,
            eof: false,
        });
        Ok(self.conns.len() - 1)
    }

    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        let c = self.conn(conn)?;
        // A server that closed first makes this fail; the transcript's expectations (not
        // the write) decide whether that was right.
        let _ = c.stream.write_all(bytes);
        Ok(())
    }

    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        let c = self.conn(conn)?;
        Ok(recv_from(&c.rx, &mut c.eof, wait))
    }

    fn disconnect(&mut self, conn: ConnKey) {
        if let Ok(c) = self.conn(conn) {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
            c.gate.set(false);
        }
    }

    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        self.conn(conn)?.gate.set(!reading);
        Ok(())
    }

    fn advance(&mut self, by: Duration) {
        std::thread::sleep(by);
    }
}

impl Drop for SocketTransport {
    fn drop(&mut self) {
        for c in &self.conns {
            let _ = c.stream.shutdown(std::net::Shutdown::Both);
            // A paused reader thread must see the end, not wait forever.
            c.gate.set(false);
        }
    }
}

/// A child per transcript (`sh -c CMD`) that carries one client on its stdio: a server of
/// its own (`phux-mio-server --stdio`), or a bridge to a server others share
/// (`phux stdio-bridge --socket S`).
#[derive(Clone, Debug)]
pub struct ExecConnector {
    /// The shell command line, e.g. `phux-mio-server --stdio`.
    pub command: String,
    /// The probe child's command line, if the server can run it.
    pub probe: Option<Vec<String>>,
    /// The child bridges to a server that outlives it: cases that end or restart the server,
    /// or need it fresh, cannot run.
    pub shared: bool,
}

impl Connector for ExecConnector {
    fn kind(&self) -> &'static str {
        "exec"
    }

    fn describe(&self) -> String {
        let shared = if self.shared {
            " (a shared server)"
        } else {
            ""
        };
        format!("exec '{}'{shared}", self.command)
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(ExecTransport {
            command: self.command.clone(),
            probe: self.probe.clone(),
            shared: self.shared,
            children: Vec::new(),
            stderr: Arc::default(),
        }))
    }
}

/// How much of a child's standard error is kept: its last bytes, which say why it failed.
const STDERR_KEPT: usize = 16 * 1024;

/// The tail of the children's standard error, and how many of them may still write to it.
#[derive(Default)]
struct StderrTail {
    state: Mutex<(Vec<u8>, usize)>,
    ended: Condvar,
}

/// How long a report waits for a child's standard error to reach its end (a child that
/// failed has usually written why by the time its stdout closed, but not always read).
const STDERR_SETTLE: Duration = Duration::from_millis(500);

impl StderrTail {
    /// Keeps the last [`STDERR_KEPT`] bytes a child writes to its standard error.
    fn keep(self: &Arc<Self>, mut source: impl Read + Send + 'static) {
        if let Ok(mut s) = self.state.lock() {
            s.1 += 1;
        }
        let tail = Arc::clone(self);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = source.read(&mut buf).unwrap_or(0);
                let Ok(mut s) = tail.state.lock() else {
                    return;
                };
                if n == 0 {
                    s.1 -= 1;
                    tail.ended.notify_all();
                    return;
                }
                s.0.extend_from_slice(&buf[..n]);
                let excess = s.0.len().saturating_sub(STDERR_KEPT);
                s.0.drain(..excess);
            }
        });
    }

    /// What was kept, once every child's stderr ended or [`STDERR_SETTLE`] passed.
    fn text(&self) -> Option<String> {
        let guard = self.state.lock().ok()?;
        let (guard, _) = self
            .ended
            .wait_timeout_while(guard, STDERR_SETTLE, |s| s.1 > 0)
            .ok()?;
        let text = String::from_utf8_lossy(&guard.0).trim_end().to_owned();
        (!text.is_empty()).then_some(text)
    }
}

struct ExecChild {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Option<Vec<u8>>>,
    gate: Arc<Gate>,
    eof: bool,
}

struct ExecTransport {
    command: String,
    probe: Option<Vec<String>>,
    shared: bool,
    /// One child per connection: the server itself (exactly one), or a bridge each to a
    /// shared server (as many as the case opens).
    children: Vec<ExecChild>,
    /// The tail of the children's standard error, shown when a case fails.
    stderr: Arc<StderrTail>,
}

impl ExecTransport {
    fn conn(&mut self, conn: ConnKey) -> Result<&mut ExecChild, TransportError> {
        self.children
            .get_mut(conn)
            .ok_or_else(|| TransportError::Unsupported(format!("no connection {conn}")))
    }
}

impl Transport for ExecTransport {
    fn virtual_time(&self) -> bool {
        false
    }

    fn max_connections(&self) -> Option<usize> {
        // A bridge per connection reaches a shared server as often as a case likes.
        (!self.shared).then_some(1)
    }

    fn shared_server(&self) -> bool {
        self.shared
    }

    fn local_socket(&self) -> bool {
        false
    }

    fn can_restart(&self) -> bool {
        !self.shared
    }

    fn server_stderr(&self) -> Option<String> {
        self.stderr.text()
    }

    /// Kills the child (SIGKILL: a crash, not a shutdown) and forgets it; the next
    /// `connect` starts a new one.
    fn restart(&mut self) -> Result<(), TransportError> {
        for mut c in self.children.drain(..) {
            c.stdin = None;
            c.child
                .kill()
                .map_err(|e| TransportError::io("kill the server", e))?;
            c.child
                .wait()
                .map_err(|e| TransportError::io("reap the server", e))?;
        }
        Ok(())
    }

    fn vars(&self) -> Vec<(String, Value)> {
        real_vars(self.probe.as_deref())
    }

    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        if !self.shared && !self.children.is_empty() {
            return Err(TransportError::Unsupported(
                "a --stdio server carries exactly one connection".into(),
            ));
        }
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TransportError::io(format!("start `{}`", self.command), e))?;
        if let Some(stderr) = child.stderr.take() {
            self.stderr.keep(stderr);
        }
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| TransportError::Unsupported("the child has no stdout pipe".into()))?;
        let stdin = child.stdin.take();
        let gate = Arc::new(Gate::default());
        self.children.push(ExecChild {
            child,
            stdin,
            rx: spawn_reader(stdout, Arc::clone(&gate)),
            gate,
            eof: false,
        });
        Ok(self.children.len() - 1)
    }

    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        let c = self.conn(conn)?;
        if let Some(stdin) = &mut c.stdin {
            let _ = stdin.write_all(bytes);
            let _ = stdin.flush();
        }
        Ok(())
    }

    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        let c = self.conn(conn)?;
        Ok(recv_from(&c.rx, &mut c.eof, wait))
    }

    fn disconnect(&mut self, conn: ConnKey) {
        if let Ok(c) = self.conn(conn) {
            c.stdin = None;
        }
    }

    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError> {
        self.conn(conn)?.gate.set(!reading);
        Ok(())
    }

    fn advance(&mut self, by: Duration) {
        std::thread::sleep(by);
    }
}

impl Drop for ExecTransport {
    fn drop(&mut self) {
        // Closing stdin ends a --stdio server (or a bridge); give them a moment, then make sure.
        for c in &mut self.children {
            c.stdin = None;
            c.gate.set(false);
        }
        let deadline = std::time::Instant::now() + CHILD_EXIT_GRACE;
        for c in &mut self.children {
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = c.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            if let Ok(None) = c.child.try_wait() {
                let _ = c.child.kill();
                let _ = c.child.wait();
            }
        }
    }
}
