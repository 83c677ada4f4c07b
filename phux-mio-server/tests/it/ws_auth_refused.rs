//! [WS.AUTH.1] [WS.ORIGIN.1] A page from another origin, a request without the secret, and a
//! request naming another host get the same bare 403 and nothing else: no frame, no terminal,
//! and the engine never hears of them.

use phux_proto::command::{Command, CommandResult, CommandValue, StateScope};

use crate::support::ws::{WsServer, raw_exchange};

#[test]
fn wrong_origin_missing_or_wrong_secret_are_refused_alike() {
    let server = WsServer::start(&[]);
    let ours = server.origin();
    let good = server.protocols();
    let spoofed = format!("{ours}.evil.example");
    let cases: [(Option<&str>, Option<&str>); 7] = [
        (Some("http://evil.example"), Some(&good)),
        (Some(&spoofed), Some(&good)),
        (Some("null"), Some(&good)),
        // [WS.ORIGIN.2] No Origin: not allowed by default.
        (None, Some(&good)),
        (Some(&ours), None),
        (Some(&ours), Some("phux")),
        (Some(&ours), Some("phux, phux-secret.0000")),
    ];
    for (origin, protocols) in cases {
        let got = server.handshake(origin, protocols).map(|_| ());
        assert_eq!(got, Err(403), "origin {origin:?}, protocols {protocols:?}");
    }
    // A page whose name was rebound to our address (DNS rebinding) sends its own Host.
    let request = format!(
        "GET / HTTP/1.1\r\nHost: rebound.example:{}\r\nOrigin: http://rebound.example:{}\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: {good}\r\n\r\n",
        server.addr.port(),
        server.addr.port()
    );
    let answer = raw_exchange(server.addr, request.as_bytes());
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 403 "), "{text}");
    // Nothing after the head: no body, no frame.
    assert!(text.ends_with("\r\n\r\n"), "{text}");
    // The server serves on: an honest page connects and is answered.
    let mut c = server.client();
    c.hello();
    let r = c.command(Command::GetState {
        scope: StateScope::Server,
    });
    assert!(
        matches!(r, CommandResult::OkWith(CommandValue::State(ref s)) if s.terminals.is_empty()),
        "{r:?}"
    );
}

#[test]
fn a_client_without_origin_connects_only_when_allowed_and_still_needs_the_secret() {
    let server = WsServer::start(&["--ws-allow-no-origin"]);
    assert!(server.handshake(None, Some(&server.protocols())).is_ok());
    assert_eq!(server.handshake(None, Some("phux")).map(|_| ()), Err(403));
    assert_eq!(
        server
            .handshake(Some("http://evil.example"), Some(&server.protocols()))
            .map(|_| ()),
        Err(403)
    );
}

#[test]
fn the_secret_file_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let server = WsServer::start(&[]);
    let mode = std::fs::metadata(&server.secret_file)
        .expect("secret file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(server.secret.len(), 64);
}

#[test]
fn the_secret_is_in_no_log_line_at_any_level() {
    // [WS.AUTH.4]
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("log");
    let server = WsServer::start(&[
        "--log-level",
        "trace",
        "--log-file",
        log.to_str().expect("utf-8"),
    ]);
    let mut c = server.client();
    c.hello();
    let wrong = format!("phux, phux-secret.{}", "0".repeat(64));
    assert_eq!(
        server
            .handshake(Some(&server.origin()), Some(&wrong))
            .map(|_| ()),
        Err(403)
    );
    drop(c);
    let ping_end = std::time::Instant::now() + crate::support::client::DEADLINE;
    // The log has the accepted and refused handshakes in it, and never the secret.
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(!text.contains(&server.secret), "the secret is in the log");
        if text.contains("refused: origin, host or secret") {
            break;
        }
        assert!(
            std::time::Instant::now() < ping_end,
            "no refusal logged: {text}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
