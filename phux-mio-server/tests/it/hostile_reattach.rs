//! A client that never reads sends ATTACH 200 times for a terminal whose bootstrap is
//! megabytes: the server's peak memory grows by a bounded amount, not by a bootstrap per
//! ATTACH ([QUEUE.BOOTSTRAP.1], [QUEUE.BOUND.1]); once the client reads, every ATTACH is
//! answered.

use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{CommandFrame, SpawnResult, SpawnTerminal, TerminalSize};
use phux_proto::{Frame, GroupId};

use crate::support::faults::{
    DEADLINE, FrameStream, ServerProc, eventually, hello_frame, private_tempdir, vm_hwm_kib,
};

/// Every cell of a 1024x512 screen in its own 256-colour pen, so a bootstrap is some 6 MB;
/// then `DONE` on the last row, and the terminal stays.
const PAINTER: &str = "import sys\n\
w = sys.stdout.buffer\n\
w.write(b'\\x1b[H')\n\
w.write(b''.join(b'\\x1b[38;5;%dmx' % (i % 256) for i in range(1024 * 512 - 8)))\n\
w.write(b'\\x1b[512;1H\\x1b[mDONE')\n\
w.flush()\n\
sys.stdin.read()\n";

const ATTACHES: u32 = 200;
/// What the server may grow by: its queue for the client (4 MiB of output, 1 MiB of
/// control), one bootstrap past it, and the buffers that build one. Without the bound it
/// would be a bootstrap per ATTACH: over a gigabyte.
const GROWTH_BOUND_KIB: u64 = 64 * 1024;

#[test]
fn reattaching_without_reading_holds_bounded_memory() {
    let dir = private_tempdir();
    let socket = dir.path().join("s.sock");
    let server = ServerProc::start(&socket);
    let mut c = FrameStream::connect(&socket);
    c.send(&hello_frame());
    c.wait_for("HELLO_OK", |f| matches!(f, Frame::HelloOk(_)).then_some(()));
    let mut spawn = SpawnTerminal::new(1, GroupId(1));
    spawn.command = Some(vec!["python3".into(), "-c".into(), PAINTER.into()]);
    spawn.initial_size = Some(TerminalSize {
        cols: 1024,
        rows: 512,
    });
    c.send(&Frame::SpawnTerminal(spawn));
    let t = c.wait_for("TERMINAL_SPAWNED", |f| match f {
        Frame::TerminalSpawned(s) => match &s.result {
            SpawnResult::Ok(t) => Some(t.clone()),
            SpawnResult::Err(e) => panic!("spawn failed: {e:?}"),
        },
        _ => None,
    });
    let mut rid = 10;
    let painted = eventually(DEADLINE, || {
        rid += 1;
        c.send(&Frame::Command(CommandFrame {
            request_id: rid,
            command: Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: None,
                cells: false,
            },
        }));
        c.wait_for("COMMAND_RESULT", |f| match f {
            Frame::CommandResult(r) if r.request_id == rid => Some(format!("{:?}", r.result)),
            _ => None,
        })
        .contains("DONE")
    });
    assert!(painted, "the painter's output never reached the screen");
    let before = vm_hwm_kib(server.pid()).expect("VmHWM");

    // Never read while asking: the frames pile up in the server.
    for request_id in 1000..1000 + ATTACHES {
        c.send(&Frame::Command(CommandFrame {
            request_id,
            command: Command::AttachTerminal {
                terminal: t.clone(),
            },
        }));
    }
    // Reading now shows every ATTACH was handled; the peak stays what it was at the worst.
    let last = 999 + ATTACHES;
    let mut answered = 0;
    c.wait_for("the last ATTACH's result", |f| match f {
        Frame::CommandResult(r) if r.request_id >= 1000 => {
            assert_eq!(r.result, CommandResult::Ok);
            answered += 1;
            (r.request_id == last).then_some(())
        }
        _ => None,
    });
    assert_eq!(answered, ATTACHES);
    let growth = vm_hwm_kib(server.pid())
        .expect("VmHWM")
        .saturating_sub(before);
    assert!(
        growth <= GROWTH_BOUND_KIB,
        "the server's peak memory grew by {growth} KiB over {ATTACHES} ATTACHes"
    );
}
