// The control-plane tables as the query builder (Kysely) sees them, on either engine: what a
// row holds once read. Times are unix milliseconds as numbers on both (PostgreSQL's BIGINT is read
// as a number: src/store/postgres.ts), JSON columns are TEXT, and binary columns are Buffers.
// migrations.ts creates these tables; test/store-postgres.test.ts checks the two agree.
import type { Generated } from 'kysely';

export interface ApiKeysTable {
  id: string;
  name: string;
  secret_hash: Buffer;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  /** 'admin' for keys made before roles existed (migration 12). */
  role: Generated<'admin' | 'maintainer' | 'member' | 'inference'>;
  /** The one project the key may touch; NULL: every project. */
  scope_project: Generated<string | null>;
  /** JSON array of collection names; NULL: every collection. */
  scope_collections: Generated<string | null>;
  /** JSON array of tenant ids; NULL: every tenant. */
  scope_tenants: Generated<string | null>;
}

export interface ModelsTable {
  id: string;
  project: string;
  description: Generated<string>;
  kind: 'realtime' | 'library';
  created_at: number;
}

export interface BuildsTable {
  id: string;
  model_id: string;
  file: string;
  sha256: string;
  size_bytes: number;
  /** JSON: [{name, type}] */
  features: string;
  /** JSON: [name] */
  outputs: string;
  /** JSON: qualified operator types */
  operators: string;
  /** JSON: {domain: version} */
  opsets: string;
  created_at: number;
}

/**
 * The bytes of uploaded builds by their sha256, stored once however many builds share them. Used
 * on PostgreSQL, where replicas share no DATA_DIR; empty on SQLite, whose builds are files.
 */
export interface BuildBlobsTable {
  sha256: string;
  bytes: Buffer;
  size_bytes: number;
  created_at: number;
}

export interface DeploymentsTable {
  id: string;
  model_id: string;
  status: 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED' | 'SUPERSEDED';
  reason: string | null;
  action: 'deploy' | 'undeploy';
  variation_name: string;
  build_id: string | null;
  /** JSON TrafficConfig */
  traffic: string;
  created_at: number;
  updated_at: number;
  instance_type: 'cpu' | 'cuda' | null;
}

export interface AudiencesTable {
  id: string;
  name: string;
  description: Generated<string>;
  /** JSON: {unary: [...], binary: [...]} */
  conditions: string;
  created_at: number;
  updated_at: number;
}

export interface LibraryDeploymentsTable {
  model_id: string;
  name: string;
  file: string;
  license: string | null;
  license_link: string | null;
  instance_type: 'cpu' | 'cuda';
  threads: number | null;
  status: 'PENDING' | 'DEPLOYING' | 'LIVE' | 'FAILED';
  reason: string | null;
  created_at: number;
  updated_at: number;
  failure_kind: 'missing_file' | 'load_error' | 'interrupted' | null;
  /** On how many replicas it runs; null: every replica. */
  replicas: Generated<number | null>;
  /** Speculative decoding: null, off; "ngram:<k>" or "draft:<k>" (migration 13). */
  speculative: Generated<string | null>;
  /** The draft model of "draft:<k>": a file relative to MODELS_DIR (migration 13). */
  draft_model: Generated<string | null>;
}

/** One row (id 1): the configuration version, bumped by triggers on every routing change (migration 9). */
export interface ConfigVersionTable {
  id: number;
  version: number;
}

/** Each replica of the host on this database (src/cluster/replicas.ts). */
export interface ReplicasTable {
  id: string;
  address: string;
  state: 'starting' | 'serving' | 'draining' | 'gone';
  started_at: number;
  heartbeat_at: number;
  applied_version: number;
  /** JSON ReplicaLoad */
  loaded: string;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: number;
}

/** Every control-plane table. The vector tables stay in each host's SQLite file (src/vectors/). */
export interface ControlPlaneTables {
  api_keys: ApiKeysTable;
  models: ModelsTable;
  builds: BuildsTable;
  build_blobs: BuildBlobsTable;
  deployments: DeploymentsTable;
  audiences: AudiencesTable;
  library_deployments: LibraryDeploymentsTable;
  config_version: ConfigVersionTable;
  replicas: ReplicasTable;
  schema_migrations: SchemaMigrationsTable;
}
