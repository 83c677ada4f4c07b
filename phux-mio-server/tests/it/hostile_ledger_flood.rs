//! One client sends 70,000 APPLY_INPUTs for a terminal that does not exist, more than the
//! whole dedupe ledger holds: none of them occupies it, and another client's acknowledged
//! input is then written and answered OK ([INPUT.DEDUPE.9], [INPUT.DEDUPE.12]).

use phux_proto::command::CommandResult;
use phux_proto::{ErrorCode, Frame, OperationId, TerminalId};

use crate::support::client::{Client, Server};
use crate::support::faults::paste_command;

const FLOOD: u32 = 70_000;

#[test]
fn refused_floods_leave_the_ledger_to_others() {
    let server = Server::start();
    let mut flooder = server.connect();
    flooder.hello();
    let nowhere = TerminalId::Local(4_000_000_000);
    let mut batch = Vec::new();
    for n in 1..=FLOOD {
        let op = OperationId::from_u128(u128::from(n)).expect("non-zero");
        batch.extend(paste_command(n, op, &nowhere, b"n".to_vec()).to_bytes());
        if batch.len() > 60_000 || n == FLOOD {
            flooder.send_raw(&batch);
            batch.clear();
            // Every one refused at step 4, none at the ledger.
            flooder.wait_for("the batch's last result", |f| match f {
                Frame::CommandResult(r) if r.request_id == n => Some(()),
                _ => None,
            });
        }
    }
    let refused_by_ledger = flooder.seen.iter().any(|f| {
        matches!(f, Frame::CommandResult(r) if matches!(&r.result,
            CommandResult::Error { code, .. } if *code == ErrorCode::RESOURCE_EXHAUSTED))
    });
    assert!(!refused_by_ledger, "the flood reached the ledger's limit");
    let mut honest: Client = server.connect();
    honest.hello();
    let t = honest.spawn(&["/bin/sh", "-c", "stty -echo; cat"]);
    let op = OperationId::from_u128(0xfeed).expect("non-zero");
    honest.send(&paste_command(1_000, op, &t, b"honest\r".to_vec()));
    let result = honest.wait_for("the honest APPLY_INPUT's result", |f| match f {
        Frame::CommandResult(r) if r.request_id == 1_000 => Some(r.result.clone()),
        _ => None,
    });
    assert_eq!(result, CommandResult::Ok);
}
