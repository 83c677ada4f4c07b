//! Input leases over the wire: ACQUIRE_INPUT and RELEASE_INPUT against the server's
//! [`LeaseTable`](crate::lease::LeaseTable), and every lease change broadcast as
//! terminal_control.

use phux_proto::command::{AcquireMode, CommandResult};
use phux_proto::{ErrorCode, TerminalId};

use super::{ConnId, LocalTerminal, ServerEngine};
use crate::lease::LeaseChange;
use crate::time::Instant;

impl ServerEngine {
    pub(super) fn cmd_acquire(
        &mut self,
        now: Instant,
        id: ConnId,
        rid: u32,
        terminal: &TerminalId,
        mode: AcquireMode,
        ttl_ms: u32,
    ) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let Some(client) = self.client_of(id) else {
            return;
        };
        match self
            .leases
            .acquire(now, TerminalId::from(t), client, mode, ttl_ms)
        {
            Ok(change) => {
                // [LEASE.ACQUIRE.4] OK is plain; the grant is broadcast to every subscriber.
                self.send_result(id, rid, CommandResult::Ok);
                self.broadcast_lease_change(&change);
            }
            Err(held) => {
                // [LEASE.ACQUIRE.3] Cooperative acquire of a lease held by another is 204.
                self.send_error_result(
                    id,
                    rid,
                    ErrorCode::INPUT_LEASE_HELD,
                    format!("input lease held by client {}", held.holder),
                );
            }
        }
    }

    pub(super) fn broadcast_lease_change(&mut self, change: &LeaseChange) {
        let Some(t) = LocalTerminal::of(&change.terminal) else {
            return;
        };
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        let control = change.to_control(term.lifecycle(), term.exit_status());
        self.broadcast_control(t, control);
    }

    pub(super) fn cmd_release(&mut self, id: ConnId, rid: u32, terminal: &TerminalId) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        let Some(client) = self.client_of(id) else {
            return;
        };
        // [LEASE.RELEASE.2] Release by a non-holder is a no-op OK.
        if let Some(change) = self.leases.release(&TerminalId::from(t), client) {
            self.broadcast_lease_change(&change);
        }
        self.send_result(id, rid, CommandResult::Ok);
    }
}
