//! The child sees the initial window size, and TIOCSWINSZ changes it.

use phux_mio_server::{PtyWrite, SpawnSpec, spawn};

use crate::support::common::Output;

#[test]
fn initial_size_and_resize_reach_the_child() {
    let mut spec = SpawnSpec::new("/bin/sh").args([
        "-c",
        "stty size; tput cols; read _; echo \"after $(stty size)\"",
    ]);
    spec.cols = 101;
    spec.rows = 37;
    let child = spawn(&spec).expect("spawn");
    let mut out = Output::new(&child);
    // `stty size` prints "rows cols"; `tput cols` asks the same ioctl through terminfo.
    assert!(
        out.wait_for(&child, "37 101\r\n101\r\n"),
        "output: {:?}",
        out.text()
    );
    assert_eq!(child.size().expect("size"), (101, 37));

    child.resize(120, 40).expect("resize");
    assert_eq!(child.write(b"\n").expect("write"), PtyWrite::Written(1));
    assert!(
        out.wait_for(&child, "after 40 120"),
        "output: {:?}",
        out.text()
    );
}
