// The control-plane store on PostgreSQL: the same migrations as the embedded SQLite store, giving
// the same tables and columns, applied once even when replicas start together, and the same typed
// rows through the query builder on both engines. Against a real server (test/helpers/postgres.ts).
import { sql, type Kysely } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase, sqliteQueryBuilder } from '../src/store/database.js';
import { migrations } from '../src/store/migrations.js';
import { openPostgres, postgresSchemaVersion } from '../src/store/postgres.js';
import type { ControlPlaneTables } from '../src/store/schema.js';
import { tempDir } from './helpers/paths.js';
import { usePostgres } from './helpers/store-engines.js';

const NEWEST = Math.max(...migrations.map((m) => m.version));
// The vector store's tables differ by design: SQLite's is the one box's store, PostgreSQL's the
// replicas' log (migration 11); each engine's own tests cover them.
const VECTOR_TABLES = new Set(['vector_collections', 'vectors', 'sqlite_sequence', 'vector_store_identity']);

/** table -> column -> nullable, from SQLite's catalogue. */
function sqliteColumns(dir: string): Map<string, Map<string, boolean>> {
  const db = openDatabase(dir);
  const out = new Map<string, Map<string, boolean>>();
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
  for (const t of tables.filter((t) => !VECTOR_TABLES.has(t))) {
    const cols = db.prepare(`PRAGMA table_info(${t})`).all() as Array<{ name: string; notnull: number; pk: number }>;
    out.set(t, new Map(cols.map((c) => [c.name, c.notnull === 0 && c.pk === 0])));
  }
  db.close();
  return out;
}

async function postgresColumns(db: Kysely<ControlPlaneTables>): Promise<Map<string, Map<string, boolean>>> {
  const { rows } = await sql<{ table_name: string; column_name: string; is_nullable: string }>`
    SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public'`.execute(db);
  const out = new Map<string, Map<string, boolean>>();
  for (const r of rows) {
    if (VECTOR_TABLES.has(r.table_name)) continue;
    if (!out.has(r.table_name)) out.set(r.table_name, new Map());
    out.get(r.table_name)!.set(r.column_name, r.is_nullable === 'YES');
  }
  return out;
}

/** One row through every table, written and read back with the typed query builder. */
async function roundTrip(db: Kysely<ControlPlaneTables>): Promise<unknown[]> {
  const t = 1_795_000_000_123; // beyond 2^31: a 32-bit column would not hold it
  await db.insertInto('api_keys').values({ id: 'k1', name: 'me', secret_hash: Buffer.from([0, 255, 7]), created_at: t, revoked_at: null, last_used_at: t + 1 }).execute();
  await db.insertInto('models').values({ id: 'fraud', project: 'default', kind: 'realtime', created_at: t }).execute();
  await db
    .insertInto('builds')
    .values({ id: 'b1', model_id: 'fraud', file: 'builds/b1.onnx', sha256: 'ab', size_bytes: 5_000_000_000, features: '[]', outputs: '[]', operators: '[]', opsets: '{}', created_at: t })
    .execute();
  await db
    .insertInto('deployments')
    .values({ id: 'd1', model_id: 'fraud', status: 'LIVE', reason: null, action: 'deploy', variation_name: 'default', build_id: 'b1', traffic: '{}', created_at: t, updated_at: t, instance_type: 'cpu' })
    .execute();
  await db.insertInto('audiences').values({ id: 'a1', name: 'everyone', conditions: '{"unary":[],"binary":[]}', created_at: t, updated_at: t }).execute();
  await db.insertInto('models').values({ id: 'tiny', project: 'default', kind: 'library', created_at: t }).execute();
  await db
    .insertInto('library_deployments')
    .values({ model_id: 'tiny', name: 'tiny', file: 'tiny.gguf', license: null, license_link: null, instance_type: 'cpu', threads: 4, status: 'FAILED', reason: 'gone', created_at: t, updated_at: t, failure_kind: 'missing_file' })
    .execute();
  return [
    await db.selectFrom('api_keys').selectAll().execute(),
    await db.selectFrom('models').selectAll().orderBy('id').execute(),
    await db.selectFrom('builds').selectAll().execute(),
    await db.selectFrom('deployments').selectAll().execute(),
    await db.selectFrom('audiences').selectAll().execute(),
    await db.selectFrom('library_deployments').selectAll().execute(),
  ];
}

describe('the store on PostgreSQL', () => {
  const server = usePostgres();

  it('applies every migration, giving the tables and columns of the SQLite store', async () => {
    const store = await openPostgres(await server().createDatabase('schema_check'));
    try {
      expect(await postgresSchemaVersion(store.db)).toBe(NEWEST);
      expect(await postgresColumns(store.db)).toEqual(sqliteColumns(tempDir()));
    } finally {
      await store.close();
    }
  });

  it('applies each migration once when replicas start together', async () => {
    const url = await server().createDatabase('race_check');
    const stores = await Promise.all([openPostgres(url), openPostgres(url), openPostgres(url)]);
    try {
      const rows = await stores[0]!.db.selectFrom('schema_migrations').select(['version', 'name']).orderBy('version').execute();
      expect(rows).toEqual([...migrations].sort((a, b) => a.version - b.version).map((m) => ({ version: m.version, name: m.name })));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('refuses a database written by a newer version, and a migration without a PostgreSQL form', async () => {
    const url = await server().createDatabase('newer_check');
    const store = await openPostgres(url);
    await store.db.insertInto('schema_migrations').values({ version: NEWEST + 1, name: 'future', applied_at: 0 }).execute();
    await store.close();
    await expect(openPostgres(url)).rejects.toThrow(`schema ${NEWEST + 1} > ${NEWEST}`);
    await expect(openPostgres(await server().createDatabase('sqlite_only'), [{ version: 1, name: 'only_sqlite', sql: 'CREATE TABLE x (y INTEGER)' }])).rejects.toThrow(
      'migration 1 (only_sqlite) has no PostgreSQL form',
    );
  });

  it('rolls a failing migration back whole', async () => {
    const url = await server().createDatabase('rollback_check');
    const bad = [
      { version: 1, name: 'a', sql: '', postgres: 'CREATE TABLE a (x INTEGER)' },
      { version: 2, name: 'broken', sql: '', postgres: 'CREATE TABLE b (y INTEGER); CREATE TABLE a (x INTEGER)' },
    ];
    await expect(openPostgres(url, bad)).rejects.toThrow(/already exists/);
    const store = await openPostgres(url, bad.slice(0, 1));
    try {
      expect(await postgresSchemaVersion(store.db)).toBe(1);
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'b'`.execute(store.db);
      expect(rows[0]!.n).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('reads back the same typed rows as SQLite: numbers for BIGINT times, Buffers for bytes', async () => {
    const pgStore = await openPostgres(await server().createDatabase('rows_check'));
    const sqlite = openDatabase(tempDir());
    const sqliteDb = sqliteQueryBuilder(sqlite);
    try {
      const fromPostgres = await roundTrip(pgStore.db);
      const fromSqlite = await roundTrip(sqliteDb);
      expect(fromPostgres).toEqual(fromSqlite);
      const [keys] = fromPostgres as [Array<{ created_at: unknown; secret_hash: unknown }>];
      expect(keys[0]!.created_at).toBe(1_795_000_000_123);
      expect(Buffer.isBuffer(keys[0]!.secret_hash)).toBe(true);
    } finally {
      await pgStore.close();
      await sqliteDb.destroy();
    }
  });
});
