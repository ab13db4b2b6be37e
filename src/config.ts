// Host configuration, read once from the environment. Every value is checked here so that a
// typo fails at start with one line naming the variable, not later with a confusing error.
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  modelsDir: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** HS256 secret from PLATFORM_TOKEN_SECRET; when absent one is made in DATA_DIR. */
  tokenSecret: string | undefined;
  metricsPublic: boolean;
  /** postgres://...: the control plane on PostgreSQL (several replicas); unset: SQLite in dataDir. */
  databaseUrl: string | undefined;
  /** Serve /openapi.json and /docs without a token (DOCS_PUBLIC=1); by default they need one, like every route. */
  docsPublic: boolean;
  /** Largest accepted request body, in bytes (413 beyond it). */
  bodyLimitBytes: number;
  /** Failed key exchanges allowed per client address within the window before 429. */
  authFailureLimit: number;
  authFailureWindowMs: number;
  /** How long shutdown waits for in-flight requests before giving up. */
  shutdownTimeoutMs: number;
  /** After SIGTERM, how long /readyz says 503 while requests are still taken, before the listener closes. */
  drainDelayMs: number;
  /** Largest ONNX upload, in bytes. */
  maxBuildBytes: number;
  /** Dynamic batching of predict requests per build. */
  batching: { maxBatchRows: number; maxWaitMicros: number; maxInFlight: number };
  /** The vector store (DESIGN.md section 6). */
  vectors: VectorConfig;
  /** Shadow copies: running at once, waiting at most, and each one's timeout. */
  shadow: { concurrency: number; maxQueue: number; timeoutMs: number };
  /** Rows kept in the request log before the oldest are dropped. */
  requestLogMaxRows: number;
  /** This replica among those on one database (src/cluster/). */
  replica: {
    /** REPLICA_ID (the pod name on Kubernetes); by default `local` on SQLite, else the host name, process id and a random suffix. */
    id: string;
    /** REPLICA_ADDRESS: the URL other replicas reach this one at; by default the address it listens on. */
    address: string | undefined;
    /** Mean time between reads of the configuration version, in case a notification was lost. */
    configPollMs: number;
    /** A replica whose heartbeat is older than this no longer counts as live; heartbeats come 5 times as often. */
    timeoutMs: number;
    /** A deployment not loaded on every live replica it waits for within this long is FAILED, naming them. */
    deployTimeoutMs: number;
  };
  /** LLM engine settings for every library model (unset: the engine's defaults). */
  llm: { contextLength?: number; maxRunningSequences?: number; maxQueued?: number; kvCacheBytes?: number };
}

export interface VectorConfig {
  /** Largest body accepted by the vector routes (413 beyond it); the default fits 500 x 768 floats many times. */
  maxBodyBytes: number;
  /** Largest import body (an export file), read as it arrives; 413 beyond it. */
  maxImportBytes: number;
  /** An export not read by its client for this long is ended and its snapshot released. */
  exportIdleTimeoutMs: number;
  /** Exports streaming at once; beyond, 429 with Retry-After. */
  maxConcurrentExports: number;
  /** HNSW defaults for new collections: links per node, build-time and search-time candidate lists. */
  defaultM: number;
  defaultEfConstruction: number;
  defaultEf: number;
  /** Index changes after which a tenant's index is checkpointed to disk. */
  checkpointChanges: number;
  /** A tenant's index with unsaved changes is checkpointed after this long without writes. */
  checkpointIdleMs: number;
  /** Tombstones (deleted or replaced vectors still in the graph) that trigger a compaction. */
  compactMinTombstones: number;
  /** A filtered search whose matches are at most this many is answered by an exact scan. */
  exactScanMax: number;
  /** Queued index work (floats) beyond which upserts wait for the index to catch up. */
  maxBacklogFloats: number;
  /** Queued index work (seconds to drain at the measured graph insert rate) beyond which upserts wait. */
  maxBacklogSeconds: number;
  /** Nice value of the ingest worker (parses upsert bodies); 0 = the event loop's priority. */
  ingestNice: number;
  /** Nice value of the index worker while it has graph work queued (searches run at 0). */
  indexNice: number;
  /** On PostgreSQL: mean time between a replica's reads of every collection's head (besides notifications). */
  pollMs: number;
  /** On PostgreSQL: longest a read waits for the replica's copy to reach the collection's head (then 503). */
  readTimeoutMs: number;
  /** On PostgreSQL: how long a delete's tombstone is kept; a replica away longer copies the collection again. */
  tombstoneRetentionMs: number;
}

export class ConfigError extends Error {}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** The variables that are set, each checked like integer(). */
function optionalIntegers<K extends string>(env: NodeJS.ProcessEnv, spec: Record<K, readonly [string, number, number]>): Partial<Record<K, number>> {
  const out: Partial<Record<K, number>> = {};
  for (const [key, [name, min, max]] of Object.entries(spec) as Array<[K, readonly [string, number, number]]>) {
    if (env[name] !== undefined && env[name] !== '') out[key] = integer(env, name, 0, min, max);
  }
  return out;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '' || raw === '0' || raw === 'false' || raw === 'no') return false;
  if (raw === '1' || raw === 'true' || raw === 'yes') return true;
  throw new ConfigError(`${name} must be 1 or 0, got "${env[name]}"`);
}

/** DATA_DIR, resolved: the host's and the CLI's (`platform keys`) one reading of it. */
export function dataDirFrom(env: NodeJS.ProcessEnv): string {
  return path.resolve(env.DATA_DIR?.trim() || './data');
}

/** DATABASE_URL when set, checked to be a PostgreSQL URL; the host's and the CLI's one reading. */
export function databaseUrlFrom(env: NodeJS.ProcessEnv): string | undefined {
  const url = env.DATABASE_URL?.trim() || undefined;
  if (url !== undefined && !/^postgres(ql)?:\/\//.test(url)) {
    throw new ConfigError('DATABASE_URL must be a PostgreSQL URL (postgres://user:password@host:5432/database)');
  }
  return url;
}

function replicaIdFrom(env: NodeJS.ProcessEnv): string {
  const id = env.REPLICA_ID?.trim();
  if (id === undefined || id === '') {
    // One host on its SQLite file: the same id at every start, so that a crash leaves no ghost
    // replica for the next start to wait on. On PostgreSQL each process its own.
    if (!env.DATABASE_URL?.trim()) return 'local';
    return `${os.hostname()}-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$/.test(id)) throw new ConfigError(`REPLICA_ID must be letters, digits, "_", "." or "-" (a pod name), got "${id}"`);
  return id;
}

function replicaAddressFrom(env: NodeJS.ProcessEnv): string | undefined {
  let raw = env.REPLICA_ADDRESS?.trim();
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  // An IPv6 pod address as Kubernetes' downward API gives it (http://fd00::1:8080) needs brackets.
  const v6 = /^(https?:\/\/)([0-9a-fA-F]*:[0-9a-fA-F:]+):(\d+)$/.exec(raw);
  if (v6) raw = `${v6[1]}[${v6[2]}]:${v6[3]}`;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`REPLICA_ADDRESS must be an http:// URL other replicas reach this one at, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`REPLICA_ADDRESS must be an http:// URL other replicas reach this one at, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const logLevel = (env.LOG_LEVEL ?? 'info').trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }
  const tokenSecret = env.PLATFORM_TOKEN_SECRET?.length ? env.PLATFORM_TOKEN_SECRET : undefined;
  if (tokenSecret !== undefined && Buffer.byteLength(tokenSecret) < 32) {
    throw new ConfigError('PLATFORM_TOKEN_SECRET must be at least 32 bytes long');
  }
  const databaseUrl = databaseUrlFrom(env);
  // Replicas on one database must sign and check tokens with one secret: a token minted by one
  // is accepted by all. DATA_DIR is each replica's own, so the secret cannot be made there.
  if (databaseUrl !== undefined && tokenSecret === undefined) {
    throw new ConfigError('DATABASE_URL needs PLATFORM_TOKEN_SECRET (32 bytes or more), the same on every replica, so that a token from one is accepted by all');
  }
  return {
    host: env.HOST?.trim() || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    dataDir: dataDirFrom(env),
    modelsDir: path.resolve(env.MODELS_DIR?.trim() || './models'),
    logLevel: logLevel as Config['logLevel'],
    tokenSecret,
    metricsPublic: flag(env, 'METRICS_PUBLIC'),
    databaseUrl,
    docsPublic: flag(env, 'DOCS_PUBLIC'),
    bodyLimitBytes: integer(env, 'MAX_BODY_BYTES', 32 * 1024 * 1024, 1024, 2 ** 31 - 1),
    authFailureLimit: integer(env, 'AUTH_FAILURE_LIMIT', 10, 1, 1_000_000),
    authFailureWindowMs: integer(env, 'AUTH_FAILURE_WINDOW_SECONDS', 60, 1, 86_400) * 1000,
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_SECONDS', 30, 1, 3600) * 1000,
    drainDelayMs: integer(env, 'DRAIN_DELAY_SECONDS', 0, 0, 3600) * 1000,
    maxBuildBytes: integer(env, 'MAX_BUILD_BYTES', 512 * 1024 * 1024, 1024, 2 ** 31 - 1),
    vectors: {
      maxBodyBytes: integer(env, 'MAX_VECTOR_BODY_BYTES', 64 * 1024 * 1024, 1024, 2 ** 31 - 1),
      maxImportBytes: integer(env, 'MAX_VECTOR_IMPORT_BYTES', 1024 * 1024 * 1024, 1024, Number.MAX_SAFE_INTEGER),
      exportIdleTimeoutMs: integer(env, 'VECTOR_EXPORT_IDLE_TIMEOUT_MS', 30_000, 100, 86_400_000),
      maxConcurrentExports: integer(env, 'VECTOR_MAX_CONCURRENT_EXPORTS', 4, 1, 1024),
      defaultM: integer(env, 'VECTOR_DEFAULT_M', 16, 2, 100),
      defaultEfConstruction: integer(env, 'VECTOR_DEFAULT_EF_CONSTRUCTION', 200, 1, 10_000),
      defaultEf: integer(env, 'VECTOR_DEFAULT_EF', 64, 1, 10_000),
      checkpointChanges: integer(env, 'VECTOR_CHECKPOINT_CHANGES', 10_000, 1, 100_000_000),
      checkpointIdleMs: integer(env, 'VECTOR_CHECKPOINT_IDLE_MS', 5000, 0, 86_400_000),
      compactMinTombstones: integer(env, 'VECTOR_COMPACT_MIN_TOMBSTONES', 1000, 1, 100_000_000),
      exactScanMax: integer(env, 'VECTOR_EXACT_SCAN_MAX', 2000, 0, 100_000_000),
      maxBacklogFloats: integer(env, 'VECTOR_MAX_BACKLOG_FLOATS', 16 * 1024 * 1024, 1024, 2 ** 31 - 1),
      maxBacklogSeconds: integer(env, 'VECTOR_MAX_BACKLOG_SECONDS', 10, 1, 86_400),
      ingestNice: integer(env, 'VECTOR_INGEST_NICE', 10, 0, 19),
      indexNice: integer(env, 'VECTOR_INDEX_NICE', 5, 0, 19),
      pollMs: integer(env, 'VECTOR_POLL_MS', 1000, 10, 600_000),
      readTimeoutMs: integer(env, 'VECTOR_READ_TIMEOUT_MS', 10_000, 1, 600_000),
      tombstoneRetentionMs: integer(env, 'VECTOR_TOMBSTONE_RETENTION_SECONDS', 86_400, 0, 10 * 365 * 86_400) * 1000,
    },
    batching: {
      maxBatchRows: integer(env, 'PREDICT_MAX_BATCH_ROWS', 1024, 1, 1_000_000),
      maxWaitMicros: integer(env, 'PREDICT_MAX_WAIT_MICROS', 300, 0, 1_000_000),
      maxInFlight: integer(env, 'PREDICT_MAX_IN_FLIGHT', 2, 1, 64),
    },
    shadow: {
      concurrency: integer(env, 'SHADOW_CONCURRENCY', 4, 1, 1024),
      maxQueue: integer(env, 'SHADOW_MAX_QUEUE', 1000, 0, 1_000_000),
      timeoutMs: integer(env, 'SHADOW_TIMEOUT_MS', 5000, 1, 600_000),
    },
    requestLogMaxRows: integer(env, 'REQUEST_LOG_MAX_ROWS', 100_000, 100, 100_000_000),
    replica: {
      id: replicaIdFrom(env),
      address: replicaAddressFrom(env),
      configPollMs: integer(env, 'CONFIG_POLL_MS', 1000, 10, 600_000),
      timeoutMs: integer(env, 'REPLICA_TIMEOUT_MS', 5000, 100, 600_000),
      deployTimeoutMs: integer(env, 'DEPLOY_TIMEOUT_SECONDS', 600, 1, 86_400) * 1000,
    },
    llm: optionalIntegers(env, LLM_ENV_OPTIONS),
  };
}

/**
 * The LLM engine options an operator sets through the environment: [variable, min, max]. The
 * engine owns the ranges (the addon's llmOptionLimits); these are checked at start-up so that a
 * bad value stops the host before any model loads, and test/llm-option-limits.test.ts holds them
 * to the engine's (the same maximum; a minimum at or above the engine's).
 */
export const LLM_ENV_OPTIONS = {
  contextLength: ['LLM_CONTEXT_LENGTH', 16, 2 ** 24],
  maxRunningSequences: ['LLM_MAX_RUNNING_SEQUENCES', 1, 4096],
  maxQueued: ['LLM_MAX_QUEUED', 0, 2 ** 20],
  kvCacheBytes: ['LLM_KV_CACHE_BYTES', 1, Number.MAX_SAFE_INTEGER],
} as const satisfies Record<string, readonly [string, number, number]>;
