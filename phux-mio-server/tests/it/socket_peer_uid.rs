//! SO_PEERCRED reports the connecting process's uid; a same-uid peer is accepted.

use std::os::unix::net::UnixStream;

use phux_mio_server::{ServerSocket, check_peer, peer_uid};

use crate::support::common;

#[test]
fn same_uid_peer_is_accepted() {
    let tmp = common::private_tempdir();
    let sock = ServerSocket::bind(&tmp.path().join("s.sock")).expect("bind");
    let client = UnixStream::connect(sock.path()).expect("connect");
    // connect() returned, so the connection is already in the backlog.
    let (conn, _) = sock.listener().accept().expect("accept");
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(peer_uid(&conn).expect("peercred"), me);
    check_peer(&conn).expect("same uid accepted");
    // The client side sees the server's uid too.
    assert_eq!(peer_uid(&client).expect("peercred"), me);
}
