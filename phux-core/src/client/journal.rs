//! The outbox journal: the append-only records a driver persists so pending operations
//! survive a client restart.
//!
//! # Encoding (version 1)
//!
//! Each record is `len u32 BE ‖ body ‖ check[4]`, where `body = version u8 ‖ kind u8 ‖
//! payload`, `len` counts the body only, and `check` is the first four bytes of SHA-256 of the
//! body (so a torn or garbled tail is told apart from a record). Payloads:
//!
//! | kind | record | payload |
//! |---|---|---|
//! | 6 | Enqueued | `enqueued_at u64 ‖ addressed_to[32] ‖ submission[16] ‖ part u32 ‖ parts u32 ‖ COMMAND frame` (request id 0, APPLY_INPUT: op, terminal, events) |
//! | 5 | Enqueued (before submissions were recorded; read only) | `enqueued_at u64 ‖ addressed_to[32] ‖ COMMAND frame` |
//! | 1 | Enqueued (before incarnations were recorded; read only) | `enqueued_at u64 ‖ COMMAND frame` |
//! | 2 | Sent | `op[16] ‖ at u64 ‖ incarnation[32]` |
//! | 3 | Answered | `op[16]` |
//! | 7 | Ended | `submission[16] ‖ part u32` |
//! | 4 | Resolved | `op[16] ‖ 00` delivered · `op ‖ 01 ‖ reason u8` unknown · `op ‖ 02 ‖ code u16 ‖ UTF-8 message` refused · `op ‖ 03 ‖ reason u8` not sent · `op ‖ 03 ‖ 03 ‖ part u32` not sent after an earlier part failed |
//!
//! A kind-1 record names no incarnation: it reads as addressed to
//! [`Incarnation::UNRECORDED`], which no server has, so such an operation is never sent.
//! Kind-1 and kind-5 records name no submission ([`JournalRecord::Enqueued`]'s `part` is
//! `None`); the outbox infers it when it replays them (CLIENT.SUBMIT.4). A reader older than
//! kind 6 takes such a record for damage, reports it with its offset and moves it aside
//! (CLIENT.JOURNAL.6, CLIENT.JOURNAL.7): it never sends a part it cannot place.
//!
//! The input events are stored as the phux wire encoding of the APPLY_INPUT command, so there
//! is one encoding of input atoms. Times are the engine's [`Instant`]s in microseconds.

use std::fmt;

use phux_proto::frame::CommandFrame;
use phux_proto::{Command, DecodeError, ErrorCode, Frame, OperationId};
use sha2::{Digest, Sha256};

use super::retry::{NotSentReason, Resolution, UnknownReason};
use crate::time::Instant;
use phux_proto::command::ApplyInput;

/// The journal format version written into every record.
pub const JOURNAL_VERSION: u8 = 1;

/// The largest record body: an Enqueued record holds one APPLY_INPUT frame, whose command
/// value is at most 64 KiB; 128 KiB leaves room for the envelope and bounds what a corrupt
/// length can make a reader wait for.
pub const MAX_RECORD_LEN: usize = 128 * 1024;

const LEN_LEN: usize = 4;
const CHECK_LEN: usize = 4;

const KIND_ENQUEUED: u8 = 1;
const KIND_SENT: u8 = 2;
const KIND_ANSWERED: u8 = 3;
const KIND_RESOLVED: u8 = 4;
const KIND_ADDRESSED: u8 = 5;
const KIND_SUBMITTED: u8 = 6;
const KIND_ENDED: u8 = 7;

/// A server incarnation: SHA-256 of a HELLO_OK `server_id` (which is opaque and unbounded on
/// the wire), so records stay small and comparisons stay bytewise.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Incarnation([u8; 32]);

impl Incarnation {
    /// The incarnation of an operation recorded before incarnations were (all zero bytes: no
    /// SHA-256 output of a real `server_id` is expected to be).
    pub const UNRECORDED: Self = Self([0; 32]);

    /// The incarnation a HELLO_OK `server_id` names.
    pub fn of(server_id: &[u8]) -> Self {
        Self(Sha256::digest(server_id).into())
    }

    /// The digest bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Incarnation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Incarnation(")?;
        for b in &self.0[..6] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// Where an operation stands in the submission (one `send` or `paste`) it was split from: the
/// parts of a submission are sent in order, and none after a part that was not delivered.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Part {
    /// The submission, named by the operation id of its first part.
    pub submission: OperationId,
    /// This part's place, from 1.
    pub index: u32,
    /// How many parts the submission has.
    pub of: u32,
}

impl Part {
    /// The only part of a submission of one operation.
    pub fn alone(op: OperationId) -> Self {
        Self {
            submission: op,
            index: 1,
            of: 1,
        }
    }
}

/// One journal record.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum JournalRecord {
    /// An operation was accepted into the outbox (before anything was sent).
    Enqueued {
        /// The operation: id, terminal and events.
        input: ApplyInput,
        /// When it was submitted.
        enqueued_at: Instant,
        /// The server incarnation it is addressed to: its terminal id means something only
        /// there (CLIENT.BIND.1).
        addressed_to: Incarnation,
        /// Its place in its submission; `None` in a record written before submissions were
        /// recorded (kinds 1 and 5).
        part: Option<Part>,
    },
    /// A send of the operation went out on a connection to `incarnation`.
    Sent {
        /// The operation.
        op: OperationId,
        /// The server incarnation it went to.
        incarnation: Incarnation,
        /// When.
        at: Instant,
    },
    /// The last send was answered without resolving the operation (202 / 207, to be
    /// retried): that send is no longer in flight.
    Answered {
        /// The operation.
        op: OperationId,
    },
    /// The operation is finished; it is dropped from the outbox.
    Resolved {
        /// The operation.
        op: OperationId,
        /// How it ended.
        resolution: Resolution,
    },
    /// Part `part` of `submission` was not delivered, so none of its later parts is ever
    /// sent. Written by compaction for later parts still pending once the failed part's own
    /// `Resolved` record (which says the same) is compacted away.
    Ended {
        /// The submission (the operation id of its first part).
        submission: OperationId,
        /// The part that was not delivered.
        part: u32,
    },
}

/// Why one record's bytes are not a record.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Fewer bytes than the header or the declared length needs.
    #[error("record truncated: {needed} bytes needed, {available} present")]
    Truncated {
        /// Bytes the record needs.
        needed: usize,
        /// Bytes present.
        available: usize,
    },
    /// A body length of 0 or over [`MAX_RECORD_LEN`].
    #[error("record length {len} outside 2..={MAX_RECORD_LEN}")]
    Length {
        /// The declared length.
        len: usize,
    },
    /// The check bytes do not match the body.
    #[error("record checksum mismatch")]
    Checksum,
    /// A version this build does not read.
    #[error("unsupported journal version {found}")]
    Version {
        /// The version byte.
        found: u8,
    },
    /// An unknown record kind.
    #[error("unknown record kind {found}")]
    Kind {
        /// The kind byte.
        found: u8,
    },
    /// A payload of the wrong size for its kind.
    #[error("{kind} payload has the wrong length")]
    PayloadLength {
        /// Which record.
        kind: &'static str,
    },
    /// The stored command frame does not decode.
    #[error("stored command frame: {0}")]
    Frame(DecodeError),
    /// The stored frame is not an APPLY_INPUT COMMAND.
    #[error("stored frame is not an APPLY_INPUT command")]
    NotApplyInput,
    /// An all-zero operation id.
    #[error("operation id is zero")]
    ZeroOperationId,
    /// A part number of 0, or past the submission's count.
    #[error("part {index} of {of} is not a part")]
    Part {
        /// The part's place.
        index: u32,
        /// The submission's count.
        of: u32,
    },
    /// An unknown resolution tag or unknown-reason value.
    #[error("unknown resolution value {value}")]
    Resolution {
        /// The byte found.
        value: u8,
    },
    /// A refusal message that is not UTF-8.
    #[error("refusal message is not UTF-8")]
    Utf8,
    /// Bytes after the record.
    #[error("{extra} bytes after the record")]
    TrailingBytes {
        /// How many.
        extra: usize,
    },
}

/// Why a journal cannot be read or replayed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// A record before the last one is damaged: the file is corrupt, not merely torn.
    #[error("journal record at byte {offset}: {error}")]
    Corrupt {
        /// Where the record starts.
        offset: usize,
        /// What is wrong.
        error: RecordError,
    },
    /// A record names an operation that is not pending at that point.
    #[error("record {index} names operation {op}, which is not pending")]
    UnknownOperation {
        /// The record's position.
        index: usize,
        /// The operation.
        op: OperationId,
    },
    /// An operation is enqueued twice.
    #[error("record {index} enqueues operation {op} a second time")]
    DuplicateOperation {
        /// The record's position.
        index: usize,
        /// The operation.
        op: OperationId,
    },
}

/// A torn tail: the last record was cut short (or garbled) by a crash mid-append. It is
/// dropped; the driver should truncate its file to `offset`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TornTail {
    /// Where the torn record starts (the length of the good prefix).
    pub offset: usize,
    /// How many bytes were dropped.
    pub len: usize,
    /// What was wrong with them.
    pub error: RecordError,
}

/// A damaged stretch of a journal that is not a torn tail: records may follow it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Damage {
    /// Where the damaged record starts.
    pub offset: usize,
    /// How many bytes up to the next whole record (or the end of the file).
    pub len: usize,
    /// What is wrong with the record at `offset`.
    pub error: RecordError,
}

/// A decoded journal file.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct DecodedJournal {
    /// The whole records, in file order (those after a damaged stretch included).
    pub records: Vec<JournalRecord>,
    /// The dropped tail, if the file ended inside a record.
    pub torn_tail: Option<TornTail>,
    /// Damaged stretches, in file order.
    pub damaged: Vec<Damage>,
}

fn check(body: &[u8]) -> [u8; CHECK_LEN] {
    let digest = Sha256::digest(body);
    let mut out = [0; CHECK_LEN];
    out.copy_from_slice(&digest[..CHECK_LEN]);
    out
}

fn take_op(bytes: &[u8]) -> Result<OperationId, RecordError> {
    let raw: [u8; 16] = bytes
        .get(..16)
        .and_then(|b| b.try_into().ok())
        .ok_or(RecordError::PayloadLength { kind: "record" })?;
    OperationId::new(raw).ok_or(RecordError::ZeroOperationId)
}

fn take_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(..8)?.try_into().ok()?))
}

impl JournalRecord {
    /// The operation this record is about.
    pub fn op(&self) -> OperationId {
        match self {
            Self::Enqueued { input, .. } => input.operation_id,
            Self::Sent { op, .. } | Self::Answered { op } | Self::Resolved { op, .. } => *op,
            Self::Ended { submission, .. } => *submission,
        }
    }

    /// Appends this record's encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; LEN_LEN]);
        out.push(JOURNAL_VERSION);
        match self {
            Self::Enqueued {
                input,
                enqueued_at,
                addressed_to,
                part,
            } => {
                out.push(if part.is_some() {
                    KIND_SUBMITTED
                } else {
                    KIND_ADDRESSED
                });
                out.extend_from_slice(&enqueued_at.as_micros().to_be_bytes());
                out.extend_from_slice(addressed_to.as_bytes());
                if let Some(part) = part {
                    out.extend_from_slice(&part.submission.bytes());
                    out.extend_from_slice(&part.index.to_be_bytes());
                    out.extend_from_slice(&part.of.to_be_bytes());
                }
                Frame::Command(CommandFrame {
                    request_id: 0,
                    command: Command::ApplyInput(input.clone()),
                })
                .encode(out);
            }
            Self::Sent {
                op,
                incarnation,
                at,
            } => {
                out.push(KIND_SENT);
                out.extend_from_slice(&op.bytes());
                out.extend_from_slice(&at.as_micros().to_be_bytes());
                out.extend_from_slice(incarnation.as_bytes());
            }
            Self::Answered { op } => {
                out.push(KIND_ANSWERED);
                out.extend_from_slice(&op.bytes());
            }
            Self::Ended { submission, part } => {
                out.push(KIND_ENDED);
                out.extend_from_slice(&submission.bytes());
                out.extend_from_slice(&part.to_be_bytes());
            }
            Self::Resolved { op, resolution } => {
                out.push(KIND_RESOLVED);
                out.extend_from_slice(&op.bytes());
                match resolution {
                    Resolution::Delivered => out.push(0),
                    Resolution::Unknown(reason) => {
                        out.push(1);
                        out.push(match reason {
                            UnknownReason::DeliveryUnknown => 0,
                            UnknownReason::IncarnationChanged => 1,
                            UnknownReason::HorizonElapsed => 2,
                            UnknownReason::RetriesExhausted => 3,
                            UnknownReason::Dropped => 4,
                        });
                    }
                    Resolution::NotSent(reason) => {
                        out.push(3);
                        match reason {
                            NotSentReason::ServerGone => out.push(0),
                            NotSentReason::Expired => out.push(1),
                            NotSentReason::Dropped => out.push(2),
                            NotSentReason::EarlierPartFailed { part } => {
                                out.push(3);
                                out.extend_from_slice(&part.to_be_bytes());
                            }
                        }
                    }
                    Resolution::Refused { code, message } => {
                        out.push(2);
                        out.extend_from_slice(&code.0.to_be_bytes());
                        out.extend_from_slice(message.as_bytes());
                    }
                }
            }
        }
        let body_len = out.len() - start - LEN_LEN;
        // Every record we build is far below the bound (one APPLY_INPUT ≤ 64 KiB, messages
        // from one frame): the u32 cannot truncate.
        out[start..start + LEN_LEN].copy_from_slice(&(body_len as u32).to_be_bytes());
        let sum = check(&out[start + LEN_LEN..]);
        out.extend_from_slice(&sum);
    }

    /// This record's encoding in a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }

    /// Decodes exactly one record (strict: trailing bytes are an error).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, RecordError> {
        let (record, used) = Self::decode_prefix(bytes)?;
        if used != bytes.len() {
            return Err(RecordError::TrailingBytes {
                extra: bytes.len() - used,
            });
        }
        Ok(record)
    }

    /// Decodes the record at the start of `bytes`; returns it and its encoded length.
    pub fn decode_prefix(bytes: &[u8]) -> Result<(Self, usize), RecordError> {
        let Some(len_bytes) = bytes.first_chunk::<LEN_LEN>() else {
            return Err(RecordError::Truncated {
                needed: LEN_LEN,
                available: bytes.len(),
            });
        };
        let len = u32::from_be_bytes(*len_bytes) as usize;
        if !(2..=MAX_RECORD_LEN).contains(&len) {
            return Err(RecordError::Length { len });
        }
        let total = LEN_LEN + len + CHECK_LEN;
        if bytes.len() < total {
            return Err(RecordError::Truncated {
                needed: total,
                available: bytes.len(),
            });
        }
        let body = &bytes[LEN_LEN..LEN_LEN + len];
        if check(body) != bytes[LEN_LEN + len..total] {
            return Err(RecordError::Checksum);
        }
        Ok((Self::decode_body(body)?, total))
    }

    fn decode_body(body: &[u8]) -> Result<Self, RecordError> {
        let [version, kind, payload @ ..] = body else {
            return Err(RecordError::Length { len: body.len() });
        };
        if *version != JOURNAL_VERSION {
            return Err(RecordError::Version { found: *version });
        }
        match *kind {
            KIND_ENQUEUED | KIND_ADDRESSED | KIND_SUBMITTED => {
                let short = RecordError::PayloadLength { kind: "Enqueued" };
                let at = take_u64(payload).ok_or(short.clone())?;
                let (addressed_to, rest) = if *kind == KIND_ENQUEUED {
                    (Incarnation::UNRECORDED, &payload[8..])
                } else {
                    let inc: [u8; 32] = payload
                        .get(8..40)
                        .and_then(|b| b.try_into().ok())
                        .ok_or(short.clone())?;
                    (Incarnation(inc), &payload[40..])
                };
                let (part, frame) = if *kind == KIND_SUBMITTED {
                    let submission = take_op(rest)?;
                    let word = |at: usize| -> Result<u32, RecordError> {
                        rest.get(at..at + 4)
                            .and_then(|b| b.try_into().ok())
                            .map(u32::from_be_bytes)
                            .ok_or(short.clone())
                    };
                    let (index, of) = (word(16)?, word(20)?);
                    if index == 0 || index > of {
                        return Err(RecordError::Part { index, of });
                    }
                    let part = Part {
                        submission,
                        index,
                        of,
                    };
                    (Some(part), &rest[24..])
                } else {
                    (None, rest)
                };
                let frame = Frame::decode(frame).map_err(RecordError::Frame)?;
                let Frame::Command(CommandFrame {
                    command: Command::ApplyInput(input),
                    ..
                }) = frame
                else {
                    return Err(RecordError::NotApplyInput);
                };
                Ok(Self::Enqueued {
                    input,
                    enqueued_at: Instant::from_micros(at),
                    addressed_to,
                    part,
                })
            }
            KIND_SENT => {
                if payload.len() != 16 + 8 + 32 {
                    return Err(RecordError::PayloadLength { kind: "Sent" });
                }
                let op = take_op(payload)?;
                let at =
                    take_u64(&payload[16..]).ok_or(RecordError::PayloadLength { kind: "Sent" })?;
                let mut inc = [0; 32];
                inc.copy_from_slice(&payload[24..]);
                Ok(Self::Sent {
                    op,
                    incarnation: Incarnation(inc),
                    at: Instant::from_micros(at),
                })
            }
            KIND_ANSWERED => {
                if payload.len() != 16 {
                    return Err(RecordError::PayloadLength { kind: "Answered" });
                }
                Ok(Self::Answered {
                    op: take_op(payload)?,
                })
            }
            KIND_ENDED => {
                let [submission @ .., a, b, c, d] = payload else {
                    return Err(RecordError::PayloadLength { kind: "Ended" });
                };
                if submission.len() != 16 {
                    return Err(RecordError::PayloadLength { kind: "Ended" });
                }
                Ok(Self::Ended {
                    submission: take_op(submission)?,
                    part: u32::from_be_bytes([*a, *b, *c, *d]),
                })
            }
            KIND_RESOLVED => {
                let op = take_op(payload)?;
                let resolution = match &payload[16..] {
                    [0] => Resolution::Delivered,
                    [1, reason] => Resolution::Unknown(match reason {
                        0 => UnknownReason::DeliveryUnknown,
                        1 => UnknownReason::IncarnationChanged,
                        2 => UnknownReason::HorizonElapsed,
                        3 => UnknownReason::RetriesExhausted,
                        4 => UnknownReason::Dropped,
                        &value => return Err(RecordError::Resolution { value }),
                    }),
                    [3, 3, a, b, c, d] => Resolution::NotSent(NotSentReason::EarlierPartFailed {
                        part: u32::from_be_bytes([*a, *b, *c, *d]),
                    }),
                    [3, reason] => Resolution::NotSent(match reason {
                        0 => NotSentReason::ServerGone,
                        1 => NotSentReason::Expired,
                        2 => NotSentReason::Dropped,
                        &value => return Err(RecordError::Resolution { value }),
                    }),
                    [2, hi, lo, message @ ..] => Resolution::Refused {
                        code: ErrorCode(u16::from_be_bytes([*hi, *lo])),
                        message: std::str::from_utf8(message)
                            .map_err(|_| RecordError::Utf8)?
                            .to_owned(),
                    },
                    [] | [0..=3, ..] => {
                        return Err(RecordError::PayloadLength { kind: "Resolved" });
                    }
                    [value, ..] => return Err(RecordError::Resolution { value: *value }),
                };
                Ok(Self::Resolved { op, resolution })
            }
            found => Err(RecordError::Kind { found }),
        }
    }
}

/// Whether a whole, checked record may start at `bytes[0]`: a cheap filter (length, version,
/// kind) before the checksum, so resynchronising over a damaged stretch stays linear.
fn plausible_record(bytes: &[u8]) -> bool {
    let Some(len) = bytes.first_chunk::<LEN_LEN>() else {
        return false;
    };
    let len = u32::from_be_bytes(*len) as usize;
    (2..=MAX_RECORD_LEN).contains(&len)
        && bytes.len() >= LEN_LEN + len + CHECK_LEN
        && bytes.get(LEN_LEN) == Some(&JOURNAL_VERSION)
        && bytes
            .get(LEN_LEN + 1)
            .is_some_and(|k| (KIND_ENQUEUED..=KIND_ENDED).contains(k))
        && JournalRecord::decode_prefix(bytes).is_ok()
}

/// Decodes a whole journal file. Never fails: what does not decode is reported.
///
/// - A damaged record with nothing whole after it, where a crash mid-append leaves one (the
///   file ends inside it, its check fails exactly at the end, or the rest is zeros), is a
///   torn tail: dropped and reported in [`DecodedJournal::torn_tail`].
/// - Any other damage is reported in [`DecodedJournal::damaged`], and decoding resumes at the
///   next offset where a whole record with a valid check starts, so every intact record after
///   it is kept.
pub fn decode_journal(bytes: &[u8]) -> DecodedJournal {
    let mut out = DecodedJournal::default();
    let mut offset = 0;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        match JournalRecord::decode_prefix(rest) {
            Ok((record, used)) => {
                out.records.push(record);
                offset += used;
            }
            Err(error) => {
                // [CLIENT.JOURNAL.7] Resynchronise on the next whole record.
                let next = (offset + 1..bytes.len()).find(|&p| plausible_record(&bytes[p..]));
                if let Some(next) = next {
                    // [CLIENT.JOURNAL.6] Records follow: this is damage, never a torn tail.
                    out.damaged.push(Damage {
                        offset,
                        len: next - offset,
                        error,
                    });
                    offset = next;
                    continue;
                }
                // [CLIENT.JOURNAL.5] Torn means the damaged record runs to the end of the file.
                let declared = rest
                    .first_chunk::<LEN_LEN>()
                    .map(|l| LEN_LEN + u32::from_be_bytes(*l) as usize + CHECK_LEN);
                let torn = match &error {
                    RecordError::Truncated { .. } => true,
                    RecordError::Checksum => declared == Some(rest.len()),
                    // A crash can leave a zero-filled tail where the record was to go.
                    RecordError::Length { .. } => rest.iter().all(|&b| b == 0),
                    _ => false,
                };
                if torn {
                    out.torn_tail = Some(TornTail {
                        offset,
                        len: rest.len(),
                        error,
                    });
                } else {
                    out.damaged.push(Damage {
                        offset,
                        len: rest.len(),
                        error,
                    });
                }
                break;
            }
        }
    }
    out
}
