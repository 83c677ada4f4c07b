//! The outbox: durable, ordered, acknowledged input operations.
//!
//! Beyond phux (after Codeman's reliable input): every APPLY_INPUT operation is recorded
//! before it is sent and dropped only when it is resolved: delivered, reported unknown, or
//! refused. Operations to one terminal go out in submission order, one at a time (the next
//! waits for the previous to resolve); different terminals proceed independently. Each
//! change is also emitted as a [`JournalRecord`] for the driver to append to a file, so the
//! outbox can be rebuilt after a client restart ([`Outbox::rebuild`]) and the file rewritten
//! small ([`Outbox::compact`]).
//!
//! One submission (a `send`, a `paste`) may need several operations (the wire limits an
//! APPLY_INPUT to 64 KiB and 256 events). Its parts go out in order, and a part that is not
//! delivered (refused, unknown, not sent, dropped) ends the submission: every later part is
//! resolved not sent without ever leaving ([`NotSentReason::EarlierPartFailed`]), so a
//! program never reads the end of a paste without its start.
//!
//! What happens after each send is the [`retry`] policy's decision.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use phux_proto::command::ApplyInput;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, OperationId, TerminalId};

use super::batch::{event_len, split_events};
pub use super::batch::{max_paste_len, split_utf8};
pub use super::journal::Part;
use super::journal::{Incarnation, JournalRecord};
pub use super::retry::Resolution;
use super::retry::{
    self, NotSentReason, OPERATION_HORIZON, RetryDecision, SendOutcome, UnknownReason,
};
use crate::time::Instant;

mod replay;

/// The default ceiling on one submission's input: 1 MiB. Larger input is refused up front
/// rather than queued as dozens of operations the user cannot take back.
pub const DEFAULT_CEILING: usize = 1024 * 1024;

/// What to submit.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Input {
    /// Input events, sent as few operations as the limits allow, in order.
    Events(Vec<InputEvent>),
    /// A paste, split at UTF-8 character boundaries into in-limit operations.
    Paste {
        /// The bytes.
        data: Vec<u8>,
        /// Trusted or untrusted (the server checks untrusted pastes for safety).
        trust: PasteTrust,
    },
}

/// Why a submission was refused. Nothing was queued.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboxError {
    /// No events (the server refuses an empty APPLY_INPUT).
    #[error("nothing to send")]
    Empty,
    /// The input is larger than the configured ceiling.
    #[error("input of {len} bytes exceeds the {ceiling}-byte ceiling")]
    TooLarge {
        /// The input's size (paste bytes plus encoded non-paste events).
        len: usize,
        /// The ceiling.
        ceiling: usize,
    },
    /// No connection has completed its handshake: an operation is addressed to the server
    /// incarnation of the connection it is submitted on (CLIENT.BIND.1).
    #[error("not connected: input is addressed to a server, so it is submitted after HELLO_OK")]
    NotConnected,
    /// The server does not advertise ACKNOWLEDGED_INPUT (CLIENT.FEATURE.1).
    #[error("the server does not take acknowledged input (no ACKNOWLEDGED_INPUT)")]
    NotSupported,
    /// The id source returned an id that is already pending (ids must be fresh and random).
    #[error("operation id {op} is already in use")]
    DuplicateId {
        /// The repeated id.
        op: OperationId,
    },
}

/// Outbox settings.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OutboxConfig {
    /// The largest submission, in bytes (default [`DEFAULT_CEILING`]).
    pub ceiling: usize,
    /// Whether to emit journal records (off for a client that does not persist).
    pub journal: bool,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        Self {
            ceiling: DEFAULT_CEILING,
            journal: true,
        }
    }
}

/// Which pending operations this outbox acts on: sends, resends, decides and expires.
/// Operations outside the scope are kept (and journaled) untouched, for a later run.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub enum Scope {
    /// Every pending operation.
    #[default]
    All,
    /// Only the operations to this terminal (a verb that sends to it).
    Terminal(TerminalId),
    /// None: the outbox only records.
    Nothing,
}

impl Scope {
    /// Whether operations to `terminal` are in this scope.
    pub fn covers(&self, terminal: &TerminalId) -> bool {
        match self {
            Self::All => true,
            Self::Terminal(t) => t == terminal,
            Self::Nothing => false,
        }
    }
}

/// One pending operation.
#[derive(Clone, Debug)]
struct Pending {
    /// Submission order, for compaction.
    seq: u64,
    input: ApplyInput,
    enqueued_at: Instant,
    /// The server incarnation the operation was submitted to; it is sent nowhere else.
    addressed_to: Incarnation,
    /// Its place in its submission.
    part: Part,
    /// An earlier part of its submission was not delivered (found when replaying a journal):
    /// it is never sent, and is resolved not sent once in the scope.
    blocked_by: Option<u32>,
    first_sent_at: Option<Instant>,
    /// The incarnation of the last send.
    incarnation: Option<Incarnation>,
    attempts: u32,
    /// A send went unanswered: the server may have written it.
    in_doubt: bool,
    /// Sent on the current connection, no answer yet.
    in_flight: bool,
    /// Not to be sent before this (backoff).
    not_before: Instant,
}

/// A read-only view of one pending operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PendingView<'a> {
    /// The operation.
    pub input: &'a ApplyInput,
    /// Sends so far.
    pub attempts: u32,
    /// Whether an unanswered send makes its delivery uncertain.
    pub in_doubt: bool,
    /// Whether it is awaiting an answer on the current connection.
    pub in_flight: bool,
    /// When it was first sent.
    pub first_sent_at: Option<Instant>,
    /// When it was submitted.
    pub enqueued_at: Instant,
    /// The server incarnation it is addressed to.
    pub addressed_to: Incarnation,
    /// Its place in its submission.
    pub part: Part,
    /// The earlier part of its submission that was not delivered, if one was: it will not be
    /// sent.
    pub blocked_by: Option<u32>,
}

/// The client's pending acknowledged-input operations.
#[derive(Clone, Debug, Default)]
pub struct Outbox {
    config: OutboxConfig,
    ops: HashMap<OperationId, Pending>,
    /// Per terminal, pending operations in submission order; the head is the only one sent.
    queues: BTreeMap<TerminalId, VecDeque<OperationId>>,
    next_seq: u64,
    journal: VecDeque<JournalRecord>,
    scope: Scope,
}

impl Outbox {
    /// An empty outbox.
    pub fn new(config: OutboxConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// Its settings.
    pub fn config(&self) -> OutboxConfig {
        self.config
    }

    /// How many operations are pending.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether none is pending.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// One pending operation.
    pub fn pending(&self, op: OperationId) -> Option<PendingView<'_>> {
        self.ops.get(&op).map(|p| PendingView {
            input: &p.input,
            attempts: p.attempts,
            in_doubt: p.in_doubt,
            in_flight: p.in_flight,
            first_sent_at: p.first_sent_at,
            enqueued_at: p.enqueued_at,
            addressed_to: p.addressed_to,
            part: p.part,
            blocked_by: p.blocked_by,
        })
    }

    /// Every pending operation, in submission order.
    pub fn all_pending(&self) -> Vec<PendingView<'_>> {
        let mut ordered: Vec<(u64, OperationId)> =
            self.ops.iter().map(|(op, p)| (p.seq, *op)).collect();
        ordered.sort_unstable();
        ordered
            .into_iter()
            .filter_map(|(_, op)| self.pending(op))
            .collect()
    }

    /// Which operations the outbox acts on (default [`Scope::All`]).
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// Limits what the outbox acts on; operations outside the scope stay pending untouched.
    pub fn set_scope(&mut self, scope: Scope) {
        self.scope = scope;
    }

    /// How many pending operations are in the scope.
    pub fn active_len(&self) -> usize {
        self.ops
            .values()
            .filter(|p| self.scope.covers(&p.input.terminal))
            .count()
    }

    /// The pending operations to `terminal`, in send order.
    pub fn queue(&self, terminal: &TerminalId) -> Vec<OperationId> {
        self.queues
            .get(terminal)
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The operations sent on the current connection and not yet answered.
    pub fn in_flight(&self) -> Vec<OperationId> {
        self.heads()
            .filter(|op| self.ops.get(op).is_some_and(|p| p.in_flight))
            .collect()
    }

    /// The head of every queue in the scope.
    fn heads(&self) -> impl Iterator<Item = OperationId> + '_ {
        self.queues
            .iter()
            .filter(|(t, _)| self.scope.covers(t))
            .filter_map(|(_, q)| q.front().copied())
    }

    /// The operations in the scope, in submission order.
    fn in_scope(&self) -> Vec<OperationId> {
        let mut ordered: Vec<(u64, OperationId)> = self
            .ops
            .iter()
            .filter(|(_, p)| self.scope.covers(&p.input.terminal))
            .map(|(op, p)| (p.seq, *op))
            .collect();
        ordered.sort_unstable();
        ordered.into_iter().map(|(_, op)| op).collect()
    }

    /// The next journal record to persist, oldest first.
    pub fn poll_journal(&mut self) -> Option<JournalRecord> {
        self.journal.pop_front()
    }

    /// Whether journal records are waiting to be persisted.
    pub fn has_journal(&self) -> bool {
        !self.journal.is_empty()
    }

    fn record(&mut self, record: JournalRecord) {
        if self.config.journal {
            self.journal.push_back(record);
        }
    }

    /// Accepts input for `terminal` of the server incarnation `addressed_to`: splits it into
    /// in-limit operations, names each with `new_id()`, records them (journal `Enqueued`)
    /// and queues them behind the terminal's pending operations. All or nothing: on error
    /// nothing is queued.
    pub fn submit(
        &mut self,
        now: Instant,
        addressed_to: Incarnation,
        terminal: TerminalId,
        input: Input,
        mut new_id: impl FnMut() -> OperationId,
    ) -> Result<Vec<OperationId>, OutboxError> {
        let events = match input {
            Input::Paste { data, .. } if data.is_empty() => Vec::new(),
            Input::Events(events) => events,
            Input::Paste { data, trust } => vec![InputEvent::Paste(PasteEvent { trust, data })],
        };
        if events.is_empty() {
            return Err(OutboxError::Empty);
        }
        // [CLIENT.PASTE.3] Input over the ceiling is refused before anything is queued.
        let len: usize = events
            .iter()
            .map(|e| match e {
                InputEvent::Paste(p) => p.data.len(),
                other => event_len(&terminal, other),
            })
            .sum();
        if len > self.config.ceiling {
            return Err(OutboxError::TooLarge {
                len,
                ceiling: self.config.ceiling,
            });
        }
        let batches = split_events(&terminal, events);
        let ids: Vec<OperationId> = batches.iter().map(|_| new_id()).collect();
        let mut seen = HashSet::new();
        for op in &ids {
            if self.ops.contains_key(op) || !seen.insert(*op) {
                return Err(OutboxError::DuplicateId { op: *op });
            }
        }
        let of = u32::try_from(ids.len()).map_err(|_| OutboxError::TooLarge {
            len,
            ceiling: self.config.ceiling,
        })?;
        let terminals = std::iter::repeat_n(terminal, batches.len());
        for (((op, events), terminal), index) in ids.iter().zip(batches).zip(terminals).zip(1..) {
            let input = ApplyInput {
                operation_id: *op,
                terminal,
                events,
            };
            // [CLIENT.SUBMIT.1] Each part names its submission and its place in it.
            let part = Part {
                submission: ids[0],
                index,
                of,
            };
            // [CLIENT.OUTBOX.1] Recorded before it can be sent.
            // [CLIENT.BIND.1] The incarnation is recorded with the operation.
            self.record(JournalRecord::Enqueued {
                input: input.clone(),
                enqueued_at: now,
                addressed_to,
                part: Some(part),
            });
            self.insert(input, now, addressed_to, part);
        }
        Ok(ids)
    }

    fn insert(
        &mut self,
        input: ApplyInput,
        enqueued_at: Instant,
        addressed_to: Incarnation,
        part: Part,
    ) {
        let op = input.operation_id;
        self.queues
            .entry(input.terminal.clone())
            .or_default()
            .push_back(op);
        self.ops.insert(
            op,
            Pending {
                seq: self.next_seq,
                input,
                enqueued_at,
                addressed_to,
                part,
                blocked_by: None,
                first_sent_at: None,
                incarnation: None,
                attempts: 0,
                in_doubt: false,
                in_flight: false,
                not_before: Instant::ZERO,
            },
        );
        self.next_seq += 1;
    }

    /// The next operation to send on a connection to `incarnation`, if one is due at `now`:
    /// the head of a terminal's queue that is not awaiting an answer and whose backoff is
    /// over. Marks it in flight and records `Sent`.
    pub fn poll_send(&mut self, now: Instant, incarnation: Incarnation) -> Option<ApplyInput> {
        // [CLIENT.OUTBOX.2] Only a queue's head is ever sent, and only when nothing of that
        // terminal is in flight: one operation per terminal at a time, in order.
        // [CLIENT.BIND.2] Only to the incarnation it is addressed to, and [CLIENT.BIND.4] only
        // inside the horizon (`expire` resolves the rest).
        let op = self.heads().find(|op| {
            self.ops.get(op).is_some_and(|p| {
                // [CLIENT.SUBMIT.2] Never a part after one that was not delivered.
                p.blocked_by.is_none()
                    && !p.in_flight
                    && p.not_before <= now
                    && p.addressed_to == incarnation
                    && age(now, Some(p.enqueued_at)) < OPERATION_HORIZON
            })
        })?;
        let pending = self.ops.get_mut(&op)?;
        pending.in_flight = true;
        pending.attempts = pending.attempts.saturating_add(1);
        pending.first_sent_at.get_or_insert(now);
        pending.incarnation = Some(incarnation);
        let input = pending.input.clone();
        self.record(JournalRecord::Sent {
            op,
            incarnation,
            at: now,
        });
        Some(input)
    }

    /// When the next backoff ends, if an operation is waiting on one.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.heads()
            .filter_map(|op| self.ops.get(&op))
            .filter(|p| !p.in_flight && p.blocked_by.is_none())
            .map(|p| p.not_before)
            .min()
    }

    /// The server answered `op`'s in-flight send. Returns what this answer resolves: nothing
    /// (a retry follows), or the operation, followed by the later parts of its submission
    /// that it ends when it was not delivered. An answer for an operation not in flight is
    /// ignored.
    pub fn handle_answer(
        &mut self,
        now: Instant,
        op: OperationId,
        result: phux_proto::CommandResult,
    ) -> Vec<(ApplyInput, Resolution)> {
        let Some(pending) = self.ops.get(&op).filter(|p| p.in_flight) else {
            return Vec::new();
        };
        let age = age(now, pending.first_sent_at);
        let decision = retry::decide(
            SendOutcome::Result(result),
            pending
                .incarnation
                .as_ref()
                .map_or(&[][..], |i| i.as_bytes()),
            pending.incarnation.as_ref().map(Incarnation::as_bytes),
            age,
            pending.attempts,
            pending.in_doubt,
        );
        self.apply(now, op, decision, true)
    }

    /// The connection is gone: every in-flight send is now unanswered, so in doubt. The
    /// decision waits for the next HELLO_OK ([`Outbox::handle_reconnected`]).
    pub fn handle_disconnected(&mut self) {
        for pending in self.ops.values_mut() {
            if pending.in_flight {
                pending.in_flight = false;
                pending.in_doubt = true;
            }
        }
    }

    /// A connection to `incarnation` is up. Every operation in the scope that follows a failed
    /// part of its submission is resolved not sent ([`Outbox::settle_blocked`]); every one
    /// addressed to another incarnation is resolved: unknown if a send of it is in doubt, else not sent. Every
    /// operation in doubt is decided: resent (same incarnation, inside the horizon) or
    /// reported unknown. Then expired operations are resolved ([`Outbox::expire`]). Returns
    /// the resolutions, in submission order.
    pub fn handle_reconnected(
        &mut self,
        now: Instant,
        incarnation: Incarnation,
    ) -> Vec<(ApplyInput, Resolution)> {
        let mut resolved = self.settle_blocked();
        resolved.extend(self.settle_foreign(incarnation));
        for op in self.in_scope() {
            let Some(pending) = self.ops.get(&op).filter(|p| p.in_doubt) else {
                continue;
            };
            let sent = pending.incarnation.unwrap_or(incarnation);
            // [CLIENT.RETRY.2] Decided against the incarnation now up.
            let decision = retry::decide(
                SendOutcome::ConnectionLost,
                sent.as_bytes(),
                Some(incarnation.as_bytes()),
                age(now, pending.first_sent_at),
                pending.attempts,
                true,
            );
            resolved.extend(self.apply(now, op, decision, false));
        }
        resolved.extend(self.expire(now));
        resolved
    }

    /// [CLIENT.SUBMIT.2] Resolves as not sent every operation in the scope that a journal showed
    /// to follow a part of its submission that was not delivered. Needs no connection: such
    /// an operation is never sent anywhere. Returns the resolutions, in submission order.
    pub fn settle_blocked(&mut self) -> Vec<(ApplyInput, Resolution)> {
        let decided = self
            .in_scope()
            .into_iter()
            .filter_map(|op| {
                let part = self.ops.get(&op)?.blocked_by?;
                Some((
                    op,
                    Resolution::NotSent(NotSentReason::EarlierPartFailed { part }),
                ))
            })
            .collect();
        self.resolve_all(decided)
    }

    /// Resolves every operation in the scope, not awaiting an answer, that is addressed to an
    /// incarnation other than `incarnation` (the one now connected): unknown if a send of it
    /// is in doubt ([CLIENT.RETRY.8]), else not sent. Returns the resolutions.
    pub fn settle_foreign(&mut self, incarnation: Incarnation) -> Vec<(ApplyInput, Resolution)> {
        let decided = self
            .in_scope()
            .into_iter()
            .filter_map(|op| {
                let p = self.ops.get(&op)?;
                if p.addressed_to == incarnation || p.in_flight {
                    return None;
                }
                Some((
                    op,
                    if p.in_doubt {
                        Resolution::Unknown(UnknownReason::IncarnationChanged)
                    } else {
                        // [CLIENT.BIND.3] Its server is gone; the terminal id now names
                        // something else.
                        Resolution::NotSent(NotSentReason::ServerGone)
                    },
                ))
            })
            .collect();
        self.resolve_all(decided)
    }

    /// [CLIENT.BIND.4] Resolves every operation in the scope, not awaiting an answer, whose
    /// submission is [`OPERATION_HORIZON`] old (or dated in the future, as after a clock
    /// reset): unknown if a send of it is in doubt, else not sent. Returns the resolutions.
    pub fn expire(&mut self, now: Instant) -> Vec<(ApplyInput, Resolution)> {
        let decided = self
            .in_scope()
            .into_iter()
            .filter_map(|op| {
                let p = self.ops.get(&op)?;
                if p.in_flight || age(now, Some(p.enqueued_at)) < OPERATION_HORIZON {
                    return None;
                }
                Some((
                    op,
                    if p.in_doubt {
                        Resolution::Unknown(UnknownReason::HorizonElapsed)
                    } else {
                        Resolution::NotSent(NotSentReason::Expired)
                    },
                ))
            })
            .collect();
        self.resolve_all(decided)
    }

    /// The user gives up `ops` (those pending and not awaiting an answer): each is resolved
    /// unknown if a send of it is in doubt, else not sent, and so is every later part of
    /// their submissions. Returns the resolutions.
    pub fn drop_pending(&mut self, ops: &[OperationId]) -> Vec<(ApplyInput, Resolution)> {
        let mut seen = HashSet::new();
        let decided = ops
            .iter()
            .filter(|op| seen.insert(**op))
            .filter_map(|op| {
                let p = self.ops.get(op).filter(|p| !p.in_flight)?;
                Some((
                    *op,
                    if p.in_doubt {
                        Resolution::Unknown(UnknownReason::Dropped)
                    } else {
                        Resolution::NotSent(NotSentReason::Dropped)
                    },
                ))
            })
            .collect();
        self.resolve_all(decided)
    }

    /// Resolves every pending operation that was never sent or was last answered "not
    /// written" (so nothing of it was written) as refused with `code` and `message`; those in
    /// doubt are reported unknown. For a server that cannot take acknowledged input at all.
    pub fn refuse_all(&mut self, code: ErrorCode, message: &str) -> Vec<(ApplyInput, Resolution)> {
        let decided = self
            .in_scope()
            .into_iter()
            .filter_map(|op| {
                let p = self.ops.get(&op)?;
                Some((
                    op,
                    if p.in_doubt || p.in_flight {
                        Resolution::Unknown(UnknownReason::RetriesExhausted)
                    } else {
                        Resolution::Refused {
                            code,
                            message: message.to_owned(),
                        }
                    },
                ))
            })
            .collect();
        self.resolve_all(decided)
    }

    fn apply(
        &mut self,
        now: Instant,
        op: OperationId,
        decision: RetryDecision,
        answered: bool,
    ) -> Vec<(ApplyInput, Resolution)> {
        let resolution = match decision {
            RetryDecision::Retry { after } => {
                if let Some(pending) = self.ops.get_mut(&op) {
                    pending.in_flight = false;
                    pending.not_before = now + after;
                    if answered {
                        self.record(JournalRecord::Answered { op });
                    }
                }
                return Vec::new();
            }
            RetryDecision::Delivered => Resolution::Delivered,
            RetryDecision::ReportUnknown(reason) => Resolution::Unknown(reason),
            RetryDecision::Refused { code, message } => Resolution::Refused { code, message },
        };
        self.resolve_all(vec![(op, resolution)])
    }

    /// Resolves each of `decided` that is pending with its own resolution, in order; then,
    /// for each that was not delivered, every later part of its submission still pending.
    /// Returns what was resolved, `decided` first.
    fn resolve_all(
        &mut self,
        decided: Vec<(OperationId, Resolution)>,
    ) -> Vec<(ApplyInput, Resolution)> {
        let mut resolved = Vec::with_capacity(decided.len());
        let mut ended = Vec::new();
        for (op, resolution) in decided {
            let Some(pending) = self.remove(op) else {
                continue;
            };
            // The part whose failure ends the submission: this one, or the one that ended it
            // before (a part blocked after a crash).
            match &resolution {
                Resolution::Delivered => {}
                Resolution::NotSent(NotSentReason::EarlierPartFailed { part }) => {
                    ended.push((pending.part, *part));
                }
                _ => ended.push((pending.part, pending.part.index)),
            }
            // [CLIENT.OUTBOX.3] Dropped only once resolved, and the resolution is journaled.
            self.record(JournalRecord::Resolved {
                op,
                resolution: resolution.clone(),
            });
            resolved.push((pending.input, resolution));
        }
        for (from, failed) in ended {
            resolved.extend(self.end_submission(from, failed));
        }
        resolved
    }

    /// [CLIENT.SUBMIT.2] Part `failed` of a submission was not delivered: every part after
    /// `from` is resolved not sent. None of them has been sent: a terminal's operations go out
    /// one at a time in order, so a later part leaves only once every earlier part is
    /// delivered.
    fn end_submission(&mut self, from: Part, failed: u32) -> Vec<(ApplyInput, Resolution)> {
        let mut later: Vec<(u32, OperationId)> = self
            .ops
            .iter()
            .filter(|(_, p)| p.part.submission == from.submission && p.part.index > from.index)
            .map(|(op, p)| (p.part.index, *op))
            .collect();
        later.sort_unstable();
        let mut resolved = Vec::new();
        for (_, op) in later {
            let Some(pending) = self.remove(op) else {
                continue;
            };
            let resolution = Resolution::NotSent(NotSentReason::EarlierPartFailed { part: failed });
            self.record(JournalRecord::Resolved {
                op,
                resolution: resolution.clone(),
            });
            resolved.push((pending.input, resolution));
        }
        resolved
    }

    fn remove(&mut self, op: OperationId) -> Option<Pending> {
        let pending = self.ops.remove(&op)?;
        if let Some(queue) = self.queues.get_mut(&pending.input.terminal) {
            queue.retain(|o| *o != op);
            if queue.is_empty() {
                self.queues.remove(&pending.input.terminal);
            }
        }
        Some(pending)
    }
}

/// Time since the first send; unknown (maximal) if the recorded time is in the future, as
/// after a restart whose clock does not continue the old one: that must never look young.
fn age(now: Instant, first_sent_at: Option<Instant>) -> Duration {
    match first_sent_at {
        None => Duration::ZERO,
        Some(t) if t > now => Duration::MAX,
        Some(t) => now.saturating_duration_since(t),
    }
}
