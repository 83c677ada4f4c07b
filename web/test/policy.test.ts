// The outbox's decisions (web/src/policy.ts) against spec/client.md's clauses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decideBeforeSend, verdictOf, sanitizePaste, splitPaste, PASTE_PART } from "../src/policy";
import type { Op } from "../src/outbox";

const T0 = 1_700_000_000_000;
function op(state: Op["state"], extra: Partial<Op> = {}): Op {
  return {
    opId: "01".repeat(16), server: "aa", terminal: 1, events: new Uint8Array(), label: "a",
    submission: "s", part: 1, parts: 1, addedAt: T0, sentAt: state === "sent" ? T0 : null,
    state, detail: null, resolvedAt: null, ...extra,
  };
}

test("an operation goes only to the incarnation it is addressed to, inside its window", () => {
  const ack = 0x010;
  assert.equal(decideBeforeSend(op("queued"), "aa", ack, T0 + 1000), null);
  assert.equal(decideBeforeSend(op("sent"), "aa", ack, T0 + 1000), null); // [CLIENT.RETRY.7]
  assert.equal(decideBeforeSend(op("queued"), "bb", ack, T0)?.state, "notsent"); // [CLIENT.BIND.3]
  assert.equal(decideBeforeSend(op("sent"), "bb", ack, T0)?.state, "unknown"); // [CLIENT.RETRY.8]
  assert.equal(decideBeforeSend(op("queued"), "aa", ack, T0 + 570_000)?.state, "notsent"); // [CLIENT.BIND.4]
  assert.equal(decideBeforeSend(op("sent"), "aa", ack, T0 + 600_000)?.state, "unknown");
  assert.equal(decideBeforeSend(op("queued"), "aa", ack, T0 - 1)?.state, "notsent"); // clock went back
  assert.equal(decideBeforeSend(op("queued"), "aa", 0, T0)?.state, "refused"); // [CLIENT.FEATURE.1]
});

test("results resolve, resend with the same id, or back off", () => {
  const err = (code: number) => ({ ok: false as const, code, message: "m" });
  assert.deepEqual(verdictOf({ ok: true, value: null }, null, 0), { kind: "resolve", state: "applied", detail: null });
  assert.equal((verdictOf(err(205), null, 0) as { state: string }).state, "unknown");
  assert.equal(verdictOf(err(207), null, 0).kind, "resend");
  const busy = verdictOf(err(202), null, 5);
  assert.equal(busy.kind, "resend");
  assert.equal((verdictOf(err(202), 5, 10_004) as { kind: string }).kind, "resend");
  assert.equal((verdictOf(err(202), 5, 10_005) as { state: string }).state, "refused");
  for (const code of [200, 201, 203, 204, 206, 104, 106]) {
    assert.equal((verdictOf(err(code), null, 0) as { state: string }).state, "refused", String(code));
  }
  for (const code of [65535, 999]) {
    assert.equal((verdictOf(err(code), null, 0) as { state: string }).state, "unknown", String(code));
  }
});

test("pastes are blanked and split on character boundaries", () => {
  assert.deepEqual(Array.from(sanitizePaste("a\x1b[201~\x03b\tc\n")), Array.from(new TextEncoder().encode("a [201~ b\tc\n")));
  const big = "é".repeat(PASTE_PART); // 2 bytes each
  const parts = splitPaste(new TextEncoder().encode(big))!;
  assert.ok(parts.every((p) => p.length <= PASTE_PART));
  assert.equal(new TextDecoder("utf-8", { fatal: true }).decode(parts[0]).length, PASTE_PART / 2);
  assert.equal(parts.reduce((n, p) => n + p.length, 0), 2 * PASTE_PART);
  assert.equal(splitPaste(new Uint8Array(1024 * 1024 + 1)), null); // [CLIENT.PASTE.3]
  assert.deepEqual(splitPaste(new Uint8Array()), []);
});
