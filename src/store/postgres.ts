// The control-plane store on PostgreSQL (DATABASE_URL), for several replicas of the host on one
// database: a connection pool under the query builder, and the same versioned migrations as the
// embedded SQLite store (migrations.ts, their `postgres` text). Replicas that start together
// take turns through an advisory lock, so that each migration is applied exactly once.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { DatabaseError } from './database.js';
import { migrations as defaultMigrations, type Migration } from './migrations.js';
import type { ControlPlaneTables } from './schema.js';

export interface PostgresStore {
  db: Kysely<ControlPlaneTables>;
  close(): Promise<void>;
}

/** pg_advisory_xact_lock key of the migrations: "platform" in ASCII, as a number. */
const MIGRATION_LOCK = 0x706c6174666f726dn;
const INT8_OID = 20;

// BIGINT columns hold unix milliseconds and sizes, all below 2^53: read them as numbers, as SQLite
// does, instead of node-postgres' default strings. Per pool, so that nothing global changes.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** Connects to `url`, applies the migrations newer than the database, and returns the store. */
export async function openPostgres(url: string, migrations: readonly Migration[] = defaultMigrations, maxConnections = 10): Promise<PostgresStore> {
  const pool = new pg.Pool({ connectionString: url, max: maxConnections, types });
  // An idle connection lost (the server restarted, a failover, an administrator's kill) is dropped
  // by the pool, which opens another on the next query; unhandled, the event would end the process.
  pool.on('error', () => undefined);
  const db = new Kysely<ControlPlaneTables>({ dialect: new PostgresDialect({ pool }) });
  try {
    await migratePostgres(db, migrations);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return { db, close: () => db.destroy() };
}

/** Applies every migration newer than the database, all in one transaction under the lock. */
export async function migratePostgres(db: Kysely<ControlPlaneTables>, migrations: readonly Migration[]): Promise<void> {
  const ordered = [...migrations].sort((a, b) => a.version - b.version);
  const newest = ordered.at(-1)?.version ?? 0;
  await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at BIGINT NOT NULL
    )`.execute(trx);
    const applied = new Set((await trx.selectFrom('schema_migrations').select('version').execute()).map((r) => r.version));
    const unknown = [...applied].filter((v) => !ordered.some((m) => m.version === v));
    if (unknown.length > 0) {
      throw new DatabaseError(`the database at DATABASE_URL was written by a newer version (schema ${Math.max(...unknown)} > ${newest}); upgrade the platform`);
    }
    for (const m of ordered) {
      if (applied.has(m.version)) continue;
      if (m.postgres === undefined) throw new DatabaseError(`migration ${m.version} (${m.name}) has no PostgreSQL form`);
      await sql.raw(m.postgres).execute(trx);
      await trx.insertInto('schema_migrations').values({ version: m.version, name: m.name, applied_at: Date.now() }).execute();
    }
  });
}

export async function postgresSchemaVersion(db: Kysely<ControlPlaneTables>): Promise<number> {
  const row = await db.selectFrom('schema_migrations').select((eb) => eb.fn.max('version').as('v')).executeTakeFirst();
  return Number(row?.v ?? 0);
}
