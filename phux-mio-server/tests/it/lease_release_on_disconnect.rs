//! An input lease holder's disconnect releases the lease, broadcast to the other clients, and
//! the gate on their input opens.

use phux_proto::command::{AcquireMode, ApplyInput, Command, CommandResult};
use phux_proto::event::{AgentEvent, ControlAction};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

use crate::support::client::Server;

fn apply(id: u128, terminal: &TerminalId) -> Command {
    Command::ApplyInput(ApplyInput {
        operation_id: OperationId::from_u128(id).expect("id"),
        terminal: terminal.clone(),
        events: vec![InputEvent::Paste(PasteEvent {
            trust: PasteTrust::Trusted,
            data: b"x\n".to_vec(),
        })],
    })
}

#[test]
fn a_holders_disconnect_releases_its_lease() {
    // [LEASE.DISCONNECT.1] [LEASE.GATE.3] [LEASE.ACQUIRE.4]
    let server = Server::start();
    let mut holder = server.connect();
    holder.hello();
    let mut other = server.connect();
    other.hello();
    let terminal = holder.spawn(&["cat"]);
    assert_eq!(
        other.command(Command::AttachTerminal {
            terminal: terminal.clone()
        }),
        CommandResult::Ok
    );

    assert_eq!(
        holder.command(Command::AcquireInput {
            terminal: terminal.clone(),
            mode: AcquireMode::Cooperative,
            ttl_ms: 0
        }),
        CommandResult::Ok
    );
    let acquired_by = other.wait_for("ACQUIRED", |f| match f {
        Frame::Event(e) => match &e.event {
            AgentEvent::TerminalControl(tc) if tc.action == ControlAction::Acquired => {
                Some(tc.input_holder)
            }
            _ => None,
        },
        _ => None,
    });
    assert!(acquired_by.is_some());
    let refused = other.command(apply(1, &terminal));
    assert!(
        matches!(refused, CommandResult::Error { code, .. } if code == ErrorCode::INPUT_LEASE_HELD),
        "{refused:?}"
    );

    drop(holder);
    let released = other.wait_for("RELEASED", |f| match f {
        Frame::Event(e) => match &e.event {
            AgentEvent::TerminalControl(tc) if tc.action == ControlAction::Released => {
                Some((tc.input_holder, tc.actor))
            }
            _ => None,
        },
        _ => None,
    });
    assert_eq!(released.0, None);
    assert_eq!(released.1, acquired_by, "the departing holder is the actor");
    // The same operation, now ungated, is evaluated again and written.
    assert_eq!(other.command(apply(1, &terminal)), CommandResult::Ok);
}
