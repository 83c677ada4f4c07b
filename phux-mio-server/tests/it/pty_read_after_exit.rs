//! After the child exits, reads still return everything it wrote, then EOF, distinctly from
//! "nothing yet" (WouldBlock).

use std::fmt::Write;

use phux_mio_server::{ChildExit, PtyRead, SpawnSpec, spawn};

use crate::support::common::{Output, wait_exit};

#[test]
fn output_is_drained_then_eof() {
    // 3000 bytes fit in the kernel's buffer, so the child exits without anyone reading.
    let script = "i=0; while [ $i -lt 100 ]; do printf '%028d\\n' $i; i=$((i+1)); done; exit 3";
    let mut child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", script])).expect("spawn");
    assert_eq!(wait_exit(&mut child), ChildExit::Exited(3));

    let mut out = Output::new(&child);
    assert!(
        out.wait_eof(&child),
        "no EOF after exit; got {} bytes",
        out.bytes.len()
    );
    let want = (0..100).fold(String::new(), |mut s, i| {
        writeln!(s, "{i:028}\r").expect("format");
        s
    });
    assert_eq!(out.text(), want);
    // EOF is sticky, never WouldBlock.
    let mut buf = [0u8; 16];
    assert_eq!(child.read(&mut buf).expect("read"), PtyRead::Eof);
}
