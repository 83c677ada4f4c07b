//! `phux-conformance wire decode|encode`, run as the built binary.

use std::process::{Command, Output};

use phux_proto::{DecodeErrorKind, Frame};

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

// Every wire vector through the CLI: frames decode to the notation and, unless marked not
// canonical, encode back to the same bytes; error vectors exit 2 and print the same typed
// error and wire code the library gives.

struct Vector {
    name: String,
    hex: String,
    reference_err: bool,
    ours: Option<String>,
}

impl Vector {
    fn expects_error(&self) -> bool {
        match self.ours.as_deref() {
            Some(o) if o.starts_with("decode error") || o.starts_with("typed error") => true,
            Some(o) if o.starts_with("decodes") => false,
            _ => self.reference_err,
        }
    }

    fn canonical(&self) -> bool {
        !self
            .ours
            .as_deref()
            .is_some_and(|o| o.contains("not canonical"))
    }
}

fn vectors() -> Vec<Vector> {
    let text = include_str!("../../../phux-proto/testdata/vectors.md");
    let mut out: Vec<Vector> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("### ") {
            out.push(Vector {
                name: name.trim().to_owned(),
                hex: String::new(),
                reference_err: false,
                ours: None,
            });
        } else if line == "```" {
            let body = lines.next().unwrap_or_default().trim().to_owned();
            if let Some(v) = out.last_mut() {
                v.hex = body;
            }
            lines.next();
        } else if let (Some(result), Some(v)) =
            (line.strip_prefix("Decoder result: `"), out.last_mut())
        {
            v.reference_err = result.starts_with("Err(");
        } else if let (Some(ours), Some(v)) = (line.strip_prefix("OURS: "), out.last_mut()) {
            v.ours = Some(ours.to_owned());
        }
    }
    out
}

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_vector_gives_its_result_through_the_cli() {
    let vectors = vectors();
    assert_eq!(vectors.len(), 65, "every vector in vectors.md is checked");
    let mut failures = Vec::new();
    for v in &vectors {
        let decoded = wire(&["decode", &v.hex]);
        let stdout = String::from_utf8_lossy(&decoded.stdout).trim().to_owned();
        let stderr = String::from_utf8_lossy(&decoded.stderr).into_owned();
        if v.expects_error() {
            let Err(err) = Frame::decode(&bytes(&v.hex)) else {
                failures.push(format!("{}: the library decodes an error vector", v.name));
                continue;
            };
            let code = err.code();
            let code_line = match err.kind() {
                // Not one whole frame: a stream decoder waits, or reads the next frame; the
                // CLI says so instead of naming a wire code.
                DecodeErrorKind::FrameTruncated { .. } => "incomplete frame".to_owned(),
                DecodeErrorKind::TrailingBytes { .. } => "after the frame".to_owned(),
                _ => format!("wire code: {} ({})", code, code.0),
            };
            if decoded.status.code() != Some(2)
                || !stderr.contains(&code_line)
                || !stdout.is_empty()
            {
                failures.push(format!(
                    "{}: want exit 2 and {code_line:?}, got {:?} {stderr:?}",
                    v.name,
                    decoded.status.code()
                ));
            }
            continue;
        }
        if !decoded.status.success() {
            failures.push(format!("{}: decode failed: {stderr}", v.name));
            continue;
        }
        let encoded = wire(&["encode", &stdout]);
        let hex = String::from_utf8_lossy(&encoded.stdout).trim().to_owned();
        if !encoded.status.success() {
            failures.push(format!("{}: encode of {stdout:?} failed", v.name));
        } else if v.canonical() && hex != v.hex {
            failures.push(format!("{}: re-encoded to {hex}, not {}", v.name, v.hex));
        } else if !v.canonical() {
            // Our canonical form decodes to the same frame.
            let again = wire(&["decode", &hex]);
            if String::from_utf8_lossy(&again.stdout).trim() != stdout {
                failures.push(format!(
                    "{}: the canonical form decodes differently",
                    v.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn too_few_bytes_or_more_than_one_frame_are_said_as_such_and_a_misspelt_field_is_named() {
    for (hex, said) in [
        ("", "incomplete frame: 0 byte(s)"),
        ("00000001", "its header declares 5 bytes, 4 given"),
        (
            "0000000c7f010408deadbeefcafef00d00",
            "1 byte(s) after the frame",
        ),
    ] {
        let out = wire(&["decode", hex]);
        assert_eq!(out.status.code(), Some(2), "{hex:?}");
        let err = stderr(&out);
        assert!(err.contains(said), "{hex:?}: {err}");
        assert!(!err.contains("FRAME_TOO_LARGE"), "{hex:?}: {err}");
    }
    // [FRAME.LENGTH.2] A zero length is a framing violation, whose code phux names "large".
    let err = stderr(&wire(&["decode", "00000000"]));
    assert!(
        err.contains("FRAME_TOO_LARGE (4), phux's code for any length outside"),
        "{err}"
    );
    let err = stderr(&wire(&["encode", "PING{nonc=1}"]));
    assert!(err.contains("\"nonc\""), "{err}");
}
