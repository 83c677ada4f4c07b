//! Which earlier operations a run touches, and `phuxctl outbox`.
//!
//! Operations an earlier run left pending are resumed only by a command that sends input,
//! and only those to its own terminal, or by `phuxctl outbox resume` (CLIENT.RESUME.1).
//! Every other command reads the journal without its lock, creates nothing, and only says
//! what is pending or damaged (CLIENT.JOURNAL.10). A resolution is printed by the run that
//! resolves it, which journals it, so it is reported once (CLIENT.RESUME.2).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant as StdInstant};

use phux_core::client::journal::{Incarnation, JournalRecord};
use phux_core::client::outbox::{Outbox, OutboxConfig, Resolution, Scope};
use phux_proto::input::InputEvent;
use phux_proto::{OperationId, TerminalId};

use phux_local::verify;

use crate::cli::{Cli, OutboxAction, OutboxArgs};
use crate::conn::{Session, Upkeep, Waits, unix_now};
use crate::error::{CtlError, EXIT_BOOKKEEPING, EXIT_OK, EXIT_UNKNOWN};
use crate::link::ServerAddress;
use crate::outbox_store::{
    Journal, Opened, OutboxStore, journal_key, journal_path, outbox_dir, peek,
};
use crate::report::{resolution_code, verdict};

/// The journal key for a target: its `--name`, or the absolute socket path (also the key of
/// its terminal names and of the log of a server phuxctl started there).
pub(crate) fn key(cli: &Cli, address: &ServerAddress) -> String {
    let named = cli.socket.is_some() || matches!(address, ServerAddress::Exec(_));
    journal_key(named.then(|| address.key_path()).as_deref(), &cli.name)
}

/// Opens the session for a command: with the journal, locked, and the command's own
/// terminal in scope when it sends input (`sends_to`); otherwise without the journal (only
/// peeked at).
pub(crate) fn open_session(
    cli: &Cli,
    address: &ServerAddress,
    sends_to: Option<TerminalId>,
    waits: Waits,
) -> Result<Session, CtlError> {
    let key = key(cli, address);
    let Some(terminal) = sends_to else {
        // [CLIENT.RESUME.1] A command that sends nothing resumes nothing.
        note_pending(&key);
        return Session::connect_within(address, None, Vec::new(), Scope::Nothing, waits.command);
    };
    let scope = Scope::Terminal(terminal);
    // A place we would refuse to dial is refused before the journal is touched.
    if let ServerAddress::Socket(target) = address {
        verify::check_place(target).map_err(|e| CtlError::Untrusted(Box::new(e)))?;
    }
    let (store, journal) = open_store(&key, waits.lock)?;
    if !journal.damaged.is_empty() {
        // [CLIENT.JOURNAL.6] An error, once: the damage is moved aside now, so the next run
        // proceeds with every intact record.
        for line in journal.damage_report(store.path()) {
            eprintln!("phuxctl: {line}");
        }
        return Err(CtlError::Local(
            "nothing was sent because the outbox journal was damaged; run the command again \
             (`phuxctl outbox list` shows what is pending)"
                .to_owned(),
        ));
    }
    settle(address, store, journal.records, scope, waits).map(|(session, _)| session)
}

/// Opens the journal with its lock, saying so when another phuxctl holds it and this run
/// waits for it (at most `limit`, `--timeout`).
fn open_store(key: &str, limit: Option<Duration>) -> Result<(OutboxStore, Journal), CtlError> {
    /// flock has no timeout, so a bounded wait polls.
    const POLL: Duration = Duration::from_millis(50);
    let dir = outbox_dir()?;
    if let Opened::Locked(store, journal) = OutboxStore::try_open(&dir, key)? {
        return Ok((store, journal));
    }
    eprintln!(
        "phuxctl: waiting for another phuxctl that is sending to this server (outbox {})",
        journal_path(&dir, key).display()
    );
    let Some(limit) = limit else {
        return Ok(OutboxStore::open(&dir, key)?);
    };
    let deadline = StdInstant::now() + limit;
    loop {
        std::thread::sleep(POLL);
        if let Opened::Locked(store, journal) = OutboxStore::try_open(&dir, key)? {
            return Ok((store, journal));
        }
        if StdInstant::now() >= deadline {
            return Err(CtlError::Local(format!(
                "gave up after {}s (--timeout): another phuxctl still holds the outbox \
                 journal's lock",
                limit.as_secs_f64()
            )));
        }
    }
}

/// Connects with the journal and reports what became of the restored operations in
/// `scope`; the session and the worst exit code of those verdicts.
fn settle(
    address: &ServerAddress,
    store: OutboxStore,
    records: Vec<JournalRecord>,
    scope: Scope,
    waits: Waits,
) -> Result<(Session, u8), CtlError> {
    let restored = pending_ops(&records, &scope);
    let parts = part_names(&records);
    let mut session = Session::connect_within(address, Some(store), records, scope, waits.command)?;
    let mut code = EXIT_OK;
    if !restored.is_empty() {
        let deadline = StdInstant::now() + waits.input;
        let outcomes = session.wait_resolved(&restored, deadline)?;
        for (op, outcome) in restored.iter().zip(outcomes) {
            let part = parts.get(op).map_or_else(String::new, Clone::clone);
            if let Some((terminal, resolution)) = outcome {
                // [CLIENT.SUBMIT.3] Every part's verdict, those not sent included.
                eprintln!(
                    "phuxctl: earlier operation {op}{part} to {terminal}: {}",
                    verdict(&resolution)
                );
                code = worse(code, resolution_code(&resolution));
            } else {
                eprintln!(
                    "phuxctl: earlier operation {op}{part}: still pending; it stays in the outbox"
                );
                code = worse(code, EXIT_UNKNOWN);
            }
        }
    }
    Ok((session, code))
}

/// ` (part i of n)` for each operation a journal records as part of a larger submission.
fn part_names(records: &[JournalRecord]) -> HashMap<OperationId, String> {
    records
        .iter()
        .filter_map(|r| match r {
            JournalRecord::Enqueued {
                input,
                part: Some(part),
                ..
            } if part.of > 1 => Some((
                input.operation_id,
                format!(" (part {} of {})", part.index, part.of),
            )),
            _ => None,
        })
        .collect()
}

/// Unknown outranks refused: part of the input may have been written.
fn worse(a: u8, b: u8) -> u8 {
    if a == EXIT_OK || b == EXIT_UNKNOWN {
        b
    } else {
        a
    }
}

/// The operations a journal leaves unresolved in `scope`, in submission order.
pub(crate) fn pending_ops(records: &[JournalRecord], scope: &Scope) -> Vec<OperationId> {
    let resolved: HashSet<OperationId> = records
        .iter()
        .filter_map(|r| match r {
            JournalRecord::Resolved { op, .. } => Some(*op),
            _ => None,
        })
        .collect();
    records
        .iter()
        .filter_map(|r| match r {
            JournalRecord::Enqueued { input, .. }
                if !resolved.contains(&input.operation_id) && scope.covers(&input.terminal) =>
            {
                Some(input.operation_id)
            }
            _ => None,
        })
        .collect()
}

/// For a command that sends nothing: says (on stderr) that the journal is damaged or that
/// operations wait, without locking or creating anything.
fn note_pending(key: &str) {
    let Ok(dir) = outbox_dir() else { return };
    match peek(&dir, key) {
        Ok(None) => {}
        Ok(Some(journal)) => {
            for line in journal.damage_report(&journal_path(&dir, key)) {
                eprintln!("phuxctl: warning: {line}");
            }
            let pending = pending_ops(&journal.records, &Scope::All).len();
            if pending > 0 {
                eprintln!(
                    "phuxctl: note: {pending} operation(s) from earlier runs wait in the outbox, \
                     unsent; `phuxctl outbox list` shows them (only a send or paste to their \
                     terminal, or `phuxctl outbox resume`, sends them)"
                );
            }
        }
        Err(e) => eprintln!("phuxctl: warning: cannot read the outbox journal: {e}"),
    }
}

/// Runs `phuxctl outbox`.
pub(crate) fn run(
    cli: &Cli,
    address: &ServerAddress,
    args: &OutboxArgs,
    waits: Waits,
) -> Result<u8, CtlError> {
    let key = key(cli, address);
    match &args.action {
        None => list(address, &key, false, waits),
        Some(OutboxAction::List { json }) => list(address, &key, *json, waits),
        Some(OutboxAction::Resume { terminal }) => {
            let (store, journal) = open_store(&key, waits.lock)?;
            for line in journal.damage_report(store.path()) {
                eprintln!("phuxctl: {line}");
            }
            let scope = terminal.clone().map_or(Scope::All, Scope::Terminal);
            if pending_ops(&journal.records, &scope).is_empty() {
                println!("nothing pending");
                return Ok(EXIT_OK);
            }
            let (session, code) = settle(address, store, journal.records, scope, waits)?;
            // [CLIENT.VERDICT.1]
            Ok(session.finish(code))
        }
        Some(OutboxAction::Drop { all, terminal, ops }) => {
            drop_ops(&key, *all, terminal.as_ref(), ops, waits)
        }
    }
}

fn list(address: &ServerAddress, key: &str, json: bool, waits: Waits) -> Result<u8, CtlError> {
    // No state directory at all: nothing can be pending.
    let journal = match outbox_dir() {
        Ok(dir) => peek(&dir, key)?.map(|j| (dir, j)),
        Err(_) => None,
    };
    let Some((dir, journal)) = journal else {
        if !json {
            println!("nothing pending");
        }
        return Ok(EXIT_OK);
    };
    for line in journal.damage_report(&journal_path(&dir, key)) {
        eprintln!("phuxctl: warning: {line}");
    }
    let (outbox, _) = Outbox::rebuild_salvaging(OutboxConfig::default(), journal.records);
    let pending = outbox.all_pending();
    if pending.is_empty() {
        if !json {
            println!("nothing pending");
        }
        return Ok(EXIT_OK);
    }
    // Which incarnation answers now, if any (read-only: nothing of the outbox is sent).
    let current = Session::connect_within(address, None, Vec::new(), Scope::Nothing, waits.command)
        .ok()
        .and_then(|s| s.server_id().map(Incarnation::of));
    let now = unix_now();
    let mut out = std::io::stdout().lock();
    for p in pending {
        let state = if p.blocked_by.is_some() {
            "never sent, and never will be (an earlier part of its input was not delivered)"
        } else if p.in_doubt {
            "in doubt (sent, unanswered)"
        } else if p.attempts > 0 {
            "not written yet (sent, answered busy)"
        } else {
            "never sent"
        };
        let server = match current {
            _ if p.addressed_to == Incarnation::UNRECORDED => "unrecorded (never sent)",
            Some(now) if now == p.addressed_to => "running",
            Some(_) => "gone (a new server answers; it will not be sent)",
            None => "not reachable",
        };
        let age = now.saturating_duration_since(p.enqueued_at).as_secs();
        let bytes: usize = p
            .input
            .events
            .iter()
            .map(|e| match e {
                InputEvent::Paste(paste) => paste.data.len(),
                _ => 1,
            })
            .sum();
        let op = p.input.operation_id;
        let terminal = &p.input.terminal;
        let _ = if json {
            writeln!(
                out,
                "{}",
                serde_json::json!({
                    "operation": op.to_string(),
                    "terminal": terminal.to_string(),
                    "state": state,
                    "server": server,
                    "age_secs": age,
                    "bytes": bytes,
                    "part": p.part.index,
                    "of": p.part.of,
                })
            )
        } else {
            writeln!(
                out,
                "{op}\t{terminal}\t{state}\tserver {server}\t{age}s old\t{bytes} bytes\tpart {} \
                 of {}",
                p.part.index, p.part.of
            )
        };
    }
    Ok(EXIT_OK)
}

fn drop_ops(
    key: &str,
    all: bool,
    terminal: Option<&TerminalId>,
    ops: &[OperationId],
    waits: Waits,
) -> Result<u8, CtlError> {
    if !all && terminal.is_none() && ops.is_empty() {
        return Err(CtlError::Usage(
            "outbox drop needs the operations to drop, or --terminal ID, or --all".to_owned(),
        ));
    }
    let (mut store, journal) = open_store(key, waits.lock)?;
    for line in journal.damage_report(store.path()) {
        eprintln!("phuxctl: {line}");
    }
    let (mut outbox, _) = Outbox::rebuild_salvaging(OutboxConfig::default(), journal.records);
    let chosen: Vec<OperationId> = outbox
        .all_pending()
        .iter()
        .filter(|p| {
            all || terminal.is_some_and(|t| *t == p.input.terminal)
                || ops.contains(&p.input.operation_id)
        })
        .map(|p| p.input.operation_id)
        .collect();
    for op in ops {
        if !chosen.contains(op) {
            eprintln!("phuxctl: operation {op} is not pending; nothing to drop");
        }
    }
    let resolved = outbox.drop_pending(&chosen);
    while let Some(record) = outbox.poll_journal() {
        store.append(&record)?;
    }
    store.sync()?;
    // [CLIENT.VERDICT.1] The drops are recorded; a compaction that fails now is said apart.
    let compaction = store.rewrite(&outbox.compact()).err();
    let mut out = std::io::stdout().lock();
    for (input, resolution) in &resolved {
        let _ = writeln!(
            out,
            "operation {} to {}: {}",
            input.operation_id,
            input.terminal,
            verdict(resolution)
        );
    }
    if resolved.is_empty() {
        let _ = writeln!(out, "nothing dropped");
    }
    let code = if resolved
        .iter()
        .all(|(_, r)| !matches!(r, Resolution::Unknown(_)))
    {
        EXIT_OK
    } else {
        EXIT_UNKNOWN
    };
    Ok(match compaction {
        Some(e) => {
            eprintln!("phuxctl: {}", Upkeep::Compaction(e));
            if code == EXIT_OK {
                EXIT_BOOKKEEPING
            } else {
                code
            }
        }
        None => code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_core::time::Instant;
    use phux_proto::command::ApplyInput;

    #[test]
    fn pending_ops_follow_the_journal_and_the_scope() {
        let op = |n| OperationId::from_u128(n).expect("id");
        let enq = |n, t| JournalRecord::Enqueued {
            input: ApplyInput {
                operation_id: op(n),
                terminal: TerminalId::Local(t),
                events: Vec::new(),
            },
            enqueued_at: Instant::ZERO,
            addressed_to: Incarnation::UNRECORDED,
            part: None,
        };
        let records = [
            enq(3, 1),
            enq(1, 1),
            JournalRecord::Resolved {
                op: op(3),
                resolution: Resolution::Delivered,
            },
            enq(2, 2),
        ];
        assert_eq!(pending_ops(&records, &Scope::All), [op(1), op(2)]);
        assert_eq!(
            pending_ops(&records, &Scope::Terminal(TerminalId::Local(2))),
            [op(2)]
        );
        assert!(pending_ops(&records, &Scope::Nothing).is_empty());
    }
}
