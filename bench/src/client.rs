//! A small blocking phux client over the server's Unix socket (or a command's stdio, such as
//! `ssh HOST phux-mio-server bridge`, or its WebSocket listener): frames built with `phux_proto::Frame`, decoded with
//! `Frame::decode`, one read buffer, no threads.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command as Process, Stdio};
use std::time::Duration;

use phux_proto::command::{ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, InputKey, Ping, ProtocolVersion, SpawnResult,
    SpawnTerminal,
};
use phux_proto::framing::{LENGTH_LEN, MAX_FRAME_LEN};
use phux_proto::input::{InputEvent, KeyEvent, ModSet, PasteEvent, PasteTrust, PhysicalKey};
use phux_proto::{Frame, GroupId, OperationId, TerminalId};

use crate::error::{Context, Error, Result};
use crate::ws::{WsConn, WsTarget};

/// How long any one read may block before the peer counts as stuck.
pub const READ_TIMEOUT: Duration = Duration::from_mins(1);

/// How the bytes travel.
#[derive(Debug)]
enum Conn {
    Socket(UnixStream),
    /// A command's stdin and stdout; the command is killed with the client.
    Command {
        child: Child,
        stdin: ChildStdin,
        stdout: ChildStdout,
    },
    /// A WebSocket to the server's `--listen-ws`, one binary message per phux frame.
    Ws(Box<WsConn>),
}

impl Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Self::Socket(s) => s.read(buf),
            Self::Command { stdout, .. } => stdout.read(buf),
            Self::Ws(ws) => ws.read(buf),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Self::Socket(s) => s.write_all(bytes),
            Self::Command { stdin, .. } => stdin.write_all(bytes),
            Self::Ws(ws) => ws.write_all(bytes),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Self::Command { child, .. } = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One connection to a phux server.
#[derive(Debug)]
pub struct Client {
    stream: Conn,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    next_request: u32,
    next_op: u128,
    out: Vec<u8>,
    /// Send DETACH_TERMINAL after each spawn: the server attached the spawning connection
    /// (the phux reference does; ours does not, [SPAWN.ATTACH.1]).
    pub detach_after_spawn: bool,
}

impl Client {
    /// Connects to the server at `path`.
    pub fn connect(path: &Path) -> Result<Self> {
        let stream = UnixStream::connect(path).context("connecting to the server")?;
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .context("socket timeout")?;
        Ok(Self::over(Conn::Socket(stream)))
    }

    /// A connection through `sh -c command`'s stdin and stdout (its stderr is ours). A pipe
    /// has no read timeout: a stuck command stalls the read until the run is stopped.
    pub fn over_command(command: &str) -> Result<Self> {
        let mut child = Process::new("/bin/sh")
            .args(["-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the connection's command")?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Protocol("the command's pipes are missing".into()));
        };
        Ok(Self::over(Conn::Command {
            child,
            stdin,
            stdout,
        }))
    }

    /// Connects to the WebSocket listener at `target` as the listener's own page does.
    pub fn connect_ws(target: &WsTarget) -> Result<Self> {
        Ok(Self::over_ws(target.handshake(READ_TIMEOUT)?))
    }

    /// A connection over a WebSocket that passed its handshake.
    pub fn over_ws(ws: tungstenite::WebSocket<std::net::TcpStream>) -> Self {
        Self::over(Conn::Ws(Box::new(WsConn::new(ws))))
    }

    /// The WebSocket underneath, for writes that are not whole phux frames (attackers).
    pub fn ws_mut(&mut self) -> Option<&mut WsConn> {
        match &mut self.stream {
            Conn::Ws(ws) => Some(ws),
            _ => None,
        }
    }

    fn over(stream: Conn) -> Self {
        Self {
            stream,
            buf: vec![0; 1 << 20],
            start: 0,
            end: 0,
            next_request: 1,
            // Distinct per connection so operation ids never collide across connections.
            next_op: (u128::from(std::process::id()) << 64) | u128::from(rand_seed()),
            out: Vec::with_capacity(4096),
            detach_after_spawn: false,
        }
    }

    /// How long one read may block before it fails with [`Error::Timeout`] (socket and
    /// WebSocket connections only; a command's pipe has no timeout).
    pub fn set_read_timeout(&self, timeout: Duration) -> Result<()> {
        match &self.stream {
            Conn::Socket(s) => s.set_read_timeout(Some(timeout)).context("socket timeout"),
            Conn::Ws(ws) => ws.set_read_timeout(timeout).context("socket timeout"),
            Conn::Command { .. } => Ok(()),
        }
    }

    /// Encodes and writes one frame.
    pub fn send(&mut self, frame: &Frame) -> Result<()> {
        self.out.clear();
        frame.encode(&mut self.out);
        self.stream.write_all(&self.out).context("sending a frame")
    }

    /// The next whole frame.
    pub fn recv(&mut self) -> Result<Frame> {
        let range = self.next_raw()?;
        Ok(Frame::decode(self.buf.get(range).unwrap_or_default())?)
    }

    /// Where the next whole frame's bytes are in the buffer, reading until they are all in.
    fn next_raw(&mut self) -> Result<std::ops::Range<usize>> {
        loop {
            if let Some(range) = self.take_raw()? {
                return Ok(range);
            }
            self.fill()?;
        }
    }

    /// Where the next whole frame's bytes are in the buffer, once they are all in.
    fn take_raw(&mut self) -> Result<Option<std::ops::Range<usize>>> {
        let avail = self.buf.get(self.start..self.end).unwrap_or_default();
        let Some(len) = avail
            .first_chunk::<LENGTH_LEN>()
            .map(|b| u32::from_be_bytes(*b))
        else {
            return Ok(None);
        };
        if len > MAX_FRAME_LEN {
            return Err(Error::Protocol(format!(
                "frame length {len} over the limit"
            )));
        }
        let total = LENGTH_LEN + len as usize;
        if avail.len() < total {
            if self.buf.len() < total {
                self.buf.resize(total, 0);
            }
            return Ok(None);
        }
        let range = self.start..self.start + total;
        self.start += total;
        Ok(Some(range))
    }

    fn fill(&mut self) -> Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let room = self.buf.get_mut(self.end..).unwrap_or_default();
        match self.stream.read(room) {
            Ok(0) => Err(Error::Protocol("the server closed the connection".into())),
            Ok(n) => {
                self.end += n;
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                Err(Error::Timeout("a frame from the server".into()))
            }
            Err(e) => Err(e).context("reading from the server"),
        }
    }

    /// Reads frames until `pick` returns something from one's bytes. Nothing is decoded
    /// into an owned frame: a measurement that looks for one frame pays only for its look.
    pub fn wait_for_raw<T>(
        &mut self,
        mut pick: impl FnMut(&[u8]) -> Result<Option<T>>,
    ) -> Result<T> {
        loop {
            let range = self.next_raw()?;
            if let Some(v) = pick(self.buf.get(range).unwrap_or_default())? {
                return Ok(v);
            }
        }
    }

    /// Reads frames until `pick` returns something.
    pub fn wait_for<T>(&mut self, mut pick: impl FnMut(&Frame) -> Option<T>) -> Result<T> {
        loop {
            let frame = self.recv()?;
            if let Some(found) = pick(&frame) {
                return Ok(found);
            }
        }
    }

    /// HELLO with the reference CLI's capabilities; waits for HELLO_OK.
    pub fn hello(&mut self) -> Result<()> {
        self.send(&Frame::Hello(Hello {
            client_name: "phux-bench".to_owned(),
            version: ProtocolVersion::CURRENT,
            capabilities: ClientCapabilities::default(),
        }))?;
        self.wait_for(|f| matches!(f, Frame::HelloOk(_)).then_some(()))
    }

    /// Sends a COMMAND without waiting; its request id.
    pub fn send_command(&mut self, command: Command) -> Result<u32> {
        let (request_id, bytes) = self.encode_command(command);
        self.send_encoded(&bytes)?;
        Ok(request_id)
    }

    /// A COMMAND encoded for [`Self::send_encoded`], and its request id: a latency sample
    /// starts its clock with the request's bytes ready, as the relay's do.
    pub fn encode_command(&mut self, command: Command) -> (u32, Vec<u8>) {
        let request_id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        let frame = Frame::Command(CommandFrame {
            request_id,
            command,
        });
        (request_id, frame.to_bytes())
    }

    /// Writes frames already encoded.
    pub fn send_encoded(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes).context("sending a frame")
    }

    /// Waits for the COMMAND_RESULT of `request_id`.
    pub fn wait_result(&mut self, request_id: u32) -> Result<CommandResult> {
        self.wait_for(|f| match f {
            Frame::CommandResult(r) if r.request_id == request_id => Some(r.result.clone()),
            _ => None,
        })
    }

    /// Sends a COMMAND and waits for its result.
    pub fn command(&mut self, command: Command) -> Result<CommandResult> {
        let id = self.send_command(command)?;
        self.wait_result(id)
    }

    /// Sends SPAWN_TERMINAL for `argv` without waiting; its request id. Wait with
    /// [`Self::wait_spawned`], or read the TERMINAL_SPAWNED and call [`Self::after_spawn`].
    pub fn send_spawn(&mut self, argv: &[String]) -> Result<u32> {
        let request_id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        let mut spawn = SpawnTerminal::new(request_id, GroupId(1));
        spawn.command = Some(argv.to_vec());
        self.send(&Frame::SpawnTerminal(spawn))?;
        Ok(request_id)
    }

    /// Waits for the TERMINAL_SPAWNED of `request_id`.
    pub fn wait_spawned(&mut self, request_id: u32) -> Result<TerminalId> {
        let result = self.wait_for(|f| match f {
            Frame::TerminalSpawned(s) if s.request_id == request_id => Some(s.result.clone()),
            _ => None,
        })?;
        let id = spawned(result)?;
        self.after_spawn(&id)?;
        Ok(id)
    }

    /// What follows a spawn: DETACH_TERMINAL where the server attached the spawning
    /// connection ([`Self::detach_after_spawn`]). Not waited for, as spawns may be pipelined
    /// behind this one: its result, and whatever the implicit stream sent before it, are
    /// skipped by later waits.
    pub fn after_spawn(&mut self, terminal: &TerminalId) -> Result<()> {
        if self.detach_after_spawn {
            self.send_command(Command::DetachTerminal {
                terminal: terminal.clone(),
            })?;
        }
        Ok(())
    }

    /// Spawns a terminal running `argv`.
    pub fn spawn(&mut self, argv: &[String]) -> Result<TerminalId> {
        let id = self.send_spawn(argv)?;
        self.wait_spawned(id)
    }

    /// ATTACH_TERMINAL; returns once the bootstrap is complete, with its payload.
    pub fn attach(&mut self, terminal: &TerminalId) -> Result<Vec<u8>> {
        let id = self.send_command(Command::AttachTerminal {
            terminal: terminal.clone(),
        })?;
        let (mut ok, mut ready, mut payload) = (false, false, Vec::new());
        while !(ok && ready) {
            match self.recv()? {
                Frame::CommandResult(r) if r.request_id == id => match r.result {
                    CommandResult::Ok => ok = true,
                    other => return Err(Error::Protocol(format!("attach: {other:?}"))),
                },
                Frame::BootstrapBegin(b) if &b.terminal == terminal => payload.clear(),
                Frame::BootstrapChunk(c) if &c.terminal == terminal => {
                    payload.extend_from_slice(&c.payload);
                }
                Frame::BootstrapReady(r) if &r.terminal == terminal => ready = true,
                _ => {}
            }
        }
        Ok(payload)
    }

    /// GET_SCREEN without history or cells: the JSON document.
    pub fn screen(&mut self, terminal: &TerminalId) -> Result<String> {
        match self.command(Command::GetScreen {
            terminal: terminal.clone(),
            request_scrollback: None,
            cells: false,
        })? {
            CommandResult::OkWith(CommandValue::Json(json)) => Ok(json),
            other => Err(Error::Protocol(format!("GET_SCREEN: {other:?}"))),
        }
    }

    /// A PING/PONG round trip: every frame the server queued before it is read (and dropped).
    pub fn sync(&mut self) -> Result<()> {
        let nonce = u64::from(self.next_request) << 32 | 0x5eed;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        self.send(&Frame::Ping(Ping { nonce }))?;
        self.wait_for(|f| match f {
            Frame::Pong(p) if p.nonce == nonce => Some(()),
            _ => None,
        })
    }

    /// A fresh operation id (never zero).
    pub fn operation_id(&mut self) -> OperationId {
        loop {
            self.next_op = self.next_op.wrapping_add(1);
            if let Some(id) = OperationId::from_u128(self.next_op) {
                return id;
            }
        }
    }

    /// An APPLY_INPUT of a trusted paste (written as is when bracketed paste is off).
    pub fn apply_paste(&mut self, terminal: &TerminalId, data: &[u8]) -> Command {
        Command::ApplyInput(ApplyInput {
            operation_id: self.operation_id(),
            terminal: terminal.clone(),
            events: vec![InputEvent::Paste(PasteEvent {
                trust: PasteTrust::Trusted,
                data: data.to_vec(),
            })],
        })
    }

    /// An APPLY_INPUT of key presses typing `text` (ASCII letters and space).
    pub fn apply_keys(&mut self, terminal: &TerminalId, text: &str) -> Command {
        Command::ApplyInput(ApplyInput {
            operation_id: self.operation_id(),
            terminal: terminal.clone(),
            events: text.chars().map(|c| InputEvent::Key(key_for(c))).collect(),
        })
    }

    /// INPUT_KEY for `c` (fire and forget), encoded for [`Self::send_encoded`].
    pub fn encode_key(terminal: &TerminalId, c: char) -> Vec<u8> {
        Frame::InputKey(InputKey {
            terminal: terminal.clone(),
            event: key_for(c),
        })
        .to_bytes()
    }
}

/// The terminal a TERMINAL_SPAWNED names, or the refusal as an error.
pub fn spawned(result: SpawnResult) -> Result<TerminalId> {
    match result {
        SpawnResult::Ok(id) => Ok(id),
        SpawnResult::Err(e) => Err(Error::Protocol(format!("spawn refused: {e:?}"))),
    }
}

/// A press of the key that types ASCII `c`, with that text.
pub fn key_for(c: char) -> KeyEvent {
    let key = match c {
        'a'..='z' => PhysicalKey(PhysicalKey::KEY_A.0 + (c as u32 - 'a' as u32)),
        ' ' => PhysicalKey::SPACE,
        _ => PhysicalKey::UNIDENTIFIED,
    };
    KeyEvent {
        text: Some(c.to_string()),
        ..KeyEvent::press(key, ModSet::NONE)
    }
}

/// A cheap per-process seed for operation ids (not security relevant: ids only need to be
/// distinct from other clients' within one server's dedupe window).
fn rand_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (t as u64) ^ 0x9e37_79b9_7f4a_7c15
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_for_letters_are_the_w3c_codes() {
        assert_eq!(key_for('a').key, PhysicalKey::KEY_A);
        assert_eq!(key_for('z').key.0, PhysicalKey::KEY_A.0 + 25);
        assert_eq!(key_for('z').key.name(), Some("KeyZ"));
        assert_eq!(key_for(' ').key, PhysicalKey::SPACE);
        assert_eq!(key_for('q').text.as_deref(), Some("q"));
    }
}
