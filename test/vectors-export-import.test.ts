// Export and import of a vector collection through the real app: the file round-trips every
// vector bit for bit (values compared as stored float32 bytes), every property and every search
// result; an export is a consistent snapshot while writes go on; and a damaged, foreign or
// oversized file, or a name already taken, is refused without writing anything.
// Every test runs on both engines, each on a fresh store: the embedded SQLite store, and PostgreSQL
// (the store of record shared by the replicas; an export reads this replica's copy of it).
import crypto from 'node:crypto';
import { sql } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { rng } from './helpers/random.js';
import { STORE_ENGINES, useStoreEngines } from './helpers/store-engines.js';
import { vectorTestHost } from './helpers/vectors.js';

const LIMIT = 16 * 1024 * 1024;
/** An import has its own limit (MAX_VECTOR_IMPORT_BYTES), above the other bodies'. */
const IMPORT_LIMIT = 24 * 1024 * 1024;

const engines = useStoreEngines('vectors_export_import');

/** JSON cannot say -0 (JSON.stringify writes 0): this string in a body becomes the literal -0. */
const NEG0 = '__neg0__';

/** Awkward float32 values: signed zeros, subnormals, the extremes, and plain random ones. */
function awkwardValues(r: () => number, dim: number): Array<number | string> {
  const special = [NEG0, 1.4e-45, -1.17549435e-38, 3.4028234e38, -3.4028234e38, 0.1, 1 / 3];
  return Array.from({ length: dim }, (_, j) => (j < 2 && r() < 0.3 ? special[Math.floor(r() * special.length)]! : (r() * 2 - 1) * 10 ** Math.floor(r() * 6 - 3)));
}

describe.each(STORE_ENGINES)('on %s', (engine) => {
  const setup = vectorTestHost(() => engines.hostEnv(engine, { MAX_VECTOR_BODY_BYTES: String(LIMIT), MAX_VECTOR_IMPORT_BYTES: String(IMPORT_LIMIT) }));
  const { api, post } = setup;

  async function upsertRaw(body: unknown) {
    const res = await fetch(`${setup.host.url}/api/v1/vectors/upsert`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body).replaceAll(`"${NEG0}"`, '-0'),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  async function exportText(name: string): Promise<string> {
    const res = await fetch(`${setup.host.url}/api/v1/vectors/export/${name}`, { headers: { authorization: `Bearer ${setup.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${name}.ndjson"`);
    return res.text();
  }

  async function importFile(file: string | Uint8Array, name?: string, contentType = 'application/x-ndjson') {
    const res = await fetch(`${setup.host.url}/api/v1/vectors/import${name ? `?name=${name}` : ''}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${setup.token}`, 'content-type': contentType },
      body: file,
    });
    return { status: res.status, body: (await res.json()) as any };
  }

  type StoredRow = { tenant: string; id: string; vec: Buffer; properties: string };
  /**
   * Every stored row of a collection, as the store of record holds it: the float32 bytes
   * themselves. On PostgreSQL its live rows (not the tombstones), properties as jsonb's text, in
   * the order of the bytes as on SQLite.
   */
  async function storedRows(name: string): Promise<StoredRow[]> {
    if (engine === 'postgres') {
      const { rows } = await sql<StoredRow>`
        SELECT v.tenant, v.id, v.vec, v.properties::text AS properties FROM vectors v JOIN vector_collections c ON c.id = v.collection_id
        WHERE c.name = ${name} AND v.vec IS NOT NULL ORDER BY v.tenant COLLATE "C", v.id COLLATE "C"`.execute(setup.host.store.db);
      return rows;
    }
    return setup.host.db
      .prepare('SELECT v.tenant, v.id, v.vec, v.properties FROM vectors v JOIN vector_collections c ON c.id = v.collection_id WHERE c.name = ? ORDER BY v.tenant, v.id')
      .all(name) as StoredRow[];
  }

  const collectionNames = async () => ((await api('GET', '/api/v1/vectors/collections')).body.collections as Array<{ name: string }>).map((c) => c.name).sort();

  describe('a round trip', () => {
    const dim = 8;
    const tenants = ['acme', 'ünïcode ✓', 'x'];
    let text: string;

    beforeAll(async () => {
      // ef above the vector count: the graph search is exhaustive, so both copies must agree exactly.
      await post('/api/v1/vectors/collections', { name: 'source', dimension: dim, metric: 'cosine', multi_tenant: true, description: 'round trip', hnsw: { m: 8, ef_construction: 100, ef: 1000 } }, 201);
      const r = rng(51);
      for (const tenant of tenants) {
        const vector = Array.from({ length: 150 }, (_, i) => ({
          id: i % 10 === 0 ? `ïd-${i}-✓` : `id-${i}`,
          values: awkwardValues(r, dim),
          properties: { i, tenant, nested: { deep: [1, 'two', null, { three: true }] }, text: 'line\nbreak "quoted" \u2028', ...(i % 3 ? { big: 2 ** 53 - 1 } : {}) },
        }));
        await upsertRaw({ collection_name: 'source', tenant_id: tenant, vector });
      }
      // Replaced and deleted vectors: labels with gaps, tombstones in the graph.
      await upsertRaw({ collection_name: 'source', tenant_id: 'acme', vector: [{ id: 'id-1', values: awkwardValues(r, dim), properties: { replaced: true } }] });
      await post('/api/v1/vectors/delete', { collection_name: 'source', tenant_id: 'x', filter: { range: { i: { lt: 20 } } } });
      text = await exportText('source');
    });

    it('the file describes itself: a header, one line per vector, a last line with the count and digest', () => {
      const lines = text.split('\n');
      expect(lines.at(-1)).toBe('');
      const header = JSON.parse(lines[0]!);
      expect(header).toEqual({
        format: 'platform-vector-collection',
        version: 1,
        values: 'float32-le-base64',
        collection: { name: 'source', dimension: dim, metric: 'cosine', description: 'round trip', multi_tenant: true, hnsw: { m: 8, ef_construction: 100, ef: 1000 } },
        vector_count: 430,
      });
      const trailer = JSON.parse(lines.at(-2)!);
      const body = lines.slice(0, -2).join('\n') + '\n';
      expect(trailer).toEqual({ end: true, vector_count: 430, sha256: crypto.createHash('sha256').update(body).digest('hex') });
      const first = JSON.parse(lines[1]!);
      expect(Object.keys(first)).toEqual(['id', 'tenant_id', 'values', 'properties']);
      expect(Buffer.from(first.values, 'base64').byteLength).toBe(dim * 4);
    });

    it('imports under a new name: the same definition, and every vector and property bit for bit', async () => {
      const res = await importFile(text, 'copy');
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const source = (await api('GET', '/api/v1/vectors/collections/source')).body;
      // (On PostgreSQL a GET also says where this replica's copy is: `replica`; an import's answer does not.)
      expect(res.body).toEqual({ ...source, name: 'copy', created_at: expect.any(Number), index: undefined, replica: undefined });
      expect(res.body).toMatchObject({ vector_count: 430, multi_tenant: true, hnsw: { m: 8, ef_construction: 100, ef: 1000 }, description: 'round trip' });
      const a = await storedRows('source');
      const b = await storedRows('copy');
      expect(b).toHaveLength(430);
      expect(b.map((row) => [row.tenant, row.id, row.vec.toString('hex'), JSON.parse(row.properties)])).toEqual(
        a.map((row) => [row.tenant, row.id, row.vec.toString('hex'), JSON.parse(row.properties)]),
      );
      // Signed zeros made it through as themselves.
      expect(b.some((row) => row.vec.readUInt32LE(0) === 0x80000000 || row.vec.readUInt32LE(4) === 0x80000000)).toBe(true);
      // And the copy exports to the same vector lines.
      const again = (await exportText('copy')).split('\n');
      expect(again.slice(1, -2)).toEqual(text.split('\n').slice(1, -2));
    });

    it('searches, fetches, counts and scrolls of the copy answer exactly as the original', async () => {
      const r = rng(52);
      for (const tenant of tenants) {
        for (let q = 0; q < 10; q++) {
          const query = { tenant_id: tenant, reference_vector: { element: Array.from({ length: dim }, () => r() * 2 - 1) }, max_results: 20, include_vector: true, properties: ['i', 'nested', 'replaced'] };
          const one = await post('/api/v1/vectors/search', { collection_name: 'source', ...query });
          const two = await post('/api/v1/vectors/search', { collection_name: 'copy', ...query });
          expect(two).toEqual(one);
          expect(one.search_results).toHaveLength(20);
        }
        const filter = { range: { i: { gte: 50, lt: 90 } } };
        expect(await post('/api/v1/vectors/count', { collection_name: 'copy', tenant_id: tenant, filter })).toEqual(await post('/api/v1/vectors/count', { collection_name: 'source', tenant_id: tenant, filter }));
        const page = { tenant_id: tenant, limit: 1000, include_vector: true };
        expect(await post('/api/v1/vectors/scroll', { collection_name: 'copy', ...page })).toEqual(await post('/api/v1/vectors/scroll', { collection_name: 'source', ...page }));
      }
      const fetched = await api('GET', `/api/v1/vectors/collections/copy/${encodeURIComponent('ïd-10-✓')}?tenant_id=${encodeURIComponent('ünïcode ✓')}`);
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual((await api('GET', `/api/v1/vectors/collections/source/${encodeURIComponent('ïd-10-✓')}?tenant_id=${encodeURIComponent('ünïcode ✓')}`)).body);
      // The copy is a collection like any other: it takes writes and deletes of its own.
      await post('/api/v1/vectors/upsert', { collection_name: 'copy', tenant_id: 'acme', vector: [{ id: 'new', values: Array(dim).fill(1) }] });
      expect(await post('/api/v1/vectors/count', { collection_name: 'copy', tenant_id: 'acme' })).toEqual({ count: 151 });
      expect(await post('/api/v1/vectors/count', { collection_name: 'source', tenant_id: 'acme' })).toEqual({ count: 150 });
    });

    it('refuses a name already taken with a 409, from the file or from ?name=', async () => {
      for (const name of [undefined, 'copy']) {
        const res = await importFile(text, name);
        expect(res.status).toBe(409);
        expect(res.body.error).toMatchObject({ code: 'conflict', param: 'name' });
        expect(res.body.error.message).toMatch(/already exists/);
      }
      const bad = await importFile(text, '-bad-name');
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: 'invalid_argument', param: 'name' });
    });

    it('a plain collection round-trips too, without tenant ids, as application/octet-stream', async () => {
      await post('/api/v1/vectors/collections', { name: 'plain', dimension: 3, metric: 'dot' }, 201);
      await upsertRaw({ collection_name: 'plain', vector: [{ id: 'a', values: [1, NEG0, 2.5], properties: { k: 1 } }, { id: 'b', values: [0, 0, 0] }] });
      const file = await exportText('plain');
      expect(JSON.parse(file.split('\n')[1]!)).toEqual({ id: 'a', values: Buffer.from(Float32Array.from([1, -0, 2.5]).buffer).toString('base64'), properties: { k: 1 } });
      const res = await importFile(new TextEncoder().encode(file), 'plain-copy', 'application/octet-stream');
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ name: 'plain-copy', dimension: 3, metric: 'dot', multi_tenant: false, vector_count: 2 });
      expect((await storedRows('plain-copy')).map((r) => r.vec.toString('hex'))).toEqual((await storedRows('plain')).map((r) => r.vec.toString('hex')));
      // An empty collection exports as a header and a last line, and imports as an empty one.
      await post('/api/v1/vectors/collections', { name: 'empty', dimension: 2 }, 201);
      const empty = await exportText('empty');
      expect(empty.split('\n')).toHaveLength(3);
      expect((await importFile(empty, 'empty-copy')).body).toMatchObject({ name: 'empty-copy', vector_count: 0 });
    });

    it('an unknown collection is a 404', async () => {
      const res = await api('GET', '/api/v1/vectors/export/nope');
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'not_found', param: 'name' });
    });

    describe('damaged files write nothing', () => {
      let before: string[];
      beforeAll(async () => {
        before = await collectionNames();
      });

      /** Re-signs edited vector lines, as a forger (or a buggy tool) would: the digest matches but a line is wrong. */
      const resign = (lines: string[]) => {
        const body = lines.slice(0, -1).join('\n') + '\n';
        const trailer = JSON.parse(lines.at(-1)!);
        return body + JSON.stringify({ ...trailer, vector_count: lines.length - 2, sha256: crypto.createHash('sha256').update(body).digest('hex') }) + '\n';
      };
      const lines = () => text.split('\n').slice(0, -1);
      const withLine = (i: number, edit: (v: any) => unknown) => {
        const l = lines();
        l[i] = JSON.stringify(edit(JSON.parse(l[i]!)));
        return resign(l);
      };

      const cases: Array<[string, () => string | Uint8Array, RegExp]> = [
        ['a file cut short', () => text.slice(0, Math.floor(text.length / 2)), /cut short|line \d+/],
        ['a file cut at a line end', () => lines().slice(0, 200).join('\n') + '\n', /cut short/],
        ['one changed value', () => lines().map((l, i) => (i === 2 ? l.replace(/"values":"(.)/, (_m, c: string) => `"values":"${c === 'A' ? 'B' : 'A'}`) : l)).join('\n') + '\n', /sha256 .* does not match/],
        ['an edited header', () => text.replace('"dimension":8', '"dimension":9'), /sha256 .* does not match/],
        ['a line removed (re-signed)', () => resign(lines().filter((_, i) => i !== 5)), /says 430/],
        ['a value that is NaN (re-signed)', () => withLine(3, (v) => ({ ...v, values: Buffer.from(new Float32Array(dim).fill(NaN).buffer).toString('base64') })), /line 4: "values"\[0\] is NaN/],
        ['too few values (re-signed)', () => withLine(3, (v) => ({ ...v, values: Buffer.from(new Float32Array(dim - 1).buffer).toString('base64') })), /line 4: "values" is not 8 float32 values/],
        ['values not base64 (re-signed)', () => withLine(3, (v) => ({ ...v, values: '!'.repeat(44) })), /line 4: "values" is not 8 float32 values/],
        ['a repeated id (re-signed)', () => withLine(3, (v) => ({ ...v, id: JSON.parse(lines()[2]!).id, tenant_id: JSON.parse(lines()[2]!).tenant_id })), /line 4: the id .* appears twice/],
        ['a missing tenant (re-signed)', () => withLine(3, ({ tenant_id: _t, ...v }) => v), /line 4: the collection is multi-tenant/],
        ['a 300-character tenant (re-signed)', () => withLine(3, (v) => ({ ...v, tenant_id: 't'.repeat(300) })), /line 4: tenant_id has 300 characters; a tenant id is at most 256/],
        ['an empty tenant (re-signed)', () => withLine(3, (v) => ({ ...v, tenant_id: '' })), /line 4: tenant_id is empty/],
        ['a 257-character id (re-signed)', () => withLine(3, (v) => ({ ...v, id: 'i'.repeat(257) })), /line 4: id has 257 characters; an id is at most 256/],
        ['properties not an object (re-signed)', () => withLine(3, (v) => ({ ...v, properties: [1] })), /line 4: "properties" is not a JSON object/],
        ['an empty id (re-signed)', () => withLine(3, (v) => ({ ...v, id: '' })), /line 4: id is empty/],
        ['a bad line of JSON (re-signed)', () => resign(lines().map((l, i) => (i === 7 ? l.slice(0, 20) : l))), /line 8: not valid JSON/],
        ['a bad hnsw setting (re-signed)', () => withLine(0, (h) => ({ ...h, collection: { ...h.collection, hnsw: { m: 1, ef_construction: 1, ef: 1 } } })), /line 1: .*collection\.hnsw\.m.* >= 2/],
        ['no metric (re-signed)', () => withLine(0, (h) => ({ ...h, collection: { ...h.collection, metric: undefined } })), /line 1: .*"collection\.metric"/],
        ['a newer version (re-signed)', () => withLine(0, (h) => ({ ...h, version: 2 })), /line 1: "version" is 2; this host reads version 1/],
        ['a JSON file that is not an export', () => JSON.stringify({ collection_name: 'x', vector: [] }) + '\n{}\n', /not a vector collection export/],
        ['one line only', () => JSON.stringify({ hello: 'world' }), /a single line/],
        ['bytes that are not UTF-8', () => new Uint8Array([0x7b, 0xff, 0xfe, 0x0a, 0x7d, 0x0a, 0x7d]), /not valid UTF-8/],
        ['an empty body', () => '', /body is empty/],
      ];

      it.each(cases)('%s is a 400', async (_what, file, message) => {
        const res = await importFile(file(), 'damaged');
        expect(res.status, JSON.stringify(res.body)).toBe(400);
        expect(res.body.error.code).toBe('invalid_argument');
        expect(res.body.error.message).toMatch(message);
        expect(await collectionNames()).toEqual(before);
        expect(await storedRows('damaged')).toEqual([]);
      });

      it('a body over MAX_VECTOR_IMPORT_BYTES is a 413 that states the limit and the setting', async () => {
        const res = await importFile(new Uint8Array(IMPORT_LIMIT + 1), 'damaged');
        expect(res.status).toBe(413);
        expect(res.body.error.code).toBe('payload_too_large');
        expect(res.body.error.message).toContain(`${IMPORT_LIMIT} bytes`);
        expect(res.body.error.message).toContain('MAX_VECTOR_IMPORT_BYTES');
        expect(await collectionNames()).toEqual(before);
      });

      it('so is one sent without a length (chunked), counted as it arrives', async () => {
        const res = await setup.importChunked('damaged', '', IMPORT_LIMIT + 1);
        expect(res.status).toBe(413);
        expect(((await res.json()) as any).error.message).toContain('MAX_VECTOR_IMPORT_BYTES');
        expect(await collectionNames()).toEqual(before);
      });

      it('without a body it is a 400, and a content type other than the file types is a 415', async () => {
        const res = await fetch(`${setup.host.url}/api/v1/vectors/import?name=damaged`, { method: 'POST', headers: { authorization: `Bearer ${setup.token}` } });
        expect(res.status).toBe(400);
        const form = await importFile(text, 'damaged', 'text/csv');
        expect(form.status).toBe(415);
        expect(form.body.error.code).toBe('unsupported_media_type');
        expect(await collectionNames()).toEqual(before);
      });
    });
  });

  describe('an export is a snapshot', () => {
    it('writes made while the file is being read are not in it; a reader that stops lets it go', async () => {
      const dim = 64;
      const n = 12_000;
      const r = rng(53);
      const data = Array.from({ length: n }, () => Array.from({ length: dim }, () => r() * 2 - 1));
      await post('/api/v1/vectors/collections', { name: 'busy', dimension: dim, hnsw: { ef_construction: 20 } }, 201);
      const idOf = (i: number) => `b${String(i).padStart(5, '0')}`;
      for (let s = 0; s < n; s += 3000) {
        await post('/api/v1/vectors/upsert', { collection_name: 'busy', vector: data.slice(s, s + 3000).map((values, k) => ({ id: idOf(s + k), values, properties: { v: 1 } })) });
      }
      const res = await fetch(`${setup.host.url}/api/v1/vectors/export/busy`, { headers: { authorization: `Bearer ${setup.token}` } });
      expect(res.headers.get('x-vector-count')).toBe(String(n));
      const reader = res.body!.getReader();
      const chunks: Uint8Array[] = [(await reader.read()).value!];
      // Meanwhile: the last vectors replaced, the first ones deleted, new ones added.
      await post('/api/v1/vectors/upsert', { collection_name: 'busy', vector: Array.from({ length: 100 }, (_, k) => ({ id: idOf(n - 1 - k), values: Array(dim).fill(0.5), properties: { v: 2 } })) });
      await post('/api/v1/vectors/delete', { collection_name: 'busy', vector_identifiers: Array.from({ length: 100 }, (_, k) => ({ vector_id: idOf(k) })) });
      await post('/api/v1/vectors/upsert', { collection_name: 'busy', vector: [{ id: 'zz-new', values: Array(dim).fill(1) }] });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
      const file = Buffer.concat(chunks);
      expect(file.byteLength).toBeGreaterThan(4 * 1024 * 1024); // more than the socket buffers hold
      const lines = file.toString('utf8').split('\n').slice(1, -2).map((l) => JSON.parse(l) as { id: string; values: string; properties: { v: number } });
      expect(lines).toHaveLength(n);
      lines.forEach((line, i) => {
        expect(line.id).toBe(idOf(i));
        expect(line.properties).toEqual({ v: 1 });
        expect(line.values).toBe(Buffer.from(Float32Array.from(data[i]!).buffer).toString('base64'));
      });
      // A reader that stops halfway lets go of its snapshot: the WAL can be checkpointed in full again.
      // (PASSIVE never waits: frames it could not copy past a reader's snapshot stay behind.)
      // An export reads the SQLite file with the vector tables: on PostgreSQL the replica's cache.
      const walBusy = () => {
        const [r] = setup.host.vectorDb.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number; checkpointed: number }>;
        return r!.checkpointed < r!.log ? 1 : 0;
      };
      const aborted = await fetch(`${setup.host.url}/api/v1/vectors/export/busy`, { headers: { authorization: `Bearer ${setup.token}` } });
      const partial = aborted.body!.getReader();
      await partial.read();
      await post('/api/v1/vectors/upsert', { collection_name: 'busy', vector: [{ id: 'zz-newer', values: Array(dim).fill(1) }] });
      // On PostgreSQL the write reaches the cache (and its WAL) once the replica has applied it.
      if (engine === 'postgres') await setup.host.app.vectors.flush();
      expect(walBusy()).toBe(1); // the export's read transaction holds the old snapshot
      await partial.cancel();
      for (let i = 0; i < 100 && walBusy() === 1; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(walBusy()).toBe(0);
      // It imports as the collection was when the export began.
      const imported = await importFile(file, 'busy-then');
      expect(imported.status, JSON.stringify(imported.body)).toBe(201);
      expect(imported.body.vector_count).toBe(n);
      expect(await post('/api/v1/vectors/count', { collection_name: 'busy' })).toEqual({ count: n - 100 + 2 });
    });
  });
});
