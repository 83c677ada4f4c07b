//! The reader thread against real PTYs: order, bound, end, recall, failure.

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token, Waker};

use super::{Collected, End, HELD_BYTES, Reader};
use crate::pty::{PtyMaster, PtyRead};

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

// [OUTPUT.READER.2]
#[test]
fn a_buffer_nobody_takes_stops_at_its_bound() {
    let (_poll, mut reader, master, slave) = held_pty();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 8192];
        // Blocks once the thread and the kernel hold all they take; the slave closes at the end
        // of the test, which ends the writes.
        while rustix::io::write(&slave, &chunk).is_ok() {}
    });
    // Once the thread has read something, nobody collects for a while: however long the
    // program writes meanwhile, the thread holds at most its bound.
    let until = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while got.is_empty() {
        assert!(Instant::now() < until, "the thread read nothing");
        std::thread::sleep(Duration::from_millis(10));
        reader.collect(MASTER, &mut got, 4096);
        assert!(got.len() <= HELD_BYTES, "{} bytes held", got.len());
    }
    std::thread::sleep(Duration::from_millis(300));
    got.clear();
    reader.collect(MASTER, &mut got, 4096);
    assert!(got.len() <= HELD_BYTES, "{} bytes held", got.len());
    std::thread::sleep(Duration::from_millis(100));
    let mut again = Vec::new();
    reader.collect(MASTER, &mut again, 4096);
    assert!(
        again.len() <= HELD_BYTES,
        "{} bytes held after a resume",
        again.len()
    );
    drop(reader);
    drop(master);
    let _ = writer.join();
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
