// The vector store across replicas (`npm start` as child processes on one real PostgreSQL): an
// upsert acknowledged by one replica is read at once through the others; SIGKILLs at random
// moments under writes through every replica lose and duplicate nothing; a replica started late
// with an empty DATA_DIR catches up by itself (and says so in /readyz until it has); and the
// recall of every replica equals the one-box store's on the same data.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type Api } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { startCluster, type Cluster } from './helpers/cluster.js';
import { listen, startInProcessHost, tokenFor, type TestHost } from './helpers/in-process-host.js';
import { tempDir } from './helpers/paths.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';
import { rng } from './helpers/random.js';

const IDS = ['a', 'b', 'c'] as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: TestPostgres;
let cluster: Cluster;
let token: string;
let opsKey: string;
let databaseUrl: string;

const on = (id: string): Api => apiClient(cluster.url(id), token);

beforeAll(async () => {
  server = await startPostgres();
  ({ cluster, token, key: opsKey, databaseUrl } = await startCluster(server, 'vectors_cluster', IDS, { VECTOR_POLL_MS: '200', LOG_LEVEL: 'warn' }));
}, 60_000);

afterAll(async () => {
  await cluster?.stopAll('SIGKILL');
  await server?.stop();
});

/** n vectors of `dim` float32-exact values (so that what comes back can be compared exactly). */
function vectors(seed: number, n: number, dim: number, prefix: string) {
  const next = rng(seed);
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    values: Array.from({ length: dim }, () => Math.fround(next() * 2 - 1)),
    properties: { i, even: i % 2 === 0 },
  }));
}

async function ok<T = any>(api: Api, method: string, path: string, body?: unknown): Promise<T> {
  const res = await api<T>(method, path, body);
  if (res.status !== 200 && res.status !== 201) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Every vector of the collection through `api`, by scroll: id -> values, and the ids seen twice. */
async function everything(api: Api, collection: string): Promise<{ byId: Map<string, number[]>; duplicated: number }> {
  const byId = new Map<string, number[]>();
  let duplicated = 0;
  let cursor: string | undefined;
  for (;;) {
    const page = await ok<{ vectors: Array<{ id: string; values: number[] }>; next_cursor: string | null }>(api, 'POST', '/api/v1/vectors/scroll', {
      collection_name: collection,
      limit: 1000,
      include_vector: true,
      ...(cursor ? { cursor } : {}),
    });
    for (const v of page.vectors) {
      if (byId.has(v.id)) duplicated++;
      // Values come back as the shortest decimal of each float32: the same float32 once rounded.
      byId.set(v.id, v.values.map(Math.fround));
    }
    if (!page.next_cursor) return { byId, duplicated };
    cursor = page.next_cursor;
  }
}

/** Waits until the replica's /readyz answers 200 (it has caught up with every collection). */
async function readyz(id: string, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await fetch(`${cluster.url(id)}/readyz`).then((r) => r.ok, () => false))) {
    if (Date.now() > until) throw new Error(`replica ${id} is not ready after ${timeoutMs} ms`);
    await sleep(20);
  }
}

async function createCollection(api: Api, name: string, dimension: number, ef = 200) {
  await ok(api, 'POST', '/api/v1/vectors/collections', { name, dimension, metric: 'cosine', hnsw: { ef } });
}

describe('one store across three replicas', () => {
  const data = vectors(1, 600, 16, 'doc');

  it('reads through B and C at once what was acknowledged through A', async () => {
    await createCollection(on('a'), 'docs', 16);
    for (let i = 0; i < data.length; i += 100) {
      const res = await on('a')('POST', '/api/v1/vectors/upsert', { collection_name: 'docs', vector: data.slice(i, i + 100) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(Number(res.headers.get('x-vector-seq'))).toBe(i + 100);
    }
    // At once, with no wait: every read on B and C reflects every acknowledged write.
    await Promise.all(
      (['b', 'c'] as const).map(async (id) => {
        const api = on(id);
        const [all, count, sample, hits, fetched] = await Promise.all([
          everything(api, 'docs'),
          ok<{ count: number }>(api, 'POST', '/api/v1/vectors/count', { collection_name: 'docs' }),
          ok<{ vectors: Array<{ id: string }> }>(api, 'POST', '/api/v1/vectors/sample', { collection_name: 'docs', num_samples: 50, include_vector: false }),
          Promise.all(
            data.slice(-20).map((v) =>
              ok<{ search_results: Array<{ id: string; distance: number }> }>(api, 'POST', '/api/v1/vectors/search', {
                collection_name: 'docs',
                reference_vector: { element: v.values },
                max_results: 1,
                include_vector: false,
                include_distance: true,
                include_id: true,
              }),
            ),
          ),
          Promise.all(data.slice(-20).map((v) => ok<{ vector: { id: string; values: number[]; properties: unknown } }>(api, 'GET', `/api/v1/vectors/collections/docs/${v.id}`))),
        ]);
        expect(all.byId.size).toBe(data.length);
        expect(all.duplicated).toBe(0);
        for (const v of data) expect(all.byId.get(v.id), v.id).toEqual(v.values);
        expect(count.count).toBe(data.length);
        expect(new Set(sample.vectors.map((v) => v.id)).size).toBe(50);
        hits.forEach((h, i) => expect(h.search_results[0]!.id).toBe(data[data.length - 20 + i]!.id));
        fetched.forEach((f, i) => expect({ ...f.vector, values: f.vector.values.map(Math.fround) }).toEqual(data[data.length - 20 + i]));
      }),
    );
  });

  it('deletes, by id and by filter, and a multi-tenant collection, as one store', async () => {
    const del = await on('b')('POST', '/api/v1/vectors/delete', { collection_name: 'docs', vector_identifiers: [{ vector_id: 'doc-0' }, { vector_id: 'doc-1' }, { vector_id: 'nope' }] });
    expect(del.body).toEqual({ num_vectors_deleted: 2 });
    const byFilter = await ok<{ num_vectors_deleted: number }>(on('c'), 'POST', '/api/v1/vectors/delete', { collection_name: 'docs', filter: { range: { i: { lt: 10 } } } });
    expect(byFilter.num_vectors_deleted).toBe(8);
    for (const id of IDS) {
      expect((await ok<{ count: number }>(on(id), 'POST', '/api/v1/vectors/count', { collection_name: 'docs' })).count).toBe(data.length - 10);
      expect((await on(id)('GET', '/api/v1/vectors/collections/docs/doc-3')).status).toBe(404);
    }
    // Made through A and written through C at once: C looks up a collection it has not heard of.
    await ok(on('a'), 'POST', '/api/v1/vectors/collections', { name: 'tenanted', dimension: 4, multi_tenant: true });
    await ok(on('c'), 'POST', '/api/v1/vectors/upsert', {
      collection_name: 'tenanted',
      vector: [
        { id: 'x', values: [1, 0, 0, 0], tenant_id: 't1' },
        { id: 'x', values: [0, 1, 0, 0], tenant_id: 't2' },
      ],
    });
    const t2 = await ok<{ vector: { values: number[] } }>(on('c'), 'GET', '/api/v1/vectors/collections/tenanted/x?tenant_id=t2');
    expect(t2.vector.values).toEqual([0, 1, 0, 0]);
    // A collection deleted through one replica is gone on every one.
    await ok(on('b'), 'DELETE', '/api/v1/vectors/collections/tenanted');
    for (const id of IDS) expect((await on(id)('GET', '/api/v1/vectors/collections/tenanted/x?tenant_id=t2')).status).toBe(404);
  });

  it('a replica away longer than the tombstones are kept copies the collection again', async () => {
    const items = vectors(3, 10, 4, 'p');
    await createCollection(on('a'), 'purge', 4);
    await ok(on('a'), 'POST', '/api/v1/vectors/upsert', { collection_name: 'purge', vector: items });
    expect((await ok<{ count: number }>(on('b'), 'POST', '/api/v1/vectors/count', { collection_name: 'purge' })).count).toBe(10);
    // B goes away with all ten in its cache; five are deleted meanwhile.
    const b = cluster.replicas.get('b')!;
    b.host.proc.kill('SIGKILL');
    await b.host.exited;
    const gone = items.slice(0, 5).map((v) => ({ vector_id: v.id }));
    expect((await ok<{ num_vectors_deleted: number }>(on('a'), 'POST', '/api/v1/vectors/delete', { collection_name: 'purge', vector_identifiers: gone })).num_vectors_deleted).toBe(5);
    // And a collection of more than one page of the log, with a delete after its rows.
    const big = vectors(4, 2500, 4, 'big');
    await createCollection(on('a'), 'purge-big', 4);
    for (let i = 0; i < big.length; i += 500) await ok(on('a'), 'POST', '/api/v1/vectors/upsert', { collection_name: 'purge-big', vector: big.slice(i, i + 500) });
    await ok(on('a'), 'POST', '/api/v1/vectors/delete', { collection_name: 'purge-big', vector_identifiers: [{ vector_id: big[0]!.id }] });
    // A replica that keeps tombstones for no time removes them (every replica may purge).
    await cluster.start('e', { VECTOR_POLL_MS: '100', VECTOR_TOMBSTONE_RETENTION_SECONDS: '0', LOG_LEVEL: 'warn' });
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      for (let i = 0; ; i++) {
        const { rows } = await db.query("SELECT count(*)::int AS n FROM vectors v JOIN vector_collections c ON c.id = v.collection_id WHERE c.name IN ('purge', 'purge-big') AND v.vec IS NULL");
        if (rows[0].n === 0) break;
        if (i > 500) throw new Error('the tombstones were never removed');
        await sleep(20);
      }
    } finally {
      await db.end();
    }
    const e = cluster.replicas.get('e')!;
    e.host.proc.kill('SIGKILL');
    await e.host.exited;
    cluster.replicas.delete('e');
    // B comes back: it cannot learn of the five deletes from the log, so it copies the collection again.
    await cluster.start('b', { VECTOR_POLL_MS: '200', LOG_LEVEL: 'warn' });
    await readyz('b');
    expect((await ok<{ count: number }>(on('b'), 'POST', '/api/v1/vectors/count', { collection_name: 'purge' })).count).toBe(5);
    const all = await everything(on('b'), 'purge');
    expect([...all.byId.keys()].sort()).toEqual(items.slice(5).map((v) => v.id).sort());
    // A replica that starts with nothing copies past the purged tombstones without starting over.
    await cluster.start('f', { VECTOR_POLL_MS: '200', LOG_LEVEL: 'warn' });
    try {
      await readyz('f', 30_000);
      expect((await ok<{ count: number }>(on('f'), 'POST', '/api/v1/vectors/count', { collection_name: 'purge-big' })).count).toBe(2499);
    } finally {
      const f = cluster.replicas.get('f')!;
      f.host.proc.kill('SIGKILL');
      await f.host.exited;
      cluster.replicas.delete('f');
    }
  });

  it('loses and duplicates nothing while replicas are SIGKILLed at random under writes through all three', async () => {
    const DIM = 8;
    await createCollection(on('a'), 'crash', DIM);
    const acknowledged = new Map<string, number[]>();
    const down = new Set<string>();
    const random = rng(7);
    let stopping = false;
    let kills = 0;
    let attempts = 0;
    let failed = 0;
    const writer = async (w: number) => {
      let n = 0;
      while (!stopping) {
        const up = IDS.filter((id) => !down.has(id));
        const target = up[Math.floor(random() * up.length)];
        if (!target) {
          await sleep(20);
          continue;
        }
        const batch = vectors(1000 * w + n, 10, DIM, `w${w}-${n}`);
        n++;
        attempts++;
        await sleep(5);
        try {
          const res = await on(target)('POST', '/api/v1/vectors/upsert', { collection_name: 'crash', vector: batch });
          if (res.status === 200) for (const v of batch) acknowledged.set(v.id, v.values);
          else failed++;
        } catch {
          failed++; // the replica died with the request: not acknowledged, so it may or may not be there
        }
      }
    };
    // Kills a running replica every 100 to 400 ms (never the last one up) and restarts it after
    // up to 300 ms, so that kills land during start-up, catch-up and writes alike.
    const restarts: Array<Promise<void>> = [];
    const killer = async () => {
      while (kills < 21) {
        await sleep(100 + random() * 300);
        const up = IDS.filter((id) => !down.has(id));
        if (up.length < 2) continue;
        const id = up[Math.floor(random() * up.length)]!;
        down.add(id);
        const replica = cluster.replicas.get(id)!;
        replica.host.proc.kill('SIGKILL');
        await replica.host.exited;
        kills++;
        restarts.push(
          (async () => {
            await sleep(random() * 300);
            await cluster.start(id, { VECTOR_POLL_MS: '200', LOG_LEVEL: 'warn' });
            down.delete(id);
          })(),
        );
      }
      await Promise.all(restarts);
    };
    const writers = Array.from({ length: 6 }, (_, w) => writer(w));
    await killer();
    stopping = true;
    await Promise.all(writers);
    for (const id of IDS) await readyz(id);
    for (const id of IDS) {
      const all = await everything(on(id), 'crash');
      let found = 0;
      let lost = 0;
      for (const [vid, values] of acknowledged) {
        const got = all.byId.get(vid);
        if (got && got.every((x, i) => x === values[i])) found++;
        else lost++;
      }
      console.log(
        `replica ${id}: kills=${kills} upserts sent=${attempts} failed=${failed} acknowledged=${acknowledged.size} found=${found} lost=${lost} duplicated=${all.duplicated} stored=${all.byId.size}`,
      );
      expect(found).toBe(acknowledged.size);
      expect(lost).toBe(0);
      expect(all.duplicated).toBe(0);
    }
    expect(kills).toBeGreaterThanOrEqual(20);
    expect(acknowledged.size).toBeGreaterThan(0);
  }, 240_000);

  it('a fourth replica started late with an empty DATA_DIR catches up and answers the same top-k', async () => {
    const queries = vectors(99, 20, 16, 'q');
    const topK = async (id: string) =>
      Promise.all(
        queries.map(async (q) =>
          (
            await ok<{ search_results: Array<{ id: string }> }>(on(id), 'POST', '/api/v1/vectors/search', {
              collection_name: 'docs',
              reference_vector: { element: q.values },
              max_results: 10,
              include_vector: false,
              include_distance: false,
              include_id: true,
            })
          ).search_results.map((h) => h.id),
        ),
      );
    const expected = await topK('a');
    await cluster.start('d', { VECTOR_POLL_MS: '200', LOG_LEVEL: 'warn' });
    // Ready once it holds every collection (it says which it is catching up with until then):
    // the tens of thousands of vectors of the crash test take it seconds to index.
    let sawCatchingUp = false;
    for (let i = 0; ; i++) {
      const res = await fetch(`${cluster.url('d')}/readyz`);
      if (res.ok) break;
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/catching up with the vector collection "(docs|crash|recall)"/);
      sawCatchingUp = true;
      if (i > 3000) throw new Error('d never became ready');
      await sleep(20);
    }
    expect(sawCatchingUp).toBe(true);
    const info = await ok<{ replica: { state: string; applied_seq: number; last_seq: number } }>(on('d'), 'GET', '/api/v1/vectors/collections/docs');
    expect(info.replica.state).toBe('ready');
    expect(info.replica.applied_seq).toBe(info.replica.last_seq);
    // The CLI shows the copy of the replica that answered.
    const cli = await runCli(['vectors', 'collections', 'get', 'docs'], { PLATFORM_URL: cluster.url('d'), PLATFORM_API_KEY: opsKey, PLATFORM_CACHE_DIR: tempDir() });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`this replica:  ready, at change ${info.replica.applied_seq} of ${info.replica.last_seq}`);
    for (const id of ['b', 'c', 'd']) expect(await topK(id), id).toEqual(expected);
    // `platform replicas` shows every replica's copies (as of its last heartbeat): all current.
    for (let i = 0; ; i++) {
      const listed = await runCli(['replicas'], { PLATFORM_URL: cluster.url('a'), PLATFORM_API_KEY: opsKey, PLATFORM_CACHE_DIR: tempDir() });
      expect(listed.code, listed.stderr).toBe(0);
      const rows = listed.stdout.trimEnd().split('\n').slice(1).filter((l) => /\bserving\s+yes\b/.test(l));
      if (rows.length === 4 && rows.every((l) => /\s\d+ current\s/.test(l))) break;
      if (i > 100) throw new Error(`replicas never all current:\n${listed.stdout}`);
      await sleep(100);
    }
    // Prometheus sees how far each replica's copy is behind: nothing, once caught up.
    const metrics = await fetch(`${cluster.url('d')}/metrics`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.text());
    expect(metrics).toMatch(/^vector_store_replica_lag_changes\{collection="docs"\} 0$/m);
  });
});

describe('recall on every replica', () => {
  it('equals the one-box store recall@10 on the same data, within 0.01', async () => {
    const DIM = 32;
    const N = 3000;
    const data = vectors(5, N, DIM, 'r');
    const queries = vectors(6, 100, DIM, 'rq');
    // The exact top 10 by cosine, in float64.
    const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const truth = queries.map((q) => {
      const qn = norm(q.values);
      return data
        .map((v) => ({ id: v.id, d: 1 - v.values.reduce((s, x, i) => s + x * q.values[i]!, 0) / (qn * norm(v.values)) }))
        .sort((x, y) => x.d - y.d)
        .slice(0, 10)
        .map((x) => x.id);
    });
    const recall = async (api: Api) => {
      let hit = 0;
      for (let i = 0; i < queries.length; i++) {
        const res = await ok<{ search_results: Array<{ id: string }> }>(api, 'POST', '/api/v1/vectors/search', {
          collection_name: 'recall',
          reference_vector: { element: queries[i]!.values },
          max_results: 10,
          include_vector: false,
          include_distance: false,
          include_id: true,
        });
        const want = new Set(truth[i]);
        hit += res.search_results.filter((h) => want.has(h.id)).length;
      }
      return hit / (queries.length * 10);
    };
    const spec = { name: 'recall', dimension: DIM, metric: 'cosine', hnsw: { m: 16, ef_construction: 200, ef: 64 } };
    // Through the replicas, each batch through the next one.
    await ok(on('a'), 'POST', '/api/v1/vectors/collections', spec);
    for (let i = 0; i < N; i += 250) await ok(on(IDS[(i / 250) % 3]!), 'POST', '/api/v1/vectors/upsert', { collection_name: 'recall', vector: data.slice(i, i + 250) });
    // The one-box store, in this process.
    const single: TestHost = await listen(await startInProcessHost({ LOG_LEVEL: 'warn' }));
    try {
      const api = apiClient(single.url, (await tokenFor(single)).token);
      await ok(api, 'POST', '/api/v1/vectors/collections', spec);
      for (let i = 0; i < N; i += 250) await ok(api, 'POST', '/api/v1/vectors/upsert', { collection_name: 'recall', vector: data.slice(i, i + 250) });
      const oneBox = await recall(api);
      const replicas = [...cluster.replicas.keys()];
      for (const id of replicas) {
        const r = await recall(on(id));
        console.log(`recall@10: replica ${id} ${r.toFixed(3)}, one box ${oneBox.toFixed(3)}`);
        expect(Math.abs(r - oneBox), id).toBeLessThanOrEqual(0.01);
      }
    } finally {
      await single.close();
    }
  }, 120_000);
});
