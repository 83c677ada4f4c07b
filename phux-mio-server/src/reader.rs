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
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use tracing::{debug, error};

use crate::pty::{PtyMaster, PtyRead};

/// The most output the thread holds for one terminal before it stops reading that master
/// ([OUTPUT.READER.2]): what bounds the server's memory for a program that prints faster than
/// the loop takes it. Twice the engine's largest gathered chunk, so the thread reads on while
/// the loop feeds one.
pub(crate) const HELD_BYTES: usize = 64 * 1024;

/// How long the thread keeps a master it found empty before giving it back to the loop: a
/// burst's pauses (the program computing its next write) are shorter; a keystroke typed after
/// the burst then pays no thread hop.
pub(crate) const RETURN_AFTER: Duration = Duration::from_millis(5);

/// One read's buffer: a master hands out at most its line discipline's 4 KiB per read.
const READ_BYTES: usize = 16 * 1024;

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
                move || run(poll, shared, loop_waker)
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

/// The thread's own state.
struct Thread {
    poll: Poll,
    shared: Arc<Shared>,
    /// Wakes the loop: something is new for it.
    loop_waker: Arc<Waker>,
    masters: HashMap<Token, PtyMaster>,
    /// Masters with bytes to read (an event came, or a read was cut short), in turn.
    ready: Vec<Token>,
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
fn run(poll: Poll, shared: Arc<Shared>, loop_waker: Waker) {
    let loop_waker = Arc::new(loop_waker);
    let mut guard = FailGuard {
        shared: Arc::clone(&shared),
        loop_waker: Arc::clone(&loop_waker),
        armed: true,
    };
    let mut thread = Thread::new(poll, shared, loop_waker);
    let outcome = thread.serve();
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
            if !self.commands()? {
                return Ok(());
            }
            self.read_ready();
            self.return_idle();
        }
    }

    /// Performs the loop's commands. Returns `false` at `Quit`.
    fn commands(&mut self) -> io::Result<bool> {
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
                Command::Quit => return Ok(false),
                #[cfg(test)]
                Command::Panic => panic!("the reader thread fails (test)"),
            }
        }
        Ok(true)
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
                    let full = slot.bytes.len() + FULL_MARGIN > HELD_BYTES;
                    slot.paused = full;
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

/// A read is taken only while one more fits under [`HELD_BYTES`].
const FULL_MARGIN: usize = 4096;

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP: Token = Token(7);
    const MASTER: Token = Token(11);

    /// A reader started on a poll of the test's own, holding one fresh PTY's master.
    fn held_pty() -> (Poll, Reader, PtyMaster, OwnedFd) {
        let poll = Poll::new().expect("poll");
        let (master, slave) = PtyMaster::open(80, 24).expect("pty");
        // Raw, so the bytes come back as written.
        let mut t = rustix::termios::tcgetattr(&slave).expect("tcgetattr");
        t.make_raw();
        rustix::termios::tcsetattr(&slave, rustix::termios::OptionalActions::Now, &t)
            .expect("tcsetattr");
        let mut reader = Reader::default();
        reader
            .take(MASTER, master.as_fd(), 4096, || {
                Waker::new(poll.registry(), LOOP)
            })
            .expect("take");
        assert!(reader.holds(MASTER));
        (poll, reader, master, slave)
    }

    /// Waits for the thread's wake-up and collects, until `done` says so.
    fn collect_until(
        poll: &mut Poll,
        reader: &mut Reader,
        got: &mut Vec<u8>,
        mut done: impl FnMut(&Collected, &[u8]) -> bool,
    ) -> Collected {
        let mut events = Events::with_capacity(4);
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < until, "no news from the reader thread");
            poll.poll(&mut events, Some(Duration::from_millis(50)))
                .expect("poll");
            let mut news = Vec::new();
            assert!(!reader.news(&mut news), "the thread failed");
            let c = reader.collect(MASTER, got, 4096);
            if done(&c, got) {
                return c;
            }
        }
    }

    // [OUTPUT.READER.1] [OUTPUT.READER.2]
    #[test]
    fn a_held_master_is_read_in_order_within_its_bound_and_given_back_when_empty() {
        let (mut poll, mut reader, master, slave) = held_pty();
        let expected: Vec<u8> = (0..4 * HELD_BYTES).map(|i| (i % 251) as u8).collect();
        let stream = expected.clone();
        let writer = std::thread::spawn(move || {
            for piece in stream.chunks(10_000) {
                rustix::io::write(&slave, piece).expect("write");
            }
            slave
        });
        let mut got = Vec::new();
        let mut before = 0;
        collect_until(&mut poll, &mut reader, &mut got, |c, got| {
            // What one collect takes is at most the bound: the thread stopped reading there.
            assert!(
                got.len() - before <= HELD_BYTES,
                "{} held",
                got.len() - before
            );
            before = got.len();
            c.returned
        });
        assert!(!reader.holds(MASTER), "given back once found empty");
        // A writer slower than the thread's patience: the rest is the master's, in order.
        let until = Instant::now() + Duration::from_secs(20);
        let mut buf = [0; 4096];
        while got.len() < expected.len() {
            assert!(
                Instant::now() < until,
                "bytes lost: {} of {}",
                got.len(),
                expected.len()
            );
            match master.read(&mut buf).expect("read") {
                PtyRead::Data(n) => got.extend_from_slice(&buf[..n]),
                PtyRead::WouldBlock => std::thread::sleep(Duration::from_millis(1)),
                PtyRead::Eof => panic!("ended"),
            }
        }
        let _slave = writer.join().expect("writer");
        assert_eq!(got, expected);
    }

    // [OUTPUT.READER.1]
    #[test]
    fn the_end_comes_after_the_last_byte() {
        let (mut poll, mut reader, _master, slave) = held_pty();
        rustix::io::write(&slave, b"last words").expect("write");
        drop(slave);
        let mut got = Vec::new();
        let c = collect_until(&mut poll, &mut reader, &mut got, |c, _| c.end.is_some());
        assert!(matches!(c.end, Some(End::Eof)));
        assert_eq!(got, b"last words");
        assert!(!reader.holds(MASTER));
    }

    // [OUTPUT.READER.3]
    #[test]
    fn a_recall_gives_every_master_back_with_its_bytes() {
        let (_poll, mut reader, master, slave) = held_pty();
        rustix::io::write(&slave, b"before the image").expect("write");
        assert!(reader.recall_all(Duration::from_secs(20)));
        let mut got = Vec::new();
        let c = reader.collect(MASTER, &mut got, 4096);
        assert!(c.returned);
        assert!(!reader.holds_any());
        // What the thread had not read yet is still the master's, for the loop to read.
        let until = Instant::now() + Duration::from_secs(20);
        let mut buf = [0; 64];
        while got.len() < 16 {
            assert!(Instant::now() < until, "bytes lost: {got:?}");
            match master.read(&mut buf).expect("read") {
                PtyRead::Data(n) => got.extend_from_slice(&buf[..n]),
                PtyRead::WouldBlock => std::thread::sleep(Duration::from_millis(5)),
                PtyRead::Eof => panic!("ended"),
            }
        }
        assert_eq!(got, b"before the image");
    }

    // [OUTPUT.READER.4]
    #[test]
    fn a_failed_thread_gives_its_masters_up_and_takes_no_more() {
        let (mut poll, mut reader, master, _slave) = held_pty();
        reader.crash();
        let mut events = Events::with_capacity(4);
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            assert!(Instant::now() < until, "the failure was not reported");
            poll.poll(&mut events, Some(Duration::from_millis(50)))
                .expect("poll");
            if reader.news(&mut Vec::new()) {
                break;
            }
        }
        let back = reader.abandon();
        assert_eq!(back.len(), 1);
        assert!(!reader.holds_any());
        assert!(!reader.available());
        let taken = reader.take(MASTER, master.as_fd(), 4096, || {
            unreachable!("not restarted")
        });
        assert!(taken.is_err());
    }
}
