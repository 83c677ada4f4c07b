//! A peer running as another uid is refused by SO_PEERCRED, and with the real 0700/0600 modes
//! it cannot even connect.
//!
//! Needs root plus `setpriv` (or `runuser`) and `perl` to run a client as `nobody`; otherwise
//! the test records a skip with the reason (phux_testkit). Manual check without root: start
//! the server as one user, then as another user run `socat - UNIX-CONNECT:<socket>` (expect
//! "Permission denied"), and with the directory and socket opened up by hand, expect the
//! server to log a refused peer.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use phux_mio_server::{PeerError, ServerSocket, check_peer};

use crate::support::common::{self, NOBODY};

const CLIENT: &str = r#"use IO::Socket::UNIX;
my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $ARGV[0])
    or do { print "connect-failed: $!\n"; exit 3 };
print "connected\n";
1 while <$s>;
exit 0;"#;

/// Runs the perl client as `nobody`, or says why it cannot.
fn client_as_nobody(path: &Path) -> Result<Child, &'static str> {
    common::perl_as_nobody(CLIENT)?
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|_| "cannot start the client")
}

fn output(child: Child) -> String {
    let out = child.wait_with_output().expect("client output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn foreign_uid_is_refused_by_peercred() {
    let tmp = common::private_tempdir();
    let sock = ServerSocket::bind(&tmp.path().join("s.sock")).expect("bind");
    // Open the walls on purpose, so only the SO_PEERCRED check stands in the way.
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o711)).expect("chmod dir");
    fs::set_permissions(sock.path(), fs::Permissions::from_mode(0o666)).expect("chmod sock");
    let mut client = match client_as_nobody(sock.path()) {
        Ok(c) => c,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    let end = Instant::now() + Duration::from_secs(30);
    let conn = loop {
        if let Ok((conn, _)) = sock.listener().accept() {
            break conn;
        }
        if let Some(status) = client.try_wait().expect("try_wait") {
            panic!(
                "client exited ({status}) without connecting: {}",
                output(client)
            );
        }
        assert!(Instant::now() < end, "no connection from the client");
        std::thread::sleep(Duration::from_millis(10));
    };
    match check_peer(&conn) {
        Err(PeerError::Refused { uid, expected }) => {
            assert_eq!(uid, NOBODY);
            assert_eq!(expected, 0);
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    drop(conn);
    assert_eq!(output(client), "connected\n");
}

#[test]
fn foreign_uid_cannot_reach_a_private_socket() {
    let tmp = common::private_tempdir();
    let sock = ServerSocket::bind(&tmp.path().join("phux-mio").join("s.sock")).expect("bind");
    let client = match client_as_nobody(sock.path()) {
        Ok(c) => c,
        Err(why) => {
            phux_testkit::skip!("{why}");
            return;
        }
    };
    let text = output(client);
    assert!(
        text.starts_with("connect-failed: Permission denied"),
        "{text:?}"
    );
    assert!(
        sock.listener().accept().is_err(),
        "a foreign peer reached the listener"
    );
}
