// The browser side of the shared key table (keys.json): each keydown becomes the KeyEvent the
// table names. web/tests/it/keys_fixture.rs checks the other side: that KeyEvent's bytes
// through the server's encoder, and phuxctl's key name giving the same bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { browserShortcut, keyEventFrom } from "../src/keys";
import { PHYSICAL_KEYS } from "../src/wire";

interface Row {
  name?: string;
  code: string;
  key: string;
  mods: string;
  layout?: Record<string, string>;
  event: { key: string; mods: number; consumed: number; text: string | null; unshifted: string | null } | null;
}

const table: { rows: Row[] } = JSON.parse(readFileSync(new URL("../test/keys.json", import.meta.url), "utf8"));

test("every keydown of the shared table becomes its KeyEvent", () => {
  for (const row of table.rows) {
    const e = {
      code: row.code,
      key: row.key,
      ctrlKey: row.mods.includes("C"),
      altKey: row.mods.includes("M"),
      shiftKey: row.mods.includes("S"),
      metaKey: false,
    };
    const what = `${row.name ?? row.code} (${row.mods || "no mods"})`;
    if (row.event === null) {
      assert.ok(browserShortcut(e) || keyEventFrom(e) === null, what);
      continue;
    }
    const layout = row.layout ? new Map(Object.entries(row.layout)) : undefined;
    const got = keyEventFrom(e, layout);
    assert.ok(got, what);
    assert.deepEqual(
      {
        key: PHYSICAL_KEYS[got.key],
        mods: got.mods,
        consumed: got.consumedMods,
        text: got.text,
        unshifted: got.unshiftedCodepoint === null ? null : String.fromCodePoint(got.unshiftedCodepoint),
      },
      row.event,
      what,
    );
    assert.equal(got.action, 1, what);
  }
});

test("a held key repeats, and composition leaves the key to the input method", () => {
  const base = { code: "KeyA", key: "a", ctrlKey: false, altKey: false, shiftKey: false, metaKey: false };
  assert.equal(keyEventFrom({ ...base, repeat: true })?.action, 2);
  assert.equal(keyEventFrom({ ...base, isComposing: true }), null);
  assert.equal(keyEventFrom({ ...base, key: "Dead" }), null);
});

test("the physical key table is phux's, in order", () => {
  assert.equal(PHYSICAL_KEYS.length, 176);
  assert.equal(PHYSICAL_KEYS[20], "KeyA");
  assert.equal(PHYSICAL_KEYS[58], "Enter");
  assert.equal(PHYSICAL_KEYS[120], "Escape");
  assert.equal(PHYSICAL_KEYS[175], "Paste");
});
