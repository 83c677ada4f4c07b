//! Something that is not a socket at the socket path is never removed.

use std::fs;

use phux_mio_server::{ServerSocket, SocketError};

use crate::support::common;

#[test]
fn regular_file_is_refused_and_kept() {
    let tmp = common::private_tempdir();
    let path = tmp.path().join("s.sock");
    fs::write(&path, b"precious").expect("write");
    let err = ServerSocket::bind(&path).unwrap_err();
    assert!(matches!(err, SocketError::NotASocket(_)), "{err:?}");
    assert_eq!(fs::read(&path).expect("read"), b"precious");
}

#[test]
fn directory_is_refused_and_kept() {
    let tmp = common::private_tempdir();
    let path = tmp.path().join("s.sock");
    fs::create_dir(&path).expect("mkdir");
    let err = ServerSocket::bind(&path).unwrap_err();
    assert!(matches!(err, SocketError::NotASocket(_)), "{err:?}");
    assert!(path.is_dir());
}
