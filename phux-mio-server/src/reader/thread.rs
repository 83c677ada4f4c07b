//! The reader thread itself: its poll over the masters it holds, its reads into each one's
//! bounded buffer, and the masters it gives back.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use tracing::{debug, error};

use super::{COMMANDS, Command, End, HELD_BYTES, READ_BYTES, READS_PER_TURN, RETURN_AFTER, Shared};
use crate::pty::{PtyMaster, PtyRead};

/// The thread's own state.
struct Thread {
    poll: Poll,
    shared: Arc<Shared>,
    /// Wakes the loop: something is new for it.
    loop_waker: Arc<Waker>,
    masters: HashMap<Token, PtyMaster>,
    /// Masters with bytes to read (an event came, or a read was cut short), in turn.
    ready: Vec<Token>,
    /// Masters whose buffer is full ([OUTPUT.READER.2]): not read, whatever their readiness
    /// says, until the loop has taken the bytes (`Resume`).
    full: HashSet<Token>,
    /// Masters found empty, and since when: given back at [`RETURN_AFTER`].
    empty: HashMap<Token, Instant>,
    buf: Vec<u8>,
}

/// Marks the thread failed when it ends other than by `Quit` (a panic included) and wakes the
/// loop. Made before the thread's state, so dropped after it: its descriptors are closed by
/// then.
struct FailGuard {
    shared: Arc<Shared>,
    loop_waker: Arc<Waker>,
    armed: bool,
}

impl Drop for FailGuard {
    fn drop(&mut self) {
        if self.armed {
            let why = if std::thread::panicking() {
                "the thread panicked"
            } else {
                "its poll failed"
            };
            self.shared.lock().failed = Some(why.to_owned());
            self.shared.returned.notify_all();
            let _ = self.loop_waker.wake();
        }
    }
}

/// The thread's body.
pub(super) fn run(poll: Poll, shared: Arc<Shared>, loop_waker: Waker) {
    let loop_waker = Arc::new(loop_waker);
    let mut guard = FailGuard {
        shared: Arc::clone(&shared),
        loop_waker: Arc::clone(&loop_waker),
        armed: true,
    };
    let mut thread = Thread::new(poll, shared, loop_waker);
    // The server's signals go to the loop's thread ([SERVER.UPGRADE.EXEC.9]).
    let outcome = crate::signals::block_in_this_thread().and_then(|()| thread.serve());
    drop(thread);
    match outcome {
        Ok(()) => guard.armed = false,
        Err(e) => error!(error = %e, "the PTY reader thread stopped"),
    }
}

impl Thread {
    fn new(poll: Poll, shared: Arc<Shared>, loop_waker: Arc<Waker>) -> Self {
        Self {
            poll,
            shared,
            loop_waker,
            masters: HashMap::new(),
            ready: Vec::new(),
            full: HashSet::new(),
            empty: HashMap::new(),
            buf: vec![0; READ_BYTES],
        }
    }

    fn serve(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        loop {
            let timeout = if self.ready.is_empty() {
                self.next_return()
            } else {
                Some(Duration::ZERO)
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            for event in &events {
                let token = event.token();
                if token != COMMANDS && self.masters.contains_key(&token) {
                    self.empty.remove(&token);
                    if !self.ready.contains(&token) {
                        self.ready.push(token);
                    }
                }
            }
            if !self.commands() {
                return Ok(());
            }
            self.read_ready();
            self.return_idle();
        }
    }

    /// Performs the loop's commands. Returns `false` at `Quit`.
    fn commands(&mut self) -> bool {
        let commands = std::mem::take(&mut self.shared.lock().commands);
        for command in commands {
            match command {
                Command::Take(token, fd) => {
                    let master = PtyMaster::adopt(fd);
                    let raw = master.as_fd().as_raw_fd();
                    if let Err(e) = self.poll.registry().register(
                        &mut SourceFd(&raw),
                        token,
                        Interest::READABLE,
                    ) {
                        // Given back at once: the loop reads it as before.
                        debug!(error = %e, "cannot watch a master; giving it back");
                        drop(master);
                        self.give_back(token);
                        continue;
                    }
                    self.masters.insert(token, master);
                    // Whatever it holds already is read now: no event may come for it.
                    self.ready.push(token);
                }
                Command::Resume(token) => {
                    self.full.remove(&token);
                    if self.masters.contains_key(&token) && !self.ready.contains(&token) {
                        self.ready.push(token);
                    }
                }
                Command::Return(token) => {
                    if self.masters.contains_key(&token) {
                        self.release(token);
                        self.give_back(token);
                    }
                }
                Command::Forget(token) => self.release(token),
                Command::Quit => return false,
                #[cfg(test)]
                Command::Panic => panic!("the reader thread fails (test)"),
            }
        }
        true
    }

    /// Reads each ready master in turn, a few reads each; those cut short stay ready.
    fn read_ready(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        ready.retain(|&token| self.read_master(token));
        self.ready = ready;
    }

    /// Reads `token`'s master up to [`READS_PER_TURN`] times. Returns whether it is still
    /// ready (cut short with more to read).
    fn read_master(&mut self, token: Token) -> bool {
        if self.full.contains(&token) {
            return false;
        }
        for _ in 0..READS_PER_TURN {
            let Some(master) = self.masters.get(&token) else {
                return false;
            };
            let read = master.read(&mut self.buf);
            let empty = matches!(read, Ok(PtyRead::WouldBlock));
            let mut state = self.shared.lock();
            let Some(slot) = state.slots.get_mut(&token) else {
                drop(state);
                // Forgotten meanwhile.
                self.release(token);
                return false;
            };
            let (end, ready, due) = match read {
                Ok(PtyRead::Data(n)) => {
                    slot.bytes
                        .extend_from_slice(self.buf.get(..n).unwrap_or_default());
                    slot.last_read = n;
                    // [OUTPUT.READER.2] Full: no more reads until the loop takes them.
                    let full = slot.bytes.len() + READ_BYTES > HELD_BYTES;
                    slot.paused = full;
                    if full {
                        self.full.insert(token);
                    }
                    // [OUTPUT.GATHER.1] The loop hears of a chunk's worth, not of each read.
                    (None, !full, full || slot.bytes.len() >= slot.gather)
                }
                // [OUTPUT.GATHER.2] Found empty: what it holds goes now.
                Ok(PtyRead::WouldBlock) => (None, false, !slot.bytes.is_empty()),
                Ok(PtyRead::Eof) => (Some(End::Eof), false, true),
                Err(e) => (Some(End::Failed(e)), false, true),
            };
            let ended = end.is_some();
            if ended {
                slot.end = end;
            }
            let wake = due && !std::mem::replace(&mut slot.noticed, true);
            if wake {
                state.news.push(token);
            }
            drop(state);
            if ended {
                self.release(token);
            } else if empty {
                self.empty.insert(token, Instant::now());
            }
            if wake {
                self.wake_loop();
            }
            if !ready {
                return false;
            }
        }
        true
    }

    /// Gives back the masters found empty for [`RETURN_AFTER`].
    fn return_idle(&mut self) {
        let now = Instant::now();
        let due: Vec<Token> = self
            .empty
            .iter()
            .filter(|&(_, &since)| now.duration_since(since) >= RETURN_AFTER)
            .map(|(&t, _)| t)
            .collect();
        for token in due {
            self.release(token);
            self.give_back(token);
        }
    }

    /// The time until the next master found empty is due to go back.
    fn next_return(&self) -> Option<Duration> {
        let now = Instant::now();
        self.empty
            .values()
            .map(|&since| (since + RETURN_AFTER).saturating_duration_since(now))
            .min()
    }

    /// Stops reading `token`'s master: out of the poll, its descriptor closed.
    fn release(&mut self, token: Token) {
        self.empty.remove(&token);
        self.full.remove(&token);
        self.ready.retain(|&t| t != token);
        if let Some(master) = self.masters.remove(&token) {
            let raw = master.as_fd().as_raw_fd();
            let _ = self.poll.registry().deregister(&mut SourceFd(&raw));
        }
    }

    /// Tells the loop it reads `token`'s master again (once it has taken the bytes before).
    fn give_back(&mut self, token: Token) {
        let wake = {
            let mut state = self.shared.lock();
            match state.slots.get_mut(&token) {
                Some(slot) => {
                    slot.returned = true;
                    let wake = !std::mem::replace(&mut slot.noticed, true);
                    if wake {
                        state.news.push(token);
                    }
                    wake
                }
                None => false,
            }
        };
        self.shared.returned.notify_all();
        if wake {
            self.wake_loop();
        }
    }

    fn wake_loop(&self) {
        if let Err(e) = self.loop_waker.wake() {
            error!(error = %e, "cannot wake the loop");
        }
    }
}
