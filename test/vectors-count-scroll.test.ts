// Count, scroll (paging in id order with a cursor) and delete by filter, the vector store's
// additions to SPEC.md's five routes, against the real app with random vectors: exact answers
// checked against what was written, tenants, concurrent upserts during a scroll, and bad input.
// Every test runs on both engines: the embedded SQLite store, and PostgreSQL (the store of record
// shared by the replicas, this replica reading its own copy), each on a fresh store.
import { beforeAll, describe, expect, it } from 'vitest';
import { STORE_ENGINES, useStoreEngines } from './helpers/store-engines.js';
import { randomVectors, vectorTestHost } from './helpers/vectors.js';

const engines = useStoreEngines('vectors_count_scroll');

interface Vector {
  id: string;
  values?: number[];
  properties: Record<string, unknown>;
}

const colors = ['red', 'green', 'blue'];
const propsOf = (i: number) => ({ i, color: colors[i % 3]!, bucket: i % 10, tags: i % 7 === 0 ? ['seven'] : [] });
const f32 = (values: number[]) => Array.from(Float32Array.from(values));

describe.each(STORE_ENGINES)('on %s', (engine) => {
  const setup = vectorTestHost(() => engines.hostEnv(engine));
  const { api, post } = setup;

  async function expect400(url: string, body: unknown, param: string | null, message: RegExp) {
    const res = await api('POST', url, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_argument', param });
    expect(res.body.error.message).toMatch(message);
  }

  /** Every page of a scroll, following next_cursor to the end. */
  async function scrollAll(body: Record<string, unknown>): Promise<{ vectors: Vector[]; pages: number }> {
    const pages = await setup.scrollPages<Vector>(body);
    return { vectors: pages.flatMap((p) => p.vectors), pages: pages.length };
  }

  const N = 1000;
  const DIM = 6;
  let data: number[][];
  // Ids in SQLite's order (the bytes of their UTF-8; ASCII here, so JavaScript's sort agrees).
  const idOf = (i: number) => `v${String(i * 7919 % N).padStart(4, '0')}-${i}`;

  beforeAll(async () => {
    data = randomVectors(N, DIM, 41);
    await post('/api/v1/vectors/collections', { name: 'pages', dimension: DIM, metric: 'l2' }, 201);
    for (let s = 0; s < N; s += 250) {
      await post('/api/v1/vectors/upsert', { collection_name: 'pages', vector: data.slice(s, s + 250).map((values, k) => ({ id: idOf(s + k), values, properties: propsOf(s + k) })) });
    }
    await post('/api/v1/vectors/collections', { name: 'tenanted', dimension: 2, multi_tenant: true }, 201);
    await post('/api/v1/vectors/upsert', {
      collection_name: 'tenanted',
      vector: [
        ...Array.from({ length: 30 }, (_, i) => ({ id: `a${i}`, values: [i, 1], properties: propsOf(i), tenant_id: 'a' })),
        ...Array.from({ length: 12 }, (_, i) => ({ id: `b${i}`, values: [1, i], properties: propsOf(i), tenant_id: 'b' })),
      ],
    });
  });

  describe('count', () => {
    it('counts every vector, or those a filter matches', async () => {
      expect(await post('/api/v1/vectors/count', { collection_name: 'pages' })).toEqual({ count: N });
      const expectCount = async (filter: unknown, keep: (p: ReturnType<typeof propsOf>) => boolean) => {
        const want = Array.from({ length: N }, (_, i) => propsOf(i)).filter(keep).length;
        expect(await post('/api/v1/vectors/count', { collection_name: 'pages', filter }), JSON.stringify(filter)).toEqual({ count: want });
      };
      await expectCount({ eq: { color: 'red' } }, (p) => p.color === 'red');
      await expectCount({ range: { i: { gte: 100, lt: 350 } } }, (p) => p.i >= 100 && p.i < 350);
      await expectCount({ eq: { tags: 'seven' } }, (p) => p.tags.includes('seven'));
      await expectCount({ or: [{ in: { bucket: [1, 2] } }, { and: [{ eq: { color: 'blue' } }, { range: { i: { lt: 50 } } }] }] }, (p) => [1, 2].includes(p.bucket) || (p.color === 'blue' && p.i < 50));
      await expectCount({ eq: { color: 'purple' } }, () => false);
    });

    it('counts within a tenant, which is required on a multi-tenant collection and refused on a plain one', async () => {
      expect(await post('/api/v1/vectors/count', { collection_name: 'tenanted', tenant_id: 'a' })).toEqual({ count: 30 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'tenanted', tenant_id: 'b', filter: { eq: { color: 'red' } } })).toEqual({ count: 4 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'tenanted', tenant_id: 'nobody' })).toEqual({ count: 0 });
      await expect400('/api/v1/vectors/count', { collection_name: 'tenanted' }, 'tenant_id', /multi-tenant: tenant_id is required/);
      await expect400('/api/v1/vectors/count', { collection_name: 'pages', tenant_id: 'a' }, 'tenant_id', /has no tenants: remove tenant_id/);
    });

    it('refuses a bad filter, a missing collection name, and an unknown collection', async () => {
      await expect400('/api/v1/vectors/count', { collection_name: 'pages', filter: { like: { color: 'r%' } } }, 'filter', /unknown operator "like"/);
      await expect400('/api/v1/vectors/count', { collection_name: 'pages', filter: { range: { i: { gte: 1, lt: 'z' } } } }, 'filter.range.i', /mixes/);
      await expect400('/api/v1/vectors/count', { collection_name: 'pages', filter: 'red' }, 'filter', /must be object/);
      await expect400('/api/v1/vectors/count', {}, 'collection_name', /missing the required field/);
      const res = await api('POST', '/api/v1/vectors/count', { collection_name: 'nope' });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found', param: 'collection_name' });
    });
  });

  describe('scroll', () => {
    it('pages through every vector once, in id order, with exact values and properties', async () => {
      const { vectors, pages } = await scrollAll({ collection_name: 'pages', limit: 75, include_vector: true });
      expect(pages).toBe(Math.ceil(N / 75));
      const want = Array.from({ length: N }, (_, i) => i).sort((a, b) => (idOf(a) < idOf(b) ? -1 : 1));
      expect(vectors.map((v) => v.id)).toEqual(want.map(idOf));
      for (const v of vectors) {
        const i = v.properties.i as number;
        expect(v).toMatchObject({ id: idOf(i), properties: propsOf(i) });
        // The API writes each float32 as its shortest decimal: it reads back as the same float32.
        expect(f32(v.values!)).toEqual(f32(data[i]!));
      }
    });

    it('defaults: 100 per page, no values, every property; the last page has next_cursor null', async () => {
      const first = await post<{ vectors: Vector[]; next_cursor: string | null }>('/api/v1/vectors/scroll', { collection_name: 'pages' });
      expect(first.vectors).toHaveLength(100);
      expect(typeof first.next_cursor).toBe('string');
      for (const v of first.vectors) expect(Object.keys(v).sort()).toEqual(['id', 'properties']);
      // A collection of exactly two pages: the second says there is no third.
      const { pages } = await scrollAll({ collection_name: 'pages', limit: 500 });
      expect(pages).toBe(2);
      const all = await post('/api/v1/vectors/scroll', { collection_name: 'pages', limit: 1000 });
      expect(all.vectors).toHaveLength(N);
      expect(all.next_cursor).toBeNull();
    });

    it('a filter pages through its matches only; properties narrows what each vector carries', async () => {
      const { vectors } = await scrollAll({ collection_name: 'pages', limit: 40, filter: { and: [{ eq: { color: 'green' } }, { range: { bucket: { lte: 4 } } }] }, properties: ['i', 'absent'] });
      const want = Array.from({ length: N }, (_, i) => i).filter((i) => propsOf(i).color === 'green' && propsOf(i).bucket <= 4);
      expect(vectors.map((v) => v.id).sort()).toEqual(want.map(idOf).sort());
      expect(vectors.map((v) => v.id)).toEqual([...vectors.map((v) => v.id)].sort());
      for (const v of vectors) expect(Object.keys(v.properties)).toEqual(['i']);
      // No match at all: one empty page.
      expect(await post('/api/v1/vectors/scroll', { collection_name: 'pages', filter: { eq: { color: 'purple' } } })).toEqual({ vectors: [], next_cursor: null });
    });

    it('stays in its tenant', async () => {
      const a = await scrollAll({ collection_name: 'tenanted', tenant_id: 'a', limit: 7, include_vector: true });
      expect(a.vectors.map((v) => v.id)).toEqual(Array.from({ length: 30 }, (_, i) => `a${i}`).sort());
      expect(a.vectors.find((v) => v.id === 'a3')).toEqual({ id: 'a3', values: [3, 1], properties: propsOf(3) });
      const b = await scrollAll({ collection_name: 'tenanted', tenant_id: 'b', limit: 100 });
      expect(b.vectors.map((v) => v.id)).toEqual(Array.from({ length: 12 }, (_, i) => `b${i}`).sort());
      expect(await post('/api/v1/vectors/scroll', { collection_name: 'tenanted', tenant_id: 'c' })).toEqual({ vectors: [], next_cursor: null });
      await expect400('/api/v1/vectors/scroll', { collection_name: 'tenanted' }, 'tenant_id', /multi-tenant/);
      await expect400('/api/v1/vectors/scroll', { collection_name: 'pages', tenant_id: 'a' }, 'tenant_id', /has no tenants/);
    });

    it('is stable under concurrent upserts: every vector present throughout is seen exactly once', async () => {
      const dim = 3;
      await post('/api/v1/vectors/collections', { name: 'moving', dimension: dim }, 201);
      const before = randomVectors(600, dim, 43).map((values, i) => ({ id: `m${String(i).padStart(4, '0')}`, values, properties: { v: 1 } }));
      await post('/api/v1/vectors/upsert', { collection_name: 'moving', vector: before });
      const seen: string[] = [];
      let cursor: string | null = null;
      let round = 0;
      const fresh = randomVectors(400, dim, 44);
      do {
        const page: { vectors: Vector[]; next_cursor: string | null } = await post('/api/v1/vectors/scroll', { collection_name: 'moving', limit: 50, ...(cursor ? { cursor } : {}) });
        seen.push(...page.vectors.map((v) => v.id));
        cursor = page.next_cursor;
        // Between pages: new ids on both sides of the cursor, and replacements of old ones.
        const batch = fresh.slice(round * 20, round * 20 + 20).map((values, k) => ({ id: `${k % 2 ? 'a' : 'z'}-new-${round}-${k}`, values }));
        batch.push({ id: before[(round * 37) % 600]!.id, values: [9, 9, 9] });
        await post('/api/v1/vectors/upsert', { collection_name: 'moving', vector: batch });
        round++;
      } while (cursor !== null);
      expect(new Set(seen).size).toBe(seen.length); // nothing twice
      for (const v of before) expect(seen).toContain(v.id); // nothing present throughout is skipped
      expect(seen).toEqual([...seen].sort()); // still in id order
      // Ids written after the cursor had passed their place are not seen; those after it are.
      expect(seen.filter((id) => id.startsWith('a-new-'))).toEqual([]);
      expect(seen.filter((id) => id.startsWith('z-new-')).length).toBeGreaterThan(0);
    });

    it('refuses a cursor it did not write, and a limit out of range', async () => {
      const base = { collection_name: 'pages' };
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: 'not a cursor!' }, 'cursor', /not a cursor from this store/);
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: Buffer.from('{"after": 3}').toString('base64url') }, 'cursor', /not a cursor/);
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: Buffer.from('{"v": 2, "after": "x"}').toString('base64url') }, 'cursor', /not a cursor/);
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: 'AAAA' }, 'cursor', /not a cursor/);
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: '' }, 'cursor', /fewer than 1 characters/);
      await expect400('/api/v1/vectors/scroll', { ...base, cursor: 5 }, 'cursor', /must be string/);
      await expect400('/api/v1/vectors/scroll', { ...base, limit: 0 }, 'limit', /must be >= 1/);
      await expect400('/api/v1/vectors/scroll', { ...base, limit: 1001 }, 'limit', /must be <= 1000/);
      await expect400('/api/v1/vectors/scroll', { ...base, include_vector: 'yes' }, 'include_vector', /boolean/);
      await expect400('/api/v1/vectors/scroll', { ...base, filter: { eq: {} } }, 'filter.eq', /names no property/);
      // A cursor from one collection continues after the same id in another: it is only a position.
      const page = await post('/api/v1/vectors/scroll', { ...base, limit: 1 });
      expect((await post('/api/v1/vectors/scroll', { collection_name: 'moving', cursor: page.next_cursor })).vectors.length).toBeGreaterThan(0);
    });
  });

  describe('delete by filter', () => {
    it('removes exactly the matching vectors from every read, and counts them', async () => {
      const dim = 4;
      const vecs = randomVectors(300, dim, 45);
      await post('/api/v1/vectors/collections', { name: 'pruned', dimension: dim, metric: 'l2' }, 201);
      await post('/api/v1/vectors/upsert', { collection_name: 'pruned', vector: vecs.map((values, i) => ({ id: `p${i}`, values, properties: propsOf(i) })) });
      const doomed = (i: number) => propsOf(i).color === 'red' || propsOf(i).i < 10;
      const res = await post('/api/v1/vectors/delete', { collection_name: 'pruned', filter: { or: [{ eq: { color: 'red' } }, { range: { i: { lt: 10 } } }] } });
      const gone = vecs.map((_, i) => i).filter(doomed);
      expect(res).toEqual({ num_vectors_deleted: gone.length });
      expect(await post('/api/v1/vectors/count', { collection_name: 'pruned' })).toEqual({ count: 300 - gone.length });
      expect(await post('/api/v1/vectors/count', { collection_name: 'pruned', filter: { eq: { color: 'red' } } })).toEqual({ count: 0 });
      for (const i of [0, 3, 9, 12]) expect((await api('GET', `/api/v1/vectors/collections/pruned/p${i}`)).status).toBe(doomed(i) ? 404 : 200);
      for (const i of gone.slice(0, 20)) {
        const hits = await post('/api/v1/vectors/search', { collection_name: 'pruned', reference_vector: { element: vecs[i] }, max_results: 5, properties: ['i'] });
        for (const h of hits.search_results) expect(doomed(h.properties.i)).toBe(false);
      }
      await setup.host.app.vectors!.flush();
      expect((await api('GET', '/api/v1/vectors/collections/pruned')).body).toMatchObject({ vector_count: 300 - gone.length, index: { indexed: 300 - gone.length, pending: 0 } });
      // Nothing left to match: zero, and nothing else touched.
      expect(await post('/api/v1/vectors/delete', { collection_name: 'pruned', filter: { eq: { color: 'red' } } })).toEqual({ num_vectors_deleted: 0 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'pruned' })).toEqual({ count: 300 - gone.length });
    });

    it('deletes in one tenant only', async () => {
      const res = await post('/api/v1/vectors/delete', { collection_name: 'tenanted', tenant_id: 'b', filter: { eq: { color: 'green' } } });
      expect(res).toEqual({ num_vectors_deleted: 4 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'tenanted', tenant_id: 'b' })).toEqual({ count: 8 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'tenanted', tenant_id: 'a' })).toEqual({ count: 30 });
      await expect400('/api/v1/vectors/delete', { collection_name: 'tenanted', filter: { eq: { color: 'red' } } }, 'tenant_id', /multi-tenant: tenant_id is required/);
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages', tenant_id: 'a', filter: { eq: { color: 'red' } } }, 'tenant_id', /has no tenants/);
    });

    // On PostgreSQL the filter is matched in the replica's copy, and only rows not written since that
    // copy are deleted (shared-log.ts delete, asOf): the same outcome as the one box's transaction.
    it('is atomic: a vector replaced meanwhile by one that does not match is kept', async () => {
      // The delete and the replacement run at once: in either order the replacement survives.
      await post('/api/v1/vectors/collections', { name: 'contended', dimension: 2 }, 201);
      for (let round = 0; round < 40; round++) {
        const id = `x${round}`;
        const others = Array.from({ length: 50 }, (_, k) => ({ id: `o${round}-${k}`, values: [1, k], properties: { color: 'red' } }));
        await post('/api/v1/vectors/upsert', { collection_name: 'contended', vector: [{ id, values: [1, 1], properties: { color: 'red' } }, ...others] });
        const deleted = post('/api/v1/vectors/delete', { collection_name: 'contended', filter: { eq: { color: 'red' } } });
        await new Promise((resolve) => setTimeout(resolve, round % 5));
        const replaced = post('/api/v1/vectors/upsert', { collection_name: 'contended', vector: [{ id, values: [2, 2], properties: { color: 'blue' } }] });
        await Promise.all([deleted, replaced]);
        const res = await api('GET', `/api/v1/vectors/collections/contended/${id}`);
        expect(res.status, `round ${round}`).toBe(200);
        expect(res.body.vector).toEqual({ id, values: [2, 2], properties: { color: 'blue' } });
      }
      expect(await post('/api/v1/vectors/count', { collection_name: 'contended' })).toEqual({ count: 40 });
    });

    it('wants ids or a filter, not both and not neither, and a well-formed filter', async () => {
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages', filter: { eq: { i: 1 } }, vector_identifiers: [{ vector_id: 'x' }] }, 'filter', /not both/);
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages' }, 'vector_identifiers', /missing the required field "vector_identifiers"/);
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages', filter: {} }, 'filter', /is empty/);
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages', filter: { in: { color: [] } } }, 'filter.in.color', /non-empty array/);
      await expect400('/api/v1/vectors/delete', { collection_name: 'pages', filter: [] }, 'filter', /must be object/);
      expect(await post('/api/v1/vectors/count', { collection_name: 'pages' })).toEqual({ count: N });
    });
  });
});
