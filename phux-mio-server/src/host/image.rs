//! The host's half of an in-place upgrade: whether it can be handed over now, the image of
//! its connections and terminals (with the descriptors that cross the exec), and taking that
//! image back in the new process.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Token};
use phux_core::server::{ConnId, LocalTerminal};
use phux_core::time::Instant;

use crate::child::ChildExit;
use crate::conn::{Chunk, Conn, READ_INTEREST, Transport, WriteQueue};
use crate::terminal::{Adopted, PtyTerminal};
use crate::timer::Timer;
use crate::upgrade::{Bytes, ConnImageRef, ConnTransport, HostImage, Piece, PieceRef, TermImage};

use super::{Host, Source};

/// The tokens an upgrade's image was registered under, before its descriptors are owned
/// (see [`Host::register_image`]).
#[derive(Debug, Default)]
pub(crate) struct Registered {
    /// Per connection: (read, write, a bridge's socket).
    conns: Vec<(Token, Token, Option<Token>)>,
    /// Per terminal: (master, pidfd).
    terminals: Vec<(Option<Token>, Option<Token>)>,
}

/// The upgrade: what crosses the exec, and taking it back.
impl Host {
    /// Why the host cannot be handed over now, if it cannot: shutting down, or a terminal
    /// with a job the engine has not seen finish.
    pub(crate) fn not_ready_for_upgrade(&self) -> Option<String> {
        if self.shutdown || self.done {
            return Some("the server is shutting down".to_owned());
        }
        if !self.spawns.is_empty() {
            return Some(format!(
                "{} terminals are waiting to start",
                self.spawns.len()
            ));
        }
        self.terminals
            .iter()
            .find(|(_, t)| !t.idle())
            .map(|(id, _)| format!("terminal {id} has input in progress"))
    }

    /// The connections and terminals as the image carries them (their unwritten bytes,
    /// deadlines and exit state), borrowed from the queues: the heads of frames several
    /// connections are sent, each once, then per connection its pieces; and the next
    /// connection id.
    pub(crate) fn image_parts(
        &self,
    ) -> (Vec<Bytes<'_>>, Vec<ConnImageRef<'_>>, Vec<TermImage>, u64) {
        let micros = |at: Option<Instant>| at.map(Instant::as_micros);
        let mut shared: Vec<Bytes<'_>> = Vec::new();
        let mut index: HashMap<*const Vec<u8>, u32> = HashMap::new();
        let mut conns = Vec::with_capacity(self.conns.len());
        for (id, c) in &self.conns {
            let mut pending = Vec::new();
            for (chunk, from) in c.queue.pieces() {
                let piece = match chunk {
                    // [SERVER.UPGRADE.EXEC.5] A head still whole is named, so that it is one
                    // buffer in the new image as it is here.
                    Chunk::Shared(head) if from == 0 => {
                        let at = *index.entry(Arc::as_ptr(head)).or_insert_with(|| {
                            shared.push(Bytes(head.as_slice()));
                            u32::try_from(shared.len() - 1).unwrap_or(u32::MAX)
                        });
                        PieceRef::Shared(at)
                    }
                    other => PieceRef::Bytes(Bytes(other.bytes().get(from..).unwrap_or_default())),
                };
                pending.push(piece);
            }
            conns.push(ConnImageRef {
                id: id.0,
                transport: match &c.transport {
                    Transport::Unix(s) => ConnTransport::Unix {
                        fd: s.as_raw_fd(),
                        may_hand_off: c.may_hand_off,
                    },
                    Transport::Stdio => ConnTransport::Stdio,
                    // [WS.UPGRADE.2]
                    Transport::Ws(ws) => ConnTransport::Ws {
                        fd: ws.tcp().as_raw_fd(),
                        state: Box::new(ws.state()),
                    },
                    Transport::Handoff(h) => {
                        let (input_flags, output_flags) = h.given_flags();
                        ConnTransport::Handoff {
                            input: h.input.as_raw_fd(),
                            output: h.output.as_raw_fd(),
                            control: h.control.as_raw_fd(),
                            input_flags: input_flags.bits(),
                            output_flags: output_flags.bits(),
                        }
                    }
                },
                pending,
                read_done: c.read_done(),
                reported: c.reported,
                closing: micros(c.timers.get(Timer::Closing)),
            });
        }
        let terminals = self
            .terminals
            .iter()
            .map(|(id, t)| TermImage {
                id: id.0,
                master: t.child.master_fd().map(|fd| fd.as_raw_fd()),
                pidfd: t.child.pidfd().as_raw_fd(),
                pid: t.child.pid().cast_signed(),
                exit: t.exited().map(|exit| match exit {
                    ChildExit::Exited(code) => (false, code),
                    ChildExit::Signaled(sig) => (true, sig),
                }),
                eof: t.eof(),
                killing: t.killing(),
                exit_drain: micros(t.timers.get(Timer::ExitDrain)),
                kill_grace: micros(t.timers.get(Timer::KillGrace)),
            })
            .collect();
        (shared, conns, terminals, self.next_conn)
    }

    /// Every descriptor that crosses the exec: the listener, the WebSocket listener, the
    /// connections' sockets, the terminals' masters and pidfds (the order of
    /// [`HostImage::fds`]). A WebSocket handshake under way is not among them: it is closed at
    /// the exec ([WS.UPGRADE.3]).
    pub(crate) fn inherited_fds(&self) -> Vec<BorrowedFd<'_>> {
        let mut fds: Vec<BorrowedFd<'_>> =
            self.listener.iter().map(|l| l.listener().as_fd()).collect();
        fds.extend(self.ws.as_ref().map(crate::ws::Door::listener_fd));
        for c in self.conns.values() {
            match &c.transport {
                Transport::Unix(s) => fds.push(s.as_fd()),
                Transport::Ws(ws) => fds.push(ws.tcp().as_fd()),
                Transport::Stdio => {}
                Transport::Handoff(h) => {
                    fds.extend([h.input.as_fd(), h.output.as_fd(), h.control.as_fd()]);
                }
            }
        }
        for t in self.terminals.values() {
            fds.extend(t.child.master_fd());
            fds.push(t.child.pidfd());
        }
        fds
    }

    /// Registers the image's connections and terminals with the poll by number, before any
    /// descriptor is owned: a failure here leaves every descriptor open for the previous
    /// image to take back ([SERVER.UPGRADE.EXEC.6]).
    pub(crate) fn register_image(&mut self, image: &HostImage) -> io::Result<Registered> {
        let registry = self.poll.registry();
        let mut out = Registered::default();
        for c in &image.conns {
            let id = ConnId(c.id);
            let read = self.sources.add(Source::ConnRead(id));
            let (read_fd, write) = match c.transport {
                ConnTransport::Unix { fd, .. } | ConnTransport::Ws { fd, .. } => (fd, read),
                ConnTransport::Stdio => (
                    rustix::stdio::stdin().as_raw_fd(),
                    self.sources.add(Source::ConnWrite(id)),
                ),
                ConnTransport::Handoff { input, .. } => {
                    (input, self.sources.add(Source::ConnWrite(id)))
                }
            };
            if !c.read_done {
                registry.register(&mut SourceFd(&read_fd), read, READ_INTEREST)?;
            }
            // [SERVER.BRIDGE.11] The bridge's socket is watched in the new image too.
            let control = match c.transport {
                ConnTransport::Handoff { control, .. } => {
                    let token = self.sources.add(Source::ConnControl(id));
                    registry.register(&mut SourceFd(&control), token, Interest::READABLE)?;
                    Some(token)
                }
                _ => None,
            };
            out.conns.push((read, write, control));
        }
        for t in &image.terminals {
            let id = LocalTerminal(t.id);
            if rustix::process::Pid::from_raw(t.pid).is_none() {
                return Err(io::Error::other(format!(
                    "terminal {id}: invalid pid {}",
                    t.pid
                )));
            }
            let master = match t.master {
                Some(fd) => {
                    let token = self.sources.add(Source::Master(id));
                    registry.register(&mut SourceFd(&fd), token, Interest::READABLE)?;
                    Some(token)
                }
                None => None,
            };
            // A reaped child's pidfd has nothing more to say.
            let pidfd = if t.exit.is_none() {
                let token = self.sources.add(Source::Pidfd(id));
                registry.register(&mut SourceFd(&t.pidfd), token, Interest::READABLE)?;
                Some(token)
            } else {
                None
            };
            out.terminals.push((master, pidfd));
        }
        Ok(out)
    }

    /// Takes the image's connections and terminals back, each with the descriptors `fds`
    /// gives in [`HostImage::fds`] order (the listener's taken already), registered by
    /// [`Self::register_image`]. Every connection is read again before the next wait: frames
    /// the engine decoded but had not handled yet wait for no new byte.
    pub(crate) fn adopt_image(
        &mut self,
        image: HostImage,
        registered: Registered,
        fds: &mut impl Iterator<Item = OwnedFd>,
    ) -> io::Result<()> {
        self.next_conn = image.next_conn;
        let heads: Vec<Arc<Vec<u8>>> = image.shared.into_iter().map(Arc::new).collect();
        let at = |micros: Option<u64>| micros.map(Instant::from_micros);
        let socket = |fds: &mut dyn Iterator<Item = OwnedFd>| {
            let fd = fds.next().ok_or_else(missing_fd)?;
            let std = std::os::unix::net::UnixStream::from(fd);
            Ok::<_, io::Error>(mio::net::UnixStream::from_std(std))
        };
        for (c, tokens) in image.conns.into_iter().zip(registered.conns) {
            let (transport, may_hand_off) = match c.transport {
                ConnTransport::Unix { may_hand_off, .. } => {
                    (Transport::Unix(socket(fds)?), may_hand_off)
                }
                ConnTransport::Stdio => (Transport::Stdio, false),
                // [WS.UPGRADE.2] The same TCP connection, its framing where it stood.
                ConnTransport::Ws { state, .. } => {
                    let fd = fds.next().ok_or_else(missing_fd)?;
                    let tcp = mio::net::TcpStream::from_std(std::net::TcpStream::from(fd));
                    let ws = crate::ws::WsStream::adopted(tcp, *state);
                    (Transport::Ws(Box::new(ws)), false)
                }
                ConnTransport::Handoff {
                    input_flags,
                    output_flags,
                    ..
                } => {
                    let input = fds.next().ok_or_else(missing_fd)?;
                    let output = fds.next().ok_or_else(missing_fd)?;
                    let control = socket(fds)?;
                    let flags = (
                        rustix::fs::OFlags::from_bits_retain(input_flags),
                        rustix::fs::OFlags::from_bits_retain(output_flags),
                    );
                    let handed = crate::handoff::Handed::adopted(input, output, control, flags);
                    (Transport::Handoff(handed), false)
                }
            };
            let id = ConnId(c.id);
            let mut queue = WriteQueue::new();
            for piece in c.pending {
                match piece {
                    Piece::Bytes(bytes) => queue.push(bytes),
                    Piece::Shared(i) => {
                        let head = heads.get(i as usize).ok_or_else(|| {
                            io::Error::other(format!("no shared frame {i} in the image"))
                        })?;
                        queue.push_head(Arc::clone(head));
                    }
                }
            }
            let mut conn = Conn::adopted(
                transport,
                tokens,
                may_hand_off,
                queue,
                c.read_done,
                c.reported,
            );
            if let Some(closing) = at(c.closing) {
                conn.timers.set(Timer::Closing, closing);
                self.nearest.note(closing);
            }
            if !c.read_done {
                self.again.push(tokens.0);
            }
            self.conns.insert(id, conn);
            self.unflushed.push(id);
        }
        for (t, (master, pidfd)) in image.terminals.into_iter().zip(registered.terminals) {
            let master_fd = match t.master {
                Some(_) => Some(fds.next().ok_or_else(missing_fd)?),
                None => None,
            };
            let pidfd_fd = fds.next().ok_or_else(missing_fd)?;
            let exit = t.exit.map(|(signal, n)| {
                if signal {
                    ChildExit::Signaled(n)
                } else {
                    ChildExit::Exited(n)
                }
            });
            let child = crate::child::PtyChild::adopt(master_fd, t.pid, pidfd_fd, exit)?;
            let adopted = Adopted {
                master,
                pidfd,
                eof: t.eof,
                killing: t.killing,
                exit_drain: at(t.exit_drain),
                kill_grace: at(t.kill_grace),
            };
            for deadline in [adopted.exit_drain, adopted.kill_grace]
                .into_iter()
                .flatten()
            {
                self.nearest.note(deadline);
            }
            let id = LocalTerminal(t.id);
            self.terminals
                .insert(id, PtyTerminal::adopted(id, child, adopted));
        }
        Ok(())
    }
}

fn missing_fd() -> io::Error {
    io::Error::other("the image names fewer descriptors than it holds")
}
