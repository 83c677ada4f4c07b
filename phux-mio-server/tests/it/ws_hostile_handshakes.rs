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

/// Whether the server closed `tcp` (EOF or reset) within `within`.
fn closed_within(tcp: &mut TcpStream, within: Duration) -> bool {
    tcp.set_read_timeout(Some(within)).expect("timeout");
    let mut buf = [0u8; 256];
    loop {
        match tcp.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
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
    assert!(
        closed_within(&mut extra, DEADLINE),
        "a handshake over the bound was kept"
    );
    // The client that passed its handshake is answered at once meanwhile.
    let t = Instant::now();
    ping(&mut client, 7);
    assert!(
        t.elapsed() < HANDSHAKE_BOUND,
        "a ping waited {:?}",
        t.elapsed()
    );
    // Each loris is cut at the bound, however long it waits.
    for t in &mut loris {
        assert!(closed_within(t, HANDSHAKE_BOUND + DEADLINE));
    }
    assert!(started.elapsed() + Duration::from_millis(500) >= HANDSHAKE_BOUND);
    // And the door is open again.
    let _ = server.connect();
}
