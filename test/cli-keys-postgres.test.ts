// `platform keys create | list | revoke` with DATABASE_URL set: the real binary works on the
// PostgreSQL store (the test server of test/helpers/postgres.ts) as it works on DATA_DIR, and
// DATA_DIR then plays no part. A URL that cannot be reached is named without its password.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../src/auth/api-keys.js';
import { openStore } from '../src/store/store.js';
import { runCli } from './helpers/cli.js';
import { freePort } from './helpers/free-port.js';
import { tempDir } from './helpers/paths.js';
import { usePostgres } from './helpers/store-engines.js';

const KEY_LINE = /^psk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/;

const server = usePostgres();

/** The keys as the host would see them: through the store on the same database. */
async function withKeys<T>(databaseUrl: string, fn: (keys: ApiKeyStore) => Promise<T>): Promise<T> {
  const store = await openStore({ dataDir: tempDir(), databaseUrl });
  try {
    return await fn(new ApiKeyStore(store.db));
  } finally {
    await store.close();
  }
}

describe('keys on DATABASE_URL', () => {
  it('create prints the key alone; list and revoke manage it; DATA_DIR is left alone', async () => {
    const databaseUrl = await server().createDatabase('cli_keys');
    // A DATA_DIR that does not exist: with DATABASE_URL set it is neither read nor made.
    const dataDir = path.join(tempDir(), 'unused');
    const env = { DATABASE_URL: databaseUrl, DATA_DIR: dataDir };

    const empty = await runCli(['keys', 'list'], env);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stderr).toBe('');
    expect(empty.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+SCOPE\s+CREATED\s+LAST USED\s+STATUS\n$/);

    const created = await runCli(['keys', 'create', '--name', 'ci'], env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(KEY_LINE);
    const key = created.stdout.trim();
    const id = key.split('_')[1]!;
    expect(created.stderr).toBe(`created API key ${id} (ci, role admin); it is not shown again\n`);
    expect(fs.existsSync(dataDir)).toBe(false);

    // The key is in PostgreSQL, where the host finds it.
    expect(await withKeys(databaseUrl, (keys) => keys.verify(key))).toMatchObject({ id, name: 'ci', revokedAt: null });

    const list = await runCli(['keys', 'list'], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toBe('');
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+ci\\s+.*active`));
    expect(list.stdout).not.toContain(key.slice('psk_0123456789abcdef_'.length));

    const revoked = await runCli(['keys', 'revoke', id], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toBe(`revoked ${id}\n`);
    const json = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Array<{ id: string; name: string; revokedAt: number | null; lastUsedAt: number | null }>;
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ id, name: 'ci', revokedAt: expect.any(Number), lastUsedAt: expect.any(Number) });
    expect(await withKeys(databaseUrl, (keys) => keys.isActive(id))).toBe(false);
    expect(await withKeys(databaseUrl, (keys) => keys.verify(key))).toBeUndefined();

    const unknown = await runCli(['keys', 'revoke', 'ffffffffffffffff'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('platform: no API key with id "ffffffffffffffff"\n');
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('lists keys that another client made in the same database, and none of DATA_DIR', async () => {
    const databaseUrl = await server().createDatabase('cli_keys_shared');
    const made = await withKeys(databaseUrl, (keys) => keys.create('from-the-host'));
    // A DATA_DIR with a key of its own: not the store while DATABASE_URL is set.
    const dataDir = tempDir();
    expect((await runCli(['keys', 'create', '--name', 'local'], { DATA_DIR: dataDir })).code).toBe(0);
    const json = JSON.parse((await runCli(['keys', 'list', '--json'], { DATABASE_URL: databaseUrl, DATA_DIR: dataDir })).stdout) as Array<{ id: string; name: string }>;
    expect(json.map((k) => [k.id, k.name])).toEqual([[made.id, 'from-the-host']]);
  });

  it('a database that cannot be reached fails with exit 1, naming the URL without its password', async () => {
    const port = await freePort();
    const url = `postgres://platform:s3cret-pw@127.0.0.1:${port}/nowhere`;
    for (const args of [['keys', 'create'], ['keys', 'list'], ['keys', 'revoke', 'ffffffffffffffff']]) {
      const res = await runCli(args, { DATABASE_URL: url, DATA_DIR: tempDir() });
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stdout).toBe('');
      expect(res.stderr).toContain(`platform: cannot open the database at DATABASE_URL (postgres://platform:***@127.0.0.1:${port}/nowhere): `);
      expect(res.stderr).not.toContain('s3cret-pw');
      expect(res.stderr).not.toMatch(/^\s+at /m);
    }
  });

  it('a DATABASE_URL that is not a PostgreSQL URL is a usage error', async () => {
    const res = await runCli(['keys', 'list'], { DATABASE_URL: 'mysql://root@localhost/db', DATA_DIR: tempDir() });
    expect(res.code).toBe(2);
    expect(res.stderr).toBe('platform: DATABASE_URL must be a PostgreSQL URL (postgres://user:password@host:5432/database)\n');
  });
});
