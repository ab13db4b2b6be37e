// The vector store as the routes see it: checks each request against its collection (dimension,
// tenants, ids, numbers) on the main thread, where a refusal costs nothing and names the field
// at fault, then hands the work to the index worker. Fetch and the collection listings read
// SQLite directly: they are point reads that need no graph.
import path from 'node:path';
import type { FastifyBaseLogger } from 'fastify';
import type { VectorConfig } from '../config.js';
import { conflict, invalidArgument, notFound } from '../errors.js';
import type { Db } from '../store/database.js';
import { FLOAT32_MAX, float32ArrayToNumbers } from './distance.js';
import { blobToFloats, collectionFromRow } from './engine.js';
import { parseFilter } from './filter.js';
import {
  MAX_ID_LENGTH,
  type CollectionRecord,
  type IndexStats,
  type Metric,
  type Properties,
  type VectorKey,
} from './types.js';
import { IndexWorker } from './worker-client.js';

// ---- request bodies (after schema validation: types are right, the rest is checked here) ----

export interface CreateCollectionBody {
  name: string;
  dimension: number;
  metric?: Metric;
  description?: string;
  multi_tenant?: boolean;
  hnsw?: { m?: number; ef_construction?: number; ef?: number };
}

export interface UpsertBody {
  collection_name: string;
  tenant_id?: string;
  vector: Array<{ id: string; values: number[]; properties?: Properties; tenant_id?: string }>;
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

export interface DeleteBody {
  collection_name: string;
  tenant_id?: string;
  vector_identifiers: Array<{ vector_id: string; tenant_id?: string }>;
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

const collectionJson = (c: CollectionRecord, stats?: IndexStats): CollectionJson => ({
  name: c.name,
  dimension: c.dimension,
  metric: c.metric,
  description: c.description,
  multi_tenant: c.multiTenant,
  hnsw: { m: c.hnsw.m, ef_construction: c.hnsw.efConstruction, ef: c.hnsw.ef },
  vector_count: c.vectorCount,
  created_at: c.createdAt,
  ...(stats ? { index: stats } : {}),
});

const isPlainObject = (v: unknown): v is Properties => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkId(id: string, param: string): void {
  if (id.length === 0) throw invalidArgument(`${param} is empty; an id is 1 to ${MAX_ID_LENGTH} characters`, param);
  if (id.length > MAX_ID_LENGTH) throw invalidArgument(`${param} has ${id.length} characters; an id is at most ${MAX_ID_LENGTH}`, param);
}

/** Copies numbers into `out` at `offset`, refusing anything a float32 cannot hold. */
function packNumbers(values: number[], out: Float32Array, offset: number, param: string): void {
  for (let j = 0; j < values.length; j++) {
    const x = values[j]!;
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      throw invalidArgument(`${param}[${j}] is ${typeof x === 'number' ? String(x) : typeof x}; every value must be a finite number`, `${param}[${j}]`);
    }
    if (Math.abs(x) > FLOAT32_MAX) throw invalidArgument(`${param}[${j}] is ${x}, beyond the float32 range (±3.4e38)`, `${param}[${j}]`);
    out[offset + j] = x;
  }
}

function checkDimension(c: CollectionRecord, values: number[], param: string): void {
  if (values.length !== c.dimension) {
    throw invalidArgument(`${param} has ${values.length} numbers; the collection "${c.name}" has dimension ${c.dimension}`, param);
  }
}

export class VectorService {
  private readonly worker: IndexWorker;
  private readonly byName = new Map<string, CollectionRecord>();
  private readonly stmt;

  constructor(
    private readonly db: Db,
    private readonly config: VectorConfig,
    dataDir: string,
    log: FastifyBaseLogger,
  ) {
    this.worker = new IndexWorker(
      {
        dbPath: db.name,
        indexDir: path.join(dataDir, 'vectors'),
        checkpointChanges: config.checkpointChanges,
        checkpointIdleMs: config.checkpointIdleMs,
        compactMinTombstones: config.compactMinTombstones,
        exactScanMax: config.exactScanMax,
        maxBacklogFloats: config.maxBacklogFloats,
      },
      log,
    );
    this.stmt = {
      all: db.prepare('SELECT * FROM vector_collections ORDER BY name'),
      byName: db.prepare('SELECT * FROM vector_collections WHERE name = ?'),
      fetch: db.prepare('SELECT vec, properties FROM vectors WHERE collection_id = ? AND tenant = ? AND id = ?'),
    };
    for (const row of this.stmt.all.all() as Parameters<typeof collectionFromRow>[0][]) {
      const c = collectionFromRow(row);
      this.byName.set(c.name, c);
    }
    // Start loading the indexes now rather than on the first request.
    this.worker.start();
  }

  private collection(name: string, param = 'collection_name'): CollectionRecord {
    const c = this.byName.get(name);
    if (!c) throw notFound(`no vector collection named "${name}"`, param);
    return c;
  }

  private tenantOf(c: CollectionRecord, given: string | undefined, param: string): string {
    if (c.multiTenant) {
      if (given === undefined) throw invalidArgument(`the collection "${c.name}" is multi-tenant: ${param} is required`, param);
      return given;
    }
    if (given !== undefined) throw invalidArgument(`the collection "${c.name}" has no tenants: remove ${param}`, param);
    return '';
  }

  private missingTenant(c: CollectionRecord, at: string) {
    return invalidArgument(
      `${at} has no tenant_id and the request none either; the collection "${c.name}" is multi-tenant`,
      'tenant_id',
    );
  }

  // ---- collections ----

  async createCollection(body: CreateCollectionBody): Promise<CollectionJson> {
    if (this.byName.has(body.name)) throw conflict(`a vector collection named "${body.name}" already exists`, 'name');
    const record = await this.worker.call('createCollection', {
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
    });
    this.byName.set(record.name, record);
    return collectionJson(record);
  }

  listCollections(): CollectionJson[] {
    return (this.stmt.all.all() as Parameters<typeof collectionFromRow>[0][]).map((r) => collectionJson(collectionFromRow(r)));
  }

  async getCollection(name: string): Promise<CollectionJson> {
    const c = this.collection(name, 'name');
    const stats = await this.worker.call('stats', { collectionId: c.id });
    const row = this.stmt.byName.get(name) as Parameters<typeof collectionFromRow>[0] | undefined;
    if (!row) throw notFound(`no vector collection named "${name}"`, 'name');
    return collectionJson(collectionFromRow(row), stats);
  }

  async deleteCollection(name: string): Promise<{ name: string; deleted: true }> {
    const c = this.collection(name, 'name');
    this.byName.delete(name);
    try {
      await this.worker.call('dropCollection', { collectionId: c.id });
    } catch (err) {
      this.byName.set(name, c);
      throw err;
    }
    return { name, deleted: true };
  }

  // ---- the five operations ----

  async upsert(body: UpsertBody): Promise<{ num_affected: number }> {
    const c = this.collection(body.collection_name);
    const n = body.vector.length;
    const dim = c.dimension;
    const values = new Float32Array(n * dim);
    const ids = new Array<string>(n);
    const tenants = new Array<string>(n);
    const properties = new Array<Properties>(n);
    const seen = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const v = body.vector[i]!;
      const at = `vector[${i}]`;
      checkId(v.id, `${at}.id`);
      let tenant: string;
      if (v.tenant_id !== undefined && body.tenant_id !== undefined && v.tenant_id !== body.tenant_id) {
        throw invalidArgument(`${at}.tenant_id "${v.tenant_id}" differs from the request's tenant_id "${body.tenant_id}"`, `${at}.tenant_id`);
      }
      if (v.tenant_id !== undefined) tenant = this.tenantOf(c, v.tenant_id, `${at}.tenant_id`);
      else if (body.tenant_id !== undefined || !c.multiTenant) tenant = this.tenantOf(c, body.tenant_id, 'tenant_id');
      else throw this.missingTenant(c, at);
      const key = `${tenant}\u0000${v.id}`;
      const first = seen.get(key);
      if (first !== undefined) {
        throw invalidArgument(`${at}.id "${v.id}" repeats vector[${first}].id; an id may appear once per request`, `${at}.id`);
      }
      seen.set(key, i);
      checkDimension(c, v.values, `${at}.values`);
      packNumbers(v.values, values, i * dim, `${at}.values`);
      const props = v.properties ?? {};
      if (!isPlainObject(props)) throw invalidArgument(`${at}.properties must be a JSON object`, `${at}.properties`);
      ids[i] = v.id;
      tenants[i] = tenant;
      properties[i] = props;
    }
    const res = await this.worker.call('upsert', { collectionId: c.id, ids, tenants, values, properties }, [values.buffer as ArrayBuffer]);
    return { num_affected: res.numAffected };
  }

  async search(body: SearchBody): Promise<{ search_results: SearchResultJson[] }> {
    const c = this.collection(body.collection_name);
    const tenant = this.tenantOf(c, body.tenant_id, 'tenant_id');
    checkDimension(c, body.reference_vector.element, 'reference_vector.element');
    const query = new Float32Array(c.dimension);
    packNumbers(body.reference_vector.element, query, 0, 'reference_vector.element');
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    const res = await this.worker.call(
      'search',
      { collectionId: c.id, tenant, query, k: body.max_results, filter, includeVector: body.include_vector, properties: body.properties },
      [query.buffer as ArrayBuffer],
    );
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

  async delete(body: DeleteBody): Promise<{ num_vectors_deleted: number }> {
    const c = this.collection(body.collection_name);
    const keys: VectorKey[] = body.vector_identifiers.map((v, i) => {
      const at = `vector_identifiers[${i}]`;
      checkId(v.vector_id, `${at}.vector_id`);
      if (v.tenant_id !== undefined && body.tenant_id !== undefined && v.tenant_id !== body.tenant_id) {
        throw invalidArgument(`${at}.tenant_id "${v.tenant_id}" differs from the request's tenant_id "${body.tenant_id}"`, `${at}.tenant_id`);
      }
      if (v.tenant_id !== undefined) return { tenant: this.tenantOf(c, v.tenant_id, `${at}.tenant_id`), id: v.vector_id };
      if (body.tenant_id === undefined && c.multiTenant) throw this.missingTenant(c, at);
      const tenant = this.tenantOf(c, body.tenant_id, 'tenant_id');
      return { tenant, id: v.vector_id };
    });
    const res = await this.worker.call('delete', { collectionId: c.id, keys });
    return { num_vectors_deleted: res.numDeleted };
  }

  fetch(collectionName: string, id: string, tenantId: string | undefined): { vector: VectorJson } {
    const c = this.collection(collectionName, 'collection');
    const tenant = this.tenantOf(c, tenantId, 'tenant_id');
    checkId(id, 'id');
    const row = this.stmt.fetch.get(c.id, tenant, id) as { vec: Buffer; properties: string } | undefined;
    if (!row) {
      const where = c.multiTenant ? ` for tenant "${tenant}"` : '';
      throw notFound(`no vector "${id}" in the collection "${c.name}"${where}`, 'id');
    }
    return { vector: { id, values: float32ArrayToNumbers(blobToFloats(row.vec)), properties: JSON.parse(row.properties) as Properties } };
  }

  async sample(body: SampleBody): Promise<{ vectors: VectorJson[] }> {
    const c = this.collection(body.collection_name);
    const tenant = this.tenantOf(c, body.tenant_id, 'tenant_id');
    const res = await this.worker.call('sample', { collectionId: c.id, tenant, count: body.num_samples, includeVector: body.include_vector });
    return {
      vectors: res.map((v) => ({ id: v.id, ...(v.values ? { values: float32ArrayToNumbers(v.values) } : {}), properties: v.properties })),
    };
  }

  /** Resolves once every acknowledged write is in the graphs (tests and benchmarks). */
  async flush(checkpoint = false): Promise<void> {
    await this.worker.call('flush', { checkpoint });
  }

  /** Which strategy the worker used for a search: only for tests of the planner. */
  async explainSearch(body: SearchBody): Promise<string> {
    const c = this.collection(body.collection_name);
    const tenant = this.tenantOf(c, body.tenant_id, 'tenant_id');
    const query = Float32Array.from(body.reference_vector.element);
    const filter = body.filter === undefined ? undefined : parseFilter(body.filter);
    const res = await this.worker.call('search', { collectionId: c.id, tenant, query, k: body.max_results, filter, includeVector: false, properties: undefined });
    return res.strategy;
  }

  async close(): Promise<void> {
    await this.worker.close();
  }
}

