//! A terminal's output to its viewers: ATTACH, bootstraps, live output fanned out within
//! each viewer's budget (tombstoned when it falls behind), and bells.

use phux_proto::command::CommandResult;
use phux_proto::event::AgentEvent;
use phux_proto::frame::{Bell, EventFrame, TerminalOutputRef};
use phux_proto::ids::StreamId;
use phux_proto::{Frame, TerminalId};

use super::connection::Connection;
use super::outbound::{Budget, Outbound};
use super::terminal::{Chunk, JobKind};
use super::{ConnId, LocalTerminal, ServerEngine, SharedFrame};

/// A bootstrap frame's length on the wire, near enough to judge a budget: its payload plus
/// an allowance for the header and the ids.
fn bootstrap_frame_len(frame: &Frame) -> usize {
    const OVERHEAD: usize = 64;
    match frame {
        Frame::BootstrapChunk(chunk) => chunk.payload.len() + OVERHEAD,
        _ => OVERHEAD,
    }
}

/// The most bells one output chunk rings: enough for any real use, bounded against floods.
const MAX_BELLS_PER_CHUNK: u32 = 16;

impl ServerEngine {
    pub(super) fn cmd_attach(&mut self, id: ConnId, rid: u32, terminal: &TerminalId) {
        let t = match self.lookup(terminal) {
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        // [TERMINAL.ATTACH.3] Re-attaching ends the current bootstrap and starts a new one
        // on the same stream.
        let old = self
            .terminals
            .get_mut(&t)
            .and_then(|term| term.reattach(id));
        let stream = match old {
            Some((stream, tombstone)) => {
                if let Some(frame) = tombstone {
                    self.send(id, &frame);
                }
                stream
            }
            None => self.allocate_stream(),
        };
        self.start_bootstrap(id, t, stream);
        self.send_result(id, rid, CommandResult::Ok);
    }

    /// BOOTSTRAP_BEGIN, CHUNKs and READY rebuilding the screen, then live output follows.
    pub(super) fn start_bootstrap(&mut self, id: ConnId, t: LocalTerminal, stream: StreamId) {
        let bootstrap = self.allocate_bootstrap();
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let chunk_limit = conn.max_chunk().get() as usize;
        let outbound = conn.outbound();
        let budget = self.config.output_budget;
        // [QUEUE.BOOTSTRAP.1] Judged before the payload is built, and again once its size is
        // known.
        if outbound.bootstrap_waits(budget) {
            return self.defer_bootstrap(id, t, stream, bootstrap);
        }
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        let frames = term.bootstrap(id, stream, bootstrap, chunk_limit);
        let len: usize = frames.iter().map(bootstrap_frame_len).sum();
        if !outbound.bootstrap_fits(len, budget) {
            return self.defer_bootstrap(id, t, stream, bootstrap);
        }
        for frame in frames {
            self.send(id, &frame);
        }
    }

    /// `id` views `t` on `stream`, its bootstrap held back until its queue has drained: a
    /// paused stream, started over by [`Self::resume_paused_streams`]. None of the deferred
    /// generation's frames was sent, so no TOMBSTONE is owed for it.
    fn defer_bootstrap(
        &mut self,
        id: ConnId,
        t: LocalTerminal,
        stream: StreamId,
        bootstrap: phux_proto::ids::BootstrapId,
    ) {
        let Some(term) = self.terminals.get_mut(&t) else {
            return;
        };
        let seq = term.state.seq();
        term.viewers.insert(
            id,
            super::terminal::Viewer {
                stream,
                bootstrap,
                paused_at: Some(seq),
            },
        );
        if let Some(conn) = self.conns.get_mut(&id) {
            conn.pause(t);
        }
    }

    /// Streams paused for a slow reader start over once it has caught up (`paused`, from
    /// [`Connection::take_resumable`]).
    pub(super) fn resume_paused_streams(&mut self, id: ConnId, paused: Vec<LocalTerminal>) {
        let paused: Vec<(LocalTerminal, StreamId)> = paused
            .into_iter()
            .filter_map(|t| {
                let viewer = self.terminals.get(&t)?.viewers.get(&id)?;
                viewer.paused_at.map(|_| (t, viewer.stream))
            })
            .collect();
        for (t, stream) in paused {
            // [BOOTSTRAP.TOMBSTONE.4] A new bootstrap generation replaces the tombstoned one.
            self.start_bootstrap(id, t, stream);
        }
    }

    pub(super) fn on_pty_output(&mut self, terminal: LocalTerminal, bytes: &[u8]) {
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let Some(Chunk {
            seq,
            bells,
            new_title,
            replies,
        }) = t.ingest(bytes)
        else {
            // 2^64 output chunks cannot happen in practice; stop streaming if it ever does.
            return;
        };
        self.note_output(terminal, bytes.len());
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        if !replies.is_empty() && t.accepts_input() {
            // [OUTPUT.REPLY.2] The chunk's replies are one job of their own, queued behind
            // every earlier job: never inside an APPLY_INPUT batch.
            self.queue_job(terminal, replies, JobKind::Reply);
        }
        let Some(t) = self.terminals.get_mut(&terminal) else {
            return;
        };
        let mut viewers = std::mem::take(&mut self.viewer_scratch);
        viewers.clear();
        viewers.extend(t.viewers.iter().map(|(c, v)| (*c, *v)));
        let tid = TerminalId::from(terminal);
        let frame_len = bytes.len() + 64;
        // Two or more viewers share one encoding of the chunk, each adding only its stream
        // and bootstrap; a lone viewer's frame joins its other sends in one buffer.
        let shared = viewers
            .iter()
            .filter(|(_, v)| v.paused_at.is_none())
            .count()
            > 1;
        let mut head = None;
        let no_queue = Outbound::default();
        for &(conn, viewer) in &viewers {
            if viewer.paused_at.is_some() {
                continue;
            }
            let outbound = self
                .conns
                .get(&conn)
                .map_or(&no_queue, Connection::outbound);
            if !outbound.output_fits(frame_len, self.config.output_budget) {
                // [QUEUE.OUTPUT.1] A reader that falls too far behind loses this bootstrap of
                // its stream: a TOMBSTONE with the last seq it was sent, never a silent gap.
                let tombstone = self
                    .terminals
                    .get_mut(&terminal)
                    .and_then(|t| t.tombstone(conn, seq - 1));
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.pause(terminal);
                }
                if let Some(frame) = tombstone {
                    self.send(conn, &frame);
                }
                continue;
            }
            // [OUTPUT.SEQ.2] Live output carries contiguous seq numbers per bootstrap. The
            // chunk is encoded straight from the PTY's bytes, never copied into an owned
            // frame first.
            let out = TerminalOutputRef {
                terminal: &tid,
                seq,
                bytes,
                stream: viewer.stream,
                bootstrap: viewer.bootstrap,
            };
            if shared {
                let head = head
                    .get_or_insert_with(|| self.pool.head(|buf| out.encode_head(buf)))
                    .clone();
                self.send_shared(
                    conn,
                    SharedFrame {
                        head,
                        tail: out.tail(),
                    },
                );
            } else {
                self.send_encoded(conn, Budget::Output, |buf| out.encode(buf));
            }
        }
        self.viewer_scratch = viewers;
        // [EVENT.KIND.1] One bell per BEL, up to a bound per chunk so that a program ringing in
        // a loop cannot flood its subscribers into a control-queue overflow.
        for _ in 0..bells.min(MAX_BELLS_PER_CHUNK) {
            self.ring_bell(terminal);
        }
        if let Some(title) = new_title {
            // [EVENT.KIND.2] A new OSC 0/2 title is announced to event subscribers.
            let event = Frame::Event(EventFrame {
                terminal: Some(tid),
                event: AgentEvent::TitleChanged { title },
            });
            for conn in self.agent_event_listeners(terminal) {
                self.send(conn, &event);
            }
        }
    }

    pub(super) fn ring_bell(&mut self, terminal: LocalTerminal) {
        let Some(t) = self.terminals.get(&terminal) else {
            return;
        };
        let tid = TerminalId::from(terminal);
        let viewers: Vec<ConnId> = t.viewers.keys().copied().collect();
        let listeners = self.agent_event_listeners(terminal);
        // [EVENT.KIND.1] BELL to viewers, EVENT bell to event subscribers.
        for conn in viewers {
            self.send(
                conn,
                &Frame::Bell(Bell {
                    terminal: tid.clone(),
                }),
            );
        }
        let event = Frame::Event(EventFrame {
            terminal: Some(tid),
            event: AgentEvent::Bell,
        });
        for conn in listeners {
            self.send(conn, &event);
        }
    }
}
