//! The server may hold bulk output back for a moment so that a streaming program's viewers get
//! a few large writes instead of many small ones. Held output must still arrive when nothing
//! follows it: a burst that ends the program's output for a while is delivered whole, without
//! waiting for more output, an exit or a client request. So is output written a byte at a
//! time, whose short reads the server gathers while more is behind them.

use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};

use crate::support::client::{Client, Server};

/// Bursts of these sizes, one per line of input. The master hands out at most 4 KiB per
/// read, and where a burst's reads are cut depends on timing, so several sizes make it likely
/// that some burst ends with a read the server treats as bulk (2 KiB or more).
const BURSTS: [usize; 8] = [4000, 4096, 8192, 2500, 12288, 6000, 70000, 3000];

/// Starts `sh -c script` and attaches to its terminal.
pub(crate) fn spawn_attached(c: &mut Client, script: &str) -> TerminalId {
    let t = c.spawn(&["/bin/sh", "-c", script]);
    attach(c, &t);
    t
}

pub(crate) fn attach(c: &mut Client, t: &TerminalId) {
    assert_eq!(
        c.command(Command::AttachTerminal {
            terminal: t.clone()
        }),
        CommandResult::Ok
    );
}

/// Sends the line the child waits for (operation `op`), acknowledged.
pub(crate) fn send_go(c: &mut Client, t: &TerminalId, op: u128) {
    let go = ApplyInput {
        operation_id: OperationId::from_u128(op).expect("id"),
        terminal: t.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"go\r".to_vec(),
        })],
    };
    assert_eq!(c.command(Command::ApplyInput(go)), CommandResult::Ok);
}

/// How many times `byte` occurs in the terminal's output among `frames`.
fn count_output(frames: &[Frame], t: &TerminalId, byte: u8) -> usize {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::TerminalOutput(o) if &o.terminal == t => Some(&o.bytes),
            _ => None,
        })
        .flatten()
        .filter(|&&b| b == byte)
        .count()
}

/// Waits until the terminal's output has carried `want` copies of `byte` in all, counted over
/// every frame seen so far (a reply's wait included). Panics at the client's deadline (tens
/// of seconds): output was stranded.
fn await_output(c: &mut Client, t: &TerminalId, byte: u8, want: usize) -> usize {
    let mut seen = count_output(&c.seen, t, byte);
    while seen < want {
        let frame = c.wait_for("the rest of the output", |f| Some(f.clone()));
        seen += count_output(std::slice::from_ref(&frame), t, byte);
    }
    seen
}

// [OUTPUT.GATHER.2]
#[test]
fn bursts_followed_by_silence_are_delivered_whole() {
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    // Quiet until a line arrives, then one burst; the child lives on between bursts.
    let sizes: Vec<String> = BURSTS.iter().map(ToString::to_string).collect();
    let script = format!(
        "for n in {}; do read go; head -c $n /dev/zero | tr '\\0' x; done; exec sleep 600",
        sizes.join(" ")
    );
    let t = spawn_attached(&mut c, &script);
    let mut want = 0;
    for (i, burst) in BURSTS.into_iter().enumerate() {
        send_go(&mut c, &t, 0xb0057 + i as u128);
        want += burst;
        assert_eq!(
            await_output(&mut c, &t, b'x', want),
            want,
            "burst {i} of {burst} bytes"
        );
    }
}

/// A program writing a byte at a time, as fast as it can, then falling silent: every read of
/// the master is short, and the server reads on after each while more is behind it
/// ([OUTPUT.GATHER.1]). The last bytes must still arrive, with no later output to prompt them.
// [OUTPUT.GATHER.2]
#[test]
fn byte_at_a_time_output_is_delivered_whole() {
    const BYTES: usize = 3000;
    let server = Server::start();
    let mut c = server.connect();
    c.hello();
    let script = format!(
        "read go; i=0; while [ $i -lt {BYTES} ]; do printf y; i=$((i+1)); done; exec sleep 600"
    );
    let t = spawn_attached(&mut c, &script);
    send_go(&mut c, &t, 0xb17e);
    assert_eq!(await_output(&mut c, &t, b'y', BYTES), BYTES);
}

/// Several viewers of one streaming program: the server spreads its writes to them between its
/// reads of the master, one viewer at a time. Each still gets the whole stream, in order, and
/// the last of it arrives with nothing after it to prompt a write.
#[test]
fn every_viewer_of_a_stream_gets_all_of_it_in_order() {
    const LINES: usize = 100_000;
    const VIEWERS: usize = 5;
    let server = Server::start();
    let mut ctl = server.connect();
    ctl.hello();
    let t = spawn_attached(&mut ctl, &format!("read go; seq 1 {LINES}; exec sleep 600"));
    let mut viewers: Vec<Client> = (0..VIEWERS)
        .map(|_| {
            let mut v = server.connect();
            v.hello();
            attach(&mut v, &t);
            v
        })
        .collect();
    send_go(&mut ctl, &t, 0x5e9);
    let expected = (1..=LINES).fold(String::new(), |mut s, i| {
        s.push_str(&i.to_string());
        s.push_str("\r\n");
        s
    });
    for (i, v) in viewers.iter_mut().enumerate() {
        let mut stream = Vec::new();
        while !stream.ends_with(expected.as_bytes()) {
            let bytes = v.wait_for("the rest of the stream", |f| match f {
                Frame::TerminalOutput(o) if o.terminal == t => Some(o.bytes.clone()),
                _ => None,
            });
            stream.extend_from_slice(&bytes);
            assert!(
                stream.len() < expected.len() + 64,
                "viewer {i}: more than the stream and the echoed line"
            );
        }
    }
}
