//! The phux conformance suite: transcripts, the runner that replays them against any phux
//! server over any transport, and the reports it writes.
//!
//! # What the suite is
//!
//! The spec (`spec/*.md`) states every rule as a clause with a stable id (`INPUT.DEDUPE.2`)
//! and one of MUST, SHOULD or MAY ([`spec`]). A *transcript* is one case, a plain-text file at
//! `conformance/transcripts/<area>/<NNN>-<slug>.phuxt` with id `<area>/<NNN>`: a small header
//! (the clauses it is about, its level, a one-line description, the requirement sentence),
//! then one step per line. `c1 > FRAME` sends a frame written in the phux-proto notation,
//! `c1 < PATTERN` expects one (with `$name` captures, `*` wildcards and `a | b` alternatives,
//! see [`pattern`]), `~ 200ms` lets time pass, `c1 > raw 00 …` sends malformed bytes, and every
//! step that checks something cites the clause it checks. [`transcript`] parses them; the
//! format is described in full in `conformance/README.md`.
//!
//! The [`runner`] plays a transcript's steps against a server and gives each case one
//! [`runner::Outcome`]: PASS, FAIL (a step citing a MUST clause failed), NON_STRICT (only SHOULD
//! or MAY clauses failed), UNSUPPORTED (the server does not advertise a feature the case needs,
//! or the transport cannot run it), SKIPPED (outside the run's [`spec::Profile`]: the case
//! checks a rule of phux-rs only), KNOWN (a deviation the server's [`expectations`] file
//! lists), KNOWN_PASSED (a listed deviation that passed: the list is stale), DISABLED (listed
//! as not to run) or ERROR (the runner or the transport failed). FAIL, ERROR and KNOWN_PASSED
//! fail a run. Every clause says whose rule it is ([`spec::Owner`]): phux 0.8's own, or ours. [`report`] turns
//! the results into an h2spec-style tree for people and a JSON document with every case's wire
//! log for machines. [`coverage`] says which clauses the transcripts check (a test fails when a
//! wire-checkable MUST clause has none and is not listed in `uncovered.txt` as still to do).
//!
//! # Transports
//!
//! The runner talks to the server only through a [`transport::Connector`], which opens a fresh
//! [`transport::Transport`] per case. A transport carries bytes, never frames, so every
//! transport exercises the server's own decoder, and a transcript passes or fails the same way
//! on all of them:
//!
//! - [`transport::InProcess`]: phux-core's `ServerEngine` in this process, with simulated
//!   terminals and a virtual clock (`~ 600s` takes no time). Nothing to start; deterministic.
//! - [`transport::SocketConnector`]: a running server's Unix socket. The server is shared by
//!   every case, so cases that would end it or fill its ledger are UNSUPPORTED there.
//! - [`transport::ExecConnector`]: a server started per case with a shell command that serves
//!   one client on its standard input and output (`phux-mio-server --stdio`).
//!
//! Cases that need a program inside the terminal run the [`probe`] child: a small deterministic
//! program (`phux-conformance probe`) that reports what it reads, its termios, its process
//! group and the signals it gets, so no result depends on a shell's prompt. In process the same
//! probe state machine runs on a simulated PTY.
//!
//! # Running it against a server
//!
//! From the command line (`phux-conformance run --help`):
//!
//! ```text
//! phux-conformance run --in-process
//! phux-conformance run --socket /run/user/1000/phux-mio/default.sock
//! phux-conformance run --exec 'phux-mio-server --stdio' --filter INPUT.DEDUPE --json report.json
//! ```
//!
//! It exits 0 when no case FAILs or ERRORs, 1 otherwise, and 2 when the suite cannot be loaded.
//!
//! As a library: load the [`suite::Suite`] from the repository's files
//! ([`suite::Suite::load`] with [`suite::Paths::default`]), run it over a connector with
//! [`suite::Suite::run`] (optionally filtered by a case id or a clause id prefix), and print
//! [`report::tree`] or write [`report::json`]. The crate's integration tests
//! (`conformance/tests/it/suite.rs`) do exactly this against the in-process engine and against
//! the real `phux-mio-server`, over a socket and over `--stdio`.
//!
//! `cargo test -p phux-conformance` runs the whole suite on all three transports. The real
//! server it runs is this package's example `conformance-test-server`, which `cargo test`
//! builds before the tests; no test invokes cargo.
//!
//! # Differential checks against live servers
//!
//! [`peer`] starts the phux reference (`PHUX_REF_BIN`) or our `phux-mio-server` on a socket in
//! a scratch home of its own, ends it on drop, and gives blocking [`peer::Client`]s, so a tool
//! or a test can send the same frames to both and compare what a program inside each reads or
//! shows. Without the reference binary such a test skips, recorded (phux-testkit).
//!
//! # Writing new cases
//!
//! [`recorder::record`] (`phux-conformance record`) proxies a live session to a server and
//! writes it as a transcript draft, with the ids the server chose turned into captures.

#![warn(missing_docs)]

pub mod coverage;
pub mod expectations;
pub mod keydiff;
pub mod matrix;
pub mod netfuzz;
pub mod pattern;
pub mod peer;
/// The probe child ([`phux_probe`], a crate of its own so the server's fault tests can run it
/// without linking this suite).
pub use phux_probe as probe;
pub mod recorder;
pub mod report;
pub mod runner;
pub mod screen_diff;
pub mod spec;
pub mod suite;
pub mod transcript;
pub mod transport;
