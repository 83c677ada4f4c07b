//! paste safety and the canonical guard.

use super::*;

#[test]
fn unsafe_untrusted_paste_is_refused_and_safe_ones_are_sanitized() {
    // [INPUT.PASTE.SAFE.5] [INPUT.PASTE.SAFE.2] [INPUT.PASTE.SAFE.3] [INPUT.ENCODE.PASTE.3]
    let (mut h, c, t) = setup();
    for (op, data) in [(1u128, &b"a\nb"[..]), (2, b"\xff\xfe"), (3, b"x\x1b[201~y")] {
        let r = apply(
            &mut h,
            c,
            op,
            &t,
            vec![paste(b"first"), untrusted_paste(data)],
        );
        assert_eq!(code(&r), Some(ErrorCode::UNSAFE_PASTE), "{data:?}");
    }
    assert!(
        h.pty(&t).read_log().is_empty(),
        "no byte of a refused batch"
    );
    assert_eq!(
        apply(&mut h, c, 4, &t, vec![untrusted_paste(b"ok\r\x1bz")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        apply(&mut h, c, 5, &t, vec![paste(b"t\nu")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"ok\r zt\ru");
}

#[test]
fn an_untrusted_multi_line_paste_goes_in_whole_under_bracketed_paste() {
    // [INPUT.PASTE.SAFE.5] [INPUT.ENCODE.PASTE.1] [INPUT.ENCODE.PASTE.3] [INPUT.ENCODE.PASTE.5]
    let (mut h, c, t) = setup();
    h.pty(&t).script(b"\x1b[?2004h");
    h.settle();
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![untrusted_paste(b"one\ntwo\x15\n")]),
        Some(CommandResult::Ok)
    );
    // The end marker stays unsafe even inside brackets: whoever made it meant to break out.
    let r = apply(&mut h, c, 2, &t, vec![untrusted_paste(b"x\x1b[201~\nrm")]);
    assert_eq!(code(&r), Some(ErrorCode::UNSAFE_PASTE));
    // A trusted paste's own end marker is written blanked: the paste cannot end early.
    assert_eq!(
        apply(&mut h, c, 3, &t, vec![paste(b"x\x1b[201~y\n")]),
        Some(CommandResult::Ok)
    );
    assert_eq!(
        h.pty(&t).read_log(),
        b"\x1b[200~one\ntwo \n\x1b[201~\x1b[200~x [201~y\n\x1b[201~"
    );
    // Bracketed paste off again: the same untrusted lines would each be Enter.
    h.pty(&t).script(b"\x1b[?2004l");
    h.settle();
    let r = apply(&mut h, c, 4, &t, vec![untrusted_paste(b"one\ntwo")]);
    assert_eq!(code(&r), Some(ErrorCode::UNSAFE_PASTE));
}

#[test]
fn canonical_guard_counts_cr_only_under_icrnl() {
    // [INPUT.CANON.1] [INPUT.CANON.2] [INPUT.CANON.3] [INPUT.CANON.6]
    let (mut h, c, t) = setup();
    let mut data = vec![b'x'; 4000];
    data.push(b'\n'); // becomes CR (bracketed paste is off)
    data.extend(vec![b'y'; 4000]);
    h.pty(&t).set_canonical(true);
    assert_eq!(
        apply(&mut h, c, 1, &t, vec![paste(&data)]),
        Some(CommandResult::Ok)
    );
    // The 4000 'y' that batch 1 left after its CR are still on the line: 96 more would make
    // it 4096 long, 95 more make it 4095.
    assert_eq!(
        code(&apply(&mut h, c, 2, &t, vec![paste(&[b'z'; 96])])),
        Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED)
    );
    assert_eq!(
        apply(&mut h, c, 3, &t, vec![paste(&[b'z'; 95])]),
        Some(CommandResult::Ok)
    );
    h.pty(&t).set_icrnl(false);
    assert_eq!(
        code(&apply(&mut h, c, 4, &t, vec![paste(&data)])),
        Some(ErrorCode::CANONICAL_LIMIT_EXCEEDED)
    );
    h.pty(&t).set_canonical(false);
    assert_eq!(
        apply(&mut h, c, 5, &t, vec![paste(&vec![b'w'; 9000])]),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log().len(), 8001 + 95 + 9000);
}

#[test]
fn canonical_refusal_of_fire_and_forget_input_is_silent() {
    // [INPUT.CANON.5]
    let (mut h, c, t) = setup();
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.recv(c);
    h.pty(&t).set_canonical(true);
    h.send(c, &input_paste(&t, &vec![b'x'; 5000], PasteTrust::Trusted));
    assert_eq!(
        h.request(
            c,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(&vec![b'y'; 5000])
            }
        ),
        Some(CommandResult::Ok)
    );
    let got = h.settle_recv(c);
    assert!(
        !got.iter()
            .any(|f| matches!(f, Frame::Error(_) | Frame::CommandResult(_))),
        "{got:?}"
    );
    assert!(h.pty(&t).read_log().is_empty());
}
