//! A finding as a transcript `phux-conformance run` replays: the session's sends (clean frames
//! in the notation with the terminals it spawned captured as `$tK`, mutated ones as `raw`
//! bytes), then the check the finding failed, citing its clause.

use std::fmt::Write as _;

use super::run::{Finding, Kind, Outcome, Recorded};

/// The nonce of a transcript's final liveness PING.
const CHECK_NONCE: u64 = 0x6e65_7466_757a_7a21;

fn requirement(kind: &Kind) -> &'static str {
    match kind {
        Kind::ServerDown | Kind::Liveness | Kind::Stalled | Kind::UnexpectedClose(_) => {
            "A server MUST answer every PING, before or after HELLO, with a PONG carrying the same nonce."
        }
        Kind::Undecodable => {
            "A sender MUST write every frame as a 4-byte big-endian length, the type byte, then exactly length - 1 body bytes."
        }
        Kind::Unsolicited | Kind::MissingReply(_) => {
            "A server MUST answer every COMMAND that decodes with exactly one COMMAND_RESULT carrying the COMMAND's request id."
        }
        Kind::ActedAfterFatal { detach: true } => {
            "A server MUST NOT act on any frame that follows DETACH on the same connection."
        }
        Kind::ActedAfterFatal { detach: false } => {
            "After a fatal error a server MUST ignore every later byte from that connection."
        }
        Kind::AcceptedMalformed => {
            "A server that receives a COMMAND frame with valid framing whose body does not decode MUST answer with an ERROR frame."
        }
        Kind::OverLimit => {
            "A server MUST send max_chunk_bytes = min(client's value, 262,144) and keep to it."
        }
        Kind::ClosedWithoutDetached => {
            "A server MUST send the ERROR of a fatal error with request_id absent, and follow it with DETACHED{PROTOCOL_ERROR} before closing."
        }
        Kind::QueueBound => {
            "A server MUST NOT hold more unsent bytes for a connection than its output budget plus its control budget plus one frame being written."
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(if i % 32 == 0 { '\n' } else { ' ' });
            if i % 32 == 0 {
                s.push_str("    ");
            }
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The transcript `netfuzz/<number>` for a finding shown by `out` (a run of the minimised
/// session), with `note` as its opening comment.
pub fn transcript(
    number: u32,
    finding: &Finding,
    out: &Outcome,
    queue_bound: usize,
    note: &str,
) -> String {
    let kind = &finding.kind;
    let clause = kind.clause();
    let mut t = String::new();
    let _ = writeln!(t, "id: netfuzz/{number:03}");
    let _ = writeln!(t, "clauses: {clause}");
    let _ = writeln!(t, "level: MUST");
    let detail = finding.detail.replace('\n', " ");
    let _ = writeln!(
        t,
        "description: netfuzz finding ({}): {detail}",
        kind.slug()
    );
    let _ = writeln!(t, "requirement: {}", requirement(kind));
    let _ = writeln!(t, "---");
    for line in note.lines() {
        let _ = writeln!(t, "# {line}");
    }
    // What the server owes at once (PONGs, the HELLO_OK), consumed before the checks as the
    // runner's prelude would, so a check sees only the frames it is about. Each is a rule of
    // its own, so each cites it.
    let mut owed = Vec::new();
    for r in &out.record {
        match r {
            Recorded::Send {
                text: Some(text),
                answers,
                ..
            } => {
                let _ = writeln!(t, "c1 > {text}");
                owed.extend(answers.iter().cloned());
            }
            Recorded::Send {
                text: None,
                bytes,
                answers,
            } => {
                let _ = writeln!(t, "c1 > raw {}", hex(bytes));
                owed.extend(answers.iter().cloned());
            }
            Recorded::Spawned { request_id, k } => {
                let _ = writeln!(
                    t,
                    "c1 < TERMINAL_SPAWNED{{request_id={request_id} result=ok{{terminal=$t{k}}}}}"
                );
            }
            Recorded::Pause => {
                let _ = writeln!(t, "c1 pause");
            }
            Recorded::Repeat { count, text } => {
                let _ = writeln!(t, "repeat {count} {{\nc1 > {text}\n}}");
            }
            Recorded::Wait(d) => {
                let _ = writeln!(t, "~ {}ms", d.as_millis());
            }
            Recorded::Resume => {
                let _ = writeln!(t, "c1 resume");
                if *kind == Kind::QueueBound {
                    let _ = writeln!(t, "c1 bytes since resume <= {queue_bound}  # [{clause}]");
                }
            }
        }
    }
    for answer in &owed {
        let cites = if answer.starts_with("PONG") {
            "PING.ECHO.1"
        } else {
            "HELLO.OK.1"
        };
        let _ = writeln!(t, "c1 < {answer}  # [{cites}]");
    }
    match kind {
        Kind::Unsolicited | Kind::MissingReply(_) => {
            for (id, _) in &out.commands {
                let _ = writeln!(
                    t,
                    "c1 < COMMAND_RESULT{{request_id={id} ..}} | ERROR{{request_id={id} ..}}  # [{clause}]"
                );
            }
            if *kind == Kind::Unsolicited {
                let _ = writeln!(t, "c1 < nothing  # [{clause}]");
            }
        }
        Kind::ClosedWithoutDetached => {
            let _ = writeln!(t, "c1 < DETACHED{{..}}  # [{clause}]");
        }
        Kind::AcceptedMalformed => {
            let _ = writeln!(t, "c1 < ERROR{{..}}  # [{clause}]");
        }
        Kind::ActedAfterFatal { detach } => {
            // The requests before the fatal frame are answered (setup, citing nothing).
            for (id, _) in &out.commands {
                let _ = writeln!(
                    t,
                    "c1 < COMMAND_RESULT{{request_id={id} ..}} | ERROR{{request_id={id} ..}}"
                );
            }
            if !detach {
                let _ = writeln!(t, "c1 < ERROR{{..}}  # [{clause}]");
            }
            let _ = writeln!(t, "c1 < DETACHED{{..}}  # [{clause}]");
            let _ = writeln!(t, "c1 closed  # [{clause}]");
        }
        Kind::QueueBound => {}
        Kind::ServerDown | Kind::Liveness if !out.single_connection => {
            let _ = writeln!(t, "c2 > PING{{nonce=0x{CHECK_NONCE:016x}}}");
            let _ = writeln!(t, "c2 < PONG{{nonce=0x{CHECK_NONCE:016x}}}  # [{clause}]");
        }
        _ => {
            let _ = writeln!(t, "c1 > PING{{nonce=0x{CHECK_NONCE:016x}}}");
            let _ = writeln!(t, "c1 < PONG{{nonce=0x{CHECK_NONCE:016x}}}  # [{clause}]");
        }
    }
    t
}

/// The bytes the session sent on its main connection, in order, a flood's repeated frames
/// left out (the `.bin` beside a transcript).
pub fn raw_stream(out: &Outcome) -> Vec<u8> {
    out.record
        .iter()
        .filter_map(|r| match r {
            Recorded::Send { bytes, .. } => Some(bytes.as_slice()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .concat()
}
