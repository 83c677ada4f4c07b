//! phuxctl paste of 200 KiB: split by the outbox into in-limit operations, delivered in
//! order, and the child receives every byte intact.

use crate::support::{Ctl, Server, wait_until};

const SIZE: usize = 200 * 1024;

/// Printable bytes with a newline every 100 or so, from a small LCG so the content is varied
/// but the same every run.
fn content() -> Vec<u8> {
    let mut state: u32 = 0x1234_5678;
    (0..SIZE)
        .map(|i| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            if i % 101 == 100 {
                b'\n'
            } else {
                b' ' + ((state >> 24) as u8 % 95)
            }
        })
        .collect()
}

#[test]
fn a_200_kib_paste_arrives_intact() {
    // [CLIENT.PASTE.2] [CLIENT.OUTBOX.2] [INPUT.ENCODE.PASTE.1] [CLIENT.PASTE.4]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("paste.txt");
    let received = dir.path().join("received.bin");
    let data = content();
    std::fs::write(&source, &data).expect("write paste");

    // Raw mode (no line-length limit, no echo) but CR→LF on input: a paste without bracketing
    // turns LF into CR, as Enter does, and the tty turns it back.
    let script = format!(
        "stty raw -echo icrnl; echo ready; head -c {SIZE} > '{}'; echo done",
        received.display()
    );
    let id = ctl.spawn(&["/bin/sh", "-c", &script]);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));

    let out = ctl.run(&["paste", &id, "--file", source.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // [CLIENT.SUBMIT.3] Four parts, each reported, then the whole.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "part 1 of 4: delivered\npart 2 of 4: delivered\npart 3 of 4: delivered\n\
         part 4 of 4: delivered\ndelivered\n"
    );

    assert!(
        wait_until(|| std::fs::metadata(&received).is_ok_and(|m| m.len() as usize == SIZE)),
        "the child did not receive {SIZE} bytes"
    );
    let got = std::fs::read(&received).expect("read received");
    assert!(got == data, "the paste arrived changed");
}

#[test]
fn paste_reads_stdin_and_an_untrusted_unsafe_paste_is_refused() {
    // [INPUT.PASTE.SAFE.5]
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["cat"]);
    let mut child = ctl
        .command(&["paste", &id])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("phuxctl paste");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"from stdin\n").expect("write");
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "delivered\n",
        "{out:?}"
    );
    ctl.wait_screen(&id, "from stdin", |s| s.contains("from stdin"));

    // An escape sequence in an untrusted paste could drive the program: refused, unwritten.
    let dir = tempfile::tempdir().expect("tempdir");
    let evil = dir.path().join("evil");
    std::fs::write(&evil, b"ok\x1b[201~rm -rf\n").expect("write");
    let out = ctl.run(&[
        "paste",
        &id,
        "--untrusted",
        "--file",
        evil.to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("refused: UNSAFE_PASTE"),
        "{out:?}"
    );
}
