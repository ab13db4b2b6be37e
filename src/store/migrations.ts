// Versioned schema changes, applied in order on start. Append new entries; never edit one that
// has shipped, since databases in the field have already applied it.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

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
        variation_name TEXT NOT NULL,            -- the variation this deployment adds or replaces
        build_id       TEXT NOT NULL REFERENCES builds(id),
        traffic        TEXT NOT NULL,            -- JSON TrafficConfig that goes live with it
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX deployments_by_model ON deployments (model_id, status);
    `,
  },
];
