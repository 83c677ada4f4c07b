//! The server refuses to listen in a directory that others can enter or that is not ours,
//! and never follows a symlink in place of the directory.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use phux_mio_server::{ServerSocket, SocketError};

use crate::support::common;

#[test]
fn refuses_a_0755_directory() {
    let tmp = common::private_tempdir();
    let dir = tmp.path().join("open");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = dir.join("s.sock");
    match ServerSocket::bind(&path) {
        Err(SocketError::TooOpen { mode, .. }) => assert_eq!(mode, 0o755),
        other => panic!("expected TooOpen, got {other:?}"),
    }
    assert!(!path.exists(), "a socket was created anyway");
}

#[test]
fn refuses_a_group_readable_directory() {
    let tmp = common::private_tempdir();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o750)).expect("chmod");
    let err = ServerSocket::bind(&tmp.path().join("s.sock")).unwrap_err();
    assert!(
        matches!(err, SocketError::TooOpen { mode: 0o750, .. }),
        "{err:?}"
    );
}

#[test]
fn refuses_a_symlink_in_place_of_the_directory() {
    let tmp = common::private_tempdir();
    let real = tmp.path().join("real");
    fs::create_dir(&real).expect("mkdir");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let err = ServerSocket::bind(&link.join("s.sock")).unwrap_err();
    assert!(matches!(err, SocketError::NotADirectory(_)), "{err:?}");
}

#[test]
fn refuses_a_directory_owned_by_another_user() {
    if !rustix::process::geteuid().is_root() {
        phux_testkit::skip!("changing a directory's owner needs root");
        return;
    }
    let tmp = common::private_tempdir();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(tmp.path(), Some(65534), Some(65534)).expect("chown");
    let err = ServerSocket::bind(&tmp.path().join("s.sock")).unwrap_err();
    assert!(
        matches!(err, SocketError::WrongOwner { owner: 65534, .. }),
        "{err:?}"
    );
}
