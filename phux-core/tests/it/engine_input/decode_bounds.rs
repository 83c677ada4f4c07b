//! APPLY_INPUT decode bounds.

use super::*;

#[test]
fn apply_input_with_zero_operation_id_is_malformed() {
    // [INPUT.APPLY.1] [ERROR.COMMAND.1]
    let (mut h, c, t) = setup();
    let mut bytes = command_frame(
        5,
        apply_input(
            0x1111_1111_1111_1111_1111_1111_1111_1111,
            &t,
            vec![paste(b"x")],
        ),
    )
    .to_bytes();
    let at = bytes.windows(16).position(|w| w == [0x11; 16]).unwrap();
    bytes[at..at + 16].fill(0);
    h.send_raw(c, &bytes);
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(5) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
    assert!(h.writes.is_empty());
}

#[test]
fn apply_input_with_257_events_is_malformed() {
    // [INPUT.APPLY.1]
    let (mut h, c, t) = setup();
    let events = vec![InputEvent::Focus(FocusEvent::Gained); 257];
    h.send(c, &command_frame(6, apply_input(1, &t, events)));
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(6) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
}

#[test]
fn apply_input_over_64k_command_value_is_malformed() {
    // [INPUT.APPLY.1]
    let (mut h, c, t) = setup();
    h.send(
        c,
        &command_frame(7, apply_input(1, &t, vec![paste(&vec![b'a'; 65_536])])),
    );
    let got = h.settle_recv(c);
    assert!(
        matches!(&got[..], [Frame::Error(e)] if e.request_id == Some(7) && e.code == ErrorCode::MALFORMED_MESSAGE),
        "{got:?}"
    );
    assert!(h.conn(c).is_open());
}
