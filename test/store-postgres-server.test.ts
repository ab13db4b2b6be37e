// The test PostgreSQL itself (test/helpers/postgres.ts): a real server on loopback that the suite
// starts and stops on its own, so that the PostgreSQL store is tested against the real engine.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { usePostgres } from './helpers/store-engines.js';

describe('the test PostgreSQL', () => {
  const server = usePostgres();

  it('listens on loopback, creates databases, and speaks LISTEN/NOTIFY', async () => {
    expect(server().url).toMatch(/^postgres:\/\/platform@127\.0\.0\.1:\d+\/postgres$/);
    const url = await server().createDatabase('listen_check');
    const listener = new pg.Client({ connectionString: url });
    const notifier = new pg.Client({ connectionString: url });
    await listener.connect();
    await notifier.connect();
    try {
      const got = new Promise<string | undefined>((resolve) => listener.on('notification', (n) => resolve(n.payload)));
      await listener.query('LISTEN config_version');
      await notifier.query("SELECT pg_notify('config_version', '42')");
      expect(await got).toBe('42');
      const { rows } = await notifier.query<{ v: string }>('SELECT version() AS v');
      expect(rows[0]!.v).toMatch(/^PostgreSQL \d+/);
    } finally {
      await listener.end();
      await notifier.end();
    }
  });
});
