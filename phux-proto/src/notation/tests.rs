//! Examples for every frame kind, error messages, and the round-trip property.

use super::*;
use crate::command::{
    AcquireMode, AgentState, ApplyInput, Command, CommandResult, CommandValue, LayoutNode, PutFile,
    SessionSnapshot, Signal, SplitDirection, StateScope, TerminalEventType, TerminalInfo,
    WindowInfo,
};
use crate::error_code::ErrorCode;
use crate::event::{AgentEvent, Asked, ControlAction, Lifecycle, TerminalControl};
use crate::frame::*;
use crate::ids::{BootstrapId, ClientId, GroupId, OperationId, StreamId, TerminalId};
use crate::input::*;

fn local(id: u32) -> TerminalId {
    TerminalId::Local(id)
}

fn stream(id: u64) -> StreamId {
    StreamId::new(id).unwrap()
}

fn boot(id: u64) -> BootstrapId {
    BootstrapId::new(id).unwrap()
}

fn limit(v: u32) -> ByteLimit {
    ByteLimit::new(v).unwrap()
}

/// (canonical text, frame): the text parses to the frame and the frame renders to the text.
fn examples() -> Vec<(&'static str, Frame)> {
    vec![
        (
            "HELLO{client_name=\"phux-cli/0.22.0\" version={major=0 minor=8 patch=0} \
             capabilities={color=true_color layers=l1 images=sixel|kitty_graphics|iterm2 \
             kbd_protocols=kitty|modify_other_keys hyperlinks=true output_mode=raw \
             bootstrap_profiles=synthesized_vt_raw|synthesized_vt_state_sync \
             native_codecs=none native_features=none max_chunk_bytes=262144 \
             max_history_page_bytes=1048576}}",
            Frame::Hello(Hello {
                client_name: "phux-cli/0.22.0".into(),
                version: ProtocolVersion::CURRENT,
                capabilities: ClientCapabilities::default(),
            }),
        ),
        (
            "HELLO{client_name=\"t\" version={major=0 minor=8 patch=1} \
             capabilities={color=mono layers=l1|l3 images=none kbd_protocols=none \
             hyperlinks=false output_mode=state_sync \
             default_colors={fg={r=255 g=255 b=255} bg={r=0 g=0 b=0}} \
             bootstrap_profiles=native_state native_codecs=libghostty_checkpoint_v2 \
             native_features=continuation|ready_boundary|history_pages|bounded_history_control \
             max_chunk_bytes=1 max_history_page_bytes=8388608}}",
            Frame::Hello(Hello {
                client_name: "t".into(),
                version: ProtocolVersion {
                    major: 0,
                    minor: 8,
                    patch: 1,
                },
                capabilities: ClientCapabilities {
                    color: ColorSupport::Mono,
                    layers: LayerSet::L1 | LayerSet::L3,
                    images: ImageSupport::empty(),
                    kbd_protocols: KbdProtocols::empty(),
                    hyperlinks: false,
                    output_mode: OutputMode::StateSync,
                    default_colors: Some(DefaultColors {
                        fg: Rgb {
                            r: 255,
                            g: 255,
                            b: 255,
                        },
                        bg: Rgb::default(),
                    }),
                    bootstrap_profiles: BootstrapProfiles::NATIVE_STATE,
                    native_codecs: NativeCodecs::all(),
                    native_features: NativeFeatures::all(),
                    max_chunk_bytes: limit(1),
                    max_history_page_bytes: limit(8 * 1024 * 1024),
                },
            }),
        ),
        (
            "HELLO_OK{version={major=0 minor=8 patch=0} \
             capabilities={layers=l1 features=acknowledged_input|shutdown|spawn_initial_size} \
             server_id=hex\"00112233445566778899aabbccddeeff\" profile=synthesized_vt_raw \
             max_chunk_bytes=262144 max_history_page_bytes=1048576}",
            Frame::HelloOk(HelloOk {
                version: ProtocolVersion::CURRENT,
                capabilities: ServerCapabilities {
                    layers: LayerSet::L1,
                    features: ServerFeatures::ACKNOWLEDGED_INPUT
                        | ServerFeatures::SHUTDOWN
                        | ServerFeatures::SPAWN_INITIAL_SIZE,
                },
                server_id: (0..16).map(|i| i * 0x11).collect(),
                profile: BootstrapProfile::SynthesizedVtRaw,
                max_chunk_bytes: limit(262_144),
                max_history_page_bytes: limit(1_048_576),
            }),
        ),
        (
            "PING{nonce=0xdeadbeefcafef00d}",
            Frame::Ping(Ping {
                nonce: 0xdead_beef_cafe_f00d,
            }),
        ),
        (
            "PONG{nonce=0x0000000000000001}",
            Frame::Pong(Pong { nonce: 1 }),
        ),
        ("DETACH{}", Frame::Detach),
        (
            "DETACHED{reason=server_shutdown message=\"bye\"}",
            Frame::Detached(Detached {
                reason: Some(DetachReason::SERVER_SHUTDOWN),
                message: "bye".into(),
            }),
        ),
        (
            "DETACHED{reason=0x7f message=\"\"}",
            Frame::Detached(Detached {
                reason: Some(DetachReason(0x7f)),
                message: String::new(),
            }),
        ),
        (
            "DETACHED{message=\"\"}",
            Frame::Detached(Detached::default()),
        ),
        (
            "ERROR{request_id=9 code=INVALID_COMMAND message=\"unknown command tag 0x7f\"}",
            Frame::Error(ErrorFrame {
                request_id: Some(9),
                code: ErrorCode::INVALID_COMMAND,
                message: "unknown command tag 0x7f".into(),
            }),
        ),
        (
            "ERROR{code=0x0005 message=\"\"}",
            Frame::Error(ErrorFrame {
                request_id: None,
                code: ErrorCode(5),
                message: String::new(),
            }),
        ),
        (
            "COMMAND{request_id=7 command=APPLY_INPUT{\
             operation_id=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a terminal=local:3 \
             events=[PASTE{trust=trusted data=\"ls\\r\"}]}}",
            Frame::Command(CommandFrame {
                request_id: 7,
                command: Command::ApplyInput(ApplyInput {
                    operation_id: OperationId::from_u128(0x5a5a_5a5a_5a5a_5a5a_5a5a_5a5a_5a5a_5a5a)
                        .unwrap(),
                    terminal: local(3),
                    events: vec![InputEvent::Paste(PasteEvent {
                        trust: PasteTrust::Trusted,
                        data: b"ls\r".to_vec(),
                    })],
                }),
            }),
        ),
        (
            "COMMAND{request_id=1 command=APPLY_INPUT{\
             operation_id=0x00000000000000000000000000000001 terminal=satellite:\"h\":2 \
             events=[KEY{action=press key=KeyA mods=shift|ctrl|0x8000 consumed_mods=none \
             composing=false text=\"A\" unshifted_codepoint=0x61} \
             MOUSE{action=motion button=unknown mods=none x=120.0 y=-0.0} \
             MOUSE{action=press button=left mods=alt x=f64:0x7ff8000000000000 y=1e-7} \
             FOCUS{event=lost} KEY{action=repeat key=999 mods=none consumed_mods=none \
             composing=true}]}}",
            Frame::Command(CommandFrame {
                request_id: 1,
                command: Command::ApplyInput(ApplyInput {
                    operation_id: OperationId::from_u128(1).unwrap(),
                    terminal: TerminalId::Satellite {
                        host: "h".into(),
                        id: 2,
                    },
                    events: vec![
                        InputEvent::Key(KeyEvent {
                            action: KeyAction::Press,
                            key: PhysicalKey::KEY_A,
                            mods: ModSet(0x8003),
                            consumed_mods: ModSet::NONE,
                            composing: false,
                            text: Some("A".into()),
                            unshifted_codepoint: Some(0x61),
                        }),
                        InputEvent::Mouse(MouseEvent {
                            action: MouseAction::Motion,
                            button: MouseButton::Unknown,
                            mods: ModSet::NONE,
                            x: 120.0,
                            y: -0.0,
                        }),
                        InputEvent::Mouse(MouseEvent {
                            action: MouseAction::Press,
                            button: MouseButton::Left,
                            mods: ModSet::ALT,
                            x: f64::NAN,
                            y: 1e-7,
                        }),
                        InputEvent::Focus(FocusEvent::Lost),
                        InputEvent::Key(KeyEvent {
                            action: KeyAction::Repeat,
                            key: PhysicalKey(999),
                            mods: ModSet::NONE,
                            consumed_mods: ModSet::NONE,
                            composing: true,
                            text: None,
                            unshifted_codepoint: None,
                        }),
                    ],
                }),
            }),
        ),
        (
            "COMMAND{request_id=2 command=ATTACH_TERMINAL{terminal=local:0}}",
            command(2, Command::AttachTerminal { terminal: local(0) }),
        ),
        (
            "COMMAND{request_id=3 command=GET_SCREEN{terminal=local:1 request_scrollback=0 \
             cells=true}}",
            command(
                3,
                Command::GetScreen {
                    terminal: local(1),
                    request_scrollback: Some(0),
                    cells: true,
                },
            ),
        ),
        (
            "COMMAND{request_id=4 command=ROUTE_INPUT{terminal=local:1 \
             event=PASTE{trust=untrusted data=\"\\e[201~\\x00\\u{e9}\\xff\"}}}",
            command(
                4,
                Command::RouteInput {
                    terminal: local(1),
                    event: InputEvent::Paste(PasteEvent {
                        trust: PasteTrust::Untrusted,
                        data: b"\x1b[201~\x00\xc3\xa9\xff".to_vec(),
                    }),
                },
            ),
        ),
        (
            "COMMAND{request_id=5 command=KILL_TERMINALS{terminals=[local:1 local:2]}}",
            command(
                5,
                Command::KillTerminals {
                    terminals: vec![local(1), local(2)],
                },
            ),
        ),
        (
            "COMMAND{request_id=6 command=SUBSCRIBE_TERMINAL_EVENTS{terminal=local:1 \
             event_types=[command_started grid_changed 0x07]}}",
            command(
                6,
                Command::SubscribeTerminalEvents {
                    terminal: local(1),
                    event_types: vec![
                        TerminalEventType::COMMAND_STARTED,
                        TerminalEventType::GRID_CHANGED,
                        TerminalEventType(7),
                    ],
                },
            ),
        ),
        (
            "COMMAND{request_id=8 command=ACQUIRE_INPUT{terminal=local:1 mode=seize \
             ttl_ms=5000}}",
            command(
                8,
                Command::AcquireInput {
                    terminal: local(1),
                    mode: AcquireMode::Seize,
                    ttl_ms: 5000,
                },
            ),
        ),
        (
            "COMMAND{request_id=10 command=SIGNAL_TERMINAL{terminal=local:1 signal=interrupt}}",
            command(
                10,
                Command::SignalTerminal {
                    terminal: local(1),
                    signal: Signal::Interrupt,
                },
            ),
        ),
        (
            "COMMAND{request_id=11 command=REPORT_ASKED{terminal=local:1 asked={id=\"q1\" \
             question=\"Proceed?\" suggestions=[\"yes\" \"no\"] elapsed_seconds=3}}}",
            command(
                11,
                Command::ReportAsked {
                    terminal: local(1),
                    asked: Asked {
                        id: "q1".into(),
                        question: "Proceed?".into(),
                        suggestions: vec!["yes".into(), "no".into()],
                        elapsed_seconds: Some(3),
                    },
                },
            ),
        ),
        (
            "COMMAND{request_id=12 command=PUT_FILE{\
             upload_id=0x000102030405060708090a0b0c0d0e0f terminal=local:1 extension=\"png\" \
             offset=0 data=\"\\x89PNG\\r\\n\\x1a\\n\" is_final=true sha256=hex\"\
             0000000000000000000000000000000000000000000000000000000000000000\"}}",
            command(
                12,
                Command::PutFile(PutFile {
                    upload_id: core::array::from_fn(|i| i as u8),
                    terminal: local(1),
                    extension: "png".into(),
                    offset: 0,
                    data: b"\x89PNG\r\n\x1a\n".to_vec(),
                    is_final: true,
                    sha256: Some([0; 32]),
                }),
            ),
        ),
        (
            "COMMAND{request_id=13 command=GET_STATE{scope=server}}",
            command(
                13,
                Command::GetState {
                    scope: StateScope::Server,
                },
            ),
        ),
        (
            "COMMAND{request_id=18 command=UPGRADE{}}",
            command(18, Command::Upgrade { binary: None }),
        ),
        (
            "COMMAND{request_id=19 command=UPGRADE{binary=\"/usr/bin/phux-mio-server\"}}",
            command(
                19,
                Command::Upgrade {
                    binary: Some("/usr/bin/phux-mio-server".to_owned()),
                },
            ),
        ),
        (
            "COMMAND{request_id=14 command=SHUTDOWN{}}",
            command(14, Command::Shutdown),
        ),
        (
            "COMMAND{request_id=15 command=REPORT_AGENT_STATE{terminal=local:1 state=blocked}}",
            command(
                15,
                Command::ReportAgentState {
                    terminal: local(1),
                    state: AgentState::Blocked,
                },
            ),
        ),
        (
            "COMMAND{request_id=16 command=GET_TERMINAL_STATE{terminal=local:1 \
             include_scrollback=true max_scrollback_lines=100}}",
            command(
                16,
                Command::GetTerminalState {
                    terminal: local(1),
                    include_scrollback: true,
                    max_scrollback_lines: 100,
                },
            ),
        ),
        (
            "COMMAND{request_id=17 command=DETACH_CLIENTS{}}",
            command(17, Command::DetachClients { session: None }),
        ),
        (
            "COMMAND_RESULT{request_id=7 result=ok}",
            result(7, CommandResult::Ok),
        ),
        (
            "COMMAND_RESULT{request_id=7 result=error{code=INPUT_LEASE_HELD \
             message=\"input lease held by another client\"}}",
            result(
                7,
                CommandResult::Error {
                    code: ErrorCode::INPUT_LEASE_HELD,
                    message: "input lease held by another client".into(),
                },
            ),
        ),
        (
            "COMMAND_RESULT{request_id=3 result=json{text=\"{\\\"schema_version\\\":3}\"}}",
            result(
                3,
                CommandResult::OkWith(CommandValue::Json("{\"schema_version\":3}".into())),
            ),
        ),
        (
            "COMMAND_RESULT{request_id=2 result=terminal_id{id=local:4}}",
            result(2, CommandResult::OkWith(CommandValue::TerminalId(local(4)))),
        ),
        (
            "COMMAND_RESULT{request_id=2 result=file_upload{next_offset=8 path=\"/tmp/x.png\"}}",
            result(
                2,
                CommandResult::OkWith(CommandValue::FileUpload {
                    next_offset: 8,
                    path: Some("/tmp/x.png".into()),
                }),
            ),
        ),
        (
            "COMMAND_RESULT{request_id=13 result=state{sessions=[] windows=[{id=1 \
             session_id=1 index=0 name=\"w\" layout=split{direction=vertical ratio=0.5f32 \
             left=leaf{terminal=local:1} right=leaf{terminal=local:2}}}] \
             terminals=[{terminal=local:1 window_id=0 cols=80 rows=24 title=\"vim\"}] \
             focused_session=0 focused_window=0 focused_pane=local:0}}",
            result(
                13,
                CommandResult::OkWith(CommandValue::State(SessionSnapshot {
                    sessions: vec![],
                    windows: vec![WindowInfo {
                        id: 1,
                        session_id: 1,
                        index: 0,
                        name: "w".into(),
                        active_pane: None,
                        layout: Some(LayoutNode::Split {
                            direction: SplitDirection::Vertical,
                            ratio: 0.5,
                            left: Box::new(LayoutNode::Leaf(local(1))),
                            right: Box::new(LayoutNode::Leaf(local(2))),
                        }),
                    }],
                    terminals: vec![TerminalInfo {
                        terminal: local(1),
                        window_id: 0,
                        cols: 80,
                        rows: 24,
                        title: Some("vim".into()),
                        cwd: None,
                    }],
                    focused_session: 0,
                    focused_window: 0,
                    focused_pane: local(0),
                })),
            ),
        ),
        (
            "INPUT_KEY{terminal=local:1 event={action=release key=Enter mods=none \
             consumed_mods=none composing=false}}",
            Frame::InputKey(InputKey {
                terminal: local(1),
                event: KeyEvent {
                    action: KeyAction::Release,
                    ..KeyEvent::press(PhysicalKey::ENTER, ModSet::NONE)
                },
            }),
        ),
        (
            "INPUT_PASTE{terminal=local:1 event={trust=untrusted data=\"a\\nb\\t\\\"\\\\\"}}",
            Frame::InputPaste(InputPaste {
                terminal: local(1),
                event: PasteEvent {
                    trust: PasteTrust::Untrusted,
                    data: b"a\nb\t\"\\".to_vec(),
                },
            }),
        ),
        (
            "INPUT_MOUSE{terminal=local:1 event={action=release button=eleven \
             mods=super_side x=f64:0xfff0000000000000 y=1.7976931348623157e308}}",
            Frame::InputMouse(InputMouse {
                terminal: local(1),
                event: MouseEvent {
                    action: MouseAction::Release,
                    button: MouseButton::Eleven,
                    mods: ModSet::SUPER_SIDE,
                    x: f64::NEG_INFINITY,
                    y: f64::MAX,
                },
            }),
        ),
        (
            "INPUT_FOCUS{terminal=local:1 event=gained}",
            Frame::InputFocus(InputFocus {
                terminal: local(1),
                event: FocusEvent::Gained,
            }),
        ),
        (
            "VIEWPORT_RESIZE{viewport={cols=80 rows=24 pixel_w=640 pixel_h=384}}",
            Frame::ViewportResize(ViewportResize {
                viewport: ViewportInfo {
                    cols: 80,
                    rows: 24,
                    pixel_w: Some(640),
                    pixel_h: Some(384),
                },
            }),
        ),
        (
            "SPAWN_TERMINAL{request_id=1 group=1}",
            Frame::SpawnTerminal(SpawnTerminal::new(1, GroupId(1))),
        ),
        (
            "SPAWN_TERMINAL{request_id=2 group=1 command=[\"sh\" \"-c\" \"echo hi\"] \
             cwd=\"/tmp\" env=[[\"TERM\" \"xterm\"] [\"A\" \"b=c\"]] term=\"xterm-256color\" \
             satellite=\"box\" owner_terminal=local:1 agent_session=\"s1\" \
             initial_size={cols=100 rows=30}}",
            Frame::SpawnTerminal(SpawnTerminal {
                command: Some(vec!["sh".into(), "-c".into(), "echo hi".into()]),
                cwd: Some("/tmp".into()),
                env: Some(vec![
                    ("TERM".into(), "xterm".into()),
                    ("A".into(), "b=c".into()),
                ]),
                term: Some("xterm-256color".into()),
                satellite: Some("box".into()),
                owner_terminal: Some(local(1)),
                agent_session: Some(b"s1".to_vec()),
                initial_size: Some(TerminalSize {
                    cols: 100,
                    rows: 30,
                }),
                ..SpawnTerminal::new(2, GroupId(1))
            }),
        ),
        (
            "TERMINAL_RESIZE{terminal=local:1 size={cols=132 rows=50}}",
            Frame::TerminalResize(TerminalResize {
                terminal: local(1),
                size: TerminalSize {
                    cols: 132,
                    rows: 50,
                },
            }),
        ),
        (
            "TERMINAL_CLOSED{terminal=local:1 exit_status=-1}",
            Frame::TerminalClosed(TerminalClosed {
                terminal: local(1),
                exit_status: Some(-1),
            }),
        ),
        (
            "TERMINAL_SPAWNED{request_id=1 result=ok{terminal=local:3}}",
            Frame::TerminalSpawned(TerminalSpawned {
                request_id: 1,
                result: SpawnResult::Ok(local(3)),
            }),
        ),
        (
            "TERMINAL_SPAWNED{request_id=2 result=spawn_failed{reason=\"no such file\"}}",
            Frame::TerminalSpawned(TerminalSpawned {
                request_id: 2,
                result: SpawnResult::Err(SpawnError::SpawnFailed("no such file".into())),
            }),
        ),
        (
            "TERMINAL_SPAWNED{request_id=3 result=group_not_found}",
            Frame::TerminalSpawned(TerminalSpawned {
                request_id: 3,
                result: SpawnResult::Err(SpawnError::GroupNotFound),
            }),
        ),
        (
            "TERMINAL_OUTPUT{terminal=local:1 seq=42 bytes=\"\\e[1mhi\\e[0m\\r\\n\\u{2502}\" \
             stream=1 bootstrap=2}",
            Frame::TerminalOutput(TerminalOutput {
                terminal: local(1),
                seq: 42,
                bytes: "\x1b[1mhi\x1b[0m\r\n\u{2502}".as_bytes().to_vec(),
                stream: stream(1),
                bootstrap: boot(2),
            }),
        ),
        (
            "BOOTSTRAP_BEGIN{terminal=local:1 stream=1 bootstrap=1 codec=synthesized_vt_v1 \
             cols=80 rows=24 output_mode=raw base_seq=0}",
            Frame::BootstrapBegin(BootstrapBegin {
                terminal: local(1),
                stream: stream(1),
                bootstrap: boot(1),
                codec: BootstrapCodec::SynthesizedVtV1,
                cols: 80,
                rows: 24,
                output_mode: OutputMode::Raw,
                base_seq: 0,
            }),
        ),
        (
            "BOOTSTRAP_CHUNK{terminal=local:1 stream=1 bootstrap=1 chunk_seq=0 \
             payload=hex\"0001020304\"}",
            Frame::BootstrapChunk(BootstrapChunk {
                terminal: local(1),
                stream: stream(1),
                bootstrap: boot(1),
                chunk_seq: 0,
                payload: vec![0, 1, 2, 3, 4],
            }),
        ),
        (
            "BOOTSTRAP_READY{terminal=local:1 stream=1 bootstrap=1}",
            Frame::BootstrapReady(BootstrapReady {
                terminal: local(1),
                stream: stream(1),
                bootstrap: boot(1),
                history_cursor: None,
            }),
        ),
        (
            "BOOTSTRAP_TOMBSTONE{terminal=local:1 stream=1 bootstrap=1 reason=resize \
             last_valid_seq=18446744073709551615}",
            Frame::BootstrapTombstone(BootstrapTombstone {
                terminal: local(1),
                stream: stream(1),
                bootstrap: boot(1),
                reason: TombstoneReason::Resize,
                last_valid_seq: u64::MAX,
            }),
        ),
        (
            "SUBSCRIBE_EVENTS{}",
            Frame::SubscribeEvents(SubscribeEvents { terminal: None }),
        ),
        (
            "EVENT{terminal=local:5 event=terminal_control{lifecycle=running input_holder=3 \
             action=acquired actor=3}}",
            Frame::Event(EventFrame {
                terminal: Some(local(5)),
                event: AgentEvent::TerminalControl(TerminalControl {
                    lifecycle: Lifecycle::Running,
                    exit_status: None,
                    input_holder: Some(ClientId(3)),
                    action: ControlAction::Acquired,
                    actor: Some(ClientId(3)),
                }),
            }),
        ),
        (
            "EVENT{terminal=local:1 event=pane_spawned}",
            Frame::Event(EventFrame {
                terminal: Some(local(1)),
                event: AgentEvent::PaneSpawned,
            }),
        ),
        (
            "EVENT{event=command_finished{exit_code=2}}",
            Frame::Event(EventFrame {
                terminal: None,
                event: AgentEvent::CommandFinished { exit_code: Some(2) },
            }),
        ),
        (
            "EVENT{event=unknown{tag=0x0b body=\"\"}}",
            Frame::Event(EventFrame {
                terminal: None,
                event: AgentEvent::Unknown {
                    tag: 0x0b,
                    body: vec![],
                },
            }),
        ),
        (
            "BELL{terminal=local:2}",
            Frame::Bell(Bell { terminal: local(2) }),
        ),
    ]
}

fn command(request_id: u32, command: Command) -> Frame {
    Frame::Command(CommandFrame {
        request_id,
        command,
    })
}

fn result(request_id: u32, result: CommandResult) -> Frame {
    Frame::CommandResult(CommandResultFrame { request_id, result })
}

#[test]
fn every_frame_kind_has_an_example_that_parses_and_renders_back() {
    let examples = examples();
    for (text, frame) in &examples {
        let parsed: Frame = text
            .parse()
            .unwrap_or_else(|e| panic!("{text}\n  does not parse: {e}"));
        assert_eq!(&parsed, frame, "{text}");
        assert_eq!(frame.to_string(), *text);
    }
    let mut kinds: Vec<FrameType> = examples.iter().map(|(_, f)| f.frame_type()).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(
        kinds.len(),
        FrameType::KNOWN.len(),
        "a frame kind lacks an example"
    );
}

#[test]
fn separators_may_be_commas_and_newlines_and_bare_names_are_empty_records() {
    let text = "TERMINAL_RESIZE{\n  terminal = local:1,\n  size={cols=80,rows=24},\n}";
    let frame: Frame = text.parse().unwrap();
    assert_eq!(
        frame.to_string(),
        "TERMINAL_RESIZE{terminal=local:1 size={cols=80 rows=24}}"
    );
    assert_eq!("DETACH".parse::<Frame>().unwrap(), Frame::Detach);
    assert_eq!(
        "COMMAND{request_id=1 command=UPGRADE}"
            .parse::<Frame>()
            .unwrap(),
        command(1, Command::Upgrade { binary: None })
    );
    // Integer fields take either radix; the rendering is the field's own.
    assert_eq!(
        "PING{nonce=255}".parse::<Frame>().unwrap().to_string(),
        "PING{nonce=0x00000000000000ff}"
    );
    assert_eq!(
        "DETACHED{reason=0x01 message=\"\"}"
            .parse::<Frame>()
            .unwrap(),
        Frame::Detached(Detached {
            reason: Some(DetachReason::SERVER_SHUTDOWN),
            message: String::new(),
        })
    );
}

fn err(text: &str) -> String {
    match text.parse::<Frame>() {
        Ok(frame) => panic!("{text} parsed as {frame:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_what_is_wrong() {
    assert_eq!(err("FROB{x=1}"), "(root): unknown frame \"FROB\"");
    assert_eq!(
        err("PING{nonce=1 extra=2}"),
        "PING: unknown field \"extra\" in PING"
    );
    assert_eq!(
        err("PING{}"),
        "PING: missing required field \"nonce\" in PING"
    );
    assert_eq!(
        err("PING{nonc=1}"),
        "PING: missing required field \"nonce\" in PING (is the field \"nonc\" given instead \
         a misspelling of it?)"
    );
    assert_eq!(
        err("TERMINAL_RESIZE{terminal=local:1 size={cols=1}}"),
        "TERMINAL_RESIZE.size: missing required field \"rows\" in {…}"
    );
    assert_eq!(
        err("PING{nonce=1 nonce=2}"),
        "PING: field \"nonce\" given twice in PING"
    );
    assert_eq!(
        err(
            "COMMAND{request_id=1 command=APPLY_INPUT{operation_id=0x1 terminal=local:1 \
             events=[PASTE{trust=maybe data=\"\"}]}}"
        ),
        "COMMAND.command.APPLY_INPUT.events[0].PASTE.trust: unknown paste trust \"maybe\""
    );
    assert_eq!(
        err("COMMAND{request_id=1 command=NOPE{}}"),
        "COMMAND.command: unknown command \"NOPE\""
    );
    assert_eq!(
        err("TERMINAL_RESIZE{terminal=local:1 size={cols=80 rows=70000}}"),
        "TERMINAL_RESIZE.size.rows: 70000 is out of range for u16"
    );
    assert_eq!(
        err("TERMINAL_RESIZE{terminal=local:1 size={cols=80}}"),
        "TERMINAL_RESIZE.size: missing required field \"rows\" in {…}"
    );
    assert_eq!(
        err(
            "COMMAND{request_id=1 command=APPLY_INPUT{operation_id=0 terminal=local:1 \
             events=[]}}"
        ),
        "COMMAND.command.APPLY_INPUT.operation_id: 0 is out of range for an operation id \
         (never zero)"
    );
    assert_eq!(
        err("TERMINAL_OUTPUT{terminal=local:1 seq=1 bytes=\"\" stream=0 bootstrap=1}"),
        "TERMINAL_OUTPUT.stream: 0 is out of range for a StreamId (never zero)"
    );
    assert_eq!(
        err("BELL{terminal=3}"),
        "BELL.terminal: expected a terminal id (local:3, satellite:\"host\":3), found integer 3"
    );
    assert_eq!(
        err(
            "INPUT_KEY{terminal=local:1 event={action=press key=KeyQQ mods=none \
             consumed_mods=none composing=false}}"
        ),
        "INPUT_KEY.event.key: unknown physical key \"KeyQQ\""
    );
    assert_eq!(
        err(
            "INPUT_KEY{terminal=local:1 event={action=press key=KeyA mods=shift|hyper \
             consumed_mods=none composing=false}}"
        ),
        "INPUT_KEY.event.mods: unknown ModSet flags \"shift|hyper\""
    );
    assert_eq!(
        err("ERROR{code=NOT_A_CODE message=\"\"}"),
        "ERROR.code: unknown error code \"NOT_A_CODE\""
    );
    assert_eq!(
        err("DETACHED{message=\"\\xff\"}"),
        "DETACHED.message: string is not valid UTF-8"
    );
}

#[test]
fn syntax_errors_carry_line_and_column() {
    assert_eq!(
        err("INPUT_PASTE{terminal=local:1\n  event={trust=trusted data=\"a\\qb\"}}"),
        "line 2, column 31: bad escape `\\q` (allowed: \\n \\r \\t \\e \\\\ \\\" \\xNN \
         \\u{…})"
    );
    assert_eq!(
        err("BELL{terminal=local:1 x=\"abc"),
        "line 1, column 25: unterminated string"
    );
    assert_eq!(
        err("PING{nonce=1"),
        "line 1, column 13: unexpected end of input, expected `,`, whitespace or `}`"
    );
    assert_eq!(
        err("PING{nonce=1} PING{nonce=2}"),
        "line 1, column 15: unexpected 'P' after the value"
    );
    assert_eq!(
        err("BELL{terminal=remote:1}"),
        "line 1, column 15: unknown prefix \"remote\" (known: local:, satellite:, f64:, f32:)"
    );
    assert_eq!(
        err("PING{nonce=0x1g}"),
        "line 1, column 15: unexpected character 'g', expected a separator after the number"
    );
    assert_eq!(
        err("PING{nonce=340282366920938463463374607431768211456}"),
        "line 1, column 12: bad number \"340282366920938463463374607431768211456\": out of range"
    );
    assert_eq!(
        err("INPUT_PASTE{terminal=local:1 event={trust=trusted data=hex\"abc\"}}"),
        "line 1, column 63: bad hex string: odd number of hex digits"
    );
    assert_eq!(
        err("INPUT_PASTE{terminal=local:1 event={trust=trusted data=\"\\u{d800}\"}}"),
        "line 1, column 57: bad escape `\\u{d800}` (allowed: \\n \\r \\t \\e \\\\ \\\" \
         \\xNN \\u{…})"
    );
}

#[test]
fn patterns_parse_but_do_not_convert() {
    let value = Value::parse("TERMINAL_SPAWNED{request_id=1 result=ok{terminal=$t}}").unwrap();
    let Value::Record { fields, .. } = &value else {
        panic!("{value:?}")
    };
    assert_eq!(
        fields[1].1,
        Value::record("ok", vec![("terminal".into(), Value::Capture("t".into()))])
    );
    assert_eq!(
        Frame::from_value(&value).unwrap_err().to_string(),
        "TERMINAL_SPAWNED.result.ok.terminal: pattern $t is not a concrete value"
    );
    assert_eq!(
        err("ERROR{code=* message=\"\"}"),
        "ERROR.code: pattern * is not a concrete value"
    );
    assert_eq!(Value::parse("[* $x]").unwrap().to_string(), "[* $x]");
    assert_eq!(
        Value::parse("$").unwrap_err().to_string(),
        "line 1, column 2: `$` must be followed by a capture name"
    );
}

#[test]
fn rest_marker_parses_renders_and_does_not_convert() {
    let text = "TERMINAL_OUTPUT{terminal=$t ..}";
    let value = Value::parse(text).unwrap();
    assert_eq!(
        value,
        Value::record(
            "TERMINAL_OUTPUT",
            vec![
                ("terminal".into(), Value::Capture("t".into())),
                (REST_FIELD.into(), Value::Wildcard),
            ]
        )
    );
    assert_eq!(value.to_string(), text);
    assert_eq!(Value::parse("X{..}").unwrap().to_string(), "X{..}");
    assert_eq!(Value::parse("X{.., a=1}").unwrap().to_string(), "X{.. a=1}");
    assert!(Frame::from_value(&Value::parse("PING{nonce=1 ..}").unwrap()).is_err());
    assert!(Value::parse("X{..a=1}").is_err());
    assert!(Value::parse("X{.}").is_err());
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let deep = "[".repeat(100_000);
    assert_eq!(
        Value::parse(&deep).unwrap_err().syntax_kind(),
        Some(&SyntaxError::TooDeep { limit: MAX_DEPTH })
    );
    // The deepest real frame (a 64-level layout) is well inside the bound.
    let mut node = LayoutNode::Leaf(local(1));
    for _ in 1..crate::command::MAX_LAYOUT_DEPTH {
        node = LayoutNode::Split {
            direction: SplitDirection::Horizontal,
            ratio: f32::NAN,
            left: Box::new(node),
            right: Box::new(LayoutNode::Leaf(local(2))),
        };
    }
    let frame = result(
        1,
        CommandResult::OkWith(CommandValue::State(SessionSnapshot {
            sessions: vec![],
            windows: vec![WindowInfo {
                id: 1,
                session_id: 1,
                index: 0,
                name: String::new(),
                active_pane: None,
                layout: Some(node),
            }],
            terminals: vec![],
            focused_session: 0,
            focused_window: 0,
            focused_pane: local(0),
        })),
    );
    assert_eq!(frame.to_string().parse::<Frame>().unwrap(), frame);
}

#[test]
fn floats_keep_their_exact_bits() {
    for bits in [
        0.0f64.to_bits(),
        (-0.0f64).to_bits(),
        f64::NAN.to_bits(),
        0x7ff8_0000_0000_0001,
        f64::INFINITY.to_bits(),
        f64::MIN_POSITIVE.to_bits(),
        1e16f64.to_bits(),
        5e-324f64.to_bits(),
    ] {
        let text = Value::Float(bits).to_string();
        assert_eq!(Value::parse(&text).unwrap(), Value::Float(bits), "{text}");
    }
    for bits in [
        0.1f32.to_bits(),
        f32::NAN.to_bits() | 1,
        (-0.0f32).to_bits(),
    ] {
        let text = Value::Float32(bits).to_string();
        assert_eq!(Value::parse(&text).unwrap(), Value::Float32(bits), "{text}");
    }
    assert_eq!(Value::Float(1e16f64.to_bits()).to_string(), "1e16");
    assert_eq!(Value::Float32(0.1f32.to_bits()).to_string(), "0.1f32");
}

#[test]
fn byte_payloads_render_as_text_or_hex_deterministically() {
    let render = |bytes: &[u8]| convert::bytes_value(bytes).to_string();
    assert_eq!(render(b""), "\"\"");
    assert_eq!(render(b"\x1b[31mred\x1b[0m"), "\"\\e[31mred\\e[0m\"");
    assert_eq!(render("h\u{e9}".as_bytes()), "\"h\\u{e9}\"");
    assert_eq!(render(b"abc\xff"), "\"abc\\xff\"");
    assert_eq!(render(b"ab\xff"), "hex\"6162ff\"");
    assert_eq!(render(&[0, 1, 2, 3]), "hex\"00010203\"");
    assert_eq!(render(b"abc\x00"), "\"abc\\x00\"");
    assert_eq!(render(b"ab\x00\x00"), "hex\"61620000\"");
}

/// Every vector in `testdata/vectors.md` that decodes survives the trip through the
/// notation byte-for-byte (after canonical re-encoding).
#[test]
fn every_decodable_vector_round_trips_through_the_notation() {
    let vectors = include_str!("../../testdata/vectors.md");
    let mut in_block = false;
    let (mut blocks, mut decoded) = (0, 0);
    for line in vectors.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        let hex = line.trim();
        if !in_block || hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        blocks += 1;
        let bytes: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let Ok(frame) = Frame::decode(&bytes) else {
            continue;
        };
        decoded += 1;
        let text = frame.to_string();
        let back: Frame = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(back, frame, "{text}");
        assert_eq!(back.to_bytes(), frame.to_bytes(), "{text}");
    }
    // 65 hex blocks, of which 39 are valid frames (the rest are malformed on purpose).
    assert_eq!((blocks, decoded), (65, 39));
}

#[cfg(feature = "arbitrary")]
mod properties {
    use arbitrary::{Arbitrary, Unstructured};
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Every frame renders to text that parses back to the same frame, and that text is
        /// the canonical rendering of its own value tree.
        #[test]
        fn every_frame_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let mut u = Unstructured::new(&bytes);
            if let Ok(frame) = Frame::arbitrary(&mut u) {
                let text = frame.to_string();
                let value = Value::parse(&text)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(value.to_string(), text.clone());
                let back = Frame::from_value(&value)
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(back, frame, "{}", text);
            }
        }

        /// The same over commands and results alone: each of the 19 commands and every result
        /// shape gets many more cases than a draw over all frames gives it.
        #[test]
        fn every_command_and_result_round_trips(
            bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        ) {
            let mut u = Unstructured::new(&bytes);
            let frames = [
                CommandFrame::arbitrary(&mut u).map(Frame::Command),
                CommandResultFrame::arbitrary(&mut u).map(Frame::CommandResult),
                EventFrame::arbitrary(&mut u).map(Frame::Event),
            ];
            for frame in frames.into_iter().flatten() {
                let text = frame.to_string();
                let back: Frame = text
                    .parse()
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(back, frame, "{}", text);
            }
        }

        /// Notation and codec agree: the text of a decoded frame parses to a frame that
        /// encodes to the same bytes.
        #[test]
        fn decoded_frames_re_encode_identically_through_the_notation(
            bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        ) {
            let mut u = Unstructured::new(&bytes);
            if let Ok(frame) = Frame::arbitrary(&mut u) {
                let wire = frame.to_bytes();
                let decoded = Frame::decode(&wire)
                    .map_err(|e| TestCaseError::fail(format!("{frame:?}: {e}")))?;
                let text = decoded.to_string();
                let reparsed: Frame = text
                    .parse()
                    .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(reparsed.to_bytes(), wire, "{}", text);
            }
        }

        /// Arbitrary text never panics the parser or the converter.
        #[test]
        fn arbitrary_text_never_panics(text in "[A-Za-z_{}\\[\\]=,:|$*\"\\\\0-9x. \\-]{0,64}") {
            if let Ok(value) = Value::parse(&text) {
                let _ = Frame::from_value(&value);
                prop_assert_eq!(Value::parse(&value.to_string()).ok(), Some(value));
            }
        }
    }
}
