//! Input: INPUT_* frames, ROUTE_INPUT, and APPLY_INPUT with its full acknowledged contract.

use phux_proto::command::{ApplyInput, CommandResult, MAX_APPLY_INPUT_EVENTS};
use phux_proto::input::InputEvent;
use phux_proto::{ErrorCode, OperationId, TerminalId};

use super::receive::Lookup;
use super::terminal::{JobKind, Orphan};
use super::{ConnId, LocalTerminal, ServerEngine};
use crate::digest::PayloadDigest;
use crate::encoder;
use crate::ledger::{Admission, LedgerRefusal, Owner};
use crate::time::Instant;
use crate::writer::{JobId, WriteOutcome};

impl ServerEngine {
    /// INPUT_KEY / INPUT_PASTE / INPUT_MOUSE / INPUT_FOCUS: no reply in any case.
    pub(super) fn on_fire_and_forget(
        &mut self,
        now: Instant,
        id: ConnId,
        terminal: &TerminalId,
        event: &InputEvent,
    ) {
        let Ok(t) = self.lookup(terminal) else { return };
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let (client, cells) = (conn.client(), conn.cells());
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        // [INPUT.FRAME.2] Only a client attached to the terminal may send it INPUT_* frames.
        if !term.has_viewer(id) || !term.accepts_input() {
            return;
        }
        // [LEASE.GATE.1] Under another client's lease INPUT_* is dropped.
        if self
            .leases
            .check_input(now, &TerminalId::from(t), client)
            .is_err()
        {
            return;
        }
        let modes = term.modes();
        // [INPUT.PASTE.SAFE.4] An unsafe untrusted paste on INPUT_PASTE is dropped.
        let Ok(bytes) = encoder::encode_batch(std::slice::from_ref(event), &modes, cells) else {
            return;
        };
        self.queue_job(t, bytes, JobKind::Unacknowledged);
    }

    pub(super) fn cmd_route_input(
        &mut self,
        now: Instant,
        id: ConnId,
        rid: u32,
        terminal: &TerminalId,
        event: &InputEvent,
    ) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let (client, cells) = (conn.client(), conn.cells());
        // [LEASE.GATE.2] ROUTE_INPUT under another client's lease is refused with 204 (R10).
        if let Err(held) = self.leases.check_input(now, &TerminalId::from(t), client) {
            return self.send_error_result(
                id,
                rid,
                ErrorCode::INPUT_LEASE_HELD,
                format!("input lease held by client {}", held.holder),
            );
        }
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        let accepts = term.accepts_input();
        let modes = term.modes();
        // [INPUT.ROUTE.3] Encode failures and unsafe pastes write nothing but still reply OK.
        if accepts
            && let Ok(bytes) = encoder::encode_batch(std::slice::from_ref(event), &modes, cells)
        {
            self.queue_job(t, bytes, JobKind::Unacknowledged);
        }
        self.send_result(id, rid, CommandResult::Ok);
    }

    /// APPLY_INPUT, in the order of phux 0.8 section 8.2: the first failing step decides.
    pub(super) fn cmd_apply_input(
        &mut self,
        now: Instant,
        id: ConnId,
        rid: u32,
        apply: &ApplyInput,
    ) {
        let op = apply.operation_id;
        let wire_terminal = apply.terminal.clone();
        // [INPUT.LANE.1] One unresolved acknowledged operation per terminal, server-wide,
        // checked before dedupe: a same-id retry while the original is pending is 202 too.
        if self.lane.admit(wire_terminal.clone(), op).is_err() {
            return self.send_error_result(
                id,
                rid,
                ErrorCode::RESOURCE_EXHAUSTED,
                "another APPLY_INPUT operation is in flight for this terminal",
            );
        }
        // From here on every refusal must free the lane slot.
        if let Err(reply) = self.apply_admitted(now, id, rid, apply) {
            // The slot was admitted just above, so it is there to free.
            let _ = self.lane.abandon(&wire_terminal);
            self.send_result(id, rid, reply);
        }
    }

    /// Steps 3-10 of APPLY_INPUT. `Ok` = handed off (the reply comes with the completion).
    fn apply_admitted(
        &mut self,
        now: Instant,
        id: ConnId,
        request_id: u32,
        apply: &ApplyInput,
    ) -> Result<(), CommandResult> {
        let refuse = |code: ErrorCode, message: &str| CommandResult::Error {
            code,
            message: message.to_owned(),
        };
        let op = apply.operation_id;
        // [INPUT.APPLY.3] 1..=256 events; no dedupe binding is made for a bad count.
        if apply.events.is_empty() || apply.events.len() > MAX_APPLY_INPUT_EVENTS {
            return Err(refuse(
                ErrorCode::INVALID_COMMAND,
                "APPLY_INPUT requires 1..=256 events",
            ));
        }
        let mut scratch = self.pool.take();
        let digest = PayloadDigest::of_in(apply, &mut scratch);
        self.reclaim(scratch);
        let owner = Owner(self.client_of(id).map_or(0, |c| c.0));
        // [INPUT.DEDUPE.1] [INPUT.DEDUPE.3] Bind the id to the payload digest; a known result is returned as is.
        let admission = self.ledger.admit(now, owner, op, digest);
        match admission {
            Ok(Admission::Cached(result)) => return Err(result.to_result()),
            Ok(Admission::InFlight) => {
                // The lane admitted it, so the original's lane slot was freed by the 5 s bound
                // while its job is still queued: its fate is not known yet.
                return Err(refuse(
                    ErrorCode::RESOURCE_EXHAUSTED,
                    "this APPLY_INPUT operation is still in flight",
                ));
            }
            Ok(Admission::Fresh | Admission::Rebound) => {}
            Err(LedgerRefusal::DigestMismatch) => {
                // [INPUT.DEDUPE.5] Same id, different payload: refused, nothing written.
                return Err(refuse(
                    ErrorCode::INVALID_COMMAND,
                    "APPLY_INPUT operation id reused with a different payload",
                ));
            }
            Err(LedgerRefusal::Full) => {
                // [INPUT.DEDUPE.7] A full ledger refuses unseen ids; nothing is evicted.
                return Err(refuse(
                    ErrorCode::RESOURCE_EXHAUSTED,
                    "acknowledged-input dedupe cache is full",
                ));
            }
            Err(LedgerRefusal::ShareFull) => {
                // [INPUT.DEDUPE.12] One client's records are bounded by its share.
                return Err(refuse(
                    ErrorCode::RESOURCE_EXHAUSTED,
                    "this client's share of the acknowledged-input dedupe cache is full",
                ));
            }
        }
        // Steps 5-8 refuse before handoff: the binding stays, the operation may be retried.
        let outcome = self.prepare_job(now, id, apply);
        match outcome {
            Ok((t, bytes)) => {
                // [INPUT.ORDER.1] The whole batch is one job, handed off in order.
                // Both records were created above by this call; neither can be missing.
                let _ = self.ledger.handed_off(op);
                // [SERVER.UPGRADE.3] A job held by a pending upgrade reaches the writer only
                // when the upgrade ends: its completion bound starts then.
                if self.upgrade.is_none() {
                    let _ = self.lane.handed_off(now, &apply.terminal);
                }
                self.queue_job(
                    t,
                    bytes,
                    JobKind::Acknowledged {
                        op,
                        conn: id,
                        request_id,
                    },
                );
                Ok(())
            }
            Err(reply) => {
                // [INPUT.DEDUPE.9] A refusal before handoff leaves the ledger as it found it:
                // an id first seen in this request is forgotten, so refused requests occupy
                // no record; an older binding stays.
                let _ = if admission == Ok(Admission::Fresh) {
                    self.ledger.forget(op)
                } else {
                    self.ledger.release(op)
                };
                Err(reply)
            }
        }
    }

    /// Steps 5-8: destination, lease, paste safety, encoding. Returns the terminal and bytes.
    fn prepare_job(
        &self,
        now: Instant,
        id: ConnId,
        apply: &ApplyInput,
    ) -> Result<(LocalTerminal, Vec<u8>), CommandResult> {
        let refuse = |code: ErrorCode, message: String| CommandResult::Error { code, message };
        let t = self.lookup(&apply.terminal).map_err(|e| {
            let (code, message) = e.code();
            refuse(code, message.to_owned())
        })?;
        let conn = self
            .conns
            .get(&id)
            .ok_or_else(|| refuse(ErrorCode::INTERNAL_ERROR, "connection gone".into()))?;
        // [LEASE.GATE.3] APPLY_INPUT under another client's lease is 204; no subscription needed.
        if let Err(held) = self.leases.check_input(now, &apply.terminal, conn.client()) {
            return Err(refuse(
                ErrorCode::INPUT_LEASE_HELD,
                format!("input lease held by client {}", held.holder),
            ));
        }
        let term = self.terminals.get(&t).ok_or_else(|| {
            let (code, message) = Lookup::NotFound.code();
            refuse(code, message.to_owned())
        })?;
        if !term.accepts_input() {
            // [INPUT.APPLY.11] No live child: nothing can be written; the client may resubmit.
            return Err(refuse(
                ErrorCode::INPUT_NOT_WRITTEN,
                "the terminal has no running child".into(),
            ));
        }
        // [INPUT.PASTE.SAFE.3] [INPUT.APPLY.6] [INPUT.APPLY.7] Unsafe paste, then encode against ONE snapshot.
        let bytes = encoder::encode_batch(&apply.events, &term.modes(), conn.cells())
            .map_err(|e| refuse(e.code(), e.to_string()))?;
        if term.jobs_full(self.config.max_jobs_per_terminal) {
            // [INPUT.APPLY.8] The terminal's pending input queue is full (checked after the
            // batch's own validity, in the order of [INPUT.APPLY.2]).
            return Err(refuse(
                ErrorCode::RESOURCE_EXHAUSTED,
                "the terminal's input queue is full".into(),
            ));
        }
        Ok((t, bytes))
    }

    /// Hands a job to the driver, behind every earlier job for the terminal (R8). A terminal
    /// whose queue is full drops fire-and-forget input ([INPUT.FRAME.3]); APPLY_INPUT checks
    /// first and refuses ([INPUT.APPLY.8]).
    pub(super) fn queue_job(&mut self, t: LocalTerminal, bytes: Vec<u8>, kind: JobKind) {
        if let Some(term) = self.terminals.get_mut(&t)
            && let Some(write) = term.queue_job(
                &mut self.next_job,
                self.config.max_jobs_per_terminal,
                self.upgrade.is_some(),
                bytes,
                kind,
            )
        {
            self.actions.push_back(write);
        }
    }

    pub(super) fn on_write_done(&mut self, t: LocalTerminal, job: JobId, outcome: WriteOutcome) {
        // Unknown, duplicate or not yet handed out: a driver bug, ignored.
        let Some(kind) = self
            .terminals
            .get_mut(&t)
            .and_then(|term| term.complete_job(job, outcome))
        else {
            return;
        };
        let JobKind::Acknowledged {
            op,
            conn,
            request_id,
        } = kind
        else {
            return;
        };
        // [INPUT.APPLY.9] [INPUT.APPLY.10] OK only after every byte was written;
        // [INPUT.APPLY.12] an uncertain write is reported as such, never guessed.
        let result = outcome;
        let tid = TerminalId::from(t);
        // [INPUT.LANE.3] A completion after the 5 s bound changes nothing.
        if self.lane.complete(&tid, op).is_none() {
            return;
        }
        let _ = self.ledger.complete(op, result);
        self.send_result(conn, request_id, result.to_result());
    }

    /// The lane's 5 s bound passed with no completion: the write is in doubt.
    pub(super) fn resolve_expired_job(&mut self, terminal: &TerminalId, op: OperationId) {
        let Some(t) = LocalTerminal::of(terminal) else {
            return;
        };
        // The job stays queued (its bytes may still be written), its completion ignored.
        let Some((conn, request_id)) = self
            .terminals
            .get_mut(&t)
            .and_then(|term| term.expire_acknowledged(op))
        else {
            return;
        };
        // [INPUT.LANE.2] No completion within 5 s of handoff: INPUT_DELIVERY_UNKNOWN, cached.
        let _ = self.ledger.complete(op, WriteOutcome::Unknown);
        self.send_result(conn, request_id, WriteOutcome::Unknown.to_result());
    }

    /// A terminal went away with jobs the driver never reported: their fate is unknown.
    pub(super) fn resolve_orphaned_jobs(&mut self, t: LocalTerminal) {
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        let tid = TerminalId::from(t);
        for orphan in term.drain_jobs() {
            let Orphan {
                op,
                conn,
                request_id,
                outcome,
            } = orphan;
            if self.lane.complete(&tid, op).is_some() {
                let _ = self.ledger.complete(op, outcome);
                self.send_result(conn, request_id, outcome.to_result());
            }
        }
    }
}
