//! The retry policy for acknowledged input: a pure function from what happened to an
//! operation's last send to what the client does next.
//!
//! The rule it protects: **an operation the server may already have written is never sent
//! again unless the server's dedupe record for it is certain to still exist** (same server
//! incarnation, inside the dedupe horizon). Everything that was definitely not written is
//! retried (or, after a bounded effort, refused for good); nothing is ever dropped silently.
//!
//! | outcome of the last send | decision |
//! |---|---|
//! | OK / OK_WITH | [`RetryDecision::Delivered`] |
//! | connection lost, same `server_id`, age < [`RESEND_HORIZON`] | retry now, same id |
//! | connection lost, `server_id` changed, or age ≥ [`RESEND_HORIZON`] | report unknown |
//! | 202 RESOURCE_EXHAUSTED | retry with [`backoff`] until [`RESEND_HORIZON`], then refused (or unknown if an earlier send was in doubt) |
//! | 207 INPUT_NOT_WRITTEN | retry with [`backoff`], at most [`NOT_WRITTEN_RETRIES`] times, then refused (or unknown if in doubt) |
//! | 205 INPUT_DELIVERY_UNKNOWN | report unknown, never replay |
//! | any other code | refused |

use std::time::Duration;

use phux_proto::{CommandResult, ErrorCode};

use crate::ledger::HORIZON;

/// How much earlier than the server's dedupe horizon the client stops resending an operation
/// that may have been written: the horizon counts from the server's first admission, the
/// client's age from its first send, and a resend needs time to arrive. 30 s covers transit,
/// a slow server and clock-rate drift between the two machines.
pub const HORIZON_MARGIN: Duration = Duration::from_secs(30);

/// The age (from the operation's first send) up to which a resend is safe: the server's
/// 10-minute dedupe horizon less [`HORIZON_MARGIN`].
pub const RESEND_HORIZON: Duration = HORIZON.saturating_sub(HORIZON_MARGIN);

/// How long after its submission an operation may still be sent at all (first send or
/// resend): [`RESEND_HORIZON`]. Input is typed for a screen the user is looking at; an
/// operation that could not go out for this long is reported not sent rather than written
/// into whatever the terminal shows by then (CLIENT.BIND.4).
pub const OPERATION_HORIZON: Duration = RESEND_HORIZON;

/// The first backoff after a not-written answer.
pub const BACKOFF_BASE: Duration = Duration::from_millis(50);

/// The longest backoff: short enough that an operation waiting out another client's 5 s
/// same-terminal job resumes within a second of the terminal freeing up.
pub const BACKOFF_CAP: Duration = Duration::from_secs(1);

/// How many sends answered INPUT_NOT_WRITTEN are retried before the operation is refused.
/// A writer-side 207 is cached by the server as the id's final result, so resending the same
/// id forever would never make progress; a pre-handoff 207 (a transient server state) usually
/// clears within a few backoffs.
pub const NOT_WRITTEN_RETRIES: u32 = 5;

/// What happened to an operation's last send.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SendOutcome {
    /// The server answered (COMMAND_RESULT, or an ERROR correlated to the request).
    Result(CommandResult),
    /// The connection ended (or was dropped as half-open) before an answer arrived.
    ConnectionLost,
}

/// Why an operation's delivery is reported unknown.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UnknownReason {
    /// The server itself could not confirm the write (205).
    DeliveryUnknown,
    /// A send went unanswered and the server restarted since (new `server_id`): its dedupe
    /// state may be gone, so a resend could write twice.
    IncarnationChanged,
    /// A send went unanswered and the dedupe horizon has (nearly) elapsed.
    HorizonElapsed,
    /// A send went unanswered and the retries that might have settled it ran out.
    RetriesExhausted,
    /// A send went unanswered and the user dropped the operation (`phuxctl outbox drop`).
    Dropped,
}

/// Why an operation was resolved without any of it being written.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum NotSentReason {
    /// The server incarnation it was addressed to is gone (a different `server_id`
    /// answered): its terminal ids name other programs now, so it is never sent there.
    ServerGone,
    /// It could not be sent within [`OPERATION_HORIZON`] of its submission.
    Expired,
    /// The user dropped it before it was sent.
    Dropped,
    /// An earlier part of the same submission was not delivered (refused, unknown or not
    /// sent), so this part is never sent: the program must not read the rest of a paste
    /// without its start (CLIENT.SUBMIT.2).
    EarlierPartFailed {
        /// The part (1-based) that was not delivered.
        part: u32,
    },
}

/// What to do with the operation next.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum RetryDecision {
    /// The server wrote it (OK): drop it.
    Delivered,
    /// Send it again with the same operation id, `after` from now (zero: as soon as the
    /// connection is up).
    Retry {
        /// How long to wait first.
        after: Duration,
    },
    /// It may or may not have been written; report that and never replay it.
    ReportUnknown(UnknownReason),
    /// The server refused it for good (nothing was written); report the refusal.
    Refused {
        /// The server's code (or the not-written code that never cleared).
        code: ErrorCode,
        /// The server's text, or ours when we gave up.
        message: String,
    },
}

/// The backoff before send number `attempts + 1`, after `attempts` sends (≥ 1) were answered
/// "not written": 50 ms doubling, capped at 1 s. The sum passes 5 s (the server's
/// same-terminal completion bound) by the 9th retry, and retries continue at 1 s after that.
pub fn backoff(attempts: u32) -> Duration {
    let shift = attempts.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(1 << shift).min(BACKOFF_CAP)
}

/// Decides what to do after an operation's last send.
///
/// - `sent_incarnation`: the `server_id` of the connection the last send went out on.
/// - `current_incarnation`: the `server_id` of the connection now up, `None` when not
///   (yet) connected. For [`SendOutcome::ConnectionLost`] with `None`, a `Retry` is
///   provisional: the caller decides again once HELLO_OK names the incarnation.
/// - `age`: time since the operation's first send.
/// - `attempts`: sends so far, the last one included (≥ 1).
/// - `in_doubt`: whether some earlier send of this operation went unanswered (so the
///   server may have written it), apart from the outcome at hand.
pub fn decide(
    outcome: SendOutcome,
    sent_incarnation: &[u8],
    current_incarnation: Option<&[u8]>,
    age: Duration,
    attempts: u32,
    in_doubt: bool,
) -> RetryDecision {
    match outcome {
        SendOutcome::ConnectionLost => {
            // [CLIENT.RETRY.2] A lost send is resent only to the same incarnation, inside the
            // horizon: only then does the server's dedupe record make the resend safe.
            if current_incarnation.is_some_and(|now| now != sent_incarnation) {
                RetryDecision::ReportUnknown(UnknownReason::IncarnationChanged)
            } else if age >= RESEND_HORIZON {
                RetryDecision::ReportUnknown(UnknownReason::HorizonElapsed)
            } else {
                RetryDecision::Retry {
                    after: Duration::ZERO,
                }
            }
        }
        // [CLIENT.RETRY.1] OK means written and flushed: done.
        SendOutcome::Result(CommandResult::Ok | CommandResult::OkWith(_)) => {
            RetryDecision::Delivered
        }
        SendOutcome::Result(CommandResult::Error { code, message }) => match code {
            // [CLIENT.RETRY.4] 205: the write is in doubt; never replay automatically.
            ErrorCode::INPUT_DELIVERY_UNKNOWN => {
                RetryDecision::ReportUnknown(UnknownReason::DeliveryUnknown)
            }
            // [CLIENT.RETRY.3] 202: nothing was written (the terminal or a queue was busy);
            // back off and retry until the horizon. Giving up is a refusal, not "unknown",
            // unless an earlier send of this operation is still unaccounted for.
            ErrorCode::RESOURCE_EXHAUSTED => {
                let after = backoff(attempts);
                if age.saturating_add(after) < RESEND_HORIZON {
                    RetryDecision::Retry { after }
                } else if in_doubt {
                    RetryDecision::ReportUnknown(UnknownReason::HorizonElapsed)
                } else {
                    RetryDecision::Refused {
                        code,
                        message: format!(
                            "still refused as busy after {} s: {message}",
                            age.as_secs()
                        ),
                    }
                }
            }
            // [CLIENT.RETRY.5] 207: nothing was written; retry the same id, a bounded number
            // of times (a writer-side 207 is cached and would be replayed forever).
            ErrorCode::INPUT_NOT_WRITTEN => {
                let after = backoff(attempts);
                if attempts < NOT_WRITTEN_RETRIES && age.saturating_add(after) < RESEND_HORIZON {
                    RetryDecision::Retry { after }
                } else if in_doubt {
                    RetryDecision::ReportUnknown(if age.saturating_add(after) < RESEND_HORIZON {
                        UnknownReason::RetriesExhausted
                    } else {
                        UnknownReason::HorizonElapsed
                    })
                } else {
                    RetryDecision::Refused {
                        code,
                        message: format!("not written after {attempts} attempts: {message}"),
                    }
                }
            }
            // [CLIENT.RETRY.6] Every other code is a refusal for good: UNSAFE_PASTE,
            // CANONICAL_LIMIT_EXCEEDED, INVALID_COMMAND, TERMINAL_NOT_FOUND, INPUT_LEASE_HELD,
            // UNSUPPORTED_SATELLITE_ROUTE, PERMISSION_DENIED, INTERNAL_ERROR, unknown codes.
            _ => RetryDecision::Refused { code, message },
        },
    }
}

/// How one operation ended.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Resolution {
    /// The server wrote it to the terminal (OK).
    Delivered,
    /// It may or may not have been written; it will not be replayed.
    Unknown(UnknownReason),
    /// It was never written and never will be: the client did not send it (or every send
    /// was answered "not written") and gave it up.
    NotSent(NotSentReason),
    /// The server refused it (nothing was written), or it was given up as not written.
    Refused {
        /// The wire code.
        code: ErrorCode,
        /// The server's (or our) text.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: &[u8] = b"incarnation-a";
    const B: &[u8] = b"incarnation-b";

    fn err(code: ErrorCode) -> SendOutcome {
        SendOutcome::Result(CommandResult::Error {
            code,
            message: "m".into(),
        })
    }

    fn refused(code: ErrorCode) -> RetryDecision {
        RetryDecision::Refused {
            code,
            message: "m".into(),
        }
    }

    fn retry(ms: u64) -> RetryDecision {
        RetryDecision::Retry {
            after: Duration::from_millis(ms),
        }
    }

    const SEC: Duration = Duration::from_secs(1);

    /// One row per policy rule: (clause, outcome, current incarnation, age, attempts,
    /// in_doubt, expected).
    type Row = (
        &'static str,
        SendOutcome,
        Option<&'static [u8]>,
        Duration,
        u32,
        bool,
        RetryDecision,
    );

    #[test]
    fn client_retry_table() {
        use RetryDecision::ReportUnknown as Unknown;
        use UnknownReason as R;
        let nine_min = Duration::from_mins(9);
        let rows: Vec<Row> = vec![
            (
                "RETRY.1 ok",
                SendOutcome::Result(CommandResult::Ok),
                Some(A),
                SEC,
                1,
                false,
                RetryDecision::Delivered,
            ),
            (
                "RETRY.1 ok_with",
                SendOutcome::Result(CommandResult::OkWith(phux_proto::CommandValue::Json(
                    "{}".into(),
                ))),
                Some(A),
                SEC,
                1,
                true,
                RetryDecision::Delivered,
            ),
            (
                "RETRY.2 lost same",
                SendOutcome::ConnectionLost,
                Some(A),
                SEC,
                1,
                false,
                retry(0),
            ),
            (
                "RETRY.2 lost not yet connected",
                SendOutcome::ConnectionLost,
                None,
                SEC,
                1,
                false,
                retry(0),
            ),
            (
                "RETRY.2 lost same at 9 min",
                SendOutcome::ConnectionLost,
                Some(A),
                nine_min,
                3,
                true,
                retry(0),
            ),
            (
                "RETRY.2 lost changed",
                SendOutcome::ConnectionLost,
                Some(B),
                SEC,
                1,
                false,
                Unknown(R::IncarnationChanged),
            ),
            (
                "RETRY.2 lost horizon",
                SendOutcome::ConnectionLost,
                Some(A),
                RESEND_HORIZON,
                1,
                false,
                Unknown(R::HorizonElapsed),
            ),
            (
                "RETRY.2 lost horizon unconnected",
                SendOutcome::ConnectionLost,
                None,
                HORIZON,
                1,
                false,
                Unknown(R::HorizonElapsed),
            ),
            (
                "RETRY.3 busy first",
                err(ErrorCode::RESOURCE_EXHAUSTED),
                Some(A),
                SEC,
                1,
                false,
                retry(50),
            ),
            (
                "RETRY.3 busy third",
                err(ErrorCode::RESOURCE_EXHAUSTED),
                Some(A),
                SEC,
                3,
                false,
                retry(200),
            ),
            (
                "RETRY.3 busy capped",
                err(ErrorCode::RESOURCE_EXHAUSTED),
                Some(A),
                20 * SEC,
                40,
                false,
                retry(1000),
            ),
            (
                "RETRY.3 busy at horizon",
                err(ErrorCode::RESOURCE_EXHAUSTED),
                Some(A),
                RESEND_HORIZON,
                300,
                false,
                RetryDecision::Refused {
                    code: ErrorCode::RESOURCE_EXHAUSTED,
                    message: "still refused as busy after 570 s: m".into(),
                },
            ),
            (
                "RETRY.3 busy at horizon in doubt",
                err(ErrorCode::RESOURCE_EXHAUSTED),
                Some(A),
                RESEND_HORIZON,
                300,
                true,
                Unknown(R::HorizonElapsed),
            ),
            (
                "RETRY.4 delivery unknown",
                err(ErrorCode::INPUT_DELIVERY_UNKNOWN),
                Some(A),
                SEC,
                1,
                false,
                Unknown(R::DeliveryUnknown),
            ),
            (
                "RETRY.5 not written",
                err(ErrorCode::INPUT_NOT_WRITTEN),
                Some(A),
                SEC,
                1,
                false,
                retry(50),
            ),
            (
                "RETRY.5 not written again",
                err(ErrorCode::INPUT_NOT_WRITTEN),
                Some(A),
                SEC,
                NOT_WRITTEN_RETRIES - 1,
                false,
                retry(400),
            ),
            (
                "RETRY.5 not written exhausted",
                err(ErrorCode::INPUT_NOT_WRITTEN),
                Some(A),
                SEC,
                NOT_WRITTEN_RETRIES,
                false,
                RetryDecision::Refused {
                    code: ErrorCode::INPUT_NOT_WRITTEN,
                    message: "not written after 5 attempts: m".into(),
                },
            ),
            (
                "RETRY.5 not written exhausted in doubt",
                err(ErrorCode::INPUT_NOT_WRITTEN),
                Some(A),
                SEC,
                NOT_WRITTEN_RETRIES,
                true,
                Unknown(R::RetriesExhausted),
            ),
            (
                "RETRY.5 not written at horizon in doubt",
                err(ErrorCode::INPUT_NOT_WRITTEN),
                Some(A),
                RESEND_HORIZON,
                1,
                true,
                Unknown(R::HorizonElapsed),
            ),
            (
                "RETRY.6 unsafe paste",
                err(ErrorCode::UNSAFE_PASTE),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::UNSAFE_PASTE),
            ),
            (
                "RETRY.6 canonical",
                err(ErrorCode::CANONICAL_LIMIT_EXCEEDED),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::CANONICAL_LIMIT_EXCEEDED),
            ),
            (
                "RETRY.6 invalid",
                err(ErrorCode::INVALID_COMMAND),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::INVALID_COMMAND),
            ),
            (
                "RETRY.6 not found",
                err(ErrorCode::TERMINAL_NOT_FOUND),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::TERMINAL_NOT_FOUND),
            ),
            (
                "RETRY.6 lease",
                err(ErrorCode::INPUT_LEASE_HELD),
                Some(A),
                SEC,
                1,
                true,
                refused(ErrorCode::INPUT_LEASE_HELD),
            ),
            (
                "RETRY.6 satellite",
                err(ErrorCode::UNSUPPORTED_SATELLITE_ROUTE),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::UNSUPPORTED_SATELLITE_ROUTE),
            ),
            (
                "RETRY.6 permission",
                err(ErrorCode::PERMISSION_DENIED),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::PERMISSION_DENIED),
            ),
            (
                "RETRY.6 internal",
                err(ErrorCode::INTERNAL_ERROR),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode::INTERNAL_ERROR),
            ),
            (
                "RETRY.6 unknown code",
                err(ErrorCode(0x4242)),
                Some(A),
                SEC,
                1,
                false,
                refused(ErrorCode(0x4242)),
            ),
        ];
        for (name, outcome, current, age, attempts, in_doubt, expected) in rows {
            assert_eq!(
                decide(outcome, A, current, age, attempts, in_doubt),
                expected,
                "{name}"
            );
        }
    }

    // [CLIENT.RETRY.3] The backoff outlasts the server's 5 s same-terminal bound without
    // giving up, and never waits more than a second.
    #[test]
    fn client_retry_3_backoff_tolerates_a_five_second_interval() {
        let mut age = Duration::ZERO;
        let mut attempts = 1;
        while age < Duration::from_secs(6) {
            match decide(
                err(ErrorCode::RESOURCE_EXHAUSTED),
                A,
                Some(A),
                age,
                attempts,
                false,
            ) {
                RetryDecision::Retry { after } => {
                    assert!(after <= BACKOFF_CAP);
                    age += after;
                    attempts += 1;
                }
                other => panic!("gave up at {age:?}: {other:?}"),
            }
        }
        assert!(attempts < 20, "{attempts} attempts for 6 s is too chatty");
        assert_eq!(backoff(0), BACKOFF_BASE);
        assert_eq!(backoff(u32::MAX), BACKOFF_CAP);
    }

    fn outcome_strategy() -> impl Strategy<Value = SendOutcome> {
        prop_oneof![
            Just(SendOutcome::ConnectionLost),
            Just(SendOutcome::Result(CommandResult::Ok)),
            prop::sample::select(ErrorCode::KNOWN.to_vec()).prop_map(err),
            any::<u16>().prop_map(|c| err(ErrorCode(c))),
        ]
    }

    proptest! {
        // [CLIENT.RETRY.7] "Unknown" is reported only when the write was actually in doubt:
        // the server said 205, or a send went unanswered (now or earlier) and a safe resend
        // is no longer possible (incarnation changed, horizon elapsed, retries exhausted).
        #[test]
        fn client_retry_7_unknown_only_when_in_doubt(
            outcome in outcome_strategy(),
            same in any::<bool>(),
            connected in any::<bool>(),
            age_ms in 0u64..700_000,
            attempts in 1u32..400,
            in_doubt in any::<bool>(),
        ) {
            let current: Option<&[u8]> = connected.then_some(if same { A } else { B });
            let age = Duration::from_millis(age_ms);
            let lost = outcome == SendOutcome::ConnectionLost;
            let is_205 = outcome == err(ErrorCode::INPUT_DELIVERY_UNKNOWN);
            let decision = decide(outcome.clone(), A, current, age, attempts, in_doubt);
            if let RetryDecision::ReportUnknown(reason) = decision {
                prop_assert!(is_205 || lost || in_doubt, "{outcome:?} -> unknown");
                match reason {
                    UnknownReason::DeliveryUnknown => prop_assert!(is_205),
                    UnknownReason::IncarnationChanged => prop_assert!(lost && connected && !same),
                    UnknownReason::HorizonElapsed => prop_assert!(age + BACKOFF_CAP >= RESEND_HORIZON),
                    UnknownReason::RetriesExhausted => prop_assert!(in_doubt && attempts >= NOT_WRITTEN_RETRIES),
                    UnknownReason::Dropped => prop_assert!(false, "the policy never drops"),
                }
            }
            // A lost send to the same incarnation inside the horizon is always resent.
            if lost && (same || !connected) && age < RESEND_HORIZON {
                prop_assert_eq!(decide(SendOutcome::ConnectionLost, A, current, age, attempts, in_doubt), retry(0));
            }
            // A retry never waits past the cap, and a resend never leaves the horizon.
            if let RetryDecision::Retry { after } = decide(outcome, A, current, age, attempts, in_doubt) {
                prop_assert!(after <= BACKOFF_CAP);
                prop_assert!(age + after < RESEND_HORIZON);
            }
        }
    }
}
