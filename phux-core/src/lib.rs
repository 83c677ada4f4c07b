//! The phux protocol as pure state machines.
//!
//! No I/O, no clocks, no randomness: events go in (with `now`), actions come out, and
//! `poll_timeout` says when to call back. Drivers (the mio server, the simulator, the
//! conformance runner, the fuzzers, the tests) carry out the actions; the same engine runs in
//! all of them.
//!
//! | module | what it decides |
//! |---|---|
//! | [`server`] | the whole server side: [`server::ServerEngine`], an endpoint routing events to its connections and terminals |
//! | [`writer`] | one terminal's PTY writer: jobs in order, one outcome per job, the canonical-line guard |
//! | [`client`] | the client side: HELLO, request correlation, APPLY_INPUT with a durable outbox and retry rules |
//! | [`framing`] | a byte stream into frames, bounded |
//! | [`ledger`], [`lane`], [`lease`] | APPLY_INPUT dedupe, one acknowledged job per terminal, input authority |
//! | [`encoder`] | input atoms to PTY bytes under one mode snapshot |
//! | [`terminal`] | the server's view of a terminal's output (the `phux-term` model plus its sequence numbers) |
//! | [`upgrade`] | the engine's whole state as one versioned image, for an in-place upgrade |
//! | `sim` (feature) | a simulated PTY and clock: the one non-production driver |
//!
//! # Driving the server engine
//!
//! The contract every driver keeps (quinn-proto and str0m keep the same one):
//!
//! 1. **Report, then drain.** Report each event with [`server::ServerEngine::handle`], then
//!    call [`server::ServerEngine::poll_action`] until it returns `None`, performing each
//!    action in the order given. Actions for one connection or one terminal must be carried
//!    out in that order (bytes to a socket, jobs to a PTY).
//! 2. **Never re-enter.** The engine never calls the driver, and performing an action never
//!    calls the engine. What performing produces (a spawn fails at once, a write completes at
//!    once, bytes are handed to a socket) is queued and reported after the drain, one event
//!    at a time, each followed by its own drain. The mio driver (`feed_all`) and the
//!    simulation (`Harness::drain`) order events this way.
//! 3. **Complete what you were asked.** Every `Spawn` is answered with `Spawned` or
//!    `SpawnFailed`, every `Write` with one `WriteDone` (write jobs through a
//!    [`writer::PtyWriter`]), every `Kill` with `ChildExited`; bytes handed to a socket are
//!    reported with `Sent`. The engine answers APPLY_INPUT from these reports only.
//! 4. **Wake up on time.** After the drain, read [`server::ServerEngine::poll_timeout`] and
//!    report `ServerEvent::Timeout` at or after that instant. Early or extra timeouts are
//!    harmless. `now` never goes backwards.
//!
//! ```no_run
//! use phux_core::server::{ConnId, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent};
//! use phux_core::Instant;
//!
//! let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
//! let conn = ConnId(1);
//! let now = Instant::ZERO; // the driver's clock, in microseconds since its epoch
//! engine.handle(now, ServerEvent::Connected { conn, peer: PeerInfo::local() });
//! engine.handle(now, ServerEvent::Received { conn, bytes: &[0, 0, 0, 1, 0x03] });
//! let mut later = Vec::new(); // events that performing actions produced
//! while let Some(action) = engine.poll_action() {
//!     match action {
//!         ServerAction::Send { conn, bytes } => { /* queue bytes on the socket */ }
//!         ServerAction::Write { terminal, job, bytes } => {
//!             /* push onto the terminal's PtyWriter; its completions go to `later` */
//!         }
//!         _ => { /* share, close, spawn, resize, signal, kill, shut down */ }
//!     }
//! }
//! # let _: &mut Vec<ServerEvent<'static>> = &mut later;
//! for event in later {
//!     engine.handle(now, event); // ...and drain again
//! }
//! let _wake_at = engine.poll_timeout();
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
pub mod digest;
pub mod encoder;
pub mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod lane;
pub mod lease;
pub mod ledger;
pub mod modes;
pub mod server;
#[cfg(feature = "sim")]
pub mod sim;
pub mod terminal;
pub mod time;
pub mod upgrade;
pub mod writer;

pub use time::Instant;
