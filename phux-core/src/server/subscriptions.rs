//! Subscriptions and who hears what: server- and terminal-scoped SUBSCRIBE_EVENTS, and
//! terminal_control delivered to every subscriber of a terminal once.

use std::collections::BTreeMap;

use phux_proto::event::{AgentEvent, TerminalControl};
use phux_proto::frame::EventFrame;
use phux_proto::{Frame, TerminalId};

use super::connection::Connection;
use super::terminal::Terminal;
use super::{ConnId, LocalTerminal, ServerEngine};

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
