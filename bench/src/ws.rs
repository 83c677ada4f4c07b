//! The bench's WebSocket side: a server's `--listen-ws` door ([`WsTarget`]), a phux connection
//! over it for the bench's client ([`WsConn`]: each phux frame one binary message, as a
//! browser page sends them), and the raw pieces the attackers need (an upgrade request, a
//! client frame header). The client is tungstenite, the same RFC 6455 implementation the
//! conformance runner and the server's tests use (not the server's own codec).

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::protocol::{WebSocket, WebSocketConfig};
use tungstenite::{Error as WsError, HandshakeError, Message};

use crate::error::{Context, Error, Result};

/// Where a server's WebSocket listener is, and the secret it wants.
#[derive(Debug, Clone)]
pub struct WsTarget {
    /// The listener's address (loopback).
    pub addr: SocketAddr,
    /// The listener's secret (64 hex digits), read from the file the server named.
    pub secret: String,
}

impl WsTarget {
    /// Parses the server's `phux-mio-server websocket on ws://ADDR/ (secret in PATH)` line and
    /// reads the secret from PATH.
    pub fn from_line(line: &str) -> Result<Self> {
        let shape = || Error::Protocol(format!("not a websocket line: {line:?}"));
        let rest = line
            .trim_end()
            .strip_prefix("phux-mio-server websocket on ws://")
            .ok_or_else(shape)?;
        let (addr, rest) = rest.split_once("/ (secret in ").ok_or_else(shape)?;
        let path = rest.strip_suffix(')').ok_or_else(shape)?;
        let secret = std::fs::read_to_string(path)
            .context("the WebSocket secret")?
            .trim()
            .to_owned();
        Ok(Self {
            addr: addr.parse().map_err(|_| shape())?,
            secret,
        })
    }

    /// The listener's own origin, as a page it served sends it.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A WebSocket that passed the handshake as the listener's own page does (its origin,
    /// `phux` and the secret offered), or with `secret` in place of the real one; each read
    /// and write may block for `timeout`.
    pub fn handshake_as(&self, secret: &str, timeout: Duration) -> Result<WebSocket<TcpStream>> {
        let mut request = format!("ws://{}/", self.addr)
            .into_client_request()
            .map_err(|e| Error::Protocol(format!("a WebSocket request: {e}")))?;
        let header = |v: String| {
            HeaderValue::from_str(&v).map_err(|e| Error::Protocol(format!("a header: {e}")))
        };
        let headers = request.headers_mut();
        headers.insert("Origin", header(self.origin())?);
        headers.insert(
            "Sec-WebSocket-Protocol",
            header(format!("phux, phux-secret.{secret}"))?,
        );
        let tcp = TcpStream::connect(self.addr).context("connecting to the WebSocket")?;
        tcp.set_read_timeout(Some(timeout))
            .context("socket timeout")?;
        // Writes that cannot go in for this long count as a stuck peer, not a hang.
        tcp.set_write_timeout(Some(timeout))
            .context("socket timeout")?;
        let _ = tcp.set_nodelay(true);
        match tungstenite::client::client_with_config(request, tcp, Some(config())) {
            Ok((ws, _)) => Ok(ws),
            Err(HandshakeError::Failure(WsError::Http(r))) => Err(Error::Protocol(format!(
                "the WebSocket upgrade was answered {}",
                r.status()
            ))),
            Err(e) => Err(Error::Protocol(format!("the WebSocket handshake: {e}"))),
        }
    }

    /// A WebSocket as the listener's own page opens it; each read and write may block for
    /// `timeout`.
    pub fn handshake(&self, timeout: Duration) -> Result<WebSocket<TcpStream>> {
        self.handshake_as(&self.secret, timeout)
    }

    /// The bytes of an upgrade request as a page of ours sends it, for attackers that write
    /// them raw (in pieces, or never to the end).
    pub fn raw_request(&self) -> Vec<u8> {
        format!(
            "GET / HTTP/1.1\r\nHost: {addr}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Protocol: phux, phux-secret.{secret}\r\n\r\n",
            addr = self.addr,
            origin = self.origin(),
            secret = self.secret,
        )
        .into_bytes()
    }
}

/// The client's limits: a server message is one phux frame, up to its 4-byte length and
/// 16 MiB, sent as one WebSocket frame (tungstenite's default frame limit is 16 MiB).
fn config() -> WebSocketConfig {
    let largest = 4 + phux_proto::framing::MAX_FRAME_LEN as usize + 16;
    WebSocketConfig::default()
        .max_message_size(Some(largest))
        .max_frame_size(Some(largest))
}

/// A phux byte stream over a WebSocket: what is written is cut into phux frames, each sent as
/// one binary message; the messages read are handed on as bytes.
#[derive(Debug)]
pub struct WsConn {
    ws: WebSocket<TcpStream>,
    /// The message being handed on, and how much of it was.
    inbox: Vec<u8>,
    at: usize,
}

impl WsConn {
    /// Wraps a WebSocket that passed its handshake.
    pub fn new(ws: WebSocket<TcpStream>) -> Self {
        Self {
            ws,
            inbox: Vec::new(),
            at: 0,
        }
    }

    /// How long one read may block.
    pub fn set_read_timeout(&self, timeout: Duration) -> io::Result<()> {
        self.ws.get_ref().set_read_timeout(Some(timeout))
    }

    /// Reads the server's bytes: the rest of the last message, or the next message.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.inbox.len() {
            match self.ws.read() {
                Ok(Message::Binary(bytes)) => {
                    self.inbox.clear();
                    self.inbox.extend_from_slice(&bytes);
                    self.at = 0;
                }
                Ok(Message::Text(_)) => {
                    return Err(io::Error::other("a text message from the server"));
                }
                Ok(Message::Close(_)) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {
                    return Ok(0);
                }
                Ok(_) => {}
                Err(WsError::Io(e)) => {
                    // A read timeout reads as "nothing yet", as on the socket.
                    return Err(if e.kind() == ErrorKind::TimedOut {
                        ErrorKind::WouldBlock.into()
                    } else {
                        e
                    });
                }
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        let rest = self.inbox.get(self.at..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(rest.get(..n).unwrap_or_default());
        self.at += n;
        Ok(n)
    }

    /// Sends `bytes` (whole phux frames; a piece that is not one goes as a message of its
    /// own, which the server refuses).
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        for message in phux_proto::framing::frame_pieces(bytes) {
            self.ws
                .write(Message::binary(message.to_vec()))
                .map_err(io::Error::other)?;
        }
        self.ws.flush().map_err(|e| match e {
            WsError::Io(e) => e,
            other => io::Error::other(other),
        })
    }

    /// The TCP connection underneath, for raw writes between messages.
    pub fn tcp(&mut self) -> &mut TcpStream {
        self.ws.get_mut()
    }
}

/// The header of a client frame (FIN set, masked with the all-zero key, so the payload that
/// follows is written as it is) announcing `len` payload bytes of `opcode` (2: binary).
pub fn client_frame_header(opcode: u8, len: u64) -> Vec<u8> {
    let mut h = vec![0x80 | (opcode & 0x0f)];
    match len {
        0..=125 => h.push(0x80 | len as u8),
        126..=0xffff => {
            h.push(0x80 | 0x7e);
            h.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            h.push(0x80 | 0x7f);
            h.extend_from_slice(&len.to_be_bytes());
        }
    }
    h.extend_from_slice(&[0; 4]);
    h
}

/// Writes `bytes` raw, then reads until the server ends the connection (or `within` passes):
/// what it answered. A server that closes before all is written is answered too.
pub fn raw_exchange(tcp: &mut TcpStream, bytes: &[u8], within: Duration) -> Vec<u8> {
    let _ = tcp.set_read_timeout(Some(within));
    let _ = tcp.set_write_timeout(Some(within));
    let _ = tcp.write_all(bytes);
    let mut got = Vec::new();
    let _ = tcp.read_to_end(&mut got);
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_headers_use_the_shortest_length_and_a_mask() {
        assert_eq!(client_frame_header(2, 5), vec![0x82, 0x85, 0, 0, 0, 0]);
        assert_eq!(
            client_frame_header(2, 300),
            vec![0x82, 0xfe, 0x01, 0x2c, 0, 0, 0, 0]
        );
        let big = client_frame_header(2, 1 << 40);
        assert_eq!(big.len(), 14);
        assert_eq!(big.get(1), Some(&0xff));
        assert_eq!(big.get(2..10), Some(&(1u64 << 40).to_be_bytes()[..]));
    }

    #[test]
    fn the_websocket_line_names_the_address_and_the_secret_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("s.sock.ws-secret");
        std::fs::write(&file, "ab12\n").expect("secret");
        let line = format!(
            "phux-mio-server websocket on ws://127.0.0.1:8787/ (secret in {})\n",
            file.display()
        );
        let t = WsTarget::from_line(&line).expect("parsed");
        assert_eq!(t.addr, "127.0.0.1:8787".parse().expect("addr"));
        assert_eq!(t.secret, "ab12");
        assert_eq!(t.origin(), "http://127.0.0.1:8787");
        assert!(WsTarget::from_line("phux-mio-server listening on x").is_err());
    }
}
