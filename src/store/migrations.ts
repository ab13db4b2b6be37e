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

// The tables whose changes the replicas' routing snapshots are made of (src/cluster/). A change
// to any of them bumps config_version in the changing transaction, through triggers, so that no
// code path can forget it; on PostgreSQL the trigger also sends the new version with pg_notify,
// which is delivered at commit. API keys count only for a revocation: a token exchange writes
// last_used_at and must not wake every replica.
const CONFIG_TABLES = ['models', 'deployments', 'audiences', 'library_deployments'] as const;

const CLUSTER_SQLITE = `
      -- One row: the version of the configuration the replicas route by.
      CREATE TABLE config_version (
        id      INTEGER PRIMARY KEY CHECK (id = 1),
        version INTEGER NOT NULL
      ) STRICT;
      INSERT INTO config_version (id, version) VALUES (1, 1);
      ${CONFIG_TABLES.flatMap((t) =>
        ['INSERT', 'UPDATE', 'DELETE'].map(
          (op) => `CREATE TRIGGER ${t}_${op.toLowerCase()}_config AFTER ${op} ON ${t} BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;`,
        ),
      ).join('\n      ')}
      CREATE TRIGGER api_keys_revoke_config AFTER UPDATE OF revoked_at ON api_keys BEGIN UPDATE config_version SET version = version + 1 WHERE id = 1; END;
      -- Each replica of the host: where it is, whether it is alive, and what it has applied.
      CREATE TABLE replicas (
        id              TEXT PRIMARY KEY,      -- REPLICA_ID (the pod name on Kubernetes)
        address         TEXT NOT NULL,         -- the URL other replicas reach it at
        state           TEXT NOT NULL CHECK (state IN ('starting', 'serving', 'draining', 'gone')),
        started_at      INTEGER NOT NULL,      -- unix ms
        heartbeat_at    INTEGER NOT NULL,      -- unix ms, the database's clock
        applied_version INTEGER NOT NULL,      -- the config_version of its routing snapshot; 0 before the first
        loaded          TEXT NOT NULL          -- JSON: what it serves and prepares (src/cluster/replicas.ts)
      ) STRICT;
    `;

const CLUSTER_POSTGRES = `
      CREATE TABLE config_version (
        id      INTEGER PRIMARY KEY CHECK (id = 1),
        version BIGINT NOT NULL
      );
      INSERT INTO config_version (id, version) VALUES (1, 1);
      -- Deferred to the commit, and once per transaction: the row of config_version is then the
      -- last lock any transaction takes, so it cannot close a cycle of waits (an AFTER STATEMENT
      -- trigger deadlocked a status update against a concurrent insert waiting on its row).
      CREATE FUNCTION platform_config_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE v BIGINT;
      BEGIN
        IF current_setting('platform.config_bumped', true) = txid_current()::text THEN
          RETURN NULL;
        END IF;
        PERFORM set_config('platform.config_bumped', txid_current()::text, true);
        UPDATE config_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
        PERFORM pg_notify('platform_config', v::text);
        RETURN NULL;
      END $$;
      ${CONFIG_TABLES.map((t) => `CREATE CONSTRAINT TRIGGER ${t}_config AFTER INSERT OR UPDATE OR DELETE ON ${t} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION platform_config_changed();`).join('\n      ')}
      CREATE CONSTRAINT TRIGGER api_keys_revoke_config AFTER UPDATE OF revoked_at ON api_keys DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION platform_config_changed();
      CREATE TABLE replicas (
        id              TEXT PRIMARY KEY,
        address         TEXT NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('starting', 'serving', 'draining', 'gone')),
        started_at      BIGINT NOT NULL,
        heartbeat_at    BIGINT NOT NULL,
        applied_version BIGINT NOT NULL,
        loaded          TEXT NOT NULL
      );
    `;

const LIBRARY_PLACEMENT = `
      -- On how many replicas a library model runs (each replica runs its own engine): NULL, on
      -- every replica; N, on the N live replicas that rendezvous hashing of the model id picks
      -- (src/cluster/placement.ts). Requests that reach another replica are forwarded.
      ALTER TABLE library_deployments ADD COLUMN replicas INTEGER CHECK (replicas IS NULL OR replicas >= 1);
    `;

const CLUSTER_VECTORS_POSTGRES = `
      -- The vector store of record when the replicas share PostgreSQL (src/vectors/shared-log.ts).
      -- Each replica keeps its own copy (a SQLite cache and HNSW graphs in its DATA_DIR) and follows
      -- the rows past the sequence number it has applied.
      CREATE TABLE vector_collections (
        id              BIGSERIAL PRIMARY KEY,   -- never reused: names each replica's index directory
        name            TEXT NOT NULL UNIQUE,
        dimension       INTEGER NOT NULL CHECK (dimension BETWEEN 1 AND 65536),
        metric          TEXT NOT NULL CHECK (metric IN ('cosine', 'l2', 'dot')),
        description     TEXT NOT NULL DEFAULT '',
        multi_tenant    INTEGER NOT NULL CHECK (multi_tenant IN (0, 1)),
        hnsw_m          INTEGER NOT NULL,
        ef_construction INTEGER NOT NULL,
        ef_search       INTEGER NOT NULL,
        vector_count    BIGINT NOT NULL DEFAULT 0,   -- live vectors (tombstones not counted)
        last_seq        BIGINT NOT NULL DEFAULT 0,   -- sequence number of the newest change
        purged_seq      BIGINT NOT NULL DEFAULT 0,   -- newest tombstone removed: a copy behind it starts again
        created_at      BIGINT NOT NULL
      );
      -- The current state of every vector, and a tombstone (vec NULL) for each deleted one: the log
      -- compacted by key. A write takes its collection's row lock to number its changes, so they
      -- commit in sequence order and a reader of "seq > n" never misses one committed later.
      CREATE TABLE vectors (
        collection_id BIGINT NOT NULL REFERENCES vector_collections(id) ON DELETE CASCADE,
        tenant        TEXT NOT NULL,
        id            TEXT NOT NULL,
        seq           BIGINT NOT NULL,
        vec           BYTEA,                     -- float32 little-endian; NULL: deleted
        properties    JSONB,                     -- NULL: deleted
        deleted_at    BIGINT,                    -- unix ms of the delete; NULL: live
        PRIMARY KEY (collection_id, tenant, id)
      );
      CREATE UNIQUE INDEX vectors_by_seq ON vectors (collection_id, seq);
      -- Tombstones are removed after VECTOR_TOMBSTONE_RETENTION_SECONDS (shared-log.ts purge).
      CREATE INDEX vector_tombstones ON vectors (deleted_at) WHERE vec IS NULL;
      -- Which database the replicas' caches copy: a cache made from another is thrown away.
      CREATE TABLE vector_store_identity (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        token TEXT NOT NULL
      );
      INSERT INTO vector_store_identity (id, token) VALUES (1, md5(random()::text || clock_timestamp()::text));
      -- Collections are configuration: made or dropped, every replica reads them again.
      CREATE CONSTRAINT TRIGGER vector_collections_config AFTER INSERT OR DELETE ON vector_collections DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION platform_config_changed();
    `;

const LIBRARY_SPECULATIVE = `
      -- Speculative decoding of a library deployment: NULL, off; 'ngram:<k>', prompt lookup with up
      -- to k draft tokens per step; 'draft:<k>', k tokens drafted by draft_model, a file of
      -- MODELS_DIR as file is (src/llm/library/speculative.ts).
      ALTER TABLE library_deployments ADD COLUMN speculative TEXT;
      ALTER TABLE library_deployments ADD COLUMN draft_model TEXT;
    `;

// Roles and scopes of API keys (issue 22, src/auth/permissions.ts). Keys made before roles
// existed become admin with no scope, so that they keep doing what they did. A scope list is a
// JSON array of names; NULL means unscoped (every project, collection or tenant).
const KEY_ROLES = `
      ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin' CHECK (role IN ('admin', 'maintainer', 'member', 'inference'));
      ALTER TABLE api_keys ADD COLUMN scope_project TEXT;
      ALTER TABLE api_keys ADD COLUMN scope_collections TEXT;
      ALTER TABLE api_keys ADD COLUMN scope_tenants TEXT;
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
        name           TEXT NOT NULL UNIQUE,       -- the file name without .gguf, or the name asked for; unique, immutable
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
  {
    version: 9,
    name: 'cluster',
    sql: CLUSTER_SQLITE,
    postgres: CLUSTER_POSTGRES,
  },
  {
    version: 10,
    name: 'library_placement',
    sql: LIBRARY_PLACEMENT,
    postgres: LIBRARY_PLACEMENT,
  },
  {
    version: 11,
    name: 'cluster_vectors',
    sql: `
      -- On SQLite the vector tables are migration 3's, in the same file: nothing to add.
      SELECT 1;
    `,
    postgres: CLUSTER_VECTORS_POSTGRES,
  },
  {
    version: 12,
    name: 'api_key_roles',
    sql: KEY_ROLES,
    postgres: KEY_ROLES,
  },
  {
    version: 13,
    name: 'library_speculative',
    sql: LIBRARY_SPECULATIVE,
    postgres: LIBRARY_SPECULATIVE,
  },
];
