//! Every vector in `testdata/vectors.md`, parsed from the file so none can be skipped: each
//! decodes to its named result (our rules where the `OURS:` line says so) and, unless marked
//! "not canonical", re-encodes to the same bytes; each error vector gives its typed error.

use phux_proto::command::{ApplyInput, Command};
use phux_proto::event::{AgentEvent, ControlAction, Lifecycle, TerminalControl};
use phux_proto::frame::*;
use phux_proto::input::*;
use phux_proto::{
    ClientId, DecodeErrorKind, ErrorCode, Frame, FrameType, GroupId, OperationId, TerminalId,
};

/// One vector as the file states it.
#[derive(Debug)]
struct Vector {
    name: String,
    bytes: Vec<u8>,
    /// The reference decoder's result line, if any.
    reference: Option<String>,
    /// Our rule, where it differs or is spelled out.
    ours: Option<String>,
}

impl Vector {
    fn expects_error(&self) -> bool {
        if let Some(ours) = &self.ours {
            if ours.starts_with("decode error") || ours.starts_with("typed error") {
                return true;
            }
            if ours.starts_with("decodes") {
                return false;
            }
        }
        self.reference
            .as_deref()
            .is_some_and(|r| r.starts_with("Err("))
    }

    fn canonical(&self) -> bool {
        !self
            .ours
            .as_deref()
            .is_some_and(|o| o.contains("not canonical"))
    }

    /// The reference's error name: `Err(UnexpectedEof)` → `UnexpectedEof`.
    fn reference_error(&self) -> Option<&str> {
        let r = self.reference.as_deref()?.strip_prefix("Err(")?;
        Some(r.split(|c: char| !c.is_alphanumeric()).next().unwrap_or(""))
    }
}

fn hex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn parse_vectors() -> Vec<Vector> {
    let text = include_str!("../../testdata/vectors.md");
    let mut vectors: Vec<Vector> = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("### ") {
            vectors.push(Vector {
                name: name.trim().to_owned(),
                bytes: Vec::new(),
                reference: None,
                ours: None,
            });
        } else if line == "```" {
            let body = lines.next().expect("hex line");
            assert_eq!(lines.next(), Some("```"), "one hex line per block");
            let v = vectors.last_mut().expect("hex block before any vector");
            assert!(v.bytes.is_empty(), "{}: two hex blocks", v.name);
            v.bytes = hex(body.trim());
        } else if let Some(result) = line.strip_prefix("Decoder result: `") {
            let v = vectors.last_mut().expect("result before any vector");
            v.reference = Some(result.trim_end_matches('`').to_owned());
        } else if let Some(ours) = line.strip_prefix("OURS: ") {
            let v = vectors.last_mut().expect("OURS before any vector");
            v.ours = Some(ours.to_owned());
        }
    }
    vectors
}

/// The one table from reference error names to our typed errors, per error vector:
/// (vector, reference name, our kind, our wire code, request id carried).
fn error_table() -> Vec<(
    &'static str,
    &'static str,
    DecodeErrorKind,
    ErrorCode,
    Option<u32>,
)> {
    use DecodeErrorKind as K;
    let malformed = ErrorCode::MALFORMED_MESSAGE;
    let framing = ErrorCode::FRAME_TOO_LARGE;
    let unknown_type = ErrorCode::UNKNOWN_MESSAGE_TYPE;
    let enum_value = |what, value| K::UnknownEnumValue { what, value };
    vec![
        // Reference InvalidInputOperationId = our ZeroOperationId. [INPUT.APPLY.2]
        (
            "inline_apply_input_zero_id",
            "InvalidInputOperationId",
            K::ZeroOperationId,
            malformed,
            Some(0x01020304),
        ),
        (
            "inline_apply_input_unknown_event_tag",
            "UnknownEnumValue",
            enum_value("InputEvent", 255),
            malformed,
            Some(0x01020304),
        ),
        // Reference ApplyInputLimitExceeded = our LimitExceeded. [INPUT.APPLY.3]
        (
            "inline_apply_input_count_257",
            "ApplyInputLimitExceeded",
            K::LimitExceeded {
                what: "APPLY_INPUT events",
                limit: 256,
                actual: 257,
            },
            malformed,
            Some(0x01020304),
        ),
        // A buffer shorter than its header declares: for a whole-frame decode this is
        // framing (a message transport's size mismatch), which we name FrameTruncated.
        (
            "inline_apply_input_truncated",
            "UnexpectedEof",
            K::FrameTruncated {
                needed: 52,
                available: 24,
            },
            framing,
            None,
        ),
        // A framing-valid HELLO with no fields: the reference says UnexpectedEof, we name
        // the missing required field.
        (
            "raw_min_frame_len1_type01",
            "UnexpectedEof",
            K::MissingField,
            malformed,
            None,
        ),
        // DEVIATION: type 0x02 is ATTACH, which we do not speak, so ours is
        // UnknownFrameType{0x02} (UNKNOWN_MESSAGE_TYPE), not the reference's UnexpectedEof
        // from decoding an ATTACH body. The vector pins framing, which agrees: 6 bytes, one frame.
        (
            "inline_framing_split_second",
            "UnexpectedEof",
            K::UnknownFrameType { tag: 0x02 },
            unknown_type,
            None,
        ),
        (
            "inline_framing_partial_body",
            "UnexpectedEof",
            K::FrameTruncated {
                needed: 8,
                available: 6,
            },
            framing,
            None,
        ),
        (
            "raw_truncated_header",
            "UnexpectedEof",
            K::FrameTruncated {
                needed: 4,
                available: 3,
            },
            framing,
            None,
        ),
        // Reference LengthOverflow = our FrameLength. [FRAME.LENGTH.1]
        (
            "raw_zero_length",
            "LengthOverflow",
            K::FrameLength { len: 0 },
            framing,
            None,
        ),
        // Reference UnknownFrameKind = our UnknownFrameType. [FRAME.TYPE.1]
        (
            "raw_retired_0x91",
            "UnknownFrameKind",
            K::UnknownFrameType { tag: 0x91 },
            unknown_type,
            None,
        ),
        // Reference UnknownEnumValue{Command} = our UnknownCommand, with the request id
        // (rule R7). [ERROR.COMMAND.1]
        (
            "raw_command_unknown_tag",
            "UnknownEnumValue",
            K::UnknownCommand { tag: 0x7f },
            ErrorCode::INVALID_COMMAND,
            Some(1),
        ),
        (
            "raw_terminal_spawned_unknown_result",
            "UnknownEnumValue",
            enum_value("SpawnResult", 254),
            malformed,
            None,
        ),
        (
            "raw_terminal_spawned_unknown_spawn_error",
            "UnknownEnumValue",
            enum_value("SpawnError", 254),
            malformed,
            None,
        ),
        (
            "raw_hello_ok_without_profile",
            "UnexpectedEof",
            K::MissingField,
            malformed,
            None,
        ),
        (
            "raw_hello_truncated_caps",
            "UnexpectedEof",
            K::UnexpectedEof,
            malformed,
            None,
        ),
        (
            "raw_hello_without_caps",
            "UnexpectedEof",
            K::MissingField,
            malformed,
            None,
        ),
        (
            "raw_hello_unknown_color",
            "UnknownEnumValue",
            enum_value("ColorSupport", 255),
            malformed,
            None,
        ),
        (
            "raw_hello_invalid_utf8_name",
            "InvalidUtf8",
            K::InvalidUtf8,
            malformed,
            None,
        ),
        (
            "raw_length_over_cap",
            "LengthOverflow",
            K::FrameLength { len: 0x0200_0000 },
            framing,
            None,
        ),
        (
            "raw_length_exceeds_buffer",
            "UnexpectedEof",
            K::FrameTruncated {
                needed: 104,
                available: 5,
            },
            framing,
            None,
        ),
        (
            "raw_unknown_type_0x42",
            "UnknownFrameKind",
            K::UnknownFrameType { tag: 0x42 },
            unknown_type,
            None,
        ),
        (
            "raw_truncated_ping",
            "UnexpectedEof",
            K::FrameTruncated {
                needed: 13,
                available: 8,
            },
            framing,
            None,
        ),
        // Ours only (the reference accepts these): rules R1, R2, R3, R6.
        (
            "raw_ping_noncanonical_varints",
            "",
            K::NonCanonicalVarint,
            malformed,
            None,
        ),
        (
            "raw_ping_wire_type_0",
            "",
            K::WireType { found: 0 },
            malformed,
            None,
        ),
        (
            "raw_ping_duplicate_field",
            "",
            K::DuplicateField { id: 1 },
            malformed,
            None,
        ),
        (
            "raw_input_key_unknown_mods_composing2",
            "",
            K::InvalidBool { value: 2 },
            malformed,
            None,
        ),
    ]
}

fn local(id: u32) -> TerminalId {
    TerminalId::Local(id)
}

fn opid_5a() -> OperationId {
    OperationId::new([0x5a; 16]).unwrap()
}

fn key(
    action: KeyAction,
    key: PhysicalKey,
    mods: u16,
    text: Option<&str>,
    unshifted: Option<u32>,
    composing: bool,
) -> KeyEvent {
    KeyEvent {
        action,
        key,
        mods: ModSet(mods),
        consumed_mods: ModSet::NONE,
        composing,
        text: text.map(str::to_owned),
        unshifted_codepoint: unshifted,
    }
}

fn spawn(request_id: u32) -> SpawnTerminal {
    SpawnTerminal::new(request_id, GroupId(1))
}

/// What every successfully decoding vector must decode to.
fn expected_frame(name: &str) -> Option<Frame> {
    let s = |t: &str| t.to_owned();
    Some(match name {
        "snap_detach" | "raw_detach_with_unknown_field" => Frame::Detach,
        "snap_detached" | "raw_detached_empty" => Frame::Detached(Detached::default()),
        "snap_detached_reason" => Frame::Detached(Detached {
            reason: Some(DetachReason::SERVER_SHUTDOWN),
            message: s("server is stopping"),
        }),
        "raw_detached_unknown_reason" => Frame::Detached(Detached {
            reason: Some(DetachReason(0x7f)),
            message: s("from the future"),
        }),
        "snap_error_session_not_found" => Frame::Error(ErrorFrame {
            request_id: None,
            code: ErrorCode::SESSION_NOT_FOUND,
            message: s("no such session: 'work'"),
        }),
        "snap_error_with_request_id_invalid_command" => Frame::Error(ErrorFrame {
            request_id: Some(0x2a),
            code: ErrorCode::INVALID_COMMAND,
            message: s("missing field: terminal_id"),
        }),
        "snap_error_internal_max_code" => Frame::Error(ErrorFrame {
            request_id: None,
            code: ErrorCode::INTERNAL_ERROR,
            message: String::new(),
        }),
        "snap_input_key_letter_a_press" => Frame::InputKey(InputKey {
            terminal: local(7),
            event: key(
                KeyAction::Press,
                PhysicalKey::KEY_A,
                0,
                Some("a"),
                Some(0x61),
                false,
            ),
        }),
        "snap_input_key_no_text" => Frame::InputKey(InputKey {
            terminal: local(1),
            event: key(
                KeyAction::Release,
                PhysicalKey::ESCAPE,
                0x0003,
                None,
                None,
                false,
            ),
        }),
        "raw_input_key_unknown_physical_key" => Frame::InputKey(InputKey {
            terminal: local(1),
            event: key(KeyAction::Press, PhysicalKey(999), 0, None, None, false),
        }),
        "snap_input_mouse_left_click" => Frame::InputMouse(InputMouse {
            terminal: local(0x42),
            event: MouseEvent {
                action: MouseAction::Press,
                button: MouseButton::Left,
                mods: ModSet::NONE,
                x: 120.0,
                y: 40.5,
            },
        }),
        "snap_input_focus_gained" => Frame::InputFocus(InputFocus {
            terminal: local(3),
            event: FocusEvent::Gained,
        }),
        "snap_input_focus_lost" => Frame::InputFocus(InputFocus {
            terminal: local(3),
            event: FocusEvent::Lost,
        }),
        "snap_input_paste_trusted_ascii" => Frame::InputPaste(InputPaste {
            terminal: local(5),
            event: PasteEvent {
                trust: PasteTrust::Trusted,
                data: b"hello world".to_vec(),
            },
        }),
        "snap_spawn_terminal_minimal" => Frame::SpawnTerminal(spawn(1)),
        "snap_spawn_terminal_full" => Frame::SpawnTerminal(SpawnTerminal {
            command: Some(vec![s("zsh"), s("-i")]),
            cwd: Some(s("/home/u/src")),
            env: Some(vec![
                (s("TERM"), s("xterm-256color")),
                (s("LANG"), s("en_US.UTF-8")),
            ]),
            owner_terminal: Some(local(42)),
            agent_session: Some(
                br#"{"plugin_id":"com.phux.agents","native_id":"session-42"}"#.to_vec(),
            ),
            initial_size: Some(TerminalSize {
                cols: 132,
                rows: 43,
            }),
            ..spawn(2)
        }),
        "snap_spawn_terminal_term_field" => Frame::SpawnTerminal(SpawnTerminal {
            term: Some(s("ghostty")),
            ..spawn(3)
        }),
        "snap_terminal_spawned_ok" => Frame::TerminalSpawned(TerminalSpawned {
            request_id: 1,
            result: SpawnResult::Ok(local(0x2a)),
        }),
        "snap_terminal_spawned_err_group_not_found" => Frame::TerminalSpawned(TerminalSpawned {
            request_id: 7,
            result: SpawnResult::Err(SpawnError::GroupNotFound),
        }),
        "snap_terminal_spawned_err_spawn_failed" => Frame::TerminalSpawned(TerminalSpawned {
            request_id: 8,
            result: SpawnResult::Err(SpawnError::SpawnFailed(s("no pty available"))),
        }),
        "snap_terminal_closed_with_exit_code" => Frame::TerminalClosed(TerminalClosed {
            terminal: local(0x2a),
            exit_status: Some(0),
        }),
        "snap_terminal_closed_signal_unknown" => Frame::TerminalClosed(TerminalClosed {
            terminal: local(0x2a),
            exit_status: None,
        }),
        "snap_terminal_resize_standard" => Frame::TerminalResize(TerminalResize {
            terminal: local(0x2a),
            size: TerminalSize { cols: 80, rows: 24 },
        }),
        "cmd_apply_input_inline_fixture" => Frame::Command(CommandFrame {
            request_id: 0x01020304,
            command: Command::ApplyInput(ApplyInput {
                operation_id: opid_5a(),
                terminal: local(5),
                events: vec![
                    InputEvent::Focus(FocusEvent::Gained),
                    InputEvent::Paste(PasteEvent {
                        trust: PasteTrust::Trusted,
                        data: b"hello".to_vec(),
                    }),
                ],
            }),
        }),
        "raw_get_screen_pre_cells" => Frame::Command(CommandFrame {
            request_id: 7,
            command: Command::GetScreen {
                terminal: local(9),
                request_scrollback: Some(3),
                cells: false,
            },
        }),
        "raw_command_shutdown_no_request_id" => Frame::Command(CommandFrame {
            request_id: 0,
            command: Command::Shutdown,
        }),
        "raw_event_unknown_tag_7f" => Frame::Event(EventFrame {
            terminal: None,
            event: AgentEvent::Unknown {
                tag: 0x7f,
                body: vec![0xde, 0xad, 0xbe, 0xef],
            },
        }),
        "raw_event_unknown_tag_0b" => Frame::Event(EventFrame {
            terminal: None,
            event: AgentEvent::Unknown {
                tag: 0x0b,
                body: vec![1, 2, 3],
            },
        }),
        "raw_ping_unknown_field_99_first" => Frame::Ping(Ping {
            nonce: 0x0102030405060708,
        }),
        "raw_ping_field_trailing_bytes" => Frame::Ping(Ping { nonce: 7 }),
        "raw_bell_trailing_unknown_field_250" => Frame::Bell(Bell {
            terminal: local(42),
        }),
        "snap_bell" => Frame::Bell(Bell {
            terminal: local(0xbe),
        }),
        "raw_apply_input_zero_events" => Frame::Command(CommandFrame {
            request_id: 1,
            command: Command::ApplyInput(ApplyInput {
                operation_id: opid_5a(),
                terminal: local(5),
                events: vec![],
            }),
        }),
        "raw_hello_ok_one_byte_server_caps" => Frame::HelloOk(HelloOk {
            version: ProtocolVersion::CURRENT,
            capabilities: ServerCapabilities {
                layers: LayerSet::all(),
                features: ServerFeatures::empty(),
            },
            server_id: vec![],
            profile: BootstrapProfile::SynthesizedVtRaw,
            max_chunk_bytes: ByteLimit::new(262_144).unwrap(),
            max_history_page_bytes: ByteLimit::new(1_048_576).unwrap(),
        }),
        "raw_subscribe_terminal_events_unknown_type" => Frame::Command(CommandFrame {
            request_id: 1,
            command: Command::SubscribeTerminalEvents {
                terminal: local(5),
                event_types: vec![
                    phux_proto::command::TerminalEventType(9),
                    phux_proto::command::TerminalEventType::COMMAND_STARTED,
                ],
            },
        }),
        "snap_viewport_resize_cells_only" => Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols: 120,
                rows: 40,
                pixel_w: None,
                pixel_h: None,
            },
        }),
        "snap_viewport_resize_with_pixels" => Frame::ViewportResize(ViewportResize {
            viewport: ViewportInfo {
                cols: 120,
                rows: 40,
                pixel_w: Some(1920),
                pixel_h: Some(1080),
            },
        }),
        _ => return None,
    })
}

#[test]
fn every_vector_decodes_as_named() {
    let vectors = parse_vectors();
    // 21 snapshot goldens + 11 inline arrays + 30 hand-built + 3 BELL/VIEWPORT goldens.
    assert_eq!(vectors.len(), 65, "vector count changed: update this test");
    let table = error_table();
    let mut failures = Vec::new();
    let mut errors_seen = 0;
    for v in &vectors {
        assert!(!v.bytes.is_empty(), "{}: no hex block", v.name);
        let decoded = Frame::decode(&v.bytes);
        if v.expects_error() {
            errors_seen += 1;
            let Some(&(_, reference, kind, code, request_id)) =
                table.iter().find(|row| row.0 == v.name)
            else {
                failures.push(format!("{}: error vector missing from the table", v.name));
                continue;
            };
            if let Some(r) = v.reference_error()
                && r != reference
                && !reference.is_empty()
            {
                failures.push(format!("{}: file names {r}, table {reference}", v.name));
            }
            match decoded {
                Ok(frame) => failures.push(format!("{}: decoded to {frame:?}", v.name)),
                Err(e) => {
                    if e.kind() != kind || e.code() != code || e.request_id() != request_id {
                        failures.push(format!(
                            "{}: got {:?} {} {:?}, want {kind:?} {code} {request_id:?}",
                            v.name,
                            e.kind(),
                            e.code(),
                            e.request_id()
                        ));
                    }
                }
            }
        } else {
            let Some(expected) = expected_frame(&v.name) else {
                failures.push(format!("{}: no expected frame in this test", v.name));
                continue;
            };
            match decoded {
                Err(e) => failures.push(format!("{}: {e}", v.name)),
                Ok(frame) => {
                    if frame != expected {
                        failures.push(format!("{}: {frame:?} != {expected:?}", v.name));
                    }
                    let again = frame.to_bytes();
                    if v.canonical() && again != v.bytes {
                        failures.push(format!("{}: re-encoded {again:02x?}", v.name));
                    }
                    // Non-canonical or not, our encoding is canonical and decodes the same.
                    if Frame::decode(&again).as_ref() != Ok(&frame) {
                        failures.push(format!("{}: canonical form does not round-trip", v.name));
                    }
                }
            }
        }
    }
    assert_eq!(errors_seen, table.len(), "error table rows unused");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// [COMMAND.ENVELOPE.1] DIGEST 4.4's example.
#[test]
fn kill_terminal_example() {
    let frame = Frame::Command(CommandFrame {
        request_id: 3,
        command: Command::KillTerminal {
            terminal: local(42),
        },
    });
    let bytes = hex("00000011310104040000000302040603000000002a");
    assert_eq!(frame.to_bytes(), bytes);
    assert_eq!(Frame::decode(&bytes), Ok(frame));
}

// [PING.ECHO.1] DIGEST 4.1's example.
#[test]
fn ping_example() {
    let frame = Frame::Ping(Ping {
        nonce: 0xdead_beef_cafe_f00d,
    });
    let bytes = hex("0000000c7f010408deadbeefcafef00d");
    assert_eq!(frame.to_bytes(), bytes);
    assert_eq!(Frame::decode(&bytes), Ok(frame));
}

// [EVENT.FRAME.1] DIGEST 7.6's terminal_control example: ACQUIRED by client 3 on local 5.
#[test]
fn terminal_control_example() {
    let frame = Frame::Event(EventFrame {
        terminal: Some(local(5)),
        event: AgentEvent::TerminalControl(TerminalControl {
            lifecycle: Lifecycle::Running,
            exit_status: None,
            input_holder: Some(ClientId(3)),
            action: ControlAction::Acquired,
            actor: Some(ClientId(3)),
        }),
    });
    let bytes = hex(
        "0000001eb3010405000000000502041208 0000000d 00 00 01 00000003 00 01 00000003"
            .replace(' ', "")
            .as_str(),
    );
    assert_eq!(frame.to_bytes(), bytes);
    assert_eq!(Frame::decode(&bytes), Ok(frame));
}

// [HELLO.CAPS.1] DIGEST 3.2: what the reference CLI sends is our default.
#[test]
fn default_client_capabilities_bytes() {
    let hello = Frame::Hello(Hello {
        client_name: "x".into(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    });
    let bytes = hello.to_bytes();
    let caps = hex("00010703010000060000000000000000000000000004000000100000");
    assert!(bytes.ends_with(&caps), "{bytes:02x?}");
    assert_eq!(
        bytes[bytes.len() - caps.len() - 3..bytes.len() - caps.len()],
        [0x05, 0x04, 28]
    );
    assert_eq!(Frame::decode(&bytes), Ok(hello));
}

// [INPUT.DEDUPE.1] DIGEST 8.4: the digest preimage is the fixture re-encoded with request 0.
#[test]
fn apply_input_digest_preimage() {
    use sha2::{Digest, Sha256};
    let fixture = hex(
        "000000303101040401020304020425145a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a00000000050002020003000000000568656c6c6f",
    );
    let Ok(Frame::Command(mut command)) = Frame::decode(&fixture) else {
        panic!("fixture decodes as a COMMAND");
    };
    command.request_id = 0;
    let preimage = Frame::Command(command).to_bytes();
    assert_eq!(preimage[..11], hex("0000003031010404000000")[..]);
    let digest = Sha256::digest(&preimage);
    let want = hex("f97996caa1e53e93b5617535bde05eb6b8ab1e1eab20a1537996b11e0b7d26d3");
    assert_eq!(digest[..], want[..]);
}

#[test]
fn frame_type_names() {
    assert_eq!(FrameType::COMMAND.name(), Some("COMMAND"));
    assert_eq!(FrameType(0x02).name(), None);
    assert_eq!(FrameType(0x91).to_string(), "0x91");
}

// [SERVER.UPGRADE.1] UPGRADE as phux 0.8 sends it (no body) is `binary: None`; our optional
// `str` body names the binary, and both encode back to the same bytes.
#[test]
fn upgrade_with_and_without_a_binary() {
    let bare = Frame::Command(CommandFrame {
        request_id: 5,
        command: Command::Upgrade { binary: None },
    });
    let bytes = hex("0000000c31010404000000050204010e");
    assert_eq!(bare.to_bytes(), bytes);
    assert_eq!(Frame::decode(&bytes), Ok(bare));
    let named = Frame::Command(CommandFrame {
        request_id: 5,
        command: Command::Upgrade {
            binary: Some("/b".to_owned()),
        },
    });
    let bytes = hex("0000001231010404000000050204070e000000022f62");
    assert_eq!(named.to_bytes(), bytes);
    assert_eq!(Frame::decode(&bytes), Ok(named));
    // A length that runs past the value is a decode error, never a guess.
    assert!(Frame::decode(&hex("0000001231010404000000050204070e000000092f62")).is_err());
}
