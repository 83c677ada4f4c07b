//! What a peer costs before it is anyone: a request over the size bound is refused
//! ([WS.HANDSHAKE.1]), more handshakes than the bound are closed at once ([WS.HANDSHAKE.2]),
//! and a slow-loris request is cut at the time bound ([WS.HANDSHAKE.3]); meanwhile a client
//! that passed its handshake is served without delay.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::client::DEADLINE;
use crate::support::ws::{WsServer, raw_exchange};
use crate::upgrade_chaos::ping;

/// The bounds the server keeps (`ws::door`).
const MAX_HANDSHAKES: usize = 64;
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);

/// Whether the server closed `tcp` within `within`: `Err` says what was seen instead. EOF and
/// every error but a timeout count as closed (a reset, an abort: the server holds nothing of it
/// any more); a signal's interruption is read again.
fn closed_within(tcp: &mut TcpStream, within: Duration) -> Result<(), String> {
    let end = Instant::now() + within;
    let mut buf = [0u8; 256];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("still open after {within:?}"));
        }
        tcp.set_read_timeout(Some(left)).expect("timeout");
        match tcp.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Ok(()),
        }
    }
}

#[test]
fn a_giant_request_is_refused_without_being_read_to_its_end() {
    let server = WsServer::start(&[]);
    let mut request = format!("GET / HTTP/1.1\r\nHost: {}\r\nX-Pad: ", server.addr).into_bytes();
    request.extend(std::iter::repeat_n(b'a', 64 * 1024));
    let answer = raw_exchange(server.addr, &request);
    assert!(
        answer.starts_with(b"HTTP/1.1 431 "),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

#[test]
fn handshakes_are_bounded_in_number_and_time_and_an_open_client_is_served_meanwhile() {
    let server = WsServer::start(&[]);
    let mut client = server.client();
    client.hello();
    let started = Instant::now();
    // Slow loris: each sends half a request line and then trickles nothing.
    let mut loris: Vec<TcpStream> = (0..MAX_HANDSHAKES)
        .map(|_| {
            let mut t = TcpStream::connect(server.addr).expect("connect");
            t.write_all(b"GET / HTT").expect("send");
            t
        })
        .collect();
    // One more is closed at once.
    let mut extra = TcpStream::connect(server.addr).expect("connect");
    if let Err(why) = closed_within(&mut extra, DEADLINE) {
        panic!("a handshake over the bound was kept: {why}");
    }
    // The client that passed its handshake is answered at once meanwhile.
    let t = Instant::now();
    ping(&mut client, 7);
    assert!(
        t.elapsed() < HANDSHAKE_BOUND,
        "a ping waited {:?}",
        t.elapsed()
    );
    // Each loris is cut at the bound, however long it waits.
    for (i, t) in loris.iter_mut().enumerate() {
        if let Err(why) = closed_within(t, HANDSHAKE_BOUND + DEADLINE) {
            panic!(
                "loris {i} of {MAX_HANDSHAKES} at {:?}: {why}",
                started.elapsed()
            );
        }
    }
    assert!(started.elapsed() + Duration::from_millis(500) >= HANDSHAKE_BOUND);
    // And the door is open again.
    let _ = server.connect();
}
