//! termios reads the child's line discipline: canonical for `cat`, raw after `stty raw`.

use phux_core::writer::Termios;
use phux_mio_server::{SpawnSpec, spawn};

use crate::support::common::Output;

#[test]
fn cat_runs_canonical() {
    let child = spawn(&SpawnSpec::new("cat")).expect("spawn");
    let f = child.termios().expect("termios");
    assert_eq!(f, Termios::COOKED);
}

#[test]
fn stty_raw_turns_canonical_mode_off() {
    let child =
        spawn(&SpawnSpec::new("/bin/sh").args(["-c", "stty raw; echo READY; cat"])).expect("spawn");
    let mut out = Output::new(&child);
    assert!(out.wait_for(&child, "READY"), "output: {:?}", out.text());
    // stty ran before the echo, so the change is visible by now.
    let f = child.termios().expect("termios");
    assert!(!f.icanon && !f.icrnl, "{f:?}");
}

#[test]
fn stty_igncr_is_reported() {
    let child =
        spawn(&SpawnSpec::new("/bin/sh").args(["-c", "stty igncr -icrnl; echo READY; cat"]))
            .expect("spawn");
    let mut out = Output::new(&child);
    assert!(out.wait_for(&child, "READY"), "output: {:?}", out.text());
    let f = child.termios().expect("termios");
    assert!(f.icanon && f.igncr && !f.icrnl, "{f:?}");
}
