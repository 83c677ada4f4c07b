// The page: an xterm.js terminal attached over the WebSocket, keys and pastes recorded in
// the outbox before they leave, one tab at a time sending the outbox.
//
// Who sends: the tab holding the Web Lock "phux-web-outbox". Every tab records what its user
// types into the one IndexedDB outbox of this origin; only the lock holder sends, in record
// order. A Web Lock is released by the browser itself when its tab closes, crashes or is
// killed, so the next tab takes over at once with no lease to time out and no two senders
// ever; a BroadcastChannel only wakes the sender ("new input") and the other tabs' lists
// ("states changed"), and a one-second poll covers a wake-up lost with a dying tab.

import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import * as wire from "./wire";
import { Link, LinkDown } from "./link";
import { Outbox, Op, FINAL, KEEP_RESOLVED, STORAGE_DEADLINE_MS, StorageStalled, newOpId } from "./outbox";
import { browserShortcut, composedText, keyEventFrom, label } from "./keys";
import { mirrorInlineStyles } from "./cspstyles";
import { decideBeforeSend, verdictOf, sanitizePaste, splitPaste } from "./policy";

const params = new URLSearchParams(location.search);
const wsUrl = params.get("ws") ?? `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/`;

// The listener's secret: given once as `#secret=<hex>` (a fragment never reaches a server),
// kept in this origin's localStorage so reloads and new tabs connect, and taken out of the
// address bar at once. It rides as a WebSocket subprotocol, the one header a page can set.
const SECRET_KEY = "phux-web-secret";
const fragment = new URLSearchParams(location.hash.slice(1));
const given = fragment.get("secret");
if (given !== null) {
  if (/^[0-9a-f]{64}$/.test(given)) localStorage.setItem(SECRET_KEY, given);
  fragment.delete("secret");
  const rest = fragment.toString();
  history.replaceState(null, "", `${location.pathname}${location.search}${rest ? `#${rest}` : ""}`);
}
function protocols(): string[] {
  const secret = localStorage.getItem(SECRET_KEY);
  return secret ? ["phux", `phux-secret.${secret}`] : [];
}
const pingEveryMs = Number(params.get("ping") ?? 3000);
const pingTimeoutMs = Number(params.get("pingTimeout") ?? 4000);
/** [CLIENT.HALFOPEN.1] An operation with no result this long after it was sent drops the link. */
const RESULT_GRACE_MS = Number(params.get("resultGrace") ?? 9000);
/** How many resolved inputs the list keeps (the tests keep them all). */
const KEEP = Number(params.get("keep") ?? KEEP_RESOLVED);
/** How long an outbox transaction may take before it is abandoned and retried. */
const STORAGE_DEADLINE = Number(params.get("storageDeadline") ?? STORAGE_DEADLINE_MS);

const $ = (id: string) => document.getElementById(id)!;

const term = new Terminal({ cursorBlink: true, scrollback: 5000, convertEol: false });
const fit = new FitAddon();
term.loadAddon(fit);
mirrorInlineStyles($("terminal"));
term.open($("terminal"));
fit.fit();

let terminalId: number | null = params.has("t") ? Number(params.get("t")) : null;
let owner = false;
let lastServer: string | null = null;
let leaseHolder: string = "open";
let lifecycle = "running";
let layout: ReadonlyMap<string, string> | undefined;
const channel = new BroadcastChannel("phux-web-outbox");
const outbox = await Outbox.open(undefined, STORAGE_DEADLINE);
lastServer = ((await outbox.meta("server")) as string | undefined) ?? null;

const link = new Link(
  { url: wsUrl, protocols, clientName: "phux-web/0.1", pingEveryMs, pingTimeoutMs },
  {
    up: (serverId) => void onUp(serverId),
    down: () => render(),
    frame: onFrame,
  },
);
link.connect();

async function onUp(serverId: string): Promise<void> {
  lastServer = serverId;
  // The outbox goes out at once: APPLY_INPUT names its terminal and needs no attach, so keys
  // waiting through a reconnect do not wait for the screen as well.
  kick();
  try {
    await outbox.setMeta("server", serverId);
    if (terminalId === null) terminalId = await pickTerminal();
    history.replaceState(null, "", withParam("t", String(terminalId)));
    term.reset();
    const r = await link.request(wire.attachTerminal(terminalId));
    if (!r.ok) term.write(`\r\n[attach refused: ${r.message}]\r\n`);
    link.send(wire.resize(terminalId, term.cols, term.rows));
    await readLease(terminalId);
  } catch (e) {
    if (e instanceof StorageStalled) storageError(e);
    else if (!(e instanceof LinkDown)) term.write(`\r\n[${String(e)}]\r\n`);
  }
  render();
  kick();
}

/** The lease and lifecycle as they are now (events then keep them current). */
async function readLease(id: number): Promise<void> {
  const r = await link.request(wire.getTerminalState(id));
  if (!r.ok || !r.value || r.value.u8() !== 0x03) return;
  try {
    const state = JSON.parse(r.value.str()) as { input_holder?: number | null; lifecycle?: string };
    if ("input_holder" in state) leaseHolder = state.input_holder == null ? "open" : `held by client ${state.input_holder}`;
    if (typeof state.lifecycle === "string") lifecycle = state.lifecycle;
  } catch {
    /* a server whose state is not ours: events only */
  }
}

function withParam(key: string, value: string): string {
  const p = new URLSearchParams(location.search);
  p.set(key, value);
  return `${location.pathname}?${p}${location.hash}`;
}

/** The newest terminal of the server, or a new shell when it has none. */
async function pickTerminal(): Promise<number> {
  const r = await link.request(wire.getState());
  if (r.ok && r.value) {
    const v = r.value;
    if (v.u8() === 0x02 && v.u32() === 0 && v.u32() === 0) {
      const n = v.u32();
      let newest = -1;
      for (let i = 0; i < n; i++) {
        const id = v.terminal();
        v.u32();
        v.u16();
        v.u16();
        v.optional(() => v.str());
        v.optional(() => v.str());
        newest = Math.max(newest, id);
      }
      if (newest >= 0) return newest;
    }
  }
  return new Promise((resolve, reject) => {
    spawnWaiter = { resolve, reject };
    link.send(wire.spawnTerminal(0x5eed, term.cols, term.rows));
  });
}
let spawnWaiter: { resolve(id: number): void; reject(e: Error): void } | null = null;

function onFrame(f: wire.Frame): void {
  switch (f.type) {
    case wire.FRAME.BOOTSTRAP_BEGIN: {
      if (wire.field(f, 1).terminal() !== terminalId) return;
      const cols = wire.field(f, 5).u16();
      const rows = wire.field(f, 6).u16();
      term.reset();
      if (cols !== term.cols || rows !== term.rows) term.resize(cols, rows);
      return;
    }
    case wire.FRAME.BOOTSTRAP_CHUNK:
      if (wire.field(f, 1).terminal() === terminalId) term.write(wire.rawField(f, 5));
      return;
    case wire.FRAME.TERMINAL_OUTPUT:
      if (wire.field(f, 1).terminal() === terminalId) term.write(wire.rawField(f, 3));
      return;
    case wire.FRAME.TERMINAL_SPAWNED: {
      const r = wire.field(f, 2);
      if (r.u8() === 0) spawnWaiter?.resolve(r.terminal());
      else spawnWaiter?.reject(new Error("the server could not spawn a terminal"));
      spawnWaiter = null;
      return;
    }
    case wire.FRAME.TERMINAL_CLOSED:
      if (wire.field(f, 1).terminal() === terminalId) {
        lifecycle = "exited";
        term.write("\r\n[the terminal has closed]\r\n");
        render();
      }
      return;
    case wire.FRAME.EVENT: {
      if (!wire.hasField(f, 1) || wire.field(f, 1).terminal() !== terminalId) return;
      const e = wire.field(f, 2);
      if (e.u8() !== 0x08) return;
      const body = new wire.Reader(e.take(e.u32()));
      lifecycle = ["running", "frozen", "exited"][body.u8()] ?? "?";
      body.optional(() => body.i32());
      const holder = body.optional(() => body.u32());
      leaseHolder = holder === null ? "open" : `held by client ${holder}`;
      render();
      return;
    }
    case wire.FRAME.ERROR:
      term.write(`\r\n[server error ${wire.field(f, 2).u16()}: ${wire.text(wire.rawField(f, 3))}]\r\n`);
      return;
  }
}

// ---- input: recorded first, then sent ----

let submissions = 0;

async function record(events: wire.InputEvent[][], what: string[]): Promise<void> {
  const server = link.serverId ?? lastServer;
  // [CLIENT.BIND.6] Input before any handshake has no incarnation to be addressed to.
  if (server === null || terminalId === null) {
    flash("not connected yet: input not recorded");
    return;
  }
  const submission = `${Date.now().toString(36)}-${(submissions++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const now = Date.now();
  const ops: Op[] = events.map((ev, i) => ({
    opId: wire.hex(newOpId()),
    server,
    terminal: terminalId!,
    events: wire.encodeEvents(ev),
    label: what[i],
    submission,
    part: i + 1,
    parts: events.length,
    addedAt: now,
    sentAt: null,
    state: "queued",
    detail: null,
    resolvedAt: null,
  }));
  // [CLIENT.OUTBOX.1] Durable before anything is sent. A transaction abandoned at its deadline
  // wrote nothing and is retried; one whose outcome is unknown is not (the list shows
  // whether the input was recorded).
  for (;;) {
    try {
      await outbox.add(ops);
      break;
    } catch (e) {
      if (!(e instanceof StorageStalled)) throw e;
      storageError(e);
      if (!e.aborted) throw e;
    }
  }
  channel.postMessage("input");
  kick();
  scheduleRender();
}

// Keys reach the outbox in the order typed: each keydown chains on the one before.
let recording: Promise<void> = Promise.resolve();
function enqueue(events: wire.InputEvent[][], what: string[]): void {
  recording = recording.then(() => record(events, what)).catch((e) => flash(`outbox: ${String(e)}`));
}

term.attachCustomKeyEventHandler((e) => {
  if (e.isComposing || e.keyCode === 229) return true; // the input method has it
  if (e.type !== "keydown") return false;
  if (browserShortcut(e)) return false;
  const k = keyEventFrom(
    { ...pick(e), capsLock: e.getModifierState("CapsLock"), numLock: e.getModifierState("NumLock") },
    layout,
  );
  if (k === null) return false;
  e.preventDefault();
  enqueue([[{ kind: "key", key: k }]], [label(k)]);
  return false;
});

function pick(e: KeyboardEvent) {
  const { code, key, ctrlKey, altKey, shiftKey, metaKey, repeat, isComposing } = e;
  return { code, key, ctrlKey, altKey, shiftKey, metaKey, repeat, isComposing };
}

term.textarea?.addEventListener("compositionend", (e) => {
  const keys = composedText((e as CompositionEvent).data ?? "");
  if (keys.length) enqueue([keys.map((key) => ({ kind: "key" as const, key }))], [(e as CompositionEvent).data]);
});

$("terminal").addEventListener(
  "paste",
  (e) => {
    e.preventDefault();
    e.stopImmediatePropagation();
    const data = (e as ClipboardEvent).clipboardData?.getData("text/plain") ?? "";
    if (data) paste(data);
  },
  true,
);

/** A paste: blanked as [CLIENT.PASTE.4] says, split into in-limit parts of one submission. */
function paste(data: string): void {
  const parts = splitPaste(sanitizePaste(data));
  if (parts === null) {
    flash("paste refused: larger than 1 MiB");
    return;
  }
  enqueue(
    parts.map((p) => [{ kind: "paste", trusted: true, data: p }]),
    parts.map((p, i) => `paste ${p.length} B${parts.length > 1 ? ` (${i + 1}/${parts.length})` : ""}`),
  );
}

// ---- sending: the owner tab only ----

let pumping = false;
let pumpAgain = false;
/** The last thing that stopped the sender, for the tests' reports. */
let lastError: string | null = null;
/** What the sender is waiting for, for the tests' reports. */
let pumpStep = "idle";
/** APPLY_INPUT requests sent (first sends and resends), for the tests. */
let applyRequests = 0;

/** A storage transaction abandoned at its deadline: shown, and the sender tries again. */
function storageError(e: StorageStalled): void {
  lastError = `outbox: ${e.message}`;
  flash(lastError);
}

function kick(): void {
  if (!owner || !link.up) return;
  if (pumping) {
    pumpAgain = true;
    return;
  }
  pumping = true;
  void (async () => {
    try {
      do {
        pumpAgain = false;
        await pumpOnce();
      } while (pumpAgain && owner && link.up);
      pumpStep = "idle";
    } catch (e) {
      // The one-second kick below starts the sender again.
      if (e instanceof StorageStalled) storageError(e);
      else if (!(e instanceof LinkDown)) {
        lastError = `outbox: ${String(e)}`;
        flash(lastError);
      }
    } finally {
      pumping = false;
    }
  })();
}

/** Sends the outbox in order, one operation at a time, until it is empty or the link ends. */
async function pumpOnce(): Promise<void> {
  let busySince: number | null = null;
  while (owner && link.up) {
    pumpStep = "next";
    const op = await outbox.next();
    if (op === null) return;
    // The link may have ended while the outbox was read: decide only on a live one.
    const serverId = link.serverId;
    if (serverId === null || !owner) return;
    const before = decideBeforeSend(op, serverId, link.features, Date.now());
    if (before !== null) {
      await resolve(op, before.state, before.detail);
      continue;
    }
    if (op.state === "queued") {
      // [CLIENT.JOURNAL.1] The send is recorded before it happens.
      op.state = "sent";
      op.sentAt = Date.now();
      pumpStep = `record sent ${op.seq}`;
      // Resolved meanwhile (by a tab that sent before this one): never send it again.
      if (!(await outbox.put(op))) continue;
      scheduleRender();
    }
    const watchdog = setTimeout(() => link.drop(`no result ${RESULT_GRACE_MS} ms after sending`), RESULT_GRACE_MS);
    let r: wire.CommandResult;
    try {
      // [CLIENT.OUTBOX.5] The same operation id, terminal and events every time.
      pumpStep = `request ${op.seq}`;
      applyRequests++;
      r = await link.request(wire.applyInput(wire.unhex(op.opId), op.terminal, op.events));
    } finally {
      clearTimeout(watchdog);
    }
    const v = verdictOf(r, busySince, Date.now());
    if (v.kind === "resend") {
      busySince = v.busySince;
      pumpStep = `resend ${op.seq} after ${v.afterMs} ms`;
      await sleep(v.afterMs);
      continue;
    }
    busySince = null;
    await resolve(op, v.state, v.detail);
  }
}

async function resolve(op: Op, state: Op["state"], detail: string | null): Promise<void> {
  pumpStep = `resolve ${op.seq} ${state}`;
  op.state = state;
  op.detail = detail;
  op.resolvedAt = Date.now();
  // [CLIENT.SUBMIT.2] The parts after a part that did not arrive are never sent.
  const later = state === "applied" ? [] : await outbox.laterParts(op);
  for (const o of later) {
    o.state = "notsent";
    o.detail = `an earlier part was ${state}`;
    o.resolvedAt = op.resolvedAt;
  }
  await outbox.put(op, later);
  channel.postMessage("changed");
  scheduleRender();
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

channel.onmessage = (m) => {
  if (m.data === "input") kick();
  scheduleRender();
};
setInterval(() => {
  kick();
  outbox.prune(KEEP).catch((e) => e instanceof StorageStalled && storageError(e));
}, 1000);

void navigator.locks.request("phux-web-outbox", () => {
  owner = true;
  render();
  kick();
  return new Promise<void>(() => {
    /* held until this tab goes away */
  });
});

// ---- the view ----

let renderQueued = false;
function scheduleRender(): void {
  if (renderQueued) return;
  renderQueued = true;
  setTimeout(() => {
    renderQueued = false;
    render();
  }, 50);
}

let latestStats: Record<string, number> = {};

function render(): void {
  $("link").textContent =
    link.opened === 0 && link.reconnects > 2 && protocols().length === 0
      ? "refused: open the address the server printed (it carries #secret=...)"
      : link.status;
  $("link").className = link.up ? "ok" : "bad";
  $("server").textContent = link.serverId ? link.serverId.slice(0, 8) : lastServer ? `${lastServer.slice(0, 8)} (last)` : "-";
  $("owner").textContent = owner ? "this tab sends the outbox" : "another tab sends the outbox";
  $("lease").textContent = `input lease: ${leaseHolder}`;
  $("terminalid").textContent = terminalId === null ? "-" : `local:${terminalId} ${lifecycle}`;
  // Bounded reads only: the newest 80, the counts, and the sent head of the order; never the
  // whole backlog, which would make every send slower the more input waits.
  Promise.all([outbox.recent(80), outbox.pendingSummary(), outbox.stats()]).then(([recent, pending, stats]) => {
    latestStats = stats;
    $("counts").textContent =
      `queued ${pending.pending - pending.sent} · sent ${pending.sent}` +
      ` · applied ${stats.applied ?? 0} · unknown ${stats.unknown ?? 0} · refused ${stats.refused ?? 0} · not sent ${stats.notsent ?? 0}`;
    const list = $("ops");
    list.replaceChildren(
      ...recent.map((o) => {
        const li = document.createElement("li");
        li.className = o.state;
        li.textContent = o.label;
        li.title = `${o.state}${o.detail ? `: ${o.detail}` : ""} · op ${o.opId}`;
        li.dataset.op = o.opId;
        return li;
      }),
    );
  }, (e) => e instanceof StorageStalled && storageError(e));
}

let flashTimer: ReturnType<typeof setTimeout> | undefined;
function flash(msg: string): void {
  $("flash").textContent = msg;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => ($("flash").textContent = ""), 5000);
}

window.addEventListener("resize", () => {
  fit.fit();
  if (terminalId !== null) link.send(wire.resize(terminalId, term.cols, term.rows));
});

const kb = (navigator as unknown as { keyboard?: { getLayoutMap(): Promise<ReadonlyMap<string, string>> } }).keyboard;
kb?.getLayoutMap().then(
  (m) => (layout = m),
  () => undefined,
);

term.focus();
render();

/** What the browser tests read. */
(window as unknown as Record<string, unknown>).phuxWeb = {
  status: () => ({
    link: link.status,
    up: link.up,
    serverId: link.serverId,
    owner,
    terminalId,
    leaseHolder,
    reconnects: link.reconnects,
    opened: link.opened,
    pumping,
    pumpStep,
    lastError,
    applyRequests,
    recordsRead: outbox.recordsRead,
    largestRead: outbox.largestRead,
    storageStalls: outbox.stalls,
  }),
  ops: async () => (await outbox.all()).map(({ events: _e, ...rest }) => rest),
  stats: () => outbox.stats(),
  paste: (data: string) => paste(data),
  pending: async () => (await outbox.pendingSummary()).pending,
  count: () => outbox.count(),
  view: () => latestStats,
};
