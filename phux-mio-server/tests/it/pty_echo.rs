//! Bytes written to the master reach the child; `cat` sends them back.

use phux_mio_server::{PtyWrite, SpawnSpec, spawn};

use crate::support::common::Output;

#[test]
fn cat_echoes_written_bytes() {
    let child = spawn(&SpawnSpec::new("cat")).expect("spawn cat");
    let mut out = Output::new(&child);
    assert_eq!(
        child.write(b"hello phux\n").expect("write"),
        PtyWrite::Written(11)
    );
    // Once from the line discipline's echo, once from cat itself; ONLCR turns \n into \r\n.
    assert!(
        out.wait_until(&child, |b| {
            String::from_utf8_lossy(b).matches("hello phux\r\n").count() >= 2
        }),
        "output: {:?}",
        out.text()
    );
    drop(child);
}
