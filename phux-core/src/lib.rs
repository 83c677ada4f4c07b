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
//! | [`terminal_state`] | the server's view of a terminal's output (the `phux-term` model plus its sequence numbers) |
//! | [`upgrade`] | the engine's whole state as one versioned image, for an in-place upgrade |
//! | `sim` (feature) | a simulated PTY and clock: the one non-production driver |
//!
//! # Driving the engines
//!
//! Both engines, [`server::ServerEngine`] and [`client::ClientEngine`], have one call shape:
//! `handle(now, event)` takes what happened, `poll_action()` gives what to do, and
//! `poll_timeout()` says when to report a `Timeout`. The contract every driver keeps
//! (quinn-proto and str0m keep the same one):
//!
//! 1. **Report, then drain.** Report each event with `handle` ([`server::ServerEvent`],
//!    [`client::ClientEvent`]), then call `poll_action` until it returns `None`, performing
//!    each action ([`server::ServerAction`], [`client::ClientAction`]) in the order given. A
//!    client's commands (`command`, `send`, `apply_input`, `paste`, `set_scope`,
//!    `drop_operations`) are drained the same way. Actions for one connection or one
//!    terminal must be carried out in that order (bytes to a socket, jobs to a PTY).
//! 2. **Journal before send.** A client's [`client::ClientAction::Journal`] record is made
//!    durable before any later `Transmit` is written ([CLIENT.OUTBOX.1]). The engine yields
//!    every waiting record before any notice or byte, so a driver may append a drain's
//!    records as they come and sync once, before its first notice or `Transmit`.
//! 3. **Never re-enter.** The engine never calls the driver, and performing an action never
//!    calls the engine. What performing produces (a spawn fails at once, a write completes at
//!    once, bytes are handed to a socket, a client closes the connection it was told to
//!    redial) is queued and reported after the drain, one event at a time, each followed by
//!    its own drain. The mio driver (`feed_all`), the simulation (`Harness::drain`) and
//!    phuxctl's session order events this way.
//! 4. **Complete what you were asked.** Every `Spawn` is answered with `Spawned` or
//!    `SpawnFailed`, every `Write` with one `WriteDone` (write jobs through a
//!    [`writer::PtyWriter`]), every `Kill` with `ChildExited`; bytes handed to a socket are
//!    reported with `Sent`. The server engine answers APPLY_INPUT from these reports only. A
//!    client that is told to redial, or that its connection failed, closes the connection and
//!    reports `Disconnected` (and `Connected` once it has dialled again).
//! 5. **Wake up on time.** After the drain, read `poll_timeout` and report `Timeout` at or
//!    after that instant. Early or extra timeouts are harmless. `now` never goes backwards;
//!    a client with a journal takes it from a clock whose epoch survives a restart.
//!
//! The server:
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
//!
//! The client:
//!
//! ```no_run
//! use phux_core::client::{ClientAction, ClientConfig, ClientEngine, ClientEvent, ClientNotice};
//! use phux_core::client::journal::JournalRecord;
//! use phux_core::Instant;
//! # fn clock() -> Instant { Instant::ZERO }
//! # fn read_socket_until(_: Option<Instant>) -> Option<Vec<u8>> { None }
//! # fn write_socket(_: &[u8]) {}
//! # fn append_and_sync(_: &[JournalRecord]) {}
//! # fn close_and_dial() {}
//!
//! let mut engine = ClientEngine::new(ClientConfig::default());
//! engine.handle(clock(), ClientEvent::Connected);
//! loop {
//!     let (mut records, mut bytes_out, mut redial) = (Vec::new(), Vec::new(), false);
//!     while let Some(action) = engine.poll_action() {
//!         match action {
//!             ClientAction::Journal(record) => records.push(record),
//!             ClientAction::Notify(ClientNotice::Redial { .. }) => redial = true,
//!             ClientAction::Notify(notice) => println!("{notice:?}"),
//!             ClientAction::Transmit(bytes) => bytes_out.push(bytes),
//!         }
//!     }
//!     append_and_sync(&records); // durable before the bytes it describes leave
//!     bytes_out.iter().for_each(|b| write_socket(b));
//!     if redial {
//!         close_and_dial(); // what performing produced, reported after the drain
//!         engine.handle(clock(), ClientEvent::Disconnected);
//!         engine.handle(clock(), ClientEvent::Connected);
//!         continue;
//!     }
//!     // Wait for the socket or the engine's wake-up, whichever comes first.
//!     match read_socket_until(engine.poll_timeout()) {
//!         Some(bytes) => engine.handle(clock(), ClientEvent::Received { bytes: &bytes }),
//!         None => engine.handle(clock(), ClientEvent::Timeout),
//!     }
//! }
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
pub mod terminal_state;
pub mod time;
pub mod upgrade;
pub mod writer;

pub use time::Instant;
