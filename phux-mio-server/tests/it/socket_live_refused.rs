//! A socket a server answers on is never taken over.

use std::os::unix::net::UnixStream;

use phux_mio_server::{ServerSocket, SocketError};

use crate::support::common;

#[test]
fn second_server_is_refused_and_the_first_keeps_serving() {
    let tmp = common::private_tempdir();
    let path = tmp.path().join("s.sock");
    let first = ServerSocket::bind(&path).expect("first bind");

    match ServerSocket::bind(&path) {
        Err(SocketError::AddressInUse(p)) => assert_eq!(p, path),
        other => panic!("expected AddressInUse, got {other:?}"),
    }
    // The probe connection is in the first server's backlog; drain it, then a new client is
    // still served: the socket file was not removed.
    while first.listener().accept().is_ok() {}
    let _client = UnixStream::connect(&path).expect("connect to the first server");
    first.listener().accept().expect("accept");
}
