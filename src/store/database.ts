// The embedded store of record: one SQLite file in DATA_DIR, opened in WAL mode so that the host
// and the CLI (keys create) can use it at the same time, with migrations applied on open.
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrations as defaultMigrations, type Migration } from './migrations.js';
import type { ControlPlaneTables } from './schema.js';
import { privateDir, privateSqliteFile } from './private-files.js';

export type Db = Database.Database;

export const DATABASE_FILE = 'platform.db';

export class DatabaseError extends Error {}

export function openDatabase(dataDir: string, migrations: readonly Migration[] = defaultMigrations, file = DATABASE_FILE): Db {
  privateDir(dataDir);
  privateSqliteFile(path.join(dataDir, file));
  const db = new Database(path.join(dataDir, file));
  try {
    db.pragma('journal_mode = WAL');
    // FULL: an acknowledged write survives power loss, not only a process crash.
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    // The CLI and the host may write at once; wait for the lock instead of failing.
    db.pragma('busy_timeout = 5000');
    migrate(db, migrations);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** Applies every migration newer than the database, each in its own transaction. */
export function migrate(db: Db, migrations: readonly Migration[]): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  const known = new Set(ordered.map((m) => m.version));
  const applied = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
  const newest = ordered.at(-1)?.version ?? 0;
  const unknown = applied.filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new DatabaseError(
      `the database in this DATA_DIR was written by a newer version (schema ${Math.max(...unknown)} > ${newest}); upgrade the platform`,
    );
  }
  const done = new Set(applied);
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of ordered) {
    if (done.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes starting together cannot both apply it.
    db.transaction(() => {
      const raced = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(m.version);
      if (raced) return;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    }).immediate();
  }
}

export function schemaVersion(db: Db): number {
  return (db.prepare('SELECT COALESCE(MAX(version), 0) FROM schema_migrations').pluck().get() as number) ?? 0;
}

/**
 * The query builder over an open SQLite store: the same typed queries as on PostgreSQL
 * (postgres.ts). Kysely runs them on this one connection, one at a time.
 */
export function sqliteQueryBuilder(db: Db): Kysely<ControlPlaneTables> {
  return new Kysely<ControlPlaneTables>({ dialect: new SqliteDialect({ database: db }) });
}
