//! An upgraded WebSocket connection as the driver sees a transport: reads give the phux byte
//! stream the client's binary messages carried, writes take the engine's byte stream and send
//! each phux frame as one binary message.
//!
//! The engine never learns the transport ([WS.FRAME.1]): what it is given and what it gives
//! are the same bytes as over the Unix socket, so its budgets, fairness and limits hold here
//! unchanged. What is the transport's own (pings, the close handshake) is answered here.

use std::io::{self, IoSlice, Read as _, Write};
use std::net::Shutdown;

use mio::net::TcpStream;
use phux_proto::framing::LENGTH_LEN;

use serde::{Deserialize, Serialize};
use tracing::debug;

use super::codec::{
    Control, Inbound, MAX_CONTROL_FRAME_LEN, Outbound, WsError, close_frame, pong_frame,
};

/// The largest read of the socket at once (as the driver's reads of every other source).
pub const READ_CHUNK: usize = 64 * 1024;

/// What one read got: the phux bytes, and whether nothing the peer had sent is left (the
/// driver's `Got`, which the transport makes of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    pub n: usize,
    pub drained: bool,
}

/// One upgraded WebSocket connection.
#[derive(Debug)]
pub struct WsStream {
    tcp: TcpStream,
    /// Raw bytes read and not yet decoded: at most one read's worth (a frame's payload
    /// streams through, so nothing here waits for a whole frame).
    raw: Vec<u8>,
    inbound: Inbound,
    outbound: Outbound,
    /// The header of the message being written, not yet all handed to the kernel.
    header: Vec<u8>,
    /// A pong waiting for a message boundary: only the latest ping's (RFC 6455 §5.5.3 lets an
    /// endpoint answer only the most recent), so a ping flood holds 127 bytes here at most.
    pong: Option<Vec<u8>>,
    /// Why reading ended with a broken rule: the close frame's code and reason.
    close: Option<(u16, WsError)>,
    /// The close frame went out.
    closed: bool,
    /// Reading is over (the client's close, or a broken rule): once `decoded` is handed on,
    /// reads report the end.
    ended: bool,
    /// Decoded payload waiting for the caller's buffer.
    decoded: Vec<u8>,
}

impl WsStream {
    /// A connection whose handshake is done; `early` holds what the client sent after its
    /// request (frames may follow the request in the same segment).
    pub fn new(tcp: TcpStream, early: &[u8]) -> Self {
        let mut raw = Vec::with_capacity(READ_CHUNK);
        raw.extend_from_slice(early.get(..READ_CHUNK).unwrap_or(early));
        Self {
            tcp,
            raw,
            inbound: Inbound::default(),
            outbound: Outbound::default(),
            header: Vec::new(),
            pong: None,
            close: None,
            closed: false,
            ended: false,
            decoded: Vec::new(),
        }
    }

    /// The connection as it crossed an in-place upgrade ([WS.UPGRADE.2]): the socket, and the
    /// state [`Self::state`] took of it in the previous image.
    pub fn adopted(tcp: TcpStream, state: WsState) -> Self {
        let mut raw = Vec::with_capacity(READ_CHUNK.max(state.raw.len()));
        raw.extend_from_slice(&state.raw);
        Self {
            tcp,
            raw,
            inbound: state.inbound,
            outbound: state.outbound,
            header: state.header,
            pong: state.pong,
            close: state.close,
            closed: state.closed,
            ended: state.ended,
            decoded: state.decoded,
        }
    }

    /// Everything of the connection but its socket, for an in-place upgrade ([WS.UPGRADE.2]):
    /// a frame the client began (a header or a payload cut short) completes in the next
    /// image, and a message begun to the client goes on where it stopped.
    pub fn state(&self) -> WsState {
        WsState {
            raw: self.raw.clone(),
            inbound: self.inbound.clone(),
            outbound: self.outbound.clone(),
            header: self.header.clone(),
            pong: self.pong.clone(),
            close: self.close,
            closed: self.closed,
            ended: self.ended,
            decoded: self.decoded.clone(),
        }
    }

    /// The TCP socket (for its descriptor).
    pub fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// One read: at most one `read(2)` of the socket, decoded. Returns the phux bytes the
    /// client's messages carried; `n == 0` only at the end of the stream (the peer's EOF or its
    /// close frame). A read that took bytes but produced no phux bytes (control frames, an
    /// empty fragment) is `Interrupted`, so the driver reads again within its per-wake bound
    /// rather than waiting for an edge that will not come.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<Read> {
        if self.ended && self.decoded.is_empty() {
            return Ok(Read {
                n: 0,
                drained: true,
            });
        }
        let mut short = false;
        if self.decoded.is_empty() && !self.ended && !self.raw_has_work() {
            let start = self.raw.len();
            let room = READ_CHUNK.saturating_sub(start);
            self.raw.resize(start + room, 0);
            let read = loop {
                match self.tcp.read(self.raw.get_mut(start..).unwrap_or_default()) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    other => break other,
                }
            };
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.raw.truncate(start);
                    return Err(e);
                }
            };
            self.raw.truncate(start + n);
            if n == 0 {
                return Ok(Read {
                    n: 0,
                    drained: true,
                });
            }
            short = n < room;
        }
        if self.decoded.is_empty() && !self.ended {
            match self.decode_raw() {
                Ok(false) => {}
                Ok(true) => self.ended = true,
                Err(e) => {
                    // [WS.FRAME.5] A broken rule ends reading as the client's close would: the
                    // frames before it are handed on and answered, then a close frame whose
                    // code and reason name the rule.
                    debug!(error = %e, "WebSocket client broke the framing rules");
                    self.close = Some((e.close_code(), e));
                    self.ended = true;
                }
            }
        }
        if self.decoded.is_empty() {
            if self.ended {
                return Ok(Read {
                    n: 0,
                    drained: true,
                });
            }
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = self.decoded.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(self.decoded.get(..n).unwrap_or_default());
        self.decoded.drain(..n);
        Ok(Read {
            n,
            // After the end, the next read reports it (n == 0) without an event.
            drained: short && !self.ended && self.decoded.is_empty() && !self.raw_has_work(),
        })
    }

    /// Whether undecoded bytes wait (only what came with the handshake: a decode takes all it
    /// is given, a partial header into the decoder's own state).
    fn raw_has_work(&self) -> bool {
        !self.raw.is_empty()
    }

    /// Decodes `raw` into `decoded`, answering control frames; `Ok(true)` at the client's
    /// close.
    fn decode_raw(&mut self) -> Result<bool, WsError> {
        let mut at = 0;
        let mut closed = false;
        while at < self.raw.len() {
            let rest = self.raw.get(at..).unwrap_or_default();
            let (n, control) = self.inbound.decode(rest, &mut self.decoded)?;
            at += n;
            match control {
                Some(Control::Ping(payload)) => self.pong = Some(pong_frame(&payload)),
                Some(Control::Close) => {
                    closed = true;
                    break;
                }
                None => {}
            }
        }
        if closed {
            // Nothing after a close is read.
            self.raw.clear();
        } else {
            self.raw.drain(..at);
        }
        Ok(closed)
    }

    /// A pong waits to be written.
    pub fn wants_write(&self) -> bool {
        !self.closed && self.pong.is_some()
    }

    /// At a message boundary: writes the waiting pong (and the rest of one begun earlier).
    /// `Ok(true)` when nothing is left. The close frame goes with [`Self::shutdown`].
    pub fn write_control(&mut self) -> io::Result<bool> {
        if !self.outbound.at_boundary() || self.closed {
            return Ok(true);
        }
        while !self.header.is_empty() {
            match self.tcp.write(&self.header) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.header.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(pong) = self.pong.take() {
            match self.tcp.write(&pong) {
                Ok(n) if n == pong.len() => {}
                Ok(n) => {
                    // Rare (a nearly full socket): the rest goes as a "header" of nothing.
                    self.header = pong.get(n..).unwrap_or_default().to_vec();
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.pong = Some(pong);
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Before the socket closes: the close frame, if it was not sent ([WS.CLOSE.1]).
    pub fn shutdown(&mut self) {
        if !self.closed && self.outbound.at_boundary() && self.header.is_empty() {
            self.closed = true;
            let frame = match self.close {
                Some((code, why)) => close_frame(code, why.to_string().as_bytes()),
                None => close_frame(super::codec::close::NORMAL, b""),
            };
            let _ = self.tcp.write(&frame);
        }
        let _ = self.tcp.shutdown(Shutdown::Both);
    }

    /// Writes the engine's bytes `bufs` (whole phux frames, one after another, the first
    /// possibly begun by an earlier call): each frame's message header goes just before it.
    /// Returns how many of the engine's bytes the kernel took.
    fn write_frames(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        // A header (or a pong's rest) begun earlier goes first.
        while !self.header.is_empty() {
            let n = self.tcp.write(&self.header)?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.header.drain(..n);
        }
        if self.outbound.at_boundary() {
            if self.pong.is_some() && !self.write_control()? {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let Some(field) = length_field(bufs) else {
                return Err(io::Error::other(
                    "a phux frame's length field was split from its frame",
                ));
            };
            let (h, n) = self.outbound.start(field);
            self.header = h.get(..n).unwrap_or_default().to_vec();
        }
        // The header and as much of this message as the slices hold, in one writev.
        let left = self.outbound.left();
        let mut slices = Vec::with_capacity(bufs.len() + 1);
        slices.push(IoSlice::new(&self.header));
        let mut offered: u64 = 0;
        for b in bufs {
            let room = left - offered;
            if room == 0 {
                break;
            }
            let take = b.len().min(usize::try_from(room).unwrap_or(usize::MAX));
            slices.push(IoSlice::new(b.get(..take).unwrap_or_default()));
            offered += take as u64;
        }
        let written = self.tcp.write_vectored(&slices)?;
        let header_part = written.min(self.header.len());
        self.header.drain(..header_part);
        let payload = written - header_part;
        self.outbound.advance(payload as u64);
        if payload == 0 {
            // The kernel took the header (or part of it) and nothing more: it is full.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(payload)
    }
}

/// A WebSocket connection's state without its socket: what crosses an in-place upgrade
/// ([WS.UPGRADE.2]). Plain data; [`Self::check`] holds it to the bounds the live connection
/// keeps, so an image cannot make the next image hold more than a connection ever does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsState {
    #[serde(with = "phux_core::upgrade::bytes")]
    raw: Vec<u8>,
    inbound: Inbound,
    outbound: Outbound,
    #[serde(with = "phux_core::upgrade::bytes")]
    header: Vec<u8>,
    pong: Option<Vec<u8>>,
    close: Option<(u16, WsError)>,
    closed: bool,
    ended: bool,
    #[serde(with = "phux_core::upgrade::bytes")]
    decoded: Vec<u8>,
}

/// Why a carried connection's state is not one a live connection can be in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WsStateError {
    /// A buffer holds more than the connection ever holds there.
    #[error("its {what} holds {len} bytes, more than the {max} a connection holds")]
    TooLong {
        /// Which buffer.
        what: &'static str,
        /// What it holds.
        len: usize,
        /// The most it holds live.
        max: usize,
    },
    /// The decoder's own state is not one it can be in.
    #[error("its frame decoder: {0}")]
    Decoder(&'static str),
}

impl WsState {
    /// Whether every buffer is within the bound the live connection keeps it to: one read
    /// ([`READ_CHUNK`]) undecoded or decoded, one control frame's bytes for a pong or a
    /// header's rest, and the decoder's own.
    pub fn check(&self) -> Result<(), WsStateError> {
        let bounds = [
            ("undecoded bytes", self.raw.len(), READ_CHUNK),
            ("decoded bytes", self.decoded.len(), READ_CHUNK),
            ("unwritten header", self.header.len(), MAX_CONTROL_FRAME_LEN),
            (
                "pong",
                self.pong.as_ref().map_or(0, Vec::len),
                MAX_CONTROL_FRAME_LEN,
            ),
        ];
        for (what, len, max) in bounds {
            if len > max {
                return Err(WsStateError::TooLong { what, len, max });
            }
        }
        self.inbound.check().map_err(WsStateError::Decoder)
    }
}

/// The first 4 bytes of `bufs` (a phux frame's length field), gathered across slices.
fn length_field(bufs: &[IoSlice<'_>]) -> Option<[u8; LENGTH_LEN]> {
    let mut field = [0u8; LENGTH_LEN];
    let mut got = 0;
    for b in bufs {
        for &byte in b.iter() {
            *field.get_mut(got)? = byte;
            got += 1;
            if got == LENGTH_LEN {
                return Some(field);
            }
        }
    }
    None
}

impl Write for WsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_frames(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.write_frames(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{FlushState, WriteQueue};
    use tungstenite::Message;
    use tungstenite::protocol::{Role, WebSocket};

    fn pair() -> (WsStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        server.set_nonblocking(true).expect("nonblocking");
        (WsStream::new(TcpStream::from_std(server), &[]), client)
    }

    fn phux_frame(n: usize, fill: u8) -> Vec<u8> {
        let mut f = ((n + 1) as u32).to_be_bytes().to_vec();
        f.push(0x7f);
        f.extend(std::iter::repeat_n(fill, n));
        f
    }

    #[test]
    fn frames_written_through_a_full_socket_arrive_one_message_each() {
        let (ws, client) = pair();
        // Sizes around every header form (7-bit, 16-bit, 64-bit lengths), many small ones
        // (more than one vectored write's slices), and one far larger than a socket buffer.
        let mut frames = Vec::new();
        for (i, n) in [0usize, 1, 120, 121, 122, 65_530, 65_531, 70_000, 3 << 20]
            .into_iter()
            .chain(std::iter::repeat_n(3, 200))
            .enumerate()
        {
            frames.push(phux_frame(n, i as u8));
        }
        let mut queue = WriteQueue::new();
        for f in &frames {
            queue.push(f.clone());
        }
        let reader = std::thread::spawn(move || {
            let mut ws = WebSocket::from_raw_socket(client, Role::Client, None);
            let mut got = Vec::new();
            loop {
                match ws.read() {
                    Ok(Message::Binary(b)) => got.push(b.to_vec()),
                    Ok(Message::Close(_)) | Err(_) => return got,
                    Ok(_) => {}
                }
            }
        });
        let mut transport = ws;
        let mut sent = 0;
        loop {
            let (n, state) = queue.flush_to(&mut transport);
            sent += n;
            match state {
                FlushState::Drained => break,
                FlushState::Blocked => std::thread::sleep(std::time::Duration::from_millis(1)),
                FlushState::Failed(e) => panic!("{e}"),
            }
        }
        assert_eq!(sent, frames.iter().map(Vec::len).sum::<usize>());
        transport.shutdown();
        let got = reader.join().expect("reader");
        assert_eq!(got.len(), frames.len());
        assert!(got == frames, "a message differs from its frame");
    }

    #[test]
    fn a_ping_is_answered_between_messages_and_only_the_latest() {
        let (mut ws, mut client) = pair();
        // Two masked pings (payloads "a" and "b") and nothing else.
        let ping = |p: u8| [0x89, 0x81, 0, 0, 0, 0, p];
        client.write_all(&ping(b'a')).expect("send");
        client.write_all(&ping(b'b')).expect("send");
        let mut buf = vec![0; READ_CHUNK];
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !ws.wants_write() {
            assert!(std::time::Instant::now() < end);
            match ws.read(&mut buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                other => panic!("{other:?}"),
            }
        }
        // Both may have come in one read; the pong carries the latest.
        loop {
            match ws.read(&mut buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => break,
            }
        }
        assert!(ws.write_control().expect("write"));
        let mut pong = [0u8; 3];
        client.read_exact(&mut pong).expect("pong");
        assert_eq!(pong, [0x8a, 1, b'b']);
    }

    #[test]
    fn a_connection_taken_over_goes_on_where_it_stopped() {
        // [WS.UPGRADE.2] A ping cut in its payload and a message to the client cut in its
        // header, both across a handover of the state to another stream on the same socket.
        let (mut ws, mut client) = pair();
        let ping = [0x89, 0x82, 0, 0, 0, 0, b'h', b'i'];
        client.write_all(&ping[..7]).expect("send");
        let mut buf = vec![0; READ_CHUNK];
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while ws.state().raw.is_empty() && ws.state().inbound == Inbound::default() {
            assert!(std::time::Instant::now() < end);
            let _ = ws.read(&mut buf);
        }
        let frame = phux_frame(3, 7);
        let mut queue = WriteQueue::new();
        queue.push(frame.clone());
        ws.outbound.start([0, 0, 0, 4]);
        ws.header = vec![0x82, 8];
        // The header's 2 bytes not yet written: they go first in the next image.
        let state = ws.state();
        state.check().expect("a live state passes");
        let bytes = postcard::to_stdvec(&state).expect("serialize");
        let read: WsState = postcard::from_bytes(&bytes).expect("deserialize");
        assert_eq!(read, state);
        let WsStream { tcp, .. } = ws;
        let mut taken = WsStream::adopted(tcp, read);
        client.write_all(&ping[7..]).expect("send the rest");
        while !taken.wants_write() {
            assert!(std::time::Instant::now() < end);
            let _ = taken.read(&mut buf);
        }
        let (n, state) = queue.flush_to(&mut taken);
        assert_eq!(
            (n, matches!(state, FlushState::Drained)),
            (frame.len(), true)
        );
        assert!(taken.write_control().expect("pong"));
        let mut got = [0u8; 2 + 8 + 4];
        client.read_exact(&mut got).expect("read");
        assert_eq!(&got[..2], &[0x82, 8]);
        assert_eq!(&got[2..10], &frame[..]);
        assert_eq!(&got[10..], &[0x8a, 2, b'h', b'i']);
    }

    #[test]
    fn a_state_no_live_connection_can_be_in_is_refused() {
        // [WS.UPGRADE.2]
        WsState::default().check().expect("the empty state");
        let too_long = WsState {
            raw: vec![0; READ_CHUNK + 1],
            ..WsState::default()
        };
        assert!(matches!(
            too_long.check(),
            Err(WsStateError::TooLong {
                what: "undecoded bytes",
                ..
            })
        ));
        let pong = WsState {
            pong: Some(vec![0; MAX_CONTROL_FRAME_LEN + 1]),
            ..WsState::default()
        };
        assert!(pong.check().is_err());
    }
}
