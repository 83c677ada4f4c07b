//! A peer that writes its frames and half-closes at once (a script piping into the socket, a
//! fuzzer) still gets the server's answers to them: HELLO_OK and PONG, or the ERROR and
//! DETACHED a bad frame earns. The fault-injection suite found these answers dropped when the
//! peer's end of stream arrived in the same wake-up as its bytes.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::time::Instant;

use phux_proto::frame::{DetachReason, Ping};
use phux_proto::{ErrorCode, Frame};

use crate::support::faults::{DEADLINE, FrameStream, ServerProc, hello_frame, private_tempdir};

/// Writes `bytes` in one go, half-closes, and returns every frame until end of stream.
fn write_then_half_close(socket: &std::path::Path, bytes: &[u8]) -> Vec<Frame> {
    let mut stream = UnixStream::connect(socket).expect("connect");
    stream.write_all(bytes).expect("write");
    stream
        .shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    let mut s = FrameStream::new(stream);
    let end = Instant::now() + DEADLINE;
    let mut frames = Vec::new();
    while let Some(frame) = s.recv(end) {
        frames.push(frame);
    }
    assert!(s.eof, "the server did not close after our end of stream");
    frames
}

#[test]
fn frames_written_just_before_a_half_close_are_answered() {
    // [PING.ECHO.1] [ERROR.FATAL.1] [FRAME.LENGTH.1]
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let _server = ServerProc::start(&socket);
    // Many rounds: the EOF lands in the same read loop as the bytes on most of them.
    for round in 0..50u64 {
        let mut bytes = hello_frame().to_bytes();
        bytes.extend(Frame::Ping(Ping { nonce: round }).to_bytes());
        let frames = write_then_half_close(&socket, &bytes);
        assert!(
            matches!(frames.first(), Some(Frame::HelloOk(_))),
            "round {round}: {frames:?}"
        );
        assert!(
            frames
                .iter()
                .any(|f| matches!(f, Frame::Pong(p) if p.nonce == round)),
            "round {round}: no PONG in {frames:?}"
        );

        let mut bad = hello_frame().to_bytes();
        bad.extend([0, 0, 0, 0]);
        let frames = write_then_half_close(&socket, &bad);
        let codes: Vec<ErrorCode> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Error(e) => Some(e.code),
                _ => None,
            })
            .collect();
        assert_eq!(
            codes,
            [ErrorCode::FRAME_TOO_LARGE],
            "round {round}: {frames:?}"
        );
        assert!(
            frames.iter().any(|f| matches!(
                f,
                Frame::Detached(d) if d.reason == Some(DetachReason::PROTOCOL_ERROR)
            )),
            "round {round}: no DETACHED in {frames:?}"
        );
    }
}
