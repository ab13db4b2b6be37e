// A search never waits for the graph to catch up (issue 22, defect 2): right after a bulk upsert,
// or after a restart that has rows to replay, it answers at once from the graph plus an exact
// scan of the vectors still queued for it, and its answer is the exact top-k of every
// acknowledged vector (filters, replacements and deletes included). Upserts wait only when the
// queued graph work would take longer than VECTOR_MAX_BACKLOG_SECONDS to drain.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { VectorIndex } from '../src/vectors/vector-index.js';
import type { Filter, LogFn, Metric, NewCollection, Properties, SearchResult, WorkerSettings } from '../src/vectors/types.js';
import { tempDir } from './helpers/paths.js';
import { rng } from './helpers/random.js';
import { loadedVectorIndex, vectorTestHost, randomVectors as randomRows } from './helpers/vectors.js';

/** This file's index: larger exact scans and backlog than the unit tests'. */
const engine = (dataDir: string, logs: string[], overrides: Partial<WorkerSettings> = {}): VectorIndex =>
  loadedVectorIndex(dataDir, logs, { exactScanMax: 300, maxBacklogFloats: 1 << 30, ...overrides });

function randomVectors(n: number, dim: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n * dim }, () => r() * 2 - 1);
}

/** The distance in float64, from the float32 values stored. */
function distance64(metric: Metric, a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
    l2 += (a[i]! - b[i]!) ** 2;
  }
  return metric === 'cosine' ? 1 - dot / Math.sqrt(na * nb) : metric === 'l2' ? Math.sqrt(l2) : -dot;
}

/** Every acknowledged vector of one partition, as the client knows it. */
class Truth {
  readonly rows = new Map<string, { values: Float32Array; properties: Properties }>();
  put(ids: string[], values: Float32Array, properties: Properties[], dim: number): void {
    ids.forEach((id, i) => this.rows.set(id, { values: values.slice(i * dim, (i + 1) * dim), properties: properties[i]! }));
  }
  /** The exact top-k in float64 among the vectors that `keep` accepts. */
  topK(metric: Metric, q: Float32Array, k: number, keep: (p: Properties) => boolean = () => true): Array<{ id: string; d: number }> {
    const scored: Array<{ id: string; d: number }> = [];
    for (const [id, row] of this.rows) if (keep(row.properties)) scored.push({ id, d: distance64(metric, q, row.values) });
    return scored.sort((a, b) => a.d - b.d).slice(0, k);
  }
}

function expectExact(res: SearchResult, truth: Array<{ id: string; d: number }>, what: string): void {
  expect(res.hits.map((h) => h.id), what).toEqual(truth.map((t) => t.id));
  res.hits.forEach((h, i) => expect(Math.abs(h.distance - truth[i]!.d), `${what}: ${h.id}`).toBeLessThan(1e-4 * Math.max(1, Math.abs(truth[i]!.d))));
}

const search = (e: VectorIndex, collectionId: number, query: Float32Array, k: number, filter?: Filter) =>
  e.search({ collectionId, tenant: '', query, k, filter, includeVector: false, properties: undefined });

describe('a search while the graph catches up', () => {
  it('after a bulk upsert: answers at once with the exact top-k of every acknowledged vector, filtered, replaced and deleted ones included', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close();
    const e = engine(dataDir, []);
    const dim = 16;
    const metric: Metric = 'l2';
    const spec: NewCollection = { name: 'bulk', dimension: dim, metric, description: '', multiTenant: false, hnsw: { m: 16, efConstruction: 64, ef: 200 } };
    const c = e.createCollection(spec);
    const truth = new Truth();
    const props = (i: number) => ({ i, b: i % 10 });
    const write = (ids: string[], values: Float32Array, properties: Properties[]) => {
      const acked = e.upsert({ collectionId: c.id, tenants: ids.map(() => ''), ids, values, properties });
      expect(acked).not.toBeInstanceOf(Promise); // no backlog bound in the way here
      truth.put(ids, values, properties, dim);
    };

    // 2,000 vectors in the graph...
    const baseIds = Array.from({ length: 2000 }, (_, i) => `v${i}`);
    const base = randomVectors(2000, dim, 1);
    write(baseIds, base, baseIds.map((_, i) => props(i)));
    await e.flush(false);
    expect(e.stats(c.id)).toMatchObject({ indexed: 2000, pending: 0 });

    // ...then 40,000 more in two upserts, then replacements and deletes of graph vectors, queued
    // behind them: the graph still holds the old points of v0-v199 while they are queued.
    for (const [from, seed] of [[0, 2], [20_000, 3]] as const) {
      const ids = Array.from({ length: 20_000 }, (_, i) => `w${from + i}`);
      write(ids, randomVectors(20_000, dim, seed), ids.map((_, i) => props(from + i)));
    }
    const replacedIds = baseIds.slice(0, 100);
    write(replacedIds, randomVectors(100, dim, 4), replacedIds.map((_, i) => ({ i, b: 'replaced' })));
    const deletedIds = baseIds.slice(100, 200);
    expect(e.delete(c.id, deletedIds.map((id) => ({ tenant: '', id })))).toEqual({ numDeleted: 100 });
    for (const id of deletedIds) truth.rows.delete(id);
    const pending = e.stats(c.id).pending;
    expect(pending).toBeGreaterThan(30_000);

    const queries: Array<{ q: Float32Array; what: string }> = [];
    for (let i = 0; i < 8; i++) queries.push({ q: base.slice(i * dim, (i + 1) * dim), what: `the old point of replaced v${i}` });
    for (let i = 100; i < 108; i++) queries.push({ q: base.slice(i * dim, (i + 1) * dim), what: `the point of deleted v${i}` });
    const random = randomVectors(8, dim, 5);
    for (let i = 0; i < 8; i++) queries.push({ q: random.slice(i * dim, (i + 1) * dim), what: `random query ${i}` });
    const filters: Array<{ filter: Filter | undefined; keep: (p: Properties) => boolean; name: string }> = [
      { filter: undefined, keep: () => true, name: 'no filter' },
      // Many matches: the graph with the filter, plus the scan.
      { filter: { range: { b: { lt: 5 } } }, keep: (p) => typeof p.b === 'number' && p.b < 5, name: 'b < 5' },
      // Few matches (under exactScanMax): an exact scan of them all.
      { filter: { range: { i: { lt: 150 } } }, keep: (p) => (p.i as number) < 150, name: 'i < 150' },
    ];
    const answers: SearchResult[] = [];
    for (const { q, what } of queries) {
      for (const { filter, keep, name } of filters) {
        const res = search(e, c.id, q, 10, filter);
        // Answered synchronously: it did not wait for the graph.
        expect(res).not.toBeInstanceOf(Promise);
        expectExact(res, truth.topK(metric, q, 10, keep), `${what}, ${name}`);
        for (const h of res.hits) expect(deletedIds, what).not.toContain(h.id);
        answers.push(res);
      }
    }
    expect(answers.some((r) => r.unindexed > 30_000)).toBe(true);
    expect(answers.some((r) => r.strategy === 'filtered-graph')).toBe(true);
    expect(answers.some((r) => r.strategy === 'exact')).toBe(true);
    // A replaced vector is found at its new point, with its new properties.
    const moved = truth.rows.get('v0')!.values;
    const found = e.search({ collectionId: c.id, tenant: '', query: moved, k: 1, filter: undefined, includeVector: true, properties: ['b'] });
    expect(found.hits[0]).toMatchObject({ id: 'v0', distance: 0, properties: { b: 'replaced' } });
    expect([...found.hits[0]!.values!]).toEqual([...moved]);
    // All of it still before the graph caught up.
    expect(e.stats(c.id).pending).toBeGreaterThan(0);

    // Once it has: the same answers, and the graph's recall as before.
    await e.flush(false);
    expect(e.stats(c.id)).toMatchObject({ indexed: 41_900, pending: 0 });
    let hits = 0;
    let total = 0;
    for (const { q } of queries) {
      const exact = new Set(truth.topK(metric, q, 10).map((t) => t.id));
      const res = search(e, c.id, q, 10);
      expect(res.unindexed).toBe(0);
      hits += res.hits.filter((h) => exact.has(h.id)).length;
      total += 10;
    }
    expect(hits / total).toBeGreaterThanOrEqual(0.95);
    await e.close();
  });

  it('reports the very distances the graph will (float32, as hnswlib sums), cosine and an odd dimension', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close();
    const e = engine(dataDir, []);
    for (const [metric, dim] of [['cosine', 13], ['dot', 20], ['l2', 3]] as const) {
      const c = e.createCollection({ name: `d-${metric}`, dimension: dim, metric, description: '', multiTenant: false, hnsw: { m: 16, efConstruction: 64, ef: 400 } });
      const n = 3000;
      const ids = Array.from({ length: n }, (_, i) => `x${i}`);
      e.upsert({ collectionId: c.id, tenants: ids.map(() => ''), ids, values: randomVectors(n, dim, 11), properties: ids.map(() => ({})) });
      const q = randomVectors(1, dim, 12);
      const before = search(e, c.id, q, 20);
      expect(before.unindexed).toBeGreaterThan(2000);
      await e.flush(false);
      const after = search(e, c.id, q, 20);
      expect(after.unindexed).toBe(0);
      // The scan's distances and the graph's are the same numbers, bit for bit.
      expect(before.hits, metric).toEqual(after.hits);
    }
    await e.close();
  });

  it('after a restart: the rows to replay are queued, and searches answer at once meanwhile', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close();
    const dim = 8;
    const first = engine(dataDir, []);
    const c = first.createCollection({ name: 'replay', dimension: dim, metric: 'l2', description: '', multiTenant: false, hnsw: { m: 16, efConstruction: 64, ef: 200 } });
    const truth = new Truth();
    const put = (from: number, n: number, seed: number) => {
      const ids = Array.from({ length: n }, (_, i) => `r${from + i}`);
      const values = randomVectors(n, dim, seed);
      first.upsert({ collectionId: c.id, tenants: ids.map(() => ''), ids, values, properties: ids.map(() => ({})) });
      truth.put(ids, values, ids.map(() => ({})), dim);
    };
    put(0, 3000, 21);
    expect((await first.flush(true)).checkpointed).toBe(1);
    put(3000, 20_000, 22);
    put(0, 50, 23); // replacements of checkpointed vectors
    // A "crash": the first engine is left as it is (its rows are committed; nothing is checkpointed).
    const logs: string[] = [];
    const second = engine(dataDir, logs);
    expect(second.stats(c.id)).toMatchObject({ indexed: 2950, pending: 20_050 });
    const r = rng(24);
    for (let i = 0; i < 10; i++) {
      const id = `r${Math.floor(r() * 23_000)}`;
      const q = truth.rows.get(id)!.values;
      const res = search(second, c.id, q, 5);
      expect(res).not.toBeInstanceOf(Promise);
      expect(res.hits[0]).toEqual({ id, distance: 0 });
      expectExact(res, truth.topK('l2', q, 5), id);
    }
    expect(second.stats(c.id).pending).toBeGreaterThan(0);
    await second.flush(false);
    expect(second.stats(c.id)).toMatchObject({ indexed: 23_000, pending: 0 });
    expect(logs).toContainEqual(expect.stringMatching(/loaded its index checkpoint and replayed 20100 newer changes \(the graph took the 20050 added points in \d+ ms\)/));
    await second.close();
    await first.flush(false);
  });

  it('upserts wait while the queued graph work would take longer than maxBacklogSeconds to drain', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close();
    const dim = 32;
    const e = engine(dataDir, [], { maxBacklogSeconds: 0.3 });
    const c = e.createCollection({ name: 'bounded', dimension: dim, metric: 'l2', description: '', multiTenant: false, hnsw: { m: 16, efConstruction: 100, ef: 64 } });
    const batch = (from: number, n: number) => {
      const ids = Array.from({ length: n }, (_, i) => `b${from + i}`);
      return { collectionId: c.id, tenants: ids.map(() => ''), ids, values: randomVectors(n, dim, from), properties: ids.map(() => ({})) };
    };
    // Before any graph insert is measured, only the float bound applies.
    expect(e.upsert(batch(0, 20_000))).not.toBeInstanceOf(Promise);
    await new Promise((r) => setTimeout(r, 100)); // a few slices: the insert rate is measured
    const [g] = e.gauges();
    expect(g!.backlogSeconds).toBeGreaterThan(0.3);
    const waiting = e.upsert(batch(20_000, 100));
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    // Answered once the backlog was back under its bound, before it was empty.
    expect(e.gauges()[0]!.backlogSeconds).toBeLessThanOrEqual(0.3);
    expect(e.stats(c.id).pending).toBeGreaterThan(0);
    await e.close();
  });
});

describe('over HTTP', () => {
  const t = vectorTestHost();

  it('a search right after a 50,000-vector upsert answers before the graph has caught up, and correctly', async () => {
    const dim = 24;
    await t.post('/api/v1/vectors/collections', { name: 'fast', dimension: dim, metric: 'cosine' }, 201);
    const data = randomRows(50_000, dim, 41);
    const res = await t.post('/api/v1/vectors/upsert', { collection_name: 'fast', vector: data.map((values, i) => ({ id: `f${i}`, values, properties: { odd: i % 2 === 1 } })) });
    expect(res).toEqual({ num_affected: 50_000 });
    const hits = await t.post('/api/v1/vectors/search', { collection_name: 'fast', reference_vector: { element: data[49_999] }, max_results: 3 });
    const filtered = await t.post('/api/v1/vectors/search', { collection_name: 'fast', reference_vector: { element: data[49_998] }, max_results: 3, filter: { eq: { odd: true } } });
    // The searches had their answers while the graph was still catching up.
    const info = await t.api('GET', '/api/v1/vectors/collections/fast');
    expect(info.body.index.pending).toBeGreaterThan(0);
    expect(hits.search_results[0]).toMatchObject({ id: 'f49999', distance: expect.closeTo(0, 5) });
    expect(filtered.search_results).toHaveLength(3);
    expect(filtered.search_results[0].id).not.toBe('f49998');
    for (const h of filtered.search_results) expect(Number(h.id.slice(1)) % 2).toBe(1);
    const metrics = await (await fetch(`${t.host.url}/metrics`, { headers: { authorization: `Bearer ${t.token}` } })).text();
    const lag = Number(/^vector_store_index_lag_vectors\{collection="fast"\} (\d+)/m.exec(metrics)?.[1]);
    expect(lag).toBeGreaterThan(0);
    expect(metrics).toMatch(/^vector_store_index_backlog_seconds\{collection="fast"\} [\d.e+-]+$/m);
    await t.host.app.vectors!.flush();
    expect((await t.api('GET', '/api/v1/vectors/collections/fast')).body.index).toMatchObject({ indexed: 50_000, pending: 0 });
  });
});
