// Versioned schema changes, applied in order on start. Append new entries; never edit one that
// has shipped, since databases in the field have already applied it. Each is written for both
// engines of the store: `sql` for SQLite (the embedded default) and `postgres` for PostgreSQL
// (DATABASE_URL, for several replicas), with the same tables, columns and constraints. Unix
// milliseconds are BIGINT on PostgreSQL (INTEGER is 32 bits there), BLOB is BYTEA, and SQLite's
// STRICT has no PostgreSQL counterpart because PostgreSQL's columns are typed anyway.

export interface Migration {
  version: number;
  name: string;
  /** SQLite. */
  sql: string;
  /** PostgreSQL; a migration without it cannot be applied there. */
  postgres?: string;
}

// Migrations whose statements are the same on both engines have one text.
const INSTANCE_TYPE = `
      -- The instance type of the variation a realtime deployment deploys; NULL for an undeploy.
      -- Deployments made before instance types existed ran on the CPU.
      ALTER TABLE deployments ADD COLUMN instance_type TEXT CHECK (instance_type IN ('cpu', 'cuda'));
      UPDATE deployments SET instance_type = 'cpu' WHERE action = 'deploy';
    `;

const FAILURE_KIND = `
      -- What kind of failure a FAILED library deployment had, for the host to act on: a
      -- 'missing_file' one is tried again at start-up, in case the file is back. NULL unless FAILED.
      ALTER TABLE library_deployments ADD COLUMN failure_kind TEXT CHECK (failure_kind IN ('missing_file', 'load_error', 'interrupted'));
      -- Rows FAILED before this column existed, told apart by the reasons the host wrote then: the
      -- restart text of restore(), and the GGUF reader's "cannot open <file>: ENOENT: no such file
      -- or directory, ..." for a missing file (so that it, too, is tried again at the next start).
      UPDATE library_deployments SET failure_kind = CASE
          WHEN reason = 'interrupted by a restart of the host' THEN 'interrupted'
          WHEN reason LIKE '%ENOENT%' OR reason LIKE '%no such file or directory%' THEN 'missing_file'
          ELSE 'load_error'
        END
        WHERE status = 'FAILED';
    `;

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'api_keys',
    sql: `
      CREATE TABLE api_keys (
        id           TEXT PRIMARY KEY,           -- public part of the key, shown by 'keys list'
        name         TEXT NOT NULL,
        secret_hash  BLOB NOT NULL,              -- SHA-256 of the secret part; the key itself is never stored
        created_at   INTEGER NOT NULL,           -- unix ms
        revoked_at   INTEGER,                    -- unix ms, NULL while active
        last_used_at INTEGER                     -- unix ms of the last token exchange
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE api_keys (
        id           TEXT PRIMARY KEY,
        name         TEXT NOT NULL,
        secret_hash  BYTEA NOT NULL,
        created_at   BIGINT NOT NULL,
        revoked_at   BIGINT,
        last_used_at BIGINT
      );
    `,
  },
  {
    version: 2,
    name: 'realtime_models',
    sql: `
      CREATE TABLE models (
        id          TEXT PRIMARY KEY,            -- ^[a-z0-9][a-z0-9_-]{0,63}$
        project     TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        kind        TEXT NOT NULL CHECK (kind IN ('realtime', 'library')),
        created_at  INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE builds (
        id          TEXT PRIMARY KEY,
        model_id    TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
        file        TEXT NOT NULL,               -- relative to DATA_DIR
        sha256      TEXT NOT NULL,
        size_bytes  INTEGER NOT NULL,
        features    TEXT NOT NULL,               -- JSON: [{name, type}]
        outputs     TEXT NOT NULL,               -- JSON: [name]
        operators   TEXT NOT NULL,               -- JSON: qualified op types used
        opsets      TEXT NOT NULL,               -- JSON: {domain: version}
        created_at  INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX builds_by_model ON builds (model_id, created_at);
      CREATE TABLE deployments (
        id             TEXT PRIMARY KEY,
        model_id       TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
        status         TEXT NOT NULL CHECK (status IN ('PENDING', 'DEPLOYING', 'LIVE', 'FAILED', 'SUPERSEDED')),
        reason         TEXT,                     -- why it FAILED
        action         TEXT NOT NULL CHECK (action IN ('deploy', 'undeploy')),
        variation_name TEXT NOT NULL,            -- the variation this deployment adds, replaces or removes
        build_id       TEXT REFERENCES builds(id), -- NULL for an undeploy
        traffic        TEXT NOT NULL,            -- JSON TrafficConfig that goes live with it
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX deployments_by_model ON deployments (model_id, status);
    `,
    postgres: `
      CREATE TABLE models (
        id          TEXT PRIMARY KEY,
        project     TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        kind        TEXT NOT NULL CHECK (kind IN ('realtime', 'library')),
        created_at  BIGINT NOT NULL
      );
      CREATE TABLE builds (
        id          TEXT PRIMARY KEY,
        model_id    TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
        file        TEXT NOT NULL,
        sha256      TEXT NOT NULL,
        size_bytes  BIGINT NOT NULL,
        features    TEXT NOT NULL,
        outputs     TEXT NOT NULL,
        operators   TEXT NOT NULL,
        opsets      TEXT NOT NULL,
        created_at  BIGINT NOT NULL
      );
      CREATE INDEX builds_by_model ON builds (model_id, created_at);
      CREATE TABLE deployments (
        id             TEXT PRIMARY KEY,
        model_id       TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
        status         TEXT NOT NULL CHECK (status IN ('PENDING', 'DEPLOYING', 'LIVE', 'FAILED', 'SUPERSEDED')),
        reason         TEXT,
        action         TEXT NOT NULL CHECK (action IN ('deploy', 'undeploy')),
        variation_name TEXT NOT NULL,
        build_id       TEXT REFERENCES builds(id),
        traffic        TEXT NOT NULL,
        created_at     BIGINT NOT NULL,
        updated_at     BIGINT NOT NULL
      );
      CREATE INDEX deployments_by_model ON deployments (model_id, status);
    `,
  },
  {
    version: 3,
    name: 'vector_store',
    sql: `
      CREATE TABLE vector_collections (
        id              INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: names the index directory
        name            TEXT NOT NULL UNIQUE,
        dimension       INTEGER NOT NULL CHECK (dimension BETWEEN 1 AND 65536),
        metric          TEXT NOT NULL CHECK (metric IN ('cosine', 'l2', 'dot')),
        description     TEXT NOT NULL DEFAULT '',
        multi_tenant    INTEGER NOT NULL CHECK (multi_tenant IN (0, 1)),
        hnsw_m          INTEGER NOT NULL,
        ef_construction INTEGER NOT NULL,
        ef_search       INTEGER NOT NULL,
        vector_count    INTEGER NOT NULL DEFAULT 0,
        last_seq        INTEGER NOT NULL DEFAULT 0,  -- sequence number of the newest write
        created_at      INTEGER NOT NULL
      ) STRICT;
      CREATE TABLE vectors (
        collection_id INTEGER NOT NULL REFERENCES vector_collections(id) ON DELETE CASCADE,
        tenant        TEXT NOT NULL,             -- '' in a collection without tenants
        id            TEXT NOT NULL,
        label         INTEGER NOT NULL,          -- the integer label in the tenant's HNSW index
        seq           INTEGER NOT NULL,          -- vector_collections.last_seq of the write
        vec           BLOB NOT NULL,             -- float32 little-endian, dimension * 4 bytes
        properties    TEXT NOT NULL,             -- JSON object
        PRIMARY KEY (collection_id, tenant, id)
      ) STRICT;
    `,
    postgres: `
      -- The vector store keeps its tables in the embedded SQLite file of each host (DATA_DIR);
      -- on PostgreSQL it comes with its own change (the cluster vector store), so nothing here.
    `,
  },
  {
    version: 4,
    name: 'audiences',
    sql: `
      CREATE TABLE audiences (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        conditions  TEXT NOT NULL,               -- JSON: {unary: [...], binary: [...]}
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE audiences (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        conditions  TEXT NOT NULL,
        created_at  BIGINT NOT NULL,
        updated_at  BIGINT NOT NULL
      );
    `,
  },
  {
    version: 5,
    name: 'library_deployments',
    sql: `
      CREATE TABLE library_deployments (
        model_id       TEXT PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
        name           TEXT NOT NULL UNIQUE,       -- general.name or the file name; immutable
        file           TEXT NOT NULL,              -- relative to MODELS_DIR
        license        TEXT,
        license_link   TEXT,
        instance_type  TEXT NOT NULL CHECK (instance_type IN ('cpu', 'cuda')),
        threads        INTEGER,                    -- NULL: all cores
        status         TEXT NOT NULL CHECK (status IN ('PENDING', 'DEPLOYING', 'LIVE', 'FAILED')),
        reason         TEXT,
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL
      ) STRICT;
    `,
    postgres: `
      CREATE TABLE library_deployments (
        model_id       TEXT PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
        name           TEXT NOT NULL UNIQUE,
        file           TEXT NOT NULL,
        license        TEXT,
        license_link   TEXT,
        instance_type  TEXT NOT NULL CHECK (instance_type IN ('cpu', 'cuda')),
        threads        INTEGER,
        status         TEXT NOT NULL CHECK (status IN ('PENDING', 'DEPLOYING', 'LIVE', 'FAILED')),
        reason         TEXT,
        created_at     BIGINT NOT NULL,
        updated_at     BIGINT NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: 'realtime_instance_type',
    sql: INSTANCE_TYPE,
    postgres: INSTANCE_TYPE,
  },
  {
    version: 7,
    name: 'library_failure_kind',
    sql: FAILURE_KIND,
    postgres: FAILURE_KIND,
  },
  {
    version: 8,
    name: 'build_blobs',
    sql: `
      -- The bytes of uploaded builds, content-addressed (one row per distinct file), for replicas
      -- that share a PostgreSQL database and so no DATA_DIR. The embedded store keeps its builds as
      -- files in DATA_DIR (builds.file), so here the table stays empty: it exists so that both
      -- engines have the same tables, as the typed schema (schema.ts) and
      -- test/store-postgres.test.ts expect.
      CREATE TABLE build_blobs (
        sha256     TEXT PRIMARY KEY,             -- hex, as builds.sha256
        bytes      BLOB NOT NULL,
        size_bytes INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      ) STRICT;
    `,
    postgres: `
      -- Each replica caches the bytes in its DATA_DIR (builds.file), checked against the sha256.
      CREATE TABLE build_blobs (
        sha256     TEXT PRIMARY KEY,
        bytes      BYTEA NOT NULL,
        size_bytes BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      );
    `,
  },
];
