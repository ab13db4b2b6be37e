// A replica's copy of the shared vector store (PostgreSQL, shared-log.ts), kept current. The copy
// is the index worker's cache (a SQLite file and HNSW graphs with their checkpoints, in DATA_DIR);
// this class, on the main thread, decides what to read and hands the rows to the worker:
//   - collections come with the configuration (ConfigSync reads them on every change: `reconcile`);
//   - a collection's rows past the sequence number the cache has applied are pulled in pages,
//     woken by the notification every write sends and by a jittered timer that reads the heads,
//     never by notifications alone;
//   - a read waits (with a bound) until the cache has reached the head the collection had when
//     the read arrived, so that every acknowledged write is seen on every replica.
// A collection the replica has not caught up with since it started (or since it appeared) is
// "catching up", which /readyz and the collection's own answer say.
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../errors.js';
import type { SharedVectorLog, LogPage } from './shared-log.js';
import type { CachedCollection, CollectionRecord, LogBatch, WorkerOps } from './types.js';
import type { WorkerClient } from './worker-client.js';

/** Rows in one pull: with 768 dimensions, about 6 MB. */
const PAGE_ROWS = 2000;

/** Seconds a client is told to wait when a read timed out behind a catch-up. */
const RETRY_AFTER_S = 1;

export interface FollowerOptions {
  log: SharedVectorLog;
  worker: WorkerClient<WorkerOps>;
  /** Mean time between reads of every collection's head; each wait is drawn from 0.75 to 1.25 times it. */
  pollMs: number;
  /** Longest a read waits for the cache to reach the collection's head. */
  readTimeoutMs: number;
  /** Tombstones older than this are removed from the shared store (with each read of the heads). */
  tombstoneRetentionMs: number;
  /** Told when the set of collections changed (the service's list, the ingest worker's copy). */
  onCollections: (collections: CollectionRecord[]) => void;
  logger: FastifyBaseLogger;
}

export interface ReplicaCopy {
  /** Sequence number the cache has applied. */
  applied: number;
  /** Newest sequence number seen in the shared store. */
  head: number;
  /** True until the cache first reached the head it saw when it started following the collection. */
  catchingUp: boolean;
}

interface Followed {
  record: CollectionRecord;
  copy: ReplicaCopy;
  /** The head to reach before the collection is caught up. */
  target: number;
  pulling: Promise<void> | undefined;
  again: boolean;
  waiters: Array<{ seq: number; resolve: (reached: boolean) => void }>;
}

export class LogFollower {
  private readonly followed = new Map<number, Followed>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Set after a failed apply: the worker may have restarted, so read its applied numbers again. */
  private stale = true;
  private changing: Promise<unknown> = Promise.resolve();
  /** The shared store's collections as last read. */
  private listed = new Map<number, CollectionRecord>();
  private aligning: Promise<void> | undefined;
  private alignAgain = false;

  constructor(private readonly o: FollowerOptions) {}

  /** Starts the timer that reads every head (reconcile has been called by the first snapshot). */
  start(): void {
    const tick = () => {
      const wait = this.o.pollMs * (0.75 + Math.random() / 2);
      this.timer = setTimeout(() => {
        void this.pollHeads().finally(() => {
          if (!this.stopped) tick();
        });
      }, wait);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const f of this.followed.values()) {
      for (const w of f.waiters) w.resolve(false);
      f.waiters = [];
    }
    await Promise.all([this.aligning, ...[...this.followed.values()].map((f) => f.pulling)]);
  }

  /** Reads every head now (the listening connection is back: notifications may have been lost). */
  pollNow(): void {
    if (!this.stopped) void this.pollHeads();
  }

  /** Each followed collection's changes not yet in the cache, as last seen. */
  lag(): Array<{ name: string; changes: number }> {
    return [...this.followed.values()].map((f) => ({ name: f.record.name, changes: Math.max(0, f.copy.head - f.copy.applied) }));
  }

  /** A notification from a write: the collection has new rows. */
  notified(payload: string): void {
    const id = Number(payload);
    if (Number.isSafeInteger(id)) this.pull(id);
  }

  /**
   * Reads the shared store's collections (run with every configuration read) and brings the cache
   * in line in the background: the index worker may be loading its indexes (or rebuilding one),
   * and the replica serves meanwhile, not ready for the collections it does not hold yet.
   */
  reconcile(): Promise<void> {
    return this.exclusive(async () => {
      const shared = await this.o.log.collections();
      this.listed = new Map(shared.map((c) => [c.id, c]));
      this.o.onCollections(shared);
      this.align();
    });
  }

  /** Adopts the new collections in the cache and drops the deleted ones; one run at a time. */
  private align(): void {
    if (this.aligning) {
      this.alignAgain = true;
      return;
    }
    this.aligning = (async () => {
      do {
        this.alignAgain = false;
        try {
          await this.alignOnce();
        } catch (err) {
          if (this.stopped) break;
          this.o.logger.warn({ err }, 'could not bring the vector cache in line with the database; trying again');
          await new Promise((resolve) => setTimeout(resolve, 200));
          this.alignAgain = true;
        }
      } while (this.alignAgain && !this.stopped);
      this.aligning = undefined;
    })();
  }

  private async alignOnce(): Promise<void> {
    // The cache first: a collection it holds was committed before, so the shared list has it.
    const cached = await this.cachedCollections();
    const shared = await this.o.log.collections();
    for (const c of cached) {
      if (!shared.some((s) => s.id === c.record.id)) {
        await this.o.worker.call('dropCollection', { collectionId: c.record.id });
        this.forget(c.record.id);
      }
    }
    for (const record of shared) {
      const f = this.followed.get(record.id);
      if (f) f.record = { ...record };
      else await this.adopt(record);
    }
  }

  /**
   * Runs `fn` alone among the changes to the set of collections (a reconcile, a create, a delete
   * through this replica), so that a reconcile never applies a list read before a change it follows.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.changing.then(fn, fn);
    this.changing = run.catch(() => undefined);
    return run;
  }

  /** Follows a collection made through this replica at once (the configuration catches up later). */
  async adopt(record: CollectionRecord): Promise<void> {
    if (this.followed.has(record.id)) return;
    const copy = await this.o.worker.call('adoptCollection', record);
    if (this.followed.has(record.id)) return;
    const applied = copy.appliedSeq;
    this.followed.set(record.id, {
      record: { ...record },
      copy: { applied, head: applied, catchingUp: true },
      target: Infinity,
      pulling: undefined,
      again: false,
      waiters: [],
    });
    this.pull(record.id);
  }

  /** Stops following a collection deleted through this replica. */
  forget(collectionId: number): void {
    const f = this.followed.get(collectionId);
    if (!f) return;
    this.followed.delete(collectionId);
    for (const w of f.waiters) w.resolve(false);
  }

  copyOf(collectionId: number): ReplicaCopy | undefined {
    const f = this.followed.get(collectionId);
    return f ? { ...f.copy } : undefined;
  }

  /** The collections this replica has not caught up with yet, with how far it is (none: not in its cache yet). */
  catchingUp(): Array<{ name: string; copy: ReplicaCopy | undefined }> {
    const out: Array<{ name: string; copy: ReplicaCopy | undefined }> = [];
    for (const c of this.listed.values()) {
      const f = this.followed.get(c.id);
      if (!f) out.push({ name: c.name, copy: undefined });
      else if (f.copy.catchingUp) out.push({ name: c.name, copy: { ...f.copy } });
    }
    return out;
  }

  /**
   * Waits until the cache holds every change the collection had committed when this was called:
   * answers the sequence number the read reflects. A 503 (Retry-After) past the bound.
   */
  async readable(record: CollectionRecord): Promise<number> {
    const deadline = Date.now() + this.o.readTimeoutMs;
    const head = await this.o.log.head(record.id);
    if (head === undefined) throw new ApiError('not_found', `no vector collection named "${record.name}"`, 'collection_name');
    let f = this.followed.get(record.id);
    // Not in the cache yet (the replica has just started, or the collection has just been made).
    while (!f && Date.now() < deadline && !this.stopped) {
      this.align();
      await Promise.race([this.aligning, new Promise((resolve) => setTimeout(resolve, Math.max(1, deadline - Date.now())).unref())]);
      f = this.followed.get(record.id);
    }
    if (!f) {
      throw new ApiError('unavailable', `this replica is still loading the vector collection "${record.name}"; retry, or read through another replica`, null, {
        'retry-after': String(RETRY_AFTER_S),
      });
    }
    if (head > f.copy.head) f.copy.head = head;
    if (f.copy.applied >= head) return f.copy.applied;
    this.pull(record.id);
    if (await this.reached(f, head, Math.max(1, deadline - Date.now()))) return f.copy.applied;
    throw new ApiError(
      'unavailable',
      `this replica's copy of the vector collection "${record.name}" is at change ${f.copy.applied} of ${head} and did not catch up within ${this.o.readTimeoutMs} ms (VECTOR_READ_TIMEOUT_MS); retry, or read through another replica`,
      null,
      { 'retry-after': String(RETRY_AFTER_S) },
    );
  }

  /** Resolves once every collection's cache has reached the head it has now (tests, benchmarks). */
  async caughtUp(): Promise<void> {
    const heads = await this.o.log.heads();
    await Promise.all(
      [...heads].map(async ([id, head]) => {
        const f = this.followed.get(id);
        if (!f || f.copy.applied >= head) return;
        this.pull(id);
        await this.reached(f, head, 60_000);
      }),
    );
  }

  private reached(f: Followed, seq: number, timeoutMs: number): Promise<boolean> {
    if (f.copy.applied >= seq) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { seq, resolve: (ok: boolean) => resolve(ok) };
      f.waiters.push(waiter);
      const timer = setTimeout(() => {
        f.waiters = f.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      timer.unref();
      const done = waiter.resolve;
      waiter.resolve = (ok) => {
        clearTimeout(timer);
        done(ok);
      };
    });
  }

  private async pollHeads(): Promise<void> {
    try {
      const purged = await this.o.log.purgeTombstones(Date.now() - this.o.tombstoneRetentionMs);
      if (purged > 0) this.o.logger.info({ tombstones: purged }, 'removed vector tombstones past VECTOR_TOMBSTONE_RETENTION_SECONDS');
      const heads = await this.o.log.heads();
      let changed = heads.size !== this.followed.size;
      for (const [id, head] of heads) {
        const f = this.followed.get(id);
        if (!f) {
          changed = true;
          continue;
        }
        if (head > f.copy.head) f.copy.head = head;
        if (head > f.copy.applied) this.pull(id);
      }
      // A collection made or dropped whose configuration change this replica has not read yet.
      if (changed) await this.reconcile();
    } catch (err) {
      this.o.logger.warn({ err }, 'could not read the vector collections from the database; trying again');
    }
  }

  /** Pulls the collection's new rows now; one pull at a time, and one more if asked meanwhile. */
  private pull(collectionId: number): void {
    const f = this.followed.get(collectionId);
    if (!f || this.stopped) return;
    if (f.pulling) {
      f.again = true;
      return;
    }
    f.pulling = (async () => {
      do {
        f.again = false;
        try {
          await this.pullAll(f);
        } catch (err) {
          this.stale = true;
          if (!this.stopped && this.followed.get(collectionId) === f) {
            this.o.logger.warn({ err, collection: f.record.name }, 'could not bring the vector collection up to date; trying again');
            await new Promise((resolve) => setTimeout(resolve, 200));
            f.again = true;
          }
        }
      } while (f.again && !this.stopped && this.followed.get(collectionId) === f);
      f.pulling = undefined;
    })();
  }

  private async pullAll(f: Followed): Promise<void> {
    if (this.stale) await this.refreshApplied();
    for (;;) {
      const page = await this.o.log.pull(f.record.id, f.copy.applied, PAGE_ROWS);
      if (!page) return; // deleted: the next configuration read drops it
      if (f.copy.applied > 0 && f.copy.applied < page.purged) {
        // Deletes this copy has not applied are gone from the database with their tombstones: the
        // copy cannot tell which of its vectors were deleted, so it starts again from nothing.
        this.o.logger.warn(
          { collection: f.record.name, applied: f.copy.applied, purged: page.purged },
          "this replica's copy of the vector collection is older than the tombstones kept (VECTOR_TOMBSTONE_RETENTION_SECONDS); copying it again",
        );
        await this.o.worker.call('dropCollection', { collectionId: f.record.id });
        const copy = await this.o.worker.call('adoptCollection', f.record);
        f.copy = { applied: copy.appliedSeq, head: page.head, catchingUp: true };
        f.target = page.head;
        continue;
      }
      if (f.target === Infinity) f.target = page.head;
      if (page.head > f.copy.head) f.copy.head = page.head;
      const full = page.rows.length === PAGE_ROWS;
      // A full page may stop short of the head: the cache is then at its last row.
      const through = full ? page.rows.at(-1)!.seq : page.head;
      if (through > f.copy.applied) {
        const batch = toBatch(f.record, page, through);
        const { appliedSeq } = await this.o.worker.call('applyLog', batch, [batch.values.buffer as ArrayBuffer]);
        f.copy.applied = appliedSeq;
      }
      if (f.copy.catchingUp && f.copy.applied >= f.target) {
        f.copy.catchingUp = false;
        this.o.logger.info({ collection: f.record.name, seq: f.copy.applied }, 'vector collection caught up');
      }
      const waiting = f.waiters;
      f.waiters = [];
      for (const w of waiting) {
        if (f.copy.applied >= w.seq) w.resolve(true);
        else f.waiters.push(w);
      }
      if (!full) return;
    }
  }

  /** Reads what the cache has applied (after a failure the worker may have restarted from disk). */
  private async refreshApplied(): Promise<void> {
    const cached = await this.cachedCollections();
    for (const c of cached) {
      const f = this.followed.get(c.record.id);
      if (f) f.copy.applied = c.appliedSeq;
    }
    this.stale = false;
  }

  private cachedCollections(): Promise<CachedCollection[]> {
    return this.o.worker.call('cachedCollections', {});
  }
}

/** A page of rows as the worker applies them: the live rows' values packed into one array. */
function toBatch(record: CollectionRecord, page: LogPage, through: number): LogBatch {
  const dim = record.dimension;
  const rows = page.rows;
  const live = rows.reduce((n, r) => n + (r.vec ? 1 : 0), 0);
  const values = new Float32Array(live * dim);
  const bytes = new Uint8Array(values.buffer);
  const batch: LogBatch = { collectionId: record.id, through, tenants: [], ids: [], seqs: [], deleted: [], values, properties: [] };
  let row = 0;
  for (const r of rows) {
    batch.tenants.push(r.tenant);
    batch.ids.push(r.id);
    batch.seqs.push(r.seq);
    batch.deleted.push(r.vec === null);
    batch.properties.push(r.properties ?? '');
    if (r.vec) {
      if (r.vec.byteLength !== dim * 4) throw new Error(`vector "${r.id}" of "${record.name}" has ${r.vec.byteLength} bytes in the database; expected ${dim * 4}`);
      bytes.set(r.vec, row * dim * 4);
      row++;
    }
  }
  return batch;
}
