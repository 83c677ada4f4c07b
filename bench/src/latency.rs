//! Sections 2 and 3: acknowledged input (APPLY_INPUT → OK) and keystroke-to-echo latency,
//! each against the least a server could do and against tmux, interleaved round by round.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use phux_mio_server::{PtyChild, PtyRead};
use phux_proto::TerminalId;
use phux_proto::command::CommandResult;
use phux_proto::frame::TerminalOutputView;

use crate::client::{Client, READ_TIMEOUT};
use crate::error::{Context, Error, Result};
use crate::procs::{PhuxServer, WARM, self_exe, wait_ready_line};
use crate::roles::{RelayMode, spawn_pty, wait_readable, write_pty};
use crate::tmux::{Control, Line, Tmux, classify, unescape};

/// A raw-mode child that swallows its input.
pub fn sink_argv() -> Vec<String> {
    ["sh", "-c", "stty raw -echo; exec cat >/dev/null"]
        .map(str::to_owned)
        .to_vec()
}

/// A raw-mode child that echoes every byte once (its own output, not the line discipline's).
pub fn echo_argv() -> Vec<String> {
    ["sh", "-c", "stty raw -echo; exec cat"]
        .map(str::to_owned)
        .to_vec()
}

/// The short batch each acknowledged-input operation carries.
pub const BATCH: &str = "abc";

fn micros(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e6
}

/// A `__relay` process and our one connection to it.
pub struct Relay {
    process: Child,
    conn: UnixStream,
    _dir: tempfile::TempDir,
}

impl Relay {
    /// Starts a relay in `mode` around `argv` and connects to it.
    pub fn start(mode: RelayMode, argv: &[String]) -> Result<Self> {
        let dir = tempfile::tempdir().context("scratch directory")?;
        let sock = dir.path().join("relay.sock");
        let mode_name = match mode {
            RelayMode::Pong => "pong",
            RelayMode::Ack => "ack",
            RelayMode::Echo => "echo",
        };
        let mut process = Command::new(self_exe()?)
            .arg("__relay")
            .arg("--socket")
            .arg(&sock)
            .args(["--mode", mode_name, "--"])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting a relay")?;
        wait_ready_line(&mut process, "relay ready")?;
        let conn = UnixStream::connect(&sock).context("connecting to the relay")?;
        conn.set_read_timeout(Some(READ_TIMEOUT))
            .context("socket timeout")?;
        Ok(Self {
            process,
            conn,
            _dir: dir,
        })
    }

    /// The relay's process id.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }

    /// The connection to the relay.
    pub fn conn(&mut self) -> &mut UnixStream {
        &mut self.conn
    }

    /// Sends `req` and waits for `reply_len` bytes back; microseconds.
    pub fn round_trip(&mut self, req: &[u8], reply_len: usize) -> Result<f64> {
        let mut reply = [0u8; 16];
        let reply = reply.get_mut(..reply_len).unwrap_or_default();
        let t0 = Instant::now();
        self.conn.write_all(req).context("relay request")?;
        self.conn.read_exact(reply).context("relay reply")?;
        Ok(micros(t0))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A phux connection attached to one terminal running `argv`.
pub struct PhuxTerm {
    /// The attached connection.
    pub client: Client,
    /// The terminal.
    pub terminal: TerminalId,
}

impl PhuxTerm {
    /// Spawns `argv` on `server` and attaches to it.
    pub fn start(server: &PhuxServer, argv: &[String]) -> Result<Self> {
        Self::over(server.client()?, argv)
    }

    /// Spawns `argv` through `client` (after its HELLO) and attaches to it.
    pub fn over(mut client: Client, argv: &[String]) -> Result<Self> {
        let terminal = client.spawn(argv)?;
        client.attach(&terminal)?;
        Ok(Self { client, terminal })
    }

    /// APPLY_INPUT of [`BATCH`] as key presses, until COMMAND_RESULT OK; microseconds.
    pub fn apply(&mut self) -> Result<f64> {
        let cmd = self.client.apply_keys(&self.terminal, BATCH);
        let (id, request) = self.client.encode_command(cmd);
        let t0 = Instant::now();
        self.client.send_encoded(&request)?;
        let result = self.client.wait_result(id)?;
        let us = micros(t0);
        match result {
            CommandResult::Ok => Ok(us),
            other => Err(Error::Protocol(format!("APPLY_INPUT: {other:?}"))),
        }
    }

    /// INPUT_KEY `c`, until `c` comes back in TERMINAL_OUTPUT; microseconds.
    pub fn echo(&mut self, c: char) -> Result<f64> {
        let key = Client::encode_key(&self.terminal, c);
        let t0 = Instant::now();
        self.client.send_encoded(&key)?;
        let want = c as u8;
        let t = &self.terminal;
        // Borrowed, as a client feeding output to its own screen would read it: the time
        // is the server's, not an allocation and a copy in the client.
        self.client.wait_for_raw(|frame| {
            Ok(TerminalOutputView::decode(frame)?
                .filter(|o| &o.terminal == t && o.bytes.contains(&want))
                .map(|_| ()))
        })?;
        Ok(micros(t0))
    }
}

/// A child on a PTY this process holds the master of.
pub struct DirectPty {
    child: PtyChild,
    buf: Vec<u8>,
}

impl DirectPty {
    /// Spawns `argv` on a fresh PTY.
    pub fn start(argv: &[String]) -> Result<Self> {
        Ok(Self {
            child: spawn_pty(argv)?,
            buf: vec![0; 4096],
        })
    }

    /// One write of `bytes` to the master; microseconds for the syscall.
    pub fn write(&mut self, bytes: &[u8]) -> Result<f64> {
        let t0 = Instant::now();
        write_pty(&self.child, bytes)?;
        Ok(micros(t0))
    }

    /// Writes `c` and waits for it to come back from the child; microseconds.
    pub fn echo(&mut self, c: char) -> Result<f64> {
        let t0 = Instant::now();
        write_pty(&self.child, &[c as u8])?;
        loop {
            let fd = self
                .child
                .master_fd()
                .ok_or_else(|| Error::Protocol("master closed".into()))?;
            if !wait_readable(fd, READ_TIMEOUT)? {
                return Err(Error::Timeout("the PTY echo".into()));
            }
            match self.child.read(&mut self.buf).context("PTY read")? {
                PtyRead::Data(n) if self.buf.get(..n).is_some_and(|b| b.contains(&(c as u8))) => {
                    return Ok(micros(t0));
                }
                PtyRead::Data(_) | PtyRead::WouldBlock => {}
                PtyRead::Eof => return Err(Error::Protocol("the echo child exited".into())),
            }
        }
    }

    /// Reads whatever is pending without waiting.
    pub fn drain(&mut self) -> Result<()> {
        while let PtyRead::Data(_) = self.child.read(&mut self.buf).context("PTY read")? {}
        Ok(())
    }
}

/// A tmux session running `argv` with a control client attached.
pub struct TmuxTerm {
    /// The tmux server (kept alive while this lives).
    pub tmux: Tmux,
    /// The control client.
    pub control: Control,
    /// The pane, as `%N`.
    pub pane: String,
}

impl TmuxTerm {
    /// A fresh tmux server with one session running `argv`, and a control client.
    pub fn start(argv: &[String]) -> Result<Self> {
        let tmux = Tmux::new();
        tmux.new_session("bench", argv, 2000)?;
        let pane = tmux.pane("bench")?;
        let control = tmux.control("bench")?;
        Ok(Self {
            tmux,
            control,
            pane,
        })
    }

    /// `send-keys -l BATCH` over the control connection, until its `%end`; microseconds.
    pub fn send_keys_ack(&mut self) -> Result<f64> {
        let cmd = format!("send-keys -t {} -l {BATCH}", self.pane);
        let t0 = Instant::now();
        self.control.send(&cmd)?;
        self.control.wait_end(|_| {})?;
        Ok(micros(t0))
    }

    /// `send-keys -l c` over the control connection, until `c` shows up in `%output`;
    /// microseconds. The command's `%end` is consumed too before returning.
    pub fn echo(&mut self, c: char) -> Result<f64> {
        let cmd = format!("send-keys -t {} -l {c}", self.pane);
        let t0 = Instant::now();
        self.control.send(&cmd)?;
        let (mut echoed, mut ended) = (None, false);
        while echoed.is_none() || !ended {
            let line = self
                .control
                .next_line()?
                .ok_or_else(|| Error::Protocol("tmux -C closed".into()))?;
            match classify(line) {
                Line::Output(d) => {
                    let mut hit = false;
                    unescape(d, |b| hit |= b == c as u8);
                    if hit && echoed.is_none() {
                        echoed = Some(micros(t0));
                    }
                }
                Line::End => ended = true,
                Line::Exit => return Err(Error::Protocol("tmux -C exited".into())),
                Line::Other => {}
            }
        }
        echoed.ok_or_else(|| Error::Protocol("no echo".into()))
    }

    /// The `tmux send-keys` command as a separate process, until it exits; microseconds.
    pub fn send_keys_command(&mut self) -> Result<f64> {
        let mut c = self.tmux.command();
        c.args(["send-keys", "-t", &self.pane, "-l", BATCH])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let t0 = Instant::now();
        let status = c.status().context("tmux send-keys")?;
        let us = micros(t0);
        if status.success() {
            Ok(us)
        } else {
            Err(Error::Protocol("tmux send-keys failed".into()))
        }
    }
}

/// Waits out the warm-up after the contenders were spawned.
pub fn warm_up() {
    std::thread::sleep(WARM);
}

/// The letter for operation `i` (so a stale echo is never mistaken for a fresh one).
pub fn letter(i: usize) -> char {
    char::from(b'a' + (i % 26) as u8)
}
