//! A client connection's transport; its outbound queue is [`WriteQueue`].

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};

use mio::net::UnixStream;
use rustix::io::Errno;

pub use crate::queue::{Chunk, FlushState, WriteQueue};

/// The largest read from a connection or a PTY at once.
pub const READ_CHUNK: usize = 64 * 1024;

/// How a client reaches us.
#[derive(Debug)]
pub enum Transport {
    /// A peer on the Unix socket.
    Unix(UnixStream),
    /// The one `--stdio` client: we read stdin and write stdout (both set non-blocking).
    Stdio,
}

impl Transport {
    /// The fd readiness for reading comes from.
    pub fn read_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Unix(s) => s.as_fd(),
            Self::Stdio => rustix::stdio::stdin(),
        }
    }

    /// The fd readiness for writing comes from (the same as [`Self::read_fd`] on a socket).
    pub fn write_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Unix(s) => s.as_fd(),
            Self::Stdio => rustix::stdio::stdout(),
        }
    }

    /// Whether reading and writing use separate fds (and so separate mio registrations).
    pub fn split(&self) -> bool {
        matches!(self, Self::Stdio)
    }

    /// Whether a read shorter than its buffer took everything the peer had sent by then: true
    /// of a stream socket, whose reads gather every queued segment. A `--stdio` stdin may be
    /// a terminal, which hands out one line per read however many are waiting.
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Self::Unix(_))
    }

    /// One non-blocking read. `Ok(0)` is end of stream.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.read(buf),
            Self::Stdio => fd_read(rustix::stdio::stdin(), buf),
        }
    }

    /// Ends the stream in both directions (the peer sees EOF); the fds close on drop.
    pub fn shutdown(&self) {
        if let Self::Unix(s) = self {
            // NotConnected when the peer already went away: nothing left to tell it.
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Write for Transport {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Stdio => rustix::io::write(rustix::stdio::stdout(), buf).map_err(Into::into),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write_vectored(bufs),
            Self::Stdio => rustix::io::writev(rustix::stdio::stdout(), bufs).map_err(Into::into),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn fd_read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    match rustix::io::read(fd, buf) {
        Ok(n) => Ok(n),
        Err(Errno::AGAIN) => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e.into()),
    }
}

/// Sets `O_NONBLOCK` on a file description (stdin/stdout for `--stdio`).
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
