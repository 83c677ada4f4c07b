//! The probe in canonical mode on a real PTY: READY, payload per line as the line discipline
//! delivers it, termios, ids, size, echo, checksum, and end of input.

use crate::probe_util::Probe;
use phux_mio_server::child::ChildExit;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

#[test]
fn canonical_payload_is_reported_per_line_in_hex() {
    let mut p = Probe::spawn();
    assert_eq!(
        p.command(":report termios"),
        "TERMIOS canon -echo isig icrnl"
    );
    p.send(b"hello\n");
    p.expect("READ 68656c6c6f0a");
    // ICRNL: the line discipline turns CR into LF before the probe reads it.
    p.send(b"a\rb\n");
    p.expect("READ 610a");
    p.expect("READ 620a");
    assert_eq!(p.command(":count"), "COUNT 10 3");
    let digest = Sha256::digest(b"hello\na\nb\n")
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
    assert_eq!(p.command(":checksum"), format!("CHECKSUM {digest} 10"));
    p.send(b":exit 0\n");
    p.expect("EXITING 0");
    assert_eq!(p.wait_exit(), ChildExit::Exited(0));
}

#[test]
fn the_probe_reports_the_argv_cwd_and_environment_it_was_started_with() {
    let hex = |s: &str| {
        s.bytes().fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
    };
    let exe = env!("CARGO_BIN_EXE_phux-conformance");
    let mut spec = Probe::spec().args(["a b", "", "--x"]);
    spec.cwd = Some("/".into());
    spec.env = Some(vec![("B".into(), String::new()), ("A".into(), "1".into())]);
    spec.term = "vt100".into();
    let mut p = Probe::spawn_with(&spec);
    assert_eq!(
        p.command(":report args"),
        format!("ARGS {} 70726f6265 612062 - 2d2d78", hex(exe))
    );
    assert_eq!(p.command(":report cwd"), "CWD 2f");
    // Exactly the environment given plus TERM, sorted.
    assert_eq!(
        p.command(":report environ"),
        "ENVIRON 413d31 423d 5445524d3d7674313030"
    );
    assert_eq!(p.command(":report env B"), "ENV B -");
    assert_eq!(p.command(":report env TERM"), "ENV TERM 7674313030");
    assert_eq!(p.command(":report env PATH"), "ENV PATH UNSET");
}

#[test]
fn the_probe_leads_its_group_session_and_the_foreground() {
    // [SIGNAL.GROUP.1] the group a server signals is the one the child leads.
    let mut p = Probe::spawn();
    let pid = p.child.pid();
    assert_eq!(
        p.command(":report pgrp"),
        format!("PGRP {pid} {pid} {pid} {pid}")
    );
    assert_eq!(p.command(":report size"), "SIZE 80 24");
    p.child.resize(100, 30).expect("resize");
    assert_eq!(p.command(":report size"), "SIZE 100 30");
}

#[test]
fn echo_on_shows_typed_input_before_the_report() {
    let mut p = Probe::spawn();
    assert_eq!(p.command(":echo on"), "TERMIOS canon echo isig icrnl");
    let before = p.output.len();
    p.send(b"zz\n");
    p.expect("READ 7a7a0a");
    let shown = String::from_utf8_lossy(&p.output[before..]).into_owned();
    assert!(shown.starts_with("zz\n"), "echo missing: {shown:?}");
    assert_eq!(p.command(":echo off"), "TERMIOS canon -echo isig icrnl");
}

#[test]
fn ctrl_d_at_the_start_of_a_line_ends_input_and_the_probe() {
    let mut p = Probe::spawn();
    // Ctrl-D mid-line hands over the partial line; the probe waits for its end.
    p.send(b"part\x04");
    p.send(b"\x04");
    p.expect("READ 70617274");
    p.expect("EOF");
    p.expect("EXITING 0");
    assert_eq!(p.wait_exit(), ChildExit::Exited(0));
}
