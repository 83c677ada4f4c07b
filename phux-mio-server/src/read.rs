//! What one read of a connection's transport got, whichever transport it is (a socket, stdio,
//! a bridge's pipes, a WebSocket), and how much one read takes.

/// The largest read from a connection or a PTY at once.
pub const READ_CHUNK: usize = 64 * 1024;

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
    /// (the out-of-band byte is seen by its `EPOLLPRI`,
    /// [`READ_INTEREST`](crate::conn::READ_INTEREST)).
    pub drained: bool,
}
