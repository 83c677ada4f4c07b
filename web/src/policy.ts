// The outbox's decisions, as pure functions (spec/client.md): whether an operation may be
// sent on this connection, what a result means, and how a paste is made safe and split.

import type { Op, State } from "./outbox";
import { CODE, CommandResult, FEATURE_ACKNOWLEDGED_INPUT } from "./wire";

/** [CLIENT.BIND.4] An operation never sent is not sent after 9 minutes 30 seconds. */
export const SEND_WINDOW_MS = 570_000;
/**
 * [CLIENT.RETRY.8] A sent operation is resent only well inside the server's 10-minute dedupe
 * horizon, measured from the first send (the server's admission is later still).
 */
export const RESEND_WINDOW_MS = 570_000;
/** [CLIENT.RETRY.4] RESOURCE_EXHAUSTED is retried for at least this long. */
export const BUSY_RETRY_MS = 10_000;
/** [CLIENT.PASTE.3] The largest paste taken. */
export const PASTE_CEILING = 1024 * 1024;
/**
 * [CLIENT.PASTE.1] One part's data: the 65,536-byte APPLY_INPUT value less its 30 bytes of
 * header, and the 65,536-byte encoded output less the 12 bytes of paste brackets.
 */
export const PASTE_PART = 65_000;

export interface Resolution {
  state: State;
  detail: string;
}

/** What to do with `op` before sending it on a connection to `serverId`: null sends it. */
export function decideBeforeSend(op: Op, serverId: string, features: number, now: number): Resolution | null {
  if (op.state === "queued") {
    // [CLIENT.FEATURE.1]
    if (!(features & FEATURE_ACKNOWLEDGED_INPUT)) {
      return { state: "refused", detail: "the server does not acknowledge input" };
    }
    // [CLIENT.BIND.2] [CLIENT.BIND.3]
    if (op.server !== serverId) {
      return { state: "notsent", detail: "addressed to a server incarnation that is gone" };
    }
    // [CLIENT.BIND.4]
    if (now - op.addedAt >= SEND_WINDOW_MS || op.addedAt > now) {
      return { state: "notsent", detail: "waited too long to be sent" };
    }
    return null;
  }
  // Sent before, result unknown: resend only to the same incarnation inside the horizon.
  // [CLIENT.RETRY.7] [CLIENT.RETRY.8]
  if (op.server !== serverId) {
    return { state: "unknown", detail: "sent to a server incarnation that is gone" };
  }
  const sentAt = op.sentAt ?? op.addedAt;
  if (now - sentAt >= RESEND_WINDOW_MS || sentAt > now) {
    return { state: "unknown", detail: "sent too long ago to resend safely" };
  }
  return null;
}

export type Verdict =
  | { kind: "resolve"; state: State; detail: string | null }
  | { kind: "resend"; afterMs: number; busySince: number | null };

/** What an APPLY_INPUT result means for its operation. */
export function verdictOf(r: CommandResult, busySince: number | null, now: number): Verdict {
  // [CLIENT.RETRY.1]
  if (r.ok) return { kind: "resolve", state: "applied", detail: null };
  switch (r.code) {
    // [CLIENT.RETRY.2]
    case CODE.INPUT_DELIVERY_UNKNOWN:
      return { kind: "resolve", state: "unknown", detail: r.message };
    // [CLIENT.RETRY.3]
    case CODE.INPUT_NOT_WRITTEN:
      return { kind: "resend", afterMs: 100, busySince: null };
    // [CLIENT.RETRY.4]
    case CODE.RESOURCE_EXHAUSTED: {
      const since = busySince ?? now;
      if (now - since >= BUSY_RETRY_MS) return { kind: "resolve", state: "refused", detail: r.message };
      return { kind: "resend", afterMs: Math.min(1000, 50 + (now - since) / 4), busySince: since };
    }
    // [CLIENT.RETRY.5]
    case CODE.INVALID_COMMAND:
    case CODE.UNSAFE_PASTE:
    case CODE.INPUT_LEASE_HELD:
    case CODE.CANONICAL_LIMIT_EXCEEDED:
    case CODE.TERMINAL_NOT_FOUND:
    case CODE.UNSUPPORTED_SATELLITE_ROUTE:
    case CODE.PERMISSION_DENIED:
      return { kind: "resolve", state: "refused", detail: r.message };
    // [CLIENT.RETRY.6] INTERNAL_ERROR and codes this client does not know.
    default:
      return { kind: "resolve", state: "unknown", detail: `error ${r.code}: ${r.message}` };
  }
}

/** The bytes [INPUT.ENCODE.PASTE.3] blanks: signal and line-editing controls, ESC, DEL. */
const BLANKED = new Set([0x00, 0x03, 0x04, 0x05, 0x08, 0x0f, 0x11, 0x12, 0x13, 0x15, 0x16, 0x17, 0x1a, 0x1b, 0x1c, 0x7f]);

/**
 * [CLIENT.PASTE.4] Pasted text with every blanked control made a space. Text from the
 * clipboard is a string, so its UTF-8 never holds a lone 0x9b.
 */
export function sanitizePaste(text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text);
  for (let i = 0; i < bytes.length; i++) if (BLANKED.has(bytes[i])) bytes[i] = 0x20;
  return bytes;
}

/** [CLIENT.PASTE.1] [CLIENT.PASTE.2] In-limit parts cut on character boundaries; null over the ceiling. */
export function splitPaste(bytes: Uint8Array, part = PASTE_PART): Uint8Array[] | null {
  // [CLIENT.PASTE.3]
  if (bytes.length > PASTE_CEILING) return null;
  const parts: Uint8Array[] = [];
  let start = 0;
  while (start < bytes.length) {
    let end = Math.min(start + part, bytes.length);
    while (end < bytes.length && end > start && (bytes[end] & 0xc0) === 0x80) end--;
    parts.push(bytes.slice(start, end));
    start = end;
  }
  return parts;
}
