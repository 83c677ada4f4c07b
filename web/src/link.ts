// One WebSocket to the server, redialled whenever it ends: HELLO, request correlation, and
// half-open detection by phux PING from the browser. A WebSocket whose peer vanished without
// a FIN (a train in a tunnel, a NAT that forgot the flow) still reads OPEN and accepts
// sends; only an answer proves the path, so when nothing has arrived for `pingEveryMs` the
// link sends a PING, and when nothing answers within `pingTimeoutMs` it abandons the socket
// and dials again.

import * as wire from "./wire";

export interface LinkOptions {
  url: string;
  /** WebSocket subprotocols to offer (the server's secret rides here); none when empty. */
  protocols: () => string[];
  clientName: string;
  pingEveryMs: number;
  pingTimeoutMs: number;
}

export interface LinkEvents {
  /** The handshake completed: the server's incarnation (hex) and its feature bits. */
  up(serverId: string, features: number): void;
  /** The connection ended (or was abandoned); the link dials again by itself. */
  down(reason: string): void;
  /** Any frame other than HELLO_OK, PONG and COMMAND_RESULT. */
  frame(f: wire.Frame): void;
}

export class LinkDown extends Error {}

export class Link {
  private ws: WebSocket | null = null;
  private generation = 0;
  private nextRequest = 1;
  private pending = new Map<number, { resolve(r: wire.CommandResult): void; reject(e: Error): void }>();
  private lastRx = 0;
  private pingSentAt = 0;
  private openedAt = 0;
  private backoffMs = 100;
  serverId: string | null = null;
  features = 0;
  /** What the link is doing, for the status line. */
  status = "connecting";
  reconnects = 0;
  /** WebSockets that opened (a refused upgrade never opens). */
  opened = 0;

  constructor(
    private opts: LinkOptions,
    private events: LinkEvents,
  ) {
    setInterval(() => this.watch(), 250);
  }

  get up(): boolean {
    return this.serverId !== null;
  }

  connect(): void {
    const gen = ++this.generation;
    let ws: WebSocket;
    try {
      const protocols = this.opts.protocols();
      ws = protocols.length ? new WebSocket(this.opts.url, protocols) : new WebSocket(this.opts.url);
    } catch (e) {
      this.status = `cannot connect: ${String(e)}`;
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    this.openedAt = Date.now();
    this.lastRx = this.openedAt;
    this.pingSentAt = 0;
    this.status = "connecting";
    ws.onopen = () => {
      if (gen !== this.generation) return;
      this.status = "handshake";
      this.opened++;
      ws.send(wire.hello(this.opts.clientName));
    };
    ws.onmessage = (m) => {
      if (gen !== this.generation) return;
      this.lastRx = Date.now();
      this.pingSentAt = 0;
      try {
        this.receive(wire.decodeFrame(new Uint8Array(m.data as ArrayBuffer)));
      } catch (e) {
        this.drop(`bad frame from the server: ${String(e)}`);
      }
    };
    ws.onclose = (c) => {
      if (gen !== this.generation) return;
      this.lost(`closed (${c.code}${c.reason ? " " + c.reason : ""})`);
    };
    ws.onerror = () => {
      /* onclose follows */
    };
  }

  /** Abandons the current socket (it may be half-open) and dials again. */
  drop(reason: string): void {
    const ws = this.ws;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch {
        /* already closing */
      }
    }
    this.lost(reason);
  }

  private lost(reason: string): void {
    this.generation++;
    this.ws = null;
    const wasUp = this.serverId !== null;
    this.serverId = null;
    this.status = `reconnecting: ${reason}`;
    for (const p of this.pending.values()) p.reject(new LinkDown(reason));
    this.pending.clear();
    this.events.down(reason);
    if (wasUp) this.backoffMs = 100;
    this.reconnects++;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 2000);
    setTimeout(() => this.connect(), delay);
  }

  private watch(): void {
    if (!this.ws) return;
    const now = Date.now();
    if (this.serverId === null) {
      // A dial or handshake that hangs is as dead as a half-open link.
      if (now - this.openedAt > this.opts.pingEveryMs + this.opts.pingTimeoutMs) {
        this.drop("no handshake");
      }
      return;
    }
    if (this.pingSentAt && now - this.pingSentAt > this.opts.pingTimeoutMs) {
      this.drop(`no answer to PING in ${this.opts.pingTimeoutMs} ms`);
    } else if (!this.pingSentAt && now - this.lastRx > this.opts.pingEveryMs) {
      this.pingSentAt = now;
      const nonce = crypto.getRandomValues(new Uint32Array(2));
      this.send(wire.ping((BigInt(nonce[0]) << 32n) | BigInt(nonce[1])));
    }
  }

  send(bytes: Uint8Array): boolean {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(bytes);
    return true;
  }

  /** Sends a COMMAND; resolves with its result, rejects with LinkDown if the link ends first. */
  request(body: Uint8Array): Promise<wire.CommandResult> {
    if (!this.up) return Promise.reject(new LinkDown("not connected"));
    const id = this.nextRequest++;
    if (this.nextRequest > 0xffffffff) this.nextRequest = 1;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (!this.send(wire.command(id, body))) {
        this.pending.delete(id);
        reject(new LinkDown("not connected"));
      }
    });
  }

  private receive(f: wire.Frame): void {
    switch (f.type) {
      case wire.FRAME.HELLO_OK: {
        const caps = wire.field(f, 4);
        caps.u8();
        this.features = caps.pos < caps.buf.length ? caps.u32() : 0;
        this.serverId = wire.hex(wire.rawField(f, 5));
        this.status = "connected";
        this.backoffMs = 100;
        this.events.up(this.serverId, this.features);
        return;
      }
      case wire.FRAME.PONG:
        return;
      case wire.FRAME.COMMAND_RESULT: {
        const { requestId, result } = wire.commandResult(f);
        const p = this.pending.get(requestId);
        if (p) {
          this.pending.delete(requestId);
          p.resolve(result);
        }
        return;
      }
      default:
        this.events.frame(f);
    }
  }
}
