//! `phux-conformance wire decode|encode`, run as the built binary.

use std::process::{Command, Output};

fn wire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_phux-conformance"))
        .arg("wire")
        .args(args)
        .output()
        .expect("the phux-conformance binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// phux 0.8 section 4.1's PING example.
const PING_HEX: &str = "0000000c7f010408deadbeefcafef00d";
const PING_TEXT: &str = "PING{nonce=0xdeadbeefcafef00d}";

#[test]
fn decode_prints_the_notation() {
    let out = wire(&["decode", PING_HEX]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{PING_TEXT}\n"));
}

#[test]
fn encode_prints_lowercase_hex() {
    let out = wire(&["encode", PING_TEXT]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{PING_HEX}\n"));
}

#[test]
fn decode_of_an_encoded_command_gives_the_notation_back() {
    let text = "COMMAND{request_id=7 command=APPLY_INPUT{\
                operation_id=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a terminal=local:3 \
                events=[PASTE{trust=trusted data=\"ls\\r\"}]}}";
    let encoded = wire(&["encode", text]);
    assert!(encoded.status.success(), "{}", stderr(&encoded));
    let hex = stdout(&encoded);
    let decoded = wire(&["decode", hex.trim()]);
    assert!(decoded.status.success(), "{}", stderr(&decoded));
    assert_eq!(stdout(&decoded).trim_end(), text);
}

#[test]
fn a_frame_that_does_not_decode_exits_2_with_the_typed_error_and_code() {
    // vectors.md inline_apply_input_zero_id: an all-zero operation id.
    let hex = "000000303101040401020304020425140000000000000000000000000000000000000000\
               050002020003000000000568656c6c6f";
    let out = wire(&["decode", hex]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("operation id must not be zero"), "{err}");
    assert!(err.contains("wire code: MALFORMED_MESSAGE (3)"), "{err}");

    let out = wire(&["decode", "0000000102"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("wire code: UNKNOWN_MESSAGE_TYPE (2)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_hex_and_bad_notation_exit_2() {
    let out = wire(&["decode", "0000000c7f0z"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bad hex"), "{}", stderr(&out));

    let out = wire(&["encode", "PING{nonce=1 colour=2}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown field \"colour\" in PING"),
        "{}",
        stderr(&out)
    );

    let out = wire(&["encode", "PING{nonce=\"1}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("line 1, column 12: unterminated string"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_explains_both_subcommands() {
    let out = wire(&["--help"]);
    assert!(out.status.success());
    let help = stdout(&out);
    assert!(help.contains("decode") && help.contains("encode"), "{help}");
    let out = wire(&["decode", "--help"]);
    assert!(stdout(&out).contains("wire error code"), "{}", stdout(&out));
}
