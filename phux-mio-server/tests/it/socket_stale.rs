//! A socket nobody answers on is stale: it is removed and the server binds in its place.
//! A stale socket that is too open is refused and left alone.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};

use phux_mio_server::{ServerSocket, SocketError};

use crate::support::common;

/// Leaves a socket file with no listener behind it, as a crashed server would.
fn stale_socket(path: &std::path::Path, mode: u32) {
    drop(UnixListener::bind(path).expect("bind"));
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    let err = UnixStream::connect(path).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn stale_socket_is_removed_and_replaced() {
    let tmp = common::private_tempdir();
    let path = tmp.path().join("s.sock");
    stale_socket(&path, 0o600);

    let sock = ServerSocket::bind(&path).expect("bind over a stale socket");
    // It is a live socket now: a client connects and the listener accepts it.
    let mut client = UnixStream::connect(&path).expect("connect");
    client.write_all(b"x").expect("write");
    let (_conn, _) = sock.listener().accept().expect("accept");
}

#[test]
fn stale_socket_with_open_mode_is_refused_and_kept() {
    let tmp = common::private_tempdir();
    let path = tmp.path().join("s.sock");
    stale_socket(&path, 0o666);
    let err = ServerSocket::bind(&path).unwrap_err();
    assert!(
        matches!(err, SocketError::TooOpen { mode: 0o666, .. }),
        "{err:?}"
    );
    assert!(path.exists());
}
