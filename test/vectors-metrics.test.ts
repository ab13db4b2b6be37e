// The vector store's Prometheus series on GET /metrics of the real app: collections, vectors per
// collection, upserts and searches with their latency histograms, the index lag while a large
// batch is being indexed, the checkpoint age, and the series of a deleted collection going away.
import { describe, expect, it } from 'vitest';
import { randomVectors, vectorTestHost } from './helpers/vectors.js';

// Checkpoints only on request (flush) or after many changes, so that their age can be watched.
const setup = vectorTestHost({ VECTOR_CHECKPOINT_IDLE_MS: '0', VECTOR_CHECKPOINT_CHANGES: '1000000' });
const { api, post } = setup;

async function scrape(): Promise<string> {
  const res = await fetch(`${setup.host.url}/metrics`, { headers: { authorization: `Bearer ${setup.token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** The value of one series, or undefined when /metrics does not have it. */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = m[2] ? m[2].split(',') : [];
    if (have.length === want.length && want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

describe('vector_store_* series', () => {
  it('count collections, vectors, upserts and searches, with latency histograms', async () => {
    const before = await scrape();
    expect(value(before, 'vector_store_collections')).toBe(0);
    expect(before).toContain('# TYPE vector_store_search_duration_seconds histogram');
    expect(before).toContain('# TYPE vector_store_upserted_vectors_total counter');

    await post('/api/v1/vectors/collections', { name: 'm-one', dimension: 4 }, 201);
    await post('/api/v1/vectors/collections', { name: 'm-two', dimension: 4, multi_tenant: true }, 201);
    const data = randomVectors(120, 4, 61);
    await post('/api/v1/vectors/upsert', { collection_name: 'm-one', vector: data.slice(0, 100).map((values, i) => ({ id: `a${i}`, values })) });
    await post('/api/v1/vectors/upsert', { collection_name: 'm-one', vector: data.slice(90, 120).map((values, i) => ({ id: `a${90 + i}`, values })) }); // 10 replaced
    await post('/api/v1/vectors/upsert', { collection_name: 'm-two', tenant_id: 't', vector: data.slice(0, 7).map((values, i) => ({ id: `b${i}`, values })) });
    for (let i = 0; i < 5; i++) await post('/api/v1/vectors/search', { collection_name: 'm-one', reference_vector: { element: data[i] } });
    await post('/api/v1/vectors/search', { collection_name: 'm-two', tenant_id: 't', reference_vector: { element: data[0] } });
    // A refused search is not a search.
    await post('/api/v1/vectors/search', { collection_name: 'm-one', reference_vector: { element: [1] } }, 400);
    await post('/api/v1/vectors/delete', { collection_name: 'm-one', vector_identifiers: [{ vector_id: 'a0' }, { vector_id: 'a1' }] });

    const text = await scrape();
    expect(value(text, 'vector_store_collections')).toBe(2);
    expect(value(text, 'vector_store_vectors', { collection: 'm-one' })).toBe(118);
    expect(value(text, 'vector_store_vectors', { collection: 'm-two' })).toBe(7);
    expect(value(text, 'vector_store_upserted_vectors_total', { collection: 'm-one' })).toBe(130);
    expect(value(text, 'vector_store_upserted_vectors_total', { collection: 'm-two' })).toBe(7);
    expect(value(text, 'vector_store_upsert_duration_seconds_count', { collection: 'm-one' })).toBe(2);
    expect(value(text, 'vector_store_upsert_duration_seconds_sum', { collection: 'm-one' })).toBeGreaterThan(0);
    expect(value(text, 'vector_store_search_duration_seconds_count', { collection: 'm-one' })).toBe(5);
    expect(value(text, 'vector_store_search_duration_seconds_count', { collection: 'm-two' })).toBe(1);
    expect(value(text, 'vector_store_search_duration_seconds_bucket', { collection: 'm-one', le: '+Inf' })).toBe(5);
    expect(value(text, 'vector_store_search_duration_seconds_sum', { collection: 'm-one' })).toBeGreaterThan(0);
  });

  it('index lag: the changes waiting for the graph, back to 0 once indexed', async () => {
    const dim = 16;
    const n = 10_000;
    await post('/api/v1/vectors/collections', { name: 'm-lag', dimension: dim }, 201);
    const data = randomVectors(n, dim, 62);
    await post('/api/v1/vectors/upsert', { collection_name: 'm-lag', vector: data.map((values, i) => ({ id: String(i), values })) });
    // Acknowledged once committed: the graph is still being built (about a second for 10,000 points).
    const lag = value(await scrape(), 'vector_store_index_lag_vectors', { collection: 'm-lag' })!;
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThanOrEqual(n);
    await setup.host.app.vectors!.flush();
    const after = await scrape();
    expect(value(after, 'vector_store_index_lag_vectors', { collection: 'm-lag' })).toBe(0);
    expect(value(after, 'vector_store_index_lag_vectors', { collection: 'm-one' })).toBe(0);
  });

  it('checkpoint age: grows while changes are unsaved, 0 once checkpointed', async () => {
    await setup.host.app.vectors!.flush(true);
    let text = await scrape();
    for (const c of ['m-one', 'm-two', 'm-lag']) expect(value(text, 'vector_store_checkpoint_age_seconds', { collection: c }), c).toBe(0);
    await post('/api/v1/vectors/upsert', { collection_name: 'm-one', vector: [{ id: 'late', values: [1, 2, 3, 4] }] });
    await new Promise((resolve) => setTimeout(resolve, 1200));
    text = await scrape();
    const age = value(text, 'vector_store_checkpoint_age_seconds', { collection: 'm-one' })!;
    expect(age).toBeGreaterThanOrEqual(1.1);
    expect(age).toBeLessThan(60);
    expect(value(text, 'vector_store_checkpoint_age_seconds', { collection: 'm-two' })).toBe(0);
    await setup.host.app.vectors!.flush(true);
    expect(value(await scrape(), 'vector_store_checkpoint_age_seconds', { collection: 'm-one' })).toBe(0);
  });

  it('a deleted collection\'s series go with it', async () => {
    expect((await api('DELETE', '/api/v1/vectors/collections/m-one')).status).toBe(200);
    const text = await scrape();
    expect(value(text, 'vector_store_collections')).toBe(2);
    for (const name of ['vector_store_vectors', 'vector_store_upserted_vectors_total', 'vector_store_search_duration_seconds_count', 'vector_store_index_lag_vectors', 'vector_store_checkpoint_age_seconds']) {
      expect(value(text, name, { collection: 'm-one' }), name).toBeUndefined();
    }
    expect(value(text, 'vector_store_vectors', { collection: 'm-two' })).toBe(7);
  });
});
