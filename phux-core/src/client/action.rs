//! What the client engine asks its driver to do.

use std::time::Duration;

use phux_proto::frame::{DetachReason, HelloOk};
use phux_proto::{CommandResult, Frame, OperationId, TerminalId};

use super::PeerMisbehaved;
use super::journal::JournalRecord;
use super::outbox::Resolution;

/// What the engine asks the driver to do, from [`ClientEngine::poll_action`]: every journal
/// record waiting comes first, then every notice, then the bytes to write (the crate's drive
/// contract).
///
/// [`ClientEngine::poll_action`]: super::ClientEngine::poll_action
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ClientAction {
    /// Append this record to the journal, and make it durable before writing any later
    /// [`ClientAction::Transmit`]: the bytes that send an operation follow its records
    /// ([CLIENT.OUTBOX.1]).
    Journal(JournalRecord),
    /// Hand this to the application.
    Notify(ClientNotice),
    /// Write these bytes (whole frames) to the connection.
    Transmit(Vec<u8>),
}

/// What the engine tells the application: answers, resolutions, frames, and the connection
/// falling over.
#[derive(Clone, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum ClientNotice {
    /// The handshake completed.
    HelloOk(HelloOk),
    /// A [`ClientEngine::command`](super::ClientEngine::command)'s answer (COMMAND_RESULT, or
    /// an ERROR naming its id).
    CommandResult {
        /// The id `command` returned.
        request_id: u32,
        /// The outcome.
        result: CommandResult,
    },
    /// A command's connection ended before its answer: it may or may not have run.
    CommandAbandoned {
        /// The id `command` returned.
        request_id: u32,
    },
    /// An acknowledged-input operation is finished.
    OperationResolved {
        /// The operation.
        op: OperationId,
        /// Its terminal.
        terminal: TerminalId,
        /// How it ended.
        resolution: Resolution,
    },
    /// Any other server frame: output, bootstrap, events, PONG, uncorrelated ERROR, ...
    Frame(Frame),
    /// The server is ending the connection.
    Detached {
        /// Why, when stated and known.
        reason: Option<DetachReason>,
        /// The server's text.
        message: String,
    },
    /// The connection looks dead: drop it and dial again (then report
    /// [`ClientEvent::Disconnected`](super::ClientEvent::Disconnected) and, once dialled,
    /// [`ClientEvent::Connected`](super::ClientEvent::Connected)). Pending operations are
    /// decided after the new HELLO_OK.
    Redial {
        /// Why.
        reason: RedialReason,
    },
    /// The server broke the protocol; the engine ignores this connection's further bytes.
    /// Close it (redialling is the driver's choice).
    ConnectionFailed(PeerMisbehaved),
}

/// Why the engine asks for a redial.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum RedialReason {
    /// An operation went unanswered past the half-open deadline.
    HalfOpen {
        /// The oldest unanswered operation.
        op: OperationId,
        /// How long since it was sent.
        waited: Duration,
    },
}
