// Browser KeyboardEvents as phux KeyEvents, by the rules phuxctl follows (spec/client.md
// [CLIENT.KEY.1], phux-ctl/src/keys.rs): the W3C `code` as the physical key, the modifiers,
// the text the key typed under the layout before Ctrl or Alt did anything to it (a browser's
// `KeyboardEvent.key` on Linux and Windows is exactly that: `c` for Ctrl+C, `:` for
// Alt+Shift+;), Shift in consumed_mods when Shift made that text, and the key's unshifted
// character as unshifted_codepoint. The server's encoder derives every byte from these.

import { KeyEvent, MOD, PHYSICAL_KEYS } from "./wire";

/** The parts of a KeyboardEvent the mapping reads (a plain object in unit tests). */
export interface BrowserKey {
  type?: string;
  code: string;
  key: string;
  ctrlKey: boolean;
  altKey: boolean;
  shiftKey: boolean;
  metaKey: boolean;
  repeat?: boolean;
  isComposing?: boolean;
  capsLock?: boolean;
  numLock?: boolean;
}

/** The US layout's writing keys: code -> [unshifted, shifted]. */
const US: Record<string, [string, string]> = {
  Backquote: ["`", "~"],
  Backslash: ["\\", "|"],
  BracketLeft: ["[", "{"],
  BracketRight: ["]", "}"],
  Comma: [",", "<"],
  Equal: ["=", "+"],
  Minus: ["-", "_"],
  Period: [".", ">"],
  Quote: ["'", '"'],
  Semicolon: [";", ":"],
  Slash: ["/", "?"],
  Space: [" ", " "],
  Digit0: ["0", ")"],
  Digit1: ["1", "!"],
  Digit2: ["2", "@"],
  Digit3: ["3", "#"],
  Digit4: ["4", "$"],
  Digit5: ["5", "%"],
  Digit6: ["6", "^"],
  Digit7: ["7", "&"],
  Digit8: ["8", "*"],
  Digit9: ["9", "("],
};
for (let c = 0; c < 26; c++) {
  const lower = String.fromCharCode(0x61 + c);
  US[`Key${lower.toUpperCase()}`] = [lower, lower.toUpperCase()];
}

/** The character a keypad key types with Num Lock on. */
const KEYPAD: Record<string, string> = {
  NumpadDivide: "/",
  NumpadMultiply: "*",
  NumpadSubtract: "-",
  NumpadAdd: "+",
  NumpadDecimal: ".",
  NumpadComma: ",",
  NumpadSeparator: ",",
  NumpadEqual: "=",
  NumpadParenLeft: "(",
  NumpadParenRight: ")",
};
for (let d = 0; d <= 9; d++) KEYPAD[`Numpad${d}`] = String(d);

/** Keys that alone type nothing and that no legacy encoding reports: not sent. */
const MODIFIER_KEYS = new Set([
  "ShiftLeft",
  "ShiftRight",
  "ControlLeft",
  "ControlRight",
  "AltLeft",
  "AltRight",
  "MetaLeft",
  "MetaRight",
  "CapsLock",
  "NumLock",
  "Fn",
  "FnLock",
]);

/** Whether `key` (a KeyboardEvent.key) is text: one character that is not a control. */
function typedText(key: string): string | null {
  const chars = Array.from(key);
  if (chars.length !== 1) return null;
  const cp = chars[0].codePointAt(0)!;
  // [CLIENT.KEY.1] text never holds C0 controls, DEL or the PUA function-key range.
  if (cp < 0x20 || cp === 0x7f || (cp >= 0x80 && cp < 0xa0) || (cp >= 0xf700 && cp <= 0xf8ff)) {
    return null;
  }
  return chars[0];
}

/**
 * The KeyEvent for a keydown, or null when the event is not a key to send: a modifier key
 * alone, an IME composition in progress (its text comes with compositionend), a dead key.
 * `layout` is the keyboard layout's unshifted character per code (navigator.keyboard's
 * layout map) when the browser offers it; the US layout otherwise.
 */
export function keyEventFrom(e: BrowserKey, layout?: ReadonlyMap<string, string>): KeyEvent | null {
  if (e.isComposing || e.key === "Process" || e.key === "Dead") return null;
  if (MODIFIER_KEYS.has(e.code)) return null;
  let key = PHYSICAL_KEYS.indexOf(e.code);
  if (key < 0) key = 0;
  let mods = 0;
  if (e.shiftKey) mods |= MOD.SHIFT;
  if (e.ctrlKey) mods |= MOD.CTRL;
  if (e.altKey) mods |= MOD.ALT;
  if (e.metaKey) mods |= MOD.SUPER;
  if (e.capsLock) mods |= MOD.CAPS_LOCK;
  if (e.numLock) mods |= MOD.NUM_LOCK;
  const text = typedText(e.key);
  let unshifted: string | null = null;
  if (text !== null) {
    const us = US[e.code];
    unshifted = KEYPAD[e.code] ?? layout?.get(e.code) ?? (us && us.includes(text) ? us[0] : null);
    if (unshifted === null || typedText(unshifted) === null) {
      // A key outside the layouts we know: the text is its own base, lower-cased when
      // Shift (or Caps Lock) made it upper case.
      unshifted = e.shiftKey || e.capsLock ? text.toLowerCase() : text;
      if (Array.from(unshifted).length !== 1) unshifted = text;
    }
  }
  // [CLIENT.KEY.1] Shift is consumed when it made the text.
  const consumedMods = e.shiftKey && text !== null && text !== unshifted ? MOD.SHIFT : 0;
  if (text === null && key === 0) return null;
  return {
    action: e.repeat ? 2 : 1,
    key,
    mods,
    consumedMods,
    composing: false,
    text,
    unshiftedCodepoint: unshifted === null ? null : unshifted.codePointAt(0)!,
  };
}

/** The KeyEvents for text an input method composed: one per character, on no identified key. */
export function composedText(data: string): KeyEvent[] {
  return Array.from(data)
    .filter((c) => typedText(c) !== null)
    .map((c) => ({
      action: 1,
      key: 0,
      mods: 0,
      consumedMods: 0,
      composing: false,
      text: c,
      unshiftedCodepoint: c.codePointAt(0)!,
    }));
}

/**
 * Whether a keydown belongs to the browser rather than the program: paste (Ctrl+Shift+V,
 * Shift+Insert) and copy (Ctrl+Shift+C) as in most terminal emulators.
 */
export function browserShortcut(e: BrowserKey): boolean {
  if (e.ctrlKey && e.shiftKey && !e.altKey && (e.code === "KeyV" || e.code === "KeyC")) return true;
  return e.shiftKey && !e.ctrlKey && !e.altKey && e.code === "Insert";
}

/** A short label for the outbox list: what the user typed. */
export function label(k: KeyEvent): string {
  const parts: string[] = [];
  if (k.mods & MOD.CTRL) parts.push("C-");
  if (k.mods & MOD.ALT) parts.push("M-");
  if (k.mods & MOD.SUPER) parts.push("s-");
  const name = k.text ?? PHYSICAL_KEYS[k.key] ?? "?";
  if (k.text === null && k.mods & MOD.SHIFT) parts.push("S-");
  return parts.join("") + (name === " " ? "Space" : name);
}
