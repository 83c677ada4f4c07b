//! WebSocket clients across an in-place upgrade (spec/websocket.md, "Upgrades"): the listener
//! and every connection past its handshake cross the exec with the framing state of both
//! directions ([WS.UPGRADE.2]); a peer still in its handshake is closed ([WS.UPGRADE.3]); the
//! secret file is read again, by the trial adoption too ([WS.UPGRADE.4]). The clients are
//! tungstenite's, or raw bytes on its socket where a frame is cut on purpose.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use phux_proto::Frame;
use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{ClientCapabilities, CommandFrame, Hello, Ping, ProtocolVersion};

use crate::support::client::{Client, DEADLINE};
use crate::support::common::eventually;
use crate::support::ws::WsServer;
use crate::upgrade_chaos::{paste, ping};

/// An UPGRADE to the binary the server was started from, from a socket client; its answer.
fn upgrade(server: &WsServer) -> CommandResult {
    let mut c = Client::unix(&server.socket);
    c.hello();
    c.command(Command::Upgrade { binary: None })
}

/// `payload` as one masked binary frame, as a client sends it.
fn masked(payload: &[u8]) -> Vec<u8> {
    let mask = [0x5a, 0x17, 0xc3, 0x08];
    let mut f = vec![0x82];
    match payload.len() {
        n if n < 126 => f.push(0x80 | n as u8),
        n => {
            f.push(0x80 | 0x7e);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    f.extend_from_slice(&mask);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    f
}

/// Reads one server message (unmasked, one frame) off a raw socket: its opcode and payload.
fn read_message(tcp: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).expect("a message header");
    let len = match head[1] & 0x7f {
        126 => {
            let mut be = [0u8; 2];
            tcp.read_exact(&mut be).expect("length");
            u64::from(u16::from_be_bytes(be))
        }
        127 => {
            let mut be = [0u8; 8];
            tcp.read_exact(&mut be).expect("length");
            u64::from_be_bytes(be)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0u8; usize::try_from(len).expect("len")];
    tcp.read_exact(&mut payload).expect("a message payload");
    (head[0] & 0x0f, payload)
}

/// The next phux frame the server sends on a raw socket.
fn read_frame(tcp: &mut TcpStream) -> Frame {
    let (op, payload) = read_message(tcp);
    assert_eq!(op, 0x2, "not a binary message: {payload:?}");
    Frame::decode(&payload).expect("one phux frame")
}

/// Reads frames until a PONG; its nonce.
fn read_pong(tcp: &mut TcpStream) -> u64 {
    loop {
        if let Frame::Pong(p) = read_frame(tcp) {
            return p.nonce;
        }
    }
}

fn ping_bytes(nonce: u64) -> Vec<u8> {
    Frame::Ping(Ping { nonce }).to_bytes()
}

fn read_file(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_websocket_client_keeps_its_connection_and_its_input_across_an_upgrade() {
    // [WS.UPGRADE.2] [SERVER.UPGRADE.STATE.2]
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("record");
    let server = WsServer::start(&["--shell", "/bin/sh"]);
    let mut w = server.client();
    let before = w.hello().server_id;
    let t = w.spawn(&[
        "sh",
        "-c",
        &format!("stty -echo; exec cat >> {}", record.display()),
    ]);
    let first = paste(0x5753_0001, &t, b"one\n");
    assert_eq!(
        w.command(Command::ApplyInput(first.clone())),
        CommandResult::Ok
    );
    assert!(eventually(|| read_file(&record) == "one\n"));

    // A frame in flight as the upgrade starts is answered, by whichever image reads it.
    let mut c = Client::unix(&server.socket);
    c.hello();
    c.send(&Frame::Command(CommandFrame {
        request_id: 77,
        command: Command::Upgrade { binary: None },
    }));
    w.send(&Frame::Ping(Ping { nonce: 0x5753 }));
    let upgraded = c.wait_for("the UPGRADE's answer", |f| match f {
        Frame::CommandResult(r) if r.request_id == 77 => Some(r.result.clone()),
        _ => None,
    });
    assert_eq!(upgraded, CommandResult::Ok);
    w.wait_for("PONG", |f| match f {
        Frame::Pong(p) if p.nonce == 0x5753 => Some(()),
        _ => None,
    });

    // The same connection after the exec: the retry of an acknowledged operation with its id
    // is answered from the carried ledger and never written again; new input is written once.
    assert_eq!(w.command(Command::ApplyInput(first)), CommandResult::Ok);
    let second = paste(0x5753_0002, &t, b"two\n");
    assert_eq!(w.command(Command::ApplyInput(second)), CommandResult::Ok);
    assert!(eventually(|| read_file(&record) == "one\ntwo\n"));
    ping(&mut w, 2);
    assert_eq!(read_file(&record), "one\ntwo\n");

    // The same incarnation, and the listener still answers.
    let mut fresh = server.client();
    assert_eq!(fresh.hello().server_id, before);
    ping(&mut fresh, 3);
}

#[test]
fn a_websocket_frame_cut_by_an_upgrade_completes_after_it() {
    // [WS.UPGRADE.2] The decoder's state crosses: a frame cut inside its payload, then one cut
    // inside its header, each finished by the bytes sent after the exec.
    let server = WsServer::start(&[]);
    let mut tcp = server.connect().into_inner();
    tcp.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let hello = Frame::Hello(Hello {
        client_name: "ws-upgrade".to_owned(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
    .to_bytes();
    tcp.write_all(&masked(&hello)).expect("send");
    assert!(matches!(read_frame(&mut tcp), Frame::HelloOk(_)));

    for (round, cut) in [(1u64, 6 + 5), (2, 1)] {
        let whole = masked(&ping_bytes(100 + round));
        let cut_one = masked(&ping_bytes(200 + round));
        // One write: a whole PING, then the first bytes of another. Once the whole one is
        // answered, the server has read the part too (it came in the same segment).
        let mut bytes = whole.clone();
        bytes.extend_from_slice(&cut_one[..cut]);
        tcp.write_all(&bytes).expect("send");
        assert_eq!(read_pong(&mut tcp), 100 + round);
        assert_eq!(upgrade(&server), CommandResult::Ok, "upgrade {round}");
        tcp.write_all(&cut_one[cut..]).expect("send the rest");
        assert_eq!(read_pong(&mut tcp), 200 + round);
    }
}

#[test]
fn the_secret_is_still_required_after_an_upgrade() {
    // [WS.UPGRADE.4] The listener taken over answers for the same secret, origins and hosts.
    let server = WsServer::start(&[]);
    assert_eq!(upgrade(&server), CommandResult::Ok);
    let origin = server.origin();
    assert_eq!(
        server.handshake(Some(&origin), Some("phux")).err(),
        Some(403)
    );
    let wrong = format!("phux, phux-secret.{}", "0".repeat(64));
    assert_eq!(
        server.handshake(Some(&origin), Some(&wrong)).err(),
        Some(403)
    );
    assert_eq!(
        server
            .handshake(Some("http://evil.example"), Some(&server.protocols()))
            .err(),
        Some(403)
    );
    let mut w = server.client();
    w.hello();
    ping(&mut w, 1);
}

#[test]
fn a_secret_file_that_no_longer_passes_fails_the_upgrade_on_trial() {
    // [WS.UPGRADE.4] [SERVER.UPGRADE.EXEC.10] The trial child reads the secret as the new image
    // would: readable by others now, it is refused, and the old image serves on.
    let server = WsServer::start(&[]);
    let mut w = server.client();
    w.hello();
    let mode = |m| {
        std::fs::set_permissions(&server.secret_file, std::fs::Permissions::from_mode(m))
            .expect("chmod");
    };
    mode(0o644);
    let refused = upgrade(&server);
    let CommandResult::Error { message, .. } = &refused else {
        panic!("an upgrade with a readable secret file: {refused:?}");
    };
    assert!(message.contains("WebSocket secret"), "{message}");
    ping(&mut w, 1);
    mode(0o600);
    assert_eq!(upgrade(&server), CommandResult::Ok);
    ping(&mut w, 2);
}

#[test]
fn a_peer_still_in_its_handshake_is_closed_at_the_exec() {
    // [WS.UPGRADE.3] Half a request when the server execs: the socket is closed, not carried.
    let server = WsServer::start(&[]);
    let mut half = TcpStream::connect(server.addr).expect("connect");
    half.write_all(format!("GET / HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes())
        .expect("send");
    // The listener has taken it into its handshakes once an upgrade's requester is answered
    // (the accept and the request's read come before the upgrade's command in the loop).
    let mut w = server.client();
    w.hello();
    assert_eq!(upgrade(&server), CommandResult::Ok);
    half.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let mut got = Vec::new();
    match half.read_to_end(&mut got) {
        Ok(_) => assert!(got.is_empty(), "{got:?}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    ping(&mut w, 1);
}
