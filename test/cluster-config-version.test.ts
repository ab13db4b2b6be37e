// config_version on both engines: a committed change to a table the routing snapshot is made of
// bumps it (on PostgreSQL once per transaction, at its commit; SQLite's row triggers once per
// row), a rolled-back one does not, a token exchange (last_used_at) does not, a revocation does;
// on PostgreSQL the new version is notified at commit, never before.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/store.js';
import { CONFIG_CHANNEL } from '../src/cluster/config-listener.js';
import { tempDir } from './helpers/paths.js';
import { usePostgres } from './helpers/store-engines.js';

const server = usePostgres();

const version = async (store: Store) => Number((await store.db.selectFrom('config_version').select('version').executeTakeFirstOrThrow()).version);

describe.each(['sqlite', 'postgres'] as const)('config_version on %s', (engine) => {
  it('moves once per committed change, never for a rollback or a token exchange', async () => {
    const url = engine === 'postgres' ? await server().createDatabase(`version_${engine}`) : undefined;
    const store = await openStore({ dataDir: tempDir(), databaseUrl: url });
    const listener = url ? new pg.Client({ connectionString: url }) : undefined;
    const heard: number[] = [];
    if (listener) {
      await listener.connect();
      listener.on('notification', (m) => heard.push(Number(m.payload)));
      await listener.query(`LISTEN ${CONFIG_CHANNEL}`);
    }
    try {
      const v0 = await version(store);
      // Two statements in one transaction: one bump.
      await store.db.transaction().execute(async (trx) => {
        await trx.insertInto('models').values({ id: 'm1', project: 'default', kind: 'realtime', created_at: 1 }).execute();
        await trx.insertInto('models').values({ id: 'm2', project: 'default', kind: 'realtime', created_at: 2 }).execute();
        // Not yet committed: not notified.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(heard).toEqual([]);
      });
      const v1 = await version(store);
      if (engine === 'postgres') expect(v1).toBe(v0 + 1);
      else expect(v1).toBe(v0 + 2);
      // Rolled back: no bump.
      await expect(
        store.db.transaction().execute(async (trx) => {
          await trx.deleteFrom('models').where('id', '=', 'm1').execute();
          throw new Error('changed my mind');
        }),
      ).rejects.toThrow('changed my mind');
      expect(await version(store)).toBe(v1);
      // A key made and used (last_used_at) moves nothing; revoked, it does.
      await store.db.insertInto('api_keys').values({ id: 'k1', name: 'k', secret_hash: Buffer.alloc(32), created_at: 1, revoked_at: null, last_used_at: null }).execute();
      await store.db.updateTable('api_keys').set({ last_used_at: 5 }).where('id', '=', 'k1').execute();
      expect(await version(store)).toBe(v1);
      await store.db.updateTable('api_keys').set({ revoked_at: 6 }).where('id', '=', 'k1').execute();
      expect(await version(store)).toBe(v1 + 1);
      if (listener) {
        for (let i = 0; i < 100 && heard.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
        expect(heard).toEqual([v1, v1 + 1]);
      }
    } finally {
      await listener?.end();
      await store.close();
    }
  });
});

describe('the replica settings', () => {
  it('take a pod name and an address, bracketing an IPv6 pod address', async () => {
    const { loadConfig } = await import('../src/config.js');
    expect(loadConfig({ REPLICA_ID: 'platform-7d9f-abc', REPLICA_ADDRESS: 'http://10.1.2.3:8080/' }).replica).toMatchObject({ id: 'platform-7d9f-abc', address: 'http://10.1.2.3:8080' });
    expect(loadConfig({ REPLICA_ADDRESS: 'http://fd00:10:244::5:8080' }).replica.address).toBe('http://[fd00:10:244::5]:8080');
    expect(loadConfig({}).replica).toMatchObject({ address: undefined, configPollMs: 1000, timeoutMs: 5000 });
    // Alone on its SQLite file, the same id at every start; on PostgreSQL one per process.
    expect(loadConfig({}).replica.id).toBe('local');
    const onPostgres = { DATABASE_URL: 'postgres://db/platform', PLATFORM_TOKEN_SECRET: 'x'.repeat(32) };
    expect(loadConfig(onPostgres).replica.id).not.toBe(loadConfig(onPostgres).replica.id);
  });
});
