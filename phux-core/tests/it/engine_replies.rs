//! Engine tests for the terminal's own replies to its program's queries (OUTPUT.REPLY.*).
#![cfg(feature = "sim")]
// Tests name the harness h, clients c and terminals t, as the wire log does.
#![allow(clippy::many_single_char_names)]

use phux_core::sim::{ChildMode, Harness, apply_input, command_frame, paste};
use phux_proto::TerminalId;
use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::Frame;

/// The bytes of every write job of `t`, in order.
fn jobs(h: &Harness, t: &TerminalId) -> Vec<Vec<u8>> {
    h.writes_to(t).iter().map(|w| w.bytes.clone()).collect()
}

#[test]
fn a_query_is_answered_with_no_client_attached() {
    // [OUTPUT.REPLY.1] [OUTPUT.REPLY.2]
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).script(b"\x1b[c\x1b[3;7H\x1b[6n");
    h.drive_bounded(100);
    assert_eq!(jobs(&h, &t), vec![b"\x1b[?62;22c\x1b[3;7R".to_vec()]);
    assert_eq!(h.pty(&t).read_log(), b"\x1b[?62;22c\x1b[3;7R");
}

#[test]
fn an_attached_client_does_not_change_the_single_reply() {
    // [OUTPUT.REPLY.1] The server answers whoever is attached; the viewer sees the query as
    // output, byte for byte, and the program gets one reply.
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    let attach = Command::AttachTerminal {
        terminal: t.clone(),
    };
    assert_eq!(h.request(c, attach), Some(CommandResult::Ok));
    h.recv(c);
    h.pty(&t).script(b"\x1b[6n");
    h.drive_bounded(100);
    let shown: Vec<u8> = h
        .recv(c)
        .iter()
        .filter_map(|f| match f {
            Frame::TerminalOutput(o) => Some(o.bytes.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(shown, b"\x1b[6n");
    assert_eq!(h.pty(&t).read_log(), b"\x1b[1;1R");
}

#[test]
fn a_reply_is_its_own_job_after_a_pending_apply_input_batch() {
    // [OUTPUT.REPLY.2] A query read while an acknowledged batch is still being written is
    // answered by a job queued behind it: the batch's bytes reach the program whole, then the
    // reply, and the batch alone decides its COMMAND_RESULT.
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    h.pty(&t).set_kernel_buffer(1024);
    h.pty(&t).stall();
    let batch = vec![b'x'; 3000];
    let rid = h.next_request_id();
    h.send(
        c,
        &command_frame(rid, apply_input(7, &t, vec![paste(&batch)])),
    );
    h.settle();
    assert_eq!(
        h.take_result(c, rid),
        None,
        "the batch is still being written"
    );
    h.pty(&t).script(b"\x1b[5n");
    h.settle();
    h.pty(&t).unstall();
    h.drive_bounded(1000);
    assert_eq!(h.take_result(c, rid), Some(CommandResult::Ok));
    assert_eq!(jobs(&h, &t), vec![batch.clone(), b"\x1b[0n".to_vec()]);
    let mut expected = batch;
    expected.extend_from_slice(b"\x1b[0n");
    assert_eq!(h.pty(&t).read_log(), expected);
}
