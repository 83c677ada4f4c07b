//! Frames round-trip over the WebSocket listener as over the socket: a real RFC 6455 client
//! (tungstenite) through the real server, one binary message per phux frame both ways
//! ([WS.FRAME.1]), a ping answered with a pong, a close answered with a close.

use std::time::Instant;

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::frame::{ClientCapabilities, Hello, ProtocolVersion};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};
use tungstenite::Message;

use crate::support::client::DEADLINE;
use crate::support::ws::WsServer;

#[test]
fn spawn_attach_and_apply_input_over_a_websocket() {
    let server = WsServer::start(&[]);
    let mut c = server.client();
    let ok = c.hello();
    assert_eq!(ok.server_id.len(), 16);
    let terminal = c.spawn(&["cat"]);
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );
    let apply = ApplyInput {
        operation_id: OperationId::from_u128(0x5eed).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"over ws\r".to_vec(),
        })],
    };
    assert_eq!(
        c.command(Command::ApplyInput(apply.clone())),
        CommandResult::Ok
    );
    // The echo and cat's copy: the bytes reached the program and came back as output.
    let t: TerminalId = terminal.clone();
    while c
        .output_of(&t)
        .windows(9)
        .filter(|w| w == b"over ws\r\n")
        .count()
        < 2
    {
        c.wait_for("TERMINAL_OUTPUT", |f| {
            matches!(f, Frame::TerminalOutput(o) if o.terminal == t).then_some(())
        });
    }
    // The same operation id again: the ledger answers, nothing is written twice.
    assert_eq!(c.command(Command::ApplyInput(apply)), CommandResult::Ok);
}

#[test]
fn every_message_is_exactly_one_frame_and_pings_get_pongs() {
    let server = WsServer::start(&[]);
    let mut ws = server.connect();
    let hello = Frame::Hello(Hello {
        client_name: "ws-test".to_owned(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    });
    ws.send(Message::Ping(b"are you there".to_vec().into()))
        .expect("ping");
    ws.send(Message::binary(hello.to_bytes())).expect("hello");
    let end = Instant::now() + DEADLINE;
    let (mut pong, mut hello_ok) = (false, false);
    while !(pong && hello_ok) {
        assert!(Instant::now() < end, "no pong or HELLO_OK");
        match ws.read().expect("read") {
            Message::Pong(p) => {
                assert_eq!(&p[..], b"are you there");
                pong = true;
            }
            Message::Binary(bytes) => {
                // [WS.FRAME.1] One whole frame: its length field covers the message exactly.
                let len = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes"));
                assert_eq!(bytes.len(), 4 + len as usize);
                let frame = Frame::decode(&bytes).expect("a phux frame");
                hello_ok |= matches!(frame, Frame::HelloOk(_));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // [WS.CLOSE.1] Our close is answered with a close, then the end.
    ws.close(None).expect("close");
    loop {
        match ws.read() {
            Ok(_) => {}
            Err(tungstenite::Error::ConnectionClosed) => break,
            Err(e) => panic!("after close: {e}"),
        }
    }
}
