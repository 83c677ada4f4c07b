//! Subscriptions and what they hear: event scopes, lease changes and terminal_control.

use std::collections::BTreeMap;

use phux_proto::command::CommandResult;
use phux_proto::event::{AgentEvent, TerminalControl};
use phux_proto::frame::EventFrame;
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::connection::Connection;
use super::terminal::Terminal;
use super::{ConnId, LocalTerminal, ServerEngine};
use crate::lease::LeaseChange;
use crate::time::Instant;

impl ServerEngine {
    pub(super) fn on_subscribe_events(&mut self, id: ConnId, terminal: Option<&TerminalId>) {
        match terminal {
            None => {
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.subscribe_server_events();
                }
            }
            Some(terminal) => match self.lookup(terminal) {
                Ok(t) => {
                    if let Some(term) = self.terminals.get_mut(&t) {
                        term.subscribe(id);
                    }
                }
                Err(e) => {
                    // [SUBSCRIBE.EVENTS.4] No reply frame exists; a bad scope gets an ERROR.
                    let (code, message) = e.code();
                    self.send_error(id, None, code, message);
                }
            },
        }
    }

    pub(super) fn cmd_acquire(
        &mut self,
        now: Instant,
        id: ConnId,
        rid: u32,
        terminal: &TerminalId,
        mode: phux_proto::command::AcquireMode,
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

    /// [EVENT.CONTROL.1] terminal_control goes to every client subscribed to the terminal —
    /// attached, terminal-scoped or server-scoped — exactly once each (our rule R11).
    pub(super) fn broadcast_control(&mut self, t: LocalTerminal, control: TerminalControl) {
        let Some(term) = self.terminals.get(&t) else {
            return;
        };
        let audience = term.audience(self.server_subscribers().into_iter());
        let event = Frame::Event(EventFrame {
            terminal: Some(TerminalId::from(t)),
            event: AgentEvent::TerminalControl(control),
        });
        for conn in audience {
            self.send(conn, &event);
        }
    }

    /// Who hears agent events about terminal `t`: the server-scoped subscribers given and
    /// those subscribed to it with SUBSCRIBE_EVENTS, each once.
    pub(super) fn listeners_of(t: &Terminal, server_scoped: Vec<ConnId>) -> Vec<ConnId> {
        Self::merge_listeners(server_scoped, t.agent_subscribers())
    }

    /// The server-scoped subscribers and a terminal's agent-event subscribers, each once.
    pub(super) fn merge_listeners(
        mut server_scoped: Vec<ConnId>,
        terminal_scoped: impl IntoIterator<Item = ConnId>,
    ) -> Vec<ConnId> {
        server_scoped.extend(terminal_scoped);
        server_scoped.sort_unstable();
        server_scoped.dedup();
        server_scoped
    }

    pub(super) fn server_subscribers(&self) -> Vec<ConnId> {
        server_subscribers(&self.conns)
    }
}

/// The connections subscribed to server-scoped events, in order.
pub(super) fn server_subscribers(conns: &BTreeMap<ConnId, Connection>) -> Vec<ConnId> {
    conns
        .values()
        .filter(|c| c.hears_server_events())
        .map(Connection::id)
        .collect()
}
