//! The host's connections: registering one (and a bridge's handed-over stdio), queueing
//! what the engine sends, the flush passes, closing, and a peer gone.

use std::io;
use std::os::fd::OwnedFd;

use phux_core::server::{ConnId, PeerInfo, ServerEvent};
use phux_core::time::Instant;
use tracing::{debug, error, info, trace, warn};

use crate::conn::{Conn, FlushState, HandOff, Transport, WriteQueue};
use crate::flush::{Decision, FlushPolicy, Output};
use crate::timer::{CLOSE_BOUND, Timer};

use super::{Host, Recycle, Source};

impl Host {
    /// Registers a connection on `transport`; the caller reports it `Connected`.
    pub(crate) fn add_conn(&mut self, transport: Transport, peer: PeerInfo) -> io::Result<ConnId> {
        let id = ConnId(self.next_conn);
        self.next_conn += 1;
        let read_token = self.sources.add(Source::ConnRead(id));
        let write_token = if transport.split() {
            self.sources.add(Source::ConnWrite(id))
        } else {
            read_token
        };
        // [SERVER.BRIDGE.9] Only a socket peer that passed the uid check may hand over
        // descriptors: the same check as for any connection, made at accept.
        let may_hand_off = matches!(transport, Transport::Unix(_)) && peer.authorized;
        match Conn::open(transport, read_token, write_token, self.poll.registry()) {
            Ok(mut conn) => {
                conn.may_hand_off = may_hand_off;
                self.conns.insert(id, conn);
                info!(conn = id.0, local = peer.local_socket, "connection opened");
                Ok(id)
            }
            Err(e) => {
                self.sources.remove(read_token);
                self.sources.remove(write_token);
                Err(e)
            }
        }
    }

    /// A bridge offered its stdin and stdout on the connection's first read
    /// ([SERVER.BRIDGE.9]). Taken only while nothing was queued for the connection (the
    /// engine refuses an over-limit peer at once, and that refusal must reach it as bytes):
    /// then the connection is served on them and the bridge gets [`ACK`](crate::handoff::ACK).
    /// Returns whether it was taken; when not, the descriptors are closed unchanged and the
    /// offer's bytes are the caller's to handle as any others.
    pub(crate) fn hand_off(&mut self, id: ConnId, input: OwnedFd, output: OwnedFd) -> bool {
        let Some(conn) = self.conns.get_mut(&id) else {
            return false;
        };
        if !conn.queue.is_empty() || conn.is_closing() || conn.reported {
            debug!(
                conn = id.0,
                "handoff refused: the connection is already answered"
            );
            return false;
        }
        let write_token = self.sources.add(Source::ConnWrite(id));
        let control_token = self.sources.add(Source::ConnControl(id));
        match conn.hand_off(
            input,
            output,
            (write_token, control_token),
            self.poll.registry(),
        ) {
            HandOff::Taken => {}
            HandOff::Refused(e) => {
                warn!(conn = id.0, error = %e, "handoff refused");
                self.sources.remove(write_token);
                self.sources.remove(control_token);
                return false;
            }
            HandOff::Broken(e) => {
                error!(conn = id.0, error = %e, "cannot watch a handed-off connection");
                self.sources.remove(control_token);
                self.close_now(id);
                return true;
            }
        }
        // The answer before any byte is read from what was handed over: a bridge that never
        // sees it falls back to copying, and must find its stdin untouched.
        let acked = match &conn.transport {
            Transport::Handoff(h) => {
                matches!(
                    io::Write::write(&mut &h.control, &[crate::handoff::ACK]),
                    Ok(1)
                )
            }
            _ => false,
        };
        if acked {
            debug!(
                conn = id.0,
                "serving the connection on the descriptors its bridge handed over"
            );
        } else {
            debug!(
                conn = id.0,
                "the bridge went away before the handoff's answer"
            );
            self.close_now(id);
        }
        true
    }

    /// The bridge that handed the connection over ended (or wrote to) its socket: it was
    /// killed, or its transport cut. The connection ends as a cut link does
    /// ([SERVER.BRIDGE.11]).
    pub(crate) fn bridge_gone(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let cut = io::Error::new(
            io::ErrorKind::ConnectionReset,
            "the bridge that handed the connection over is gone",
        );
        self.peer_gone(id, Some(&cut), recycle);
    }

    /// The peer ended its stream or the transport failed. Whatever is already queued still
    /// goes out (a half-closed peer may be reading, bounded by [`CLOSE_BOUND`]), but the engine
    /// forgets the connection now.
    pub(crate) fn peer_gone(
        &mut self,
        id: ConnId,
        err: Option<&io::Error>,
        recycle: &mut Recycle<'_>,
    ) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        conn.end_reads(self.poll.registry());
        match err {
            None => debug!(conn = id.0, "peer closed its stream"),
            Some(e) => debug!(conn = id.0, error = %e, "read failed"),
        }
        let clock = self.clock;
        let closing = conn
            .timers
            .get_or_set(Timer::Closing, || clock.now() + CLOSE_BOUND);
        if err.is_some() {
            conn.queue.clear();
        }
        let report = !conn.reported;
        conn.reported = true;
        self.nearest.note(closing);
        if report {
            self.report(ServerEvent::Disconnected { conn: id });
        }
        self.write_conn(id, recycle);
    }

    /// After a read: a transport's own output that came of it (a WebSocket's pong) is written
    /// with the next flush, even with nothing queued.
    pub(crate) fn transport_output(&mut self, id: ConnId) {
        if self.conns.get(&id).is_some_and(Conn::transport_output_due) {
            self.send(id, Output::Urgent, |_| {});
        }
    }

    /// Queues what `push` adds on the connection's write queue, for the next flush.
    pub(super) fn send(&mut self, id: ConnId, output: Output, push: impl FnOnce(&mut WriteQueue)) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        if conn.reported {
            return;
        }
        push(&mut conn.queue);
        conn.urgent |= output == Output::Urgent;
        // Written once the engine has nothing more to say, so that the frames of one
        // wake-up leave in one vectored write per connection rather than one each.
        if !self.unflushed.contains(&id) {
            self.unflushed.push(id);
        }
    }

    /// One flush pass: writes each connection queued for it, unless the policy holds it.
    pub(crate) fn flush_pass(&mut self, now: Instant, recycle: &mut Recycle<'_>) {
        // The two lists trade places, so neither is allocated again: a flush pass allocates
        // nothing. Writing performs no action, so nothing joins `unflushed` meanwhile.
        let spare = std::mem::take(&mut self.flushing);
        let mut ids = std::mem::replace(&mut self.unflushed, spare);
        for id in ids.drain(..) {
            let Some(conn) = self.conns.get_mut(&id) else {
                continue;
            };
            match FlushPolicy::decide(conn.queued(), now) {
                Decision::Write => self.write_conn(id, recycle),
                Decision::Hold { until } => {
                    conn.timers.set(Timer::HeldOutput, until);
                    self.nearest.note(until);
                }
            }
        }
        self.flushing = ids;
    }

    /// Between bulk reads: writes the connection the policy finds ripest, if any.
    pub(crate) fn flush_ripest(&mut self, recycle: &mut Recycle<'_>) {
        let candidates = self.unflushed.iter().enumerate().filter_map(|(i, id)| {
            let conn = self.conns.get(id)?;
            (!conn.awaiting_writable()).then_some((i, conn.queue.len()))
        });
        if let Some(i) = FlushPolicy::ripest(candidates) {
            let id = self.unflushed.swap_remove(i);
            self.write_conn(id, recycle);
        }
    }

    /// Writes what the connection's queue holds; keeps `WRITABLE` interest while anything is
    /// left; closes the connection when it was closing and is now empty (or failed).
    pub(crate) fn write_conn(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let (sent, state) = conn.write(|chunk| recycle.chunk(chunk));
        if sent > 0 {
            trace!(conn = id.0, bytes = sent, "sent");
            if !conn.reported {
                self.report(ServerEvent::Sent {
                    conn: id,
                    bytes: sent,
                });
            }
        }
        match state {
            FlushState::Drained => {
                self.set_conn_writable(id, false);
                if self.conns.get(&id).is_some_and(Conn::is_closing) {
                    self.close_now(id);
                }
            }
            FlushState::Blocked => self.set_conn_writable(id, true),
            FlushState::Failed(e) => {
                debug!(conn = id.0, error = %e, "write failed");
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.queue.clear();
                }
                self.close_now(id);
            }
        }
    }

    pub(super) fn set_conn_writable(&mut self, id: ConnId, on: bool) {
        if let Some(conn) = self.conns.get_mut(&id)
            && let Err(e) = conn.set_writable(self.poll.registry(), on)
        {
            warn!(conn = id.0, error = %e, "cannot change write interest");
        }
    }

    /// The engine's `Close`: flush what is queued (bounded by [`CLOSE_BOUND`]), then close.
    pub(super) fn close(&mut self, id: ConnId, recycle: &mut Recycle<'_>) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let clock = self.clock;
        let closing = conn
            .timers
            .get_or_set(Timer::Closing, || clock.now() + CLOSE_BOUND);
        self.nearest.note(closing);
        self.write_conn(id, recycle);
    }

    /// [SERVER.MEMORY.1] Something went away: the heap is trimmed a moment later, once for
    /// a whole burst of closes.
    pub(super) fn trim_soon(&mut self) {
        if !self.timers.is_set(Timer::Trim) {
            let at = self.clock.now() + crate::memory::TRIM_DELAY;
            self.timers.set(Timer::Trim, at);
        }
    }

    /// Drops the connection now, telling the engine unless it was told already.
    pub(crate) fn close_now(&mut self, id: ConnId) {
        let Some(mut conn) = self.conns.remove(&id) else {
            return;
        };
        self.trim_soon();
        conn.deregister(self.poll.registry());
        self.sources.remove(conn.read_token());
        self.sources.remove(conn.write_token());
        if let Some(token) = conn.control_token() {
            self.sources.remove(token);
        }
        conn.transport.shutdown();
        let was_reported = conn.reported;
        let stdio = matches!(conn.transport, Transport::Stdio);
        drop(conn);
        info!(conn = id.0, "connection closed");
        if !was_reported {
            self.report(ServerEvent::Disconnected { conn: id });
        }
        if stdio && self.stdio {
            self.done = true;
        }
    }
}
