//! The WebSocket listener and the connections still in their HTTP handshake.
//!
//! A peer is nobody's until its request passes every check: until then it lives here, not in
//! the engine, bounded in number ([`MAX_HANDSHAKES`]), in bytes ([`MAX_REQUEST`]) and in time
//! ([`HANDSHAKE_BOUND`]), so a slow, huge or endless request costs one small buffer for a
//! while and then nothing. Only an accepted upgrade becomes a connection the engine sees.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mio::net::{TcpListener, TcpStream};
use mio::{Interest, Registry, Token};
use phux_core::time::Instant;
use tracing::{debug, info, warn};

use super::http::{Answer, MAX_REQUEST, Policy};

/// [WS.HANDSHAKE.2] The most peers in their handshake at once; one more is closed on accept.
pub const MAX_HANDSHAKES: usize = 64;

/// [WS.HANDSHAKE.3] How long a peer has to send its whole request, and then to take our whole
/// answer (a file of the web client included): a slow-loris peer is cut at this however it
/// trickles.
pub const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// A WebSocket connection's kernel send buffer (the kernel doubles it): about a Unix socket's.
const SEND_BUFFER: usize = 128 * 1024;

/// The first token of the handshakes' range (far above the host's, which count from 3).
const FIRST_TOKEN: usize = usize::MAX / 2;

/// The listener's token (just below the handshakes').
pub const LISTENER: Token = Token(FIRST_TOKEN - 1);

/// The listener and its handshakes.
#[derive(Debug)]
pub struct Door {
    listener: TcpListener,
    addr: SocketAddr,
    policy: Policy,
    /// Where the secret is kept: the next image of an upgrade reads it again from there.
    secret_file: PathBuf,
    pending: HashMap<Token, Handshake>,
    next: usize,
}

#[derive(Debug)]
struct Handshake {
    tcp: TcpStream,
    deadline: Instant,
    /// The request so far (at most [`MAX_REQUEST`]).
    request: Vec<u8>,
    /// Our answer, once decided: its bytes and how many went out.
    answer: Option<(Vec<u8>, &'static [u8], usize)>,
    /// What the client sent after its request, for the connection (an upgrade only).
    early: Option<Vec<u8>>,
}

/// What became of a handshake's turn.
#[derive(Debug)]
pub enum Step {
    /// Still under way (or gone): nothing for the driver.
    Pending,
    /// Upgraded: the driver makes it a connection.
    Upgraded { tcp: TcpStream, early: Vec<u8> },
}

impl Door {
    /// A door on a listener bound at `addr`, with its policy and where its secret is kept.
    pub fn new(
        listener: TcpListener,
        addr: SocketAddr,
        policy: Policy,
        secret_file: PathBuf,
    ) -> Self {
        Self {
            listener,
            addr,
            policy,
            secret_file,
            pending: HashMap::new(),
            next: FIRST_TOKEN,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where its secret is kept.
    pub fn secret_file(&self) -> &Path {
        &self.secret_file
    }

    /// The listener's descriptor, which crosses an in-place upgrade ([WS.UPGRADE.2]); the
    /// handshakes' do not ([WS.UPGRADE.3]).
    pub fn listener_fd(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }

    /// Registers the listener under `token`.
    pub fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(&mut self.listener, token, Interest::READABLE)
    }

    /// Whether `token` names one of the handshakes.
    pub fn owns(token: Token) -> bool {
        token.0 >= FIRST_TOKEN
    }

    /// The nearest handshake deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending.values().map(|h| h.deadline).min()
    }

    /// Accepts every waiting peer. `Err` only for a failure of the listener itself (EMFILE
    /// and the like: the caller retries later).
    pub fn accept_all(&mut self, registry: &Registry, now: Instant) -> io::Result<()> {
        loop {
            let (mut tcp, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if self.pending.len() >= MAX_HANDSHAKES {
                // [WS.HANDSHAKE.2]
                debug!(%peer, "too many WebSocket handshakes at once; closing one more");
                continue;
            }
            let _ = tcp.set_nodelay(true);
            // [WS.LISTEN.4] The kernel's send buffer about a Unix socket's: what a peer that
            // stops reading holds is then the engine's budget ([QUEUE.BOUND.1]) to decide, not
            // megabytes of TCP autotuning the engine cannot see.
            let _ = rustix::net::sockopt::set_socket_send_buffer_size(&tcp, SEND_BUFFER);
            let token = Token(self.next);
            self.next = self.next.wrapping_add(1).max(FIRST_TOKEN);
            if let Err(e) =
                registry.register(&mut tcp, token, Interest::READABLE | Interest::WRITABLE)
            {
                warn!(error = %e, "cannot watch a WebSocket peer");
                continue;
            }
            debug!(%peer, "WebSocket peer accepted");
            self.pending.insert(
                token,
                Handshake {
                    tcp,
                    deadline: now + HANDSHAKE_BOUND,
                    request: Vec::new(),
                    answer: None,
                    early: None,
                },
            );
        }
    }

    /// A handshake's readiness: reads its request, decides, writes the answer.
    pub fn serve(&mut self, registry: &Registry, token: Token) -> Step {
        let Some(h) = self.pending.get_mut(&token) else {
            return Step::Pending;
        };
        match h.turn(&self.policy) {
            Ok(false) => Step::Pending,
            Ok(true) => {
                let Some(mut h) = self.pending.remove(&token) else {
                    return Step::Pending;
                };
                let _ = registry.deregister(&mut h.tcp);
                if let Some(early) = h.early.take() {
                    Step::Upgraded { tcp: h.tcp, early }
                } else {
                    let _ = h.tcp.shutdown(std::net::Shutdown::Both);
                    Step::Pending
                }
            }
            Err(e) => {
                debug!(error = %e, "WebSocket handshake ended");
                if let Some(mut h) = self.pending.remove(&token) {
                    let _ = registry.deregister(&mut h.tcp);
                }
                Step::Pending
            }
        }
    }

    /// Closes the handshakes whose time is up.
    pub fn expire(&mut self, registry: &Registry, now: Instant) {
        self.pending.retain(|_, h| {
            if h.deadline > now {
                return true;
            }
            // [WS.HANDSHAKE.3]
            debug!("a WebSocket handshake ran out of time");
            let _ = registry.deregister(&mut h.tcp);
            false
        });
    }

    /// Stops listening and closes every handshake (shutdown).
    pub fn close_all(&mut self, registry: &Registry) {
        let _ = registry.deregister(&mut self.listener);
        for (_, mut h) in self.pending.drain() {
            let _ = registry.deregister(&mut h.tcp);
        }
    }
}

impl Handshake {
    /// Reads what there is, decides once the request is whole, writes what it can of the
    /// answer. `Ok(true)` once the answer is all out (upgrade or close).
    fn turn(&mut self, policy: &Policy) -> io::Result<bool> {
        if self.answer.is_none() {
            let mut chunk = [0u8; 2048];
            loop {
                let room = MAX_REQUEST + 1 - self.request.len();
                let want = chunk.len().min(room);
                match self.tcp.read(chunk.get_mut(..want).unwrap_or_default()) {
                    Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(n) => self
                        .request
                        .extend_from_slice(chunk.get(..n).unwrap_or_default()),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                if self.request.len() > MAX_REQUEST {
                    break;
                }
            }
            match policy.answer(&self.request) {
                Answer::Partial => return Ok(false),
                Answer::Upgrade { response, consumed } => {
                    info!("WebSocket connection accepted");
                    self.early = Some(self.request.get(consumed..).unwrap_or_default().to_vec());
                    self.answer = Some((response, b"", 0));
                }
                Answer::Respond { head, body, why } => {
                    info!(why, "WebSocket listener answered an HTTP request");
                    self.answer = Some((head, body, 0));
                }
            }
            self.request = Vec::new();
        }
        let Some((head, body, sent)) = self.answer.as_mut() else {
            return Ok(false);
        };
        loop {
            let total = head.len() + body.len();
            if *sent >= total {
                return Ok(true);
            }
            let written = if *sent < head.len() {
                let slices = [
                    io::IoSlice::new(head.get(*sent..).unwrap_or_default()),
                    io::IoSlice::new(body),
                ];
                self.tcp.write_vectored(&slices)
            } else {
                self.tcp
                    .write(body.get(*sent - head.len()..).unwrap_or_default())
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => *sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
