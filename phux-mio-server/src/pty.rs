//! The master side of a pseudo-terminal: open, size, non-blocking reads and writes, termios.
//!
//! Everything here is a thin, typed layer over `rustix`; no `unsafe`. The master is
//! non-blocking and close-on-exec so the event loop can drain it until `WouldBlock` and no
//! child inherits another terminal's master.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use phux_core::writer::Termios;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::pty::OpenptFlags;
use rustix::termios::{InputModes, LocalModes, Winsize};

/// The master end of a pseudo-terminal.
#[derive(Debug)]
pub struct PtyMaster {
    fd: OwnedFd,
}

/// What one non-blocking read of the master produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyRead {
    /// This many bytes were read into the buffer (never 0 for a non-empty buffer).
    Data(usize),
    /// Nothing to read now; wait for readability.
    WouldBlock,
    /// Every process holding the slave has closed it (Linux reports `EIO`): the output is
    /// fully drained and no more will come.
    Eof,
}

/// What one non-blocking write to the master did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyWrite {
    /// The kernel accepted this many bytes (a prefix of the buffer).
    Written(usize),
    /// The terminal's input queue is full (EAGAIN); nothing was written. Retry when the
    /// master is writable.
    WouldBlock,
    /// The terminal is hung up (`EIO`): nobody will ever read these bytes.
    ///
    /// Not a reliable exit signal: Linux (6.x) keeps accepting master writes after the last
    /// slave holder closed it and discards them. Whether written bytes were read is known
    /// only from the child; its exit is known from the pidfd and from [`PtyRead::Eof`].
    Gone,
}

impl PtyMaster {
    /// Opens a new pseudo-terminal pair: the master (non-blocking, close-on-exec) and the
    /// slave (blocking, close-on-exec, not our controlling terminal), with the given size.
    pub(crate) fn open(cols: u16, rows: u16) -> io::Result<(Self, OwnedFd)> {
        let fd =
            rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        rustix::pty::grantpt(&fd)?;
        rustix::pty::unlockpt(&fd)?;
        let name = rustix::pty::ptsname(&fd, Vec::new())?;
        // The child gets the slave through dup2 onto 0/1/2, which clears CLOEXEC there; our
        // own copy must not leak into other children spawned before we close it.
        let slave = rustix::fs::open(
            name.as_c_str(),
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let flags = rustix::fs::fcntl_getfl(&fd)?;
        rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
        let master = Self { fd };
        master.resize(cols, rows)?;
        Ok((master, slave))
    }

    /// A master the previous server image left us (an upgrade): still non-blocking, as the
    /// flag belongs to the open file description.
    pub(crate) fn adopt(fd: OwnedFd) -> Self {
        Self { fd }
    }

    /// Reads what the child wrote, without blocking. `EINTR` is retried.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<PtyRead> {
        if buf.is_empty() {
            return Ok(PtyRead::Data(0));
        }
        loop {
            return match rustix::io::read(&self.fd, &mut *buf) {
                Ok(0) => Ok(PtyRead::Eof),
                Ok(n) => Ok(PtyRead::Data(n)),
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => Ok(PtyRead::WouldBlock),
                // Linux: the last slave holder closed it; buffered output was read first.
                Err(Errno::IO) => Ok(PtyRead::Eof),
                Err(e) => Err(e.into()),
            };
        }
    }

    /// Writes to the child's input, without blocking. `EINTR` is retried.
    pub fn write(&self, buf: &[u8]) -> io::Result<PtyWrite> {
        if buf.is_empty() {
            return Ok(PtyWrite::Written(0));
        }
        loop {
            return match rustix::io::write(&self.fd, buf) {
                // A zero-length write of a non-empty buffer means no room: same as EAGAIN.
                Ok(0) => Ok(PtyWrite::WouldBlock),
                Ok(n) => Ok(PtyWrite::Written(n)),
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => Ok(PtyWrite::WouldBlock),
                Err(Errno::IO) => Ok(PtyWrite::Gone),
                Err(e) => Err(e.into()),
            };
        }
    }

    /// Sets the window size (`TIOCSWINSZ`); the kernel sends `SIGWINCH` to the foreground
    /// process group.
    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        let size = Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        retry_intr(|| rustix::termios::tcsetwinsize(&self.fd, size))
    }

    /// The current window size as `(cols, rows)`.
    pub fn size(&self) -> io::Result<(u16, u16)> {
        let size = retry_intr(|| rustix::termios::tcgetwinsize(&self.fd))?;
        Ok((size.ws_col, size.ws_row))
    }

    /// The slave's line-discipline settings the canonical-line guard needs, read with `tcgetattr` on the master (Linux answers
    /// termios requests on a master with the slave's settings, which the child controls).
    pub fn termios(&self) -> io::Result<Termios> {
        let t = retry_intr(|| rustix::termios::tcgetattr(&self.fd))?;
        Ok(Termios {
            icanon: t.local_modes.contains(LocalModes::ICANON),
            icrnl: t.input_modes.contains(InputModes::ICRNL),
            igncr: t.input_modes.contains(InputModes::IGNCR),
        })
    }
}

impl AsFd for PtyMaster {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Retries a syscall interrupted by a signal handler (ours catch SIGTERM/SIGINT/SIGHUP).
fn retry_intr<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(Errno::INTR) => {}
            other => return other.map_err(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_sets_the_initial_size_and_resize_changes_it() {
        let (master, slave) = PtyMaster::open(132, 43).expect("open pty");
        assert_eq!(master.size().expect("size"), (132, 43));
        master.resize(80, 24).expect("resize");
        assert_eq!(master.size().expect("size"), (80, 24));
        // The slave sees the same size: it is one terminal.
        let ws = rustix::termios::tcgetwinsize(&slave).expect("slave size");
        assert_eq!((ws.ws_col, ws.ws_row), (80, 24));
    }

    #[test]
    fn master_is_non_blocking_and_close_on_exec() {
        let (master, slave) = PtyMaster::open(80, 24).expect("open pty");
        let fl = rustix::fs::fcntl_getfl(&master).expect("getfl");
        assert!(fl.contains(OFlags::NONBLOCK));
        let fd = rustix::io::fcntl_getfd(&master).expect("getfd");
        assert!(fd.contains(rustix::io::FdFlags::CLOEXEC));
        let fd = rustix::io::fcntl_getfd(&slave).expect("getfd");
        assert!(fd.contains(rustix::io::FdFlags::CLOEXEC));
        // Nothing written yet: a read must not block.
        let mut buf = [0u8; 16];
        assert_eq!(master.read(&mut buf).expect("read"), PtyRead::WouldBlock);
    }

    #[test]
    fn fresh_terminal_is_canonical_with_icrnl() {
        let (master, _slave) = PtyMaster::open(80, 24).expect("open pty");
        let f = master.termios().expect("termios");
        assert!(f.icanon);
        assert!(f.icrnl);
        assert!(!f.igncr);
    }

    #[test]
    fn read_reports_eof_once_the_slave_is_closed_after_draining() {
        let (master, slave) = PtyMaster::open(80, 24).expect("open pty");
        rustix::io::write(&slave, b"bye").expect("slave write");
        drop(slave);
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match master.read(&mut buf).expect("read") {
                PtyRead::Data(n) => got.extend_from_slice(&buf[..n]),
                PtyRead::Eof => break,
                PtyRead::WouldBlock => panic!("closed slave must give EOF, not WouldBlock"),
            }
        }
        assert_eq!(got, b"bye");
    }
}
