// The vector store as the routes see it. Requests are checked against their collection
// (dimension, tenants, ids, numbers) before any work starts, so that a refusal names the field at
// fault and writes nothing: upsert bodies in the ingest worker (they are large), the others here.
// The index worker then does the work. Fetch and the collection listings read SQLite directly:
// they are point reads that need no graph; an export reads it through a connection of its own
// (snapshot-export.ts). Beyond SPEC.md: count, scroll, delete by filter, export and import.
//
// On PostgreSQL (several replicas) the store of record is the shared log (shared-log.ts): writes
// go there and are answered once committed, and the index worker holds this replica's copy, which
// the log follower keeps current (log-follower.ts). A read first waits for the copy to reach the
// collection's head (read-your-writes on every replica) and reports the sequence number it reflects.
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { Registry } from 'prom-client';
import type { VectorConfig } from '../config.js';
import { ApiError, conflict, invalidArgument, notFound } from '../errors.js';
import type { Db } from '../store/database.js';
import type { SnapshotPart } from '../cluster/config-sync.js';
import { float32ArrayToNumbers } from './distance.js';
import { LogFollower, type ReplicaCopy } from './log-follower.js';
import type { SharedVectorLog } from './shared-log.js';
import { blobToFloats, collectionFromRow, type CollectionRow } from './rows.js';
import { parseFilter } from './filter.js';
import { VectorMetrics } from './metrics.js';
import { checkDimension, checkId, collectionDefinitionJson, itemTenant, packNumbers, tenantOf } from './requests.js';
import { decodeCursor, encodeCursor } from './scroll-cursor.js';
import { openCollectionExport } from './snapshot-export.js';
import type { CollectionGauges, CollectionRecord, ImportBatch, IndexStats, IngestOps, Metric, Properties, SampledVector, UpsertBatch, VectorKey, WorkerOps } from './types.js';
import { WorkerClient } from './worker-client.js';

// ---- request bodies (after schema validation: types are right, the rest is checked here) ----

export interface CreateCollectionBody {
  name: string;
  dimension: number;
  metric?: Metric;
  description?: string;
  multi_tenant?: boolean;
  hnsw?: { m?: number; ef_construction?: number; ef?: number };
}

export interface SearchBody {
  collection_name: string;
  reference_vector: { element: number[] };
  properties?: string[];
  max_results: number;
  include_vector: boolean;
  include_distance: boolean;
  include_id: boolean;
  tenant_id?: string;
  filter?: unknown;
}

/** SPEC.md's delete names ids; ours may give a filter instead (one or the other). */
export interface DeleteBody {
  collection_name: string;
  tenant_id?: string;
  vector_identifiers?: Array<{ vector_id: string; tenant_id?: string }>;
  filter?: unknown;
}

export interface CountBody {
  collection_name: string;
  tenant_id?: string;
  filter?: unknown;
}

export interface ScrollBody {
  collection_name: string;
  tenant_id?: string;
  filter?: unknown;
  limit: number;
  cursor?: string;
  include_vector: boolean;
  properties?: string[];
}

export interface SampleBody {
  collection_name: string;
  num_samples: number;
  include_vector: boolean;
  tenant_id?: string;
}

// ---- responses ----

export interface CollectionJson {
  name: string;
  dimension: number;
  metric: Metric;
  description: string;
  multi_tenant: boolean;
  hnsw: { m: number; ef_construction: number; ef: number };
  vector_count: number;
  created_at: number;
  index?: { tenants: number; indexed: number; tombstones: number; pending: number; compacting: boolean };
  /** On PostgreSQL: this replica's copy of the collection. */
  replica?: { state: 'ready' | 'catching_up'; applied_seq: number; last_seq: number };
}

/** Told the sequence number a write committed at, or a read reflects (PostgreSQL only). */
export type SeqNote = (seq: number) => void;

/** The shared store on PostgreSQL and this replica's place in it. */
export interface SharedVectorOptions {
  log: SharedVectorLog;
  /** Mean time between reads of every collection's head. */
  pollMs: number;
  /** Longest a read waits for this replica's copy to reach the collection's head. */
  readTimeoutMs: number;
  /** How long the shared store keeps a delete's tombstone for replicas that were away. */
  tombstoneRetentionMs: number;
}

export interface VectorJson {
  id: string;
  values?: number[];
  properties: Properties;
}

export interface SearchResultJson {
  vector?: { values: number[] };
  distance?: number;
  id?: string;
  properties?: Properties;
}

const vectorJson = (v: SampledVector): VectorJson => ({ id: v.id, ...(v.values ? { values: float32ArrayToNumbers(v.values) } : {}), properties: v.properties });

/** How much of an import body goes to the ingest worker in one message. */
const IMPORT_CHUNK_BYTES = 1024 * 1024;

/** Retry-After of an export refused because the others are still streaming. */
const EXPORT_RETRY_AFTER_S = 5;

/** How long a /metrics scrape waits for the index worker's figures before leaving them out. */
const GAUGES_TIMEOUT_MS = 2000;

const collectionJson = (c: CollectionRecord, stats?: IndexStats, copy?: ReplicaCopy): CollectionJson => ({
  ...collectionDefinitionJson(c),
  vector_count: c.vectorCount,
  created_at: c.createdAt,
  ...(stats ? { index: stats } : {}),
  ...(copy ? { replica: { state: copy.catchingUp ? 'catching_up' : 'ready', applied_seq: copy.applied, last_seq: Math.max(copy.head, copy.applied) } } : {}),
});

export class VectorService {
  private readonly worker: WorkerClient<WorkerOps>;
  private readonly ingest: WorkerClient<IngestOps>;
  private readonly byName = new Map<string, CollectionRecord>();
  private readonly stmt;
  private readonly metrics: VectorMetrics | undefined;
  private readonly dbPath: string;
  /** Exports streaming now: each holds a read transaction and a connection (snapshot-export.ts). */
  private exportsOpen = 0;
  /** On PostgreSQL: the store of record, and what keeps this replica's copy current. */
  private readonly shared: SharedVectorLog | undefined;
  private readonly follower: LogFollower | undefined;

  constructor(
    db: Db,
    private readonly config: VectorConfig,
    dataDir: string,
    log: FastifyBaseLogger,
    /** The host's Prometheus registry, for the vector_store_* series (metrics.ts). */
    registry?: Registry,
    /** On PostgreSQL; `db` and `dataDir` are then this replica's cache (cache-file.ts). */
    shared?: SharedVectorOptions,
  ) {
    this.dbPath = db.name;
    this.worker = new WorkerClient<WorkerOps>(
      'index-worker',
      {
        dbPath: db.name,
        indexDir: path.join(dataDir, 'vectors'),
        checkpointChanges: config.checkpointChanges,
        checkpointIdleMs: config.checkpointIdleMs,
        compactMinTombstones: config.compactMinTombstones,
        exactScanMax: config.exactScanMax,
        maxBacklogFloats: config.maxBacklogFloats,
        maxBacklogSeconds: config.maxBacklogSeconds,
        nice: config.indexNice,
      },
      log,
    );
    this.stmt = {
      all: db.prepare('SELECT * FROM vector_collections ORDER BY name'),
      byName: db.prepare('SELECT * FROM vector_collections WHERE name = ?'),
      fetch: db.prepare('SELECT vec, properties FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?'),
      counts: db.prepare('SELECT id, name, vector_count AS vectorCount FROM vector_collections ORDER BY name'),
    };
    if (registry) {
      this.metrics = new VectorMetrics(registry, {
        collections: () => this.stmt.counts.all() as Array<{ id: number; name: string; vectorCount: number }>,
        gauges: () => this.workerGauges(),
        exportsOpen: () => this.exportsOpen,
        ...(shared ? { replicaLag: () => (this.follower?.copies() ?? []).map((c) => ({ name: c.name, changes: c.head - c.applied })) } : {}),
      });
    }
    for (const row of this.stmt.all.all() as CollectionRow[]) {
      const c = collectionFromRow(row);
      this.byName.set(c.name, c);
    }
    // The ingest worker keeps a copy of the collections: sent when it starts (or restarts after a
    // crash) and again after every create and delete.
    this.ingest = new WorkerClient<IngestOps>('ingest-worker', { nice: config.ingestNice }, log, (client) => {
      void client.call('setCollections', { collections: this.collectionInfos() }).catch(() => undefined);
    });
    this.shared = shared?.log;
    if (shared) {
      this.follower = new LogFollower({
        log: shared.log,
        worker: this.worker,
        pollMs: shared.pollMs,
        readTimeoutMs: shared.readTimeoutMs,
        tombstoneRetentionMs: shared.tombstoneRetentionMs,
        logger: log,
        onCollections: (list) => {
          this.byName.clear();
          for (const c of list) this.byName.set(c.name, c);
          void this.syncIngest();
        },
      });
    }
    // With collections on disk, start loading their indexes now rather than on the first request;
    // without any, the workers start when the vector store is first used.
    if (this.byName.size > 0 || shared) this.worker.start();
  }

  /** On PostgreSQL: the collections as configuration, read with every change (ConfigSync). */
  get snapshotPart(): SnapshotPart | undefined {
    const follower = this.follower;
    return follower && { name: 'vectors', apply: () => follower.reconcile() };
  }

  /** On PostgreSQL, after the first snapshot: follows the shared store's heads from now on. */
  startFollowing(): void {
    this.follower?.start();
  }

  /** On PostgreSQL: the listening connection is (again) up; notifications sent meanwhile are lost. */
  listening(): void {
    this.follower?.pollNow();
  }

  /** On PostgreSQL: a write's notification (its payload, the collection's id). */
  notified(payload: string): void {
    this.follower?.notified(payload);
  }

  /** On PostgreSQL: this replica's copy of each collection, for its row in `replicas`. */
  copies(): Array<{ name: string; applied: number; head: number }> | undefined {
    return this.follower?.copies();
  }

  /** On PostgreSQL: the collections this replica has not caught up with yet (not ready for them). */
  catchingUp(): Array<{ name: string; copy: ReplicaCopy | undefined }> {
    return this.follower?.catchingUp() ?? [];
  }

  /** Waits until this replica reflects every write the collection had committed (PostgreSQL). */
  private async consistent(c: CollectionRecord, note?: SeqNote): Promise<void> {
    if (!this.follower) return;
    const seq = await this.follower.readable(c);
    note?.(seq);
  }

  /** The index worker's figures for /metrics; none while it is not running or does not answer in time. */
  private async workerGauges(): Promise<CollectionGauges[] | undefined> {
    if (!this.worker.running) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), GAUGES_TIMEOUT_MS);
    });
    try {
      return await Promise.race([this.worker.call('gauges', {}).catch(() => undefined), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private collectionInfos() {
    return [...this.byName.values()].map((c) => ({ id: c.id, name: c.name, dimension: c.dimension, multiTenant: c.multiTenant }));
  }

  /**
   * Messages to a worker are handled in order, so every upsert sent after this sees the change.
   * A failure needs no handling: a restarted ingest worker gets the list from onStart.
   */
  private async syncIngest(): Promise<void> {
    await this.ingest.call('setCollections', { collections: this.collectionInfos() }).catch(() => undefined);
  }

  /**
   * The collection named; on PostgreSQL, one this replica has not heard of yet (made through
   * another replica a moment ago) is looked up in the database before the answer is a 404.
   */
  private async lookup(name: string, param = 'collection_name'): Promise<CollectionRecord> {
    if (!this.byName.has(name) && this.follower) await this.follower.reconcile();
    return this.collection(name, param);
  }

  /** Whether a collection has tenants, for the permission check of a request (undefined: no such collection, the request's own 404). */
  async tenancy(name: string): Promise<{ name: string; multiTenant: boolean } | undefined> {
    if (!this.byName.has(name) && this.follower) await this.follower.reconcile();
    const c = this.byName.get(name);
    return c && { name: c.name, multiTenant: c.multiTenant };
  }

  private collection(name: string, param = 'collection_name'): CollectionRecord {
    const c = this.byName.get(name);
    if (!c) throw notFound(`no vector collection named "${name}"`, param);
    return c;
  }

  // ---- collections ----

  async createCollection(body: CreateCollectionBody): Promise<CollectionJson> {
    // On PostgreSQL the database's unique name decides (this replica's list may be a moment old).
    if (!this.shared && this.byName.has(body.name)) throw conflict(`a vector collection named "${body.name}" already exists`, 'name');
    const spec = {
      name: body.name,
      dimension: body.dimension,
      metric: body.metric ?? 'cosine',
      description: body.description ?? '',
      multiTenant: body.multi_tenant ?? false,
      hnsw: {
        m: body.hnsw?.m ?? this.config.defaultM,
        efConstruction: body.hnsw?.ef_construction ?? this.config.defaultEfConstruction,
        ef: body.hnsw?.ef ?? this.config.defaultEf,
      },
    };
    if (this.shared && this.follower) {
      const shared = this.shared;
      const follower = this.follower;
      const record = await shared.createCollection(spec, Date.now());
      return follower.exclusive(async () => {
        await follower.adopt(record);
        this.byName.set(record.name, record);
        await this.syncIngest();
        return collectionJson(record);
      });
    }
    const record = await this.worker.call('createCollection', spec);
    this.byName.set(record.name, record);
    await this.syncIngest();
    return collectionJson(record);
  }

  async listCollections(): Promise<CollectionJson[]> {
    if (this.shared) return (await this.shared.collections()).map((c) => collectionJson(c));
    return (this.stmt.all.all() as CollectionRow[]).map((r) => collectionJson(collectionFromRow(r)));
  }

  async getCollection(name: string): Promise<CollectionJson> {
    const c = await this.lookup(name, 'name');
    const stats = await this.worker.call('stats', { collectionId: c.id }).catch((err: unknown) => {
      // On PostgreSQL a replica may not hold the collection yet: its state says so.
      if (this.shared && err instanceof ApiError && err.code === 'not_found') return undefined;
      throw err;
    });
    if (this.shared) {
      const record = await this.shared.collection(name);
      if (!record || record.id !== c.id) throw notFound(`no vector collection named "${name}"`, 'name');
      // Not in this replica's cache yet: nothing applied.
      const copy = this.follower!.copyOf(c.id) ?? { applied: 0, head: (await this.shared.head(c.id)) ?? 0, catchingUp: true };
      return collectionJson(record, stats, copy);
    }
    const row = this.stmt.byName.get(name) as CollectionRow | undefined;
    if (!row) throw notFound(`no vector collection named "${name}"`, 'name');
    return collectionJson(collectionFromRow(row), stats);
  }

  async deleteCollection(name: string): Promise<{ name: string; deleted: true }> {
    if (this.shared && this.follower) {
      const shared = this.shared;
      const follower = this.follower;
      const c = await this.lookup(name, 'name');
      if (!(await shared.dropCollection(c.id))) throw notFound(`no vector collection named "${name}"`, 'name');
      await follower.exclusive(async () => {
        this.byName.delete(name);
        follower.forget(c.id);
        await this.worker.call('dropCollection', { collectionId: c.id });
        await this.syncIngest();
      });
      this.metrics?.forget(name);
      return { name, deleted: true };
    }
    const c = this.collection(name, 'name');
    this.byName.delete(name);
    try {
      await this.worker.call('dropCollection', { collectionId: c.id });
    } catch (err) {
      this.byName.set(name, c);
      throw err;
    } finally {
      await this.syncIngest();
    }
    this.metrics?.forget(name);
    return { name, deleted: true };
  }

  // ---- the five operations ----

  /**
   * An upsert body as bytes: parsed and checked by the ingest worker, written by the index worker.
   * `authorize` sees the collection and each vector's tenant once parsed, before anything is
   * written, and may refuse them (the caller's key scope: src/auth/permissions.ts).
   */
  async upsert(bytes: Buffer, note?: SeqNote, authorize?: (collection: { name: string; multiTenant: boolean }, tenants: readonly string[]) => void): Promise<{ num_affected: number }> {
    // The bytes are copied once into a buffer of their own, so that it can move to the worker.
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    const started = performance.now();
    let batch: UpsertBatch;
    try {
      batch = await this.ingest.call('parseUpsert', { bytes: copy }, [copy.buffer]);
    } catch (err) {
      // On PostgreSQL the collection may have been made through another replica a moment ago.
      if (!(this.follower && err instanceof ApiError && err.code === 'not_found' && err.param === 'collection_name')) throw err;
      await this.follower.reconcile();
      const again = new Uint8Array(bytes.byteLength);
      again.set(bytes);
      batch = await this.ingest.call('parseUpsert', { bytes: again }, [again.buffer]);
    }
    if (authorize) {
      const c = this.byId(batch.collectionId);
      if (!c) throw notFound('the vector collection was deleted while this request was on its way', 'collection_name');
      authorize({ name: c.name, multiTenant: c.multiTenant }, batch.tenants);
    }
    if (this.shared) {
      const c = this.byId(batch.collectionId);
      if (!c) throw notFound('the vector collection was deleted while this request was on its way', 'collection_name');
      const { seq } = await this.shared.upsert(batch, c.dimension);
      note?.(seq);
      this.follower!.notified(String(c.id));
      this.metrics?.upsert(c.name, batch.ids.length, (performance.now() - started) / 1000);
      return { num_affected: batch.ids.length };
    }
    const res = await this.worker.call('upsert', batch, [batch.values.buffer as ArrayBuffer]);
    const name = this.byId(batch.collectionId)?.name;
    if (name !== undefined) this.metrics?.upsert(name, res.numAffected, (performance.now() - started) / 1000);
    return { num_affected: res.numAffected };
  }

  private byId(collectionId: number): CollectionRecord | undefined {
    for (const c of this.byName.values()) if (c.id === collectionId) return c;
    return undefined;
  }

  async search(body: SearchBody, note?: SeqNote): Promise<{ search_results: SearchResultJson[] }> {
    const started = performance.now();
    const c = await this.lookup(body.collection_name);
    const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
    checkDimension(c, body.reference_vector.element, 'reference_vector.element');
    await this.consistent(c, note);
    const query = new Float32Array(c.dimension);
    packNumbers(body.reference_vector.element, query, 0, 'reference_vector.element');
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    const res = await this.worker.call(
      'search',
      { collectionId: c.id, tenant, query, k: body.max_results, filter, includeVector: body.include_vector, properties: body.properties },
      [query.buffer as ArrayBuffer],
    );
    this.metrics?.search(c.name, (performance.now() - started) / 1000);
    return {
      search_results: res.hits.map((h) => {
        const r: SearchResultJson = {};
        if (body.include_vector && h.values) r.vector = { values: float32ArrayToNumbers(h.values) };
        if (body.include_distance) r.distance = h.distance;
        if (body.include_id) r.id = h.id;
        if (body.properties) r.properties = h.properties ?? {};
        return r;
      }),
    };
  }

  async delete(body: DeleteBody, note?: SeqNote): Promise<{ num_vectors_deleted: number }> {
    // What the schema cannot say: exactly one of the two (checked first, as the schema would be).
    if (body.filter !== undefined && body.vector_identifiers !== undefined) throw invalidArgument('give vector_identifiers or filter, not both', 'filter');
    if (body.filter === undefined && body.vector_identifiers === undefined) {
      throw invalidArgument('body is missing the required field "vector_identifiers" (or a "filter" instead)', 'vector_identifiers');
    }
    const c = await this.lookup(body.collection_name);
    if (body.filter !== undefined) {
      const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
      const filter = parseFilter(body.filter);
      if (this.shared) {
        // The ids that match in this replica's copy, once it reflects every committed write.
        await this.consistent(c);
        const { ids, asOf } = await this.worker.call('idsWhere', { collectionId: c.id, tenant, filter });
        return this.deleteShared(c, ids.map((id) => ({ tenant, id })), note, asOf);
      }
      const res = await this.worker.call('deleteWhere', { collectionId: c.id, tenant, filter });
      return { num_vectors_deleted: res.numDeleted };
    }
    const keys: VectorKey[] = body.vector_identifiers!.map((v, i) => {
      const at = `vector_identifiers[${i}]`;
      checkId(v.vector_id, `${at}.vector_id`);
      return { tenant: itemTenant(c, v.tenant_id, body.tenant_id, at), id: v.vector_id };
    });
    if (this.shared) return this.deleteShared(c, keys, note);
    const res = await this.worker.call('delete', { collectionId: c.id, keys });
    return { num_vectors_deleted: res.numDeleted };
  }

  private async deleteShared(c: CollectionRecord, keys: VectorKey[], note?: SeqNote, asOf?: number): Promise<{ num_vectors_deleted: number }> {
    const { deleted, seq } = await this.shared!.delete(c.id, keys, asOf);
    note?.(seq);
    this.follower!.notified(String(c.id));
    return { num_vectors_deleted: deleted };
  }

  // ---- beyond SPEC.md: count, scroll, export, import ----

  async count(body: CountBody, note?: SeqNote): Promise<{ count: number }> {
    const c = await this.lookup(body.collection_name);
    const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    await this.consistent(c, note);
    return this.worker.call('count', { collectionId: c.id, tenant, filter });
  }

  /**
   * One page of a tenant's vectors in id order. next_cursor is null exactly when no vector after
   * the page matches; otherwise it continues after the page. A page can hold fewer than `limit`
   * vectors, even none, while next_cursor is set: one call scans a bounded number of ids
   * (SCROLL_SCAN_MAX), so a sparse filter pages through the partition in steps.
   */
  async scroll(body: ScrollBody, note?: SeqNote): Promise<{ vectors: VectorJson[]; next_cursor: string | null }> {
    const c = await this.lookup(body.collection_name);
    const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    const after = body.cursor === undefined ? undefined : decodeCursor(body.cursor);
    await this.consistent(c, note);
    const res = await this.worker.call('scroll', {
      collectionId: c.id,
      tenant,
      filter,
      after,
      limit: body.limit,
      includeVector: body.include_vector,
      properties: body.properties,
    });
    const resume = res.resumeAfter ?? res.vectors.at(-1)?.id;
    return { vectors: res.vectors.map(vectorJson), next_cursor: res.more && resume !== undefined ? encodeCursor(resume) : null };
  }

  /** Exports streaming now (the vector_store_exports_open gauge). */
  get openExports(): number {
    return this.exportsOpen;
  }

  /** The largest import body (MAX_VECTOR_IMPORT_BYTES). */
  get maxImportBytes(): number {
    return this.config.maxImportBytes;
  }

  /**
   * A consistent snapshot of the collection as an export file (snapshot-format.ts), streamed.
   * At most maxConcurrentExports at once (each holds a connection and keeps the WAL from being
   * checkpointed past its snapshot): beyond, a 429 with Retry-After.
   */
  async exportCollection(name: string): Promise<{ filename: string; vectorCount: number; stream: Readable }> {
    await this.consistent(await this.lookup(name, 'name'));
    const max = this.config.maxConcurrentExports;
    if (this.exportsOpen >= max) {
      throw new ApiError('overloaded', `${max} exports are already streaming (VECTOR_MAX_CONCURRENT_EXPORTS); retry when one has finished`, null, {
        'retry-after': String(EXPORT_RETRY_AFTER_S),
      });
    }
    this.exportsOpen++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.exportsOpen--;
    };
    let exported: ReturnType<typeof openCollectionExport>;
    try {
      exported = openCollectionExport(this.dbPath, name, { idleTimeoutMs: this.config.exportIdleTimeoutMs, onClose: release });
    } catch (err) {
      release();
      throw err;
    }
    if (!exported) throw notFound(`no vector collection named "${name}"`, 'name');
    return { filename: `${name}.ndjson`, vectorCount: exported.vectorCount, stream: exported.stream };
  }

  /**
   * Creates a collection from an export, as `name` or under the name it was exported with. The
   * body is read as it arrives and handed to the ingest worker in chunks, which checks and packs
   * it line by line (snapshot-format.ts): neither thread holds the file, only its packed vectors.
   * A body over MAX_VECTOR_IMPORT_BYTES is a 413.
   */
  async importCollection(body: AsyncIterable<Uint8Array> | Uint8Array | undefined, name: string | undefined, declaredBytes?: number): Promise<CollectionJson> {
    const exists = (n: string) =>
      conflict(`a vector collection named "${n}" already exists; import under another name (?name= over HTTP, --name in the CLI) or delete it first`, 'name');
    if (!this.shared && name !== undefined && this.byName.has(name)) throw exists(name);
    const limit = this.config.maxImportBytes;
    // The rest of the body is not read: the connection is closed after the answer.
    const tooLarge = () =>
      new ApiError(
        'payload_too_large',
        `the import is larger than the limit of ${limit} bytes (MAX_VECTOR_IMPORT_BYTES); raise MAX_VECTOR_IMPORT_BYTES to import this file`,
        null,
        { connection: 'close' },
      );
    if (declaredBytes !== undefined && declaredBytes > limit) throw tooLarge();
    const { session } = await this.ingest.call('importBegin', { name });
    let batch: ImportBatch;
    try {
      // One chunk to the worker at a time, while the next is read from the socket.
      let failed: unknown;
      let inFlight: Promise<void> = Promise.resolve();
      let parts: Uint8Array[] = [];
      let partBytes = 0;
      let total = 0;
      const send = async () => {
        await inFlight;
        if (failed !== undefined) throw failed;
        if (partBytes === 0) return;
        const bytes = new Uint8Array(partBytes);
        let at = 0;
        for (const p of parts) {
          bytes.set(p, at);
          at += p.byteLength;
        }
        parts = [];
        partBytes = 0;
        inFlight = this.ingest.call('importChunk', { session, bytes }, [bytes.buffer]).then(
          () => undefined,
          (err: unknown) => {
            failed = err;
          },
        );
      };
      const chunks: AsyncIterable<Uint8Array> | Uint8Array[] = body === undefined ? [] : body instanceof Uint8Array ? [body] : body;
      for await (const chunk of chunks) {
        total += chunk.byteLength;
        if (total > limit) throw tooLarge();
        parts.push(chunk);
        partBytes += chunk.byteLength;
        if (partBytes >= IMPORT_CHUNK_BYTES) await send();
      }
      await send();
      await inFlight;
      if (failed !== undefined) throw failed;
      batch = await this.ingest.call('importEnd', { session });
    } catch (err) {
      void this.ingest.call('importAbort', { session }).catch(() => undefined);
      throw err;
    }
    if (!this.shared && this.byName.has(batch.collection.name)) throw exists(batch.collection.name);
    if (this.shared && this.follower) {
      const shared = this.shared;
      const follower = this.follower;
      const record = await shared.importCollection(batch, Date.now()).catch((err: unknown) => {
        throw err instanceof ApiError && err.code === 'conflict' ? exists(batch.collection.name) : err;
      });
      return follower.exclusive(async () => {
        await follower.adopt(record);
        this.byName.set(record.name, record);
        await this.syncIngest();
        return collectionJson(record);
      });
    }
    const record = await this.worker.call('importCollection', batch, [batch.values.buffer as ArrayBuffer]);
    this.byName.set(record.name, record);
    await this.syncIngest();
    return collectionJson(record);
  }

  async fetch(collectionName: string, id: string, tenantId: string | undefined, note?: SeqNote): Promise<{ vector: VectorJson }> {
    const c = await this.lookup(collectionName, 'collection');
    const tenant = tenantOf(c, tenantId, 'tenant_id');
    checkId(id, 'id');
    await this.consistent(c, note);
    const row = this.stmt.fetch.get(c.id, tenant, id) as { vec: Buffer; properties: string } | undefined;
    if (!row) {
      const where = c.multiTenant ? ` for tenant "${tenant}"` : '';
      throw notFound(`no vector "${id}" in the collection "${c.name}"${where}`, 'id');
    }
    return { vector: { id, values: float32ArrayToNumbers(blobToFloats(row.vec)), properties: JSON.parse(row.properties) as Properties } };
  }

  async sample(body: SampleBody, note?: SeqNote): Promise<{ vectors: VectorJson[] }> {
    const c = await this.lookup(body.collection_name);
    const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
    await this.consistent(c, note);
    const res = await this.worker.call('sample', { collectionId: c.id, tenant, count: body.num_samples, includeVector: body.include_vector });
    return { vectors: res.map(vectorJson) };
  }

  /** Resolves once every acknowledged write is in the graphs (tests and benchmarks). */
  async flush(checkpoint = false): Promise<void> {
    await this.follower?.caughtUp();
    await this.worker.call('flush', { checkpoint });
  }

  /** Which strategy the worker used for a search: only for tests of the planner. */
  async explainSearch(body: SearchBody): Promise<string> {
    const c = await this.lookup(body.collection_name);
    const tenant = tenantOf(c, body.tenant_id, 'tenant_id');
    const query = Float32Array.from(body.reference_vector.element);
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    const res = await this.worker.call('search', { collectionId: c.id, tenant, query, k: body.max_results, filter, includeVector: false, properties: undefined });
    return res.strategy;
  }

  /** Applies and checkpoints every queued index change, then stops both workers. */
  async close(): Promise<void> {
    await this.follower?.stop();
    await Promise.all([this.worker.close('close', {}), this.ingest.close()]);
  }
}

