//! A terminal's output to its viewers: ATTACH, bootstraps, live output fanned out within
//! each viewer's budget (tombstoned when it falls behind), and bells.

use phux_proto::command::CommandResult;
use phux_proto::event::AgentEvent;
use phux_proto::frame::{Bell, EventFrame, TerminalClosed, TerminalOutputRef, TombstoneReason};
use phux_proto::ids::StreamId;
use phux_proto::{ErrorCode, Frame, TerminalId};

use super::connection::Connection;
use super::outbound::{Budget, Outbound};
use super::terminal::{Chunk, Delivery, JobKind};
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

impl ServerEngine {
    pub(super) fn cmd_attach(&mut self, id: ConnId, rid: u32, terminal: &TerminalId) {
        let t = match self.lookup_view(terminal) {
            Ok(t) if self.remains.contains(t) => return self.attach_remains(id, rid, t),
            Ok(t) => t,
            Err(e) => return self.send_lookup_error(id, rid, &e),
        };
        // [TERMINAL.ATTACH.3] Re-attaching ends the current bootstrap and starts a new one
        // on the same stream.
        let old = self
            .terminals
            .get_mut(&t)
            .and_then(|term| term.reattach(id, TombstoneReason::ExplicitReattach));
        let stream = match old {
            Some((stream, tombstone)) => {
                if let Some(frame) = tombstone {
                    self.send(id, &frame);
                }
                stream
            }
            None => self.allocate_stream(),
        };
        // [SERVER.SIZE.1] Sized for every viewer, this one included, before its bootstrap is
        // built.
        self.fit_to_viewports(t, Some(id));
        self.start_bootstrap(id, t, stream);
        self.send_result(id, rid, CommandResult::Ok);
    }

    /// [TERMINAL.REMAIN.3] ATTACH_TERMINAL of an exited terminal kept for its screen: the
    /// bootstrap of its last screen, OK, then its TERMINAL_CLOSED again; `id` is not left
    /// viewing it.
    fn attach_remains(&mut self, id: ConnId, rid: u32, t: LocalTerminal) {
        let stream = self.allocate_stream();
        let bootstrap = self.allocate_bootstrap();
        let (Some(conn), Some(term)) = (self.conns.get(&id), self.remains.get_mut(t)) else {
            return;
        };
        let chunk_limit = conn.max_chunk().get() as usize;
        let frames = term.bootstrap(id, stream, bootstrap, chunk_limit);
        term.retire();
        let closed = Frame::TerminalClosed(TerminalClosed {
            terminal: TerminalId::from(t),
            exit_status: term.exit_status(),
        });
        let len: usize = frames.iter().map(bootstrap_frame_len).sum();
        // [QUEUE.BOOTSTRAP.1] A queue with no room gets no screen, and no stream to resume:
        // the client asks again.
        if !conn
            .outbound()
            .bootstrap_fits(len, self.config.output_budget)
        {
            return self.send_error_result(
                id,
                rid,
                ErrorCode::RESOURCE_EXHAUSTED,
                "the connection's output queue is full; attach again once it drains",
            );
        }
        for frame in frames {
            self.send(id, &frame);
        }
        self.send_result(id, rid, CommandResult::Ok);
        self.send(id, &closed);
    }

    /// BOOTSTRAP_BEGIN, CHUNKs and READY rebuilding the screen, then live output follows; or,
    /// when the connection's queue has no room for it, `id` views `t` on a paused stream whose
    /// bootstrap waits for the queue to drain ([QUEUE.BOOTSTRAP.1]), started over by
    /// [`Self::resume_paused_streams`].
    pub(super) fn start_bootstrap(&mut self, id: ConnId, t: LocalTerminal, stream: StreamId) {
        let bootstrap = self.allocate_bootstrap();
        let (Some(conn), Some(term)) = (self.conns.get_mut(&id), self.terminals.get_mut(&t)) else {
            return;
        };
        let chunk_limit = conn.max_chunk().get() as usize;
        let budget = self.config.output_budget;
        // [QUEUE.BOOTSTRAP.1] Judged before the payload is built, and again once its size is
        // known.
        let frames = if conn.outbound().bootstrap_waits(budget) {
            None
        } else {
            let frames = term.bootstrap(id, stream, bootstrap, chunk_limit);
            let len: usize = frames.iter().map(bootstrap_frame_len).sum();
            conn.outbound()
                .bootstrap_fits(len, budget)
                .then_some(frames)
        };
        let Some(frames) = frames else {
            term.defer_bootstrap(id, stream, bootstrap);
            conn.pause(t);
            return;
        };
        for frame in frames {
            self.send(id, &frame);
        }
    }

    /// Streams paused for a slow reader start over once it has caught up (`paused`, from
    /// [`Connection::take_resumable`]).
    pub(super) fn resume_paused_streams(&mut self, id: ConnId, paused: Vec<LocalTerminal>) {
        let paused: Vec<(LocalTerminal, StreamId)> = paused
            .into_iter()
            .filter_map(|t| Some((t, self.terminals.get(&t)?.paused_stream(id)?)))
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
        // [SERVER.LIMIT.6] Measured after every chunk (its history grew, or dropped rows);
        // the budget is enforced below when that changed what it holds.
        let measured = t.measure();
        if !replies.is_empty()
            && t.accepts_input()
            // [OUTPUT.REPLY.2] The chunk's replies are one job of their own, queued behind
            // every earlier job: never inside an APPLY_INPUT batch.
            && let Some(write) = t.queue_job(
                &mut self.next_job,
                self.config.max_jobs_per_terminal,
                self.upgrade.is_some(),
                replies,
                JobKind::Reply,
            )
        {
            self.actions.push_back(write);
        }
        let frame_len = bytes.len() + 64;
        let budget = self.config.output_budget;
        let conns = &self.conns;
        let no_queue = Outbound::default();
        let mut deliveries = std::mem::take(&mut self.fanout_scratch);
        // Two or more live viewers share one encoding of the chunk, each adding only its
        // stream and bootstrap; a lone viewer's frame joins its other sends in one buffer.
        let shared = t.fan_out(
            seq,
            |conn| {
                conns
                    .get(&conn)
                    .map_or(&no_queue, Connection::outbound)
                    .output_fits(frame_len, budget)
            },
            &mut deliveries,
        );
        // Who hears of the bells and the title, read while the terminal is at hand.
        let (viewers, subscribers) = if bells > 0 || new_title.is_some() {
            (t.viewer_ids(), t.agent_subscribers().collect())
        } else {
            (Vec::new(), Vec::new())
        };
        let tid = TerminalId::from(terminal);
        let mut head = None;
        for (conn, delivery) in &deliveries {
            let conn = *conn;
            let (stream, bootstrap) = match delivery {
                Delivery::Tombstone(frame) => {
                    // [QUEUE.OUTPUT.1] Its stream waits to start over.
                    if let Some(c) = self.conns.get_mut(&conn) {
                        c.pause(terminal);
                    }
                    self.send(conn, frame);
                    continue;
                }
                Delivery::Output { stream, bootstrap } => (*stream, *bootstrap),
            };
            // [OUTPUT.SEQ.2] Live output carries contiguous seq numbers per bootstrap. The
            // chunk is encoded straight from the PTY's bytes, never copied into an owned
            // frame first.
            let out = TerminalOutputRef {
                terminal: &tid,
                seq,
                bytes,
                stream,
                bootstrap,
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
        self.fanout_scratch = deliveries;
        if measured {
            self.enforce_models_budget();
        }
        if bells == 0 && new_title.is_none() {
            return;
        }
        let listeners = Self::merge_listeners(self.server_subscribers(), subscribers);
        // [EVENT.KIND.1] BELL to viewers, EVENT bell to event subscribers, once per bell rung
        // (the chunk's bells are bounded by the terminal).
        for _ in 0..bells {
            for &conn in &viewers {
                self.send(
                    conn,
                    &Frame::Bell(Bell {
                        terminal: tid.clone(),
                    }),
                );
            }
            let event = Frame::Event(EventFrame {
                terminal: Some(tid.clone()),
                event: AgentEvent::Bell,
            });
            for &conn in &listeners {
                self.send(conn, &event);
            }
        }
        if let Some(title) = new_title {
            // [EVENT.KIND.2] A new OSC 0/2 title is announced to event subscribers.
            let event = Frame::Event(EventFrame {
                terminal: Some(tid),
                event: AgentEvent::TitleChanged { title },
            });
            for &conn in &listeners {
                self.send(conn, &event);
            }
        }
    }
}
