// The vector store's index (collections, writes, reads, graph work), run inside the index worker (index-worker.ts) so that SQLite's bulk
// writes and hnswlib's synchronous graph work never hold up the host's event loop.
//
// Writes: one SQLite transaction per request (synchronous FULL, so the commit is durable), then
// the answer, then the graph changes, queued per partition and applied in slices of a few
// milliseconds between incoming messages. A search never waits for them: it asks the graph for
// what it holds and scans the points still queued for its partition exactly (partition.ts), so a
// client always sees its acknowledged writes at once. If the queue would take longer than
// maxBacklogSeconds to drain (at the measured graph insert rate) or holds more than
// maxBacklogFloats, upserts are answered only once it shrinks.
// A delete by filter is a delete of the ids that match; an import is a collection and all its
// rows in one transaction. Count and scroll read the committed state (SQLite and the properties
// held in memory), so they need not wait for the graph.
//
// Checkpoints: a partition's graph is written (checkpoint.ts) after checkpointChanges changes or
// checkpointIdleMs without writes, on close, and after a load that had to replay or rebuild.
// Loading (checkpoint plus replay, or a rebuild) is recovery.ts; the SQL is tables.ts.
import fs from 'node:fs';
import type Database from 'better-sqlite3';
import { collectionDir, partitionIdentity, removeCheckpoint, writeCheckpoint } from './checkpoint.js';
import { compileFilter } from './filter.js';
import { Partition, type ApplyJob } from './partition.js';
import { recoverCollections, type CollectionState } from './recovery.js';
import { blobToFloats, collectionFromRow, type CollectionRow } from './rows.js';
import { openWorkerDatabase, prepareStatements, type VectorStatements } from './tables.js';
import {
  VectorStoreError,
  type CachedCollection,
  type CollectionGauges,
  type CollectionRecord,
  type CountRequest,
  type Filter,
  type ImportBatch,
  type IndexStats,
  type LogBatch,
  type LogFn,
  type NewCollection,
  type Properties,
  type SampledVector,
  type SampleRequest,
  type ScrollRequest,
  type ScrollResult,
  type SearchRequest,
  type SearchResult,
  type UpsertBatch,
  type VectorKey,
  type WorkerSettings,
} from './types.js';

/** Longest stretch of graph work between two looks at the message queue. */
const SLICE_MS = 8;

/** Most ids one scroll call reads (and filters) before it answers with what it found. */
export const SCROLL_SCAN_MAX = 10_000;

/** The vectors of an apply job that only deletes. */
const NO_VALUES = new Float32Array(0);

export class VectorIndex {
  private readonly db: Database.Database;
  private readonly collections = new Map<number, CollectionState>();
  private readonly busy = new Set<Partition>();
  private pumpScheduled = false;
  private waiters: Array<{ ready: () => boolean; resolve: () => void }> = [];
  private closed = false;
  private readonly sql: VectorStatements;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly log: LogFn,
    /** Told when graph work starts and stops (the index worker lowers its priority meanwhile). */
    private readonly setBulk: (bulk: boolean) => void = () => undefined,
  ) {
    this.db = openWorkerDatabase(settings.dbPath);
    this.sql = prepareStatements(this.db);
  }

  /**
   * Loads every collection's partitions (recovery.ts): a checkpoint, or an empty graph, with the
   * rows it lacks queued as graph work like any write's, so that searches answer meanwhile.
   */
  load(): void {
    recoverCollections({ settings: this.settings, sql: this.sql, log: this.log, checkpoint: (p) => this.checkpoint(p) }, this.collections);
    for (const c of this.collections.values()) {
      for (const p of c.partitions.values()) if (p.backlog.length > 0) this.busy.add(p);
    }
    this.schedulePump();
  }

  // ---- collections ----

  createCollection(spec: NewCollection): CollectionRecord {
    const record = this.insertCollection(spec);
    // A directory left by an earlier collection with this id cannot exist (ids are never reused),
    // but a stray one from a crash during a delete is removed here all the same.
    fs.rmSync(collectionDir(this.settings.indexDir, record.id), { recursive: true, force: true });
    this.collections.set(record.id, { record, partitions: new Map(), lastSeq: 0 });
    return record;
  }

  private insertCollection(spec: NewCollection): CollectionRecord {
    try {
      const row = this.sql.insertCollection.get(
        spec.name,
        spec.dimension,
        spec.metric,
        spec.description,
        spec.multiTenant ? 1 : 0,
        spec.hnsw.m,
        spec.hnsw.efConstruction,
        spec.hnsw.ef,
        Date.now(),
      ) as CollectionRow;
      return collectionFromRow(row);
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw new VectorStoreError('conflict', `a vector collection named "${spec.name}" already exists`, 'name');
      }
      throw err;
    }
  }

  dropCollection(collectionId: number): { removed: boolean } {
    const c = this.collections.get(collectionId);
    if (!c) return { removed: false };
    this.collections.delete(collectionId);
    for (const p of c.partitions.values()) {
      clearTimeout(p.idleTimer);
      this.busy.delete(p);
      p.backlog.length = 0;
    }
    this.db.transaction(() => {
      this.sql.dropVectors.run(collectionId);
      this.sql.dropCollection.run(collectionId);
    })();
    fs.rmSync(collectionDir(this.settings.indexDir, collectionId), { recursive: true, force: true });
    this.checkWaiters();
    return { removed: true };
  }

  private collection(collectionId: number): CollectionState {
    const c = this.collections.get(collectionId);
    if (!c) throw new VectorStoreError('not_found', `the vector collection was deleted while this request was on its way (id ${collectionId})`, 'collection_name');
    return c;
  }

  private partitionFor(c: CollectionState, tenant: string): Partition {
    let p = c.partitions.get(tenant);
    if (!p) {
      const r = c.record;
      p = new Partition(r.id, tenant, r.metric, r.dimension, r.hnsw);
      c.partitions.set(tenant, p);
    }
    return p;
  }

  // ---- writes ----

  upsert(batch: UpsertBatch): Promise<{ numAffected: number }> | { numAffected: number } {
    const c = this.collection(batch.collectionId);
    const written = this.db.transaction(() => this.writeRows(c, batch))();
    this.afterWrite(c, batch, written);
    return this.whenBacklogAllows({ numAffected: batch.ids.length });
  }

  /**
   * A whole collection in one transaction (an import): it exists with all its vectors, or, if
   * anything fails, not at all.
   */
  importCollection(batch: ImportBatch): CollectionRecord | Promise<CollectionRecord> {
    let state!: CollectionState;
    const written = this.db.transaction(() => {
      state = { record: this.insertCollection(batch.collection), partitions: new Map(), lastSeq: 0 };
      return this.writeRows(state, batch);
    })();
    fs.rmSync(collectionDir(this.settings.indexDir, state.record.id), { recursive: true, force: true });
    this.collections.set(state.record.id, state);
    this.afterWrite(state, batch, written);
    return this.whenBacklogAllows({ ...state.record });
  }

  /** The SQL of a write (inside the caller's transaction): a label for each row, the count of new ids. */
  private writeRows(c: CollectionState, batch: Omit<UpsertBatch, 'collectionId'>) {
    const dim = c.record.dimension;
    const n = batch.ids.length;
    if (batch.values.length !== n * dim) throw new VectorStoreError('invalid_argument', 'values do not match the batch', 'vector');
    const labels = new Array<number>(n);
    const parts = new Array<Partition>(n);
    let seq = c.lastSeq;
    let added = 0;
    const bytes = Buffer.from(batch.values.buffer, batch.values.byteOffset, batch.values.byteLength);
    for (let i = 0; i < n; i++) {
      const p = this.partitionFor(c, batch.tenants[i]!);
      const id = batch.ids[i]!;
      parts[i] = p;
      labels[i] = p.nextLabel++;
      if (!p.idToLabel.has(id)) added++;
      this.sql.upsert.run(c.record.id, p.tenant, id, labels[i], ++seq, bytes.subarray(i * dim * 4, (i + 1) * dim * 4), JSON.stringify(batch.properties[i] ?? {}));
    }
    this.sql.updateSeqAndCount.run(seq, added, c.record.id);
    return { labels, parts, added, seq };
  }

  /** Once a write is committed: the in-memory state follows, then the graph work is queued. */
  private afterWrite(c: CollectionState, batch: Omit<UpsertBatch, 'collectionId'>, written: ReturnType<VectorIndex['writeRows']>): void {
    const { labels, parts, added, seq } = written;
    const firstSeq = c.lastSeq + 1;
    c.lastSeq = seq;
    c.record.vectorCount += added;
    const jobs = new Map<Partition, ApplyJob>();
    for (let i = 0; i < batch.ids.length; i++) {
      const p = parts[i]!;
      const job = applyJobFor(jobs, p, batch.values);
      const old = p.idToLabel.get(batch.ids[i]!);
      if (old !== undefined) {
        job.deletes.push(old);
        job.replaces++;
      }
      p.commitPut(batch.ids[i]!, labels[i]!, batch.properties[i] ?? {});
      job.labels.push(labels[i]!);
      job.rows.push(i);
      job.seq = firstSeq + i;
    }
    for (const [p, job] of jobs) this.enqueue(p, job, job.labels.length * c.record.dimension);
  }

  /**
   * Answers a write at once, or once the graph backlog is back under its bounds: at most
   * maxBacklogSeconds of graph work at the measured insert rate, and at most maxBacklogFloats.
   */
  private whenBacklogAllows<T>(result: T): T | Promise<T> {
    if (this.backlogAllows()) return result;
    return new Promise((resolve) => this.waiters.push({ ready: () => this.backlogAllows(), resolve: () => resolve(result) }));
  }

  private backlogAllows(): boolean {
    if (this.backlogFloats() > this.settings.maxBacklogFloats) return false;
    const bound = this.settings.maxBacklogSeconds;
    return bound === undefined || this.backlogSeconds() <= bound;
  }

  delete(collectionId: number, keys: VectorKey[]): { numDeleted: number } {
    const c = this.collection(collectionId);
    const removed: Array<{ p: Partition; id: string }> = [];
    this.db.transaction(() => {
      const seen = new Set<string>();
      for (const { tenant, id } of keys) {
        const p = c.partitions.get(tenant);
        const key = `${tenant}\u0000${id}`;
        if (!p || seen.has(key) || !p.idToLabel.has(id)) continue;
        seen.add(key);
        if (this.sql.deleteVector.run(c.record.id, tenant, id).changes > 0) removed.push({ p, id });
      }
      if (removed.length > 0) this.sql.updateSeqAndCount.run(c.lastSeq, -removed.length, c.record.id);
    })();
    c.record.vectorCount -= removed.length;
    const jobs = new Map<Partition, ApplyJob>();
    for (const { p, id } of removed) {
      const label = p.commitDelete(id);
      if (label === undefined) continue;
      applyJobFor(jobs, p, NO_VALUES).deletes.push(label);
    }
    for (const [p, job] of jobs) this.enqueue(p, job, 0);
    return { numDeleted: removed.length };
  }

  /** Deletes the tenant's vectors whose properties match: the same transaction and graph work as delete. */
  deleteWhere(collectionId: number, tenant: string, filter: Filter): { numDeleted: number } {
    const c = this.collection(collectionId);
    const p = c.partitions.get(tenant);
    if (!p) return { numDeleted: 0 };
    const keys = p.labelsWhere(compileFilter(filter)).map((label) => ({ tenant, id: p.labelToId.get(label)! }));
    return this.delete(collectionId, keys);
  }

  private enqueue(p: Partition, job: ApplyJob, floats: number): void {
    p.backlog.push(job);
    p.backlogFloats += floats;
    p.unsavedSince ??= job.queuedAt;
    clearTimeout(p.idleTimer);
    this.busy.add(p);
    this.schedulePump();
  }

  private backlogFloats(): number {
    let total = 0;
    for (const p of this.busy) total += p.backlogFloats;
    return total;
  }

  /**
   * How long the queued graph work would take at the measured insert rates (a partition not
   * measured yet counts at the mean of those that are; 0 before any is). One thread applies every
   * partition's work, so the times add up.
   */
  private backlogSeconds(partitions: Iterable<Partition> = this.busy): number {
    let measured = 0;
    let sum = 0;
    for (const c of this.collections.values()) {
      for (const p of c.partitions.values()) {
        if (p.insertSeconds !== undefined) {
          measured++;
          sum += p.insertSeconds;
        }
      }
    }
    if (measured === 0) return 0;
    const mean = sum / measured;
    let total = 0;
    for (const p of partitions) total += p.pendingPoints * (p.insertSeconds ?? mean);
    return total;
  }

  // ---- a replica's cache of the shared store (PostgreSQL: shared-log.ts, log-follower.ts) ----
  // The cache's writes come only from the shared store: a collection under the shared store's id,
  // then its rows past the sequence number applied, through the same SQL and graph work as an
  // upsert or a delete, with the shared store's sequence numbers.

  cachedCollections(): CachedCollection[] {
    return [...this.collections.values()].map((c) => ({ record: { ...c.record }, appliedSeq: c.lastSeq }));
  }

  /** Holds the collection in the cache: kept when it is the same one, otherwise made afresh. */
  adoptCollection(record: CollectionRecord): CachedCollection {
    const have = this.collections.get(record.id);
    if (have && sameCollection(have.record, record)) return { record: { ...have.record }, appliedSeq: have.lastSeq };
    if (have) this.dropCollection(record.id);
    // A cached collection of that name under another id was dropped and made again meanwhile.
    for (const c of [...this.collections.values()]) if (c.record.name === record.name) this.dropCollection(c.record.id);
    const row = this.sql.insertCollectionWithId.get(
      record.id,
      record.name,
      record.dimension,
      record.metric,
      record.description,
      record.multiTenant ? 1 : 0,
      record.hnsw.m,
      record.hnsw.efConstruction,
      record.hnsw.ef,
      record.createdAt,
    ) as CollectionRow;
    fs.rmSync(collectionDir(this.settings.indexDir, record.id), { recursive: true, force: true });
    const state: CollectionState = { record: collectionFromRow(row), partitions: new Map(), lastSeq: 0 };
    this.collections.set(record.id, state);
    return { record: { ...state.record }, appliedSeq: 0 };
  }

  /** Applies rows of the shared store in one transaction, then queues their graph work. */
  applyLog(b: LogBatch): { appliedSeq: number } {
    const c = this.collection(b.collectionId);
    const dim = c.record.dimension;
    const n = b.ids.length;
    const liveRows = b.deleted.reduce((k, d) => k + (d ? 0 : 1), 0);
    if (b.values.length !== liveRows * dim) throw new VectorStoreError('invalid_argument', 'values do not match the batch', 'vector');
    const puts: Array<{ p: Partition; id: string; label: number; row: number; seq: number; properties: Properties }> = [];
    const removed: Array<{ p: Partition; id: string }> = [];
    const bytes = Buffer.from(b.values.buffer, b.values.byteOffset, b.values.byteLength);
    this.db.transaction(() => {
      let row = 0;
      let added = 0;
      for (let i = 0; i < n; i++) {
        const tenant = b.tenants[i]!;
        const id = b.ids[i]!;
        if (b.deleted[i]) {
          const p = c.partitions.get(tenant);
          if (p?.idToLabel.has(id) && this.sql.deleteVector.run(c.record.id, tenant, id).changes > 0) removed.push({ p, id });
          continue;
        }
        const p = this.partitionFor(c, tenant);
        const label = p.nextLabel++;
        if (!p.idToLabel.has(id)) added++;
        this.sql.upsert.run(c.record.id, tenant, id, label, b.seqs[i]!, bytes.subarray(row * dim * 4, (row + 1) * dim * 4), b.properties[i]!);
        puts.push({ p, id, label, row, seq: b.seqs[i]!, properties: JSON.parse(b.properties[i]!) as Properties });
        row++;
      }
      this.sql.setSeqAndCount.run(b.through, added - removed.length, c.record.id);
      c.record.vectorCount += added - removed.length;
    })();
    c.lastSeq = b.through;
    const jobs = new Map<Partition, ApplyJob>();
    for (const put of puts) {
      const job = applyJobFor(jobs, put.p, b.values);
      const old = put.p.idToLabel.get(put.id);
      if (old !== undefined) {
        job.deletes.push(old);
        job.replaces++;
      }
      put.p.commitPut(put.id, put.label, put.properties);
      job.labels.push(put.label);
      job.rows.push(put.row);
      if (put.seq > job.seq) job.seq = put.seq;
    }
    for (const { p, id } of removed) {
      const label = p.commitDelete(id);
      if (label !== undefined) applyJobFor(jobs, p, NO_VALUES).deletes.push(label);
    }
    for (const [p, job] of jobs) this.enqueue(p, job, job.labels.length * dim);
    // Answered at once: searches scan what the graph does not hold yet (Partition.search). The
    // follower asks for `room` before it pulls a next page.
    return { appliedSeq: c.lastSeq };
  }

  /** Resolves once the queued graph work is under maxBacklogFloats (the follower's next page waits for it). */
  room(): Record<string, never> | Promise<Record<string, never>> {
    return this.whenBacklogAllows({});
  }

  /** The ids of a tenant's vectors whose properties match, and the sequence number of the copy read. */
  idsWhere(collectionId: number, tenant: string, filter: Filter): { ids: string[]; asOf: number } {
    const c = this.collection(collectionId);
    const p = c.partitions.get(tenant);
    if (!p) return { ids: [], asOf: c.lastSeq };
    return { ids: p.labelsWhere(compileFilter(filter)).map((label) => p.labelToId.get(label)!), asOf: c.lastSeq };
  }

  // ---- reads ----

  /**
   * Answered at once, never behind the partition's queued graph work: the graph answers for the
   * points it holds and the queued points are scanned exactly and merged (Partition.search), so
   * every acknowledged write is reflected.
   */
  search(req: SearchRequest): SearchResult {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return { hits: [], strategy: 'empty', unindexed: 0 };
    const found = p.search(req.query, req.k, req.filter, this.settings.exactScanMax);
    const hits = found.labels.map((label, i) => {
      const id = p.labelToId.get(label)!;
      const hit: SearchResult['hits'][number] = { id, distance: found.distances[i]! };
      if (req.includeVector) hit.values = blobToFloats(this.sql.vec.get(c.record.id, p.tenant, id) as Buffer);
      if (req.properties) hit.properties = project(p.props.get(label)!, req.properties);
      return hit;
    });
    return { hits, strategy: found.strategy, unindexed: found.unindexed };
  }

  sample(req: SampleRequest): SampledVector[] {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return [];
    return p.sampleLabels(req.count).map((label) => {
      const id = p.labelToId.get(label)!;
      const out: SampledVector = { id, properties: p.props.get(label)! };
      if (req.includeVector) out.values = blobToFloats(this.sql.vec.get(c.record.id, p.tenant, id) as Buffer);
      return out;
    });
  }

  /** Counts the committed vectors of a tenant (SQLite's state, which the graph may still be catching up with). */
  count(req: CountRequest): { count: number } {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return { count: 0 };
    if (!req.filter) return { count: p.size };
    return { count: p.labelsWhere(compileFilter(req.filter)).length };
  }

  /**
   * One page of a tenant's vectors in id order, after `req.after`. Ids are read from the primary
   * key in chunks (no statement stays open between messages) and filtered on the properties held
   * in memory, so that only the vectors returned are read in full. `more` looks one match ahead.
   * One call scans at most SCROLL_SCAN_MAX ids, so that a sparse filter over a large partition
   * never holds the worker (and the graph work behind it) for long: when the budget runs out
   * first, the page is returned as it is (short, even empty) with `resumeAfter`, the last id
   * scanned, and `more` set, and the client's next call carries on from there.
   */
  scroll(req: ScrollRequest): ScrollResult {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return { vectors: [], more: false };
    const match = req.filter ? compileFilter(req.filter) : undefined;
    const ids: string[] = [];
    let after = req.after ?? '';
    let more = false;
    let resumeAfter: string | undefined;
    let scanned = 0;
    scan: for (;;) {
      const chunk = Math.min(Math.max(1024, req.limit + 1), SCROLL_SCAN_MAX - scanned);
      if (chunk <= 0) {
        more = true;
        resumeAfter = after;
        break;
      }
      const page = this.sql.idsAfter.all(c.record.id, p.tenant, after, chunk) as string[];
      scanned += page.length;
      for (const id of page) {
        const label = p.idToLabel.get(id);
        if (label === undefined || (match && !match(p.props.get(label)!))) continue;
        if (ids.length === req.limit) {
          more = true;
          break scan;
        }
        ids.push(id);
      }
      if (page.length < chunk) break;
      after = page[page.length - 1]!;
    }
    const vectors = ids.map((id) => {
      const props = p.props.get(p.idToLabel.get(id)!)!;
      const out: SampledVector = { id, properties: req.properties ? project(props, req.properties) : props };
      if (req.includeVector) out.values = blobToFloats(this.sql.vec.get(c.record.id, p.tenant, id) as Buffer);
      return out;
    });
    return { vectors, more, ...(resumeAfter !== undefined ? { resumeAfter } : {}) };
  }

  stats(collectionId: number): IndexStats {
    const c = this.collection(collectionId);
    const stats: IndexStats = { tenants: 0, indexed: 0, tombstones: 0, pending: 0, compacting: false };
    for (const p of c.partitions.values()) {
      if (p.size > 0) stats.tenants++;
      stats.indexed += p.indexLive;
      stats.tombstones += p.tombstones;
      stats.pending += p.pendingChanges;
      stats.compacting ||= p.compaction !== undefined;
    }
    return stats;
  }

  /** Index lag and checkpoint age of every collection, for /metrics. */
  gauges(): CollectionGauges[] {
    const now = Date.now();
    return [...this.collections.values()].map((c) => {
      let oldest = now;
      for (const p of c.partitions.values()) if (p.unsavedSince !== undefined && p.unsavedSince < oldest) oldest = p.unsavedSince;
      return {
        collectionId: c.record.id,
        pending: this.stats(c.record.id).pending,
        backlogSeconds: this.backlogSeconds(c.partitions.values()),
        checkpointAgeSeconds: (now - oldest) / 1000,
      };
    });
  }

  /** Resolves once every queued change is in the graphs (and, if asked, checkpointed). */
  async flush(checkpoint: boolean): Promise<{ checkpointed: number }> {
    await new Promise<void>((resolve) => {
      const ready = () => [...this.busy].every((p) => p.backlog.length === 0);
      if (ready()) resolve();
      else this.waiters.push({ ready, resolve });
    });
    let checkpointed = 0;
    if (checkpoint) {
      for (const c of this.collections.values()) {
        for (const p of c.partitions.values()) {
          if (p.dirty > 0) {
            this.checkpoint(p);
            checkpointed++;
          }
        }
      }
    }
    return { checkpointed };
  }

  async close(): Promise<{ checkpointed: number }> {
    if (this.closed) return { checkpointed: 0 };
    // Compactions in progress are dropped: the old graph is complete and is what gets saved.
    for (const c of this.collections.values()) for (const p of c.partitions.values()) p.compaction = undefined;
    const result = await this.flush(true);
    this.closed = true;
    for (const c of this.collections.values()) for (const p of c.partitions.values()) clearTimeout(p.idleTimer);
    this.db.close();
    return result;
  }

  // ---- the graph work loop ----

  private schedulePump(): void {
    if (this.pumpScheduled || this.closed) return;
    this.pumpScheduled = true;
    setImmediate(() => this.pump());
  }

  private pump(): void {
    this.pumpScheduled = false;
    this.setBulk(true);
    const started = performance.now();
    for (const p of [...this.busy]) {
      while (p.backlog.length > 0) {
        const job = p.backlog[0]!;
        if (!p.applySlice(job, SLICE_MS)) break;
        p.backlog.shift();
        job.done?.();
        this.afterApply(p);
        if (performance.now() - started > SLICE_MS) break;
      }
      if (p.backlog.length === 0 && p.compaction && performance.now() - started < SLICE_MS) {
        if (p.compactSlice(SLICE_MS)) {
          this.log('info', `vector collection ${p.collectionId}: compacted a tenant's index to ${p.indexLive} vectors`);
          this.checkpoint(p);
        }
      }
      if (p.backlog.length === 0 && !p.compaction) this.busy.delete(p);
    }
    this.checkWaiters();
    if (this.busy.size > 0) this.schedulePump();
    else this.setBulk(false);
  }

  private afterApply(p: Partition): void {
    if (p.dirty >= this.settings.checkpointChanges) this.checkpoint(p);
    // A job that changed nothing in the graph leaves nothing to save.
    if (p.dirty === 0 && p.backlog.length === 0) p.unsavedSince = undefined;
    if (p.backlog.length <= 1 && p.needsCompaction(this.settings.compactMinTombstones)) {
      this.log('info', `vector collection ${p.collectionId}: compacting a tenant's index (${p.tombstones} tombstones, ${p.indexLive} live)`);
      p.startCompaction();
    }
    clearTimeout(p.idleTimer);
    if (p.dirty > 0 && this.settings.checkpointIdleMs > 0) {
      p.idleTimer = setTimeout(() => {
        if (p.backlog.length === 0 && p.dirty > 0 && this.isLive(p)) this.checkpoint(p);
      }, this.settings.checkpointIdleMs);
      p.idleTimer.unref();
    }
  }

  private isLive(p: Partition): boolean {
    return !this.closed && this.collections.get(p.collectionId)?.partitions.get(p.tenant) === p;
  }

  private checkWaiters(): void {
    if (this.waiters.length === 0) return;
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (w.ready()) w.resolve();
      else this.waiters.push(w);
    }
  }

  /** Saves the partition's graph (between two jobs, so that it matches appliedSeq exactly). */
  private checkpoint(p: Partition): void {
    const c = this.collections.get(p.collectionId);
    if (!c || this.closed) return;
    try {
      if (p.indexLive === 0 && p.size === 0) {
        removeCheckpoint(this.settings.indexDir, p.collectionId, p.tenant);
      } else {
        writeCheckpoint(this.settings.indexDir, partitionIdentity(c.record, p.tenant), p.index, p.appliedSeq);
      }
      p.dirty = 0;
      // Between two jobs: what is still queued has been unsaved since the oldest of them was committed.
      p.unsavedSince = p.backlog[0]?.queuedAt;
    } catch (err) {
      // The rows are safe in SQLite; the next start replays more. Say so and carry on.
      this.log('error', `vector collection "${c.record.name}": could not write an index checkpoint: ${(err as Error).message}`);
    }
  }
}

/** The partition's apply job for one write, started on its first change there. */
function applyJobFor(jobs: Map<Partition, ApplyJob>, p: Partition, values: Float32Array): ApplyJob {
  let job = jobs.get(p);
  if (!job) {
    job = { kind: 'apply', seq: 0, deletes: [], replaces: 0, labels: [], rows: [], values, next: 0, deletesDone: false, queuedAt: Date.now() };
    jobs.set(p, job);
  }
  return job;
}

/** Whether a cached collection is the shared store's collection of that id (not one made again). */
function sameCollection(a: CollectionRecord, b: CollectionRecord): boolean {
  return a.name === b.name && a.createdAt === b.createdAt && a.dimension === b.dimension && a.metric === b.metric && a.multiTenant === b.multiTenant;
}

function project(props: Properties, names: string[]): Properties {
  const out: Properties = {};
  for (const name of names) {
    // defineProperty, not assignment: a property may be called "__proto__".
    if (Object.hasOwn(props, name)) Object.defineProperty(out, name, { value: props[name], enumerable: true, writable: true, configurable: true });
  }
  return out;
}
