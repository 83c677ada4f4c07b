//! A first end-to-end pass through the ServerEngine with a tiny in-test driver: a PTY that
//! echoes what it is written and completes every write at once.

use phux_core::Instant;
use phux_core::server::{
    ConnId, PeerInfo, ServerAction, ServerConfig, ServerEngine, ServerEvent, WriteOutcome,
};
use phux_proto::command::{ApplyInput, Command, CommandResult};
use phux_proto::frame::{
    ClientCapabilities, CommandFrame, Hello, ProtocolVersion, SpawnResult, SpawnTerminal,
};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, GroupId, OperationId};

struct Driver {
    engine: ServerEngine,
    now: Instant,
    received: Vec<Frame>,
    written: Vec<Vec<u8>>,
}

impl Driver {
    fn new() -> Self {
        Self {
            engine: ServerEngine::new(ServerConfig::new(vec![9; 16])),
            now: Instant::ZERO,
            received: Vec::new(),
            written: Vec::new(),
        }
    }

    fn run(&mut self) {
        while let Some(action) = self.engine.poll_action() {
            match action {
                ServerAction::Send { conn, bytes } => {
                    let mut rest = &bytes[..];
                    while !rest.is_empty() {
                        let len = 4 + u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
                        self.received.push(Frame::decode(&rest[..len]).unwrap());
                        rest = &rest[len..];
                    }
                    self.engine.handle(
                        self.now,
                        ServerEvent::Sent {
                            conn,
                            bytes: bytes.len(),
                        },
                    );
                }
                ServerAction::Spawn { terminal, .. } => {
                    self.engine.handle(
                        self.now,
                        ServerEvent::Spawned {
                            terminal,
                            pid: 100 + terminal,
                        },
                    );
                }
                ServerAction::Write {
                    terminal,
                    job,
                    bytes,
                    ..
                } => {
                    self.written.push(bytes.clone());
                    self.engine.handle(
                        self.now,
                        ServerEvent::WriteDone {
                            terminal,
                            job,
                            outcome: WriteOutcome::Written,
                        },
                    );
                    self.engine.handle(
                        self.now,
                        ServerEvent::PtyOutput {
                            terminal,
                            bytes: &bytes,
                        },
                    );
                }
                _ => {}
            }
        }
    }

    fn send(&mut self, conn: ConnId, frame: &Frame) {
        let bytes = frame.to_bytes();
        self.engine.handle(
            self.now,
            ServerEvent::Received {
                conn,
                bytes: &bytes,
            },
        );
        self.run();
    }

    fn take(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.received)
    }
}

fn hello() -> Frame {
    Frame::Hello(Hello {
        client_name: "test".into(),
        version: ProtocolVersion::CURRENT,
        capabilities: ClientCapabilities::default(),
    })
}

fn command(request_id: u32, command: Command) -> Frame {
    Frame::Command(CommandFrame {
        request_id,
        command,
    })
}

#[test]
fn hello_spawn_attach_apply_input_and_dedupe() {
    let mut d = Driver::new();
    let c = ConnId(1);
    d.engine.handle(
        d.now,
        ServerEvent::Connected {
            conn: c,
            peer: PeerInfo::local(),
        },
    );
    d.send(c, &hello());
    let got = d.take();
    assert!(
        matches!(&got[..], [Frame::HelloOk(ok)] if ok.server_id == vec![9; 16]),
        "{got:?}"
    );

    let spawn = Frame::SpawnTerminal(SpawnTerminal {
        request_id: 5,
        group: GroupId(1),
        command: None,
        cwd: None,
        env: None,
        term: None,
        satellite: None,
        owner_terminal: None,
        agent_session: None,
        initial_size: None,
    });
    d.send(c, &spawn);
    let got = d.take();
    let Some(Frame::TerminalSpawned(spawned)) = got.first() else {
        panic!("{got:?}")
    };
    let SpawnResult::Ok(tid) = spawned.result.clone() else {
        panic!("{spawned:?}")
    };

    d.send(
        c,
        &command(
            6,
            Command::AttachTerminal {
                terminal: tid.clone(),
            },
        ),
    );
    let got = d.take();
    assert!(
        matches!(got.first(), Some(Frame::BootstrapBegin(_))),
        "{got:?}"
    );
    assert!(
        matches!(got.last(), Some(Frame::CommandResult(r)) if r.request_id == 6 && r.result == CommandResult::Ok)
    );

    let op = OperationId::from_u128(0x1234).unwrap();
    let apply = |rid| {
        command(
            rid,
            Command::ApplyInput(ApplyInput {
                operation_id: op,
                terminal: tid.clone(),
                events: vec![InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: b"ls\n".to_vec(),
                })],
            }),
        )
    };
    d.send(c, &apply(7));
    let got = d.take();
    assert_eq!(d.written, vec![b"ls\r".to_vec()]);
    assert!(got.iter().any(|f| matches!(f, Frame::CommandResult(r) if r.request_id == 7 && r.result == CommandResult::Ok)), "{got:?}");
    assert!(
        got.iter()
            .any(|f| matches!(f, Frame::TerminalOutput(o) if o.bytes == b"ls\r")),
        "{got:?}"
    );

    // The same id again: the cached OK, nothing written twice.
    d.send(c, &apply(8));
    let got = d.take();
    assert_eq!(d.written.len(), 1);
    assert!(got.iter().any(|f| matches!(f, Frame::CommandResult(r) if r.request_id == 8 && r.result == CommandResult::Ok)), "{got:?}");

    // The same id with another payload: INVALID_COMMAND.
    d.send(
        c,
        &command(
            9,
            Command::ApplyInput(ApplyInput {
                operation_id: op,
                terminal: tid,
                events: vec![InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: b"rm\n".to_vec(),
                })],
            }),
        ),
    );
    let got = d.take();
    assert!(got.iter().any(|f| matches!(f, Frame::CommandResult(r) if r.request_id == 9 && matches!(r.result, CommandResult::Error { code: ErrorCode::INVALID_COMMAND, .. }))), "{got:?}");
    assert_eq!(d.written.len(), 1);
}
