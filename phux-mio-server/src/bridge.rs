//! `phux-mio-server bridge`: this process's stdin and stdout joined to a running server's
//! socket, so that any command that carries a byte stream (`ssh host phux-mio-server bridge`
//! above all) reaches a long-lived server. The bridge knows nothing of the protocol: it
//! copies bytes, in order, both ways.
//!
//! When its stdin and stdout are both pipes or sockets (as under ssh), it first offers them
//! to the server ([`crate::handoff`], [SERVER.BRIDGE.6]): a server that takes them reads and
//! writes them itself, and the bridge only waits for it to close the socket. A server that
//! declines (an older one, the phux reference) gets a new connection and the copy below.
//!
//! The copy: two threads with blocking I/O, one per direction, each with one fixed buffer:
//! nothing is buffered beyond it (a side that stops reading stops the other side's copy), and
//! the stdio it was given keeps its file status flags (no `O_NONBLOCK`, which a parent sharing
//! the same open file would also see).

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;

use rustix::fs::OFlags;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::thread;

use phux_local::SocketError;
use phux_local::verify::{self, Target, TrustError};

/// One read's worth in each direction: the bridge's whole buffering.
const CHUNK: usize = 64 * 1024;

/// Why the bridge could not start, or stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The socket path cannot be worked out.
    #[error(transparent)]
    Path(#[from] SocketError),
    /// Nothing accepts connections there.
    #[error("cannot connect to {path}: {source} (is a server running there?)")]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// The socket's place or its listener fails the client's checks.
    #[error(transparent)]
    Untrusted(#[from] TrustError),
    /// A copy failed for a reason other than the other side closing.
    #[error("{direction}: {source}")]
    Copy {
        /// Which way.
        direction: &'static str,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// Connects to `target` with a client's checks ([SERVER.BRIDGE.2]): the socket's place before
/// dialling, and that the listening process runs as our user before any byte is copied.
pub fn connect(target: &Target) -> Result<UnixStream, BridgeError> {
    verify::check_place(target)?;
    let stream = UnixStream::connect(&target.path).map_err(|source| BridgeError::Connect {
        path: target.path.clone(),
        source,
    })?;
    // [SERVER.BRIDGE.2] SO_PEERCRED is what the peer was at connect time; it cannot be forged.
    verify::check_listener(&stream, &target.path)?;
    Ok(stream)
}

/// Joins stdin and stdout to the server at `target`: hands them over when `handoff` allows it,
/// both are pipes or sockets and the server takes them ([SERVER.BRIDGE.6]); copies
/// otherwise ([`run`]). Returns once the server is done with the connection.
pub fn join(target: &Target, handoff: bool) -> Result<(), BridgeError> {
    let stream = connect(target)?;
    let (stdin, stdout) = (rustix::stdio::stdin(), rustix::stdio::stdout());
    if !handoff
        || !crate::handoff::is_pipe_or_socket(stdin)
        || !crate::handoff::is_pipe_or_socket(stdout)
    {
        return run(stream);
    }
    if let Some(saved) = hand_over(&stream) {
        wait_for_close(stream);
        // [SERVER.BRIDGE.13] The server put them back before it closed the socket; this is for
        // a server that died without doing so.
        saved.restore();
        return Ok(());
    }
    // Declined: the offer left nothing usable on that connection (an older server answers
    // it as a framing violation). A new one, checked as the first was, carries the copy.
    drop(stream);
    run(connect(target)?)
}

/// Stdin's and stdout's file status flags before the handoff.
struct Saved {
    stdin: OFlags,
    stdout: OFlags,
}

impl Saved {
    fn restore(&self) {
        let _ = rustix::fs::fcntl_setfl(rustix::stdio::stdout(), self.stdout);
        let _ = rustix::fs::fcntl_setfl(rustix::stdio::stdin(), self.stdin);
    }
}

/// Offers stdin and stdout to the server and reads its answer: `Some` when it took them (the
/// flags they had before), `None` when it declined or went away. Waits for the answer however
/// long it takes: the server checked as ours either answers at once or closes, and giving up
/// early could leave two readers of stdin.
fn hand_over(stream: &UnixStream) -> Option<Saved> {
    let (stdin, stdout) = (rustix::stdio::stdin(), rustix::stdio::stdout());
    let saved = Saved {
        stdin: rustix::fs::fcntl_getfl(stdin).ok()?,
        stdout: rustix::fs::fcntl_getfl(stdout).ok()?,
    };
    crate::handoff::offer(stream, stdin, stdout).ok()?;
    let mut answer = [0u8];
    loop {
        match (&*stream).read(&mut answer) {
            Ok(1) if answer[0] == crate::handoff::ACK => return Some(saved),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A frame (an older server's ERROR), the end, or a failure: declined.
            _ => return None,
        }
    }
}

/// Reads the socket until the server closes it. The server sends nothing on it after its
/// answer; anything that comes is dropped (a bounded buffer, reused).
fn wait_for_close(mut stream: UnixStream) {
    let mut buf = [0u8; 64];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Copies stdin to the server and the server to stdout until the server closes: after
/// stdin's end the socket is half-closed and the server's remaining output still flows
/// ([SERVER.BRIDGE.3]).
pub fn run(stream: UnixStream) -> Result<(), BridgeError> {
    let to_server = stream.try_clone().map_err(|source| BridgeError::Copy {
        direction: "stdin to server",
        source,
    })?;
    // Detached: when the server closes, the process ends, and a thread blocked reading a
    // stdin that never ends must not keep it alive.
    thread::spawn(move || {
        let mut to_server = to_server;
        let result = copy(&mut io::stdin().lock(), &mut to_server);
        // EOF or a failed write: either way the server gets no more bytes from us.
        let _ = to_server.shutdown(Shutdown::Write);
        result
    });
    let mut from_server = stream;
    // Stdout as a plain file: std's handle is line-buffered, which would split a chunk holding
    // a newline byte into two writes (two packets through ssh).
    let mut stdout = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .map_err(|source| BridgeError::Copy {
            direction: "server to stdout",
            source,
        })?;
    copy(&mut from_server, &mut stdout).map_err(|source| BridgeError::Copy {
        direction: "server to stdout",
        source,
    })
}

/// `reader` into `writer`, one bounded chunk at a time, each written at once. A reset or a broken pipe is the other
/// side closing, not a failure.
fn copy(reader: &mut impl Read, writer: &mut impl Write) -> io::Result<()> {
    let mut buf = vec![0; CHUNK];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if closed(&e) => return Ok(()),
            Err(e) => return Err(e),
        };
        match writer.write_all(&buf[..n]).and_then(|()| writer.flush()) {
            Ok(()) => {}
            Err(e) if closed(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

fn closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_moves_every_byte_in_order_through_a_small_buffer() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let mut out = Vec::new();
        copy(&mut data.as_slice(), &mut out).expect("copy");
        assert_eq!(out, data);
    }

    #[test]
    fn a_closed_reader_or_writer_ends_the_copy_cleanly() {
        struct Broken(io::ErrorKind);
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(self.0.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        copy(&mut &b"abc"[..], &mut Broken(io::ErrorKind::BrokenPipe)).expect("closed");
        let err = copy(
            &mut &b"abc"[..],
            &mut Broken(io::ErrorKind::PermissionDenied),
        )
        .expect_err("a real failure");
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
    }
}
