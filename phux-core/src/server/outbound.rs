//! The outbound budgets, in one place: what each connection has queued and not yet sent,
//! counted against its two budgets ([QUEUE.BOUND.1]: [`Outbound`] decides when output is
//! tombstoned, when a bootstrap waits, when a paused stream starts over and when a control
//! overflow detaches), and which connection the server-wide budget sheds ([SERVER.LIMIT.5],
//! [`heaviest_over`]). The numbers are the [`ServerConfig`](super::ServerConfig)'s; a
//! `Connection` queues its own frames, and the engine sheds what this decides.

use std::collections::VecDeque;

use phux_proto::Frame;

/// Which budget a queued frame counts against ([QUEUE.BOUND.1]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub(super) enum Budget {
    /// TERMINAL_OUTPUT and BOOTSTRAP_BEGIN / CHUNK / READY: may be tombstoned.
    Output,
    /// Everything else: never dropped; overflow detaches the client.
    Control,
}

/// Unsent bytes in queue order, so the driver's `Sent{n}` reports (which know nothing of
/// frames) can be charged back to the right budget.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Outbound {
    segments: VecDeque<(Budget, usize)>,
    output: usize,
    control: usize,
}

impl Budget {
    /// The budget `frame` counts against.
    pub(super) fn of(frame: &Frame) -> Self {
        match frame {
            Frame::TerminalOutput(_)
            | Frame::BootstrapBegin(_)
            | Frame::BootstrapChunk(_)
            | Frame::BootstrapReady(_) => Self::Output,
            _ => Self::Control,
        }
    }
}

impl Outbound {
    /// [QUEUE.CONTROL.2] Control frames are never dropped; a client that lets them pile up
    /// past the budget is detached instead of growing server memory. A frame is judged by what
    /// is queued ahead of it ([QUEUE.BOUND.1]'s "one frame"), so a reply larger than the whole
    /// budget (a big screen with its scrollback) reaches a client that reads. Asked before the
    /// frame is queued.
    pub(super) fn control_overflows(&self, budget: Budget, control_budget: usize) -> bool {
        budget == Budget::Control && self.control > control_budget
    }

    /// [QUEUE.OUTPUT.1] Whether live output of `frame_len` bytes fits the output budget; a
    /// reader it does not fit has fallen too far behind, and its stream is tombstoned.
    pub(super) fn output_fits(&self, frame_len: usize, output_budget: usize) -> bool {
        self.output + frame_len <= output_budget
    }

    /// [QUEUE.BOOTSTRAP.1] Whether a bootstrap waits without being built: the queue is past
    /// the mark a paused stream resumes at, so a client that re-ATTACHes without reading costs
    /// neither memory nor a synthesis per request.
    pub(super) fn bootstrap_waits(&self, output_budget: usize) -> bool {
        self.output > output_budget / 2
    }

    /// [QUEUE.BOOTSTRAP.1] Whether a bootstrap of `len` bytes, once built, fits: one larger
    /// than the whole budget still reaches a connection with nothing queued ahead of it
    /// ([QUEUE.BOUND.1]'s one frame).
    pub(super) fn bootstrap_fits(&self, len: usize, output_budget: usize) -> bool {
        self.output == 0 || self.output + len <= output_budget
    }

    /// [BOOTSTRAP.TOMBSTONE.4] Whether a tombstoned stream may start over: the queue has
    /// drained to half the output budget.
    pub(super) fn may_resume(&self, output_budget: usize) -> bool {
        self.output <= output_budget / 2
    }

    pub(super) fn push(&mut self, budget: Budget, len: usize) {
        match self.segments.back_mut() {
            Some((b, n)) if *b == budget => *n += len,
            _ => self.segments.push_back((budget, len)),
        }
        *self.counter(budget) += len;
    }

    pub(super) fn sent(&mut self, mut bytes: usize) {
        while bytes > 0 {
            let Some((budget, len)) = self.segments.front_mut() else {
                return;
            };
            let take = bytes.min(*len);
            *len -= take;
            bytes -= take;
            let budget = *budget;
            if *len == 0 {
                self.segments.pop_front();
            }
            let counter = self.counter(budget);
            *counter = counter.saturating_sub(take);
        }
    }

    pub(super) fn total(&self) -> usize {
        self.output + self.control
    }

    fn counter(&mut self, budget: Budget) -> &mut usize {
        match budget {
            Budget::Output => &mut self.output,
            Budget::Control => &mut self.control,
        }
    }
}

/// The most bytes of a terminal's output a driver gathers into one chunk from several PTY reads
/// (see [`gather_limit`]): a few of the master's 4 KiB reads, a handful of the viewers' frames
/// in one, well under any output budget.
pub(super) const GATHER_CAP: usize = 32 * 1024;

/// [OUTPUT.GATHER.1] How many bytes of a terminal's output a driver may gather from several
/// PTY reads into one chunk, given each live viewer's negotiated `max_chunk_bytes`: at most
/// the smallest of them, and [`GATHER_CAP`]. Only reads that found the PTY full are gathered
/// (more is on its way), and bulk output is held for more to join it anyway, so a chunk
/// gathered from them reaches no viewer later than its first read would have, and costs the
/// viewers and the server one frame instead of several; a read that empties the PTY (an echo,
/// a prompt, the end of a burst) ends the chunk and goes at once. With no live viewer the chunk
/// only feeds the screen model, and fewer, larger chunks cost it less.
pub(super) fn gather_limit(max_chunks: impl Iterator<Item = u32>) -> usize {
    max_chunks.fold(GATHER_CAP, |limit, max_chunk| limit.min(max_chunk as usize))
}

/// [SERVER.LIMIT.5] While the bytes held by the open connections (queued for them, and
/// received from them but not yet framed), `(id, held)` each, pass the server-wide `budget`:
/// the one holding the most, to be failed first. Closed connections' queues are freed by
/// their close bound (their unframed bytes at once); only open ones can still grow.
pub(super) fn heaviest_over<I>(open: I, budget: usize) -> Option<I::Item>
where
    I: Iterator<Item = (super::ConnId, usize)> + Clone,
{
    let held: usize = open.clone().map(|(_, held)| held).sum();
    if held <= budget {
        return None;
    }
    open.max_by_key(|&(_, held)| held)
}
