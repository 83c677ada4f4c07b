//! The PTY reader: one thread that reads the masters of the terminals in a burst of output
//! while the loop feeds the engine and writes the clients ([OUTPUT.READER.1]).
//!
//! A PTY master hands out a few KiB per read, and the kernel refills it only after a read
//! (bench/README.md, "Reading the throughput figures"): whoever reads must read again soon, or
//! the program writing stalls. The loop cannot while it writes the sockets. So the loop reads a
//! master itself, as long as its reads are short (an echo, a prompt: no thread hop on the way to
//! the client), and hands the master to this thread at a bulk read, the sign of a burst. The
//! thread reads it into a bounded buffer of its own ([`HELD_BYTES`]) and wakes the loop, which
//! takes what the buffer holds and feeds it to the engine, in order. The thread gives the master
//! back once it has found it empty for [`RETURN_AFTER`], or at its end (EOF/EIO) after the last
//! byte.
//!
//! Ownership changes by handshake, so the two never read one master at once and no byte is
//! reordered: the loop stops reading (it deregisters the master from its poll) before it hands
//! the master over ([`Reader::take`]); the thread stops reading (it deregisters its own copy of
//! the descriptor and closes it) before it marks the master returned, and the loop reads it
//! again only after it has taken every byte the thread held ([`Reader::collect`]).
//!
//! A full buffer stops the thread reading that master ([OUTPUT.READER.2]): the program then
//! blocks, as it does when nobody reads; the loop's next [`Reader::collect`] resumes it. The
//! buffer exists only while the thread holds the master. The thread that fails (its poll, or a
//! panic) marks itself failed and wakes the loop, which takes every master back and reads them
//! itself from then on.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Poll, Token, Waker};
use tracing::error;

mod thread;

/// The most output the thread holds for one terminal before it stops reading that master
/// ([OUTPUT.READER.2]): what bounds the server's memory for a program that prints faster than
/// the loop takes it. Twice the engine's largest gathered chunk, so the thread reads on while
/// the loop feeds one.
pub(crate) const HELD_BYTES: usize = 64 * 1024;

/// How long the thread keeps a master it found empty before giving it back to the loop: a
/// burst's pauses (the program computing its next write) are shorter; a keystroke typed after
/// the burst then pays no thread hop.
pub(crate) const RETURN_AFTER: Duration = Duration::from_millis(5);

/// One read's buffer: a master hands out at most its line discipline's 4 KiB per read, and a
/// read is taken only while this much more fits under [`HELD_BYTES`].
const READ_BYTES: usize = 4096;

/// Reads of one master in a row before the thread turns to the next one.
const READS_PER_TURN: usize = 16;

/// The thread's own token for the loop's commands.
const COMMANDS: Token = Token(usize::MAX);

/// How one terminal's output ended, as the thread read it.
#[derive(Debug)]
pub(crate) enum End {
    /// Every holder of the slave closed it: no more output will come.
    Eof,
    /// The read failed.
    Failed(io::Error),
}

/// What [`Reader::collect`] found for one master, besides its bytes.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// The size of the last read among the bytes taken (0 when none were): the chunk is bulk
    /// output or the end of a burst as that read was.
    pub(crate) last_read: usize,
    /// The thread gave the master back (it found it empty): the loop reads it from now on.
    pub(crate) returned: bool,
    /// The output ended after the bytes taken; the thread no longer holds the master.
    pub(crate) end: Option<End>,
}

/// The loop's side of the reader thread. Not started until the first burst.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    /// The thread, once started.
    running: Option<Running>,
    /// The masters the thread holds (by the loop's token for each): those the loop must not
    /// read.
    held: HashSet<Token>,
    /// The thread failed (or could not start): the loop reads every master itself.
    failed: bool,
    /// The loop's scratch for [`Self::collect`]: kept for its capacity.
    pub(crate) bytes: Vec<u8>,
    /// The loop's scratch for [`Self::news`].
    pub(crate) news_list: Vec<Token>,
}

#[derive(Debug)]
struct Running {
    shared: Arc<Shared>,
    /// Wakes the thread for a command.
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when the thread gives a master back (see [`Reader::recall_all`]).
    returned: Condvar,
}

#[derive(Debug, Default)]
struct State {
    slots: HashMap<Token, Slot>,
    commands: Vec<Command>,
    /// The masters with something new for the loop (bytes, their return, their end), each
    /// listed once until the loop collects it.
    news: Vec<Token>,
    /// Why the thread stopped, once it has.
    failed: Option<String>,
}

/// One held master's output, between the thread and the loop.
#[derive(Debug, Default)]
struct Slot {
    bytes: Vec<u8>,
    last_read: usize,
    /// Listed in `news` and not collected since.
    noticed: bool,
    /// The loop is told once this much is read (the engine's chunk), or the master is found
    /// empty, full or ended.
    gather: usize,
    /// The buffer was full: the thread stopped reading until the loop takes its bytes.
    paused: bool,
    returned: bool,
    end: Option<End>,
}

#[derive(Debug)]
enum Command {
    /// Read this master (the thread's own descriptor of it) from now on.
    Take(Token, OwnedFd),
    /// The loop took the bytes of a full buffer: read on.
    Resume(Token),
    /// Give the master back now (an upgrade is about to take the image).
    Return(Token),
    /// The terminal is gone: drop the master and whatever it held.
    Forget(Token),
    Quit,
    /// Fail as a bug would (tests only).
    #[cfg(test)]
    Panic,
}

impl Reader {
    /// Whether the thread holds the master `token` names: the loop must not read it.
    pub(crate) fn holds(&self, token: Token) -> bool {
        self.held.contains(&token)
    }

    /// The masters the thread holds.
    pub(crate) fn held(&self) -> Vec<Token> {
        self.held.iter().copied().collect()
    }

    /// Whether the thread holds any master.
    pub(crate) fn holds_any(&self) -> bool {
        !self.held.is_empty()
    }

    /// Whether masters may be handed over: the thread has not failed.
    pub(crate) fn available(&self) -> bool {
        !self.failed
    }

    /// Hands `master` (the loop's token `token` for it, which the loop no longer reads) to the
    /// thread, starting it if need be with `wake` (built on the loop's poll: the thread wakes
    /// the loop with it). On an error nothing changed: the loop keeps reading the master.
    pub(crate) fn take(
        &mut self,
        token: Token,
        master: BorrowedFd<'_>,
        gather: usize,
        wake: impl FnOnce() -> io::Result<Waker>,
    ) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other("the reader thread failed"));
        }
        if self.running.is_none() {
            match Running::start(wake) {
                Ok(running) => self.running = Some(running),
                Err(e) => {
                    error!(error = %e, "cannot start the PTY reader thread; reading in the loop");
                    self.failed = true;
                    return Err(e);
                }
            }
        }
        let own = rustix::io::fcntl_dupfd_cloexec(master, 0)?;
        let Some(running) = self.running.as_ref() else {
            return Err(io::Error::other("no reader thread"));
        };
        {
            let mut state = running.shared.lock();
            state.slots.insert(
                token,
                Slot {
                    gather,
                    ..Slot::default()
                },
            );
            state.commands.push(Command::Take(token, own));
        }
        running.wake();
        self.held.insert(token);
        Ok(())
    }

    /// Takes the bytes the thread read from `token`'s master into `out` (appended, in order),
    /// and says whether it gave the master back or the output ended. A full buffer's master is
    /// read on from here. Once returned or ended, the thread no longer holds the master.
    /// `gather`: the engine's chunk for this terminal now.
    pub(crate) fn collect(&mut self, token: Token, out: &mut Vec<u8>, gather: usize) -> Collected {
        let Some(running) = self.running.as_ref() else {
            return Collected::default();
        };
        let mut resume = false;
        let collected = {
            let mut state = running.shared.lock();
            let Some(slot) = state.slots.get_mut(&token) else {
                return Collected::default();
            };
            slot.noticed = false;
            slot.gather = gather;
            if out.is_empty() {
                // The slot keeps `out`'s capacity: no allocation from one collect to the next.
                std::mem::swap(&mut slot.bytes, out);
            } else {
                out.append(&mut slot.bytes);
            }
            let last_read = std::mem::take(&mut slot.last_read);
            if slot.paused && slot.end.is_none() && !slot.returned {
                slot.paused = false;
                state.commands.push(Command::Resume(token));
                resume = true;
            }
            let Some(slot) = state.slots.get_mut(&token) else {
                return Collected::default();
            };
            let (returned, end) = (slot.returned, slot.end.take());
            if returned || end.is_some() {
                state.slots.remove(&token);
                self.held.remove(&token);
            }
            Collected {
                last_read,
                returned,
                end,
            }
        };
        if resume {
            running.wake();
        }
        collected
    }

    /// The masters with something new since their last [`Self::collect`], appended to `out`.
    /// Returns whether the thread failed meanwhile: see [`Self::abandon`].
    pub(crate) fn news(&mut self, out: &mut Vec<Token>) -> bool {
        let Some(running) = self.running.as_ref() else {
            return self.failed;
        };
        let mut state = running.shared.lock();
        out.append(&mut state.news);
        if let Some(why) = &state.failed {
            if !self.failed {
                error!(why, "the PTY reader thread failed; reading in the loop");
            }
            self.failed = true;
        }
        self.failed
    }

    /// The thread failed: every master it held, with the bytes it had read, goes back to the
    /// loop. The thread reads nothing any more (it marks itself failed after closing its
    /// descriptors).
    pub(crate) fn abandon(&mut self) -> Vec<(Token, Vec<u8>)> {
        let mut back = Vec::new();
        if let Some(running) = self.running.as_ref() {
            let mut state = running.shared.lock();
            for token in self.held.drain() {
                let bytes = state
                    .slots
                    .remove(&token)
                    .map(|s| s.bytes)
                    .unwrap_or_default();
                back.push((token, bytes));
            }
        }
        self.held.clear();
        back
    }

    /// The terminal `token` names is gone: the thread drops its master and what it held.
    pub(crate) fn forget(&mut self, token: Token) {
        if !self.held.remove(&token) {
            return;
        }
        if let Some(running) = self.running.as_ref() {
            {
                let mut state = running.shared.lock();
                state.slots.remove(&token);
                state.commands.push(Command::Forget(token));
            }
            running.wake();
        }
    }

    /// Asks the thread to give every master back and waits until it has, at most `bound`
    /// (the thread only waits in its poll, which the command ends). Returns whether it did (or
    /// failed): [`Self::collect`] then returns each master, with its last bytes.
    pub(crate) fn recall_all(&mut self, bound: Duration) -> bool {
        let Some(running) = self.running.as_ref() else {
            return true;
        };
        if self.held.is_empty() {
            return true;
        }
        let until = Instant::now() + bound;
        let mut state = running.shared.lock();
        for &token in &self.held {
            state.commands.push(Command::Return(token));
        }
        running.wake();
        loop {
            let done = state.failed.is_some()
                || self.held.iter().all(|t| {
                    state
                        .slots
                        .get(t)
                        .is_none_or(|s| s.returned || s.end.is_some())
                });
            let now = Instant::now();
            if done || now >= until {
                return done;
            }
            state = running
                .shared
                .returned
                .wait_timeout(state, until - now)
                .map_or_else(|e| e.into_inner().0, |(s, _)| s);
        }
    }

    #[cfg(test)]
    fn crash(&self) {
        if let Some(running) = self.running.as_ref() {
            running.shared.lock().commands.push(Command::Panic);
            running.wake();
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            running.shared.lock().commands.push(Command::Quit);
            running.wake();
            if let Some(thread) = running.thread.take() {
                // It ends at the command: it waits nowhere else.
                let _ = thread.join();
            }
        }
    }
}

impl Running {
    fn start(wake: impl FnOnce() -> io::Result<Waker>) -> io::Result<Self> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), COMMANDS)?);
        let shared = Arc::new(Shared::default());
        let loop_waker = wake()?;
        let thread = std::thread::Builder::new()
            .name("phux-pty-reader".to_owned())
            .spawn({
                let shared = Arc::clone(&shared);
                move || thread::run(poll, shared, loop_waker)
            })?;
        Ok(Self {
            shared,
            waker,
            thread: Some(thread),
        })
    }

    fn wake(&self) {
        if let Err(e) = self.waker.wake() {
            // The thread then learns of the command at its next wake-up (another master's
            // output); the loop carries on.
            error!(error = %e, "cannot wake the PTY reader thread");
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere leaves consistent state: each critical section is a few field
        // updates.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
