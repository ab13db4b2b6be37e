// The vector store's HTTP surface against the real app (in-process, on a free port): collections,
// the five operations of SPEC.md and each of their flags, tenants, filters, upsert-replace, the
// distances, bad input, recall against an exact search, and a free event loop during a bulk load.
// Every test runs on both engines, each on a fresh store: the embedded SQLite store, and PostgreSQL
// (the store of record shared by the replicas, this replica reading its own copy of it).
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Api } from './helpers/api.js';
import { rng } from './helpers/random.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { STORE_ENGINES, useStoreEngines } from './helpers/store-engines.js';

const LIMIT = 16 * 1024 * 1024;
const APP_LIMIT = 64 * 1024;
const engines = useStoreEngines('vectors_api');

interface Hit {
  id?: string;
  distance?: number;
  vector?: { values: number[] };
  properties?: Record<string, unknown>;
}

/** JSON cannot carry Infinity: this string in a body becomes the literal 1e999, which parses to it. */
const INF = '__inf__';

function randomVectors(n: number, dim: number, seed: number): number[][] {
  const r = rng(seed);
  return Array.from({ length: n }, () => Array.from({ length: dim }, () => Math.round((r() * 2 - 1) * 1e4) / 1e4));
}

describe.each(STORE_ENGINES)('on %s', (engine) => {
  let host: TestHost;
  let api: Api;
  let token: string;

  beforeAll(async () => {
    host = await listen(
      await startInProcessHost(
        await engines.hostEnv(engine, { MAX_VECTOR_BODY_BYTES: String(LIMIT), MAX_BODY_BYTES: String(APP_LIMIT), VECTOR_EXACT_SCAN_MAX: '500', LOG_LEVEL: 'warn' }),
      ),
    );
    token = (await tokenFor(host)).token;
    api = apiClient(host.url, token);
  });
  afterAll(async () => {
    await host?.close();
  });

  async function create(body: Record<string, unknown>) {
    const res = await api('POST', '/api/v1/vectors/collections', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  async function upsert(collection: string, vector: unknown[], extra: Record<string, unknown> = {}) {
    const res = await api('POST', '/api/v1/vectors/upsert', { collection_name: collection, vector, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { num_affected: number };
  }

  async function search(body: Record<string, unknown>): Promise<Hit[]> {
    const res = await api<{ search_results: Hit[] }>('POST', '/api/v1/vectors/search', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.search_results;
  }

  async function expect400(method: string, url: string, body: unknown, param: string | null, message?: RegExp | string) {
    let res: { status: number; body: { error: { code: string; message: string; param: string | null } } };
    const text = body === undefined ? undefined : JSON.stringify(body);
    if (text?.includes(INF)) {
      const r = await fetch(host.url + url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: text.replaceAll(`"${INF}"`, '1e999') });
      res = { status: r.status, body: (await r.json()) as typeof res.body };
    } else res = await api(method, url, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('invalid_argument');
    expect(res.body.error.param).toBe(param);
    if (message !== undefined) expect(res.body.error.message).toMatch(message);
    return res.body.error;
  }

  describe('collections', () => {
    it('creates with defaults, lists, gets with the index state, refuses duplicates and bad fields', async () => {
      const created = await create({ name: 'coll.A_1', dimension: 3 });
      expect(created).toEqual({
        name: 'coll.A_1',
        dimension: 3,
        metric: 'cosine',
        description: '',
        multi_tenant: false,
        hnsw: { m: 16, ef_construction: 200, ef: 64 },
        vector_count: 0,
        created_at: expect.any(Number),
      });
      await create({ name: 'coll-b', dimension: 2, metric: 'dot', description: 'for tests', multi_tenant: true, hnsw: { m: 8, ef_construction: 50, ef: 20 } });
      const list = await api<{ collections: Array<{ name: string; vector_count: number }> }>('GET', '/api/v1/vectors/collections');
      expect(list.body.collections.map((c) => c.name)).toEqual(expect.arrayContaining(['coll.A_1', 'coll-b']));
      await upsert('coll.A_1', [{ id: 'x', values: [1, 2, 3] }]);
      await host.app.vectors!.flush(); // the graph follows the commit in the background
      const got = await api('GET', '/api/v1/vectors/collections/coll.A_1');
      expect(got.status).toBe(200);
      expect(got.body).toMatchObject({ name: 'coll.A_1', vector_count: 1, index: { tenants: 1, indexed: 1, tombstones: 0, pending: 0, compacting: false } });
      expect((await api('GET', '/api/v1/vectors/collections/coll-b')).body).toMatchObject({ metric: 'dot', multi_tenant: true, description: 'for tests', hnsw: { m: 8, ef_construction: 50, ef: 20 } });

      const dup = await api('POST', '/api/v1/vectors/collections', { name: 'coll-b', dimension: 2 });
      expect(dup.status).toBe(409);
      expect(dup.body.error).toMatchObject({ code: 'conflict', param: 'name' });
      await expect400('POST', '/api/v1/vectors/collections', { name: '-bad', dimension: 2 }, 'name', /must match pattern/);
      await expect400('POST', '/api/v1/vectors/collections', { name: 'x'.repeat(129), dimension: 2 }, 'name');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: 0 }, 'dimension');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: 2.5 }, 'dimension');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: '2' }, 'dimension');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: 2, metric: 'hamming' }, 'metric');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: 2, hnsw: { m: 1 } }, 'hnsw.m');
      await expect400('POST', '/api/v1/vectors/collections', { name: 'ok', dimension: 2, multi_tenant: 'yes' }, 'multi_tenant');
      await expect400('POST', '/api/v1/vectors/collections', { dimension: 2 }, 'name', /missing the required field "name"/);
      const missing = await api('GET', '/api/v1/vectors/collections/nope');
      expect(missing.status).toBe(404);
      expect(missing.body.error).toMatchObject({ code: 'not_found', param: 'name' });
    });

    it('deleting a collection removes its vectors and index files; the name can be used again', async () => {
      await create({ name: 'doomed', dimension: 4 });
      await upsert('doomed', randomVectors(50, 4, 1).map((values, i) => ({ id: `d${i}`, values })));
      await host.app.vectors!.flush(true); // writes the index checkpoint
      // DATA_DIR/vectors on SQLite; on PostgreSQL, the index files of this replica's copy.
      const root = host.vectorDir;
      const before = fs.readdirSync(root);
      const withFiles = before.filter((d) => fs.readdirSync(path.join(root, d)).some((f) => f.endsWith('.hnsw')));
      expect(withFiles.length).toBeGreaterThan(0);
      // On PostgreSQL, the collection's id in the store of record.
      const doomedId =
        engine === 'postgres' ? (await sql<{ id: number }>`SELECT id FROM vector_collections WHERE name = 'doomed'`.execute(host.store.db)).rows[0]!.id : undefined;
      const del = await api('DELETE', '/api/v1/vectors/collections/doomed');
      expect(del.status).toBe(200);
      expect(del.body).toEqual({ name: 'doomed', deleted: true });
      expect(fs.readdirSync(root).length).toBe(before.length - 1);
      // The SQLite file with the vector tables: the store's own, or on PostgreSQL the replica's cache.
      const count = host.vectorDb.prepare("SELECT count(*) AS n FROM vectors v JOIN vector_collections c ON c.id = v.collection_id WHERE c.name = 'doomed'").get() as { n: number };
      expect(count.n).toBe(0);
      if (engine === 'postgres') {
        // And in the store of record: the collection and its rows, tombstones included.
        const { rows } = await sql<{ collections: number; vectors: number }>`
          SELECT (SELECT count(*) FROM vector_collections WHERE id = ${doomedId!})::int AS collections,
                 (SELECT count(*) FROM vectors WHERE collection_id = ${doomedId!})::int AS vectors`.execute(host.store.db);
        expect(rows[0]).toEqual({ collections: 0, vectors: 0 });
      }
      expect((await api('DELETE', '/api/v1/vectors/collections/doomed')).status).toBe(404);
      const gone = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'doomed', vector: [{ id: 'a', values: [1, 2, 3, 4] }] });
      expect(gone.status).toBe(404);
      expect(gone.body.error).toMatchObject({ code: 'not_found', param: 'collection_name', message: 'no vector collection named "doomed"' });
      await create({ name: 'doomed', dimension: 2 });
      expect((await search({ collection_name: 'doomed', reference_vector: { element: [1, 0] } })).length).toBe(0);
    });
  });

  describe('the five operations', () => {
    beforeAll(async () => {
      await create({ name: 'ops', dimension: 4, metric: 'l2' });
      const vectors = [
        { id: 'a', values: [0, 0, 0, 0], properties: { kind: 'origin', n: 1 } },
        { id: 'b', values: [1, 0, 0, 0], properties: { kind: 'axis', n: 2 } },
        { id: 'c', values: [0, 2, 0, 0], properties: { kind: 'axis', n: 3, extra: [1, 2] } },
        { id: 'd', values: [0.1, 0.2, 0.3, 0.4] },
        { id: 'e', values: [3, 3, 3, 3], properties: { kind: 'far' } },
      ];
      expect(await upsert('ops', vectors)).toEqual({ num_affected: 5 });
    });

    it('fetch returns the id, the values as sent (float32) and the properties', async () => {
      const res = await api('GET', '/api/v1/vectors/collections/ops/d');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ vector: { id: 'd', values: [0.1, 0.2, 0.3, 0.4], properties: {} } });
      expect((await api('GET', '/api/v1/vectors/collections/ops/c')).body.vector.properties).toEqual({ kind: 'axis', n: 3, extra: [1, 2] });
      const missing = await api('GET', '/api/v1/vectors/collections/ops/zz');
      expect(missing.status).toBe(404);
      expect(missing.body.error).toMatchObject({ code: 'not_found', param: 'id', message: 'no vector "zz" in the collection "ops"' });
      expect((await api('GET', '/api/v1/vectors/collections/nope/a')).status).toBe(404);
    });

    it('search defaults: id and distance, ascending, no vector, no properties, at most 10', async () => {
      const hits = await search({ collection_name: 'ops', reference_vector: { element: [0, 0, 0, 0] } });
      expect(hits.map((h) => h.id)).toEqual(['a', 'd', 'b', 'c', 'e']);
      expect(hits.map((h) => Object.keys(h).sort())).toEqual(hits.map(() => ['distance', 'id']));
      expect(hits[0]!.distance).toBe(0);
      expect(hits[2]!.distance).toBeCloseTo(1, 6);
      expect(hits[3]!.distance).toBeCloseTo(2, 6); // Euclidean, not squared
      expect(hits[4]!.distance).toBeCloseTo(6, 5);
      expect(hits[1]!.distance).toBeCloseTo(Math.sqrt(0.3), 6);
    });

    it('search flags: include_vector, include_distance, include_id, properties, max_results', async () => {
      const base = { collection_name: 'ops', reference_vector: { element: [1, 0, 0, 0] } };
      let hits = await search({ ...base, include_vector: true, max_results: 2 });
      expect(hits).toEqual([
        { vector: { values: [1, 0, 0, 0] }, distance: 0, id: 'b' },
        { vector: { values: [0, 0, 0, 0] }, distance: 1, id: 'a' },
      ]);
      hits = await search({ ...base, include_distance: false, include_id: false, include_vector: true, max_results: 1 });
      expect(hits).toEqual([{ vector: { values: [1, 0, 0, 0] } }]);
      hits = await search({ ...base, include_distance: false, max_results: 3 });
      expect(hits.map((h) => Object.keys(h))).toEqual([['id'], ['id'], ['id']]);
      hits = await search({ ...base, properties: ['kind', 'extra', 'absent'], max_results: 5 });
      expect(hits.map((h) => [h.id, h.properties])).toEqual([
        ['b', { kind: 'axis' }],
        ['a', { kind: 'origin' }],
        ['d', {}],
        ['c', { kind: 'axis', extra: [1, 2] }],
        ['e', { kind: 'far' }],
      ]);
      hits = await search({ ...base, properties: [] , max_results: 1 });
      expect(hits).toEqual([{ distance: 0, id: 'b', properties: {} }]);
      hits = await search({ ...base, include_id: false, include_distance: false });
      expect(hits).toEqual([{}, {}, {}, {}, {}]);
      expect(await search({ ...base, max_results: 1000 })).toHaveLength(5);
    });

    it('sample returns distinct random vectors, with or without values', async () => {
      const res = await api('POST', '/api/v1/vectors/sample', { collection_name: 'ops', num_samples: 3, include_vector: true });
      expect(res.status).toBe(200);
      const vectors = res.body.vectors as Array<{ id: string; values?: number[]; properties: object }>;
      expect(vectors).toHaveLength(3);
      expect(new Set(vectors.map((v) => v.id)).size).toBe(3);
      for (const v of vectors) {
        const fetched = await api('GET', `/api/v1/vectors/collections/ops/${v.id}`);
        expect(v).toEqual(fetched.body.vector);
      }
      const noValues = await api('POST', '/api/v1/vectors/sample', { collection_name: 'ops', num_samples: 100, include_vector: false });
      expect(noValues.body.vectors).toHaveLength(5);
      for (const v of noValues.body.vectors) expect(Object.keys(v).sort()).toEqual(['id', 'properties']);
      const defaults = await api('POST', '/api/v1/vectors/sample', { collection_name: 'ops' });
      expect(defaults.body.vectors).toHaveLength(5);
      expect(defaults.body.vectors[0].values).toHaveLength(4);
      // Every id turns up over repeated samples of one.
      const seen = new Set<string>();
      for (let i = 0; i < 60 && seen.size < 5; i++) {
        seen.add((await api('POST', '/api/v1/vectors/sample', { collection_name: 'ops', num_samples: 1 })).body.vectors[0].id);
      }
      expect(seen.size).toBe(5);
    });

    it('delete counts what it removed; unknown ids count zero; deleted vectors are gone everywhere', async () => {
      await create({ name: 'del', dimension: 2, metric: 'l2' });
      await upsert('del', [
        { id: 'p', values: [0, 0] },
        { id: 'q', values: [1, 1] },
        { id: 'r', values: [2, 2] },
      ]);
      const res = await api('POST', '/api/v1/vectors/delete', { collection_name: 'del', vector_identifiers: [{ vector_id: 'p' }, { vector_id: 'nope' }, { vector_id: 'p' }] });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ num_vectors_deleted: 1 });
      expect((await api('GET', '/api/v1/vectors/collections/del/p')).status).toBe(404);
      expect((await search({ collection_name: 'del', reference_vector: { element: [0, 0] } })).map((h) => h.id)).toEqual(['q', 'r']);
      const sample = await api('POST', '/api/v1/vectors/sample', { collection_name: 'del', num_samples: 10 });
      expect(sample.body.vectors.map((v: { id: string }) => v.id).sort()).toEqual(['q', 'r']);
      expect((await api('GET', '/api/v1/vectors/collections/del')).body.vector_count).toBe(2);
      expect((await api('POST', '/api/v1/vectors/delete', { collection_name: 'del', vector_identifiers: [{ vector_id: 'q' }, { vector_id: 'r' }] })).body).toEqual({ num_vectors_deleted: 2 });
      expect(await search({ collection_name: 'del', reference_vector: { element: [0, 0] } })).toEqual([]);
    });

    it('upsert replaces an existing id: values and properties, everywhere, without growing the count', async () => {
      await create({ name: 'replace', dimension: 2, metric: 'l2' });
      await upsert('replace', [
        { id: 'x', values: [0, 0], properties: { v: 1, gone: true } },
        { id: 'y', values: [5, 5], properties: { v: 1 } },
      ]);
      expect(await upsert('replace', [{ id: 'x', values: [10, 10], properties: { v: 2 } }, { id: 'z', values: [0, 1] }])).toEqual({ num_affected: 2 });
      expect((await api('GET', '/api/v1/vectors/collections/replace/x')).body.vector).toEqual({ id: 'x', values: [10, 10], properties: { v: 2 } });
      const near = await search({ collection_name: 'replace', reference_vector: { element: [10, 10] }, properties: ['v', 'gone'], include_vector: true });
      expect(near[0]).toEqual({ vector: { values: [10, 10] }, distance: 0, id: 'x', properties: { v: 2 } });
      expect(near.map((h) => h.id)).toEqual(['x', 'y', 'z']); // exactly one x
      const old = await search({ collection_name: 'replace', reference_vector: { element: [0, 0] }, max_results: 1 });
      expect(old[0]!.id).toBe('z');
      await host.app.vectors!.flush();
      expect((await api('GET', '/api/v1/vectors/collections/replace')).body).toMatchObject({ vector_count: 3, index: { indexed: 3, tombstones: 0 } });
    });

    it('distances: cosine is 1 - cos, l2 is Euclidean, dot is -(a . b), ascending', async () => {
      await create({ name: 'm-cos', dimension: 2, metric: 'cosine' });
      await create({ name: 'm-l2', dimension: 2, metric: 'l2' });
      await create({ name: 'm-dot', dimension: 2, metric: 'dot' });
      const vectors = [
        { id: 'right', values: [2, 0] },
        { id: 'diag', values: [1, 1] },
        { id: 'up', values: [0, 3] },
        { id: 'left', values: [-1, 0] },
      ];
      for (const name of ['m-cos', 'm-l2', 'm-dot']) await upsert(name, vectors);
      const q = { reference_vector: { element: [1, 0] } };
      const dist = async (name: string) =>
        Object.fromEntries((await search({ collection_name: name, ...q })).map((h) => [h.id, h.distance!]));
      const cos = await dist('m-cos');
      expect(cos.right).toBeCloseTo(0, 6);
      expect(cos.diag).toBeCloseTo(1 - Math.SQRT1_2, 6);
      expect(cos.up).toBeCloseTo(1, 6);
      expect(cos.left).toBeCloseTo(2, 6);
      const l2 = await dist('m-l2');
      expect(l2).toEqual({ right: 1, diag: 1, up: expect.closeTo(Math.sqrt(10), 5), left: 2 });
      const dot = await dist('m-dot');
      expect(dot).toEqual({ right: -2, diag: -1, up: 0, left: 1 });
      const order = (await search({ collection_name: 'm-dot', ...q })).map((h) => h.id);
      expect(order).toEqual(['right', 'diag', 'up', 'left']);
    });
  });

  describe('tenants', () => {
    beforeAll(async () => {
      await create({ name: 'mt', dimension: 2, metric: 'l2', multi_tenant: true });
      await upsert('mt', [{ id: 'same', values: [1, 1], properties: { owner: 'a' } }, { id: 'a-only', values: [0, 0] }], { tenant_id: 'a' });
      await upsert('mt', [
        { id: 'same', values: [9, 9], properties: { owner: 'b' }, tenant_id: 'b' },
        { id: 'b-only', values: [0, 0.1], tenant_id: 'b' },
      ]);
    });

    it('the same id lives in two tenants; fetch, search and sample never cross', async () => {
      const a = await api('GET', '/api/v1/vectors/collections/mt/same?tenant_id=a');
      const b = await api('GET', '/api/v1/vectors/collections/mt/same?tenant_id=b');
      expect(a.body.vector).toEqual({ id: 'same', values: [1, 1], properties: { owner: 'a' } });
      expect(b.body.vector).toEqual({ id: 'same', values: [9, 9], properties: { owner: 'b' } });
      expect((await api('GET', '/api/v1/vectors/collections/mt/a-only?tenant_id=b')).status).toBe(404);
      expect((await api('GET', '/api/v1/vectors/collections/mt/a-only?tenant_id=c')).status).toBe(404);

      const inA = await search({ collection_name: 'mt', tenant_id: 'a', reference_vector: { element: [0, 0] }, properties: ['owner'] });
      expect(inA.map((h) => [h.id, h.properties])).toEqual([
        ['a-only', {}],
        ['same', { owner: 'a' }],
      ]);
      const inB = await search({ collection_name: 'mt', tenant_id: 'b', reference_vector: { element: [9, 9] } });
      expect(inB.map((h) => h.id)).toEqual(['same', 'b-only']);
      expect(await search({ collection_name: 'mt', tenant_id: 'nobody', reference_vector: { element: [0, 0] } })).toEqual([]);
      const filtered = await search({ collection_name: 'mt', tenant_id: 'a', reference_vector: { element: [0, 0] }, filter: { eq: { owner: 'b' } } });
      expect(filtered).toEqual([]);

      for (let i = 0; i < 5; i++) {
        const s = await api('POST', '/api/v1/vectors/sample', { collection_name: 'mt', tenant_id: 'b', num_samples: 10 });
        expect(s.body.vectors.map((v: { id: string; values: number[] }) => `${v.id}:${v.values}`).sort()).toEqual(['b-only:0,0.1', 'same:9,9']);
      }
    });

    it('delete in one tenant leaves the other alone', async () => {
      const res = await api('POST', '/api/v1/vectors/delete', { collection_name: 'mt', vector_identifiers: [{ vector_id: 'same', tenant_id: 'a' }, { vector_id: 'b-only', tenant_id: 'a' }] });
      expect(res.body).toEqual({ num_vectors_deleted: 1 });
      expect((await api('GET', '/api/v1/vectors/collections/mt/same?tenant_id=a')).status).toBe(404);
      expect((await api('GET', '/api/v1/vectors/collections/mt/same?tenant_id=b')).status).toBe(200);
      expect((await api('GET', '/api/v1/vectors/collections/mt/b-only?tenant_id=b')).status).toBe(200);
      const viaRequest = await api('POST', '/api/v1/vectors/delete', { collection_name: 'mt', tenant_id: 'b', vector_identifiers: [{ vector_id: 'b-only' }] });
      expect(viaRequest.body).toEqual({ num_vectors_deleted: 1 });
      expect((await api('GET', '/api/v1/vectors/collections/mt')).body).toMatchObject({ vector_count: 2, index: { tenants: 2 } });
    });

    it('tenant_id is required on a multi-tenant collection and refused on a plain one', async () => {
      const e = (m: string, url: string, body: unknown, param: string, msg: RegExp) => expect400(m, url, body, param, msg);
      await e('POST', '/api/v1/vectors/upsert', { collection_name: 'mt', vector: [{ id: 'x', values: [1, 1] }] }, 'tenant_id', /vector\[0\] has no tenant_id .* multi-tenant/);
      await e('POST', '/api/v1/vectors/search', { collection_name: 'mt', reference_vector: { element: [1, 1] } }, 'tenant_id', /multi-tenant: tenant_id is required/);
      await e('POST', '/api/v1/vectors/sample', { collection_name: 'mt' }, 'tenant_id', /multi-tenant/);
      await e('POST', '/api/v1/vectors/delete', { collection_name: 'mt', vector_identifiers: [{ vector_id: 'x' }] }, 'tenant_id', /vector_identifiers\[0\] has no tenant_id/);
      await e('GET', '/api/v1/vectors/collections/mt/same', undefined, 'tenant_id', /multi-tenant/);
      await e('POST', '/api/v1/vectors/upsert', { collection_name: 'mt', tenant_id: 'a', vector: [{ id: 'x', values: [1, 1], tenant_id: 'b' }] }, 'vector[0].tenant_id', /differs/);
      await e('POST', '/api/v1/vectors/upsert', { collection_name: 'mt', tenant_id: '', vector: [{ id: 'x', values: [1, 1] }] }, 'tenant_id', /fewer than 1 characters/);

      await create({ name: 'plain', dimension: 2 });
      await e('POST', '/api/v1/vectors/upsert', { collection_name: 'plain', tenant_id: 'a', vector: [{ id: 'x', values: [1, 1] }] }, 'tenant_id', /has no tenants: remove tenant_id/);
      await e('POST', '/api/v1/vectors/upsert', { collection_name: 'plain', vector: [{ id: 'x', values: [1, 1] }, { id: 'y', values: [1, 1], tenant_id: 'a' }] }, 'vector[1].tenant_id', /has no tenants/);
      await e('POST', '/api/v1/vectors/search', { collection_name: 'plain', tenant_id: 'a', reference_vector: { element: [1, 1] } }, 'tenant_id', /has no tenants/);
      await e('POST', '/api/v1/vectors/sample', { collection_name: 'plain', tenant_id: 'a' }, 'tenant_id', /has no tenants/);
      await e('POST', '/api/v1/vectors/delete', { collection_name: 'plain', vector_identifiers: [{ vector_id: 'x', tenant_id: 'a' }] }, 'vector_identifiers[0].tenant_id', /has no tenants/);
      await e('GET', '/api/v1/vectors/collections/plain/x?tenant_id=a', undefined, 'tenant_id', /has no tenants/);
      expect((await api('GET', '/api/v1/vectors/collections/plain')).body.vector_count).toBe(0);
    });
  });

  describe('filters', () => {
    const N = 3000;
    const colors = ['red', 'green', 'blue'];
    const props = (i: number) => ({ i, color: colors[i % 3]!, bucket: i % 100, tags: i % 7 === 0 ? ['seven', 'x'] : ['x'], name: `n${String(i).padStart(4, '0')}` });
    let data: number[][];

    beforeAll(async () => {
      await create({ name: 'filtered', dimension: 8, metric: 'cosine' });
      data = randomVectors(N, 8, 11);
      for (let s = 0; s < N; s += 1000) {
        await upsert('filtered', data.slice(s, s + 1000).map((values, k) => ({ id: `v${s + k}`, values, properties: props(s + k) })));
      }
    });

    const cosine = (a: number[], b: number[]) => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += a[i]! * b[i]!;
        na += a[i]! ** 2;
        nb += b[i]! ** 2;
      }
      return 1 - dot / Math.sqrt(na * nb);
    };

    async function check(filter: unknown, keep: (p: ReturnType<typeof props>) => boolean, k: number, strategy: string) {
      const q = randomVectors(1, 8, 12)[0]!;
      const body = { collection_name: 'filtered', reference_vector: { element: q }, filter, max_results: k, properties: ['i'] };
      const hits = await search(body);
      const matching = data.map((v, i) => ({ i, d: cosine(q, v) })).filter(({ i }) => keep(props(i)));
      matching.sort((a, b) => a.d - b.d);
      expect(hits).toHaveLength(Math.min(k, matching.length));
      for (const h of hits) expect(keep(props(h.properties!.i as number))).toBe(true);
      const truth = new Set(matching.slice(0, k).map((m) => m.i));
      if (truth.size > 0) {
        const recall = hits.filter((h) => truth.has(h.properties!.i as number)).length / truth.size;
        expect(recall).toBeGreaterThanOrEqual(0.9);
      }
      expect(await host.app.vectors!.explainSearch({ ...body, include_vector: false, include_distance: true, include_id: true } as never)).toBe(strategy);
    }

    it('selective filters are answered exactly, broad ones through the graph, both with max_results matches', async () => {
      // This host answers filters with at most 500 matches by an exact scan.
      await check({ eq: { bucket: 42 } }, (p) => p.bucket === 42, 10, 'exact'); // 30 matches
      await check({ in: { bucket: [1, 2, 3] } }, (p) => [1, 2, 3].includes(p.bucket), 100, 'exact'); // 90 matches: all of them
      await check({ eq: { color: 'red' } }, (p) => p.color === 'red', 50, 'filtered-graph'); // 1000 matches
      await check({ range: { i: { gte: 100, lt: 2900 } } }, (p) => p.i >= 100 && p.i < 2900, 200, 'filtered-graph');
      await check({ eq: { tags: 'seven' } }, (p) => p.tags.includes('seven'), 10, 'exact');
      await check({ range: { name: { gte: 'n1000', lt: 'n1010' } } }, (p) => p.name >= 'n1000' && p.name < 'n1010', 20, 'exact');
      await check(
        { or: [{ and: [{ eq: { color: 'blue' } }, { range: { bucket: { lt: 20 } } }] }, { in: { i: [7, 8, 9] } }] },
        (p) => (p.color === 'blue' && p.bucket < 20) || [7, 8, 9].includes(p.i),
        30,
        'exact',
      );
      await check({ eq: { color: 'purple' } }, () => false, 10, 'empty');
    });

    it('a malformed filter is a 400 naming the field', async () => {
      const base = { collection_name: 'filtered', reference_vector: { element: data[0] } };
      await expect400('POST', '/api/v1/vectors/search', { ...base, filter: { range: { i: { gte: 'a', lt: 3 } } } }, 'filter.range.i', /mixes/);
      await expect400('POST', '/api/v1/vectors/search', { ...base, filter: { and: [{ eq: { i: 1 } }, { like: 'x' }] } }, 'filter.and[1]', /unknown operator "like"/);
      await expect400('POST', '/api/v1/vectors/search', { ...base, filter: [1] }, 'filter', /must be object/);
    });
  });

  describe('bad input', () => {
    beforeAll(async () => {
      await create({ name: 'strict', dimension: 4 });
      await create({ name: 'strict-mt', dimension: 4, multi_tenant: true });
    });

    const good = (id: string) => ({ id, values: [1, 2, 3, 4], properties: { ok: true } });
    const cases: Array<[string, unknown[], string, RegExp]> = [
      ['wrong dimension', [good('a'), good('b'), good('c'), { id: 'd', values: [1, 2, 3] }], 'vector[3].values', /^vector\[3\]\.values has 3 numbers; the collection "strict" has dimension 4$/],
      ['infinity', [good('a'), { id: 'b', values: [1, 2, INF, 4] }], 'vector[1].values[2]', /is Infinity; every value must be a finite number/],
      ['a string where a number belongs', [{ id: 'a', values: [1, 'NaN', 3, 4] }], 'vector[0].values[1]', /is a string; every value must be a finite number/],
      ['null in values', [{ id: 'a', values: [1, null, 3, 4] }], 'vector[0].values[1]', /is null/],
      ['beyond float32', [{ id: 'a', values: [1, 2, 3, 1e39] }], 'vector[0].values[3]', /beyond the float32 range/],
      ['empty id', [good('a'), { id: '', values: [1, 2, 3, 4] }], 'vector[1].id', /is empty/],
      ['over-long id', [{ id: 'x'.repeat(257), values: [1, 2, 3, 4] }], 'vector[0].id', /has 257 characters; an id is at most 256/],
      ['id not a string', [{ id: 7, values: [1, 2, 3, 4] }], 'vector[0].id', /must be string/],
      ['duplicate id in the request', [good('a'), good('b'), good('a')], 'vector[2].id', /repeats vector\[0\]\.id/],
      ['properties an array', [good('a'), { id: 'b', values: [1, 2, 3, 4], properties: [1] }], 'vector[1].properties', /must be a JSON object/],
      ['properties a string', [{ id: 'b', values: [1, 2, 3, 4], properties: 'x' }], 'vector[0].properties', /must be a JSON object/],
      ['properties null', [{ id: 'b', values: [1, 2, 3, 4], properties: null }], 'vector[0].properties', /must be a JSON object/],
      ['values missing', [{ id: 'b' }], 'vector[0].values', /missing the required field/],
      ['a vector that is not an object', [good('a'), 5], 'vector[1]', /must be object/],
    ];

    it.each(cases)('upsert refuses %s with a 400 naming the field, and writes nothing', async (_what, vector, param, message) => {
      await expect400('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector }, param, message);
      expect((await api('GET', '/api/v1/vectors/collections/strict/a')).status).toBe(404);
      expect((await api('GET', '/api/v1/vectors/collections/strict')).body.vector_count).toBe(0);
    });

    it('refuses malformed bodies, empty batches and unknown collections', async () => {
      await expect400('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector: [] }, 'vector', /fewer than 1 items/);
      await expect400('POST', '/api/v1/vectors/upsert', { vector: [good('a')] }, 'collection_name', /missing the required field/);
      await expect400('POST', '/api/v1/vectors/upsert', [good('a')], null, /body must be object/);
      const unknown = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'nope', vector: [good('a')] });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toMatchObject({ code: 'not_found', param: 'collection_name' });
      for (const url of ['/api/v1/vectors/search', '/api/v1/vectors/sample', '/api/v1/vectors/delete']) {
        const res = await api('POST', url, { collection_name: 'nope', reference_vector: { element: [1] }, vector_identifiers: [{ vector_id: 'a' }] });
        expect(res.status, url).toBe(404);
      }
    });

    it('text that is not Unicode (a lone surrogate) is a 400 on both stores, naming the field', async () => {
      // JSON can carry "\\ud800" as an escape; neither SQLite's UTF-8 nor PostgreSQL's jsonb can keep it.
      await expect400('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector: [good('b\ud800')] }, 'vector[0].id', /lone surrogate/);
      await expect400('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector: [{ ...good('b'), properties: { k: 'x\udc00y' } }] }, 'vector[0].properties', /lone surrogate/);
      await expect400('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector: [{ ...good('b'), properties: { ['\ud800']: 1 } }] }, 'vector[0].properties', /lone surrogate/);
      await expect400('POST', '/api/v1/vectors/delete', { collection_name: 'strict', vector_identifiers: [{ vector_id: '\ud800' }] }, 'vector_identifiers[0].vector_id', /lone surrogate/);
      // A well-formed pair (an emoji) is text like any other.
      await create({ name: 'unicode', dimension: 4 });
      expect((await api('POST', '/api/v1/vectors/upsert', { collection_name: 'unicode', vector: [{ ...good('b\ud83d\ude00'), properties: { k: '\ud83d\ude00' } }] })).status).toBe(200);
      expect((await api('GET', `/api/v1/vectors/collections/unicode/${encodeURIComponent('b\ud83d\ude00')}`)).body.vector.properties).toEqual({ k: '\ud83d\ude00' });
    });

    it('upsert bodies that are not JSON, or empty, are 400s', async () => {
      const { token } = await tokenFor(host, 'raw');
      const post = (body: string) =>
        fetch(`${host.url}/api/v1/vectors/upsert`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
      let res = await post('{"collection_name": ');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/not valid JSON/);
      res = await post('');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/empty/);
    });

    it('search, sample and delete refuse out-of-range and malformed fields', async () => {
      const s = { collection_name: 'strict', reference_vector: { element: [1, 2, 3, 4] } };
      await expect400('POST', '/api/v1/vectors/search', { ...s, max_results: 0 }, 'max_results', /must be >= 1/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, max_results: 1001 }, 'max_results', /must be <= 1000/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, max_results: 2.5 }, 'max_results', /integer/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, max_results: '10' }, 'max_results');
      await expect400('POST', '/api/v1/vectors/search', { ...s, reference_vector: { element: [1, 2, 3] } }, 'reference_vector.element', /has 3 numbers; the collection "strict" has dimension 4/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, reference_vector: { element: [1, 2, 3, INF] } }, 'reference_vector.element[3]', /finite/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, reference_vector: [1, 2, 3, 4] }, 'reference_vector', /must be object/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, include_vector: 'yes' }, 'include_vector', /boolean/);
      await expect400('POST', '/api/v1/vectors/search', { ...s, properties: 'color' }, 'properties', /array/);
      await expect400('POST', '/api/v1/vectors/sample', { collection_name: 'strict', num_samples: 0 }, 'num_samples', /must be >= 1/);
      await expect400('POST', '/api/v1/vectors/sample', { collection_name: 'strict', num_samples: 1001 }, 'num_samples', /must be <= 1000/);
      await expect400('POST', '/api/v1/vectors/delete', { collection_name: 'strict', vector_identifiers: [{ vector_id: '' }] }, 'vector_identifiers[0].vector_id', /is empty/);
      await expect400('POST', '/api/v1/vectors/delete', { collection_name: 'strict', vector_identifiers: [{ vector_id: 'x'.repeat(300) }] }, 'vector_identifiers[0].vector_id', /300 characters/);
      await expect400('POST', '/api/v1/vectors/delete', { collection_name: 'strict', vector_identifiers: [] }, 'vector_identifiers');
    });

    it('a body over the vector limit is a 413 that states the limit', async () => {
      const dim = 4;
      const vector = Array.from({ length: 300_000 }, (_, i) => ({ id: `id-${i}`, values: Array.from({ length: dim }, () => 0.123456789) }));
      for (const url of ['/api/v1/vectors/upsert', '/api/v1/vectors/search']) {
        const res = await api('POST', url, { collection_name: 'strict', vector, reference_vector: { element: [1, 2, 3, 4] } });
        expect(res.status, url).toBe(413);
        expect(res.body.error.code).toBe('payload_too_large');
        expect(res.body.error.message).toContain(`${LIMIT} bytes`);
      }
      expect((await api('GET', '/api/v1/vectors/collections/strict')).body.vector_count).toBe(0);
    });

    it('a batch well over the app-wide body limit but under the vector limit is accepted', async () => {
      // This host's app-wide limit is 64 KiB and its vector limit 16 MiB (the default is 64 MiB, for
      // batches like 500 x 768 full-precision floats, about 8 MB).
      const res = await api('POST', '/api/v1/vectors/upsert', { collection_name: 'strict', vector: Array.from({ length: 20_000 }, (_, i) => ({ id: `bulk-${i}`, values: [0.1, 0.2, 0.3, 0.4] })) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ num_affected: 20_000 });
    });
  });

  describe('recall', () => {
    it('recall@10 at the default settings is at least 0.95 against an exact search, for each metric', async () => {
      const n = 3000;
      const dim = 32;
      const data = randomVectors(n, dim, 21);
      const queries = randomVectors(50, dim, 22);
      for (const metric of ['cosine', 'l2', 'dot'] as const) {
        const name = `recall-${metric}`;
        await create({ name, dimension: dim, metric });
        for (let s = 0; s < n; s += 1500) await upsert(name, data.slice(s, s + 1500).map((values, k) => ({ id: String(s + k), values })));
        const dist = (a: number[], b: number[]) => {
          let dot = 0;
          let na = 0;
          let nb = 0;
          let l2 = 0;
          for (let i = 0; i < dim; i++) {
            dot += a[i]! * b[i]!;
            na += a[i]! ** 2;
            nb += b[i]! ** 2;
            l2 += (a[i]! - b[i]!) ** 2;
          }
          return metric === 'cosine' ? 1 - dot / Math.sqrt(na * nb) : metric === 'l2' ? Math.sqrt(l2) : -dot;
        };
        let hits = 0;
        for (const q of queries) {
          const exact = data.map((v, i) => ({ i, d: dist(q, v) })).sort((a, b) => a.d - b.d).slice(0, 10);
          const found = await search({ collection_name: name, reference_vector: { element: q } });
          expect(found).toHaveLength(10);
          const truth = new Map(exact.map((e) => [String(e.i), e.d]));
          for (const h of found) {
            if (truth.has(h.id!)) {
              hits++;
              expect(h.distance!).toBeCloseTo(truth.get(h.id!)!, 4);
            }
          }
        }
        expect(hits / (queries.length * 10), metric).toBeGreaterThanOrEqual(0.95);
      }
    });
  });

  describe('a free event loop', () => {
    it('a 50,000-vector upsert and its indexing do not hold up other requests', async () => {
      const dim = 16;
      await create({ name: 'bulk', dimension: dim, hnsw: { ef_construction: 40 } });
      await create({ name: 'other', dimension: dim });
      const small = randomVectors(100, dim, 31);
      await upsert('other', small.map((values, i) => ({ id: String(i), values })));
      const data = randomVectors(50_000, dim, 32);
      const body = JSON.stringify({ collection_name: 'bulk', vector: data.map((values, i) => ({ id: String(i), values, properties: { i } })) });
      const { token } = await tokenFor(host, 'bulk');
      const health: number[] = [];
      const otherSearch: number[] = [];
      let done = false;
      const probe = (async () => {
        while (!done) {
          let t = performance.now();
          expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
          health.push(performance.now() - t);
          t = performance.now();
          const hits = await search({ collection_name: 'other', reference_vector: { element: small[3] }, max_results: 1 });
          expect(hits[0]!.id).toBe('3');
          otherSearch.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      const t0 = performance.now();
      const res = await fetch(`${host.url}/api/v1/vectors/upsert`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ num_affected: 50_000 });
      const acked = performance.now() - t0;
      // A search in the bulk collection sees every acknowledged vector without waiting for its
      // graph (the vectors not in it yet are scanned exactly).
      const hits = await search({ collection_name: 'bulk', reference_vector: { element: data[49_999] }, max_results: 1 });
      expect(hits[0]).toMatchObject({ id: '49999', distance: 0 });
      const indexed = performance.now() - t0;
      done = true;
      await probe;
      health.sort((a, b) => a - b);
      otherSearch.sort((a, b) => a - b);
      const p99 = health[Math.floor(health.length * 0.99)]!;
      console.log(`50k upsert: acked ${acked.toFixed(0)} ms, indexed ${indexed.toFixed(0)} ms; healthz ${health.length} probes, p99 ${p99.toFixed(1)} ms, max ${health.at(-1)!.toFixed(1)} ms; other-collection search max ${otherSearch.at(-1)!.toFixed(1)} ms`);
      expect(health.length).toBeGreaterThan(10);
      // Held up, the event loop would stall for seconds (the whole parse and index); the bound is
      // generous so that a CI machine whose two cores also run the other test files stays under it
      // (a run there measured a p99 of 161 ms).
      expect(p99).toBeLessThan(300);
      // Searches of another collection are served between slices of the bulk collection's graph work.
      expect(otherSearch[Math.floor(otherSearch.length / 2)]!).toBeLessThan(300);
      for (let i = 0; i < 1200 && (await api('GET', '/api/v1/vectors/collections/bulk')).body.index.pending > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect((await api('GET', '/api/v1/vectors/collections/bulk')).body).toMatchObject({ vector_count: 50_000, index: { indexed: 50_000, pending: 0 } });
    });
  });
});
