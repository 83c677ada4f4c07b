// The durable browser outbox: every input is an operation recorded in IndexedDB, committed
// with strict durability, before any byte of it is sent ([CLIENT.OUTBOX.1],
// [CLIENT.OUTBOX.2]); it stays until the server resolves it ([CLIENT.OUTBOX.3]). One record
// per operation, keyed by an increasing sequence number that orders sends; the operation id
// is 128 bits from crypto.getRandomValues and never changes ([CLIENT.OUTBOX.5]).

export type State = "queued" | "sent" | "applied" | "unknown" | "refused" | "notsent";

/** States that are final: the operation will never be sent again. */
export const FINAL: ReadonlySet<State> = new Set(["applied", "unknown", "refused", "notsent"]);

export interface Op {
  seq?: number;
  /** The operation id, 32 hex digits. */
  opId: string;
  /** The server incarnation (HELLO_OK server_id, hex) the operation is addressed to. */
  server: string;
  terminal: number;
  /** APPLY_INPUT's encoded events (u16 count, then each InputEvent). */
  events: Uint8Array;
  /** What the user typed, for the list. */
  label: string;
  /** The submission (one key, one paste) and this operation's place in it. */
  submission: string;
  part: number;
  parts: number;
  /** Wall-clock milliseconds ([CLIENT.JOURNAL.2]). */
  addedAt: number;
  sentAt: number | null;
  state: State;
  detail: string | null;
  resolvedAt: number | null;
  /** Present (1) while unresolved: the sparse index of what is left to send. */
  pending?: 1;
}

const DB_NAME = "phux-web";
const OPS = "ops";
const STATS = "stats";
const META = "meta";
const PENDING = "pending";

/** Resolved operations kept for display by default; older ones are dropped (their counts stay). */
export const KEEP_RESOLVED = 400;

function done(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("transaction aborted"));
  });
}

function result<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** 128 random bits, never all zero (phux refuses a zero operation id). */
export function newOpId(): Uint8Array {
  const id = new Uint8Array(16);
  do crypto.getRandomValues(id);
  while (id.every((b) => b === 0));
  return id;
}

export class Outbox {
  private constructor(private db: IDBDatabase) {}

  static async open(name = DB_NAME): Promise<Outbox> {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => {
      const db = req.result;
      const ops = db.createObjectStore(OPS, { keyPath: "seq", autoIncrement: true });
      ops.createIndex(PENDING, "pending");
      db.createObjectStore(STATS);
      db.createObjectStore(META);
    };
    return new Outbox(await result(req));
  }

  /** A read-write transaction that is complete only once on disk. */
  private write(stores: string[]): IDBTransaction {
    return this.db.transaction(stores, "readwrite", { durability: "strict" });
  }

  /** Records a submission's operations in one transaction; resolves once it is durable. */
  async add(ops: Op[]): Promise<Op[]> {
    const tx = this.write([OPS]);
    const store = tx.objectStore(OPS);
    const keys = ops.map((op) => result(store.add({ ...op, pending: 1 })));
    await done(tx);
    const seqs = await Promise.all(keys);
    return ops.map((op, i) => ({ ...op, seq: seqs[i] as number }));
  }

  /** Rewrites one operation (state, sentAt); a resolution also counts in the statistics. */
  async put(op: Op, cascade: Op[] = []): Promise<void> {
    const tx = this.write([OPS, STATS]);
    const ops = tx.objectStore(OPS);
    const stats = tx.objectStore(STATS);
    for (const o of [op, ...cascade]) {
      if (FINAL.has(o.state)) delete o.pending;
      else o.pending = 1;
      ops.put(o);
      if (FINAL.has(o.state)) {
        const count = (await result(stats.get(o.state))) as number | undefined;
        stats.put((count ?? 0) + 1, o.state);
      }
    }
    await done(tx);
  }

  /** The unresolved operation with the lowest sequence number, the next to send. */
  async next(): Promise<Op | null> {
    const tx = this.db.transaction([OPS], "readonly");
    const cursor = await result(tx.objectStore(OPS).index(PENDING).openCursor());
    return cursor ? (cursor.value as Op) : null;
  }

  /** Every unresolved operation, oldest first. */
  async pending(): Promise<Op[]> {
    const tx = this.db.transaction([OPS], "readonly");
    return (await result(tx.objectStore(OPS).index(PENDING).getAll())) as Op[];
  }

  /** The unresolved operations of a submission after `part`. */
  async laterParts(op: Op): Promise<Op[]> {
    return (await this.pending()).filter((o) => o.submission === op.submission && o.part > op.part);
  }

  /** The newest `n` operations, oldest first. */
  async recent(n: number): Promise<Op[]> {
    const tx = this.db.transaction([OPS], "readonly");
    const req = tx.objectStore(OPS).openCursor(null, "prev");
    const out: Op[] = [];
    return new Promise((resolve, reject) => {
      req.onsuccess = () => {
        const cursor = req.result;
        if (!cursor || out.length >= n) return resolve(out.reverse());
        out.push(cursor.value as Op);
        cursor.continue();
      };
      req.onerror = () => reject(req.error);
    });
  }

  async count(): Promise<number> {
    const tx = this.db.transaction([OPS], "readonly");
    return result(tx.objectStore(OPS).count());
  }

  async all(): Promise<Op[]> {
    const tx = this.db.transaction([OPS], "readonly");
    return (await result(tx.objectStore(OPS).getAll())) as Op[];
  }

  async stats(): Promise<Record<string, number>> {
    const tx = this.db.transaction([STATS], "readonly");
    const store = tx.objectStore(STATS);
    const [keys, values] = await Promise.all([result(store.getAllKeys()), result(store.getAll())]);
    const out: Record<string, number> = {};
    keys.forEach((k, i) => (out[String(k)] = values[i] as number));
    return out;
  }

  /** Drops the oldest resolved operations beyond the display window. */
  async prune(keep = KEEP_RESOLVED): Promise<void> {
    const total = await this.count();
    if (total <= keep + 100) return;
    const all = await this.all();
    const resolved = all.filter((o) => FINAL.has(o.state));
    const extra = resolved.length - keep;
    if (extra <= 0) return;
    const tx = this.write([OPS]);
    for (const o of resolved.slice(0, extra)) tx.objectStore(OPS).delete(o.seq!);
    await done(tx);
  }

  /** A small durable value (the last server incarnation seen). */
  async meta(key: string): Promise<unknown> {
    const tx = this.db.transaction([META], "readonly");
    return result(tx.objectStore(META).get(key));
  }

  async setMeta(key: string, value: unknown): Promise<void> {
    const tx = this.write([META]);
    tx.objectStore(META).put(value, key);
    await done(tx);
  }
}
