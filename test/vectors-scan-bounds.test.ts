// Two properties of the index worker's scans, against the real app: a scroll with a sparse filter
// scans a bounded number of ids per call (SCROLL_SCAN_MAX) and pages on with a cursor, still
// seeing every match once and ending with next_cursor null; and a filtered search answered by an
// exact scan reports the very float32 distance the graph reports for the same pair of vectors.
import { beforeAll, describe, expect, it } from 'vitest';
import { SCROLL_SCAN_MAX } from '../src/vectors/vector-index.js';
import { rng } from './helpers/random.js';
import { vectorTestHost, type ScrollPage } from './helpers/vectors.js';

const { api, post, scrollPages } = vectorTestHost();

describe('a scroll with a sparse filter', () => {
  const n = Math.round(SCROLL_SCAN_MAX * 2.5);
  const rare = [5, SCROLL_SCAN_MAX + 345, n - 10];
  const idOf = (i: number) => `v${String(i).padStart(6, '0')}`;

  beforeAll(async () => {
    await post('/api/v1/vectors/collections', { name: 'sparse', dimension: 2, hnsw: { m: 4, ef_construction: 8 } }, 201);
    for (let s = 0; s < n; s += 10_000) {
      const vector = Array.from({ length: Math.min(10_000, n - s) }, (_, k) => ({ id: idOf(s + k), values: [1, (s + k) % 7], properties: { rare: rare.includes(s + k) } }));
      await post('/api/v1/vectors/upsert', { collection_name: 'sparse', vector });
    }
  }, 60_000);

  it('scans a bounded number of ids per call, and still finds every match once, in order', async () => {
    const pages = await scrollPages({ collection_name: 'sparse', filter: { eq: { rare: true } }, limit: 10 }, 100);
    // One call cannot scan the partition: at least ceil(n / SCROLL_SCAN_MAX) calls.
    expect(pages.length).toBeGreaterThanOrEqual(Math.ceil(n / SCROLL_SCAN_MAX));
    expect(pages.flatMap((p) => p.vectors.map((v) => v.id))).toEqual(rare.map(idOf));
    // next_cursor is null on the last page only.
    expect(pages.slice(0, -1).every((p) => p.next_cursor !== null)).toBe(true);
    expect(pages.at(-1)!.next_cursor).toBeNull();
  });

  it('a filter that matches nothing pages through empty pages to a null cursor', async () => {
    const pages = await scrollPages({ collection_name: 'sparse', filter: { eq: { rare: 'never' } }, limit: 100 }, 100);
    expect(pages.length).toBeGreaterThanOrEqual(Math.ceil(n / SCROLL_SCAN_MAX));
    expect(pages.every((p) => p.vectors.length === 0)).toBe(true);
    expect(pages.at(-1)!.next_cursor).toBeNull();
  });

  it('a page filled within the budget looks ahead as before: no cursor after the last match', async () => {
    const first = await post<ScrollPage>('/api/v1/vectors/scroll', { collection_name: 'sparse', filter: { eq: { rare: true } }, limit: 1 });
    expect(first.vectors.map((v) => v.id)).toEqual([idOf(rare[0]!)]);
    expect(first.next_cursor).not.toBeNull();
    // Unfiltered pages are full and their cursor continues after their last id.
    const all = await post<ScrollPage>('/api/v1/vectors/scroll', { collection_name: 'sparse', limit: 1000 });
    expect(all.vectors).toHaveLength(1000);
    const next = await post<ScrollPage>('/api/v1/vectors/scroll', { collection_name: 'sparse', limit: 1, cursor: all.next_cursor });
    expect(next.vectors[0]!.id).toBe(idOf(1000));
    // count and delete by filter still see the whole partition.
    expect(await post('/api/v1/vectors/count', { collection_name: 'sparse', filter: { eq: { rare: true } } })).toEqual({ count: rare.length });
  });
});

describe('exact scan and graph agree on distances', () => {
  // Dimensions that take each of hnswlib's summing paths: blocks of 16, of 4, 16s plus a tail, 4s plus a tail, and one by one.
  const cases: Array<[string, number]> = [];
  for (const metric of ['cosine', 'l2', 'dot']) for (const dim of [32, 12, 37, 7, 3]) cases.push([metric, dim]);

  it.each(cases)('%s, dimension %i: the same float32 distance for the same pair', async (metric, dim) => {
    const name = `agree-${metric}-${dim}`;
    await post('/api/v1/vectors/collections', { name, dimension: dim, metric, hnsw: { m: 8, ef_construction: 50, ef: 200 } }, 201);
    const r = rng(dim * 31 + metric.length);
    const vector = Array.from({ length: 200 }, (_, i) => ({ id: `p${i}`, values: Array.from({ length: dim }, () => r() * 2 - 1), properties: { i } }));
    await post('/api/v1/vectors/upsert', { collection_name: name, vector });
    const query = Array.from({ length: dim }, () => r() * 2 - 1);
    const graph: Array<{ id: string; distance: number }> = (await post('/api/v1/vectors/search', { collection_name: name, reference_vector: { element: query }, max_results: 20 }))
      .search_results;
    expect(graph).toHaveLength(20);
    // The same ids through a selective filter: answered by an exact scan (fewer matches than VECTOR_EXACT_SCAN_MAX).
    const ids = graph.map((h) => Number(h.id.slice(1)));
    const exact: Array<{ id: string; distance: number }> = (
      await post('/api/v1/vectors/search', { collection_name: name, reference_vector: { element: query }, max_results: 20, filter: { in: { i: ids } } })
    ).search_results;
    const exactById = new Map(exact.map((h) => [h.id, h.distance]));
    for (const h of graph) {
      const d = exactById.get(h.id)!;
      // cosine is hnswlib's float32 distance as it is (l2 and dot are converted from it).
      if (metric === 'cosine') expect(Math.fround(d)).toBe(d);
      // The exact scan sums as hnswlib does (float32, its order): not merely close, the same number.
      expect(d, `${h.id}: exact ${d}, graph ${h.distance}`).toBe(h.distance);
    }
  });
});
