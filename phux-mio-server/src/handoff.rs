//! The bridge's descriptor handoff ([SERVER.BRIDGE.6] to [SERVER.BRIDGE.13]): instead of
//! copying bytes between its stdio and the server's socket, a bridge whose stdin and stdout
//! are pipes or sockets passes both descriptors to the server (SCM_RIGHTS), which serves the
//! connection on them directly, as `--stdio` serves its own. The bridge then only waits for
//! the server to close the socket: two process hops and two copies fewer each way.
//!
//! The offer is [`OFFER`] with the two descriptors attached, sent alone as the first bytes of a
//! fresh connection. Its first four bytes are a frame length of 0, which no phux peer ever
//! sends: a server that does not know the offer (an older one, the phux reference) answers it
//! as a framing violation (a frame, whose first byte is 0x00 or 0x01) and closes. A server
//! that takes it answers the one byte [`ACK`], which no frame starts with.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{FileType, OFlags};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The handoff offer: a frame length of 0 (a framing violation to anything that reads it as
/// phux) and a name with a version, so that a later offer of another shape is not mistaken
/// for this one.
pub const OFFER: &[u8] = b"\0\0\0\0phux-mio-server handoff 1";

/// The server's answer to an offer it took. A frame begins with its length's high byte,
/// 0x00 or 0x01 (no frame is longer than 16 MiB): this byte is never the start of one.
pub const ACK: u8 = 0xAC;
const _: () = assert!(ACK > 0x01, "a frame may start with the acknowledgement");

/// Whether `fd` is a socket (a pipe is the other kind of handed descriptor).
fn is_socket(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Socket)
}

/// Whether `fd` is a pipe or a socket: what the bridge offers and the server takes. A
/// terminal is never handed off (its line discipline and job control belong to whoever
/// started the bridge), nor a file or `/dev/null`, which epoll cannot watch.
pub fn is_pipe_or_socket(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| {
        matches!(
            FileType::from_raw_mode(st.st_mode),
            FileType::Fifo | FileType::Socket
        )
    })
}

/// Sends the offer with `input` and `output` attached, in one message.
pub fn offer(socket: impl AsFd, input: BorrowedFd<'_>, output: BorrowedFd<'_>) -> io::Result<()> {
    let fds = [input, output];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for two descriptors"));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[IoSlice::new(OFFER)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    // A fresh socket's buffer takes a few dozen bytes whole; anything less is no offer.
    if sent != OFFER.len() {
        return Err(io::Error::other("the offer was cut short"));
    }
    Ok(())
}

/// What the first read of a fresh connection found.
#[derive(Debug)]
pub(crate) enum First {
    /// The offer, alone, with exactly two descriptors: the peer's input and output.
    Offer { input: OwnedFd, output: OwnedFd },
    /// Anything else: `n` bytes in the buffer, to be handled as any others (any descriptors
    /// that came with them are closed). `cut`: the read ended at a segment that carried
    /// ancillary data, and bytes may follow it ([`crate::conn::Got::drained`]).
    Bytes { n: usize, cut: bool },
}

/// The first read of a fresh connection, with room for the two descriptors of an offer. The
/// descriptors arrive close-on-exec: a terminal's child never inherits them.
pub(crate) fn read_first(socket: impl AsFd, buf: &mut [u8]) -> io::Result<First> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match rustix::net::recvmsg(
            &socket,
            &mut [IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
        ) {
            Ok(got) => break got,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    };
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut ancillary = false;
    for message in control.drain() {
        ancillary = true;
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    // The offer is sent in one message and the bridge sends nothing else until it is
    // answered, so it is read whole and alone; anything more or less is a byte stream.
    let n = got.bytes;
    // More descriptors than room for two were cut off (and closed): not exactly two.
    let truncated = got.flags.contains(rustix::net::ReturnFlags::CTRUNC);
    if buf.get(..n) == Some(OFFER) && fds.len() == 2 && !truncated {
        let mut fds = fds.into_iter();
        if let (Some(input), Some(output)) = (fds.next(), fds.next()) {
            return Ok(First::Offer { input, output });
        }
    }
    Ok(First::Bytes {
        n,
        cut: ancillary || truncated,
    })
}

/// Descriptors handed over by a bridge: the connection's input and output, the bridge's
/// socket, and the file status flags both had when they came. Dropping it puts the flags back,
/// closes both descriptors and only then the socket: once the bridge sees its socket end, its
/// stdio is as it gave it ([SERVER.BRIDGE.12]).
#[derive(Debug)]
pub struct Handed {
    /// Read from: the bridge's stdin.
    pub(crate) input: OwnedFd,
    /// Written to: the bridge's stdout.
    pub(crate) output: OwnedFd,
    /// The bridge's connection: its end (or any byte on it) means the bridge is gone.
    pub(crate) control: mio::net::UnixStream,
    input_flags: OFlags,
    output_flags: OFlags,
    /// The input is a socket (read as one, [`crate::conn::Got::drained`]), not a pipe.
    input_socket: bool,
}

impl Handed {
    /// Takes the descriptors: checks that both are pipes or sockets, saves their flags, and
    /// makes both non-blocking. On an error nothing is left changed and the socket is given
    /// back.
    pub(crate) fn take(
        input: OwnedFd,
        output: OwnedFd,
        control: mio::net::UnixStream,
    ) -> Result<Self, (io::Error, mio::net::UnixStream)> {
        if !is_pipe_or_socket(input.as_fd()) || !is_pipe_or_socket(output.as_fd()) {
            let e = io::Error::new(
                io::ErrorKind::InvalidInput,
                "a handed descriptor is not a pipe or a socket",
            );
            return Err((e, control));
        }
        // Both saved before either changes: they may be one open file description.
        let saved = rustix::fs::fcntl_getfl(&input)
            .and_then(|i| Ok((i, rustix::fs::fcntl_getfl(&output)?)));
        let (input_flags, output_flags) = match saved {
            Ok(flags) => flags,
            Err(e) => return Err((e.into(), control)),
        };
        let set = rustix::fs::fcntl_setfl(&input, input_flags | OFlags::NONBLOCK).and_then(|()| {
            let now = rustix::fs::fcntl_getfl(&output)?;
            rustix::fs::fcntl_setfl(&output, now | OFlags::NONBLOCK)
        });
        if let Err(e) = set {
            let _ = rustix::fs::fcntl_setfl(&output, output_flags);
            let _ = rustix::fs::fcntl_setfl(&input, input_flags);
            return Err((e.into(), control));
        }
        Ok(Self {
            input_socket: is_socket(input.as_fd()),
            input,
            output,
            control,
            input_flags,
            output_flags,
        })
    }
}

impl Handed {
    /// The file status flags the descriptors had when they were handed over (input, output).
    pub(crate) fn given_flags(&self) -> (OFlags, OFlags) {
        (self.input_flags, self.output_flags)
    }

    /// Descriptors a previous server image took over (an upgrade): already non-blocking, with
    /// the flags to put back that it read at the handoff.
    pub(crate) fn adopted(
        input: OwnedFd,
        output: OwnedFd,
        control: mio::net::UnixStream,
        (input_flags, output_flags): (OFlags, OFlags),
    ) -> Self {
        Self {
            input_socket: is_socket(input.as_fd()),
            input,
            output,
            control,
            input_flags,
            output_flags,
        }
    }

    /// Whether the handed input is a socket rather than a pipe.
    pub(crate) fn input_is_socket(&self) -> bool {
        self.input_socket
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        // [SERVER.BRIDGE.12] Back as they came, in the order `--stdio` uses (right when the two
        // are one file description too); the fields close afterwards, the socket last.
        let _ = rustix::fs::fcntl_setfl(&self.output, self.output_flags);
        let _ = rustix::fs::fcntl_setfl(&self.input, self.input_flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream as StdStream;

    #[test]
    fn the_offer_is_a_zero_length_frame() {
        // [SERVER.BRIDGE.6] 29 bytes, a length of 0 first. (That no frame starts with the
        // acknowledgement is checked at compile time, next to it.)
        assert_eq!(OFFER.len(), 29);
        assert_eq!(OFFER.get(..4), Some(&[0u8; 4][..]));
    }

    fn mio_pair() -> (StdStream, mio::net::UnixStream) {
        let (bridge, server) = StdStream::pair().expect("pair");
        server.set_nonblocking(true).expect("nonblocking");
        (bridge, mio::net::UnixStream::from_std(server))
    }

    #[test]
    fn an_offer_arrives_whole_with_its_two_descriptors() {
        // [SERVER.BRIDGE.9]
        let (bridge, server) = mio_pair();
        let (r, w) = rustix::pipe::pipe().expect("pipe");
        offer(&bridge, r.as_fd(), w.as_fd()).expect("offer");
        let mut buf = [0u8; 256];
        match read_first(&server, &mut buf).expect("read") {
            First::Offer { input, output } => {
                let ino = |fd: &OwnedFd| rustix::fs::fstat(fd).expect("fstat").st_ino;
                assert_eq!((ino(&input), ino(&output)), (ino(&r), ino(&w)));
                // Close-on-exec: a terminal's child never inherits them.
                let cloexec = |fd: &OwnedFd| {
                    rustix::io::fcntl_getfd(fd)
                        .expect("getfd")
                        .contains(rustix::io::FdFlags::CLOEXEC)
                };
                assert!(cloexec(&input) && cloexec(&output));
            }
            First::Bytes { n, .. } => panic!("not taken as an offer: {n} bytes"),
        }
    }

    #[test]
    fn anything_but_the_offer_alone_is_bytes() {
        // [SERVER.BRIDGE.9] [SERVER.BRIDGE.10] A HELLO, or the offer with more after it, is a byte stream.
        let (mut bridge, server) = mio_pair();
        bridge.write_all(b"\0\0\0\x05hello").expect("write");
        let mut buf = [0u8; 256];
        assert!(matches!(
            read_first(&server, &mut buf),
            Ok(First::Bytes { n: 9, cut: false })
        ));
        let (mut bridge, server) = mio_pair();
        bridge.write_all(OFFER).expect("write");
        // No descriptors: not an offer.
        assert!(matches!(
            read_first(&server, &mut buf),
            Ok(First::Bytes { n: 29, cut: false })
        ));
        let (bridge, server) = mio_pair();
        let (r, w) = rustix::pipe::pipe().expect("pipe");
        let fds = [r.as_fd(), w.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
        let mut longer = OFFER.to_vec();
        longer.push(b'!');
        rustix::net::sendmsg(
            &bridge,
            &[IoSlice::new(&longer)],
            &mut control,
            SendFlags::empty(),
        )
        .expect("send");
        assert!(matches!(
            read_first(&server, &mut buf),
            Ok(First::Bytes { n: 30, cut: true })
        ));
        // Three descriptors, or more than the buffer holds (the kernel cuts them off): not
        // exactly two.
        for count in [3, 16] {
            let (bridge, server) = mio_pair();
            let fds: Vec<BorrowedFd<'_>> = (0..count).map(|_| r.as_fd()).collect();
            let mut space = vec![MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(count))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
            rustix::net::sendmsg(
                &bridge,
                &[IoSlice::new(OFFER)],
                &mut control,
                SendFlags::empty(),
            )
            .expect("send");
            assert!(
                matches!(
                    read_first(&server, &mut buf),
                    Ok(First::Bytes { n: 29, cut: true })
                ),
                "{count} descriptors taken as an offer"
            );
        }
    }
}
