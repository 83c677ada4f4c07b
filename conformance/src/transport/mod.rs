//! How the runner reaches a server: in process, over a Unix socket, through a child's standard
//! input and output, or over a WebSocket (one binary message per phux frame).
//!
//! A [`Connector`] is chosen once per run; it opens a fresh [`Transport`] for each transcript.
//! The transport carries bytes only: framing and frames are the runner's business, so the
//! same transcript exercises the server's own decoder on every transport.

use std::time::Duration;

use phux_proto::notation::Value;

mod inproc;
mod sim_probe;
mod stream;
mod ws;

pub use inproc::{BrokenInProcess, InProcess, RuleFlip};
pub use stream::{ExecConnector, SocketConnector};
pub use ws::WsConnector;

/// A connection inside one transport, numbered by the transport.
pub type ConnKey = usize;

/// What [`Transport::recv`] found.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Recv {
    /// Bytes from the server, in stream order.
    Bytes(Vec<u8>),
    /// The server closed the connection (everything it sent was delivered before).
    Closed,
    /// Nothing arrived in the time given.
    Nothing,
}

/// A runner or transport fault (not a server's misbehaviour): the case is reported ERROR.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// An I/O error talking to the server.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The transport cannot do this (a second connection over stdio, say).
    #[error("{0}")]
    Unsupported(String),
}

impl TransportError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// Opens one transport per transcript.
pub trait Connector {
    /// A short name for reports (`in-process`, `socket /path`, `exec 'cmd'`).
    fn describe(&self) -> String;
    /// The transport's kind, as expectations files name it: `in-process`, `socket`, `exec` or
    /// `ws`.
    fn kind(&self) -> &'static str;
    /// A fresh transport for one transcript.
    fn open(&self) -> Result<Box<dyn Transport>, TransportError>;
}

/// The connections of one transcript to one server.
pub trait Transport {
    /// Whether time is virtual: then waiting never helps, `recv` returns everything the server
    /// will ever send until the transcript acts again, and `advance` moves the server's clock.
    fn virtual_time(&self) -> bool;
    /// Whether the server outlives this transcript and serves other cases (a running server
    /// behind a socket): then a case that shuts the server down cannot run (`own-server`).
    fn shared_server(&self) -> bool {
        false
    }
    /// Whether the peer counts as on the server's local socket (`local-socket`): a server
    /// MAY refuse SHUTDOWN elsewhere ([SERVER.SHUTDOWN.4]).
    fn local_socket(&self) -> bool {
        true
    }
    /// Whether [`Transport::restart`] can replace the server (`restart`): the runner must own
    /// the server's process, or be the server.
    fn can_restart(&self) -> bool {
        false
    }
    /// Whether the server can upgrade its image in place on UPGRADE (`upgrade`): a real server
    /// on its local socket execs a binary, the in-process transport carries the engine's state
    /// over to a new engine when it asks. A case that sends UPGRADE needs it.
    fn can_upgrade(&self) -> bool {
        false
    }
    /// Replaces the server by a new incarnation, as a crash and a fresh start would: every
    /// connection ends at once and the new server knows nothing of the old one's state.
    fn restart(&mut self) -> Result<(), TransportError> {
        Err(TransportError::Unsupported(
            "this transport cannot restart the server".into(),
        ))
    }
    /// What the server (a child the transport started) wrote to its standard error lately,
    /// for reports of a failing case.
    fn server_stderr(&self) -> Option<String> {
        None
    }
    /// How many connections at once the transport can carry, if limited.
    fn max_connections(&self) -> Option<usize>;
    /// Variables every transcript may use (`$ECHO`: a command list for an echoing child;
    /// `$PROBE`: the probe child's command list, when the probe is available).
    fn vars(&self) -> Vec<(String, Value)>;
    /// Opens a connection.
    fn connect(&mut self) -> Result<ConnKey, TransportError>;
    /// Sends bytes on a connection.
    fn send(&mut self, conn: ConnKey, bytes: &[u8]) -> Result<(), TransportError>;
    /// Holds the server's turns while `true`: what is sent meanwhile reaches the server, and
    /// it handles all of it as a loop that found every connection ready at once would; its
    /// turns go on when this is set back to `false`. A transport that cannot hold the server
    /// (a real one, where the kernel decides when bytes arrive) only sends.
    fn hold_turns(&mut self, _held: bool) {}
    /// Whether the connection is a byte stream, where a frame may arrive in pieces across
    /// writes (the `byte-stream` capability): not over a WebSocket, where each message carries
    /// one whole frame.
    fn byte_stream(&self) -> bool {
        true
    }
    /// Whether [`Transport::hold_turns`] holds the server's turns (the `same-turn` capability).
    fn same_turn(&self) -> bool {
        false
    }
    /// Waits at most `wait` for bytes or the close of a connection.
    fn recv(&mut self, conn: ConnKey, wait: Duration) -> Result<Recv, TransportError>;
    /// Closes the client's end of a connection.
    fn disconnect(&mut self, conn: ConnKey);
    /// Stops (`false`) or resumes (`true`) reading a connection, like a client that stops
    /// reading: once whatever lies between is full, the server's writes to it stop
    /// completing. Bytes read before a stop are still returned by `recv`.
    fn set_reading(&mut self, conn: ConnKey, reading: bool) -> Result<(), TransportError>;
    /// Lets `by` pass (virtual time jumps; real time sleeps).
    fn advance(&mut self, by: Duration);
}

/// The command list a transcript's `$ECHO` stands for: a child that echoes its input.
pub const ECHO_COMMAND: &str = "/bin/cat";

pub(crate) fn command_list(words: &[&str]) -> Value {
    Value::List(
        words
            .iter()
            .map(|w| Value::Str(w.as_bytes().to_vec()))
            .collect(),
    )
}
