//! Engine tests for framing, the handshake, PING, DETACH and connection-level errors
//! (FRAME.*, HELLO.*, PING.*, DETACH.*, ERROR.*, SERVER.PEER.1, SERVER.SHUTDOWN.*).
#![cfg(feature = "sim")]
// Tests name the harness h, clients a/b/c and terminals t, as the wire log does.
#![allow(
    clippy::many_single_char_names,
    clippy::ref_option,
    clippy::match_like_matches_macro
)]

use phux_core::server::{ConnId, PeerInfo, ServerConfig};
use phux_core::sim::{Harness, command_frame, hello_frame, server_id_for};
use phux_proto::command::{Command, CommandResult};
use phux_proto::frame::{
    BootstrapProfile, BootstrapProfiles, ByteLimit, ClientCapabilities, DetachReason, Hello,
    LayerSet, Ping, ProtocolVersion, ServerFeatures,
};
use phux_proto::{ErrorCode, Frame, TerminalId};

/// Asserts the fatal sequence: ERROR{no request id, code}, DETACHED{PROTOCOL_ERROR}, close.
fn assert_fatal(h: &mut Harness, c: ConnId, code: ErrorCode) {
    let got = h.settle_recv(c);
    match &got[..] {
        [Frame::Error(e), Frame::Detached(d)] => {
            assert_eq!(e.request_id, None, "{got:?}");
            assert_eq!(e.code, code, "{got:?}");
            assert_eq!(d.reason, Some(DetachReason::PROTOCOL_ERROR), "{got:?}");
        }
        _ => panic!("expected ERROR({code:?}) + DETACHED, got {got:?}"),
    }
    assert!(h.conn(c).closed_by_server(), "connection not closed");
}

fn hello_with(f: impl FnOnce(&mut Hello)) -> Frame {
    let Frame::Hello(mut hello) = hello_frame() else {
        unreachable!()
    };
    f(&mut hello);
    Frame::Hello(hello)
}

fn ping(nonce: u64) -> Frame {
    Frame::Ping(Ping { nonce })
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// ---- FRAME ----------------------------------------------------------------------------------

#[test]
fn frame_length_zero_is_a_framing_violation() {
    // [FRAME.LENGTH.2] [FRAME.VIOLATION.1]
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("00000000"));
    assert_fatal(&mut h, c, ErrorCode::FRAME_TOO_LARGE);
}

#[test]
fn frame_length_over_cap_fails_before_the_body_arrives() {
    // [FRAME.LENGTH.2] [FRAME.VIOLATION.1]: only the 4 length bytes and the type are sent.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0200000 07f".replace(' ', "").as_str()));
    assert_fatal(&mut h, c, ErrorCode::FRAME_TOO_LARGE);
}

#[test]
fn framing_violation_is_sticky() {
    // [FRAME.VIOLATION.2] [ERROR.FATAL.2]: a PING after the bad length is never answered.
    let mut h = Harness::new();
    let c = h.client();
    let mut bytes = hex("00000000");
    bytes.extend(ping(1).to_bytes());
    h.send_raw(c, &bytes);
    assert_fatal(&mut h, c, ErrorCode::FRAME_TOO_LARGE);
    h.send(c, &ping(2));
    assert!(h.settle_recv(c).is_empty());
}

#[test]
fn stream_split_does_not_change_the_frames() {
    // [FRAME.STREAM.1]: the same input one byte at a time and all at once.
    let mut stream = hello_frame().to_bytes();
    stream.extend(ping(7).to_bytes());
    stream.extend(
        command_frame(
            3,
            Command::KillTerminal {
                terminal: TerminalId::Local(9),
            },
        )
        .to_bytes(),
    );
    stream.extend(ping(8).to_bytes());
    let run = |split: usize| {
        let mut h = Harness::new();
        let c = h.connect();
        for chunk in stream.chunks(split) {
            h.send_raw(c, chunk);
        }
        h.settle_recv(c)
    };
    let whole = run(stream.len());
    assert_eq!(whole.len(), 4, "{whole:?}");
    for split in [1, 2, 3, 5, 7, 13] {
        assert_eq!(run(split), whole, "split {split}");
    }
}

#[test]
fn server_range_frame_that_decodes_is_invalid_command() {
    // [FRAME.TYPE.2]: a PONG from a client.
    let mut h = Harness::new();
    let c = h.client();
    h.send(c, &Frame::Pong(phux_proto::frame::Pong { nonce: 1 }));
    assert_fatal(&mut h, c, ErrorCode::INVALID_COMMAND);
}

#[test]
fn unimplemented_client_type_is_unknown_message_type() {
    // [FRAME.TYPE.3] [FRAME.TYPE.4]: 0x02 ATTACH is allocated but outside the subset.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000102"));
    assert_fatal(&mut h, c, ErrorCode::UNKNOWN_MESSAGE_TYPE);
}

#[test]
fn unallocated_client_type_is_unknown_message_type() {
    // [FRAME.TYPE.3] [FRAME.TYPE.4]: 0x60 is unallocated.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000160"));
    assert_fatal(&mut h, c, ErrorCode::UNKNOWN_MESSAGE_TYPE);
}

#[test]
fn non_command_body_that_does_not_decode_is_fatal_malformed() {
    // [FRAME.DECODE.1] [VARINT.CANON.2]: vector raw_ping_noncanonical_varints.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000e7f81000488000000000000000007"));
    assert_fatal(&mut h, c, ErrorCode::MALFORMED_MESSAGE);
}

// ---- HELLO ----------------------------------------------------------------------------------

#[test]
fn hello_ok_advertises_our_capabilities() {
    // [HELLO.OK.1] [HELLO.OK.2] [HELLO.OK.3] [HELLO.OK.4] [HELLO.PROFILE.1]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(c, &hello_frame());
    let got = h.settle_recv(c);
    let [Frame::HelloOk(ok)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(
        ok.version,
        ProtocolVersion {
            major: 0,
            minor: 8,
            patch: 0
        }
    );
    assert_eq!(ok.capabilities.layers, LayerSet::L1);
    assert_eq!(
        ok.capabilities.features,
        ServerFeatures::ACKNOWLEDGED_INPUT
            | ServerFeatures::SHUTDOWN
            | ServerFeatures::SPAWN_INITIAL_SIZE
    );
    assert_eq!(ok.capabilities.features.bits(), 0x310);
    assert_eq!(ok.server_id, server_id_for(1));
    assert_eq!(ok.profile, BootstrapProfile::SynthesizedVtRaw);
    // The same id on every connection of the incarnation.
    let d = h.connect();
    assert_eq!(h.hello(d).server_id, server_id_for(1));
}

#[test]
fn hello_limits_are_the_minimum_of_both_sides() {
    // [HELLO.LIMITS.1]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(
        c,
        &hello_with(|hello| {
            hello.capabilities.max_chunk_bytes = ByteLimit::new(1000).unwrap();
            hello.capabilities.max_history_page_bytes = ByteLimit::new(8 * 1024 * 1024).unwrap();
        }),
    );
    let got = h.settle_recv(c);
    let [Frame::HelloOk(ok)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(ok.max_chunk_bytes.get(), 1000);
    assert_eq!(ok.max_history_page_bytes.get(), 1_048_576);
    let d = h.connect();
    h.send(
        d,
        &hello_with(|hello| {
            hello.capabilities.max_chunk_bytes = ByteLimit::new(8 * 1024 * 1024).unwrap();
            hello.capabilities.max_history_page_bytes = ByteLimit::new(5).unwrap();
        }),
    );
    let got = h.settle_recv(d);
    let [Frame::HelloOk(ok)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(ok.max_chunk_bytes.get(), 262_144);
    assert_eq!(ok.max_history_page_bytes.get(), 5);
}

#[test]
fn hello_any_patch_is_admitted() {
    // [HELLO.VERSION.1]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(c, &hello_with(|hello| hello.version.patch = 77));
    assert!(matches!(&h.settle_recv(c)[..], [Frame::HelloOk(_)]));
}

#[test]
fn hello_other_minor_or_major_is_refused() {
    // [HELLO.VERSION.2]
    for (major, minor) in [(0, 7), (0, 9), (1, 8)] {
        let mut h = Harness::new();
        let c = h.connect();
        h.send(
            c,
            &hello_with(|hello| {
                hello.version = ProtocolVersion {
                    major,
                    minor,
                    patch: 0,
                }
            }),
        );
        assert_fatal(&mut h, c, ErrorCode::VERSION_INCOMPATIBLE);
    }
}

#[test]
fn frame_before_hello_is_version_incompatible() {
    // [HELLO.ORDER.1] [HELLO.ORDER.2]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(
        c,
        &command_frame(
            1,
            Command::GetState {
                scope: phux_proto::command::StateScope::Server,
            },
        ),
    );
    assert_fatal(&mut h, c, ErrorCode::VERSION_INCOMPATIBLE);
}

#[test]
fn second_hello_is_invalid_command() {
    // [HELLO.ORDER.3]
    let mut h = Harness::new();
    let c = h.client();
    h.send(c, &hello_frame());
    assert_fatal(&mut h, c, ErrorCode::INVALID_COMMAND);
}

#[test]
fn hello_that_does_not_decode_is_malformed() {
    // [HELLO.DECODE.1]: fields 1-4 only (no capabilities).
    let mut h = Harness::new();
    let c = h.connect();
    h.send_raw(
        c,
        &hex("00000014 01 010401 78 02040200 00 03040200 08 04040200 00"),
    );
    assert_fatal(&mut h, c, ErrorCode::MALFORMED_MESSAGE);
}

#[test]
fn hello_without_synthesized_vt_raw_is_codec_unavailable() {
    // [HELLO.PROFILE.2]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(
        c,
        &hello_with(|hello| {
            hello.capabilities.bootstrap_profiles = BootstrapProfiles::SYNTHESIZED_VT_STATE_SYNC;
        }),
    );
    assert_fatal(&mut h, c, ErrorCode::CODEC_UNAVAILABLE);
}

#[test]
fn hello_undefined_capability_bits_are_ignored() {
    // [HELLO.CAPS.1]: the layers byte set to 0xfe (L1 clear, undefined bits set).
    let mut bytes = hello_frame().to_bytes();
    let caps = ClientCapabilities::default();
    let _ = caps;
    // HELLO "sim": header 5, field 1 = 6 bytes, fields 2-4 = 5 bytes each, field 5 header 3.
    let layers_at = 5 + 6 + 15 + 3 + 1;
    assert_eq!(
        bytes[layers_at], 0x01,
        "layout of the encoded HELLO changed"
    );
    bytes[layers_at] = 0xfe;
    let mut h = Harness::new();
    let c = h.connect();
    h.send_raw(c, &bytes);
    assert!(matches!(&h.settle_recv(c)[..], [Frame::HelloOk(_)]));
}

// ---- PING -----------------------------------------------------------------------------------

#[test]
fn ping_is_answered_before_and_after_hello() {
    // [PING.ECHO.1]
    let mut h = Harness::new();
    let c = h.connect();
    h.send(c, &ping(0xdead_beef_cafe_f00d));
    assert_eq!(
        h.settle_recv(c),
        vec![Frame::Pong(phux_proto::frame::Pong {
            nonce: 0xdead_beef_cafe_f00d
        })]
    );
    h.hello(c);
    h.send(c, &ping(5));
    assert_eq!(
        h.settle_recv(c),
        vec![Frame::Pong(phux_proto::frame::Pong { nonce: 5 })]
    );
}

// ---- DETACH ---------------------------------------------------------------------------------

#[test]
fn detach_gets_exact_detached_bytes_and_close() {
    // [DETACH.REQUEST.1]
    let mut h = Harness::new();
    let c = h.client();
    h.send(c, &Frame::Detach);
    let got = h.settle_recv(c);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].to_bytes(), hex("000000058201040100"));
    assert!(h.conn(c).closed_by_server());
}

#[test]
fn frames_after_detach_are_not_acted_on() {
    // [DETACH.REQUEST.2]: DETACH and a PING in the same read.
    let mut h = Harness::new();
    let c = h.client();
    let mut bytes = Frame::Detach.to_bytes();
    bytes.extend(ping(1).to_bytes());
    h.send_raw(c, &bytes);
    let got = h.settle_recv(c);
    assert!(matches!(&got[..], [Frame::Detached(_)]), "{got:?}");
}

#[test]
fn terminal_survives_its_spawners_disconnect() {
    // [DETACH.CLOSE.2]
    let mut h = Harness::new();
    let c = h.client();
    let t = h.spawn(c);
    h.request(
        c,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.disconnect(c);
    h.settle();
    assert!(h.pty(&t).exit_kind().is_none());
    let d = h.client();
    assert_eq!(
        h.request(d, Command::AttachTerminal { terminal: t }),
        Some(CommandResult::Ok)
    );
}

// ---- ERROR ----------------------------------------------------------------------------------

#[test]
fn command_with_unknown_tag_gets_error_with_request_id_and_stays_up() {
    // [ERROR.COMMAND.1] [ERROR.COMMAND.2] [ERROR.COMMAND.3]: vector raw_command_unknown_tag.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000c 31 01040400000001 0204017e"));
    let got = h.settle_recv(c);
    let [Frame::Error(e)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(
        (e.request_id, e.code),
        (Some(1), ErrorCode::INVALID_COMMAND)
    );
    h.send(c, &ping(3));
    assert_eq!(h.settle_recv(c).len(), 1);
    assert!(h.conn(c).is_open());
}

#[test]
fn command_with_truncated_body_is_malformed_with_request_id() {
    // [ERROR.COMMAND.1] [ERROR.COMMAND.2]: KILL_TERMINAL with a cut TerminalId.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000d 31 01040400000009 0204020300"));
    let got = h.settle_recv(c);
    let [Frame::Error(e)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(
        (e.request_id, e.code),
        (Some(9), ErrorCode::MALFORMED_MESSAGE)
    );
    assert!(h.conn(c).is_open());
}

#[test]
fn command_with_bad_envelope_has_no_request_id() {
    // [ERROR.COMMAND.2]: field 1 is 3 bytes, so the request id does not decode.
    let mut h = Harness::new();
    let c = h.client();
    h.send_raw(c, &hex("0000000b 31 010403000001 02040105"));
    let got = h.settle_recv(c);
    let [Frame::Error(e)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(e.request_id, None);
    assert_eq!(e.code, ErrorCode::MALFORMED_MESSAGE);
    assert!(h.conn(c).is_open());
}

#[test]
fn decoded_command_failure_is_a_command_result() {
    // [ERROR.COMMAND.4] [COMMAND.CORRELATE.1]: request id 0 echoed.
    let mut h = Harness::new();
    let c = h.client();
    h.send(
        c,
        &command_frame(
            0,
            Command::KillTerminal {
                terminal: TerminalId::Local(42),
            },
        ),
    );
    let got = h.settle_recv(c);
    let [Frame::CommandResult(r)] = &got[..] else {
        panic!("{got:?}")
    };
    assert_eq!(r.request_id, 0);
    assert!(matches!(
        r.result,
        CommandResult::Error {
            code: ErrorCode::TERMINAL_NOT_FOUND,
            ..
        }
    ));
}

#[test]
fn one_connections_fatal_error_leaves_others_alone() {
    // [ERROR.FATAL.1] [ERROR.FATAL.3]
    let mut h = Harness::new();
    let a = h.client();
    let b = h.client();
    let t = h.spawn(b);
    h.request(
        b,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    h.recv(b);
    h.send_raw(a, &hex("00000000"));
    assert_fatal(&mut h, a, ErrorCode::FRAME_TOO_LARGE);
    h.pty(&t).script(b"still here");
    let got = h.settle_recv(b);
    assert!(
        got.iter()
            .any(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"still here"))
    );
}

#[test]
fn error_codes_sent_are_named_codes() {
    // [ERROR.CODE.1]: every ERROR and COMMAND_RESULT code in a mixed session is named, never 5.
    let named = [
        1u16, 2, 3, 4, 6, 100, 101, 102, 103, 104, 105, 106, 107, 200, 201, 202, 203, 204, 205,
        206, 207, 65535,
    ];
    let mut h = Harness::new();
    let c = h.client();
    let mut codes = Vec::new();
    // A terminal never spawned, a satellite terminal, a command this server does not
    // implement: each refused with a code.
    let satellite = TerminalId::Satellite {
        host: "x".into(),
        id: 1,
    };
    for command in [
        Command::KillTerminal {
            terminal: TerminalId::Local(3),
        },
        Command::KillTerminal {
            terminal: satellite,
        },
        Command::DetachClients { session: None },
    ] {
        match h.request(c, command.clone()) {
            Some(CommandResult::Error { code, .. }) => codes.push(code.0),
            other => panic!("{command:?} was not refused: {other:?}"),
        }
    }
    // A command whose body does not decode: an ERROR frame.
    h.send_raw(c, &hex("0000000c 31 01040400000001 0204017e"));
    h.settle();
    for f in h.recv(c) {
        match f {
            Frame::Error(e) => codes.push(e.code.0),
            Frame::CommandResult(r) => {
                if let CommandResult::Error { code, .. } = r.result {
                    codes.push(code.0);
                }
            }
            _ => {}
        }
    }
    assert_eq!(codes.len(), 4, "{codes:?}");
    for code in codes {
        assert!(named.contains(&code), "code {code}");
    }
}

// ---- SERVER ---------------------------------------------------------------------------------

#[test]
fn foreign_peer_is_refused_before_any_frame() {
    // [SERVER.PEER.1]
    let mut h = Harness::new();
    let c = h.connect_with(PeerInfo::foreign());
    h.send(c, &hello_frame());
    assert_fatal(&mut h, c, ErrorCode::PERMISSION_DENIED);
}

#[test]
fn shutdown_answers_ok_then_detaches_everyone() {
    // [SERVER.SHUTDOWN.1] [SERVER.SHUTDOWN.2] [SERVER.SHUTDOWN.3]
    let mut h = Harness::new();
    let a = h.client();
    let b = h.client();
    let t = h.spawn(a);
    h.send(a, &command_frame(4, Command::Shutdown));
    let got = h.settle_recv(a);
    assert!(
        matches!(&got[..], [Frame::CommandResult(r), Frame::Detached(d)]
        if r.request_id == 4 && r.result == CommandResult::Ok && d.reason == Some(DetachReason::SERVER_SHUTDOWN)),
        "{got:?}"
    );
    let got = h.recv(b);
    assert!(
        matches!(&got[..], [Frame::Detached(d)] if d.reason == Some(DetachReason::SERVER_SHUTDOWN)),
        "{got:?}"
    );
    assert!(h.conn(a).closed_by_server() && h.conn(b).closed_by_server());
    assert!(h.pty(&t).is_gone(), "children are terminated");
    assert!(h.is_shut_down());
}

#[test]
fn shutdown_from_a_remote_peer_may_be_refused() {
    // [SERVER.SHUTDOWN.4]
    let mut h = Harness::with_config(ServerConfig::new(server_id_for(1)));
    let c = h.connect_with(PeerInfo::remote());
    h.hello(c);
    let r = h.request(c, Command::Shutdown);
    assert!(
        matches!(
            r,
            Some(CommandResult::Error {
                code: ErrorCode::PERMISSION_DENIED,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(!h.is_shut_down());
}
