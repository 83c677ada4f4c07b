// The phux 0.8 frames the web client speaks, encoded and decoded byte for byte as
// phux-proto does (framing: u32 length + type; TLV fields: varint id, wire type 4, varint
// length, positional value). One WebSocket message carries exactly one frame.

export const FRAME = {
  HELLO: 0x01,
  DETACH: 0x03,
  TERMINAL_RESIZE: 0x23,
  SPAWN_TERMINAL: 0x22,
  COMMAND: 0x31,
  PING: 0x7f,
  HELLO_OK: 0x80,
  DETACHED: 0x82,
  TERMINAL_OUTPUT: 0x90,
  BOOTSTRAP_BEGIN: 0x93,
  BOOTSTRAP_CHUNK: 0x94,
  BOOTSTRAP_READY: 0x95,
  BOOTSTRAP_TOMBSTONE: 0x97,
  TERMINAL_CLOSED: 0xa1,
  TERMINAL_SPAWNED: 0xa2,
  EVENT: 0xb3,
  ERROR: 0xc1,
  COMMAND_RESULT: 0xc2,
  PONG: 0xff,
} as const;

/** Error codes a client acts on (spec/errors.md). */
export const CODE = {
  INVALID_COMMAND: 200,
  PERMISSION_DENIED: 201,
  RESOURCE_EXHAUSTED: 202,
  UNSAFE_PASTE: 203,
  INPUT_LEASE_HELD: 204,
  INPUT_DELIVERY_UNKNOWN: 205,
  CANONICAL_LIMIT_EXCEEDED: 206,
  INPUT_NOT_WRITTEN: 207,
  TERMINAL_NOT_FOUND: 104,
  UNSUPPORTED_SATELLITE_ROUTE: 106,
  INTERNAL_ERROR: 65535,
} as const;

/** HELLO_OK's feature bit for APPLY_INPUT. */
export const FEATURE_ACKNOWLEDGED_INPUT = 0x010;

/** The W3C `code` names of phux's PhysicalKey, by value (phux-proto's table). */
export const PHYSICAL_KEYS: readonly string[] = [
  "Unidentified", "Backquote", "Backslash", "BracketLeft", "BracketRight", "Comma", "Digit0", "Digit1", "Digit2", "Digit3", "Digit4", "Digit5", "Digit6", "Digit7", "Digit8", "Digit9", "Equal", "IntlBackslash", "IntlRo", "IntlYen", "KeyA", "KeyB", "KeyC", "KeyD", "KeyE", "KeyF", "KeyG", "KeyH", "KeyI", "KeyJ", "KeyK", "KeyL", "KeyM", "KeyN", "KeyO", "KeyP", "KeyQ", "KeyR", "KeyS", "KeyT", "KeyU", "KeyV", "KeyW", "KeyX", "KeyY", "KeyZ", "Minus", "Period", "Quote", "Semicolon", "Slash", "AltLeft", "AltRight", "Backspace", "CapsLock", "ContextMenu", "ControlLeft", "ControlRight", "Enter", "MetaLeft", "MetaRight", "ShiftLeft", "ShiftRight", "Space", "Tab", "Convert", "KanaMode", "NonConvert", "Delete", "End", "Help", "Home", "Insert", "PageDown", "PageUp", "ArrowDown", "ArrowLeft", "ArrowRight", "ArrowUp", "NumLock", "Numpad0", "Numpad1", "Numpad2", "Numpad3", "Numpad4", "Numpad5", "Numpad6", "Numpad7", "Numpad8", "Numpad9", "NumpadAdd", "NumpadBackspace", "NumpadClear", "NumpadClearEntry", "NumpadComma", "NumpadDecimal", "NumpadDivide", "NumpadEnter", "NumpadEqual", "NumpadMemoryAdd", "NumpadMemoryClear", "NumpadMemoryRecall", "NumpadMemoryStore", "NumpadMemorySubtract", "NumpadMultiply", "NumpadParenLeft", "NumpadParenRight", "NumpadSubtract", "NumpadSeparator", "NumpadUp", "NumpadDown", "NumpadRight", "NumpadLeft", "NumpadBegin", "NumpadHome", "NumpadEnd", "NumpadInsert", "NumpadDelete", "NumpadPageUp", "NumpadPageDown", "Escape", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12", "F13", "F14", "F15", "F16", "F17", "F18", "F19", "F20", "F21", "F22", "F23", "F24", "F25", "Fn", "FnLock", "PrintScreen", "ScrollLock", "Pause", "BrowserBack", "BrowserFavorites", "BrowserForward", "BrowserHome", "BrowserRefresh", "BrowserSearch", "BrowserStop", "Eject", "LaunchApp1", "LaunchApp2", "LaunchMail", "MediaPlayPause", "MediaSelect", "MediaStop", "MediaTrackNext", "MediaTrackPrevious", "Power", "Sleep", "AudioVolumeDown", "AudioVolumeMute", "AudioVolumeUp", "WakeUp", "Copy", "Cut", "Paste", 
];

export const MOD = {
  SHIFT: 0x0001,
  CTRL: 0x0002,
  ALT: 0x0004,
  SUPER: 0x0008,
  CAPS_LOCK: 0x0010,
  NUM_LOCK: 0x0020,
} as const;

export interface KeyEvent {
  action: number; // 0 release, 1 press, 2 repeat
  key: number;
  mods: number;
  consumedMods: number;
  composing: boolean;
  text: string | null;
  unshiftedCodepoint: number | null;
}

export type InputEvent =
  | { kind: "key"; key: KeyEvent }
  | { kind: "paste"; trusted: boolean; data: Uint8Array };

const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder("utf-8", { fatal: true });

/** A growing byte buffer with the positional primitives (all big-endian). */
export class Writer {
  private buf = new Uint8Array(64);
  len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.len));
    this.buf = grown;
  }
  u8(v: number): this {
    this.room(1);
    this.buf[this.len++] = v & 0xff;
    return this;
  }
  u16(v: number): this {
    return this.u8(v >>> 8).u8(v);
  }
  u32(v: number): this {
    return this.u16(v >>> 16).u16(v & 0xffff);
  }
  u64(v: bigint): this {
    return this.u32(Number((v >> 32n) & 0xffffffffn)).u32(Number(v & 0xffffffffn));
  }
  varint(v: number): this {
    while (v >= 0x80) {
      this.u8((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    return this.u8(v);
  }
  raw(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
    return this;
  }
  /** A positional str or bytes: u32 length, then the bytes. */
  lenBytes(bytes: Uint8Array): this {
    return this.u32(bytes.length).raw(bytes);
  }
  bytes(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}

/** A frame: type byte then TLV fields in ascending id order (the canonical encoding). */
export function frame(type: number, fields: [number, Uint8Array][]): Uint8Array {
  const body = new Writer();
  for (const [id, value] of fields) body.varint(id).u8(4).varint(value.length).raw(value);
  const out = new Writer();
  out.u32(body.len + 1).u8(type).raw(body.bytes());
  return out.bytes();
}

const w = () => new Writer();

export function terminalId(id: number): Uint8Array {
  return w().u8(0).u32(id).bytes();
}

/** HELLO: SynthesizedVtRaw only, raw output, no native codecs, 256 KiB / 1 MiB. */
export function hello(clientName: string): Uint8Array {
  const caps = w()
    .u8(0) // TrueColor
    .u8(0x01) // layers: L1
    .u8(0) // images
    .u8(0) // keyboard protocols the client itself speaks: none (the server encodes)
    .u8(0) // hyperlinks
    .u8(0) // output mode Raw
    .u8(0) // no default colours
    .u8(0x02) // SynthesizedVtRaw
    .u64(0n)
    .u32(0)
    .u32(256 * 1024)
    .u32(1024 * 1024);
  return frame(FRAME.HELLO, [
    [1, utf8.encode(clientName)],
    [2, w().u16(0).bytes()],
    [3, w().u16(8).bytes()],
    [4, w().u16(0).bytes()],
    [5, caps.bytes()],
  ]);
}

export function ping(nonce: bigint): Uint8Array {
  return frame(FRAME.PING, [[1, w().u64(nonce).bytes()]]);
}

export function command(requestId: number, body: Uint8Array): Uint8Array {
  return frame(FRAME.COMMAND, [
    [1, w().u32(requestId).bytes()],
    [2, body],
  ]);
}

export function attachTerminal(id: number): Uint8Array {
  return w().u8(0x01).raw(terminalId(id)).bytes();
}

/** GET_TERMINAL_STATE without scrollback: the terminal's lifecycle and lease as JSON. */
export function getTerminalState(id: number): Uint8Array {
  return w().u8(0x0c).raw(terminalId(id)).u8(0).u16(0).bytes();
}

export function getState(): Uint8Array {
  return w().u8(0x05).u8(0).bytes();
}

export function spawnTerminal(requestId: number, cols: number, rows: number): Uint8Array {
  return frame(FRAME.SPAWN_TERMINAL, [
    [1, w().u32(requestId).bytes()],
    [10, w().u16(cols).u16(rows).bytes()],
  ]);
}

export function resize(id: number, cols: number, rows: number): Uint8Array {
  return frame(FRAME.TERMINAL_RESIZE, [
    [1, terminalId(id)],
    [2, w().u16(cols).bytes()],
    [3, w().u16(rows).bytes()],
  ]);
}

/** The events of an APPLY_INPUT: u16 count, then each InputEvent. */
export function encodeEvents(events: InputEvent[]): Uint8Array {
  const out = w().u16(events.length);
  for (const e of events) {
    if (e.kind === "key") {
      const k = e.key;
      out.u8(0x00).u32(k.action).u32(k.key).u16(k.mods).u16(k.consumedMods).u8(k.composing ? 1 : 0);
      if (k.text === null) out.u8(0);
      else out.u8(1).lenBytes(utf8.encode(k.text));
      if (k.unshiftedCodepoint === null) out.u8(0);
      else out.u8(1).u32(k.unshiftedCodepoint);
    } else {
      out.u8(0x03).u8(e.trusted ? 0 : 1).lenBytes(e.data);
    }
  }
  return out.bytes();
}

/** APPLY_INPUT's command value: tag, operation id, terminal, the encoded events. */
export function applyInput(opId: Uint8Array, terminal: number, events: Uint8Array): Uint8Array {
  return w().u8(0x14).raw(opId).raw(terminalId(terminal)).raw(events).bytes();
}

/** The largest APPLY_INPUT command value a server accepts (INPUT.APPLY bounds). */
export const MAX_APPLY_INPUT_VALUE = 65536;

// ---- decoding ----

export class DecodeError extends Error {}

/** A bounded positional reader. */
export class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}
  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new DecodeError("truncated value");
  }
  u8(): number {
    this.need(1);
    return this.buf[this.pos++];
  }
  u16(): number {
    return (this.u8() << 8) | this.u8();
  }
  u32(): number {
    return this.u16() * 0x10000 + this.u16();
  }
  i32(): number {
    return this.u32() | 0;
  }
  u64(): bigint {
    return (BigInt(this.u32()) << 32n) | BigInt(this.u32());
  }
  take(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
  rest(): Uint8Array {
    return this.take(this.buf.length - this.pos);
  }
  str(): string {
    return utf8Strict.decode(this.take(this.u32()));
  }
  optional<T>(read: () => T): T | null {
    const presence = this.u8();
    if (presence > 1) throw new DecodeError("bad presence byte");
    return presence ? read() : null;
  }
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.u8();
      value += (b & 0x7f) * scale;
      if (!(b & 0x80)) return value;
      scale *= 128;
    }
    throw new DecodeError("varint too long");
  }
  terminal(): number {
    const tag = this.u8();
    if (tag !== 0) throw new DecodeError("satellite terminal id");
    return this.u32();
  }
}

export interface Frame {
  type: number;
  fields: Map<number, Uint8Array>;
}

/** The largest message a client accepts: phux's frame cap (16 MiB). */
export const MAX_FRAME_LEN = 16 * 1024 * 1024;

/** One whole frame (one WebSocket message); throws on anything that is not exactly one. */
export function decodeFrame(msg: Uint8Array): Frame {
  const r = new Reader(msg);
  const length = r.u32();
  if (length < 1 || length > MAX_FRAME_LEN || length !== msg.length - 4) {
    throw new DecodeError(`frame length ${length} in a ${msg.length}-byte message`);
  }
  const type = r.u8();
  const fields = new Map<number, Uint8Array>();
  while (r.pos < msg.length) {
    const id = r.varint();
    r.u8(); // wire type
    const len = r.varint();
    fields.set(id, r.take(len));
  }
  return { type, fields };
}

export function field(f: Frame, id: number): Reader {
  const value = f.fields.get(id);
  if (value === undefined) throw new DecodeError(`frame 0x${f.type.toString(16)} lacks field ${id}`);
  return new Reader(value);
}

export function hasField(f: Frame, id: number): boolean {
  return f.fields.has(id);
}

export function rawField(f: Frame, id: number): Uint8Array {
  return field(f, id).rest();
}

export function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

export type CommandResult =
  | { ok: true; value: Reader | null }
  | { ok: false; code: number; message: string };

export function commandResult(f: Frame): { requestId: number; result: CommandResult } {
  const requestId = hasField(f, 1) ? field(f, 1).u32() : 0;
  const r = field(f, 2);
  const tag = r.u8();
  if (tag === 0) return { requestId, result: { ok: true, value: null } };
  if (tag === 1) return { requestId, result: { ok: true, value: r } };
  if (tag === 2) {
    const code = r.u16();
    return { requestId, result: { ok: false, code, message: r.str() } };
  }
  throw new DecodeError(`unknown CommandResult tag ${tag}`);
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function unhex(s: string): Uint8Array {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}
