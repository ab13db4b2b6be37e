// The vector store's engine, run inside the index worker (index-worker.ts) so that SQLite's bulk
// writes and hnswlib's synchronous graph work never hold up the host's event loop.
//
// Writes: one SQLite transaction per request (synchronous FULL, so the commit is durable), then
// the answer, then the graph changes, queued per partition and applied in slices of a few
// milliseconds between incoming messages. A read waits behind the changes queued for its own
// partition before it, so a client always sees its acknowledged writes; other partitions are not
// held up. If the queue grows past maxBacklogFloats, upserts are answered only once it shrinks.
//
// Checkpoints: a partition's graph is written (checkpoint.ts) after checkpointChanges changes or
// checkpointIdleMs without writes, on close, and after a load that had to replay or rebuild.
import fs from 'node:fs';
import Database from 'better-sqlite3';
import { collectionDir, findCheckpoint, removeCheckpoint, sweepCollectionDir, sweepRoot, writeCheckpoint } from './checkpoint.js';
import { SPACE } from './distance.js';
import { Partition, type ApplyJob, type Hnsw, type ReadJob } from './partition.js';
import hnswlib from 'hnswlib-node';
import { blobToFloats, collectionFromRow, type CollectionRow } from './rows.js';
import {
  VectorStoreError,
  type CollectionRecord,
  type IndexStats,
  type NewCollection,
  type Properties,
  type SampledVector,
  type SampleRequest,
  type SearchRequest,
  type SearchResult,
  type UpsertBatch,
  type VectorKey,
  type WorkerSettings,
} from './types.js';

/** Longest stretch of graph work between two looks at the message queue. */
const SLICE_MS = 8;

export type LogFn = (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

interface CollectionState {
  record: CollectionRecord;
  partitions: Map<string, Partition>;
  lastSeq: number;
}

interface VectorRow {
  id: string;
  label: number;
  seq: number;
  properties: string;
  vec: Buffer | null;
}

export class VectorEngine {
  private readonly db: Database.Database;
  private readonly collections = new Map<number, CollectionState>();
  private readonly busy = new Set<Partition>();
  private pumpScheduled = false;
  private waiters: Array<{ ready: () => boolean; resolve: () => void }> = [];
  private closed = false;
  private readonly stmt;

  constructor(
    private readonly settings: WorkerSettings,
    private readonly log: LogFn,
    /** Told when graph work starts and stops (the index worker lowers its priority meanwhile). */
    private readonly setBulk: (bulk: boolean) => void = () => undefined,
  ) {
    this.db = new Database(settings.dbPath);
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    this.stmt = {
      insertCollection: this.db.prepare(
        `INSERT INTO vector_collections (name, dimension, metric, description, multi_tenant, hnsw_m, ef_construction, ef_search, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      ),
      collections: this.db.prepare('SELECT * FROM vector_collections ORDER BY id'),
      tenants: this.db.prepare('SELECT DISTINCT tenant FROM vectors WHERE collection_id = ?').pluck(),
      countPartition: this.db.prepare('SELECT count(*) FROM vectors WHERE collection_id = ? AND tenant = ?').pluck(),
      loadPartition: this.db.prepare(
        `SELECT id, label, seq, properties, CASE WHEN seq > ? THEN vec END AS vec
         FROM vectors WHERE collection_id = ? AND tenant = ?`,
      ),
      upsert: this.db.prepare(
        `INSERT INTO vectors (collection_id, tenant, id, label, seq, vec, properties) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (collection_id, tenant, id) DO UPDATE
         SET label = excluded.label, seq = excluded.seq, vec = excluded.vec, properties = excluded.properties`,
      ),
      deleteVector: this.db.prepare('DELETE FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?'),
      bump: this.db.prepare('UPDATE vector_collections SET last_seq = ?, vector_count = vector_count + ? WHERE id = ?'),
      vec: this.db.prepare('SELECT vec FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?').pluck(),
      dropVectors: this.db.prepare('DELETE FROM vectors WHERE collection_id = ?'),
      dropCollection: this.db.prepare('DELETE FROM vector_collections WHERE id = ?'),
    };
  }

  // ---- start-up ----

  /** Loads every collection's partitions: checkpoint plus replay, or a rebuild. */
  load(): void {
    fs.mkdirSync(this.settings.indexDir, { recursive: true, mode: 0o700 });
    const rows = this.stmt.collections.all() as CollectionRow[];
    for (const row of rows) {
      const state: CollectionState = { record: collectionFromRow(row), partitions: new Map(), lastSeq: row.last_seq };
      this.collections.set(row.id, state);
      const tenants = this.stmt.tenants.all(row.id) as string[];
      for (const tenant of tenants) state.partitions.set(tenant, this.loadPartition(state, tenant));
      sweepCollectionDir(this.settings.indexDir, row.id, tenants);
    }
    sweepRoot(this.settings.indexDir, this.collections.keys());
  }

  private loadPartition(c: CollectionState, tenant: string): Partition {
    const { record } = c;
    const started = performance.now();
    const identity = { collectionId: record.id, tenant, metric: record.metric, dimension: record.dimension, hnsw: record.hnsw };
    const where = `vector collection "${record.name}"${record.multiTenant ? ` tenant ${JSON.stringify(tenant)}` : ''}`;
    const found = findCheckpoint(this.settings.indexDir, identity);
    let reason = found.ok ? '' : found.reason;
    let partition: Partition | undefined;
    let replayed = 0;
    if (found.ok) {
      try {
        const index = new hnswlib.HierarchicalNSW(SPACE[record.metric], record.dimension);
        index.readIndexSync(found.file, true);
        const loaded = this.fillPartition(c, tenant, index, found.meta.seq);
        if (loaded) {
          partition = loaded.partition;
          replayed = loaded.replayed;
        } else reason = 'the index does not match the stored vectors';
      } catch (err) {
        reason = `hnswlib could not read the index file (${(err as Error).message})`;
      }
    }
    if (partition) {
      if (replayed > 0) this.log('info', `${where}: loaded its index checkpoint and replayed ${replayed} newer changes`);
    } else {
      partition = this.fillPartition(c, tenant, undefined, -1)!.partition;
      const ms = Math.round(performance.now() - started);
      if (found.ok || reason !== 'no checkpoint' || partition.size > 0) {
        this.log('warn', `${where}: rebuilt its index from ${partition.size} stored vectors in ${ms} ms (${reason})`, {
          collection: record.name,
          vectors: partition.size,
          ms,
        });
      }
    }
    if (partition.dirty > 0) this.checkpoint(partition);
    return partition;
  }

  /**
   * Builds a partition's committed state from SQLite and brings the graph up to date: with a
   * checkpointed graph, rows newer than `since` are added and labels no longer stored are
   * tombstoned; without one, every row is added. Undefined when the checkpoint disagrees with
   * the rows (a live row it should hold is missing), so the caller rebuilds.
   */
  private fillPartition(c: CollectionState, tenant: string, index: Hnsw | undefined, since: number) {
    const { record } = c;
    let graph = index;
    if (!graph) {
      const count = this.stmt.countPartition.get(record.id, tenant) as number;
      graph = new hnswlib.HierarchicalNSW(SPACE[record.metric], record.dimension);
      graph.initIndex({
        maxElements: Math.max(1024, Math.ceil(count * 1.1)),
        m: record.hnsw.m,
        efConstruction: record.hnsw.efConstruction,
        randomSeed: 100,
        allowReplaceDeleted: true,
      });
    }
    const p = new Partition(record.id, tenant, record.metric, record.dimension, record.hnsw, graph);
    const inGraph = index ? new Set(index.getIdsList()) : new Set<number>();
    let old = 0;
    let replayed = 0;
    let maxSeq = Math.max(0, since);
    // Rebuilding, points go into the fresh graph as they are read. Replaying, they wait until the
    // stale labels are tombstoned, so that they can take over those slots (and the graph's room
    // is counted right); there are at most the changes since the checkpoint.
    const batch: Array<{ label: number; values: Float32Array }> = [];
    for (const row of this.stmt.loadPartition.iterate(since, record.id, tenant) as IterableIterator<VectorRow>) {
      p.commitPut(row.id, row.label, JSON.parse(row.properties) as Properties);
      if (row.seq > maxSeq) maxSeq = row.seq;
      if (row.vec) {
        if (inGraph.has(row.label)) return undefined;
        batch.push({ label: row.label, values: blobToFloats(row.vec) });
        if (!index && batch.length >= 1024) {
          p.bulkAdd(batch);
          replayed += batch.length;
          batch.length = 0;
        }
      } else {
        if (!inGraph.has(row.label)) return undefined;
        old++;
      }
    }
    p.indexLive += old;
    let tombstoned = 0;
    for (const label of inGraph) {
      if (label >= p.nextLabel) p.nextLabel = label + 1;
      if (!p.labelToId.has(label)) {
        try {
          graph.markDelete(label);
          tombstoned++;
        } catch {
          // a tombstone already
        }
      }
    }
    p.bulkAdd(batch);
    replayed += batch.length;
    p.appliedSeq = maxSeq;
    p.dirty = replayed + tombstoned;
    p.index.setEf(record.hnsw.ef);
    return { partition: p, replayed: replayed + tombstoned };
  }

  // ---- collections ----

  createCollection(spec: NewCollection): CollectionRecord {
    let row: CollectionRow;
    try {
      row = this.stmt.insertCollection.get(
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
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw new VectorStoreError('conflict', `a vector collection named "${spec.name}" already exists`, 'name');
      }
      throw err;
    }
    const record = collectionFromRow(row);
    // A directory left by an earlier collection with this id cannot exist (ids are never reused),
    // but a stray one from a crash during a delete is removed here all the same.
    fs.rmSync(collectionDir(this.settings.indexDir, record.id), { recursive: true, force: true });
    this.collections.set(record.id, { record, partitions: new Map(), lastSeq: 0 });
    return record;
  }

  dropCollection(collectionId: number): { removed: boolean } {
    const c = this.collections.get(collectionId);
    if (!c) return { removed: false };
    this.collections.delete(collectionId);
    for (const p of c.partitions.values()) {
      clearTimeout(p.idleTimer);
      this.busy.delete(p);
      for (const job of p.backlog) {
        if (job.kind === 'read') job.fail(new VectorStoreError('not_found', `the vector collection "${c.record.name}" was deleted`, 'collection_name'));
      }
      p.backlog.length = 0;
    }
    this.db.transaction(() => {
      this.stmt.dropVectors.run(collectionId);
      this.stmt.dropCollection.run(collectionId);
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
    const dim = c.record.dimension;
    const n = batch.ids.length;
    if (batch.values.length !== n * dim) throw new VectorStoreError('invalid_argument', 'values do not match the batch', 'vector');
    const labels = new Array<number>(n);
    const parts = new Array<Partition>(n);
    let seq = c.lastSeq;
    let added = 0;
    const bytes = Buffer.from(batch.values.buffer, batch.values.byteOffset, batch.values.byteLength);
    this.db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const p = this.partitionFor(c, batch.tenants[i]!);
        const id = batch.ids[i]!;
        parts[i] = p;
        labels[i] = p.nextLabel++;
        if (!p.idToLabel.has(id)) added++;
        this.stmt.upsert.run(
          c.record.id,
          p.tenant,
          id,
          labels[i],
          ++seq,
          bytes.subarray(i * dim * 4, (i + 1) * dim * 4),
          JSON.stringify(batch.properties[i] ?? {}),
        );
      }
      this.stmt.bump.run(seq, added, c.record.id);
    })();
    // Committed: the in-memory state follows, then the graph work is queued.
    const firstSeq = c.lastSeq + 1;
    c.lastSeq = seq;
    c.record.vectorCount += added;
    const jobs = new Map<Partition, ApplyJob>();
    for (let i = 0; i < n; i++) {
      const p = parts[i]!;
      let job = jobs.get(p);
      if (!job) {
        job = { kind: 'apply', seq: 0, deletes: [], labels: [], rows: [], values: batch.values, next: 0, deletesDone: false };
        jobs.set(p, job);
      }
      const old = p.idToLabel.get(batch.ids[i]!);
      if (old !== undefined) job.deletes.push(old);
      p.commitPut(batch.ids[i]!, labels[i]!, batch.properties[i] ?? {});
      job.labels.push(labels[i]!);
      job.rows.push(i);
      job.seq = firstSeq + i;
    }
    for (const [p, job] of jobs) this.enqueue(p, job, job.labels.length * dim);
    const result = { numAffected: n };
    if (this.backlogFloats() <= this.settings.maxBacklogFloats) return result;
    return new Promise((resolve) => this.waiters.push({ ready: () => this.backlogFloats() <= this.settings.maxBacklogFloats, resolve: () => resolve(result) }));
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
        if (this.stmt.deleteVector.run(c.record.id, tenant, id).changes > 0) removed.push({ p, id });
      }
      if (removed.length > 0) this.stmt.bump.run(c.lastSeq, -removed.length, c.record.id);
    })();
    c.record.vectorCount -= removed.length;
    const jobs = new Map<Partition, ApplyJob>();
    for (const { p, id } of removed) {
      const label = p.commitDelete(id);
      if (label === undefined) continue;
      let job = jobs.get(p);
      if (!job) {
        job = { kind: 'apply', seq: 0, deletes: [], labels: [], rows: [], values: new Float32Array(0), next: 0, deletesDone: false };
        jobs.set(p, job);
      }
      job.deletes.push(label);
    }
    for (const [p, job] of jobs) this.enqueue(p, job, 0);
    return { numDeleted: removed.length };
  }

  private enqueue(p: Partition, job: ApplyJob, floats: number): void {
    p.backlog.push(job);
    p.backlogFloats += floats;
    clearTimeout(p.idleTimer);
    this.busy.add(p);
    this.schedulePump();
  }

  private backlogFloats(): number {
    let total = 0;
    for (const p of this.busy) total += p.backlogFloats;
    return total;
  }

  // ---- reads ----

  /** Runs `fn` once the partition's queued changes are in its graph. */
  private afterBacklog<T>(p: Partition, fn: () => T): T | Promise<T> {
    if (p.backlog.length === 0) return fn();
    return new Promise<T>((resolve, reject) => {
      const job: ReadJob = {
        kind: 'read',
        run: () => {
          try {
            resolve(fn());
          } catch (err) {
            reject(err);
          }
        },
        fail: reject,
      };
      p.backlog.push(job);
      this.busy.add(p);
      this.schedulePump();
    });
  }

  search(req: SearchRequest): SearchResult | Promise<SearchResult> {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return { hits: [], strategy: 'empty' };
    return this.afterBacklog(p, () => {
      const found = p.search(req.query, req.k, req.filter, this.settings.exactScanMax);
      const hits = found.labels.map((label, i) => {
        const id = p.labelToId.get(label)!;
        const hit: SearchResult['hits'][number] = { id, distance: found.distances[i]! };
        if (req.includeVector) hit.values = blobToFloats(this.stmt.vec.get(c.record.id, p.tenant, id) as Buffer);
        if (req.properties) hit.properties = project(p.props.get(label)!, req.properties);
        return hit;
      });
      return { hits, strategy: found.strategy };
    });
  }

  sample(req: SampleRequest): SampledVector[] {
    const c = this.collection(req.collectionId);
    const p = c.partitions.get(req.tenant);
    if (!p) return [];
    return p.sampleLabels(req.count).map((label) => {
      const id = p.labelToId.get(label)!;
      const out: SampledVector = { id, properties: p.props.get(label)! };
      if (req.includeVector) out.values = blobToFloats(this.stmt.vec.get(c.record.id, p.tenant, id) as Buffer);
      return out;
    });
  }

  stats(collectionId: number): IndexStats {
    const c = this.collection(collectionId);
    const stats: IndexStats = { tenants: 0, indexed: 0, tombstones: 0, pending: 0, compacting: false };
    for (const p of c.partitions.values()) {
      if (p.size > 0) stats.tenants++;
      stats.indexed += p.indexLive;
      stats.tombstones += p.tombstones;
      stats.pending += p.backlog.reduce((n, j) => n + (j.kind === 'apply' ? j.labels.length - j.next + (j.deletesDone ? 0 : j.deletes.length) : 0), 0);
      stats.compacting ||= p.compaction !== undefined;
    }
    return stats;
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
        if (job.kind === 'read') {
          p.backlog.shift();
          job.run();
          continue;
        }
        if (!p.applySlice(job, SLICE_MS)) break;
        p.backlog.shift();
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
        const r = c.record;
        writeCheckpoint(this.settings.indexDir, { collectionId: r.id, tenant: p.tenant, metric: r.metric, dimension: r.dimension, hnsw: r.hnsw }, p.index, p.appliedSeq);
      }
      p.dirty = 0;
    } catch (err) {
      // The rows are safe in SQLite; the next start replays more. Say so and carry on.
      this.log('error', `vector collection "${c.record.name}": could not write an index checkpoint: ${(err as Error).message}`);
    }
  }
}

function project(props: Properties, names: string[]): Properties {
  const out: Properties = {};
  for (const name of names) {
    // defineProperty, not assignment: a property may be called "__proto__".
    if (Object.hasOwn(props, name)) Object.defineProperty(out, name, { value: props[name], enumerable: true, writable: true, configurable: true });
  }
  return out;
}
