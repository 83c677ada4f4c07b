//! What the driver tells the client engine.

/// What happened to the client's connection, or to time, as the driver reports it to
/// [`ClientEngine::handle`](super::ClientEngine::handle).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ClientEvent<'a> {
    /// A connection to the server is up: the engine queues HELLO. A previous connection still
    /// open is treated as lost first.
    Connected,
    /// Bytes arrived from the server.
    Received {
        /// The bytes, in stream order.
        bytes: &'a [u8],
    },
    /// The connection is gone (peer closed, error, or closed by the driver after
    /// [`ClientNotice::Redial`](super::ClientNotice::Redial) or
    /// [`ClientNotice::ConnectionFailed`](super::ClientNotice::ConnectionFailed)). In-flight
    /// operations become in doubt, decided after the next HELLO_OK; commands awaiting answers
    /// are abandoned.
    Disconnected,
    /// A wake-up at or after [`ClientEngine::poll_timeout`](super::ClientEngine::poll_timeout):
    /// backoffs end, half-open deadlines fire. Early or extra timeouts are harmless.
    Timeout,
}
