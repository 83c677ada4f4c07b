//! A peer whose bytes arrive in segments that carry more than bytes (descriptors passed with
//! SCM_RIGHTS, an out-of-band byte) still has every frame read: the kernel ends a read at such a
//! segment however much follows it, and no new readiness announces what follows. The server is
//! stopped while the segments queue up, so that one read meets them all.

use std::io::{IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use phux_proto::Frame;
use phux_proto::frame::{ClientCapabilities, Hello, Ping, ProtocolVersion};
use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use rustix::process::{Pid, Signal, kill_process};

use crate::support::client::{Client, Server};
use crate::support::common::{eventually, proc_state};

fn ping(nonce: u64) -> Vec<u8> {
    Frame::Ping(Ping { nonce }).to_bytes()
}

fn hello() -> Vec<u8> {
    Frame::Hello(Hello {
        client_name: "ancillary".to_owned(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
    .to_bytes()
}

/// Sends `bytes` in one segment with a descriptor (a pipe's end) attached.
fn send_with_fd(stream: &UnixStream, bytes: &[u8]) {
    let (r, _w) = rustix::pipe::pipe().expect("pipe");
    let fds = [r.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
    let sent = rustix::net::sendmsg(
        stream,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::empty(),
    )
    .expect("sendmsg");
    assert_eq!(sent, bytes.len());
}

/// Runs `queue` while the server is stopped, so that everything it sends waits in the socket
/// for one read.
fn while_stopped(server: &Server, queue: impl FnOnce()) {
    let pid = Pid::from_raw(server.pid()).expect("pid");
    let raw = u32::try_from(server.pid()).expect("pid");
    kill_process(pid, Signal::STOP).expect("SIGSTOP");
    assert!(eventually(|| proc_state(raw) == Some('T')), "not stopped");
    queue();
    kill_process(pid, Signal::CONT).expect("SIGCONT");
}

fn pong(c: &mut Client, nonce: u64) {
    c.wait_for("PONG", |f| match f {
        Frame::Pong(p) if p.nonce == nonce => Some(()),
        _ => None,
    });
}

#[test]
fn frames_after_a_segment_with_descriptors_are_read_without_another_send() {
    // [SERVER.LOOP.2]
    let server = Server::start();
    let stream = UnixStream::connect(&server.socket).expect("connect");
    let mut raw = stream.try_clone().expect("clone");
    let mut c = Client::over_unix(stream);
    c.hello();
    while_stopped(&server, || {
        send_with_fd(&raw, &ping(1));
        raw.write_all(&ping(2)).expect("send");
    });
    pong(&mut c, 1);
    pong(&mut c, 2);
}

#[test]
fn a_first_read_with_descriptors_is_not_the_last() {
    // [SERVER.LOOP.2] The first read of a connection looks for a bridge's offer
    // ([SERVER.BRIDGE.9]); a HELLO with a descriptor is no offer, and the PING behind it is
    // read too.
    let server = Server::start();
    let stream = UnixStream::connect(&server.socket).expect("connect");
    let mut raw = stream.try_clone().expect("clone");
    let mut c = Client::over_unix(stream);
    while_stopped(&server, || {
        send_with_fd(&raw, &hello());
        raw.write_all(&ping(3)).expect("send");
    });
    c.wait_for("HELLO_OK", |f| matches!(f, Frame::HelloOk(_)).then_some(()));
    pong(&mut c, 3);
}

#[test]
fn frames_after_an_out_of_band_byte_are_read_without_another_send() {
    // [SERVER.LOOP.2] The out-of-band byte is not part of the stream (it is dropped); the
    // frames around it are.
    let server = Server::start();
    let stream = UnixStream::connect(&server.socket).expect("connect");
    let mut raw = stream.try_clone().expect("clone");
    let mut c = Client::over_unix(stream);
    c.hello();
    while_stopped(&server, || {
        raw.write_all(&ping(4)).expect("send");
        rustix::net::send(&raw, b"!", SendFlags::OOB).expect("send OOB");
        raw.write_all(&ping(5)).expect("send");
    });
    pong(&mut c, 4);
    pong(&mut c, 5);
}
