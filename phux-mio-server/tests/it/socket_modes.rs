//! The socket directory is created 0700 and the socket is 0600; the socket is removed on drop.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use phux_mio_server::ServerSocket;

use crate::support::common;

#[test]
fn directory_is_0700_and_socket_is_0600() {
    let tmp = common::private_tempdir();
    let dir = tmp.path().join("phux-mio");
    let path = dir.join("main.sock");
    let sock = ServerSocket::bind(&path).expect("bind");
    assert_eq!(sock.path(), path);

    let dmeta = fs::metadata(&dir).expect("dir");
    assert_eq!(dmeta.permissions().mode() & 0o7777, 0o700);
    assert_eq!(dmeta.uid(), rustix::process::geteuid().as_raw());
    let smeta = fs::symlink_metadata(&path).expect("socket");
    assert!(smeta.file_type().is_socket());
    assert_eq!(smeta.permissions().mode() & 0o7777, 0o600);

    drop(sock);
    assert!(!path.exists(), "socket left behind after drop");
}

#[test]
fn existing_private_directory_is_accepted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
    let path = tmp.path().join("x.sock");
    let _sock = ServerSocket::bind(&path).expect("bind");
    assert!(path.exists());
}
