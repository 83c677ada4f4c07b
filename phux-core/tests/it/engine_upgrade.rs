//! Engine tests for UPGRADE: the command, the upgrading mode that holds new write jobs back,
//! the driver's failure and completion reports (SERVER.UPGRADE.*).
#![cfg(feature = "sim")]
#![allow(clippy::many_single_char_names)]

use phux_core::server::{
    ConnId, LocalTerminal, MAX_UPGRADE_BINARY_LEN, PeerInfo, ServerAction, ServerEvent,
    WriteOutcome,
};
use phux_core::sim::{ChildMode, Harness, apply_input, command_frame, error_code, paste};
use phux_proto::command::{Command, CommandResult};
use phux_proto::{ErrorCode, TerminalId};

fn setup() -> (Harness, ConnId, TerminalId) {
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    let c = h.client();
    let t = h.spawn(c);
    (h, c, t)
}

fn upgrade(binary: Option<&str>) -> Command {
    Command::Upgrade {
        binary: binary.map(str::to_owned),
    }
}

/// Sends UPGRADE without waiting for an answer; returns its request id.
fn ask_upgrade(h: &mut Harness, c: ConnId, binary: Option<&str>) -> u32 {
    let rid = h.next_request_id();
    h.send(c, &command_frame(rid, upgrade(binary)));
    h.settle();
    rid
}

fn upgrade_actions(h: &Harness) -> Vec<Option<String>> {
    h.actions
        .iter()
        .filter_map(|a| match a {
            ServerAction::Upgrade { binary } => Some(binary.clone()),
            _ => None,
        })
        .collect()
}

fn local(t: &TerminalId) -> LocalTerminal {
    LocalTerminal::of(t).unwrap()
}

#[test]
fn upgrade_asks_the_driver_and_answers_nothing_yet() {
    // [SERVER.UPGRADE.1] [SERVER.UPGRADE.3]
    let (mut h, c, _t) = setup();
    let rid = ask_upgrade(&mut h, c, Some("/opt/phux/new"));
    assert_eq!(upgrade_actions(&h), vec![Some("/opt/phux/new".to_owned())]);
    assert!(h.upgrade_asked());
    assert!(h.server.is_upgrading());
    assert_eq!(
        h.take_result(c, rid),
        None,
        "answered only once done or failed"
    );
    // phux 0.8's UPGRADE (no body) asks for the server's own binary.
    let (mut h, c, _t) = setup();
    ask_upgrade(&mut h, c, None);
    assert_eq!(upgrade_actions(&h), vec![None]);
}

#[test]
fn a_second_upgrade_while_one_is_pending_is_refused() {
    // [SERVER.UPGRADE.4]
    let (mut h, c, _t) = setup();
    let other = h.client();
    let first = ask_upgrade(&mut h, c, None);
    let second = h.request(other, upgrade(Some("/other")));
    assert_eq!(
        second.as_ref().and_then(error_code),
        Some(ErrorCode::RESOURCE_EXHAUSTED)
    );
    assert_eq!(upgrade_actions(&h).len(), 1, "the first goes on alone");
    // A signal while one is pending changes nothing either.
    h.server
        .handle(h.now, ServerEvent::UpgradeRequested { binary: None });
    h.settle();
    assert_eq!(upgrade_actions(&h).len(), 1);
    assert_eq!(h.take_result(c, first), None);
    h.fail_upgrade("no");
    assert!(h.take_result(c, first).is_some());
    // Once it failed, a new one may start.
    ask_upgrade(&mut h, other, None);
    assert_eq!(upgrade_actions(&h).len(), 2);
}

#[test]
fn bad_binary_paths_and_remote_peers_are_refused() {
    // [SERVER.UPGRADE.1] [SERVER.UPGRADE.2]
    let (mut h, c, _t) = setup();
    let long = "x".repeat(MAX_UPGRADE_BINARY_LEN + 1);
    for binary in ["", long.as_str()] {
        let r = h.request(c, upgrade(Some(binary)));
        assert_eq!(
            r.as_ref().and_then(error_code),
            Some(ErrorCode::INVALID_COMMAND)
        );
    }
    let remote = h.connect_with(PeerInfo::remote());
    h.hello(remote);
    let r = h.request(remote, upgrade(None));
    assert_eq!(
        r.as_ref().and_then(error_code),
        Some(ErrorCode::PERMISSION_DENIED)
    );
    assert!(upgrade_actions(&h).is_empty());
    assert!(!h.server.is_upgrading());
    // The longest path is accepted.
    let ok = "y".repeat(MAX_UPGRADE_BINARY_LEN);
    ask_upgrade(&mut h, c, Some(&ok));
    assert_eq!(upgrade_actions(&h), vec![Some(ok)]);
}

#[test]
fn queued_input_is_not_started_while_upgrading_and_resumes_after_a_failure() {
    // [SERVER.UPGRADE.3] [SERVER.UPGRADE.5]
    let (mut h, c, t) = setup();
    let rid = ask_upgrade(&mut h, c, None);
    let writes = h.writes.len();
    let op = h.next_request_id();
    h.send(
        c,
        &command_frame(op, apply_input(7, &t, vec![paste(b"held")])),
    );
    h.send(
        c,
        &command_frame(
            op + 100,
            Command::RouteInput {
                terminal: t.clone(),
                event: paste(b"route"),
            },
        ),
    );
    h.settle();
    assert_eq!(h.writes.len(), writes, "no write job while upgrading");
    assert!(h.pty(&t).read_log().is_empty());
    assert_eq!(
        h.take_result(c, op),
        None,
        "APPLY_INPUT waits for its write"
    );
    // ROUTE_INPUT is answered as usual: its OK never promised a write.
    assert_eq!(h.take_result(c, op + 100), Some(CommandResult::Ok));
    assert!(h.server.upgrade_quiet(), "held jobs are not in progress");
    // Everything else is served as usual.
    assert!(
        h.request(
            c,
            Command::GetState {
                scope: phux_proto::command::StateScope::Server
            }
        )
        .is_some()
    );

    h.fail_upgrade("the new binary exited at once");
    match h.take_result(c, rid) {
        Some(CommandResult::Error { code, message }) => {
            assert_eq!(code, ErrorCode::INTERNAL_ERROR);
            assert_eq!(message, "upgrade failed: the new binary exited at once");
        }
        other => panic!("expected the failure, got {other:?}"),
    }
    assert!(!h.server.is_upgrading());
    // The held jobs go out in their order, and the acknowledged one is answered.
    assert_eq!(h.pty(&t).read_log(), b"heldroute");
    assert_eq!(h.take_result(c, op), Some(CommandResult::Ok));
}

#[test]
fn upgrade_quiet_waits_for_the_job_in_progress() {
    // [SERVER.UPGRADE.3] [SERVER.UPGRADE.STATE.4]
    let mut h = Harness::new();
    h.spawn_mode = ChildMode::Record;
    h.set_scripted_writes(true);
    let c = h.client();
    let t = h.spawn(c);
    let op = h.next_request_id();
    h.send(
        c,
        &command_frame(op, apply_input(9, &t, vec![paste(b"first")])),
    );
    h.settle();
    assert_eq!(h.writes.len(), 1);
    ask_upgrade(&mut h, c, None);
    assert!(!h.server.upgrade_quiet(), "a job is with the writer");
    assert!(
        h.server.export_state().is_err(),
        "no export while not quiet"
    );
    h.complete_write(local(&t), WriteOutcome::Written);
    h.settle();
    assert!(h.server.upgrade_quiet());
    assert_eq!(h.take_result(c, op), Some(CommandResult::Ok));
}

#[test]
fn upgrade_done_answers_the_requester_ok_and_resumes_writes() {
    // [SERVER.UPGRADE.6]
    let (mut h, c, t) = setup();
    let rid = ask_upgrade(&mut h, c, None);
    let op = h.next_request_id();
    h.send(
        c,
        &command_frame(op, apply_input(11, &t, vec![paste(b"after")])),
    );
    h.settle();
    assert!(h.pty(&t).read_log().is_empty());
    h.server.handle(h.now, ServerEvent::UpgradeDone);
    h.settle();
    assert_eq!(h.take_result(c, rid), Some(CommandResult::Ok));
    assert_eq!(h.pty(&t).read_log(), b"after");
    assert_eq!(h.take_result(c, op), Some(CommandResult::Ok));
    // A report with no upgrade pending changes nothing.
    h.server.handle(h.now, ServerEvent::UpgradeDone);
    h.server.handle(
        h.now,
        ServerEvent::UpgradeFailed {
            reason: "late".into(),
        },
    );
    h.settle();
    assert!(h.recv(c).is_empty());
}

#[test]
fn a_signal_upgrades_with_nobody_to_answer() {
    // [SERVER.UPGRADE.7]
    let (mut h, c, _t) = setup();
    h.server.handle(
        h.now,
        ServerEvent::UpgradeRequested {
            binary: Some("/new".into()),
        },
    );
    h.settle();
    assert_eq!(upgrade_actions(&h), vec![Some("/new".to_owned())]);
    h.fail_upgrade("x");
    assert!(h.recv(c).is_empty(), "no requester, no reply");
}

#[test]
fn a_held_job_of_a_terminal_that_exits_is_not_written() {
    // [SERVER.UPGRADE.3] A held job never reached the writer: INPUT_NOT_WRITTEN, not unknown.
    let (mut h, c, t) = setup();
    ask_upgrade(&mut h, c, None);
    let op = h.next_request_id();
    h.send(
        c,
        &command_frame(op, apply_input(12, &t, vec![paste(b"x")])),
    );
    h.settle();
    h.server.handle(
        h.now,
        ServerEvent::ChildExited {
            terminal: local(&t),
            exit_status: Some(0),
        },
    );
    h.settle();
    assert_eq!(
        h.take_result(c, op).as_ref().and_then(error_code),
        Some(ErrorCode::INPUT_NOT_WRITTEN)
    );
}

#[test]
fn an_in_place_upgrade_is_seen_as_a_pause_only() {
    // [SERVER.UPGRADE.6] [SERVER.UPGRADE.STATE.2]
    let (mut h, c, t) = setup();
    let watcher = h.client();
    assert!(
        h.request(
            watcher,
            Command::AttachTerminal {
                terminal: t.clone()
            }
        )
        .is_some()
    );
    h.pty(&t)
        .script(b"hello \x1b[1mbold\x1b[m\r\nworld \xe4\xb8");
    h.settle();
    let lease = h.request(
        watcher,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: phux_proto::command::AcquireMode::Cooperative,
            ttl_ms: 60_000,
        },
    );
    assert_eq!(lease, Some(CommandResult::Ok));
    let screen = |h: &mut Harness, c| {
        h.request(
            c,
            Command::GetScreen {
                terminal: t.clone(),
                request_scrollback: Some(0),
                cells: true,
            },
        )
    };
    let before = screen(&mut h, c);
    let server_id = h.server.server_id().to_vec();
    let rid = ask_upgrade(&mut h, c, None);
    // Input the lease holder sends meanwhile waits for the new image.
    let op = h.next_request_id();
    h.send(
        watcher,
        &command_frame(op, apply_input(21, &t, vec![paste(b"typed")])),
    );
    h.settle();
    assert!(h.pty(&t).read_log().is_empty());
    let size = h.upgrade_in_place().expect("the upgrade goes through");
    assert!(size > 0);
    assert_eq!(
        h.server.server_id(),
        server_id.as_slice(),
        "the same incarnation"
    );
    assert_eq!(
        h.take_result(c, rid),
        Some(CommandResult::Ok),
        "OK from the new image"
    );
    assert_eq!(h.pty(&t).read_log(), b"typed", "held input written once");
    assert_eq!(h.take_result(watcher, op), Some(CommandResult::Ok));
    assert!(h.conn(c).is_open() && h.conn(watcher).is_open());
    assert_eq!(screen(&mut h, c), before, "the same screen");
    // The character cut by the upgrade completes, and output goes on with the next seq.
    h.recv(watcher);
    h.pty(&t).script(b"\xad!");
    h.settle();
    let seqs: Vec<u64> = h
        .recv(watcher)
        .into_iter()
        .filter_map(|f| match f {
            phux_proto::Frame::TerminalOutput(o) => Some(o.seq),
            _ => None,
        })
        .collect();
    assert_eq!(seqs, vec![2], "the chunk after the one before the upgrade");
    let after = screen(&mut h, c);
    let Some(CommandResult::OkWith(phux_proto::command::CommandValue::Json(json))) = after else {
        panic!("no screen: {after:?}");
    };
    assert!(json.contains("world \u{4e2d}!"), "{json}");
    // A retry of the acknowledged input is answered from the carried ledger.
    assert_eq!(
        h.request(watcher, apply_input(21, &t, vec![paste(b"typed")])),
        Some(CommandResult::Ok)
    );
    assert_eq!(h.pty(&t).read_log(), b"typed");
    // The lease held across the upgrade still binds another client.
    assert_eq!(
        h.request(c, apply_input(22, &t, vec![paste(b"no")]))
            .as_ref()
            .and_then(error_code),
        Some(ErrorCode::INPUT_LEASE_HELD)
    );
}

#[test]
fn a_server_shutting_down_does_not_upgrade() {
    // [SERVER.UPGRADE.7]
    let (mut h, _c, _t) = setup();
    h.server.handle(h.now, ServerEvent::ShutdownRequested);
    h.settle();
    h.server
        .handle(h.now, ServerEvent::UpgradeRequested { binary: None });
    h.settle();
    assert!(upgrade_actions(&h).is_empty());
    assert!(!h.server.is_upgrading());
}

#[test]
fn held_input_has_its_whole_completion_bound_after_the_upgrade() {
    // [SERVER.UPGRADE.3] [INPUT.LANE.3] The 5 s bound counts from the handoff to the writer,
    // which for input held by an upgrade is when the upgrade ends.
    let (mut h, c, t) = setup();
    let rid = ask_upgrade(&mut h, c, None);
    let op = h.next_request_id();
    h.send(
        c,
        &command_frame(op, apply_input(31, &t, vec![paste(b"slow")])),
    );
    h.settle();
    h.advance(std::time::Duration::from_secs(8));
    assert_eq!(
        h.take_result(c, op),
        None,
        "not unknown: it was never handed out"
    );
    h.fail_upgrade("the new binary hung");
    assert!(h.take_result(c, rid).is_some());
    assert_eq!(h.take_result(c, op), Some(CommandResult::Ok));
    assert_eq!(h.pty(&t).read_log(), b"slow");
}

/// The committed image of [`pinned_state`], written by the build that fixed the layout of
/// state version 1.
const PINNED_IMAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state-v1.image");

/// A state that touches most of what an image carries: an attached viewer, output cut inside
/// a UTF-8 character, a held lease, input held behind the upgrade.
fn pinned_state() -> Vec<u8> {
    pinned_harness().server.export_image(&()).expect("quiet")
}

/// The scenario of [`pinned_state`], quiet.
fn pinned_harness() -> Harness {
    let (mut h, c, t) = setup();
    let viewer = h.client();
    let attach = h.request(
        viewer,
        Command::AttachTerminal {
            terminal: t.clone(),
        },
    );
    assert!(attach.is_some());
    h.pty(&t)
        .script(b"pinned \x1b[1;31mstate\x1b[m\r\n\x1b]0;title\x07cut \xe4\xb8");
    h.settle();
    let lease = h.request(
        viewer,
        Command::AcquireInput {
            terminal: t.clone(),
            mode: phux_proto::command::AcquireMode::Cooperative,
            ttl_ms: 60_000,
        },
    );
    assert_eq!(lease, Some(CommandResult::Ok));
    ask_upgrade(&mut h, c, None);
    let op = h.next_request_id();
    h.send(
        viewer,
        &command_frame(op, apply_input(7, &t, vec![paste(b"held")])),
    );
    h.settle();
    h
}

#[test]
fn the_layout_of_state_version_1_is_pinned() {
    // [SERVER.UPGRADE.STATE.3] A binary reads every version it was built to read: the image an
    // earlier build wrote still decodes, and the same state still makes the same bytes. When
    // this fails, the layout changed: bump STATE_VERSION and keep reading the versions before
    // it (or, if the change is only to the scenario above, write the fixture again with
    // PHUX_WRITE_STATE_FIXTURE=1 and say so in the commit). Versions 2 and 3 changed the
    // driver's half only: the engine's half is version 1's, byte for byte. Version 4 appended
    // the declared viewports ([SERVER.UPGRADE.STATE.6]) to the engine's half: here none, the
    // one byte of an empty list, after a part that is version 1's engine half byte for byte.
    let now = pinned_state();
    let pinned = std::fs::read(PINNED_IMAGE).expect("the committed fixture");
    assert_eq!(phux_core::upgrade::image_version(&pinned), Ok(1));
    let (state, ()) =
        phux_core::upgrade::decode_image::<()>(&pinned).expect("version 1 still decodes");
    let config = state.config().clone();
    let restored =
        phux_core::server::ServerEngine::from_state(config, state).expect("and restores");
    assert_eq!(restored.connection_count(), 2);
    assert_eq!(restored.terminal_count(), 1);
    assert_eq!(phux_core::upgrade::image_version(&now), Ok(4));
    assert_eq!(
        now.last(),
        Some(&0),
        "no viewport declared (the host half `()` is empty)"
    );
    let mut as_version_1 = now[..now.len() - 1].to_vec();
    as_version_1[8..12].copy_from_slice(&1u32.to_le_bytes());
    let body = (as_version_1.len() - 20) as u64;
    as_version_1[12..20].copy_from_slice(&body.to_le_bytes());
    if std::env::var_os("PHUX_WRITE_STATE_FIXTURE").is_some() {
        std::fs::write(PINNED_IMAGE, &as_version_1).expect("write the fixture");
    }
    assert!(
        as_version_1 == pinned,
        "the same state makes other bytes than version 1's ({} vs {} bytes): the layout changed",
        now.len(),
        pinned.len()
    );
}

#[test]
fn an_image_written_out_is_the_image_made_in_memory() {
    // [SERVER.UPGRADE.STATE.1] Written once into a file (the driver's memfd), in one pass, it
    // is the same bytes, after whatever the file held before.
    let h = pinned_harness();
    let image = h.server.export_image(&()).expect("quiet");
    let mut out = std::io::Cursor::new(b"before".to_vec());
    out.set_position(6);
    let len = h
        .server
        .export_image_to(&(), &mut out)
        .expect("quiet and written");
    assert_eq!(len, image.len() as u64);
    assert_eq!(&out.get_ref()[..6], b"before");
    assert_eq!(&out.get_ref()[6..], &image[..]);
}
