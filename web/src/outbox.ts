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

/**
 * How long any IndexedDB transaction of the outbox may take before it is abandoned. A
 * transaction that never completes (another connection holding a store, a browser bug) must
 * not leave the sender waiting silently: it ends as [`StorageStalled`], the sender shows it
 * and tries again on a fresh connection.
 */
export const STORAGE_DEADLINE_MS = 10_000;

/**
 * An outbox transaction that did not settle within its deadline. `aborted`: it was aborted,
 * so it wrote nothing and may be retried as it is; otherwise it was already committing and
 * whether it wrote is not known.
 */
export class StorageStalled extends Error {
  constructor(
    what: string,
    ms: number,
    readonly aborted: boolean,
  ) {
    super(`the browser's storage did not answer within ${ms} ms (${what}); ${aborted ? "retrying" : "outcome unknown"} on a new connection`);
    this.name = "StorageStalled";
  }
}

/** 128 random bits, never all zero (phux refuses a zero operation id). */
export function newOpId(): Uint8Array {
  const id = new Uint8Array(16);
  do crypto.getRandomValues(id);
  while (id.every((b) => b === 0));
  return id;
}

function openDb(name: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => {
      const db = req.result;
      const ops = db.createObjectStore(OPS, { keyPath: "seq", autoIncrement: true });
      ops.createIndex(PENDING, "pending");
      db.createObjectStore(STATS);
      db.createObjectStore(META);
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error("the outbox database is blocked by another tab's upgrade"));
  });
}

/** Records one transaction has read. */
interface Seen {
  records: number;
}

/** What the outbox holds that is not resolved yet: how many, and how many of them were sent. */
export interface PendingSummary {
  pending: number;
  sent: number;
}

export class Outbox {
  /** Records read from IndexedDB so far. */
  recordsRead = 0;
  /**
   * The most records one transaction has read: bounded whatever the backlog (a read of the
   * whole backlog per send made sending slower the more input waited).
   */
  largestRead = 0;
  /** Transactions abandoned at their deadline. */
  stalls = 0;
  private db: Promise<IDBDatabase>;

  private constructor(
    private name: string,
    db: IDBDatabase,
    private deadlineMs: number,
  ) {
    this.db = Promise.resolve(db);
  }

  static async open(name = DB_NAME, deadlineMs = STORAGE_DEADLINE_MS): Promise<Outbox> {
    return new Outbox(name, await openDb(name), deadlineMs);
  }

  /**
   * Runs `body` in one transaction and resolves with its value once the transaction has
   * completed (for a write: is durable). Every request `body` makes is chained by callbacks
   * inside the transaction, never across an `await`. A transaction that neither completes nor
   * aborts within the deadline is aborted and rejected as [`StorageStalled`], and the next
   * transaction runs on a new connection.
   */
  private async run<T>(
    what: string,
    stores: string[],
    mode: IDBTransactionMode,
    body: (tx: IDBTransaction, seen: Seen) => () => T,
  ): Promise<T> {
    const db = await this.db;
    return new Promise<T>((resolve, reject) => {
      let tx: IDBTransaction;
      let value: () => T;
      const seen = { records: 0 };
      try {
        tx = mode === "readwrite" ? db.transaction(stores, mode, { durability: "strict" }) : db.transaction(stores, mode);
        value = body(tx, seen);
      } catch (e) {
        // A connection the browser closed (or one this outbox gave up): open a new one.
        this.reopen();
        reject(e);
        return;
      }
      let timer = setTimeout(() => {
        this.stalls++;
        this.reopen();
        try {
          tx.abort();
        } catch {
          // Already committing: its own event says whether it wrote; wait one more deadline
          // for it, then give up knowing.
          timer = setTimeout(() => reject(new StorageStalled(what, 2 * this.deadlineMs, false)), this.deadlineMs);
          return;
        }
        reject(new StorageStalled(what, this.deadlineMs, true));
      }, this.deadlineMs);
      tx.oncomplete = () => {
        clearTimeout(timer);
        this.recordsRead += seen.records;
        this.largestRead = Math.max(this.largestRead, seen.records);
        resolve(value());
      };
      tx.onabort = () => {
        clearTimeout(timer);
        reject(tx.error ?? new Error(`${what}: transaction aborted`));
      };
    });
  }

  private reopen(): void {
    const old = this.db;
    this.db = openDb(this.name);
    void old.then((db) => db.close()).catch(() => undefined);
    // A failed open is retried by the next transaction.
    this.db.catch(() => (this.db = openDb(this.name)));
  }

  /** Records a submission's operations in one transaction; resolves once it is durable. */
  async add(ops: Op[]): Promise<Op[]> {
    return this.run("record input", [OPS], "readwrite", (tx) => {
      const store = tx.objectStore(OPS);
      const keys = ops.map((op) => store.add({ ...op, pending: 1 }));
      return () => ops.map((op, i) => ({ ...op, seq: keys[i].result as number }));
    });
  }

  /**
   * Rewrites operations (state, sentAt, detail); a resolution also counts in the statistics.
   * An operation already final in the store is left as it is and not counted again: a stale
   * copy never makes a resolved operation pending again. Resolves with whether `op` itself
   * was written (false: it was resolved or dropped meanwhile, and must not be sent).
   */
  async put(op: Op, cascade: Op[] = []): Promise<boolean> {
    return this.run(`write ${op.state} ${op.seq}`, [OPS, STATS], "readwrite", (tx, seen) => {
      const ops = tx.objectStore(OPS);
      const stats = tx.objectStore(STATS);
      const all = [op, ...cascade];
      const resolved = new Map<State, number>();
      let written = false;
      let left = all.length;
      for (const o of all) {
        const prev = ops.get(o.seq!);
        prev.onsuccess = () => {
          seen.records++;
          const before = prev.result as Op | undefined;
          if (before !== undefined && !FINAL.has(before.state)) {
            if (FINAL.has(o.state)) {
              delete o.pending;
              resolved.set(o.state, (resolved.get(o.state) ?? 0) + 1);
            } else o.pending = 1;
            ops.put(o);
            if (o === op) written = true;
          }
          if (--left > 0) return;
          for (const [state, n] of resolved) {
            const count = stats.get(state);
            count.onsuccess = () => stats.put(((count.result as number | undefined) ?? 0) + n, state);
          }
        };
      }
      return () => written;
    });
  }

  /** The unresolved operation with the lowest sequence number, the next to send. */
  async next(): Promise<Op | null> {
    return this.run("read the next input", [OPS], "readonly", (tx, seen) => {
      const req = tx.objectStore(OPS).index(PENDING).openCursor();
      let op: Op | null = null;
      req.onsuccess = () => {
        if (req.result) {
          seen.records++;
          op = req.result.value as Op;
        }
      };
      return () => op;
    });
  }

  /**
   * How many operations are unresolved, and how many of those were sent: the sent ones are at
   * the head of the order, so this reads only them, never the whole backlog.
   */
  async pendingSummary(): Promise<PendingSummary> {
    return this.run("count the pending inputs", [OPS], "readonly", (tx, seen) => {
      const index = tx.objectStore(OPS).index(PENDING);
      const out: PendingSummary = { pending: 0, sent: 0 };
      const count = index.count();
      count.onsuccess = () => (out.pending = count.result);
      const head = index.openCursor();
      head.onsuccess = () => {
        const cursor = head.result;
        if (!cursor) return;
        seen.records++;
        if ((cursor.value as Op).state !== "sent") return;
        out.sent++;
        cursor.continue();
      };
      return () => out;
    });
  }

  /** The unresolved operations of a submission after `part` (they follow it in the order). */
  async laterParts(op: Op): Promise<Op[]> {
    return this.run("read a submission", [OPS], "readonly", (tx, seen) => {
      const req = tx.objectStore(OPS).openCursor(IDBKeyRange.lowerBound(op.seq!, true));
      const out: Op[] = [];
      req.onsuccess = () => {
        const cursor = req.result;
        if (!cursor) return;
        seen.records++;
        const o = cursor.value as Op;
        if (o.submission !== op.submission) return;
        if (!FINAL.has(o.state)) out.push(o);
        cursor.continue();
      };
      return () => out;
    });
  }

  /** The newest `n` operations, oldest first. */
  async recent(n: number): Promise<Op[]> {
    return this.run("read the recent inputs", [OPS], "readonly", (tx, seen) => {
      const req = tx.objectStore(OPS).openCursor(null, "prev");
      const out: Op[] = [];
      req.onsuccess = () => {
        const cursor = req.result;
        if (!cursor || out.length >= n) return;
        seen.records++;
        out.push(cursor.value as Op);
        cursor.continue();
      };
      return () => out.reverse();
    });
  }

  async count(): Promise<number> {
    return this.run("count the inputs", [OPS], "readonly", (tx) => {
      const req = tx.objectStore(OPS).count();
      return () => req.result;
    });
  }

  /** Every operation (for the tests; the page itself never reads the whole store). */
  async all(): Promise<Op[]> {
    return this.run("read every input", [OPS], "readonly", (tx) => {
      const req = tx.objectStore(OPS).getAll();
      return () => req.result as Op[];
    });
  }

  async stats(): Promise<Record<string, number>> {
    return this.run("read the counts", [STATS], "readonly", (tx) => {
      const store = tx.objectStore(STATS);
      const keys = store.getAllKeys();
      const values = store.getAll();
      return () => {
        const out: Record<string, number> = {};
        keys.result.forEach((k, i) => (out[String(k)] = values.result[i] as number));
        return out;
      };
    });
  }

  /** Drops the oldest resolved operations beyond the display window (those before the first pending one). */
  async prune(keep = KEEP_RESOLVED): Promise<void> {
    const total = await this.count();
    if (total <= keep + 100) return;
    let extra = total - keep;
    await this.run("drop old inputs", [OPS], "readwrite", (tx, seen) => {
      const req = tx.objectStore(OPS).openCursor();
      req.onsuccess = () => {
        const cursor = req.result;
        if (!cursor || extra <= 0) return;
        seen.records++;
        // Resolved operations come first in the order; stop at the first pending one.
        if (!FINAL.has((cursor.value as Op).state)) return;
        cursor.delete();
        extra--;
        cursor.continue();
      };
      return () => undefined;
    });
  }

  /** A small durable value (the last server incarnation seen). */
  async meta(key: string): Promise<unknown> {
    return this.run("read a setting", [META], "readonly", (tx) => {
      const req = tx.objectStore(META).get(key);
      return () => req.result;
    });
  }

  async setMeta(key: string, value: unknown): Promise<void> {
    return this.run("write a setting", [META], "readwrite", (tx) => {
      tx.objectStore(META).put(value, key);
      return () => undefined;
    });
  }
}
