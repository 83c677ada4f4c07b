//! Signals to the probe's process group on a real PTY: handled, ignored and default
//! dispositions, and a grandchild in the same group that reports what it receives.

use crate::probe_util::Probe;
use phux_mio_server::child::{ChildExit, GroupSignal};

/// The next two reports, in whichever order they came.
fn two(p: &mut Probe) -> Vec<String> {
    let mut got = vec![p.next(), p.next()];
    got.sort();
    got
}

#[test]
fn a_signal_to_the_group_reaches_the_probe_and_its_grandchild() {
    // [SIGNAL.GROUP.1] every process in the terminal's group, grandchildren included.
    let mut p = Probe::spawn();
    assert_eq!(p.command(":handle INT"), "HANDLING INT");
    assert_eq!(p.command(":handle TERM"), "HANDLING TERM");
    assert_eq!(p.command(":grandchild"), "GRANDCHILD READY");
    p.signal(GroupSignal::Interrupt);
    assert_eq!(two(&mut p), ["GRANDCHILD SIGNAL INT", "SIGNAL INT"]);
    p.signal(GroupSignal::Terminate);
    assert_eq!(two(&mut p), ["GRANDCHILD SIGNAL TERM", "SIGNAL TERM"]);
    // FREEZE then RESUME: the stop is invisible, the SIGCONT is not.
    assert_eq!(p.command(":handle CONT"), "HANDLING CONT");
    p.signal(GroupSignal::Freeze);
    p.signal(GroupSignal::Resume);
    assert_eq!(two(&mut p), ["GRANDCHILD SIGNAL CONT", "SIGNAL CONT"]);
    assert_eq!(p.command(":exit 7"), "EXITING 7");
    assert_eq!(p.wait_exit(), ChildExit::Exited(7));
}

#[test]
fn sigint_with_its_default_disposition_kills_the_probe() {
    let mut p = Probe::spawn();
    p.signal(GroupSignal::Interrupt);
    assert_eq!(p.wait_exit(), ChildExit::Signaled(2));
}

#[test]
fn an_ignored_sigterm_changes_nothing_and_the_default_kills() {
    let mut p = Probe::spawn();
    assert_eq!(p.command(":ignore TERM"), "IGNORING TERM");
    p.signal(GroupSignal::Terminate);
    // Still alive and reading, and nothing was reported for the signal.
    assert_eq!(p.command(":mark alive"), "MARK alive");
    assert_eq!(p.command(":default TERM"), "DEFAULT TERM");
    p.signal(GroupSignal::Terminate);
    assert_eq!(p.wait_exit(), ChildExit::Signaled(15));
}
