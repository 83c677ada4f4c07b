//! Exactly once under chaos: thousands of APPLY_INPUT operations from several clients, each a
//! `ClientEngine` with its outbox, retry policy and an in-memory journal, to counting children
//! (`cat >> FILE`), while clients are killed mid-operation (socket and engine dropped between
//! send and result, the engine rebuilt from its journal), connections are cut at random byte
//! offsets (a prefix of the pending bytes written, then shut down), and the server is
//! restarted once (SIGTERM, a new incarnation on the same socket path, new counting children).
//!
//! At the end every operation was counted exactly once by the child of the incarnation it was
//! sent to, or was reported unknown by its client: zero duplicates, zero silent losses.
//! `FAULT_SEED=<n>` picks another chaos sequence. The seed fixes each client's choices per
//! write, but thread timing changes how many writes there are, so a rerun is similar, not
//! identical.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant as StdInstant};

use phux_core::client::journal::JournalRecord;
use phux_core::client::outbox::Resolution;
use phux_core::client::{ClientAction, ClientConfig, ClientEngine, ClientEvent, ClientNotice};
use phux_core::time::Instant;
use phux_proto::input::PasteTrust;
use phux_proto::{OperationId, TerminalId};

use crate::support::client;
use crate::support::faults::{self, Rng, ServerProc, eventually, private_tempdir};

const CLIENTS: usize = 4;
const OPERATIONS: usize = 4000;
/// Per mille of socket writes after which the client is killed (socket and engine dropped).
const KILL_PER_MILLE: u64 = 25;
/// Per mille of socket writes cut at a random byte offset.
const CUT_PER_MILLE: u64 = 40;
/// The server restarts once this many operations are resolved.
const RESTART_AFTER: usize = OPERATIONS / 2;
/// No single operation may take longer than this to resolve.
const OP_DEADLINE: Duration = Duration::from_secs(40);

/// server_id → (incarnation index, one counting terminal per client).
type Published = HashMap<Vec<u8>, (usize, Vec<TerminalId>)>;

/// What the clients and the coordinator share.
#[derive(Default)]
struct Shared {
    terminals: Mutex<Published>,
    changed: Condvar,
    resolved: AtomicUsize,
    /// The coordinator asks clients to park one operation for the restart.
    hold: AtomicBool,
    /// Clients parked for the restart, or finished.
    parked: AtomicUsize,
    /// The new incarnation is up and its terminals are published.
    restarted: AtomicBool,
    /// The line of each parked operation and whether its whole frame was written.
    parked_ops: Mutex<Vec<(String, bool)>>,
    /// (incarnation, line) of every operation resolved Delivered so far.
    delivered: Mutex<Vec<(usize, String)>>,
}

/// One operation as its client saw it.
#[derive(Clone, Debug)]
struct OpRecord {
    line: String,
    incarnation: usize,
    resolution: Resolution,
}

#[derive(Default, Debug, Clone, Copy)]
struct ChaosStats {
    kills: usize,
    cuts: usize,
    /// Cuts that fell after the last byte: the server got everything, the client no answer.
    whole_cuts: usize,
    reconnects: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Chaos {
    None,
    /// Write everything, then drop the socket and the engine before any answer is read.
    Kill,
    /// Write a random prefix of the pending bytes, then shut the connection down.
    Cut,
}

struct Worker {
    index: usize,
    socket: PathBuf,
    rng: Rng,
    base: StdInstant,
    engine: ClientEngine,
    /// The in-memory stand-in for the journal file: compacted after each resolution.
    journal: Vec<JournalRecord>,
    stream: Option<UnixStream>,
    /// The incarnation and terminal of the connection now up.
    target: Option<(usize, TerminalId)>,
    resolutions: HashMap<OperationId, Resolution>,
    shared: Arc<Shared>,
    stats: ChaosStats,
    /// No chaos while parked for the restart.
    calm: bool,
    /// This client has taken its part in the restart.
    parked: bool,
}

fn config() -> ClientConfig {
    ClientConfig::default()
}

impl Worker {
    fn now(&self) -> Instant {
        Instant::from_micros(u64::try_from(self.base.elapsed().as_micros()).unwrap_or(u64::MAX))
    }

    /// Drains the engine: journal records kept, notices acted on, and the bytes to send
    /// returned (they come after the records that describe them).
    fn drain(&mut self) -> Vec<u8> {
        let mut bytes = Vec::new();
        while let Some(action) = self.engine.poll_action() {
            match action {
                ClientAction::Journal(record) => self.journal.push(record),
                ClientAction::Notify(ClientNotice::OperationResolved {
                    op, resolution, ..
                }) => {
                    self.resolutions.insert(op, resolution);
                    self.shared.resolved.fetch_add(1, Ordering::SeqCst);
                }
                ClientAction::Notify(ClientNotice::Redial { reason }) => {
                    println!("client {}: redial requested ({reason:?})", self.index);
                    self.drop_connection();
                    bytes.clear();
                }
                ClientAction::Notify(ClientNotice::ConnectionFailed(why)) => {
                    panic!("the server misbehaved: {why}")
                }
                ClientAction::Notify(_) => {}
                ClientAction::Transmit(chunk) => bytes.extend_from_slice(&chunk),
            }
        }
        bytes
    }

    fn drop_connection(&mut self) {
        if let Some(stream) = self.stream.take() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        let now = self.now();
        self.engine.handle(now, ClientEvent::Disconnected);
        self.target = None;
    }

    /// The process "dies" and restarts: the engine is rebuilt from its journal.
    fn kill_and_restore(&mut self) {
        self.stats.kills += 1;
        if let Some(stream) = self.stream.take() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
        self.target = None;
        self.engine = ClientEngine::restore(config(), self.journal.clone()).expect("restore");
        self.journal = self.engine.outbox().compact();
    }

    /// Writes what the engine wants sent, with `chaos` applied.
    fn flush(&mut self) {
        let bytes = self.drain();
        if bytes.is_empty() {
            return;
        }
        let chaos = if self.calm {
            Chaos::None
        } else if self.rng.chance(KILL_PER_MILLE) {
            Chaos::Kill
        } else if self.rng.chance(CUT_PER_MILLE) {
            Chaos::Cut
        } else {
            Chaos::None
        };
        let len = match chaos {
            Chaos::Cut => self.rng.below(bytes.len() as u64 + 1) as usize,
            _ => bytes.len(),
        };
        let written = self
            .stream
            .as_mut()
            .is_some_and(|s| s.write_all(&bytes[..len]).is_ok());
        match chaos {
            Chaos::Kill => self.kill_and_restore(),
            Chaos::Cut => {
                self.stats.cuts += 1;
                self.stats.whole_cuts += usize::from(len == bytes.len());
                self.drop_connection();
            }
            Chaos::None if !written => self.drop_connection(),
            Chaos::None => {}
        }
    }

    /// Connects (retrying while the server restarts) and completes the handshake.
    fn connect(&mut self) {
        let end = StdInstant::now() + OP_DEADLINE;
        while self.target.is_none() {
            assert!(
                StdInstant::now() < end,
                "client {} cannot connect",
                self.index
            );
            let Ok(stream) = UnixStream::connect(&self.socket) else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            self.stats.reconnects += 1;
            self.stream = Some(stream);
            let now = self.now();
            self.engine.handle(now, ClientEvent::Connected);
            self.flush();
            while self.stream.is_some() && !self.engine.is_ready() {
                self.read_once(Duration::from_millis(100));
                assert!(StdInstant::now() < end, "no HELLO_OK");
            }
            if !self.engine.is_ready() {
                continue;
            }
            let server_id = self.engine.server_id().expect("server id").to_vec();
            let terminals = self.shared.terminals.lock().expect("lock");
            let (incarnation, ids) = terminals
                .get(&server_id)
                .expect("a connection to an incarnation with no published terminals");
            self.target = Some((*incarnation, ids[self.index].clone()));
            drop(terminals);
            // The handshake may have decided (resent or reported) operations in doubt.
            self.flush();
        }
    }

    /// One read (or timeout) reported to the engine.
    fn read_once(&mut self, wait: Duration) {
        let now = self.now();
        let until_timer = self
            .engine
            .poll_timeout()
            .map(|t| Duration::from_micros(t.as_micros().saturating_sub(now.as_micros())));
        let wait = until_timer
            .map_or(wait, |t| t.min(wait))
            .max(Duration::from_millis(1));
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        stream.set_read_timeout(Some(wait)).expect("timeout");
        let mut buf = [0u8; 16 * 1024];
        match stream.read(&mut buf) {
            Ok(0) => self.drop_connection(),
            Ok(n) => {
                let now = self.now();
                self.engine
                    .handle(now, ClientEvent::Received { bytes: &buf[..n] });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                let now = self.now();
                self.engine.handle(now, ClientEvent::Timeout);
            }
            Err(_) => self.drop_connection(),
        }
        self.flush();
    }

    /// Submits one operation and drives it to its resolution through whatever chaos strikes.
    fn run(&mut self, number: usize) -> OpRecord {
        self.connect();
        let (incarnation, terminal) = self.target.clone().expect("connected");
        let op = self.rng.operation_id();
        let line = format!("op-{number}");
        let now = self.now();
        let ids = self
            .engine
            .paste(
                now,
                terminal,
                format!("{line}\n").into_bytes(),
                PasteTrust::Trusted,
                || op,
            )
            .expect("submit");
        assert_eq!(ids, [op]);
        if !self.parked && self.shared.hold.load(Ordering::SeqCst) {
            self.parked = true;
            self.park(&line);
        }
        self.flush();
        let end = StdInstant::now() + OP_DEADLINE;
        while !self.resolutions.contains_key(&op) {
            assert!(
                StdInstant::now() < end,
                "client {}: {line} unresolved after {OP_DEADLINE:?}",
                self.index
            );
            if self.target.is_none() {
                self.connect();
            } else {
                self.read_once(Duration::from_millis(100));
            }
        }
        let resolution = self.resolutions[&op].clone();
        if resolution == Resolution::Delivered {
            self.shared
                .delivered
                .lock()
                .expect("lock")
                .push((incarnation, line.clone()));
        }
        self.journal = self.engine.outbox().compact();
        OpRecord {
            line,
            incarnation,
            resolution,
        }
    }

    /// The restart: the pending operation goes out whole or cut at a random byte, then the
    /// client waits, reading nothing, while the server is replaced. Its connection then ends
    /// unread, so whether that operation was written is unknown to the client: exactly what the
    /// new incarnation's server_id tells its retry policy.
    fn park(&mut self, line: &str) {
        self.calm = true;
        // The operation's journal records go first; only then does the engine yield its bytes.
        let bytes = self.drain();
        let len = if self.rng.chance(500) {
            bytes.len()
        } else {
            self.rng.below(bytes.len() as u64 + 1) as usize
        };
        let whole = len == bytes.len() && len > 0;
        let written = self
            .stream
            .as_mut()
            .is_some_and(|s| s.write_all(&bytes[..len]).is_ok());
        self.shared
            .parked_ops
            .lock()
            .expect("lock")
            .push((line.to_owned(), whole && written));
        self.shared.parked.fetch_add(1, Ordering::SeqCst);
        let guard = self.shared.terminals.lock().expect("lock");
        let guard = self
            .shared
            .changed
            .wait_while(guard, |_| !self.shared.restarted.load(Ordering::SeqCst))
            .expect("wait");
        drop(guard);
        self.drop_connection();
        self.calm = false;
    }
}

fn counting_child(file: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("stty -echo; exec cat >> '{}'", file.display()),
    ]
}

/// Spawns one counting terminal per client on the server at `socket` and publishes them
/// under its server_id.
fn publish_terminals(socket: &Path, dir: &Path, incarnation: usize, shared: &Shared) {
    let mut c = client::Client::unix(socket);
    let hello = c.hello();
    let mut ids = Vec::new();
    for k in 0..CLIENTS {
        let file = file_of(dir, incarnation, k);
        std::fs::write(&file, "").expect("create count file");
        let argv = counting_child(&file);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        ids.push(c.spawn(&argv));
    }
    shared
        .terminals
        .lock()
        .expect("lock")
        .insert(hello.server_id, (incarnation, ids));
}

fn file_of(dir: &Path, incarnation: usize, client: usize) -> PathBuf {
    dir.join(format!("count-{incarnation}-{client}.log"))
}

/// Every line of every count file of `incarnation`, with how often it occurs.
fn counts(dir: &Path, incarnation: usize) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for k in 0..CLIENTS {
        let text = std::fs::read_to_string(file_of(dir, incarnation, k)).unwrap_or_default();
        for line in text.lines() {
            *counts.entry(line.to_owned()).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn every_operation_is_counted_once_or_reported_unknown_under_chaos() {
    // [INPUT.DEDUPE.2] [CLIENT.RETRY.2] [CLIENT.RETRY.4] [CLIENT.OUTBOX.5]
    let started = StdInstant::now();
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let mut server = ServerProc::start(&socket);
    let shared = Arc::new(Shared::default());
    publish_terminals(&socket, dir.path(), 0, &shared);

    let seed = faults::seed(0x0c4a_05e1);
    println!("chaos: FAULT_SEED={seed}");
    let base = StdInstant::now();
    let per_client = OPERATIONS / CLIENTS;
    let workers: Vec<_> = (0..CLIENTS)
        .map(|index| {
            let shared = Arc::clone(&shared);
            let socket = socket.clone();
            let rng = Rng::new(seed ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9));
            std::thread::spawn(move || {
                let mut worker = Worker {
                    index,
                    socket,
                    rng,
                    base,
                    engine: ClientEngine::new(config()),
                    journal: Vec::new(),
                    stream: None,
                    target: None,
                    resolutions: HashMap::new(),
                    shared,
                    stats: ChaosStats::default(),
                    calm: false,
                    parked: false,
                };
                let records: Vec<OpRecord> = (0..per_client)
                    .map(|i| worker.run(index * per_client + i))
                    .collect();
                // A client that is done takes no part in the restart.
                worker.shared.parked.fetch_add(1, Ordering::SeqCst);
                (records, worker.stats)
            })
        })
        .collect();

    // The restart, once half the operations are resolved.
    assert!(
        eventually(Duration::from_mins(1), || {
            shared.resolved.load(Ordering::SeqCst) >= RESTART_AFTER
        }),
        "the clients made no progress"
    );
    shared.hold.store(true, Ordering::SeqCst);
    assert!(
        eventually(Duration::from_mins(1), || {
            shared.parked.load(Ordering::SeqCst) == CLIENTS
        }),
        "the clients did not park"
    );
    // Everything delivered so far has been read by its child: the restart loses no line that
    // the server already confirmed (the old children die with the old server).
    let delivered_before: Vec<(usize, String)> = shared.delivered.lock().expect("lock").clone();
    assert!(
        eventually(Duration::from_secs(30), || {
            let seen = counts(dir.path(), 0);
            delivered_before.iter().all(|(_, l)| seen.contains_key(l))
        }),
        "delivered lines never reached the first incarnation's children"
    );
    // A parked operation whose whole frame went out is written by the (healthy) server; one
    // cut short never is. Either way its client will report it unknown.
    let parked_ops = shared.parked_ops.lock().expect("lock").clone();
    assert!(
        eventually(Duration::from_secs(30), || {
            let seen = counts(dir.path(), 0);
            parked_ops
                .iter()
                .all(|(line, whole)| !whole || seen.contains_key(line))
        }),
        "a parked operation sent whole never reached its child"
    );
    let restart_at = started.elapsed();
    assert_eq!(server.terminate(), Some(0));
    let mut server = ServerProc::start(&socket);
    publish_terminals(&socket, dir.path(), 1, &shared);
    shared.restarted.store(true, Ordering::SeqCst);
    {
        let _guard = shared.terminals.lock().expect("lock");
        shared.changed.notify_all();
    }

    let mut records = Vec::new();
    let mut stats = ChaosStats::default();
    for worker in workers {
        let (r, s) = worker.join().expect("client thread panicked");
        records.extend(r);
        stats.kills += s.kills;
        stats.cuts += s.cuts;
        stats.whole_cuts += s.whole_cuts;
        stats.reconnects += s.reconnects;
    }
    assert_eq!(records.len(), OPERATIONS);

    // A marker after everything, per second-incarnation terminal: the server writes each
    // terminal's input in order, so once the marker is in the file any duplicate written
    // before it is too.
    let mut marker_client = client::Client::unix(&socket);
    marker_client.hello();
    let terminals = shared.terminals.lock().expect("lock").clone();
    let (_, second) = terminals
        .values()
        .find(|(i, _)| *i == 1)
        .expect("second incarnation");
    for (k, terminal) in second.iter().enumerate() {
        let op = OperationId::from_u128(0xfeed_0000 + k as u128).expect("id");
        let frame = faults::paste_command(1, op, terminal, format!("marker-{k}\n").into_bytes());
        marker_client.send(&frame);
        let result = marker_client.wait_for("marker result", |f| match f {
            phux_proto::Frame::CommandResult(r) if r.request_id == 1 => Some(r.result.clone()),
            _ => None,
        });
        assert_eq!(result, phux_proto::CommandResult::Ok);
        marker_client.seen.clear();
    }
    assert!(
        eventually(Duration::from_secs(30), || {
            let seen = counts(dir.path(), 1);
            (0..CLIENTS).all(|k| seen.contains_key(&format!("marker-{k}")))
        }),
        "markers never reached the children"
    );
    let delivered_all: Vec<(usize, String)> = shared.delivered.lock().expect("lock").clone();
    assert!(
        eventually(Duration::from_secs(30), || {
            let seen = [counts(dir.path(), 0), counts(dir.path(), 1)];
            delivered_all.iter().all(|(i, l)| seen[*i].contains_key(l))
        }),
        "some delivered lines never reached their children"
    );

    let seen = [counts(dir.path(), 0), counts(dir.path(), 1)];
    let known: HashMap<&str, &OpRecord> = records.iter().map(|r| (r.line.as_str(), r)).collect();
    let mut delivered = 0;
    let mut unknown = 0;
    let mut unknown_counted = 0;
    let mut refused = 0;
    let mut duplicates = 0;
    let mut losses = 0;
    let mut misdirected = 0;
    let mut failures = Vec::new();
    for r in &records {
        let here = seen[r.incarnation].get(&r.line).copied().unwrap_or(0);
        let there = seen[1 - r.incarnation].get(&r.line).copied().unwrap_or(0);
        if there > 0 {
            misdirected += 1;
            failures.push(format!("{} counted by the other incarnation", r.line));
        }
        if here > 1 {
            duplicates += here - 1;
            failures.push(format!("{} counted {here} times", r.line));
        }
        match &r.resolution {
            Resolution::Delivered => {
                delivered += 1;
                if here == 0 {
                    losses += 1;
                    failures.push(format!("{} delivered but never counted", r.line));
                }
            }
            Resolution::Unknown(_) => {
                unknown += 1;
                unknown_counted += usize::from(here > 0);
            }
            Resolution::NotSent(reason) => {
                refused += 1;
                if here > 0 {
                    losses += 1;
                    failures.push(format!("{} not sent ({reason:?}) but counted", r.line));
                }
            }
            Resolution::Refused { code, message } => {
                refused += 1;
                if here > 0 {
                    losses += 1;
                    failures.push(format!(
                        "{} refused ({code:?} {message}) but counted",
                        r.line
                    ));
                }
            }
        }
    }
    for (line, whole) in &parked_ops {
        let here = seen[0].get(line).copied().unwrap_or(0);
        assert_eq!(
            here,
            usize::from(*whole),
            "{line}: parked {}",
            if *whole { "whole" } else { "cut" }
        );
    }
    let parked_whole = parked_ops.iter().filter(|(_, whole)| *whole).count();
    let strays: Vec<&String> = seen
        .iter()
        .flat_map(HashMap::keys)
        .filter(|l| !known.contains_key(l.as_str()) && !l.starts_with("marker-"))
        .collect();
    println!(
        "chaos: operations {OPERATIONS} from {CLIENTS} clients, delivered {delivered}, \
         unknown {unknown} (of which counted by the child {unknown_counted}; parked at the \
         restart {} of which sent whole {parked_whole}), refused {refused}, \
         duplicates {duplicates}, losses {losses}, misdirected {misdirected}, stray lines {}",
        parked_ops.len(),
        strays.len()
    );
    println!(
        "chaos: client kills {} (each after a whole write), connection cuts {} ({} after the \
         last byte), connections {}, server restarts 1 (at {restart_at:?}), total {:?}",
        stats.kills,
        stats.cuts,
        stats.whole_cuts,
        stats.reconnects,
        started.elapsed()
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(strays.is_empty(), "lines no operation sent: {strays:?}");
    assert_eq!(duplicates, 0);
    assert_eq!(losses, 0);
    assert_eq!(delivered + unknown + refused, OPERATIONS);
    // The restart leaves each client's parked operation in doubt, and nothing else should be.
    assert!(unknown >= 1, "the restart left nothing in doubt");
    assert!(stats.kills > 0 && stats.cuts > 0, "no chaos happened");
    assert!(server.alive());
}
