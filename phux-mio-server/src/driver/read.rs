//! Reading the ready sources, each until it would block or its share of the turn is spent:
//! the listener's queued peers, a connection's bytes, a terminal's output. Every read goes to
//! the engine through `Driver::feed`, and what it asked for is flushed as the flush policy says.

use std::io;
use std::time::Duration;

use mio::Token;
use phux_core::server::{ConnId, LocalTerminal, PeerInfo, ServerEvent};
use tracing::{error, info, trace, warn};

use super::Driver;
use crate::conn::{Got, Transport};
use crate::flush::{FlushPolicy, Output};
use crate::host::Recycle;
use crate::pty::PtyRead;
use crate::socket::check_peer;
use crate::timer::{ACCEPT_RETRY, Timer};

/// Reads from one source per wake-up before others get a turn.
const READS_PER_WAKE: usize = 16;

/// The most time one source's reads take per turn ([SERVER.FAIR.2]) before the others get
/// theirs: ordinary output takes far less (a 4 KiB chunk is tens of microseconds), output
/// whose bytes cost many cells each is cut into slices of this.
pub const SOURCE_SLICE: Duration = Duration::from_millis(4);

impl Driver {
    // ---- connections ----

    /// Accepts every queued peer, until the listener would block or runs out of descriptors
    /// (then [`Timer::AcceptRetry`] brings it back).
    pub(super) fn accept_all(&mut self) {
        loop {
            let Some(listener) = self.host.listener.as_ref() else {
                return;
            };
            match listener.listener().accept() {
                Ok((stream, _)) => {
                    // [SERVER.PEER.1] A peer running as another user is refused by the engine
                    // (ERROR, DETACHED, close) before any of its frames is acted on.
                    let peer = match check_peer(&stream) {
                        Ok(()) => PeerInfo::local(),
                        Err(e) => {
                            warn!(error = %e, "refusing a connection");
                            PeerInfo::foreign()
                        }
                    };
                    match self.host.add_conn(Transport::Unix(stream), peer) {
                        Ok(conn) => self.feed(ServerEvent::Connected { conn, peer }),
                        Err(e) => error!(error = %e, "cannot register a connection"),
                    }
                    self.flush();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.host.timers.is_set(Timer::AcceptRetry) {
                        self.host.timers.stop(Timer::AcceptRetry);
                        info!("accepting connections again");
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // [SERVER.LIMIT.4] EMFILE, ENFILE, ENOBUFS and the like: the peer stays
                    // queued and its readiness edge is spent, so stop accepting and come back
                    // after a rest rather than at the next connect (or spinning meanwhile).
                    let retry = &mut self.host.timers;
                    if !retry.is_set(Timer::AcceptRetry) {
                        warn!(error = %e, "cannot accept a connection; retrying");
                    }
                    retry.set(Timer::AcceptRetry, self.host.clock.now() + ACCEPT_RETRY);
                    return;
                }
            }
        }
    }

    /// Reads what the connection has; to its end when the peer is known to have hung up
    /// (see [`Wake::ended`](super::turn::Wake::ended)).
    pub(super) fn read_conn(&mut self, id: ConnId, token: Token, ended: bool) {
        // Lent out while the engine reads from it; taking an empty `Vec` allocates nothing.
        let mut buf = std::mem::take(&mut self.buf);
        self.read_conn_into(&mut buf, id, token, ended);
        self.buf = buf;
    }

    fn read_conn_into(&mut self, buf: &mut [u8], id: ConnId, token: Token, ended: bool) {
        // [SERVER.FAIR.1] Frames an earlier read left past the engine's per-turn budget come
        // first, one budget a turn, and the socket is not read meanwhile (the decoder holds at
        // most one read). The token comes back next turn either way: the socket's edge was
        // spent while it waited, and whatever it holds is read then.
        if self.engine.is_backlogged(id) {
            if self
                .host
                .conns
                .get(&id)
                .is_none_or(crate::conn::Conn::is_closing)
            {
                // After Close the engine is done with it: nothing to come back for.
                return;
            }
            self.feed(ServerEvent::Received {
                conn: id,
                bytes: &[],
            });
            self.flush();
            self.host.again.push(token);
            return;
        }
        for _ in 0..READS_PER_WAKE {
            let Some(conn) = self.host.conns.get_mut(&id) else {
                return;
            };
            if conn.read_done() {
                return;
            }
            let read = if conn.may_hand_off {
                let first = conn.transport.read_first(buf);
                // Only a read that found something (bytes or the end) was the first.
                conn.may_hand_off = first.as_ref().is_err_and(|e| {
                    matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    )
                });
                match first {
                    Ok((got, Some((input, output)))) => {
                        if self.host.hand_off(id, input, output) {
                            // The handed input is registered under this token: its readiness
                            // (a HELLO already waiting included) comes with the next poll.
                            return;
                        }
                        // Refused: the offer is bytes like any others (a framing violation).
                        Ok(got)
                    }
                    Ok((got, None)) => Ok(got),
                    Err(e) => Err(e),
                }
            } else {
                conn.transport.read(buf)
            };
            // A WebSocket's pong, if the read found a ping, goes with the next flush.
            self.host.transport_output(id);
            let Some(conn) = self.host.conns.get_mut(&id) else {
                return;
            };
            // The engine's answers to earlier reads (an ERROR for a bad frame, say) were
            // performed and flushed as each was fed, so a peer that half-closes after writing
            // still sees them when the read below finds its end.
            match read {
                Ok(Got { n: 0, .. }) => {
                    return self
                        .host
                        .peer_gone(id, None, &mut Recycle(&mut self.engine));
                }
                Ok(Got { n, drained }) => {
                    trace!(conn = id.0, bytes = n, "received");
                    // After Close the engine is done with the connection; drop what arrives.
                    if !conn.is_closing() {
                        let bytes = buf.get(..n).unwrap_or_default();
                        self.feed(ServerEvent::Received { conn: id, bytes });
                        // What these bytes asked for (a keystroke's PTY write, a reply) goes
                        // out before any further read of the socket.
                        self.flush();
                        if self.engine.is_backlogged(id) {
                            // Its turn is over; the rest of what it sent waits for the next.
                            self.host.again.push(token);
                            return;
                        }
                    }
                    if drained && !ended {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return self
                        .host
                        .peer_gone(id, Some(&e), &mut Recycle(&mut self.engine));
                }
            }
        }
        self.host.again.push(token);
    }

    // ---- terminals ----

    /// Reads the terminal's output until the master is empty, its share of the turn is spent or
    /// it ends.
    pub(super) fn read_master(&mut self, terminal: LocalTerminal, token: Token) {
        let mut buf = std::mem::take(&mut self.buf);
        self.read_master_into(&mut buf, terminal, token);
        self.buf = buf;
    }

    fn read_master_into(&mut self, buf: &mut [u8], terminal: LocalTerminal, token: Token) {
        // [OUTPUT.READER.1] Held by the reader thread: what it read goes first, and the loop
        // reads the master only once the thread has given it back.
        if self.collect_reader(terminal, token) {
            return;
        }
        // A PTY master hands out what its line discipline holds, at most a few KiB per read, and
        // the time spent between two reads is what lets the kernel refill it. Consecutive reads
        // are gathered into one chunk ([OUTPUT.GATHER.1]), up to the engine's limit: one frame
        // for several reads, no later for anyone. The master is read until it is empty: a bulk
        // read says more is on its way, and a short one may be a piece of a burst (to a reader
        // that keeps up, the kernel hands a program's large write over a few hundred bytes at a
        // time). A short first read (an echo, a prompt) goes at once, before the read that tells
        // whether anything is behind it (none follows a keystroke's echo of a few bytes); after
        // it, the reads that find more are gathered. The
        // read that finds the master empty ends the chunk, which goes at once if its last read
        // was short (the end of a burst). The frames of bulk reads leave in large writes, as the
        // flush policy says: one between two reads, the rest when the wake-up's reads are done.
        let slice_end = self.host.clock.now() + SOURCE_SLICE;
        let mut limit = self.engine.output_gather_limit(terminal).min(buf.len());
        // Bytes read into `buf` and not yet handed to the engine, and the size of the last read
        // among them: the chunk's frames are bulk output or not as that read was.
        let mut gathered = 0;
        let mut last_read = 0;
        let mut first = true;
        for _ in 0..READS_PER_WAKE {
            // [SERVER.FAIR.2] A few bytes may cost many cells (REP, combining marks on a wide
            // screen): a terminal's turn ends after a slice of time, not only of reads.
            if self.host.clock.now() >= slice_end {
                break;
            }
            let Some(t) = self.host.terminals.get_mut(&terminal) else {
                return;
            };
            if t.eof() {
                return;
            }
            let read = t.child.read(buf.get_mut(gathered..).unwrap_or_default());
            match read {
                Ok(PtyRead::Data(n)) => {
                    gathered += n;
                    last_read = n;
                    if std::mem::take(&mut first) && FlushPolicy::flush_after_read(n) {
                        // Someone may be waiting for it: no read comes before it leaves.
                        self.feed_output(terminal, buf.get(..n).unwrap_or_default(), n);
                        if FlushPolicy::is_echo(n) {
                            // It took all the line discipline held, and more output raises a
                            // new event: the read that would find the master empty is skipped,
                            // between the echo and the next wait.
                            return;
                        }
                        gathered = 0;
                        continue;
                    }
                    if FlushPolicy::pty_read(n) == Output::Bulk && self.reader_may_take() {
                        // [OUTPUT.READER.1] A burst: what was read goes now, and the reader
                        // thread reads on while the loop writes it.
                        self.feed_output(terminal, buf.get(..gathered).unwrap_or_default(), n);
                        if self.hand_to_reader(terminal, token) {
                            return;
                        }
                        gathered = 0;
                        limit = self.engine.output_gather_limit(terminal).min(buf.len());
                        continue;
                    }
                    if FlushPolicy::pty_read(n) == Output::Bulk {
                        // One write between two reads, as when each read is its own chunk:
                        // the viewers' earlier frames leave while the kernel refills.
                        self.host.flush_ripest(&mut Recycle(&mut self.engine));
                        self.feed_observed();
                        limit = self.engine.output_gather_limit(terminal).min(buf.len());
                    }
                    if FlushPolicy::read_on(gathered, limit) {
                        continue;
                    }
                    if gathered > limit && gathered > n && limit > 0 {
                        // A write between two reads let a viewer that takes smaller chunks
                        // resume its stream: what was gathered goes now, in chunks it takes.
                        for piece in buf.get(..gathered).unwrap_or_default().chunks(limit) {
                            self.feed_output(terminal, piece, FlushPolicy::BULK_READ);
                        }
                    } else {
                        let bytes = buf.get(..gathered).unwrap_or_default();
                        self.feed_output(terminal, bytes, n);
                    }
                    gathered = 0;
                    limit = self.engine.output_gather_limit(terminal).min(buf.len());
                }
                Ok(PtyRead::WouldBlock) => {
                    let bytes = buf.get(..gathered).unwrap_or_default();
                    // [OUTPUT.GATHER.2] Found empty: a chunk ended by a short read goes now.
                    if !bytes.is_empty() {
                        self.feed_output(terminal, bytes, last_read);
                    }
                    return;
                }
                Ok(PtyRead::Eof) => {
                    self.feed_output_rest(terminal, buf.get(..gathered).unwrap_or_default());
                    return self.host.master_eof(terminal);
                }
                Err(e) => {
                    warn!(%terminal, error = %e, "reading the terminal failed");
                    self.feed_output_rest(terminal, buf.get(..gathered).unwrap_or_default());
                    return self.host.master_eof(terminal);
                }
            }
        }
        let bytes = buf.get(..gathered).unwrap_or_default();
        if !bytes.is_empty() {
            self.feed_output(terminal, bytes, FlushPolicy::BULK_READ);
        }
        // The cap stopped us with more to read: come back before waiting.
        self.host.again.push(token);
    }

    /// Hands the engine one chunk of `terminal`'s output, `last_read` the size of the last read
    /// in it, and flushes as the policy says for that read.
    pub(super) fn feed_output(&mut self, terminal: LocalTerminal, bytes: &[u8], last_read: usize) {
        // This chunk's frames are queued now, marked as bulk output or not by the last read's
        // size: a gathered chunk ended by a short read is the end of a burst, sent at once.
        let output = FlushPolicy::pty_read(last_read);
        self.feed_all(Some((ServerEvent::PtyOutput { terminal, bytes }, output)));
        if output == Output::Bulk {
            self.host.flush_ripest(&mut Recycle(&mut self.engine));
            self.feed_observed();
        }
        // A few bytes are an echo or a prompt someone is waiting for: send them at once. Bulk
        // output, read in KiB chunks, leaves in large writes.
        if FlushPolicy::flush_after_read(last_read) {
            self.flush();
            // [SCREEN.SERVER.2] A short read ends a burst (a prompt after a `cd`, an echo): the
            // program's directory, reported if it changed.
            self.host.observe_cwd(terminal);
            self.feed_observed();
        }
    }

    /// The output gathered before the master's end, if any, sent at once.
    fn feed_output_rest(&mut self, terminal: LocalTerminal, bytes: &[u8]) {
        if !bytes.is_empty() {
            self.feed_output(terminal, bytes, 0);
        }
    }
}
