//! The client side of the harness: raw connections, what their clients send and read, and
//! the request helpers built on them (HELLO, COMMAND, SPAWN_TERMINAL).

use std::collections::VecDeque;
use std::time::Duration;

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{HelloOk, SpawnResult, SpawnTerminal};
use phux_proto::{Frame, GroupId, TerminalId};

use super::wirelog::hex;
use super::{Harness, command_frame, hello_frame};
use crate::framing::FrameDecoder;
use crate::server::{ConnId, PeerInfo, ServerEvent};
use crate::time::Instant;

/// One raw client connection as the harness sees it.
#[derive(Debug)]
pub struct SimConn {
    /// Its id at the engine.
    pub id: ConnId,
    /// Its name in the log (`c1`, `c2`, ...).
    pub name: String,
    pub(super) decoder: FrameDecoder,
    pub(super) inbox: VecDeque<Frame>,
    /// Bytes the server queued that the client has not read yet.
    pub(super) transport: Vec<u8>,
    /// With a socket buffer, how many bytes at the front of `transport` are in it: written
    /// (reported `Sent`) and not yet read.
    pub(super) in_socket: usize,
    pub(super) reading: bool,
    /// The engine still knows the connection (neither side has closed it).
    pub(super) open: bool,
    /// The server asked to close it.
    pub(super) closed_by_server: bool,
    /// Deliver only this many more bytes of the client's sends, then drop the connection.
    pub(super) drop_after: Option<usize>,
    /// Frames from the server that failed to decode (always a server bug).
    pub(super) decode_errors: Vec<String>,
    /// The server_id of its HELLO_OK.
    pub(super) server_id: Option<Vec<u8>>,
    /// In raw mode, the bytes the client read and nobody took yet (frames are not decoded).
    pub(super) raw: Option<Vec<u8>>,
    /// The server closed the connection with bytes unread: it ends at this instant unless
    /// the client reads them first (see [`Harness::set_close_bound`]).
    pub(super) closing_at: Option<Instant>,
    /// `Send` actions after the connection ended.
    pub(super) sends_after_close: usize,
    /// Every byte the server ever queued on the connection.
    pub(super) queued_total: usize,
}

impl SimConn {
    pub(super) fn new(id: ConnId) -> Self {
        Self {
            id,
            name: format!("c{}", id.0),
            decoder: FrameDecoder::new(),
            inbox: VecDeque::new(),
            transport: Vec::new(),
            in_socket: 0,
            reading: true,
            open: true,
            closed_by_server: false,
            drop_after: None,
            decode_errors: Vec::new(),
            server_id: None,
            raw: None,
            closing_at: None,
            sends_after_close: 0,
            queued_total: 0,
        }
    }

    /// Whether the connection is still open at the engine.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether the server closed it (after DETACHED).
    pub fn closed_by_server(&self) -> bool {
        self.closed_by_server
    }

    /// Frames received and not yet taken.
    pub fn inbox(&self) -> impl Iterator<Item = &Frame> {
        self.inbox.iter()
    }

    /// Bytes the server queued that the client has not read (a stalled reader's backlog).
    pub fn unread_bytes(&self) -> usize {
        self.transport.len()
    }

    /// The bytes the server queued that the client has not read, oldest first.
    pub fn unread(&self) -> &[u8] {
        &self.transport
    }

    /// How many bytes the server ever queued on the connection (read or not): a driver that
    /// inspects what is queued as it is queued reads the newest ones at the end of
    /// [`SimConn::unread`].
    pub fn queued_total(&self) -> usize {
        self.queued_total
    }

    /// The server_id of the connection's HELLO_OK, once received.
    pub fn server_id(&self) -> Option<&[u8]> {
        self.server_id.as_deref()
    }

    /// Server bytes that did not decode, with the error.
    pub fn decode_errors(&self) -> &[String] {
        &self.decode_errors
    }
}

impl Harness {
    // ---- connections ----------------------------------------------------------------------

    /// Opens a connection from an authorized local peer.
    pub fn connect(&mut self) -> ConnId {
        self.connect_with(PeerInfo::local())
    }

    /// Opens a connection from a peer the driver describes as `peer`.
    pub fn connect_with(&mut self, peer: PeerInfo) -> ConnId {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let mut conn = SimConn::new(id);
        if self.raw_reads {
            conn.raw = Some(Vec::new());
        }
        let name = conn.name.clone();
        self.conns.insert(id, conn);
        self.log.push(|| format!("{name} connect {peer:?}"));
        self.server
            .handle(self.now, ServerEvent::Connected { conn: id, peer });
        id
    }

    pub(super) fn conn_mut(&mut self, c: ConnId) -> &mut SimConn {
        match self.conns.get_mut(&c) {
            Some(conn) => conn,
            None => panic!("harness misuse: unknown connection {c:?}"),
        }
    }

    /// The connection's client-side state.
    pub fn conn(&self, c: ConnId) -> &SimConn {
        match self.conns.get(&c) {
            Some(conn) => conn,
            None => panic!("harness misuse: unknown connection {c:?}"),
        }
    }

    /// The client sends one frame (encoded canonically).
    pub fn send(&mut self, c: ConnId, frame: &Frame) {
        let name = self.conn(c).name.clone();
        self.log.push(|| format!("{name} > {frame:?}"));
        let bytes = frame.to_bytes();
        self.deliver_client_bytes(c, &bytes);
    }

    /// The client sends raw bytes (malformed input, split frames).
    pub fn send_raw(&mut self, c: ConnId, bytes: &[u8]) {
        let name = self.conn(c).name.clone();
        self.log.push(|| format!("{name} > raw {}", hex(bytes)));
        self.deliver_client_bytes(c, bytes);
    }

    pub(super) fn deliver_client_bytes(&mut self, c: ConnId, bytes: &[u8]) {
        let conn = self.conn_mut(c);
        if !conn.open {
            return;
        }
        let (deliver, drop_now) = match conn.drop_after {
            Some(n) if n <= bytes.len() => (&bytes[..n], true),
            Some(n) => {
                conn.drop_after = Some(n - bytes.len());
                (bytes, false)
            }
            None => (bytes, false),
        };
        if !deliver.is_empty() {
            self.server.handle(
                self.now,
                ServerEvent::Received {
                    conn: c,
                    bytes: deliver,
                },
            );
        }
        if drop_now {
            let name = self.conn(c).name.clone();
            let n = deliver.len();
            self.log
                .push(|| format!("{name} dropped after {n} bytes of a send"));
            self.disconnect(c);
        }
    }

    /// Drops the connection after the next `n` bytes the client sends (0 = at the next send).
    pub fn drop_after(&mut self, c: ConnId, n: usize) {
        self.conn_mut(c).drop_after = Some(n);
    }

    /// The client side closes the connection (or the transport breaks).
    pub fn disconnect(&mut self, c: ConnId) {
        let conn = self.conn_mut(c);
        if !conn.open {
            return;
        }
        conn.open = false;
        conn.drop_after = None;
        conn.closing_at = None;
        let name = conn.name.clone();
        self.log.push(|| format!("{name} disconnect"));
        self.server
            .handle(self.now, ServerEvent::Disconnected { conn: c });
    }

    /// The client stops reading: the server's bytes pile up and no `Sent` is reported.
    pub fn stall_reader(&mut self, c: ConnId) {
        self.conn_mut(c).reading = false;
    }

    /// The client reads again: its backlog is delivered (and reported `Sent` while open).
    pub fn resume_reader(&mut self, c: ConnId) {
        self.conn_mut(c).reading = true;
        self.flush_conn(c);
        self.hand_observed();
        let conn = self.conn_mut(c);
        if conn.closing_at.take().is_some() && conn.open {
            conn.open = false;
            let name = conn.name.clone();
            self.log.push(|| format!("{name} closed by server"));
            self.server
                .handle(self.now, ServerEvent::Disconnected { conn: c });
        }
    }

    /// The client reads `n` bytes of its backlog without resuming.
    pub fn read_some(&mut self, c: ConnId, n: usize) {
        self.read_bytes(c, n);
        self.fill_socket(c);
        self.hand_observed();
    }

    pub(super) fn flush_conn(&mut self, c: ConnId) {
        if self.socket_buffer.is_none() {
            let len = self.conn(c).transport.len();
            self.read_bytes(c, len);
            return;
        }
        // The client empties the socket buffer, the driver fills it again, until nothing is
        // left: the engine hears one `Sent` per bufferful.
        loop {
            self.fill_socket(c);
            let ready = self.conn(c).in_socket;
            if ready == 0 {
                return;
            }
            self.read_bytes(c, ready);
        }
    }

    /// With a socket buffer: the driver writes what fits of the connection's queue into it,
    /// and reports that `Sent` (a part of what the engine queued, as a real write returns).
    pub(super) fn fill_socket(&mut self, c: ConnId) {
        let Some(capacity) = self.socket_buffer else {
            return;
        };
        let conn = self.conn_mut(c);
        let room = capacity.saturating_sub(conn.in_socket);
        let n = room.min(conn.transport.len() - conn.in_socket);
        if n == 0 {
            return;
        }
        conn.in_socket += n;
        // A connection that has ended keeps its backlog readable, with no one to tell.
        if conn.open {
            self.observe(ServerEvent::Sent { conn: c, bytes: n });
        }
    }

    pub(super) fn read_bytes(&mut self, c: ConnId, n: usize) {
        let buffered = self.socket_buffer.is_some();
        let conn = self.conn_mut(c);
        // With a socket buffer the client reads only what was written into it, and the
        // write was reported then.
        let readable = if buffered {
            conn.in_socket
        } else {
            conn.transport.len()
        };
        let n = n.min(readable);
        if n == 0 {
            return;
        }
        let bytes: Vec<u8> = conn.transport.drain(..n).collect();
        if buffered {
            conn.in_socket -= n;
        }
        let open = conn.open && !buffered;
        if let Some(raw) = &mut conn.raw {
            raw.extend_from_slice(&bytes);
            let name = conn.name.clone();
            self.log.push(|| format!("{name} < {n} bytes"));
            if open {
                self.observe(ServerEvent::Sent { conn: c, bytes: n });
            }
            return;
        }
        conn.decoder.push(&bytes);
        let mut lines = Vec::new();
        loop {
            match conn.decoder.poll_frame() {
                Ok(Some(frame)) => {
                    if let Frame::HelloOk(ok) = &frame {
                        conn.server_id = Some(ok.server_id.clone());
                    }
                    lines.push(format!("{} < {frame:?}", conn.name));
                    conn.inbox.push_back(frame);
                }
                Ok(None) => break,
                Err(err) => {
                    lines.push(format!("{} < !undecodable: {err}", conn.name));
                    conn.decode_errors.push(err.to_string());
                    if conn.decoder.is_failed() {
                        break;
                    }
                }
            }
        }
        for line in lines {
            self.log.push(|| line);
        }
        if open {
            self.observe(ServerEvent::Sent { conn: c, bytes: n });
        }
    }

    /// New connections keep the raw bytes their client reads, for [`Harness::take_received`],
    /// instead of decoding them into frames (a driver for a runner with its own decoder).
    pub fn set_raw_reads(&mut self, raw: bool) {
        self.raw_reads = raw;
    }

    /// Takes the raw bytes the client read since the last call (raw mode only; see
    /// [`Harness::set_raw_reads`]).
    pub fn take_received(&mut self, c: ConnId) -> Vec<u8> {
        self.conn_mut(c)
            .raw
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Puts a socket buffer of `bytes` between the server and each client (`None`, the
    /// default: none, and a `Send` is reported `Sent` whole once its client reads it). With
    /// one, the driver writes into the buffer what fits and reports that much `Sent` at
    /// once, whether the client reads or not, as a real socket's write does; a client that
    /// does not read leaves the rest queued ([`SOCKET_BUFFER`](super::SOCKET_BUFFER) is
    /// Linux's default).
    pub fn set_socket_buffer(&mut self, bytes: Option<usize>) {
        self.socket_buffer = bytes.map(|n| n.max(1));
    }

    /// Lets a connection the engine closed with bytes its client has not read linger for
    /// `bound` (`None`, the default: it ends at once, its backlog still readable): resuming
    /// the reader delivers them and ends it, the bound's lapse drops them with it. A real
    /// driver's flush; [`CLOSE_BOUND`](super::CLOSE_BOUND) is our server's.
    pub fn set_close_bound(&mut self, bound: Option<Duration>) {
        self.close_bound = bound;
    }

    /// Ends every lingering connection whose close bound has lapsed; whether any did.
    pub(super) fn drop_lapsed_closes(&mut self) -> bool {
        let now = self.now;
        let lapsed: Vec<ConnId> = self
            .conns
            .values()
            .filter(|c| c.closing_at.is_some_and(|at| at <= now))
            .map(|c| c.id)
            .collect();
        for c in &lapsed {
            let conn = self.conn_mut(*c);
            // The client did not read in time: what is still queued is dropped with it.
            conn.closing_at = None;
            conn.transport.clear();
            conn.open = false;
            let name = conn.name.clone();
            self.log
                .push(|| format!("{name} dropped at the close bound"));
            self.server
                .handle(self.now, ServerEvent::Disconnected { conn: *c });
        }
        !lapsed.is_empty()
    }

    /// SUBSCRIBE_EVENTS with server scope, delivered.
    pub fn subscribe_all(&mut self, c: ConnId) {
        self.send(
            c,
            &Frame::SubscribeEvents(phux_proto::frame::SubscribeEvents { terminal: None }),
        );
        self.settle();
    }

    /// Takes every frame the client has received.
    pub fn recv(&mut self, c: ConnId) -> Vec<Frame> {
        self.conn_mut(c).inbox.drain(..).collect()
    }

    /// Settles, then takes every frame the client has received.
    pub fn settle_recv(&mut self, c: ConnId) -> Vec<Frame> {
        self.settle();
        self.recv(c)
    }

    /// Sends HELLO, settles, and returns the HELLO_OK (panics otherwise). Other frames stay
    /// in the inbox.
    pub fn hello(&mut self, c: ConnId) -> HelloOk {
        self.send(c, &hello_frame());
        self.settle();
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::HelloOk(_)));
        match pos.and_then(|p| conn.inbox.remove(p)) {
            Some(Frame::HelloOk(ok)) => ok,
            _ => panic!("no HELLO_OK for {}: {:?}", conn.name, conn.inbox),
        }
    }

    /// Connects and completes the handshake.
    pub fn client(&mut self) -> ConnId {
        let c = self.connect();
        self.hello(c);
        c
    }

    /// Sends a COMMAND and settles; returns its COMMAND_RESULT (removed from the inbox; the
    /// other frames stay) or `None` when none came yet. Request ids count up per harness.
    pub fn request(&mut self, c: ConnId, command: Command) -> Option<CommandResult> {
        let rid = self.next_request_id();
        self.send(c, &command_frame(rid, command));
        self.settle();
        self.take_result(c, rid)
    }

    /// A fresh request id (never 0, unique within this harness).
    pub fn next_request_id(&mut self) -> u32 {
        self.request_counter = self.request_counter.wrapping_add(1).max(1);
        self.request_counter
    }

    /// Removes and returns the COMMAND_RESULT for `request_id` from the inbox, if there.
    pub fn take_result(&mut self, c: ConnId, request_id: u32) -> Option<CommandResult> {
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::CommandResult(r) if r.request_id == request_id))?;
        match conn.inbox.remove(pos) {
            Some(Frame::CommandResult(r)) => Some(r.result),
            _ => None,
        }
    }

    /// Spawns a terminal with the default spec; returns its id (panics on failure). The
    /// TERMINAL_SPAWNED is removed from the inbox.
    pub fn spawn(&mut self, c: ConnId) -> TerminalId {
        self.spawn_with(c, SpawnTerminal::new(0, GroupId(1)))
    }

    /// Spawns with `spawn` (its request id is replaced); returns the terminal id.
    pub fn spawn_with(&mut self, c: ConnId, mut spawn: SpawnTerminal) -> TerminalId {
        let rid = self.next_request_id();
        spawn.request_id = rid;
        self.send(c, &Frame::SpawnTerminal(spawn));
        self.settle();
        let conn = self.conn_mut(c);
        let pos = conn
            .inbox
            .iter()
            .position(|f| matches!(f, Frame::TerminalSpawned(s) if s.request_id == rid));
        match pos.and_then(|p| conn.inbox.remove(p)) {
            Some(Frame::TerminalSpawned(s)) => match s.result {
                SpawnResult::Ok(t) => t,
                SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
            },
            _ => panic!("no TERMINAL_SPAWNED for {}: {:?}", conn.name, conn.inbox),
        }
    }
}
