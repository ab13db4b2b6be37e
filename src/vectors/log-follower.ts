// A replica's copy of the shared vector store (PostgreSQL, shared-log.ts), kept current. The copy
// is the index worker's cache (a SQLite file and HNSW graphs with their checkpoints, in DATA_DIR);
// this class, on the main thread, decides what to read and hands the rows to the worker:
//   - collections come with the configuration (ConfigSync reads them on every change: `reconcile`);
//   - a collection's rows past the sequence number the cache has applied are pulled in pages,
//     woken by the notification every write sends and by a jittered timer that reads the heads,
//     never by notifications alone;
//   - a read waits (with a bound) until the cache has reached the head the collection had when
//     the read arrived, so that every acknowledged write is seen on every replica.
// A collection the replica has not caught up with yet is "catching up" (the collection's own answer
// says so); the replica is not ready (/readyz) until it has caught up with the collections it found
// when it started. One made later, or copied again, only answers 503 to reads until it has.
import type { FastifyBaseLogger } from 'fastify';
import { ApiError } from '../errors.js';
import type { LogPage, SharedVectorLog } from './shared-log.js';
import type { CachedCollection, CollectionRecord, LogBatch, WorkerOps } from './types.js';
import type { WorkerClient } from './worker-client.js';

/** Bytes of vectors in one pull (at most PAGE_ROWS rows): 2000 rows of 768 dimensions. */
const PAGE_BYTES = 6 * 1024 * 1024;
const PAGE_ROWS = 2000;

/** Seconds a client is told to wait when a read timed out behind a catch-up. */
const RETRY_AFTER_S = 1;

/** Tombstones are purged on every this many reads of the heads. */
const PURGE_EVERY_POLLS = 10;

export interface FollowerOptions {
  log: SharedVectorLog;
  worker: WorkerClient<WorkerOps>;
  /** Mean time between reads of every collection's head; each wait is drawn from 0.75 to 1.25 times it. */
  pollMs: number;
  /** Longest a read waits for the cache to reach the collection's head. */
  readTimeoutMs: number;
  /** Tombstones older than this are removed from the shared store (every PURGE_EVERY_POLLS polls). */
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
  /** True until the cache first reached the head it saw when it started copying the collection. */
  catchingUp: boolean;
}

interface Followed {
  record: CollectionRecord;
  copy: ReplicaCopy;
  /** The head to reach before the collection is caught up. */
  target: number;
  /**
   * Tombstones at or below this do not concern the copy: for one started from nothing, the head
   * when it started (a vector deleted by then was never in it); otherwise 0.
   */
  floor: number;
  pulling: Promise<void> | undefined;
  again: boolean;
  waiters: Array<{ seq: number; resolve: (reached: boolean) => void }>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

export class LogFollower {
  private readonly followed = new Map<number, Followed>();
  private timer: NodeJS.Timeout | undefined;
  private polls = 0;
  private stopped = false;
  /** Set after a failed apply: the worker may have restarted, so read its applied numbers again. */
  private stale = true;
  private changing: Promise<unknown> = Promise.resolve();
  /** The shared store's collections as last read. */
  private listed = new Map<number, CollectionRecord>();
  /** The collections found at start-up that the replica has not caught up with yet (/readyz). */
  private gating: Set<number> | undefined;
  private aligning: Promise<void> | undefined;
  private alignAgain = false;

  constructor(private readonly o: FollowerOptions) {}

  /** Starts the timer that reads every head (reconcile has been called by the first snapshot). */
  start(): void {
    const tick = () => {
      const wait = this.o.pollMs * (0.75 + Math.random() / 2);
      this.timer = setTimeout(() => {
        void this.poll().finally(() => {
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

  /** Each followed collection's copy: the change applied and the newest seen (the replica's report). */
  copies(): Array<{ name: string; applied: number; head: number }> {
    return [...this.followed.values()].map((f) => ({ name: f.record.name, applied: f.copy.applied, head: Math.max(f.copy.head, f.copy.applied) }));
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
      this.gating ??= new Set(shared.map((c) => c.id));
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
          await sleep(200);
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
    const ids = new Set(shared.map((c) => c.id));
    for (const c of cached) {
      if (!ids.has(c.record.id)) await this.o.worker.call('dropCollection', { collectionId: c.record.id });
    }
    // Followed but gone (dropped, or made and dropped again while it was being adopted).
    for (const id of [...this.followed.keys()]) if (!ids.has(id)) this.forget(id);
    for (const record of shared) {
      const f = this.followed.get(record.id);
      if (f) f.record = { ...record };
      else await this.adopt(record);
    }
  }

  /**
   * Runs `fn` alone among the changes to the set of collections (a reconcile, and the local part of
   * a create, an import or a delete through this replica), so that a reconcile never applies a list
   * read before a change it follows. Nothing slow runs inside: the database writes come before.
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
      floor: 0,
      pulling: undefined,
      again: false,
      waiters: [],
    });
    this.pull(record.id);
  }

  /** Stops following a deleted collection; reads waiting on it are answered 404. */
  forget(collectionId: number): void {
    const f = this.followed.get(collectionId);
    if (!f) return;
    this.followed.delete(collectionId);
    this.gating?.delete(collectionId);
    for (const w of f.waiters) w.resolve(false);
  }

  copyOf(collectionId: number): ReplicaCopy | undefined {
    const f = this.followed.get(collectionId);
    return f ? { ...f.copy } : undefined;
  }

  /**
   * The collections found at start-up that this replica has not caught up with yet, with how far
   * it is (none: not in its cache yet). It is not ready (/readyz) while there are any.
   */
  catchingUp(): Array<{ name: string; copy: ReplicaCopy | undefined }> {
    const out: Array<{ name: string; copy: ReplicaCopy | undefined }> = [];
    for (const id of this.gating ?? []) {
      const c = this.listed.get(id);
      const f = this.followed.get(id);
      if (!c) continue;
      if (!f) out.push({ name: c.name, copy: undefined });
      else if (f.copy.catchingUp) out.push({ name: c.name, copy: { ...f.copy } });
      else this.gating!.delete(id);
    }
    return out;
  }

  /**
   * Waits until the cache holds every change the collection had committed when this was called:
   * answers the sequence number the read reflects. A 503 (Retry-After) past the bound.
   */
  async readable(record: CollectionRecord): Promise<number> {
    const deadline = Date.now() + this.o.readTimeoutMs;
    const left = () => Math.max(1, deadline - Date.now());
    const timedOut = () =>
      new ApiError(
        'unavailable',
        `this replica's copy of the vector collection "${record.name}" did not catch up within ${this.o.readTimeoutMs} ms (VECTOR_READ_TIMEOUT_MS); retry, or read through another replica`,
        null,
        { 'retry-after': String(RETRY_AFTER_S) },
      );
    const gone = () => new ApiError('not_found', `no vector collection named "${record.name}"`, 'collection_name');
    // Bounded too: a pool with every connection busy, or a database in a failover, does not hold it.
    const headNow = async () => {
      const head = await Promise.race([this.o.log.head(record.id), sleep(left()).then(() => 'late' as const)]);
      if (head === 'late') throw timedOut();
      if (head === undefined) throw gone();
      return head;
    };
    const head = await headNow();
    let f = this.followed.get(record.id);
    // Not in the cache yet (the replica has just started, or the collection has just been made).
    while (!f) {
      if (this.stopped) throw new ApiError('unavailable', 'the server is shutting down');
      if (Date.now() >= deadline) {
        throw new ApiError('unavailable', `this replica is still loading the vector collection "${record.name}"; retry, or read through another replica`, null, {
          'retry-after': String(RETRY_AFTER_S),
        });
      }
      this.align();
      await Promise.race([this.aligning, sleep(left())]);
      await sleep(Math.min(50, left()));
      await headNow();
      f = this.followed.get(record.id);
    }
    if (head > f.copy.head) f.copy.head = head;
    if (f.copy.applied >= head) return f.copy.applied;
    this.pull(record.id);
    if (await this.reached(f, head, left())) return f.copy.applied;
    if (this.stopped) throw new ApiError('unavailable', 'the server is shutting down');
    if (this.followed.get(record.id) !== f) throw gone();
    throw timedOut();
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

  private async poll(): Promise<void> {
    if (++this.polls % PURGE_EVERY_POLLS === 0) {
      try {
        const purged = await this.o.log.purgeTombstones(Date.now() - this.o.tombstoneRetentionMs);
        if (purged > 0) this.o.logger.info({ tombstones: purged }, 'removed vector tombstones past VECTOR_TOMBSTONE_RETENTION_SECONDS');
      } catch (err) {
        this.o.logger.warn({ err }, 'could not remove old vector tombstones; trying again later');
      }
    }
    await this.pollHeads();
  }

  private async pollHeads(): Promise<void> {
    try {
      const heads = await this.o.log.heads();
      let changed = heads.size !== this.followed.size;
      for (const [id, head] of heads) {
        const f = this.followed.get(id);
        if (!f) {
          changed = true;
          continue;
        }
        if (head > f.copy.head) f.copy.head = head;
        if (head !== f.copy.applied) this.pull(id);
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
          if (this.isCurrent(f)) {
            this.o.logger.warn({ err, collection: f.record.name }, 'could not bring the vector collection up to date; trying again');
            await sleep(200);
            f.again = true;
          }
        }
      } while (f.again && this.isCurrent(f));
      f.pulling = undefined;
    })();
  }

  private isCurrent(f: Followed): boolean {
    return !this.stopped && this.followed.get(f.record.id) === f;
  }

  private async pullAll(f: Followed): Promise<void> {
    if (this.stale) await this.refreshApplied();
    const pageRows = Math.max(1, Math.min(PAGE_ROWS, Math.floor(PAGE_BYTES / (f.record.dimension * 4))));
    while (this.isCurrent(f)) {
      const page = await this.o.log.pull(f.record.id, f.copy.applied, pageRows);
      if (!page || !this.isCurrent(f)) return; // deleted: the next configuration read drops it
      if (f.copy.applied === 0) f.floor = page.head;
      const behindPurge = page.purged > Math.max(f.copy.applied, f.floor);
      // A database restored from a backup under the same identity: it is behind this copy.
      const aheadOfDatabase = page.head < f.copy.applied;
      if (f.copy.applied > 0 && (behindPurge || aheadOfDatabase)) {
        // Deletes this copy has not applied are gone with their tombstones (or the database went
        // back in time): the copy cannot tell which of its vectors are stale, so it starts again.
        this.o.logger.warn(
          { collection: f.record.name, applied: f.copy.applied, purged: page.purged, head: page.head },
          behindPurge
            ? "this replica's copy of the vector collection is older than the tombstones kept (VECTOR_TOMBSTONE_RETENTION_SECONDS); copying it again"
            : "the database's vector collection is behind this replica's copy (restored from a backup?); copying it again",
        );
        // Reads stop trusting the copy before it is dropped.
        f.copy = { applied: 0, head: page.head, catchingUp: true };
        f.target = Infinity;
        f.floor = 0;
        await this.o.worker.call('dropCollection', { collectionId: f.record.id });
        if (!this.isCurrent(f)) return;
        await this.o.worker.call('adoptCollection', f.record);
        continue;
      }
      if (f.target === Infinity) f.target = page.head;
      if (page.head > f.copy.head) f.copy.head = page.head;
      const full = page.rows.length === pageRows;
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
      // A replica copying a large collection holds a bounded amount of it in memory: the next
      // page waits until the graph work queued is back under VECTOR_MAX_BACKLOG_FLOATS.
      await this.o.worker.call('room', {});
    }
  }

  /** Reads what the cache has applied (after a failure the worker may have restarted from disk). */
  private async refreshApplied(): Promise<void> {
    const cached = new Map((await this.cachedCollections()).map((c) => [c.record.id, c]));
    for (const f of this.followed.values()) {
      const c = cached.get(f.record.id);
      if (c) f.copy.applied = c.appliedSeq;
      else {
        // Lost from the cache (the worker died between a drop and an adopt): copied again.
        await this.o.worker.call('adoptCollection', f.record);
        f.copy = { applied: 0, head: f.copy.head, catchingUp: true };
        f.target = Infinity;
        f.floor = 0;
      }
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
