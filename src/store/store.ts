// The store of record, on one of two engines: the embedded SQLite file in DATA_DIR (the default)
// or PostgreSQL at DATABASE_URL (several replicas on one database). The control-plane tables are
// reached through the query builder either way (`db`); the vector store's tables stay in the
// embedded file (`local`), which a PostgreSQL deployment does not open: the vector store across
// replicas comes with its own change.
import type { Kysely } from 'kysely';
import { openDatabase, sqliteQueryBuilder, type Db } from './database.js';
import { openPostgres } from './postgres.js';
import type { ControlPlaneTables } from './schema.js';

export type StoreDialect = 'sqlite' | 'postgres';

export interface Store {
  /** The control-plane tables: keys, models, builds, deployments, audiences, library deployments. */
  db: Kysely<ControlPlaneTables>;
  dialect: StoreDialect;
  /** The embedded SQLite file (DATA_DIR/platform.db) with the vector tables; none on PostgreSQL. */
  local: Db | undefined;
  /** Where the store is, for messages: a path, or the database URL without its password. */
  location: string;
  close(): Promise<void>;
}

export interface StoreOptions {
  dataDir: string;
  /** postgres://...; when absent, the embedded SQLite store in dataDir. */
  databaseUrl?: string | undefined;
}

export async function openStore(options: StoreOptions): Promise<Store> {
  if (options.databaseUrl) {
    const pg = await openPostgres(options.databaseUrl);
    return { db: pg.db, dialect: 'postgres', local: undefined, location: redactedUrl(options.databaseUrl), close: pg.close };
  }
  const local = openDatabase(options.dataDir);
  // Kysely runs its queries on the same connection, one at a time. It opens its driver lazily, on
  // the first query, and closes the connection only if it did: close it here in any case.
  const db = sqliteQueryBuilder(local);
  const close = async () => {
    await db.destroy();
    if (local.open) local.close();
  };
  return { db, dialect: 'sqlite', local, location: options.dataDir, close };
}

/** The URL without its password, for logs and messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'DATABASE_URL (not a URL)';
  }
}
