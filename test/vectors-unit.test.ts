// The vector store's parts without HTTP: the filter language, distances and float32 output, a
// partition's bookkeeping (labels, tombstones, sampling, compaction), checkpoint files, and the
// engine's load path (checkpoint + replay, rebuild) on a real SQLite file.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { openDatabase } from '../src/store/database.js';
import { findCheckpoint, writeCheckpoint } from '../src/vectors/checkpoint.js';
import { exactDistance, float32ToNumber, fromSpace } from '../src/vectors/distance.js';
import { VectorIndex } from '../src/vectors/vector-index.js';
import { compileFilter, parseFilter } from '../src/vectors/filter.js';
import { Partition, type ApplyJob } from '../src/vectors/partition.js';
import type { LogFn, NewCollection, WorkerSettings } from '../src/vectors/types.js';
import { rng } from './helpers/random.js';
import { tempDir } from './helpers/paths.js';
import { loadedVectorIndex } from './helpers/vectors.js';

function filterError(value: unknown): { message: string; param: string | null } {
  try {
    parseFilter(value);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return { message: (err as ApiError).message, param: (err as ApiError).param };
  }
  throw new Error('the filter was accepted');
}

describe('filter language', () => {
  it('refuses malformed filters, naming the field', () => {
    expect(filterError({})).toEqual({ message: expect.stringContaining('filter is empty'), param: 'filter' });
    expect(filterError({ eq: { a: 1 }, in: { a: [1] } }).message).toContain('2 operators');
    expect(filterError({ and: [] }).param).toBe('filter.and');
    expect(filterError({ or: [{ eq: { a: [1] } }] }).param).toBe('filter.or[0].eq.a');
    expect(filterError({ in: { a: [1, {}] } }).param).toBe('filter.in.a[1]');
    expect(filterError({ in: { a: [] } }).param).toBe('filter.in.a');
    expect(filterError({ range: { p: { gte: 1, lt: 'x' } } }).message).toContain('mixes number and string');
    expect(filterError({ range: { p: { foo: 1 } } }).param).toBe('filter.range.p.foo');
    expect(filterError({ range: { p: {} } }).param).toBe('filter.range.p');
    expect(filterError({ range: { 'odd name': { gt: null } } }).param).toBe('filter.range["odd name"].gt');
    expect(filterError({ nope: 1 }).message).toContain('unknown operator "nope"');
    expect(filterError({ eq: {} }).param).toBe('filter.eq');
    expect(filterError([]).param).toBe('filter');
    let deep: unknown = { eq: { a: 1 } };
    for (let i = 0; i < 20; i++) deep = { and: [deep] };
    expect(filterError(deep).message).toContain('deeper than 16');
  });

  it('matches eq, in, range, and, or; array properties match on any element', () => {
    const f = (filter: unknown) => compileFilter(parseFilter(filter));
    const red = { color: 'red', size: 3, price: 9.5, tags: ['a', 'b'], flag: true, none: null };
    const blue = { color: 'blue', size: 10, price: 20, tags: ['c'], name: 'm' };
    expect(f({ eq: { color: 'red' } })(red)).toBe(true);
    expect(f({ eq: { color: 'red', size: 4 } })(red)).toBe(false);
    expect(f({ eq: { flag: true, none: null } })(red)).toBe(true);
    expect(f({ eq: { none: null } })(blue)).toBe(false); // missing is not null
    expect(f({ eq: { tags: 'b' } })(red)).toBe(true);
    expect(f({ in: { color: ['green', 'blue'] } })(blue)).toBe(true);
    expect(f({ in: { size: ['3'] } })(red)).toBe(false); // no type coercion
    expect(f({ range: { price: { gte: 9.5, lt: 10 } } })(red)).toBe(true);
    expect(f({ range: { price: { gt: 9.5 } } })(red)).toBe(false);
    expect(f({ range: { color: { gte: 'a', lt: 'c' } } })(blue)).toBe(true);
    expect(f({ range: { color: { gt: 1 } } })(blue)).toBe(false); // a string never meets number bounds
    expect(f({ range: { missing: { gt: 1 } } })(blue)).toBe(false);
    const both = { or: [{ and: [{ eq: { color: 'red' } }, { range: { size: { lte: 3 } } }] }, { eq: { name: 'm' } }] };
    expect(f(both)(red)).toBe(true);
    expect(f(both)(blue)).toBe(true);
    expect(f(both)({ color: 'red', size: 4 })).toBe(false);
  });
});

describe('distances and numbers', () => {
  it('converts hnswlib distances: l2 not squared, dot negated, cosine not below 0', () => {
    expect(fromSpace('l2', 9)).toBe(3);
    expect(fromSpace('dot', 1 - 5)).toBe(-5);
    expect(fromSpace('cosine', -1e-7)).toBe(0);
    expect(exactDistance('l2', [0, 3], [4, 0])).toBe(5);
    expect(exactDistance('dot', [1, 2], [3, 4])).toBe(-11);
  });

  it('prints a float32 as its shortest decimal', () => {
    expect(float32ToNumber(Math.fround(0.1))).toBe(0.1);
    expect(float32ToNumber(Math.fround(-123.456))).toBe(-123.456);
    expect(float32ToNumber(Math.fround(1e-7))).toBe(1e-7);
    const r = rng(3);
    for (let i = 0; i < 10_000; i++) {
      const x = Math.fround((r() - 0.5) * 10 ** Math.floor(r() * 12 - 6));
      const y = float32ToNumber(x);
      expect(Math.fround(y)).toBe(x);
      expect(String(y).replace(/^-?0\.0*|[.-]|e.*$/g, '').length).toBeLessThanOrEqual(9);
    }
  });
});

const HNSW = { m: 16, efConstruction: 100, ef: 32 };

function randomVectors(n: number, dim: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n * dim }, () => r() * 2 - 1);
}

function addJob(labels: number[], values: Float32Array, deletes: number[] = []): ApplyJob {
  return { kind: 'apply', seq: 1, deletes, replaces: 0, labels, rows: labels.map((_, i) => i), values, next: 0, deletesDone: false, queuedAt: Date.now() };
}

describe('partition', () => {
  it('keeps ids, labels and the live set in step; samples distinct live vectors', () => {
    const p = new Partition(1, '', 'l2', 4, HNSW);
    for (let i = 0; i < 100; i++) p.commitPut(`v${i}`, i, { i });
    p.commitPut('v5', 100, { i: 'five' }); // replaced: new label, old one gone
    expect(p.idToLabel.get('v5')).toBe(100);
    expect(p.labelToId.has(5)).toBe(false);
    expect(p.commitDelete('v7')).toBe(7);
    expect(p.commitDelete('v7')).toBeUndefined();
    expect(p.size).toBe(99);
    expect(p.nextLabel).toBe(101);
    const sample = p.sampleLabels(30, rng(1));
    expect(new Set(sample).size).toBe(30);
    for (const label of sample) expect(p.labelToId.has(label)).toBe(true);
    expect(new Set(p.sampleLabels(1000, rng(2))).size).toBe(99);
  });

  it('counts tombstones, reuses their slots, and compacts them away', () => {
    const dim = 8;
    const p = new Partition(1, '', 'l2', dim, HNSW);
    const values = randomVectors(2000, dim, 4);
    const labels = Array.from({ length: 2000 }, (_, i) => i);
    labels.forEach((l) => p.commitPut(`v${l}`, l, {}));
    const job = addJob(labels, values);
    while (!p.applySlice(job, 1000));
    expect(p.indexLive).toBe(2000);
    expect(p.tombstones).toBe(0);

    // Delete 1200: they stay in the graph as tombstones until compaction.
    const deletes = labels.slice(0, 1200);
    deletes.forEach((l) => p.commitDelete(`v${l}`));
    p.applySlice(addJob([], new Float32Array(0), deletes), 1000);
    expect(p.tombstones).toBe(1200);
    expect(p.index.getCurrentCount()).toBe(2000);

    // New points take over tombstoned slots instead of growing the graph.
    const more = Array.from({ length: 100 }, (_, i) => 5000 + i);
    more.forEach((l) => p.commitPut(`w${l}`, l, {}));
    p.applySlice(addJob(more, randomVectors(100, dim, 5)), 1000);
    expect(p.index.getCurrentCount()).toBe(2000);
    expect(p.tombstones).toBe(1100);

    expect(p.needsCompaction(1000)).toBe(true);
    p.startCompaction();
    while (!p.compactSlice(1000));
    expect(p.tombstones).toBe(0);
    expect(p.index.getCurrentCount()).toBe(900);
    // Every live point is still found as its own nearest neighbour.
    for (const label of [1500, 1999, 5000, 5099]) {
      const id = p.labelToId.get(label)!;
      expect(id).toBeDefined();
      const point = Float32Array.from(p.index.getPoint(label));
      expect(p.search(point, 1, undefined, 0).labels[0]).toBe(label);
    }
  });

  it('answers a filtered search exactly for few matches and through the graph for many', () => {
    const dim = 8;
    const p = new Partition(1, '', 'cosine', dim, HNSW);
    const n = 3000;
    const values = randomVectors(n, dim, 6);
    const labels = Array.from({ length: n }, (_, i) => i);
    labels.forEach((l) => p.commitPut(`v${l}`, l, { bucket: l % 100 }));
    const job = addJob(labels, values);
    while (!p.applySlice(job, 1000));
    const q = randomVectors(1, dim, 7);
    const few = p.search(q, 10, { eq: { bucket: 3 } }, 100);
    expect(few.strategy).toBe('exact');
    expect(few.labels).toHaveLength(10);
    for (const l of few.labels) expect(l % 100).toBe(3);
    const many = p.search(q, 50, { range: { bucket: { lt: 50 } } }, 100);
    expect(many.strategy).toBe('filtered-graph');
    expect(many.labels).toHaveLength(50);
    for (const l of many.labels) expect(l % 100).toBeLessThan(50);
    expect([...many.distances]).toEqual([...many.distances].sort((a, b) => a - b));
  });
});

describe('checkpoint files', () => {
  it('finds a good checkpoint and refuses a damaged, missing or mismatched one', () => {
    const root = tempDir();
    const p = new Partition(7, 't', 'l2', 4, HNSW);
    const job = addJob([0, 1, 2], randomVectors(3, 4, 8));
    p.applySlice(job, 100);
    const id = { collectionId: 7, tenant: 't', metric: 'l2' as const, dimension: 4, hnsw: HNSW };
    expect(findCheckpoint(root, id)).toEqual({ ok: false, reason: 'no checkpoint' });
    const meta = writeCheckpoint(root, id, p.index, 42);
    const found = findCheckpoint(root, id);
    expect(found.ok).toBe(true);
    expect(found.ok && found.meta.seq).toBe(42);
    // No temporary files are left behind.
    expect(fs.readdirSync(path.join(root, '7')).filter((f) => f.endsWith('.tmp'))).toEqual([]);

    expect(findCheckpoint(root, { ...id, hnsw: { ...HNSW, m: 8 } })).toEqual({ ok: false, reason: 'the checkpoint was made with another m' });
    expect(findCheckpoint(root, { ...id, tenant: 'u' }).ok).toBe(false);

    const file = path.join(root, '7', meta.file);
    const bytes = fs.readFileSync(file);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    fs.writeFileSync(file, bytes);
    expect(findCheckpoint(root, id)).toEqual({ ok: false, reason: 'the index file is damaged (size or CRC-32 differs)' });
    fs.rmSync(file);
    expect(findCheckpoint(root, id)).toEqual({ ok: false, reason: 'the index file is missing' });
  });
});

describe('engine', () => {
  const engine = loadedVectorIndex;
  const spec: NewCollection = { name: 'docs', dimension: 4, metric: 'l2', description: '', multiTenant: true, hnsw: HNSW };

  it('reloads from a checkpoint plus newer rows, and rebuilds when the checkpoint is gone', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close(); // migrations
    const logs: string[] = [];
    let e = engine(dataDir, logs);
    const c = e.createCollection(spec);
    const values = randomVectors(300, 4, 9);
    const ids = Array.from({ length: 300 }, (_, i) => `v${i}`);
    await e.upsert({ collectionId: c.id, ids, tenants: ids.map((_, i) => (i % 2 ? 'a' : 'b')), values, properties: ids.map((_, i) => ({ i })) });
    expect((await e.flush(true)).checkpointed).toBe(2);
    // After the checkpoint: a replacement, a delete and a new vector, then a "crash" (no close).
    await e.upsert({ collectionId: c.id, ids: ['v1', 'new'], tenants: ['a', 'a'], values: Float32Array.from([9, 9, 9, 9, 8, 8, 8, 8]), properties: [{ i: 'again' }, {}] });
    e.delete(c.id, [{ tenant: 'a', id: 'v3' }]);
    // More rows than the checkpointed graph has room for (1024), so the replay must grow it.
    const bulkIds = Array.from({ length: 1500 }, (_, i) => `bulk${i}`);
    await e.upsert({ collectionId: c.id, ids: bulkIds, tenants: bulkIds.map(() => 'b'), values: randomVectors(1500, 4, 13), properties: bulkIds.map(() => ({})) });
    await e.flush(false);

    e = engine(dataDir, logs);
    // The load tombstones the two stale labels (replaced, deleted) and queues the 1502 points the
    // checkpoints lack; a search answers at once (no promise), scanning them.
    expect(e.stats(c.id)).toMatchObject({ indexed: 298, pending: 1502 });
    const early = e.search({ collectionId: c.id, tenant: 'a', query: Float32Array.from([9, 9, 9, 9]), k: 2, filter: undefined, includeVector: false, properties: undefined });
    expect(early).not.toBeInstanceOf(Promise);
    expect(early.hits.map((h) => h.id)).toEqual(['v1', 'new']);
    expect(early.unindexed).toBe(2);
    await e.flush(false);
    // Two rows added (the replacement and the new one), two labels tombstoned (replaced, deleted).
    expect(logs).toContainEqual(expect.stringMatching(/^info: vector collection "docs" tenant "a": loaded its index checkpoint and replayed 4 newer changes \(the graph took the 2 added points in \d+ ms\)$/));
    expect(logs).toContainEqual(expect.stringMatching(/^info: vector collection "docs" tenant "b": loaded its index checkpoint and replayed 1500 newer changes/));
    expect(e.stats(c.id)).toMatchObject({ indexed: 1800, tombstones: 0 }); // the two new points took the two tombstoned slots
    let res = await e.search({ collectionId: c.id, tenant: 'a', query: Float32Array.from([9, 9, 9, 9]), k: 3, filter: undefined, includeVector: true, properties: ['i'] });
    expect(res.hits[0]).toMatchObject({ id: 'v1', distance: 0, properties: { i: 'again' } });
    expect([...res.hits[0]!.values!]).toEqual([9, 9, 9, 9]);
    expect(res.hits[1]!.id).toBe('new');
    const all = await e.search({ collectionId: c.id, tenant: 'a', query: Float32Array.from([0, 0, 0, 0]), k: 1000, filter: undefined, includeVector: false, properties: undefined });
    expect(all.hits.map((h) => h.id)).not.toContain('v3');
    expect(all.hits).toHaveLength(150);
    expect(e.stats(c.id)).toMatchObject({ tenants: 2, indexed: 1800, pending: 0 });
    await e.close();

    // Delete every checkpoint file: the next start rebuilds from SQLite and says why.
    for (const f of fs.readdirSync(path.join(dataDir, 'vectors', String(c.id)))) {
      if (f.endsWith('.hnsw')) fs.rmSync(path.join(dataDir, 'vectors', String(c.id), f));
    }
    logs.length = 0;
    e = engine(dataDir, logs);
    expect(logs.filter((l) => /rebuilding its index from (150|1650) stored vectors in the background \(the index file is missing\)/.test(l))).toHaveLength(2);
    await e.flush(false);
    expect(logs.filter((l) => /rebuilt its index from (150|1650) stored vectors .*the index file is missing/.test(l))).toHaveLength(2);
    res = await e.search({ collectionId: c.id, tenant: 'b', query: values.subarray(0, 4), k: 1, filter: undefined, includeVector: false, properties: undefined });
    expect(res.hits[0]!.id).toBe('v0');
    await e.close();
  });

  it('compacts a partition once deletes leave enough tombstones', async () => {
    const dataDir = tempDir();
    openDatabase(dataDir).close();
    const logs: string[] = [];
    const e = engine(dataDir, logs, { compactMinTombstones: 100 });
    const c = e.createCollection({ ...spec, multiTenant: false });
    const n = 1000;
    const ids = Array.from({ length: n }, (_, i) => `v${i}`);
    await e.upsert({ collectionId: c.id, ids, tenants: ids.map(() => ''), values: randomVectors(n, 4, 10), properties: ids.map(() => ({})) });
    expect(e.delete(c.id, ids.slice(0, 600).map((id) => ({ tenant: '', id })))).toEqual({ numDeleted: 600 });
    await e.flush(false);
    // The compaction runs in slices after the deletes are applied.
    for (let i = 0; i < 100 && (e.stats(c.id).tombstones > 0 || e.stats(c.id).compacting); i++) await new Promise((r) => setTimeout(r, 10));
    expect(e.stats(c.id)).toMatchObject({ indexed: 400, tombstones: 0, compacting: false });
    expect(logs.some((l) => l.includes('compacting'))).toBe(true);
    const res = await e.search({ collectionId: c.id, tenant: '', query: Float32Array.from([0, 0, 0, 0]), k: 1000, filter: undefined, includeVector: false, properties: undefined });
    expect(res.hits).toHaveLength(400);
    await e.close();
  });
});
