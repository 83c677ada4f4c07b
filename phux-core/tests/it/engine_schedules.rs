//! Property test: random schedules of acknowledged input against the engine, end to end.
//!
//! Several clients send APPLY_INPUT operations (fresh ids, retries of known ids with the same
//! payload, known ids with another payload) to several Record-mode terminals, while the
//! schedule drops connections (also in the middle of a frame), stalls PTYs, loses write
//! completions, jumps the clock past the 5 s bound and restarts the server. The test client
//! follows the retry rules of spec/client.md (CLIENT.RETRY.*), except that operations it never
//! sent outlive a restart and go to the new server (a real client reports them not sent,
//! CLIENT.BIND.3): the server must hold the contract for ids it has never seen as well.
//! `client_schedules.rs` drives the real client engine through restarts instead.
//!
//! At the end every PTY is unstalled and the run is driven to quiescence, then the contract is
//! checked:
//!
//! - no operation id's bytes ever reach a PTY twice ([INPUT.DEDUPE.2], [INPUT.LANE.1]);
//! - every operation answered OK was read exactly once ([INPUT.APPLY.9]);
//! - every operation is resolved: delivered, refused or reported unknown — none is lost;
//! - an operation is reported unknown only when its write was really in doubt (a lost
//!   completion or a write still unfinished 5 s after handoff, [INPUT.LANE.2]) or the server
//!   incarnation changed ([CLIENT.RETRY.8]).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use std::collections::HashMap;
use std::time::Duration;

use phux_core::Instant;
use phux_core::server::ConnId;
use phux_core::sim::{ChildMode, Harness, apply_input, command_frame, count, paste};
use phux_proto::command::CommandResult;
use phux_proto::{ErrorCode, Frame, TerminalId};
use proptest::prelude::*;

const CLIENTS: usize = 3;
const TERMINALS: usize = 2;
const HORIZON: Duration = Duration::from_mins(10);

#[derive(Clone, Debug)]
enum Step {
    Submit {
        client: usize,
        term: usize,
    },
    Reuse {
        client: usize,
        pick: usize,
    },
    Conflict {
        client: usize,
        pick: usize,
    },
    Drop {
        client: usize,
    },
    DropMidSend {
        client: usize,
        term: usize,
        at: usize,
    },
    Stall {
        term: usize,
    },
    Unstall {
        term: usize,
    },
    LoseCompletion {
        term: usize,
    },
    Advance {
        ms: u64,
    },
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    let c = 0..CLIENTS;
    let t = 0..TERMINALS;
    prop_oneof![
        8 => (c.clone(), t.clone()).prop_map(|(client, term)| Step::Submit { client, term }),
        2 => (c.clone(), any::<usize>()).prop_map(|(client, pick)| Step::Reuse { client, pick }),
        1 => (c.clone(), any::<usize>()).prop_map(|(client, pick)| Step::Conflict { client, pick }),
        1 => c.clone().prop_map(|client| Step::Drop { client }),
        1 => (c, t.clone(), 0..80usize).prop_map(|(client, term, at)| Step::DropMidSend { client, term, at }),
        2 => t.clone().prop_map(|term| Step::Stall { term }),
        2 => t.clone().prop_map(|term| Step::Unstall { term }),
        1 => t.prop_map(|term| Step::LoseCompletion { term }),
        3 => prop_oneof![0..50u64, 4000..7000u64, 60_000..200_000u64].prop_map(|ms| Step::Advance { ms }),
        1 => Just(Step::Restart),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Waiting to be sent (never sent, or refused with a retryable code).
    Pending,
    /// Sent on a connection, no result yet.
    InFlight {
        conn: ConnId,
        rid: u32,
    },
    /// Its connection ended before the result.
    Lost,
    Delivered,
    Unknown,
    Refused(ErrorCode),
    /// Still refused with a retryable code near the horizon: reported to the user as not
    /// delivered ([CLIENT.RETRY.4] allows giving up after 10 s).
    GaveUp,
}

#[derive(Clone, Debug)]
struct Op {
    id: u128,
    term: usize,
    client: usize,
    payload: Vec<u8>,
    state: State,
    /// The incarnation and time of the first send to that incarnation (CLIENT.JOURNAL.1).
    sent: Option<(u32, Instant)>,
    history: Vec<String>,
}

struct World {
    h: Harness,
    clients: Vec<Option<ConnId>>,
    terms: Vec<TerminalId>,
    ops: Vec<Op>,
    by_rid: HashMap<(ConnId, u32), usize>,
    /// When each operation id was first sent to each incarnation: the age the retry rules
    /// use, and a lower bound of when the server bound the id.
    first_send: HashMap<(u32, u128), Instant>,
    /// Operation ids with a send to an incarnation whose result never came (a lost
    /// connection): whatever later retries to that incarnation answer, the first send may
    /// have been written, so after an incarnation change the operation is unknown.
    in_doubt: std::collections::HashSet<(u32, u128)>,
    next_id: u128,
}

impl World {
    fn new() -> Self {
        let mut h = Harness::new();
        h.spawn_mode = ChildMode::Record;
        h.log.set_cap(300);
        let mut w = Self {
            h,
            clients: vec![None; CLIENTS],
            terms: Vec::new(),
            ops: Vec::new(),
            by_rid: HashMap::new(),
            first_send: HashMap::new(),
            in_doubt: std::collections::HashSet::new(),
            next_id: 1,
        };
        w.boot();
        w
    }

    /// Connects every client and spawns the terminals (at start and after a restart).
    fn boot(&mut self) {
        for i in 0..CLIENTS {
            self.reconnect(i);
        }
        let c = self.clients[0].unwrap();
        self.terms = (0..TERMINALS).map(|_| self.h.spawn(c)).collect();
    }

    fn reconnect(&mut self, client: usize) {
        let conn = self.h.connect();
        self.h.hello(conn);
        self.clients[client] = Some(conn);
        let server_id = self.h.server.server_id().to_vec();
        let now = self.h.now;
        let inc = self.h.incarnation();
        let _ = server_id;
        for op in self
            .ops
            .iter_mut()
            .filter(|o| o.client == client && o.state == State::Lost)
        {
            // [CLIENT.RETRY.7] [CLIENT.RETRY.8]
            let (sent_inc, _) = op.sent.unwrap();
            let at = self.first_send[&(sent_inc, op.id)];
            op.state = if sent_inc == inc && now.saturating_duration_since(at) < HORIZON {
                State::Pending
            } else {
                State::Unknown
            };
            op.history
                .push(format!("reconnect inc {inc} -> {:?}", op.state));
        }
    }

    fn send(&mut self, idx: usize, drop_at: Option<usize>) {
        let op = &self.ops[idx];
        let Some(conn) = self.clients[op.client] else {
            return;
        };
        let inc = self.h.incarnation();
        let frame_op = apply_input(op.id, &self.terms[op.term], vec![paste(&op.payload)]);
        let rid = self.h.next_request_id();
        if let Some(at) = drop_at {
            self.h.drop_after(conn, at);
        }
        let now = self.h.now;
        let op = &mut self.ops[idx];
        self.first_send.entry((inc, op.id)).or_insert(now);
        op.sent = Some((inc, now));
        op.state = State::InFlight { conn, rid };
        op.history
            .push(format!("sent inc {inc} {now:?} {conn:?} rid {rid}"));
        self.by_rid.insert((conn, rid), idx);
        self.h.send(conn, &command_frame(rid, frame_op));
        if !self.h.conn(conn).is_open() {
            self.lost(op_client(&self.ops[idx]));
        }
    }

    /// The client's connection is gone: its in-flight operations are lost; it reconnects.
    fn lost(&mut self, client: usize) {
        let Some(conn) = self.clients[client].take() else {
            return;
        };
        for op in &mut self.ops {
            if matches!(op.state, State::InFlight { conn: c, .. } if c == conn) {
                op.state = State::Lost;
                if let Some((inc, _)) = op.sent {
                    self.in_doubt.insert((inc, op.id));
                }
            }
        }
        self.reconnect(client);
    }

    fn new_op(&mut self, client: usize, term: usize, id: u128, payload: Vec<u8>) -> usize {
        self.ops.push(Op {
            id,
            term,
            client,
            payload,
            state: State::Pending,
            sent: None,
            history: Vec::new(),
        });
        self.ops.len() - 1
    }

    /// Known ops safe to resend deliberately: first sent in this incarnation, inside the
    /// ledger horizon (so the server still knows the id).
    fn reusable(&self) -> Vec<usize> {
        (0..self.ops.len())
            .filter(|&i| self.young(self.ops[i].id))
            .collect()
    }

    /// Whether the id was first sent to this incarnation less than 9 minutes ago (or never).
    fn young(&self, id: u128) -> bool {
        let inc = self.h.incarnation();
        self.first_send
            .get(&(inc, id))
            .is_some_and(|at| self.h.now.saturating_duration_since(*at) < Duration::from_mins(9))
    }

    fn run(&mut self, step: &Step) {
        match *step {
            Step::Submit { client, term } => {
                let id = self.fresh_id();
                let idx = self.new_op(client, term, id, format!("[op:{id:06}]").into_bytes());
                self.send(idx, None);
            }
            Step::Reuse { client, pick } => {
                let known = self.reusable();
                if let Some(&orig) = known.get(pick % known.len().max(1)) {
                    let (id, term, payload) = (
                        self.ops[orig].id,
                        self.ops[orig].term,
                        self.ops[orig].payload.clone(),
                    );
                    let idx = self.new_op(client, term, id, payload);
                    self.send(idx, None);
                }
            }
            Step::Conflict { client, pick } => {
                let known = self.reusable();
                if let Some(&orig) = known.get(pick % known.len().max(1)) {
                    let (id, term) = (self.ops[orig].id, self.ops[orig].term);
                    let n = self.ops.len();
                    let idx =
                        self.new_op(client, term, id, format!("[op:{id:06}/c{n}]").into_bytes());
                    self.send(idx, None);
                }
            }
            Step::Drop { client } => {
                if let Some(conn) = self.clients[client] {
                    self.h.disconnect(conn);
                    self.lost(client);
                }
            }
            Step::DropMidSend { client, term, at } => {
                let id = self.fresh_id();
                let idx = self.new_op(client, term, id, format!("[op:{id:06}]").into_bytes());
                self.send(idx, Some(at));
            }
            Step::Stall { term } => self.h.pty(&self.terms[term].clone()).stall(),
            Step::Unstall { term } => self.h.pty(&self.terms[term].clone()).unstall(),
            Step::LoseCompletion { term } => self
                .h
                .pty(&self.terms[term].clone())
                .lose_next_completions(1),
            Step::Advance { ms } => self.h.advance(Duration::from_millis(ms)),
            Step::Restart => {
                // Deliberate duplicates of one id are one operation: if any copy may have been
                // written to the old incarnation, the new one must never see the id again.
                let inc = self.h.incarnation();
                let maybe_written: Vec<u128> = self
                    .ops
                    .iter()
                    .filter(|o| {
                        matches!(
                            o.state,
                            State::InFlight { .. }
                                | State::Lost
                                | State::Delivered
                                | State::Unknown
                        ) || self.in_doubt.contains(&(inc, o.id))
                    })
                    .map(|o| o.id)
                    .collect();
                for op in &mut self.ops {
                    if op.state == State::Pending && maybe_written.contains(&op.id) {
                        // [CLIENT.RETRY.8] the incarnation changes with the operation in doubt.
                        op.state = State::Unknown;
                    }
                }
                self.h.restart_server();
                for client in 0..CLIENTS {
                    self.lost(client);
                }
                // The first connect already happened inside lost(); spawn fresh terminals.
                let c = self.clients[0].unwrap();
                self.terms = (0..TERMINALS).map(|_| self.h.spawn(c)).collect();
            }
        }
        self.h.settle();
        self.collect();
        // Retryable operations are sent again (one attempt per step stands in for backoff).
        let pending: Vec<usize> = (0..self.ops.len())
            .filter(|&i| self.ops[i].state == State::Pending)
            .collect();
        let inc = self.h.incarnation();
        for idx in pending {
            let id = self.ops[idx].id;
            let near_horizon = self.first_send.contains_key(&(inc, id)) && !self.young(id);
            if near_horizon {
                self.ops[idx].state = State::GaveUp;
            } else {
                self.send(idx, None);
            }
        }
        self.h.settle();
        self.collect();
    }

    fn fresh_id(&mut self) -> u128 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Reads every client's results and applies the retry rules.
    fn collect(&mut self) {
        for client in 0..CLIENTS {
            let Some(conn) = self.clients[client] else {
                continue;
            };
            assert!(
                self.h.conn(conn).decode_errors().is_empty(),
                "server sent undecodable bytes"
            );
            for frame in self.h.recv(conn) {
                let Frame::CommandResult(r) = frame else {
                    continue;
                };
                let Some(&idx) = self.by_rid.get(&(conn, r.request_id)) else {
                    continue;
                };
                let outcome = match &r.result {
                    CommandResult::Ok => State::Delivered,
                    CommandResult::Error { code, .. } => match *code {
                        // [CLIENT.RETRY.2]
                        ErrorCode::INPUT_DELIVERY_UNKNOWN => {
                            self.assert_in_doubt(idx);
                            State::Unknown
                        }
                        // [CLIENT.RETRY.3] [CLIENT.RETRY.4]
                        ErrorCode::INPUT_NOT_WRITTEN | ErrorCode::RESOURCE_EXHAUSTED => {
                            State::Pending
                        }
                        // [CLIENT.RETRY.5]
                        ErrorCode::INVALID_COMMAND => State::Refused(*code),
                        other => panic!("unexpected result {other:?} for {:?}", self.ops[idx]),
                    },
                    other @ CommandResult::OkWith(_) => panic!("unexpected result {other:?}"),
                };
                let inc = self.h.incarnation();
                self.ops[idx].history.push(format!(
                    "result inc {inc} {:?} rid {} -> {outcome:?}",
                    self.h.now, r.request_id
                ));
                self.ops[idx].state = outcome;
            }
        }
    }

    /// A 205 is only legitimate when the operation's write was really in doubt.
    fn assert_in_doubt(&self, idx: usize) {
        let op = &self.ops[idx];
        let (inc, _) = op.sent.unwrap();
        let writes: Vec<_> = self
            .h
            .writes
            .iter()
            .filter(|w| w.incarnation == inc && w.bytes == op.payload)
            .collect();
        assert!(
            !writes.is_empty(),
            "205 for an operation that was never handed to the PTY: {op:?}"
        );
        let lost: Vec<_> = self
            .h
            .ptys
            .values()
            .chain(self.h.retired_ptys.iter().map(|(_, _, p)| p))
            .flat_map(|p| p.lost_completions().to_vec())
            .collect();
        let doubt = writes.iter().any(|w| {
            lost.contains(&w.job)
                || match w.completed {
                    None => true,
                    Some((at, _)) => {
                        at.saturating_duration_since(w.issued_at) >= Duration::from_secs(5)
                    }
                }
        });
        assert!(
            doubt,
            "205 although the write completed in time: {op:?} {writes:?}"
        );
    }

    /// Unstalls everything and drives until every operation is resolved.
    fn finish(&mut self) {
        for t in self.terms.clone() {
            self.h.pty(&t).unstall();
        }
        self.h.settle();
        self.collect();
        for _ in 0..40 {
            if self.ops.iter().all(|o| {
                matches!(
                    o.state,
                    State::Delivered | State::Unknown | State::Refused(_) | State::GaveUp
                )
            }) {
                return;
            }
            self.run(&Step::Advance { ms: 6000 });
        }
        let stuck: Vec<_> = self
            .ops
            .iter()
            .filter(|o| {
                !matches!(
                    o.state,
                    State::Delivered | State::Unknown | State::Refused(_) | State::GaveUp
                )
            })
            .collect();
        panic!("operations never resolved: {stuck:?}");
    }

    fn check(&self) {
        let ptys: Vec<&phux_core::sim::SimPty> = self
            .h
            .ptys
            .values()
            .chain(self.h.retired_ptys.iter().map(|(_, _, p)| p))
            .collect();
        // Bytes the PTY master accepted: a retired (dead) child may not have read them all.
        let reads = |payload: &[u8]| {
            ptys.iter()
                .map(|p| count(p.written_log(), payload))
                .sum::<usize>()
        };
        for p in &self.h.ptys {
            assert_eq!(
                p.1.read_log(),
                p.1.written_log(),
                "a live, unstalled child reads everything"
            );
        }
        let mut per_id: HashMap<u128, Vec<&Vec<u8>>> = HashMap::new();
        for op in &self.ops {
            let list = per_id.entry(op.id).or_default();
            if !list.contains(&&op.payload) {
                list.push(&op.payload);
            }
        }
        for (id, payloads) in &per_id {
            let total: usize = payloads.iter().map(|p| reads(p)).sum();
            if total > 1 {
                let entries: Vec<_> = self.ops.iter().filter(|o| o.id == *id).collect();
                let writes: Vec<_> = self
                    .h
                    .writes
                    .iter()
                    .filter(|w| payloads.iter().any(|p| w.bytes == **p))
                    .collect();
                let entries: Vec<String> = entries
                    .iter()
                    .map(|o| {
                        format!(
                            "client {} {:?} sent {:?} {} {:?}",
                            o.client,
                            o.state,
                            o.sent,
                            String::from_utf8_lossy(&o.payload),
                            o.history
                        )
                    })
                    .collect();
                let writes: Vec<String> = writes
                    .iter()
                    .map(|w| {
                        format!(
                            "inc {} t{} {:?} at {:?} done {:?} {}",
                            w.incarnation,
                            w.terminal,
                            w.job,
                            w.issued_at,
                            w.completed,
                            String::from_utf8_lossy(&w.bytes)
                        )
                    })
                    .collect();
                let hexid = format!("0x{id:032x}");
                let lines: Vec<&str> = self
                    .h
                    .log
                    .lines()
                    .filter(|l| {
                        l.contains(&hexid)
                            || l.contains("restart")
                            || l.contains("dropped")
                            || l.contains("disconnect")
                            || l.contains("connect Peer")
                    })
                    .collect();
                panic!(
                    "operation {id} reached a PTY {total} times\n{entries:#?}\n{writes:#?}\n{}",
                    lines.join("\n")
                );
            }
        }
        for op in &self.ops {
            match op.state {
                State::Delivered => {
                    assert_eq!(reads(&op.payload), 1, "delivered but not read once: {op:?}");
                }
                State::Refused(_) => {
                    assert_eq!(reads(&op.payload), 0, "refused but written: {op:?}");
                }
                _ => {}
            }
        }
    }
}

fn op_client(op: &Op) -> usize {
    op.client
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, max_shrink_iters: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_schedules_keep_the_acknowledged_input_contract(steps in proptest::collection::vec(step(), 50..200)) {
        let mut w = World::new();
        for s in &steps {
            w.run(s);
        }
        w.finish();
        w.check();
    }
}
