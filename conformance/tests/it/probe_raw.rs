//! The probe in raw mode on a real PTY: bytes arrive untranslated and unbuffered, control
//! characters raise no signal, and commands still work with CR.

use crate::probe_util::Probe;
use phux_mio_server::child::ChildExit;

#[test]
fn raw_mode_reports_bytes_as_read_and_canon_restores_lines() {
    let mut p = Probe::spawn();
    assert_eq!(p.command(":raw"), "TERMIOS raw -echo -isig -icrnl");
    // No ISIG: ^C is a byte, not SIGINT (which would kill the probe). No ICRNL: CR stays.
    p.send(b"\x03\r\x1b[A");
    assert_eq!(p.read_payload(5), "030d1b5b41");
    // A key press with no line end is reported at once.
    p.send(b"q");
    assert_eq!(p.read_payload(1), "71");
    p.send(b"\r:count\r");
    assert_eq!(p.read_payload(1), "0d");
    p.expect("COUNT 7 2");
    p.send(b":canon\r");
    p.expect("TERMIOS canon -echo isig icrnl");
    p.send(b"x\n");
    p.expect("READ 780a");
    p.send(b":exit 4\n");
    p.expect("EXITING 4");
    assert_eq!(p.wait_exit(), ChildExit::Exited(4));
}

#[test]
fn print_reaches_the_terminal_before_its_report() {
    let mut p = Probe::spawn();
    let before = p.output.len();
    assert_eq!(p.command(":print 1b5b3f3130303468"), "PRINTED 8");
    let shown = &p.output[before..];
    let at = shown
        .windows(8)
        .position(|w| w == b"\x1b[?1004h")
        .expect("the printed bytes");
    let report = shown
        .windows(9)
        .position(|w| w == b"PRINTED 8")
        .expect("the report");
    assert!(at < report);
}
