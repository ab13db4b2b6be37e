// Durability of the vector store with the real host (dist/server/main.js) as a child process:
// SIGKILL in the middle of a stream of upserts loses nothing that was acknowledged, a delete by
// filter and an import are as durable as any write, and a damaged or deleted index checkpoint is
// rebuilt from SQLite on start. Run `npx tsc -p tsconfig.json`
// first so that dist/ is current.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../src/auth/api-keys.js';
import { openStore } from '../src/store/store.js';
import { apiClient, type Api } from './helpers/api.js';
import { rng } from './helpers/random.js';
import { spawnHost, type ChildHost } from './helpers/child-host.js';
import { tokenOn } from './helpers/cluster.js';
import { tempDir } from './helpers/paths.js';

const hosts: ChildHost[] = [];
afterEach(async () => {
  for (const h of hosts.splice(0)) {
    if (h.proc.exitCode === null && h.proc.signalCode === null) {
      h.proc.kill('SIGKILL');
      await h.exited;
    }
  }
});

async function newDataDir(): Promise<{ dataDir: string; key: string }> {
  const dataDir = tempDir('platform-vectors-');
  const store = await openStore({ dataDir });
  const { key } = await new ApiKeyStore(store.db).create('durability');
  await store.close();
  return { dataDir, key };
}

async function start(dataDir: string, key: string, env: Record<string, string> = {}): Promise<{ host: ChildHost; api: Api; token: string }> {
  const host = await spawnHost({ DATA_DIR: dataDir, ...env });
  hosts.push(host);
  const token = await tokenOn(host.url, key);
  return { host, api: apiClient(host.url, token), token };
}

async function stop(host: ChildHost, signal: NodeJS.Signals): Promise<void> {
  host.proc.kill(signal);
  await host.exited;
}

/** Waits until the collection's graphs hold every committed change (a restart's replay is background work). */
async function caughtUp(api: Api, name: string): Promise<void> {
  for (let i = 0; i < 600 && (await api('GET', `/api/v1/vectors/collections/${name}`)).body.index.pending > 0; i++) await new Promise((r) => setTimeout(r, 50));
}

interface Version {
  values: number[];
  properties: Record<string, unknown>;
}

const f32 = (values: number[]) => Array.from(Float32Array.from(values));
const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

describe('crash safety', () => {
  it('SIGKILL during a stream of upserts: every acknowledged vector is there and searchable after a restart', async () => {
    const { dataDir, key } = await newDataDir();
    // Small checkpoints, so that the restart loads checkpoints and replays the rows after them.
    const env = { VECTOR_CHECKPOINT_CHANGES: '500', VECTOR_CHECKPOINT_IDLE_MS: '0' };
    let { host, api } = await start(dataDir, key, env);
    const dim = 8;
    expect((await api('POST', '/api/v1/vectors/collections', { name: 'crash', dimension: dim, metric: 'l2', multi_tenant: true })).status).toBe(201);

    const r = rng(99);
    const acked = new Map<string, Version>(); // "tenant/id" -> the newest acknowledged version
    const unsure = new Map<string, Version[]>(); // versions sent without an answer (in flight at the kill)
    const busy = new Set<string>();
    let nextId = 0;
    let killed = false;

    // Writes until `target` vectors are acknowledged; with `kill`, the writer that gets there
    // SIGKILLs the host while the other writers' requests are in flight.
    const writer = async (target: number, kill: boolean) => {
      while (!killed && acked.size < target) {
        const tenant = r() < 0.5 ? 'a' : 'b';
        const batch: Array<{ key: string; id: string; version: Version }> = [];
        // Mostly new ids; some replacements of acknowledged ones that no other request is writing.
        for (const k of [...acked.keys()].filter((k) => k.startsWith(`${tenant}/`) && !busy.has(k)).slice(0, r() < 0.3 ? 5 : 0)) {
          batch.push({ key: k, id: k.slice(2), version: { values: [], properties: {} } });
        }
        while (batch.length < 40) {
          const id = `v${nextId++}`;
          batch.push({ key: `${tenant}/${id}`, id, version: { values: [], properties: {} } });
        }
        for (const b of batch) {
          b.version = { values: Array.from({ length: dim }, () => Math.round((r() * 20 - 10) * 1e5) / 1e5), properties: { n: nextId, tag: `t${Math.floor(r() * 5)}` } };
          busy.add(b.key);
          unsure.set(b.key, [...(unsure.get(b.key) ?? []), b.version]);
        }
        let ok = false;
        try {
          const res = await api('POST', '/api/v1/vectors/upsert', {
            collection_name: 'crash',
            tenant_id: tenant,
            vector: batch.map((b) => ({ id: b.id, values: b.version.values, properties: b.version.properties })),
          });
          ok = res.status === 200;
          if (!ok && !killed) throw new Error(`upsert refused: ${res.status} ${JSON.stringify(res.body)}`);
        } catch (err) {
          if (!killed) throw err;
        }
        if (ok) {
          for (const b of batch) {
            acked.set(b.key, b.version);
            unsure.set(b.key, unsure.get(b.key)!.filter((v) => v !== b.version));
            busy.delete(b.key);
          }
          if (kill && acked.size >= target && !killed) {
            killed = true;
            host.proc.kill('SIGKILL'); // other writers' requests are in flight right now
          }
        }
      }
    };
    // First a part that is certainly in a checkpoint (500 changes per tenant graph trigger one)...
    await Promise.all([writer(1200, false), writer(1200, false), writer(1200, false)]);
    for (let i = 0; i < 600; i++) {
      const info = await api('GET', '/api/v1/vectors/collections/crash');
      if (info.body.index.pending === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // ...then more, and the kill in the middle of it.
    await Promise.all([writer(3000, true), writer(3000, true), writer(3000, true)]);
    await host.exited;
    expect(host.proc.signalCode).toBe('SIGKILL');
    const inFlight = [...unsure.values()].filter((v) => v.length > 0).length;

    ({ host, api } = await start(dataDir, key, env));

    const keys = [...acked.keys()];
    let checked = 0;
    const verify = async () => {
      while (keys.length > 0) {
        const k = keys.pop()!;
        const [tenant, id] = [k.slice(0, 1), k.slice(2)];
        const allowed = [acked.get(k)!, ...(unsure.get(k) ?? [])];
        const res = await api('GET', `/api/v1/vectors/collections/crash/${id}?tenant_id=${tenant}`);
        expect(res.status, k).toBe(200);
        const got = res.body.vector as { values: number[]; properties: Record<string, unknown> };
        const match = allowed.find((v) => same(f32(v.values), f32(got.values)));
        expect(match, `${k}: ${JSON.stringify(got.values)}`).toBeDefined();
        expect(got.properties).toEqual(match!.properties);
        const hits = await api('POST', '/api/v1/vectors/search', { collection_name: 'crash', tenant_id: tenant, reference_vector: { element: got.values }, max_results: 1 });
        expect(hits.body.search_results[0], k).toEqual({ id, distance: 0 });
        checked++;
      }
    };
    await Promise.all(Array.from({ length: 8 }, verify));
    expect(checked).toBe(acked.size);
    console.log(`crash test: ${acked.size} acknowledged vectors checked after SIGKILL; ${inFlight} were in requests without an answer`);
    // Checkpoints were written during the stream, so the restart loaded them and replayed newer rows.
    expect(host.stdout()).toMatch(/loaded its index checkpoint and replayed \d+ newer changes/);
    expect(host.stdout()).not.toMatch(/rebuilt its index/);
    await caughtUp(api, 'crash');
    const info = await api('GET', '/api/v1/vectors/collections/crash');
    expect(info.body.vector_count).toBeGreaterThanOrEqual(acked.size);
    expect(info.body.index).toMatchObject({ tenants: 2, indexed: info.body.vector_count, pending: 0 });
    await stop(host, 'SIGTERM');
  });
});

describe('damaged or missing index files', () => {
  it('a corrupted, then a deleted, index file is rebuilt from SQLite on start', async () => {
    const { dataDir, key } = await newDataDir();
    let { host, api } = await start(dataDir, key);
    const dim = 16;
    await api('POST', '/api/v1/vectors/collections', { name: 'fragile', dimension: dim, metric: 'cosine' });
    const r = rng(5);
    const data = Array.from({ length: 1000 }, () => Array.from({ length: dim }, () => r() * 2 - 1));
    expect((await api('POST', '/api/v1/vectors/upsert', { collection_name: 'fragile', vector: data.map((values, i) => ({ id: `f${i}`, values, properties: { i } })) })).status).toBe(200);
    // A clean stop checkpoints the index; a clean start loads it without replaying anything.
    await stop(host, 'SIGTERM');
    ({ host, api } = await start(dataDir, key));
    expect((await api('GET', '/api/v1/vectors/collections/fragile')).body.index.indexed).toBe(1000); // loaded by now
    expect(host.stdout()).not.toMatch(/rebuilt its index|replayed/);
    await stop(host, 'SIGTERM');

    const dir = path.join(dataDir, 'vectors');
    const indexFile = () => {
      const [collectionDir] = fs.readdirSync(dir);
      const file = fs.readdirSync(path.join(dir, collectionDir!)).find((f) => f.endsWith('.hnsw'));
      return path.join(dir, collectionDir!, file!);
    };
    const expectSearchable = async () => {
      for (const i of [0, 17, 500, 999]) {
        const res = await api('POST', '/api/v1/vectors/search', { collection_name: 'fragile', reference_vector: { element: data[i] }, max_results: 3, properties: ['i'] });
        expect(res.status).toBe(200);
        expect(res.body.search_results[0]).toMatchObject({ id: `f${i}`, distance: expect.closeTo(0, 5), properties: { i } });
        expect(res.body.search_results).toHaveLength(3);
      }
      // The rebuild is graph work in the background (the searches above scanned what it lacked).
      await caughtUp(api, 'fragile');
      expect((await api('GET', '/api/v1/vectors/collections/fragile')).body).toMatchObject({ vector_count: 1000, index: { indexed: 1000 } });
    };

    // Corrupt the middle of the file: the CRC no longer matches and hnswlib never reads it.
    const file = indexFile();
    const bytes = fs.readFileSync(file);
    for (let i = 0; i < 64; i++) bytes[Math.floor(bytes.length / 2) + i] = 0xff;
    fs.writeFileSync(file, bytes);
    ({ host, api } = await start(dataDir, key));
    await expectSearchable();
    expect(host.stdout()).toMatch(/rebuilt its index from 1000 stored vectors in \d+ ms \(the index file is damaged/);
    // The rebuilt index was checkpointed at once, under a new file name.
    expect(indexFile()).not.toBe(file);
    await stop(host, 'SIGTERM');

    fs.rmSync(indexFile());
    ({ host, api } = await start(dataDir, key));
    await expectSearchable();
    expect(host.stdout()).toMatch(/rebuilt its index from 1000 stored vectors in \d+ ms \(the index file is missing\)/);
    await stop(host, 'SIGTERM');

    // A truncated checkpoint description is no better.
    const metaFile = path.join(path.dirname(indexFile()), fs.readdirSync(path.dirname(indexFile())).find((f) => f.endsWith('.meta.json'))!);
    fs.writeFileSync(metaFile, '{"format": 1, "se');
    ({ host, api } = await start(dataDir, key));
    await expectSearchable();
    expect(host.stdout()).toMatch(/rebuilt its index .*unreadable/);
    await stop(host, 'SIGTERM');
  });
});

describe('delete by filter and import are durable like any write', () => {
  it('survive SIGKILL (replayed over the checkpoint) and a clean restart', async () => {
    const { dataDir, key } = await newDataDir();
    const env = { VECTOR_CHECKPOINT_IDLE_MS: '0' };
    let { host, api, token } = await start(dataDir, key, env);
    const dim = 8;
    const r = rng(71);
    const data = Array.from({ length: 1200 }, () => Array.from({ length: dim }, () => Math.round((r() * 2 - 1) * 1e4) / 1e4));
    const props = (i: number) => ({ i, kind: i % 4 === 0 ? 'stale' : 'fresh' });
    const stale = (i: number) => props(i).kind === 'stale' || i >= 1100;
    expect((await api('POST', '/api/v1/vectors/collections', { name: 'pruned', dimension: dim, metric: 'l2', multi_tenant: true })).status).toBe(201);
    for (const tenant of ['t1', 't2']) {
      const res = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'pruned', tenant_id: tenant, vector: data.map((values, i) => ({ id: `p${i}`, values, properties: props(i) })) });
      expect(res.status).toBe(200);
    }
    // A clean stop writes the checkpoints; the deletes after the restart are newer than them.
    await stop(host, 'SIGTERM');
    ({ host, api, token } = await start(dataDir, key, env));
    const del = await api('POST', '/api/v1/vectors/delete', { collection_name: 'pruned', tenant_id: 't1', filter: { or: [{ eq: { kind: 'stale' } }, { range: { i: { gte: 1100 } } }] } });
    const doomed = data.map((_, i) => i).filter(stale);
    expect(del.body).toEqual({ num_vectors_deleted: doomed.length });
    // An import, acknowledged just before the kill, comes back whole too.
    const exported = await fetch(`${host.url}/api/v1/vectors/export/pruned`, { headers: { authorization: `Bearer ${token}` } });
    expect(exported.status).toBe(200);
    const file = new Uint8Array(await exported.arrayBuffer());
    const imported = await api('POST', '/api/v1/vectors/import?name=pruned-copy', file);
    expect(imported.status, JSON.stringify(imported.body)).toBe(201);
    host.proc.kill('SIGKILL');
    await host.exited;

    const check = async () => {
      for (const name of ['pruned', 'pruned-copy']) {
        const count = await api('POST', '/api/v1/vectors/count', { collection_name: name, tenant_id: 't1' });
        expect(count.body, name).toEqual({ count: 1200 - doomed.length });
        expect((await api('POST', '/api/v1/vectors/count', { collection_name: name, tenant_id: 't2' })).body).toEqual({ count: 1200 });
        expect((await api('POST', '/api/v1/vectors/count', { collection_name: name, tenant_id: 't1', filter: { eq: { kind: 'stale' } } })).body).toEqual({ count: 0 });
        for (const i of [0, 1, 4, 5, 1100, 1199]) {
          expect((await api('GET', `/api/v1/vectors/collections/${name}/p${i}?tenant_id=t1`)).status, `${name} p${i}`).toBe(stale(i) ? 404 : 200);
          const hits = await api('POST', '/api/v1/vectors/search', { collection_name: name, tenant_id: 't1', reference_vector: { element: data[i] }, max_results: 10, properties: ['i'] });
          for (const h of hits.body.search_results) expect(stale(h.properties.i), `${name}: p${h.properties.i} found near p${i}`).toBe(false);
          if (!stale(i)) expect(hits.body.search_results[0]).toMatchObject({ id: `p${i}`, distance: 0 });
        }
        await caughtUp(api, name);
        const info = await api('GET', `/api/v1/vectors/collections/${name}`);
        expect(info.body).toMatchObject({ vector_count: 2400 - doomed.length, index: { indexed: 2400 - doomed.length, pending: 0 } });
      }
    };
    ({ host, api } = await start(dataDir, key, env));
    await check();
    // The deletes were replayed over the checkpoint (their labels tombstoned), not rebuilt; the
    // import, killed before any checkpoint, was rebuilt from its rows.
    expect(host.stdout()).toContain(`collection \\"pruned\\" tenant \\"t1\\": loaded its index checkpoint and replayed ${doomed.length} newer changes`);
    expect(host.stdout()).not.toMatch(/collection \\"pruned\\" tenant [^:]*: rebuilt/);
    expect(host.stdout()).toMatch(/collection \\"pruned-copy\\" tenant \\"t1\\": rebuilt its index from \d+ stored vectors .*\(no checkpoint\)/);
    await stop(host, 'SIGTERM');
    ({ host, api } = await start(dataDir, key, env));
    await check();
    expect(host.stdout()).not.toMatch(/rebuilt its index|replayed/);
    await stop(host, 'SIGTERM');
  });
});
