//! A client connection: its transport, its registration with the poll, its write queue and
//! its closing state.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use mio::net::UnixStream;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::net::{RecvAncillaryBuffer, RecvFlags, ReturnFlags};

use crate::flush::Queued;
use crate::handoff::{First, Handed};
pub use crate::queue::{Chunk, FlushState, WriteQueue};
use crate::timer::{Timer, TimerTable};
use crate::ws::WsStream;

/// The largest read from a connection or a PTY at once.
pub const READ_CHUNK: usize = 64 * 1024;

/// What a connection's read side is watched for: readability, and an out-of-band byte
/// waiting in a socket (`EPOLLPRI`), before which the kernel ends a read (see [`Got`]).
pub(crate) const READ_INTEREST: Interest = Interest::READABLE.add(Interest::PRIORITY);

/// What one read of a connection got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Got {
    /// The bytes read; 0 is the end of the stream.
    pub n: usize,
    /// Nothing the peer had sent by then is left: the next bytes raise a new readiness event,
    /// so the read that would find the transport empty can be skipped. A stream socket's
    /// read gathers every queued segment, but the kernel ends it early at a segment that
    /// carried ancillary data (descriptors passed with `SCM_RIGHTS`) or at an out-of-band
    /// byte, and what follows waits without a new event: a read ended so is not drained
    /// (the out-of-band byte is seen by its `EPOLLPRI`, [`READ_INTEREST`]).
    pub drained: bool,
}

/// One client connection: its transport, its registration with the poll (one token, or two
/// for a split transport), its write queue, and its closing state.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) transport: Transport,
    read_token: Token,
    /// Equal to `read_token` unless the transport is split (stdio, a bridge's handoff).
    write_token: Token,
    /// A bridge's socket, watched for its end once the bridge handed the connection over.
    control_token: Option<Token>,
    /// No byte has been read yet from this socket peer that passed the uid check: its first
    /// read may carry a bridge's handoff ([SERVER.BRIDGE.9]).
    pub(crate) may_hand_off: bool,
    pub(crate) queue: WriteQueue,
    /// Whether `WRITABLE` is part of the registration now: held only while the queue is not
    /// empty and the kernel had no room for it.
    writable: bool,
    /// Reads ended (EOF or error): the read side is deregistered and not read again.
    read_done: bool,
    /// The engine has been told `Disconnected` (the peer went away): nothing more is queued
    /// and `Sent` is no longer reported.
    pub(crate) reported: bool,
    /// Something [`Output::Urgent`](crate::flush::Output) was queued since the last write.
    pub(crate) urgent: bool,
    /// `HeldOutput` (held-back bulk output) and `Closing` (set by a `Close` action or the
    /// peer's EOF: flush until then, then close).
    pub(crate) timers: TimerTable,
}

impl Conn {
    /// A connection on `transport`, registered for reading under `read_token`.
    pub(crate) fn open(
        transport: Transport,
        read_token: Token,
        write_token: Token,
        registry: &Registry,
    ) -> io::Result<Self> {
        let fd = transport.read_fd().as_raw_fd();
        registry.register(&mut SourceFd(&fd), read_token, READ_INTEREST)?;
        Ok(Self {
            transport,
            read_token,
            write_token,
            control_token: None,
            may_hand_off: false,
            queue: WriteQueue::new(),
            writable: false,
            read_done: false,
            reported: false,
            urgent: false,
            timers: TimerTable::default(),
        })
    }

    /// A connection the previous server image held (an upgrade), registered by the caller
    /// already (for reading unless `read_done`), with what it was still to be sent.
    pub(crate) fn adopted(
        transport: Transport,
        (read_token, write_token, control_token): (Token, Token, Option<Token>),
        may_hand_off: bool,
        queue: WriteQueue,
        read_done: bool,
        reported: bool,
    ) -> Self {
        Self {
            transport,
            read_token,
            write_token,
            control_token,
            may_hand_off,
            queue,
            writable: false,
            read_done,
            reported,
            urgent: true,
            timers: TimerTable::default(),
        }
    }

    /// The token readability comes under.
    pub(crate) fn read_token(&self) -> Token {
        self.read_token
    }

    /// The token writability comes under (the read token unless the transport is split).
    pub(crate) fn write_token(&self) -> Token {
        self.write_token
    }

    /// The token a bridge's socket comes under, once it handed the connection over.
    pub(crate) fn control_token(&self) -> Option<Token> {
        self.control_token
    }

    /// Serves the connection on descriptors a bridge handed over ([SERVER.BRIDGE.9]): the
    /// socket's registration gives way to the handed input's (under the same read token), the
    /// output gets `write_token`, and the bridge's socket `control_token`. Only before any
    /// byte was queued or read: the caller checks.
    pub(crate) fn hand_off(
        &mut self,
        input: OwnedFd,
        output: OwnedFd,
        tokens: (Token, Token),
        registry: &Registry,
    ) -> HandOff {
        let Some(socket) = self.transport.take_socket() else {
            return HandOff::Refused(io::Error::other("not a socket connection"));
        };
        let handed = match Handed::take(input, output, socket) {
            Ok(handed) => handed,
            Err((e, socket)) => {
                self.transport = Transport::Unix(socket);
                return HandOff::Refused(e);
            }
        };
        let (write_token, control_token) = tokens;
        let control = handed.control.as_raw_fd();
        let input = handed.input.as_raw_fd();
        self.transport = Transport::Handoff(handed);
        self.write_token = write_token;
        let registered = registry
            .deregister(&mut SourceFd(&control))
            .and_then(|()| registry.register(&mut SourceFd(&input), self.read_token, READ_INTEREST))
            .and_then(|()| {
                registry.register(&mut SourceFd(&control), control_token, Interest::READABLE)
            });
        match registered {
            Ok(()) => {
                self.control_token = Some(control_token);
                HandOff::Taken
            }
            Err(e) => HandOff::Broken(e),
        }
    }

    /// Whether the connection waits for writability.
    pub(crate) fn awaiting_writable(&self) -> bool {
        self.writable
    }

    /// Whether reads have ended.
    pub(crate) fn read_done(&self) -> bool {
        self.read_done
    }

    /// Whether the connection is closing: it is flushed, then closed.
    pub(crate) fn is_closing(&self) -> bool {
        self.timers.is_set(Timer::Closing)
    }

    /// What the flush policy needs to know about the queue.
    pub(crate) fn queued(&self) -> Queued {
        Queued {
            len: self.queue.len(),
            urgent: self.urgent,
            awaiting_writable: self.writable,
            held_until: self.timers.get(Timer::HeldOutput),
        }
    }

    /// Writes as much of the queue as the transport takes, handing the written buffers to
    /// `spent`. Ends any hold: what is left waits for writability, not for a deadline.
    pub(crate) fn write(&mut self, mut spent: impl FnMut(Chunk)) -> (usize, FlushState) {
        self.urgent = false;
        self.timers.stop(Timer::HeldOutput);
        let (sent, state) = self.queue.flush_to(&mut self.transport);
        for chunk in self.queue.drain_spent() {
            spent(chunk);
        }
        // A WebSocket's own output (a pong) goes at a message boundary: here, once the queue
        // is out.
        if let (FlushState::Drained, Transport::Ws(ws)) = (&state, &mut self.transport) {
            return match ws.write_control() {
                Ok(true) => (sent, FlushState::Drained),
                Ok(false) => (sent, FlushState::Blocked),
                Err(e) => (sent, FlushState::Failed(e)),
            };
        }
        (sent, state)
    }

    /// Whether the transport has output of its own due (a WebSocket's pong) with nothing
    /// queued to carry it out.
    pub(crate) fn transport_output_due(&self) -> bool {
        matches!(&self.transport, Transport::Ws(ws) if ws.wants_write())
    }

    /// Adds or removes `WRITABLE` interest.
    pub(crate) fn set_writable(&mut self, registry: &Registry, on: bool) -> io::Result<()> {
        if self.writable == on {
            return Ok(());
        }
        if self.transport.split() || self.read_done {
            // The write side has a registration of its own: a split transport's second fd,
            // or a socket whose read side was deregistered (writing is its only interest).
            let fd = self.transport.write_fd().as_raw_fd();
            if on {
                registry.register(&mut SourceFd(&fd), self.write_token, Interest::WRITABLE)?;
            } else {
                registry.deregister(&mut SourceFd(&fd))?;
            }
        } else {
            let fd = self.transport.read_fd().as_raw_fd();
            let interest = if on {
                READ_INTEREST | Interest::WRITABLE
            } else {
                READ_INTEREST
            };
            registry.reregister(&mut SourceFd(&fd), self.read_token, interest)?;
        }
        self.writable = on;
        Ok(())
    }

    /// Reads ended: deregisters the read side (on a socket, its only registration, write
    /// interest included).
    pub(crate) fn end_reads(&mut self, registry: &Registry) {
        self.read_done = true;
        let fd = self.transport.read_fd().as_raw_fd();
        let _ = registry.deregister(&mut SourceFd(&fd));
        if !self.transport.split() {
            self.writable = false;
        }
    }

    /// Removes every registration the connection still holds, before it is dropped.
    pub(crate) fn deregister(&self, registry: &Registry) {
        if !self.read_done {
            let fd = self.transport.read_fd().as_raw_fd();
            let _ = registry.deregister(&mut SourceFd(&fd));
        }
        if self.writable && (self.transport.split() || self.read_done) {
            let fd = self.transport.write_fd().as_raw_fd();
            let _ = registry.deregister(&mut SourceFd(&fd));
        }
        if let (Some(_), Transport::Handoff(h)) = (self.control_token, &self.transport) {
            let _ = registry.deregister(&mut SourceFd(&h.control.as_raw_fd()));
        }
    }
}

/// What became of a bridge's handoff.
#[derive(Debug)]
pub(crate) enum HandOff {
    /// The connection is served on the handed descriptors now.
    Taken,
    /// Not taken, nothing changed: the offer's bytes are handled as any others.
    Refused(io::Error),
    /// Taken, but the poll would not watch the new descriptors: the connection must close.
    Broken(io::Error),
}

/// How a client reaches us.
#[derive(Debug)]
pub enum Transport {
    /// A peer on the Unix socket.
    Unix(UnixStream),
    /// The one `--stdio` client: we read stdin and write stdout (both set non-blocking).
    Stdio,
    /// A peer whose bridge handed over its stdin and stdout ([SERVER.BRIDGE.9]): read from
    /// the one, written to the other (both set non-blocking while served).
    Handoff(Handed),
    /// A WebSocket peer that passed the listener's checks (spec/websocket.md): its binary
    /// messages carry the byte stream, one phux frame each.
    Ws(Box<WsStream>),
}

impl Transport {
    /// The fd readiness for reading comes from.
    pub fn read_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Unix(s) => s.as_fd(),
            Self::Stdio => rustix::stdio::stdin(),
            Self::Handoff(h) => h.input.as_fd(),
            Self::Ws(ws) => ws.tcp().as_fd(),
        }
    }

    /// The fd readiness for writing comes from (the same as [`Self::read_fd`] on a socket).
    pub fn write_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Unix(s) => s.as_fd(),
            Self::Stdio => rustix::stdio::stdout(),
            Self::Handoff(h) => h.output.as_fd(),
            Self::Ws(ws) => ws.tcp().as_fd(),
        }
    }

    /// Whether reading and writing use separate fds (and so separate mio registrations).
    pub fn split(&self) -> bool {
        matches!(self, Self::Stdio | Self::Handoff(_))
    }

    /// One non-blocking read, and whether it drained the transport (see [`Got::drained`]). A
    /// `--stdio` stdin may be a terminal, which hands out one line per read however many are
    /// waiting: never drained. A handed-off input is a pipe or a socket, never a terminal; a
    /// pipe's read takes all it holds.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<Got> {
        let (n, cut) = match self {
            Self::Unix(s) => recv_stream(s.as_fd(), buf)?,
            Self::Stdio => (fd_read(rustix::stdio::stdin(), buf)?, true),
            Self::Handoff(h) if h.input_is_socket() => recv_stream(h.input.as_fd(), buf)?,
            Self::Handoff(h) => (fd_read(h.input.as_fd(), buf)?, false),
            Self::Ws(ws) => {
                let read = ws.read(buf)?;
                return Ok(Got {
                    n: read.n,
                    drained: read.drained,
                });
            }
        };
        Ok(Got {
            n,
            drained: n < buf.len() && !cut,
        })
    }

    /// The first read of a socket peer: also takes the descriptors of a bridge's handoff
    /// ([SERVER.BRIDGE.9]) when the bytes are exactly its offer.
    pub(crate) fn read_first(
        &mut self,
        buf: &mut [u8],
    ) -> io::Result<(Got, Option<(OwnedFd, OwnedFd)>)> {
        let Self::Unix(s) = self else {
            return self.read(buf).map(|got| (got, None));
        };
        match crate::handoff::read_first(&*s, buf) {
            Ok(First::Offer { input, output }) => {
                let got = Got {
                    n: crate::handoff::OFFER.len(),
                    drained: false,
                };
                Ok((got, Some((input, output))))
            }
            Ok(First::Bytes { n, cut }) => Ok((
                Got {
                    n,
                    drained: n < buf.len() && !cut,
                },
                None,
            )),
            Err(e) => Err(e),
        }
    }

    /// Gives the socket back out of the transport, for a handoff; `None` (the transport left
    /// as it was) on any other.
    pub(crate) fn take_socket(&mut self) -> Option<UnixStream> {
        if !matches!(self, Self::Unix(_)) {
            return None;
        }
        // `Stdio` only stands in until the caller puts a transport back.
        match std::mem::replace(self, Self::Stdio) {
            Self::Unix(s) => Some(s),
            _ => None,
        }
    }

    /// Ends the stream in both directions (the peer sees EOF; a WebSocket peer a close frame
    /// first); the fds close on drop.
    pub fn shutdown(&mut self) {
        match self {
            // NotConnected when the peer already went away: nothing left to tell it.
            Self::Unix(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            Self::Ws(ws) => ws.shutdown(),
            Self::Stdio | Self::Handoff(_) => {}
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Stdio => rustix::io::write(rustix::stdio::stdout(), buf).map_err(Into::into),
            Self::Handoff(h) => rustix::io::write(&h.output, buf).map_err(Into::into),
            Self::Ws(ws) => ws.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write_vectored(bufs),
            Self::Stdio => rustix::io::writev(rustix::stdio::stdout(), bufs).map_err(Into::into),
            Self::Handoff(h) => rustix::io::writev(&h.output, bufs).map_err(Into::into),
            Self::Ws(ws) => ws.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One read of a stream socket, without room for ancillary data: descriptors a peer passed are
/// closed by the kernel, never ours. Also says whether the kernel ended the read early at a
/// segment that carried ancillary data (`MSG_CTRUNC`, see [`Got::drained`]).
fn recv_stream(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, bool)> {
    // [SERVER.LOOP.2]
    let mut control = RecvAncillaryBuffer::default();
    loop {
        match rustix::net::recvmsg(
            fd,
            &mut [io::IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::DONTWAIT,
        ) {
            Ok(got) => return Ok((got.bytes, got.flags.contains(ReturnFlags::CTRUNC))),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn fd_read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    match rustix::io::read(fd, buf) {
        Ok(n) => Ok(n),
        Err(Errno::AGAIN) => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e.into()),
    }
}

/// The file status flags of stdin and stdout as `--stdio` found them, put back when this is
/// dropped.
///
/// `O_NONBLOCK` belongs to the open file description, which `--stdio`'s stdin and stdout share
/// with whoever started the server (a shell's terminal, an SSH session's pipes): left set, it
/// makes the parent's next blocking read fail with EAGAIN. Dropping this restores what
/// [`Self::save`] found on every way out of the driver, an error or a panic included.
#[derive(Debug)]
pub(crate) struct StdioFlags {
    stdin: OFlags,
    stdout: OFlags,
}

impl StdioFlags {
    /// The flags as raw bits, stdin's then stdout's (for an upgrade's image).
    pub(crate) fn bits(&self) -> (u32, u32) {
        (self.stdin.bits(), self.stdout.bits())
    }

    /// The flags an earlier image saved (see [`Self::bits`]).
    pub(crate) fn from_bits((stdin, stdout): (u32, u32)) -> Self {
        Self {
            stdin: OFlags::from_bits_retain(stdin),
            stdout: OFlags::from_bits_retain(stdout),
        }
    }

    /// Saves both fds' flags before either is changed (they may be one file description).
    pub(crate) fn save() -> io::Result<Self> {
        Ok(Self {
            stdin: rustix::fs::fcntl_getfl(rustix::stdio::stdin())?,
            stdout: rustix::fs::fcntl_getfl(rustix::stdio::stdout())?,
        })
    }

    /// Sets `O_NONBLOCK` on stdin and stdout.
    pub(crate) fn set_nonblocking(&self) -> io::Result<()> {
        let stdin = rustix::stdio::stdin();
        rustix::fs::fcntl_setfl(stdin, self.stdin | OFlags::NONBLOCK)?;
        let stdout = rustix::stdio::stdout();
        let now = rustix::fs::fcntl_getfl(stdout)?;
        rustix::fs::fcntl_setfl(stdout, now | OFlags::NONBLOCK)?;
        Ok(())
    }
}

impl Drop for StdioFlags {
    fn drop(&mut self) {
        // [SERVER.STDIO.2] Back as they were. Both were saved before either was changed, so
        // this is right when the two are one file description too.
        let _ = rustix::fs::fcntl_setfl(rustix::stdio::stdout(), self.stdout);
        let _ = rustix::fs::fcntl_setfl(rustix::stdio::stdin(), self.stdin);
    }
}

/// `--stdio`'s stdin could not be registered with the poll: says why, in words.
///
/// epoll refuses (EPERM) what is always ready: a regular file, or a character device such as
/// /dev/null. Such a stdin can never say "no more for now", so the one client could not be
/// served without blocking; the message names what stdin is.
pub(crate) fn stdin_unwatchable(e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(Errno::PERM.raw_os_error()) {
        return e;
    }
    let what = match rustix::fs::fstat(rustix::stdio::stdin()) {
        Ok(st) => match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::RegularFile => "a regular file",
            rustix::fs::FileType::CharacterDevice => "a character device (such as /dev/null)",
            rustix::fs::FileType::Directory => "a directory",
            rustix::fs::FileType::BlockDevice => "a block device",
            _ => "a file epoll cannot watch",
        },
        Err(_) => "a file epoll cannot watch",
    };
    io::Error::new(
        e.kind(),
        format!(
            "--stdio: stdin is {what}, which epoll cannot watch for readiness ({e}); \
             --stdio needs a pipe, a socket or a terminal on stdin"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_full_socket_blocks_instead_of_stalling_and_drains_when_read() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("pair");
        ours.set_nonblocking(true).expect("nonblocking");
        let mut transport = Transport::Unix(UnixStream::from_std(ours));
        let mut queue = WriteQueue::new();
        // Far more than any socket buffer: the write must stop with Blocked, not hang.
        let total = 8 * 1024 * 1024;
        queue.push(vec![0x5a; total]);
        let (first, state) = queue.flush_to(&mut transport);
        assert!(matches!(state, FlushState::Blocked));
        assert!(first > 0 && first < total);
        // Read everything on the other side, flushing as room appears.
        let mut theirs = theirs;
        let mut got = 0;
        let mut sent = first;
        let mut buf = vec![0u8; READ_CHUNK];
        while got < total {
            let n = theirs.read(&mut buf).expect("read");
            assert!(buf[..n].iter().all(|&x| x == 0x5a));
            got += n;
            let (more, _) = queue.flush_to(&mut transport);
            sent += more;
        }
        assert_eq!(sent, total);
        assert!(queue.is_empty());
    }
}
