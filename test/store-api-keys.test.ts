// ApiKeyStore on both engines of the store: the embedded SQLite file (DATA_DIR) and PostgreSQL
// (DATABASE_URL, against the real server of test/helpers/postgres.ts). The same operations give
// the same results on each, the refusals included; and two connections to one store (two
// replicas, or the host and the CLI) revoking and using the same keys at once end as they would
// one after the other.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeyStore, type ApiKeyRecord } from '../src/auth/api-keys.js';
import { UNSCOPED } from '../src/auth/roles.js';

/** What a key made without a role is: admin, unscoped (issue 22). */
const ADMIN = { role: 'admin', scope: UNSCOPED } as const;
import { openStore, type Store, type StoreDialect } from '../src/store/store.js';
import { useStoreEngines } from './helpers/store-engines.js';

const KEY = /^psk_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;
// Beyond 2^31, so that a 32-bit column or a BIGINT read as a string would show.
const T0 = 1_795_000_000_123;

const { freshLocation } = useStoreEngines('keys');

describe.each<StoreDialect>(['sqlite', 'postgres'])('API keys on %s', (engine) => {
  let location: { dataDir: string; databaseUrl?: string };
  const opened: Store[] = [];
  let now: number;
  const clock = () => now;
  let keys: ApiKeyStore;

  /** One more connection to the test's store, closed after the test. */
  async function connect(connectionClock: () => number = clock): Promise<ApiKeyStore> {
    const store = await openStore(location);
    expect(store.dialect).toBe(engine);
    opened.push(store);
    return new ApiKeyStore(store.db, connectionClock);
  }

  beforeEach(async () => {
    now = T0;
    location = await freshLocation(engine);
    keys = await connect();
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('creates a key, shown once, and lists and gets it without its secret', async () => {
    const created = await keys.create('ci');
    const id = KEY.exec(created.key)?.[1];
    expect(id).toBe(created.id);
    expect(created).toEqual({ id, name: 'ci', createdAt: T0, revokedAt: null, lastUsedAt: null, ...ADMIN, key: created.key });
    const record: ApiKeyRecord = { id: created.id, name: 'ci', createdAt: T0, revokedAt: null, lastUsedAt: null, ...ADMIN };
    expect(await keys.get(created.id)).toEqual(record);
    expect(await keys.list()).toEqual([record]);
    expect(typeof (await keys.get(created.id))!.createdAt).toBe('number');
    expect((await keys.create()).name).toBe('default');
  });

  it('lists by creation time, then id', async () => {
    now = T0 + 10;
    const late = await keys.create('late');
    now = T0;
    const early = [await keys.create('a'), await keys.create('b'), await keys.create('c')];
    const list = await keys.list();
    expect(list.map((k) => k.id)).toEqual([...early.map((k) => k.id).sort(), late.id]);
    expect(list.map((k) => k.createdAt)).toEqual([T0, T0, T0, T0 + 10]);
  });

  it('refuses a name that is empty or longer than 128 characters, and stores nothing', async () => {
    await expect(keys.create('')).rejects.toThrow(RangeError);
    await expect(keys.create('x'.repeat(129))).rejects.toThrow('key name must have 1 to 128 characters');
    expect((await keys.create('x'.repeat(128))).name).toHaveLength(128);
    expect(await keys.list()).toHaveLength(1);
  });

  it('verifies a key, recording its use; the record returned is as it was before this use', async () => {
    const created = await keys.create('me');
    now = T0 + 1000;
    expect(await keys.verify(created.key)).toEqual({ id: created.id, name: 'me', createdAt: T0, revokedAt: null, lastUsedAt: null, ...ADMIN });
    expect((await keys.get(created.id))!.lastUsedAt).toBe(T0 + 1000);
    now = T0 + 2000;
    expect((await keys.verify(created.key))!.lastUsedAt).toBe(T0 + 1000);
    expect((await keys.get(created.id))!.lastUsedAt).toBe(T0 + 2000);
  });

  it('refuses a wrong secret, an unknown id and a malformed key, recording no use', async () => {
    const created = await keys.create('me');
    const secret = created.key.slice(-43);
    const wrongSecret = `psk_${created.id}_${secret[0] === 'A' ? 'B' : 'A'}${secret.slice(1)}`;
    const unknownId = `psk_${'0123456789abcdef' === created.id ? 'fedcba9876543210' : '0123456789abcdef'}_${secret}`;
    for (const bad of [wrongSecret, unknownId, 'psk_truncated', created.id, '', created.key + 'x', ' ' + created.key]) {
      expect(await keys.verify(bad), bad).toBeUndefined();
    }
    expect((await keys.get(created.id))!.lastUsedAt).toBeNull();
  });

  it('answers unknown ids: get, revoke and isActive', async () => {
    await keys.create('me');
    expect(await keys.get('ffffffffffffffff')).toBeUndefined();
    expect(await keys.revoke('ffffffffffffffff')).toBe(false);
    expect(await keys.isActive('ffffffffffffffff')).toBe(false);
    expect((await keys.list()).every((k) => k.revokedAt === null)).toBe(true);
  });

  it('revokes a key: it is no longer active nor accepted, and revoking again keeps the first time', async () => {
    const created = await keys.create('me');
    const other = await keys.create('other');
    expect(await keys.isActive(created.id)).toBe(true);
    now = T0 + 5000;
    expect(await keys.revoke(created.id)).toBe(true);
    expect(await keys.isActive(created.id)).toBe(false);
    expect(await keys.verify(created.key)).toBeUndefined();
    expect(await keys.get(created.id)).toEqual({ id: created.id, name: 'me', createdAt: T0, revokedAt: T0 + 5000, lastUsedAt: null, ...ADMIN });
    now = T0 + 9000;
    expect(await keys.revoke(created.id)).toBe(true);
    expect((await keys.get(created.id))!.revokedAt).toBe(T0 + 5000);
    // The other key is untouched.
    expect(await keys.isActive(other.id)).toBe(true);
    expect(await keys.verify(other.key)).toBeDefined();
  });

  it('sees at once what another connection to the same store writes', async () => {
    const other = await connect();
    const created = await keys.create('shared');
    expect(await other.verify(created.key)).toBeDefined();
    expect(await other.revoke(created.id)).toBe(true);
    expect(await keys.isActive(created.id)).toBe(false);
    expect(await keys.verify(created.key)).toBeUndefined();
  });

  it('answers isActive from memory: its own revocation at once, one by another connection within the refresh interval', async () => {
    const other = await connect();
    const mine = await keys.create('mine');
    const theirs = await keys.create('theirs');
    expect(await keys.isActive(mine.id)).toBe(true);
    expect(await keys.isActive(theirs.id)).toBe(true);
    await keys.revoke(mine.id);
    expect(await keys.isActive(mine.id)).toBe(false); // at once
    await other.revoke(theirs.id);
    // Not started: the snapshot knows nothing of the other connection's revocation yet.
    expect(await keys.isActive(theirs.id)).toBe(true);
    await keys.revocations.start();
    try {
      expect(await keys.isActive(theirs.id)).toBe(false); // the first read at start
      const later = await keys.create('later');
      expect(await keys.isActive(later.id)).toBe(true);
      await other.revoke(later.id);
      const until = Date.now() + 3000;
      while (await keys.isActive(later.id)) {
        expect(Date.now()).toBeLessThan(until);
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(await keys.isActive(mine.id)).toBe(false);
    } finally {
      keys.revocations.stop();
    }
  });

  it('two connections revoking the same keys at once: each key keeps one time, as one after the other', async () => {
    const first = await connect(() => T0 + 1);
    const second = await connect(() => T0 + 2);
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => keys.create(`k${i}`)));
    const results = await Promise.all(created.flatMap((k) => [first.revoke(k.id), second.revoke(k.id)]));
    expect(results.every((r) => r)).toBe(true);
    const times = new Map((await keys.list()).map((k) => [k.id, k.revokedAt]));
    for (const k of created) expect([T0 + 1, T0 + 2]).toContain(times.get(k.id));
    // A later revoke changes nothing, as after any revoke.
    now = T0 + 100;
    for (const k of created) expect(await keys.revoke(k.id)).toBe(true);
    expect(new Map((await keys.list()).map((k) => [k.id, k.revokedAt]))).toEqual(times);
  });

  it('a use and a revoke at once: the key ends revoked and refused either way; a use is recorded only before the revoke', async () => {
    const user = await connect(() => T0 + 1);
    const revoker = await connect(() => T0 + 2);
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => keys.create(`k${i}`)));
    const outcomes = await Promise.all(created.map(async (k) => ({ verified: await Promise.all([user.verify(k.key), revoker.revoke(k.id)]) })));
    for (const [i, k] of created.entries()) {
      const after = (await keys.get(k.id))!;
      expect(after.revokedAt).toBe(T0 + 2);
      expect(await keys.verify(k.key)).toBeUndefined();
      // Accepted means its use was recorded; refused means none was.
      expect(after.lastUsedAt).toBe(outcomes[i]!.verified[0] ? T0 + 1 : null);
    }
  });

  it('two connections creating keys at once: every key is kept, each with its own id', async () => {
    const other = await connect();
    const created = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? keys : other).create(`k${i}`)));
    expect(new Set(created.map((k) => k.id)).size).toBe(40);
    expect((await keys.list()).map((k) => k.name).sort()).toEqual(created.map((k) => k.name).sort());
    for (const k of created) expect(await keys.verify(k.key)).toBeDefined();
  });
});
