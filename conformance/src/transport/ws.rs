//! A WebSocket to a running server (`--ws URL`): each connection is a WebSocket client
//! (tungstenite) that sends each phux frame as one binary message and hands on the bytes of the
//! server's messages, so a transcript checks the same server the same way as over its socket.
//!
//! What a transcript sends in one step is cut into its phux frames, one message each; bytes
//! that do not make a whole frame (a malformed step) go as one message of their own, which the
//! server may refuse as not one frame (spec/websocket.md, WS.FRAME.1) where a stream would wait
//! for the rest.

use std::io::{self, ErrorKind};
use std::net::{TcpStream, ToSocketAddrs};

use rustix::net::{AddressFamily, SocketType, sockopt};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::Duration;

use phux_proto::notation::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::protocol::WebSocket;
use tungstenite::{Error as WsError, Message};

use super::stream::{Gate, real_vars, recv_from};
use super::{ConnKey, Connector, Recv, Transport, TransportError};

/// How long the connection's thread waits in a read before it looks for bytes to send.
const POLL: Duration = Duration::from_millis(2);

/// A WebSocket to a server that is already running.
#[derive(Clone, Debug)]
pub struct WsConnector {
    /// `ws://HOST:PORT/PATH`.
    pub url: String,
    /// The listener's secret, offered as the `phux-secret.<hex>` subprotocol beside `phux`
    /// (phux-mio-server's listener needs it; the phux reference's loopback listener takes none).
    pub secret: Option<String>,
    /// The `Origin` to send, as a page of that origin would; none: a non-browser client.
    pub origin: Option<String>,
    /// The probe child's command line, if the server can run it.
    pub probe: Option<Vec<String>>,
}

impl Connector for WsConnector {
    fn kind(&self) -> &'static str {
        "ws"
    }

    fn describe(&self) -> String {
        format!("ws {}", self.url)
    }

    fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(WsTransport {
            connector: self.clone(),
            conns: Vec::new(),
        }))
    }
}

struct WsConn {
    /// Bytes to send; dropping it ends the connection (a close frame, then the end).
    out: Option<Sender<Vec<u8>>>,
    rx: Receiver<Option<Vec<u8>>>,
    gate: Arc<Gate>,
    eof: bool,
    /// For a disconnect the thread would not see while it waits in a read.
    tcp: TcpStream,
}

struct WsTransport {
    connector: WsConnector,
    conns: Vec<WsConn>,
}

impl WsTransport {
    fn conn(&mut self, conn: ConnKey) -> Result<&mut WsConn, TransportError> {
        self.conns
            .get_mut(conn)
            .ok_or_else(|| TransportError::Unsupported(format!("no connection {conn}")))
    }
}

impl WsConnector {
    /// A connector for `url`, with the secret read from `secret_file` (phux-mio-server prints
    /// its path at start; a file, so the secret shows in no process list).
    pub fn new(
        url: &str,
        secret_file: Option<&std::path::Path>,
        origin: Option<String>,
        probe: Option<Vec<String>>,
    ) -> Result<Self, String> {
        let secret = match secret_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("the WebSocket secret {}: {e}", path.display()))?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        Ok(Self {
            url: url.to_owned(),
            secret,
            origin,
            probe,
        })
    }

    /// Connects and completes the WebSocket handshake.
    fn handshake(&self) -> Result<WebSocket<TcpStream>, TransportError> {
        let mut request = self.url.as_str().into_client_request().map_err(|e| {
            TransportError::io(format!("the URL {}", self.url), io::Error::other(e))
        })?;
        let uri = request.uri().clone();
        let host = uri.host().unwrap_or("127.0.0.1").trim_matches(['[', ']']);
        let port = uri.port_u16().unwrap_or(80);
        let header = |v: &str| {
            HeaderValue::from_str(v)
                .map_err(|e| TransportError::io("a header value", io::Error::other(e)))
        };
        if let Some(origin) = &self.origin {
            request.headers_mut().insert("Origin", header(origin)?);
        }
        if let Some(secret) = &self.secret {
            let offer = format!("phux, phux-secret.{secret}");
            request
                .headers_mut()
                .insert("Sec-WebSocket-Protocol", header(&offer)?);
        }
        let tcp = connect_small((host, port))
            .map_err(|e| TransportError::io(format!("connect {}", self.url), e))?;
        let _ = tcp.set_nodelay(true);
        let (ws, _) = tungstenite::client(request, tcp).map_err(|e| {
            let why = match e {
                tungstenite::HandshakeError::Failure(WsError::Http(r)) => {
                    format!("the server answered {}", r.status())
                }
                other => other.to_string(),
            };
            TransportError::io(
                format!("WebSocket handshake with {}", self.url),
                io::Error::other(why),
            )
        })?;
        Ok(ws)
    }
}

impl Transport for WsTransport {
    fn virtual_time(&self) -> bool {
        false
    }

    fn shared_server(&self) -> bool {
        true
    }

    fn local_socket(&self) -> bool {
        false
    }

    fn byte_stream(&self) -> bool {
        false
    }

    fn max_connections(&self) -> Option<usize> {
        None
    }

    fn vars(&self) -> Vec<(String, Value)> {
        real_vars(self.connector.probe.as_deref())
    }

    fn connect(&mut self) -> Result<ConnKey, TransportError> {
        let ws = self.connector.handshake()?;
        let tcp = ws
            .get_ref()
            .try_clone()
            .map_err(|e| TransportError::io("clone the socket", e))?;
        ws.get_ref()
            .set_read_timeout(Some(POLL))
            .map_err(|e| TransportError::io("set a read timeout", e))?;
        let (out, outgoing) = mpsc::channel();
        let (incoming, rx) = mpsc::channel();
        let gate = Arc::new(Gate::default());
        let thread_gate = Arc::clone(&gate);
        std::thread::spawn(move || pump(ws, &outgoing, &incoming, &thread_gate));
        self.conns.push(WsConn {
            out: Some(out),
            rx,
            gate,
            eof: false,
            tcp,
        });
        Ok(self.conns.len() - 1)
    }

    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError> {
        let c = self.conn(conn)?;
        if let Some(out) = &c.out {
            // A connection the server ended takes nothing more; the transcript's expectations
            // decide whether that was right.
            let _ = out.send(bytes.to_vec());
        }
        Ok(())
    }

    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError> {
        let c = self.conn(conn)?;
        Ok(recv_from(&c.rx, &mut c.eof, wait))
    }

    fn disconnect(&mut self, conn: ConnKey) {
        if let Ok(c) = self.conn(conn) {
            c.out = None;
            let _ = c.tcp.shutdown(std::net::Shutdown::Both);
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

impl Drop for WsTransport {
    fn drop(&mut self) {
        for c in &mut self.conns {
            c.out = None;
            let _ = c.tcp.shutdown(std::net::Shutdown::Both);
            c.gate.set(false);
        }
    }
}

/// The connection's thread: sends what `outgoing` brings (each phux frame as one message),
/// and, while `gate` is open, passes each message the server sends to `incoming`; `None` at
/// the end.
fn pump(
    mut ws: WebSocket<TcpStream>,
    outgoing: &Receiver<Vec<u8>>,
    incoming: &Sender<Option<Vec<u8>>>,
    gate: &Gate,
) {
    loop {
        loop {
            match outgoing.try_recv() {
                Ok(bytes) => {
                    for message in phux_proto::framing::frame_pieces(&bytes) {
                        if ws.send(Message::binary(message.to_vec())).is_err() {
                            break;
                        }
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    let _ = ws.close(None);
                    let _ = ws.flush();
                    let _ = incoming.send(None);
                    return;
                }
            }
        }
        if gate.paused() {
            // Not reading: the server's bytes pile up in the kernel, as for a stalled reader.
            match outgoing.recv_timeout(POLL) {
                Ok(bytes) => {
                    for message in phux_proto::framing::frame_pieces(&bytes) {
                        let _ = ws.send(Message::binary(message.to_vec()));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = incoming.send(None);
                    return;
                }
            }
            continue;
        }
        match ws.read() {
            Ok(Message::Binary(bytes)) => {
                if incoming.send(Some(bytes.to_vec())).is_err() {
                    return;
                }
            }
            Ok(Message::Close(_)) => {
                let _ = ws.flush();
                let _ = incoming.send(None);
                return;
            }
            // A text message is no phux frame: passed on as bytes, for the case to fail on.
            Ok(Message::Text(text)) => {
                if incoming.send(Some(text.as_bytes().to_vec())).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(WsError::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => {
                let _ = incoming.send(None);
                return;
            }
        }
    }
}

/// The client's receive buffer: about a Unix socket's, so that a connection that stops reading
/// (`set_reading(false)`) is felt by the server after as much as over `--socket`, not after the
/// megabytes TCP's autotuning would take in.
const RECEIVE_BUFFER: usize = 64 * 1024;

/// A TCP connection with a [`RECEIVE_BUFFER`] set before the handshake (afterwards the kernel's
/// window may already have grown).
fn connect_small(to: impl ToSocketAddrs) -> io::Result<TcpStream> {
    let mut last = io::Error::from(ErrorKind::AddrNotAvailable);
    for addr in to.to_socket_addrs()? {
        let family = if addr.is_ipv4() {
            AddressFamily::INET
        } else {
            AddressFamily::INET6
        };
        let fd = rustix::net::socket(family, SocketType::STREAM, None)?;
        sockopt::set_socket_recv_buffer_size(&fd, RECEIVE_BUFFER)?;
        match rustix::net::connect(&fd, &addr) {
            Ok(()) => return Ok(TcpStream::from(fd)),
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}
