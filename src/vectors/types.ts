// Types shared by the host's main thread (routes, validation) and the index worker: collections,
// the messages between them, and the names of DESIGN.md section 6.

export type Metric = 'cosine' | 'l2' | 'dot';
export const METRICS: readonly Metric[] = ['cosine', 'l2', 'dot'];

/** ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$ (DESIGN.md section 6). */
export const COLLECTION_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$';
export const MAX_ID_LENGTH = 256;
export const MAX_TENANT_LENGTH = 256;
export const MAX_DIMENSION = 65536;
export const MAX_RESULTS = 1000;
export const MAX_SAMPLES = 1000;
/** Most vectors in one page of a scroll. */
export const MAX_SCROLL_LIMIT = 1000;

/** A JSON object of properties as the client sent it. */
export type Properties = Record<string, unknown>;

/** A property value a filter compares with. */
export type Scalar = string | number | boolean | null;

export interface RangeBounds {
  gt?: number | string;
  gte?: number | string;
  lt?: number | string;
  lte?: number | string;
}

/** A search filter after parseFilter has checked it (the grammar is in filter.ts). */
export type Filter =
  | { eq: Record<string, Scalar> }
  | { in: Record<string, Scalar[]> }
  | { range: Record<string, RangeBounds> }
  | { and: Filter[] }
  | { or: Filter[] };

export interface HnswParams {
  /** Links per node (hnswlib's M). */
  m: number;
  /** Candidate list while building. */
  efConstruction: number;
  /** Candidate list while searching (setEf). */
  ef: number;
}

export interface NewCollection {
  name: string;
  dimension: number;
  metric: Metric;
  description: string;
  multiTenant: boolean;
  hnsw: HnswParams;
}

/** A collection as stored: what was asked for, and what the store keeps about it. */
export interface CollectionRecord extends NewCollection {
  /** Internal id: names the index directory, never reused. */
  id: number;
  vectorCount: number;
  createdAt: number;
}

/** What the worker knows about a collection's indexes, for GET /collections/{name}. */
export interface IndexStats {
  tenants: number;
  indexed: number;
  tombstones: number;
  pending: number;
  compacting: boolean;
}

export interface UpsertBatch {
  collectionId: number;
  /** Tenant of each vector ('' in a plain collection). */
  tenants: string[];
  ids: string[];
  /** n * dimension float32 values, row by row. */
  values: Float32Array;
  properties: Properties[];
}

export interface SearchRequest {
  collectionId: number;
  tenant: string;
  query: Float32Array;
  k: number;
  filter: Filter | undefined;
  includeVector: boolean;
  /** Property names to return; undefined returns none. */
  properties: string[] | undefined;
}

export interface SearchHit {
  id: string;
  distance: number;
  values?: Float32Array;
  properties?: Properties;
}

export interface SearchResult {
  hits: SearchHit[];
  /** How the search was answered, for the log and the tests. */
  strategy: 'graph' | 'filtered-graph' | 'exact' | 'empty';
  /** Committed vectors of the partition not yet in its graph, scanned exactly for this answer. */
  unindexed: number;
}

export interface SampleRequest {
  collectionId: number;
  tenant: string;
  count: number;
  includeVector: boolean;
}

export interface SampledVector {
  id: string;
  values?: Float32Array;
  properties: Properties;
}

export interface CountRequest {
  collectionId: number;
  tenant: string;
  filter: Filter | undefined;
}

export interface ScrollRequest {
  collectionId: number;
  tenant: string;
  filter: Filter | undefined;
  /** Vectors with ids after this one (in SQLite's order: the bytes of the UTF-8); undefined from the start. */
  after: string | undefined;
  limit: number;
  includeVector: boolean;
  /** Property names to return; undefined returns them all. */
  properties: string[] | undefined;
}

export interface ScrollResult {
  vectors: SampledVector[];
  /** More matching vectors may follow: true unless the scan reached the partition's end. */
  more: boolean;
  /**
   * Where the next page starts when the scan's budget ran out before the page filled: the last
   * id scanned (at or after the last one returned). Absent when the page ends at its last vector.
   */
  resumeAfter?: string;
}

/**
 * Rows of the shared store (PostgreSQL, shared-log.ts) past a replica's sequence number, for its
 * cache to apply (log-follower.ts): each key at most once, in sequence order.
 */
export interface LogBatch {
  collectionId: number;
  /** The sequence number the cache is at once the batch is applied. */
  through: number;
  tenants: string[];
  ids: string[];
  seqs: number[];
  /** Whether each row is a deletion (it then has neither values nor properties). */
  deleted: boolean[];
  /** The values of the rows that are not deletions, in order: dimension floats each. */
  values: Float32Array;
  /** Each row's properties as JSON text ('' for a deletion). */
  properties: string[];
}

/** A collection in a replica's cache, and the sequence number the cache has applied. */
export interface CachedCollection {
  record: CollectionRecord;
  appliedSeq: number;
}

/** A parsed and checked collection export (snapshot-format.ts), ready to be written in one transaction. */
export interface ImportBatch extends Omit<UpsertBatch, 'collectionId'> {
  collection: NewCollection;
}

/** What /metrics reads from the index worker, per collection. */
export interface CollectionGauges {
  collectionId: number;
  /** Vector changes committed but not yet in the graphs. */
  pending: number;
  /** How long the collection's queued graph work would take at the measured insert rate. */
  backlogSeconds: number;
  /** Seconds since the collection's graphs were last all checkpointed; 0 while they are. */
  checkpointAgeSeconds: number;
}

export interface VectorKey {
  tenant: string;
  id: string;
}

/** How the index worker's parts log; index-worker.ts forwards each line to the host's logger. */
export type LogFn = (level: 'info' | 'warn' | 'error', msg: string, data?: Record<string, unknown>) => void;

/** Settings the worker needs; a subset of Config.vectors plus where things live. */
export interface WorkerSettings {
  dbPath: string;
  /** <DATA_DIR>/vectors: one directory per collection id. */
  indexDir: string;
  checkpointChanges: number;
  checkpointIdleMs: number;
  compactMinTombstones: number;
  exactScanMax: number;
  maxBacklogFloats: number;
  /** Queued graph work (seconds at the measured insert rate) beyond which upserts wait; undefined: no such bound. */
  maxBacklogSeconds?: number;
  /** Nice value for the worker thread (lowerThreadPriority). */
  nice: number;
}

/** The worker's operations: name -> [argument, result]. */
export type WorkerOps = {
  createCollection: [NewCollection, CollectionRecord];
  dropCollection: [{ collectionId: number }, { removed: boolean }];
  upsert: [UpsertBatch, { numAffected: number }];
  delete: [{ collectionId: number; keys: VectorKey[] }, { numDeleted: number }];
  /** Deletes a tenant's vectors whose properties match the filter. */
  deleteWhere: [{ collectionId: number; tenant: string; filter: Filter }, { numDeleted: number }];
  count: [CountRequest, { count: number }];
  scroll: [ScrollRequest, ScrollResult];
  /** Creates a collection with all its vectors in one transaction (an import). */
  importCollection: [ImportBatch, CollectionRecord];
  gauges: [Record<string, never>, CollectionGauges[]];
  /** Replicas on PostgreSQL: the collections the cache holds, and how far each has applied. */
  cachedCollections: [Record<string, never>, CachedCollection[]];
  /** Replicas on PostgreSQL: holds a collection of the shared store in the cache, under its id. */
  adoptCollection: [CollectionRecord, CachedCollection];
  /** Replicas on PostgreSQL: applies rows of the shared store; answers the sequence number reached. */
  applyLog: [LogBatch, { appliedSeq: number }];
  /** Replicas on PostgreSQL: resolves once the queued graph work is under its bounds (VECTOR_MAX_BACKLOG_SECONDS, VECTOR_MAX_BACKLOG_FLOATS). */
  room: [Record<string, never>, Record<string, never>];
  /** Replicas on PostgreSQL: the ids of a tenant's vectors whose properties match (a delete by filter). */
  idsWhere: [{ collectionId: number; tenant: string; filter: Filter }, { ids: string[]; asOf: number }];
  search: [SearchRequest, SearchResult];
  sample: [SampleRequest, SampledVector[]];
  stats: [{ collectionId: number }, IndexStats];
  /** Resolves once every queued index change is applied (tests, benchmarks, shutdown). */
  flush: [{ checkpoint: boolean }, { checkpointed: number }];
  /** Applies and checkpoints everything, then closes the worker's database connection. */
  close: [Record<string, never>, { checkpointed: number }];
};

/** The ingest worker's operations. */
export type IngestOps = {
  /** The collections upserts may name (sent again after every create and delete). */
  setCollections: [{ collections: Array<Pick<CollectionRecord, 'id' | 'name' | 'dimension' | 'multiTenant'>> }, null];
  /** Parses and checks an upsert body (UTF-8 JSON) and packs it for the index worker. */
  parseUpsert: [{ bytes: Uint8Array }, UpsertBatch];
  /**
   * An import: a collection export (snapshot-format.ts) read as it arrives, under `name` when
   * given. Begin opens a reader, each chunk goes to it in order, end checks the last line and
   * returns the packed collection; abort (or end, or a refusal) lets the reader go.
   */
  importBegin: [{ name: string | undefined }, { session: number }];
  importChunk: [{ session: number; bytes: Uint8Array }, null];
  importEnd: [{ session: number }, ImportBatch];
  importAbort: [{ session: number }, null];
};

/** An error the worker reports for the main thread to render (code as in src/errors.ts). */
export interface WorkerError {
  code: 'invalid_argument' | 'not_found' | 'conflict' | 'payload_too_large' | 'internal';
  message: string;
  param: string | null;
}

/** Thrown inside the worker for a refusal the client should see. */
export class VectorStoreError extends Error {
  constructor(
    readonly code: WorkerError['code'],
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = 'VectorStoreError';
  }
}
