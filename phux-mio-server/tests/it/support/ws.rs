//! The WebSocket listener from the outside: the real server started with `--listen-ws
//! 127.0.0.1:0`, and clients built on tungstenite (an RFC 6455 implementation we did not write).
//! [`WsServer::client`] gives the frame-level [`Client`] of the other tests over a WebSocket: a
//! thread owns the socket and turns each phux frame into one binary message and back.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command as Process, Stdio};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::Duration;

use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::protocol::WebSocket;
use tungstenite::{Message, handshake::client::Response};

use super::client::{Client, DEADLINE};

/// The server binary with its WebSocket listener, running until dropped (then killed).
pub(crate) struct WsServer {
    pub(crate) process: Child,
    pub(crate) socket: PathBuf,
    pub(crate) addr: SocketAddr,
    pub(crate) secret: String,
    pub(crate) secret_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl WsServer {
    /// `phux-mio-server --socket <tmp>/s.sock --listen-ws 127.0.0.1:0 ARGS`, waited for.
    pub(crate) fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let mut process = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
            .arg("--socket")
            .arg(&socket)
            .args(["--listen-ws", "127.0.0.1:0"])
            .args(if args.contains(&"--log-level") {
                &[][..]
            } else {
                &["--log-level", "warn"][..]
            })
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start server");
        let stdout = process.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for _ in 0..2 {
                let Some(Ok(line)) = lines.next() else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
            // Keep reading so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let ws_line = rx.recv_timeout(DEADLINE).expect("no websocket line");
        let ready = rx.recv_timeout(DEADLINE).expect("no ready line");
        assert!(
            ready.starts_with("phux-mio-server listening on"),
            "{ready:?}"
        );
        // `phux-mio-server websocket on ws://127.0.0.1:PORT/ (secret in PATH)`
        let rest = ws_line
            .strip_prefix("phux-mio-server websocket on ws://")
            .unwrap_or_else(|| panic!("{ws_line:?}"));
        let (addr, rest) = rest.split_once("/ (secret in ").expect("the line's shape");
        let secret_file = PathBuf::from(rest.trim_end_matches(')'));
        let secret = std::fs::read_to_string(&secret_file)
            .expect("the secret file")
            .trim()
            .to_owned();
        Self {
            process,
            socket,
            addr: addr.parse().expect("addr"),
            secret,
            secret_file,
            _dir: dir,
        }
    }

    /// This listener's own origin, as a page it served would send it.
    pub(crate) fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The subprotocols a page offers: phux, and the secret.
    pub(crate) fn protocols(&self) -> String {
        format!("phux, phux-secret.{}", self.secret)
    }

    /// A handshake with the given `Origin` and `Sec-WebSocket-Protocol` (either left out when
    /// `None`): the socket, or the HTTP status of the refusal.
    pub(crate) fn handshake(
        &self,
        origin: Option<&str>,
        protocols: Option<&str>,
    ) -> Result<(WebSocket<TcpStream>, Response), u16> {
        let mut req = format!("ws://{}/", self.addr)
            .into_client_request()
            .expect("request");
        if let Some(o) = origin {
            req.headers_mut()
                .insert("Origin", HeaderValue::from_str(o).expect("origin"));
        }
        if let Some(p) = protocols {
            req.headers_mut().insert(
                "Sec-WebSocket-Protocol",
                HeaderValue::from_str(p).expect("protocols"),
            );
        }
        let tcp = TcpStream::connect(self.addr).expect("connect");
        tcp.set_read_timeout(Some(DEADLINE)).expect("timeout");
        match tungstenite::client(req, tcp) {
            Ok(ok) => Ok(ok),
            Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(r))) => {
                Err(r.status().as_u16())
            }
            Err(e) => panic!("handshake: {e}"),
        }
    }

    /// A socket that passed the handshake as a page of ours would.
    pub(crate) fn connect(&self) -> WebSocket<TcpStream> {
        self.handshake(Some(&self.origin()), Some(&self.protocols()))
            .expect("refused")
            .0
    }

    /// The frame-level test client over a WebSocket.
    pub(crate) fn client(&self) -> Client {
        let ws = self.connect();
        let (to_ws, outgoing) = mpsc::channel::<Vec<u8>>();
        let (incoming, from_ws) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || pump(ws, &outgoing, &incoming));
        Client::stdio(ChannelWriter(to_ws), ChannelReader::new(from_ws))
    }
}

impl Drop for WsServer {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Moves frames between the channels and the socket until either side ends: the bytes written
/// are split into phux frames, each sent as one binary message; each message received is
/// passed on as bytes.
fn pump(mut ws: WebSocket<TcpStream>, outgoing: &Receiver<Vec<u8>>, incoming: &Sender<Vec<u8>>) {
    let _ = ws
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(5)));
    let mut pending = Vec::new();
    loop {
        loop {
            match outgoing.try_recv() {
                Ok(bytes) => pending.extend_from_slice(&bytes),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    return;
                }
            }
        }
        while let Some(len) = pending.first_chunk::<4>().map(|b| u32::from_be_bytes(*b)) {
            let total = 4 + len as usize;
            if pending.len() < total {
                break;
            }
            let rest = pending.split_off(total);
            let frame = std::mem::replace(&mut pending, rest);
            if ws.send(Message::binary(frame)).is_err() {
                return;
            }
        }
        match ws.read() {
            Ok(Message::Binary(bytes)) => {
                if incoming.send(bytes.to_vec()).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

struct ChannelWriter(Sender<Vec<u8>>);

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .send(buf.to_vec())
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

struct ChannelReader {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
}

impl ChannelReader {
    fn new(rx: Receiver<Vec<u8>>) -> Self {
        Self {
            rx,
            buf: Vec::new(),
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buf.is_empty() {
            match self.rx.recv() {
                Ok(bytes) => self.buf = bytes,
                Err(_) => return Ok(0),
            }
        }
        let n = self.buf.len().min(out.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf.drain(..n);
        Ok(n)
    }
}

/// Sends `bytes` over a raw TCP connection and reads what comes back until the server closes
/// it or the deadline passes.
pub(crate) fn raw_exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(DEADLINE)).expect("timeout");
    tcp.write_all(bytes).expect("send");
    let mut got = Vec::new();
    let _ = tcp.read_to_end(&mut got);
    got
}
