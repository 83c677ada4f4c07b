//! A WebSocket client that breaks the framing rules is ended cleanly: a close frame whose code
//! and reason name the rule ([WS.FRAME.5]), after whatever the server answered to the frames
//! before it; a giant frame header costs nothing ([WS.FRAME.4]).

use std::io::{Read, Write};
use std::net::TcpStream;

use phux_proto::Frame;
use phux_proto::frame::{ClientCapabilities, Hello, ProtocolVersion};
use tungstenite::Message;
use tungstenite::protocol::frame::coding::CloseCode;

use crate::support::client::DEADLINE;
use crate::support::ws::WsServer;

fn hello_bytes() -> Vec<u8> {
    Frame::Hello(Hello {
        client_name: "ws-test".to_owned(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
    .to_bytes()
}

/// Reads until the server's close; what came before it, and the close's code and reason.
fn until_close(ws: &mut tungstenite::WebSocket<TcpStream>) -> (Vec<Frame>, u16, String) {
    let mut frames = Vec::new();
    loop {
        match ws.read() {
            Ok(Message::Binary(b)) => frames.push(Frame::decode(&b).expect("frame")),
            Ok(Message::Close(Some(c))) => return (frames, c.code.into(), c.reason.to_string()),
            Ok(Message::Close(None)) => return (frames, 1005, String::new()),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => panic!("no close frame: {e} (after {frames:?})"),
        }
    }
}

#[test]
fn two_frames_in_one_message_end_the_connection_after_the_first_is_answered() {
    let server = WsServer::start(&[]);
    let mut ws = server.connect();
    let two = [hello_bytes(), hello_bytes()].concat();
    ws.send(Message::binary(two)).expect("send");
    let (frames, code, reason) = until_close(&mut ws);
    assert!(
        frames.iter().any(|f| matches!(f, Frame::HelloOk(_))),
        "{frames:?}"
    );
    assert_eq!(code, u16::from(CloseCode::Policy));
    assert!(reason.contains("exactly one phux frame"), "{reason}");
}

#[test]
fn half_a_frame_in_a_message_is_refused() {
    let server = WsServer::start(&[]);
    let mut ws = server.connect();
    let hello = hello_bytes();
    ws.send(Message::binary(hello[..hello.len() - 1].to_vec()))
        .expect("send");
    let (frames, code, _) = until_close(&mut ws);
    assert!(frames.is_empty(), "{frames:?}");
    assert_eq!(code, 1008);
}

#[test]
fn a_text_message_is_refused() {
    let server = WsServer::start(&[]);
    let mut ws = server.connect();
    ws.send(Message::text("HELLO")).expect("send");
    let (_, code, _) = until_close(&mut ws);
    assert_eq!(code, u16::from(CloseCode::Unsupported));
}

#[test]
fn a_giant_frame_header_is_refused_from_the_header_alone() {
    let server = WsServer::start(&[]);
    let ws = server.connect();
    let mut tcp = ws.into_inner();
    // A binary frame announcing 2^40 bytes, masked, with no payload at all.
    let mut header = vec![0x82, 0x80 | 127];
    header.extend_from_slice(&(1u64 << 40).to_be_bytes());
    header.extend_from_slice(&[1, 2, 3, 4]);
    tcp.write_all(&header).expect("send");
    tcp.set_read_timeout(Some(DEADLINE)).expect("timeout");
    let mut got = Vec::new();
    let _ = tcp.read_to_end(&mut got);
    // A close frame (0x88) with code 1009, then the end of the stream.
    assert_eq!(got.first(), Some(&0x88), "{got:?}");
    assert_eq!(got.get(2..4), Some(&1009u16.to_be_bytes()[..]), "{got:?}");
}

#[test]
fn a_phux_frame_over_the_limit_is_refused_by_the_engine_as_over_the_socket() {
    let server = WsServer::start(&[]);
    let mut ws = server.connect();
    // A message carrying only a phux header that announces 16 MiB + 1: the engine's
    // FRAME_TOO_LARGE, as over the socket, then the end.
    let mut head = (16 * 1024 * 1024 + 1u32).to_be_bytes().to_vec();
    head.push(0x01);
    ws.send(Message::binary(head)).expect("send");
    let (frames, _, _) = until_close(&mut ws);
    assert!(
        frames.iter().any(|f| matches!(f, Frame::Error(_))),
        "{frames:?}"
    );
}
