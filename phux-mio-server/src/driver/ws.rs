//! The WebSocket door's part of the loop (spec/websocket.md): accepting peers, their
//! handshakes, and the upgraded ones becoming connections the engine sees.

use std::io;

use mio::Token;
use phux_core::server::{PeerInfo, ServerEvent};
use tracing::{error, warn};

use super::Driver;
use crate::conn::Transport;
use crate::timer::{ACCEPT_RETRY, Timer};
use crate::ws::WsStream;
use crate::ws::door::{Door, LISTENER, Step};

impl Driver {
    /// Serves WebSocket clients on `door` too (`--listen-ws`).
    pub fn enable_ws(&mut self, mut door: Door) -> io::Result<()> {
        door.register(self.host.poll.registry(), LISTENER)?;
        self.host.ws = Some(door);
        Ok(())
    }

    /// Whether `token` is the door's (its listener or a handshake); if so, serves it.
    pub(super) fn route_ws(&mut self, token: Token) -> bool {
        if token == LISTENER {
            self.accept_ws();
            return true;
        }
        if !Door::owns(token) {
            return false;
        }
        let Some(door) = self.host.ws.as_mut() else {
            return true;
        };
        if let Step::Upgraded { tcp, early } = door.serve(self.host.poll.registry(), token) {
            // [WS.AUTH.1] Only now, with every check passed, does the engine hear of it: as
            // a peer that is not on the local socket (no SHUTDOWN from a browser).
            let peer = PeerInfo::remote();
            let transport = Transport::Ws(Box::new(WsStream::new(tcp, &early)));
            match self.host.add_conn(transport, peer) {
                Ok(conn) => {
                    self.feed(ServerEvent::Connected { conn, peer });
                    // Frames that came with the request are read now: no edge announces them.
                    if !early.is_empty()
                        && let Some(c) = self.host.conns.get(&conn)
                    {
                        let read = c.read_token();
                        self.host.again.push(read);
                    }
                }
                Err(e) => error!(error = %e, "cannot register a WebSocket connection"),
            }
        }
        true
    }

    /// Accepts every waiting WebSocket peer into its handshake.
    pub(super) fn accept_ws(&mut self) {
        let now = self.host.clock.now();
        let Some(door) = self.host.ws.as_mut() else {
            return;
        };
        if let Err(e) = door.accept_all(self.host.poll.registry(), now) {
            // [SERVER.LIMIT.4] As for the socket: rest, then accept again.
            let retry = &mut self.host.timers;
            if !retry.is_set(Timer::AcceptRetry) {
                warn!(error = %e, "cannot accept a WebSocket connection; retrying");
            }
            retry.set(Timer::AcceptRetry, now + ACCEPT_RETRY);
        }
    }

    /// The handshakes whose time is up are closed.
    pub(super) fn expire_ws(&mut self) {
        let now = self.host.clock.now();
        if let Some(door) = self.host.ws.as_mut()
            && door.deadline().is_some_and(|d| d <= now)
        {
            door.expire(self.host.poll.registry(), now);
        }
    }
}
