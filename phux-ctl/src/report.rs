//! What `send` and `paste` print: every part's verdict (CLIENT.SUBMIT.3), as lines or as one
//! JSON object, and the exit status they add up to.

use std::io::Write;

use phux_core::client::outbox::Resolution;
use phux_core::client::retry::{NotSentReason, UnknownReason};
use phux_proto::{OperationId, TerminalId};

use crate::error::{EXIT_OK, EXIT_REFUSED, EXIT_UNKNOWN};

/// How a resolution is printed: `delivered`, `unknown: why`, `refused: CODE message`.
pub fn verdict(resolution: &Resolution) -> String {
    match resolution {
        Resolution::Delivered => "delivered".to_owned(),
        Resolution::Unknown(reason) => format!(
            "unknown: {}",
            match reason {
                UnknownReason::DeliveryUnknown =>
                    "the server could not confirm the write (INPUT_DELIVERY_UNKNOWN)",
                UnknownReason::IncarnationChanged =>
                    "the server restarted before answering, so a resend could write twice",
                UnknownReason::HorizonElapsed => "unanswered for too long to resend safely",
                UnknownReason::RetriesExhausted => "unanswered, and the retries ran out",
                UnknownReason::Dropped => "dropped from the outbox while its delivery was in doubt",
            }
        ),
        Resolution::NotSent(reason) => format!(
            "not sent: {}",
            match reason {
                NotSentReason::ServerGone =>
                    "the server it was addressed to is gone (a new server answered; its terminal \
                     ids name other programs)"
                        .to_owned(),
                NotSentReason::Expired =>
                    "too old to send (submitted 9.5 minutes ago or more)".to_owned(),
                NotSentReason::Dropped => "dropped from the outbox".to_owned(),
                NotSentReason::EarlierPartFailed { part } => format!(
                    "part {part} of the same input was not delivered, so nothing after it is sent"
                ),
            }
        ),
        Resolution::Refused { code, message } => format!("refused: {code} {message}"),
    }
}

pub(crate) fn resolution_code(resolution: &Resolution) -> u8 {
    match resolution {
        Resolution::Delivered => EXIT_OK,
        Resolution::Unknown(_) => EXIT_UNKNOWN,
        Resolution::Refused { .. } | Resolution::NotSent(_) => EXIT_REFUSED,
    }
}

/// One part of a submission and what became of it (`None`: still unresolved when the wait
/// ended; it stays in the outbox for the next run).
#[derive(Debug)]
pub(crate) struct PartOutcome {
    /// Its operation.
    pub(crate) op: OperationId,
    /// Its resolution, if it has one.
    pub(crate) resolution: Option<Resolution>,
}

impl PartOutcome {
    /// The outcomes of `ops`, in order, from what [`super::conn::Session::wait_resolved`]
    /// found.
    pub(crate) fn collect(
        ops: &[OperationId],
        found: Vec<Option<(TerminalId, Resolution)>>,
    ) -> Vec<Self> {
        ops.iter()
            .zip(found)
            .map(|(op, found)| Self {
                op: *op,
                resolution: found.map(|(_, r)| r),
            })
            .collect()
    }
}

/// A verdict's one-word kind, as `--json` names it.
fn kind(resolution: Option<&Resolution>) -> &'static str {
    match resolution {
        Some(Resolution::Delivered) => "delivered",
        Some(Resolution::Refused { .. }) => "refused",
        Some(Resolution::Unknown(_)) => "unknown",
        Some(Resolution::NotSent(_)) => "not_sent",
        None => "pending",
    }
}

/// The line printed for part `index` (from 0) of `parts`.
fn text(parts: &[PartOutcome], index: usize) -> String {
    match &parts[index].resolution {
        Some(resolution) => verdict(resolution),
        None => match parts[..index].iter().position(|p| p.resolution.is_none()) {
            // Only the first unresolved part can have left: the rest wait behind it.
            Some(first) => format!(
                "not sent yet: it waits behind part {}; the next phuxctl run sends or reports it",
                first + 1
            ),
            None => {
                "unknown: still unanswered; the next phuxctl run resumes or reports it".to_owned()
            }
        },
    }
}

/// The exit status: 0 when every part was delivered; unknown (3) when any part may or may not
/// have been written; else refused (4).
pub(crate) fn exit_code(parts: &[PartOutcome]) -> u8 {
    parts.iter().fold(EXIT_OK, |code, part| {
        let this = part
            .resolution
            .as_ref()
            .map_or(EXIT_UNKNOWN, resolution_code);
        // Unknown outranks refused: part of the input may have been written.
        if code == EXIT_OK || this == EXIT_UNKNOWN {
            this
        } else {
            code
        }
    })
}

/// Prints the verdicts of a submission's parts to `out`; its exit status.
///
/// One part: its verdict line, as always. Several: `part i of n: VERDICT` for each, then
/// `delivered` when all were. `json`: one object with every part.
pub(crate) fn print(parts: &[PartOutcome], json: bool, out: &mut impl Write) -> u8 {
    let code = exit_code(parts);
    let total = parts.len();
    if json {
        let _ = writeln!(out, "{}", to_json(parts, code));
    } else if total == 1 {
        let _ = writeln!(out, "{}", text(parts, 0));
    } else {
        for i in 0..total {
            let _ = writeln!(out, "part {} of {total}: {}", i + 1, text(parts, i));
        }
        if code == EXIT_OK {
            let _ = writeln!(out, "delivered");
        }
    }
    code
}

/// `--json`: `{verdict, exit, parts: [{part, of, operation, verdict, text, ...}]}`. The
/// overall verdict is that of the first part not delivered, or `unknown` when any part's
/// delivery is in doubt or unresolved.
fn to_json(parts: &[PartOutcome], code: u8) -> serde_json::Value {
    let overall = if code == EXIT_UNKNOWN {
        "unknown"
    } else {
        parts
            .iter()
            .map(|p| kind(p.resolution.as_ref()))
            .find(|k| *k != "delivered")
            .unwrap_or("delivered")
    };
    let total = parts.len();
    let parts: Vec<serde_json::Value> = parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let mut doc = serde_json::json!({
                "part": i + 1,
                "of": total,
                "operation": part.op.to_string(),
                "verdict": kind(part.resolution.as_ref()),
                "text": text(parts, i),
            });
            if let Some(fields) = doc.as_object_mut() {
                match &part.resolution {
                    Some(Resolution::Refused { code, message }) => {
                        fields.insert("code".to_owned(), code.to_string().into());
                        fields.insert("message".to_owned(), message.clone().into());
                    }
                    Some(Resolution::NotSent(NotSentReason::EarlierPartFailed { part })) => {
                        fields.insert("after_part".to_owned(), (*part).into());
                    }
                    _ => {}
                }
            }
            doc
        })
        .collect();
    serde_json::json!({ "verdict": overall, "exit": code, "parts": parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_proto::ErrorCode;

    fn part(n: u128, resolution: Option<Resolution>) -> PartOutcome {
        PartOutcome {
            op: OperationId::from_u128(n).expect("id"),
            resolution,
        }
    }

    fn printed(parts: &[PartOutcome], json: bool) -> (String, u8) {
        let mut out = Vec::new();
        let code = print(parts, json, &mut out);
        (String::from_utf8(out).expect("utf-8"), code)
    }

    fn refused() -> Resolution {
        Resolution::Refused {
            code: ErrorCode::CANONICAL_LIMIT_EXCEEDED,
            message: "a line too long".into(),
        }
    }

    fn after(part: u32) -> Resolution {
        Resolution::NotSent(NotSentReason::EarlierPartFailed { part })
    }

    // [CLIENT.SUBMIT.3] One part prints as before; several print every part, the ones not
    // sent included.
    #[test]
    fn every_part_is_reported() {
        assert_eq!(
            printed(&[part(1, Some(Resolution::Delivered))], false),
            ("delivered\n".to_owned(), EXIT_OK)
        );
        let (text, code) = printed(
            &[
                part(1, Some(Resolution::Delivered)),
                part(2, Some(Resolution::Delivered)),
            ],
            false,
        );
        assert_eq!(
            text,
            "part 1 of 2: delivered\npart 2 of 2: delivered\ndelivered\n"
        );
        assert_eq!(code, EXIT_OK);
        let (text, code) = printed(&[part(1, Some(refused())), part(2, Some(after(1)))], false);
        assert_eq!(
            text,
            "part 1 of 2: refused: CANONICAL_LIMIT_EXCEEDED a line too long\n\
             part 2 of 2: not sent: part 1 of the same input was not delivered, so nothing \
             after it is sent\n"
        );
        assert_eq!(code, EXIT_REFUSED);
        // Unresolved at the deadline: the first may be in flight, the rest wait behind it.
        let (text, code) = printed(
            &[
                part(1, Some(Resolution::Delivered)),
                part(2, None),
                part(3, None),
            ],
            false,
        );
        assert!(
            text.contains("part 2 of 3: unknown: still unanswered"),
            "{text}"
        );
        assert!(
            text.contains("part 3 of 3: not sent yet: it waits behind part 2"),
            "{text}"
        );
        assert_eq!(code, EXIT_UNKNOWN);
    }

    #[test]
    fn json_names_every_part() {
        let (text, code) = printed(
            &[
                part(1, Some(Resolution::Unknown(UnknownReason::DeliveryUnknown))),
                part(2, Some(after(1))),
            ],
            true,
        );
        assert_eq!(code, EXIT_UNKNOWN);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(doc["verdict"], "unknown");
        assert_eq!(doc["exit"], 3);
        assert_eq!(doc["parts"][0]["verdict"], "unknown");
        assert_eq!(doc["parts"][1]["verdict"], "not_sent");
        assert_eq!(doc["parts"][1]["after_part"], 1);
        assert_eq!(doc["parts"][1]["of"], 2);
        let (text, _) = printed(&[part(1, Some(refused())), part(2, Some(after(1)))], true);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(doc["verdict"], "refused");
        assert_eq!(doc["parts"][0]["code"], "CANONICAL_LIMIT_EXCEEDED");
        let (text, _) = printed(&[part(1, Some(Resolution::Delivered))], true);
        let doc: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
        assert_eq!(doc["verdict"], "delivered");
        assert_eq!(doc["parts"][0]["text"], "delivered");
    }

    #[test]
    fn verdicts_read_as_documented() {
        assert_eq!(verdict(&Resolution::Delivered), "delivered");
        assert!(
            verdict(&Resolution::Unknown(UnknownReason::DeliveryUnknown)).starts_with("unknown: ")
        );
        assert_eq!(
            verdict(&Resolution::Refused {
                code: ErrorCode::INPUT_LEASE_HELD,
                message: "held".into()
            }),
            "refused: INPUT_LEASE_HELD held"
        );
        assert_eq!(resolution_code(&Resolution::Delivered), EXIT_OK);
        assert_eq!(
            resolution_code(&Resolution::Unknown(UnknownReason::HorizonElapsed)),
            EXIT_UNKNOWN
        );
    }
}
