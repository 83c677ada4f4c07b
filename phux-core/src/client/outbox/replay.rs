//! Restoring an outbox from its journal after a client restart ([`Outbox::rebuild`],
//! [`Outbox::rebuild_salvaging`]) and writing the journal small again ([`Outbox::compact`]):
//! the durable side of the outbox, apart from the live sending and resolving in `outbox.rs`.

use std::collections::{HashMap, HashSet};

use phux_proto::command::ApplyInput;
use phux_proto::{OperationId, TerminalId};

use super::{Outbox, OutboxConfig, Pending};
use crate::client::journal::{Incarnation, JournalError, JournalRecord, Part};
use crate::client::retry::Resolution;
use crate::time::Instant;

impl Outbox {
    /// Rebuilds the outbox from journal records (oldest first), after a client restart.
    /// Operations sent and not answered before the restart are in doubt: the next HELLO_OK
    /// decides them ([`Outbox::handle_reconnected`]).
    pub fn rebuild(
        config: OutboxConfig,
        records: impl IntoIterator<Item = JournalRecord>,
    ) -> Result<Self, JournalError> {
        Self::replay(config, records, &mut |_| false)
    }

    /// [`Outbox::rebuild`] for a journal that had damage cut out of it: a record that does
    /// not fit (it names an operation whose `Enqueued` was in the damage, or repeats one) is
    /// skipped and returned, instead of failing the whole rebuild.
    pub fn rebuild_salvaging(
        config: OutboxConfig,
        records: impl IntoIterator<Item = JournalRecord>,
    ) -> (Self, Vec<JournalError>) {
        let mut skipped = Vec::new();
        let outbox = Self::replay(config, records, &mut |e| {
            skipped.push(e);
            true
        });
        match outbox {
            Ok(outbox) => (outbox, skipped),
            // The callback always asks to continue, so replay never fails.
            Err(e) => unreachable!("a salvaging replay failed: {e}"),
        }
    }

    /// Replays records; `on_error` decides whether an inconsistent record is skipped (true)
    /// or ends the replay with its error (false).
    fn replay(
        config: OutboxConfig,
        records: impl IntoIterator<Item = JournalRecord>,
        on_error: &mut dyn FnMut(JournalError) -> bool,
    ) -> Result<Self, JournalError> {
        let mut outbox = Self::new(config);
        let mut check = |e: JournalError| if on_error(e.clone()) { Ok(()) } else { Err(e) };
        // Whether each operation's last send is still unanswered.
        let mut awaiting: HashSet<OperationId> = HashSet::new();
        // Per submission, the first part that was not delivered.
        let mut ended: HashMap<OperationId, u32> = HashMap::new();
        let mut end = |submission: OperationId, part: u32| {
            let first = ended.entry(submission).or_insert(part);
            *first = (*first).min(part);
        };
        let mut legacy = LegacyParts::default();
        for (index, record) in records.into_iter().enumerate() {
            let op = record.op();
            match record {
                JournalRecord::Enqueued {
                    input,
                    enqueued_at,
                    addressed_to,
                    part,
                } => {
                    if outbox.ops.contains_key(&op) {
                        check(JournalError::DuplicateOperation { index, op })?;
                        continue;
                    }
                    let part = match part {
                        Some(part) => {
                            legacy.reset();
                            part
                        }
                        None => legacy.place(&input, enqueued_at, addressed_to),
                    };
                    outbox.insert(input, enqueued_at, addressed_to, part);
                }
                JournalRecord::Ended { submission, part } => end(submission, part),
                JournalRecord::Sent {
                    incarnation, at, ..
                } => {
                    let Some(p) = outbox.ops.get_mut(&op) else {
                        check(JournalError::UnknownOperation { index, op })?;
                        continue;
                    };
                    // [CLIENT.OUTBOX.5] A send followed by another send with no answer
                    // between went unanswered.
                    if !awaiting.insert(op) {
                        p.in_doubt = true;
                    }
                    p.first_sent_at.get_or_insert(at);
                    p.incarnation = Some(incarnation);
                    p.attempts = p.attempts.saturating_add(1);
                }
                JournalRecord::Answered { .. } => {
                    if !outbox.ops.contains_key(&op) {
                        check(JournalError::UnknownOperation { index, op })?;
                        continue;
                    }
                    awaiting.remove(&op);
                }
                JournalRecord::Resolved { resolution, .. } => {
                    let Some(pending) = outbox.remove(op) else {
                        check(JournalError::UnknownOperation { index, op })?;
                        continue;
                    };
                    // [CLIENT.SUBMIT.2] Its later parts were resolved after it; if the process
                    // died before their records were durable, they are blocked below.
                    if resolution != Resolution::Delivered {
                        end(pending.part.submission, pending.part.index);
                    }
                    awaiting.remove(&op);
                }
            }
        }
        // The process died with these sends unanswered: in doubt.
        for op in awaiting {
            if let Some(p) = outbox.ops.get_mut(&op) {
                p.in_doubt = true;
            }
        }
        for p in outbox.ops.values_mut() {
            if let Some(&failed) = ended.get(&p.part.submission)
                && p.part.index > failed
            {
                p.blocked_by = Some(failed);
            }
            if let Some(&of) = legacy.counts.get(&p.part.submission) {
                p.part.of = of;
            }
        }
        Ok(outbox)
    }

    /// The fewest records that rebuild the live state: the driver rewrites its journal file
    /// with these (then appends new records as usual).
    pub fn compact(&self) -> Vec<JournalRecord> {
        let mut ordered: Vec<&Pending> = self.ops.values().collect();
        ordered.sort_unstable_by_key(|p| p.seq);
        let mut out = Vec::with_capacity(ordered.len());
        let mut ended = HashSet::new();
        for p in ordered {
            let op = p.input.operation_id;
            if let Some(part) = p.blocked_by
                && ended.insert(p.part.submission)
            {
                // The failed part's own record is gone: say what it said.
                out.push(JournalRecord::Ended {
                    submission: p.part.submission,
                    part,
                });
            }
            out.push(JournalRecord::Enqueued {
                input: p.input.clone(),
                enqueued_at: p.enqueued_at,
                addressed_to: p.addressed_to,
                part: Some(p.part),
            });
            if let (Some(at), Some(incarnation)) = (p.first_sent_at, p.incarnation) {
                out.push(JournalRecord::Sent {
                    op,
                    incarnation,
                    at,
                });
                // An in-doubt or in-flight send stays unanswered, so it rebuilds in doubt.
                if !p.in_doubt && !p.in_flight {
                    out.push(JournalRecord::Answered { op });
                }
            }
        }
        out
    }
}

/// [CLIENT.SUBMIT.4] The parts of submissions recorded before submissions were: phuxctl
/// submitted once per run and recorded every part with the same time, terminal and
/// incarnation, one after another; so consecutive such `Enqueued` records (other kinds of
/// record between them aside) are the parts of one submission, numbered among those still
/// pending.
#[derive(Default)]
struct LegacyParts {
    last: Option<(TerminalId, Incarnation, Instant, Part)>,
    /// Per inferred submission, how many parts were found.
    counts: HashMap<OperationId, u32>,
}

impl LegacyParts {
    fn place(&mut self, input: &ApplyInput, at: Instant, addressed_to: Incarnation) -> Part {
        let part = match &self.last {
            Some((terminal, inc, when, prev))
                if *terminal == input.terminal && *inc == addressed_to && *when == at =>
            {
                Part {
                    index: prev.index.saturating_add(1),
                    ..*prev
                }
            }
            _ => Part::alone(input.operation_id),
        };
        self.counts.insert(part.submission, part.index);
        self.last = Some((input.terminal.clone(), addressed_to, at, part));
        part
    }

    /// A record that names its submission breaks a run of legacy records.
    fn reset(&mut self) {
        self.last = None;
    }
}
