//! Property test: the real [`ClientEngine`] (outbox, retry policy, journal) against the
//! simulated server, through random schedules of submissions, dropped connections (also in
//! the middle of a frame), stalled terminals, lost write completions, clock jumps, client
//! restarts from the journal and **server restarts whose new terminals reuse the old ids**
//! (the new `local:1` is another program).
//!
//! After each schedule every terminal is unstalled and the run is driven until every
//! operation is resolved. Then:
//!
//! - no operation's bytes reach a terminal of an incarnation other than the one it was
//!   submitted to, nor another terminal ([CLIENT.BIND.2]);
//! - no operation's bytes reach a terminal twice;
//! - every operation is resolved exactly once ([CLIENT.RESUME.2]);
//! - every operation that was never sent is reported not sent ([CLIENT.BIND.3],
//!   [CLIENT.BIND.4]), and nothing reported not sent was written;
//! - every operation reported delivered was written once, to its own terminal;
//! - the parts of a submission split into several operations are written in order, and
//!   none after a part that was not delivered: every later part is reported not sent
//!   ([CLIENT.SUBMIT.2]).
#![cfg(feature = "sim")]

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use phux_core::client::journal::JournalRecord;
use phux_core::client::outbox::Resolution;
use phux_core::client::retry::NotSentReason;
use phux_core::client::{ClientAction, ClientConfig, ClientEngine, ClientEvent, ClientNotice};
use phux_core::server::ConnId;
use phux_core::sim::{ChildMode, Harness, count, paste, server_id_for};
use phux_proto::{OperationId, TerminalId};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const TERMINALS: u32 = 2;

#[derive(Clone, Debug)]
enum Step {
    /// `parts` submissions to one terminal, back to back (they queue behind each other).
    Submit {
        term: u32,
        parts: usize,
    },
    /// One submission too large for one operation: `parts` operations (256 events each).
    SubmitSplit {
        term: u32,
        parts: u32,
    },
    Drop,
    DropMidSend {
        term: u32,
        at: usize,
    },
    Stall {
        term: u32,
    },
    Unstall {
        term: u32,
    },
    LoseCompletion {
        term: u32,
    },
    Advance {
        ms: u64,
    },
    /// The server dies; a new one starts and spawns terminals that get the same ids.
    Restart,
    /// The client process dies; a new one rebuilds its outbox from the journal.
    ClientRestart,
    /// The server cannot be reached for a while (the client retries in vain), then can.
    Offline {
        ms: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let t = 1..=TERMINALS;
    prop_oneof![
        8 => (t.clone(), 1..5usize).prop_map(|(term, parts)| Step::Submit { term, parts }),
        1 => (t.clone(), 2..4u32).prop_map(|(term, parts)| Step::SubmitSplit { term, parts }),
        1 => Just(Step::Drop),
        1 => (t.clone(), 0..60usize).prop_map(|(term, at)| Step::DropMidSend { term, at }),
        2 => t.clone().prop_map(|term| Step::Stall { term }),
        2 => t.clone().prop_map(|term| Step::Unstall { term }),
        1 => t.prop_map(|term| Step::LoseCompletion { term }),
        3 => prop_oneof![0..50u64, 4000..12_000u64, 60_000..700_000u64]
            .prop_map(|ms| Step::Advance { ms }),
        2 => Just(Step::Restart),
        1 => Just(Step::ClientRestart),
        1 => prop_oneof![1000..60_000u64, 500_000..900_000u64].prop_map(|ms| Step::Offline { ms }),
    ]
}

/// What the test knows about one operation.
#[derive(Debug)]
struct Op {
    /// The harness incarnation it was submitted in.
    incarnation: u32,
    terminal: u32,
    payload: Vec<u8>,
    /// A `Sent` record was journaled for it.
    sent: bool,
    resolutions: Vec<Resolution>,
    /// The submission it is a part of (its first operation) and its place there.
    part: (OperationId, u32),
}

/// Totals over every schedule, for the report.
#[derive(Default, Debug)]
struct Figures {
    schedules: usize,
    steps: usize,
    restarts: usize,
    operations: usize,
    delivered: usize,
    unknown: usize,
    refused: usize,
    never_sent: usize,
    /// Parts not sent because an earlier part of their submission was not delivered.
    ended: usize,
    server_gone: usize,
    expired: usize,
    misdirected: usize,
    duplicates: usize,
}

struct World {
    h: Harness,
    engine: ClientEngine,
    conn: Option<ConnId>,
    journal: Vec<JournalRecord>,
    ops: HashMap<OperationId, Op>,
    next_id: u128,
    redial: bool,
    /// The server cannot be reached: the pump does not dial.
    offline: bool,
    restarts: usize,
}

fn config() -> ClientConfig {
    ClientConfig::default()
}

impl World {
    fn new() -> Self {
        let mut h = Harness::new();
        h.spawn_mode = ChildMode::Record;
        h.log.set_cap(200);
        let mut w = Self {
            h,
            engine: ClientEngine::new(config()),
            conn: None,
            journal: Vec::new(),
            ops: HashMap::new(),
            next_id: 1,
            redial: false,
            offline: false,
            restarts: 0,
        };
        w.spawn_terminals();
        w.dial();
        w.pump();
        w
    }

    /// A helper connection of the new server spawns the terminals: `local:1`, `local:2`,
    /// whatever ran under those ids before.
    fn spawn_terminals(&mut self) {
        let admin = self.h.client();
        for n in 1..=TERMINALS {
            assert_eq!(self.h.spawn(admin), TerminalId::Local(n), "ids are reused");
        }
        self.h.disconnect(admin);
    }

    fn dial(&mut self) {
        self.h.set_raw_reads(true);
        let c = self.h.connect();
        self.h.set_raw_reads(false);
        self.conn = Some(c);
        self.engine.handle(self.h.now, ClientEvent::Connected);
    }

    fn lose_connection(&mut self) {
        if let Some(c) = self.conn.take() {
            self.h.disconnect(c);
        }
        self.engine.handle(self.h.now, ClientEvent::Disconnected);
    }

    /// Does what the engine asks until nothing moves: journal, notices, bytes, replies.
    fn pump(&mut self) {
        for _ in 0..10_000 {
            let mut moved = false;
            while let Some(action) = self.engine.poll_action() {
                match action {
                    ClientAction::Journal(record) => {
                        if let JournalRecord::Sent { op, .. } = &record
                            && let Some(o) = self.ops.get_mut(op)
                        {
                            o.sent = true;
                        }
                        self.journal.push(record);
                    }
                    ClientAction::Notify(ClientNotice::OperationResolved {
                        op,
                        resolution,
                        ..
                    }) => {
                        self.ops
                            .get_mut(&op)
                            .unwrap_or_else(|| panic!("resolution for unknown {op}"))
                            .resolutions
                            .push(resolution);
                    }
                    ClientAction::Notify(ClientNotice::Redial { .. }) => self.redial = true,
                    ClientAction::Notify(ClientNotice::ConnectionFailed(why)) => {
                        panic!("connection failed: {why}")
                    }
                    ClientAction::Notify(_) => {}
                    ClientAction::Transmit(bytes) => {
                        if let Some(c) = self.conn {
                            self.h.send_raw(c, &bytes);
                        }
                        moved = true;
                    }
                }
            }
            if std::mem::take(&mut self.redial) {
                self.lose_connection();
                self.dial();
                continue;
            }
            self.h.settle();
            let Some(c) = self.conn else {
                if self.offline {
                    return;
                }
                self.dial();
                continue;
            };
            let bytes = self.h.take_received(c);
            if !bytes.is_empty() {
                self.engine
                    .handle(self.h.now, ClientEvent::Received { bytes: &bytes });
                moved = true;
            }
            if !self.h.conn(c).is_open() {
                self.lose_connection();
                self.dial();
                continue;
            }
            if !moved {
                return;
            }
        }
        panic!("the client and the server never settle");
    }

    fn advance(&mut self, d: Duration) {
        let target = self.h.now + d;
        for _ in 0..100_000 {
            let next = self
                .engine
                .poll_timeout()
                .filter(|at| *at < target)
                .map_or(target, |at| at.max(self.h.now));
            self.h.advance(next.saturating_duration_since(self.h.now));
            self.engine.handle(self.h.now, ClientEvent::Timeout);
            self.pump();
            if self.h.now >= target {
                return;
            }
        }
        panic!("the client's timers never let the clock reach {target:?}");
    }

    fn submit(&mut self, term: u32, drop_at: Option<usize>) {
        assert!(
            self.engine.is_ready(),
            "the pump leaves the client connected"
        );
        let inc = self.h.incarnation();
        assert_eq!(self.engine.server_id(), Some(&server_id_for(inc)[..]));
        let id = self.next_id;
        self.next_id += 1;
        let payload = format!("[op:{id:06}]").into_bytes();
        if let (Some(at), Some(c)) = (drop_at, self.conn) {
            self.h.drop_after(c, at);
        }
        let ops = self
            .engine
            .apply_input(
                self.h.now,
                TerminalId::Local(term),
                vec![paste(&payload)],
                || OperationId::from_u128(id).expect("nonzero"),
            )
            .expect("submit");
        for op in ops {
            self.ops.insert(
                op,
                Op {
                    incarnation: inc,
                    terminal: term,
                    payload: payload.clone(),
                    sent: false,
                    resolutions: Vec::new(),
                    part: (op, 1),
                },
            );
        }
    }

    /// One submission of `parts` operations: each is 256 paste events, the first its own
    /// tag, so what reached a terminal names the part.
    fn submit_split(&mut self, term: u32, parts: u32) {
        let inc = self.h.incarnation();
        let first = self.next_id;
        let tags: Vec<Vec<u8>> = (0..parts)
            .map(|i| format!("[op:{:06}]", first + u128::from(i)).into_bytes())
            .collect();
        self.next_id += u128::from(parts);
        let events = tags
            .iter()
            .flat_map(|tag| {
                std::iter::once(paste(tag)).chain(std::iter::repeat_n(paste(b"."), 255))
            })
            .collect();
        let mut next = first;
        let ops = self
            .engine
            .apply_input(self.h.now, TerminalId::Local(term), events, || {
                next += 1;
                OperationId::from_u128(next - 1).expect("nonzero")
            })
            .expect("submit");
        assert_eq!(ops.len(), tags.len(), "one operation per 256 events");
        for ((op, tag), index) in ops.iter().zip(tags).zip(1..) {
            self.ops.insert(
                *op,
                Op {
                    incarnation: inc,
                    terminal: term,
                    payload: tag,
                    sent: false,
                    resolutions: Vec::new(),
                    part: (ops[0], index),
                },
            );
        }
    }

    fn run(&mut self, step: &Step) {
        match *step {
            Step::Submit { term, parts } => {
                // Back to back, without pumping: the later parts wait behind the first.
                for _ in 0..parts {
                    self.submit(term, None);
                }
            }
            Step::SubmitSplit { term, parts } => self.submit_split(term, parts),
            Step::Drop => self.lose_connection(),
            Step::DropMidSend { term, at } => self.submit(term, Some(at)),
            Step::Stall { term } => self.h.pty(&TerminalId::Local(term)).stall(),
            Step::Unstall { term } => self.h.pty(&TerminalId::Local(term)).unstall(),
            Step::LoseCompletion { term } => self
                .h
                .pty(&TerminalId::Local(term))
                .lose_next_completions(1),
            Step::Advance { ms } => self.advance(Duration::from_millis(ms)),
            Step::Restart => {
                self.restarts += 1;
                self.h.restart_server();
                self.spawn_terminals();
            }
            Step::Offline { ms } => {
                self.lose_connection();
                self.offline = true;
                self.advance(Duration::from_millis(ms));
                self.offline = false;
            }
            Step::ClientRestart => {
                self.lose_connection();
                // Records not yet taken by the pump were never durable: the dead process
                // had not sent what they describe either.
                self.engine = ClientEngine::restore(config(), self.journal.clone())
                    .expect("the journal replays");
                self.journal = self.engine.outbox().compact();
            }
        }
        self.pump();
    }

    /// Unstalls everything and lets time pass until every operation is resolved.
    fn finish(&mut self) {
        for n in 1..=TERMINALS {
            self.h.pty(&TerminalId::Local(n)).unstall();
        }
        for _ in 0..200 {
            if self.ops.values().all(|o| !o.resolutions.is_empty()) {
                return;
            }
            self.advance(Duration::from_secs(6));
        }
        let stuck: Vec<_> = self
            .ops
            .iter()
            .filter(|(_, o)| o.resolutions.is_empty())
            .collect();
        panic!("operations never resolved: {stuck:?}");
    }

    fn check(&self, figures: &mut Figures) {
        // Every PTY of every incarnation, with the incarnation and terminal it belonged to.
        let inc = self.h.incarnation();
        let ptys: Vec<(u32, u32, &[u8])> = self
            .h
            .ptys
            .iter()
            .map(|(t, p)| (inc, t.0, p.written_log()))
            .chain(
                self.h
                    .retired_ptys
                    .iter()
                    .map(|(i, t, p)| (*i, t.0, p.written_log())),
            )
            .collect();
        let mut ids = HashSet::new();
        let mut written_count = HashMap::new();
        for (op, o) in &self.ops {
            assert!(ids.insert(o.payload.clone()), "payloads are unique");
            let mut written = 0;
            for &(i, t, log) in &ptys {
                let n = count(log, &o.payload);
                if n > 0 && (i, t) != (o.incarnation, o.terminal) {
                    figures.misdirected += n;
                    panic!(
                        "{op} addressed to local:{} of incarnation {} reached local:{t} of \
                         incarnation {i}: {o:?}",
                        o.terminal, o.incarnation
                    );
                }
                written += n;
            }
            if written > 1 {
                figures.duplicates += written - 1;
                panic!("{op} reached its terminal {written} times: {o:?}");
            }
            written_count.insert(*op, written);
            assert_eq!(o.resolutions.len(), 1, "{op} resolved once: {o:?}");
            let resolution = &o.resolutions[0];
            if !o.sent {
                figures.never_sent += 1;
                assert!(
                    matches!(resolution, Resolution::NotSent(_)),
                    "{op} was never sent, so it is reported not sent: {o:?}"
                );
            }
            match resolution {
                Resolution::Delivered => {
                    figures.delivered += 1;
                    assert_eq!(written, 1, "{op} delivered: {o:?}");
                }
                Resolution::NotSent(reason) => {
                    match reason {
                        NotSentReason::ServerGone => figures.server_gone += 1,
                        NotSentReason::Expired => figures.expired += 1,
                        NotSentReason::Dropped | NotSentReason::EarlierPartFailed { .. } => {}
                    }
                    assert_eq!(written, 0, "{op} not sent, yet written: {o:?}");
                }
                Resolution::Refused { .. } => {
                    figures.refused += 1;
                    assert_eq!(written, 0, "{op} refused, yet written: {o:?}");
                }
                Resolution::Unknown(_) => figures.unknown += 1,
            }
        }
        self.check_submissions(&written_count, figures);
        figures.operations += self.ops.len();
        figures.restarts += self.restarts;
    }

    /// [CLIENT.SUBMIT.2] Per submission, in part order: delivered parts, then at most one part
    /// that was not delivered, then parts never written and reported not sent because of it.
    fn check_submissions(&self, written: &HashMap<OperationId, usize>, figures: &mut Figures) {
        let mut submissions: HashMap<OperationId, Vec<(u32, OperationId)>> = HashMap::new();
        for (op, o) in &self.ops {
            submissions
                .entry(o.part.0)
                .or_default()
                .push((o.part.1, *op));
        }
        for parts in submissions.values_mut() {
            parts.sort_unstable();
            let mut failed: Option<u32> = None;
            for &(index, op) in parts.iter() {
                let o = &self.ops[&op];
                let resolution = &o.resolutions[0];
                match failed {
                    None if *resolution != Resolution::Delivered => failed = Some(index),
                    None => {}
                    Some(part) => {
                        // Not sent: because of that part, or for a reason that held for every
                        // part (its server is gone, it expired, it was dropped).
                        match resolution {
                            Resolution::NotSent(NotSentReason::EarlierPartFailed { part: p }) => {
                                assert_eq!(*p, part, "{op}: {o:?}");
                                figures.ended += 1;
                            }
                            Resolution::NotSent(_) => {}
                            other => panic!(
                                "{op}, part {index}, follows part {part}, which was not \
                                 delivered, yet is {other:?}: {o:?}"
                            ),
                        }
                        assert_eq!(written[&op], 0, "{op} written after part {part}: {o:?}");
                        assert!(!o.sent, "{op} sent after part {part}: {o:?}");
                    }
                }
            }
        }
    }
}

// [CLIENT.BIND.2] [CLIENT.BIND.3] [CLIENT.BIND.4] [CLIENT.RESUME.2] [CLIENT.SUBMIT.2]
#[test]
fn client_schedules_write_only_to_the_addressed_incarnation() {
    // Thousands of schedules; PHUX_CLIENT_SCHEDULES overrides (a soak runs more).
    let cases = std::env::var("PHUX_CLIENT_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        max_shrink_iters: 300,
        failure_persistence: None,
        ..Config::default()
    });
    let figures = RefCell::new(Figures::default());
    let result = runner.run(&proptest::collection::vec(step(), 20..120), |steps| {
        let mut w = World::new();
        for s in &steps {
            w.run(s);
        }
        w.finish();
        let mut f = figures.borrow_mut();
        f.schedules += 1;
        f.steps += steps.len();
        w.check(&mut f);
        Ok(())
    });
    let f = figures.into_inner();
    eprintln!("client schedules: {f:?}");
    if let Err(e) = result {
        panic!("{e}");
    }
    // The schedules reached the cases the invariants are about.
    assert!(f.restarts > 0 && f.server_gone > 0 && f.expired > 0 && f.never_sent > 0);
    assert!(f.delivered > 0 && f.unknown > 0 && f.ended > 0);
    assert_eq!((f.misdirected, f.duplicates), (0, 0));
}
