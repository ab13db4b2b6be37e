// The vector store over HTTP against raw in-process hnswlib-node, same data, same M / ef.
//
// For each size (100,000 x 128 and 10,000 x 768 clustered vectors by default, cosine):
//   - the ground truth: an exact scan (the native f32 GEMM over normalised vectors);
//   - raw hnswlib-node in this process against the real host (dist/server/main.js as a child
//     process, fresh DATA_DIR), interleaved so that both see the same background load:
//       insertion in chunks of 10,000 vectors, each inserted raw and then upserted over HTTP in
//       batches of 500 (acknowledged = committed to SQLite with synchronous FULL; indexed = also
//       in the graph and searchable), with GET /healthz probed every 10 ms during the upserts;
//       search QPS in rounds: raw single-thread, HTTP at concurrency 1 and 16 (autocannon),
//       medians of the rounds; recall@10 at the default settings;
//   - ratios HTTP / raw, and the goals.
// Then two measurements behind design choices: one graph per tenant against one shared graph
// with a tenant filter, and exact scan against filtered graph search by selectivity.
//
// Sizes: VECTORS_BENCH_N (100000), VECTORS_BENCH_N_768 (10000), VECTORS_BENCH_QUERIES (1000),
// VECTORS_BENCH_SECONDS per QPS run (5), VECTORS_BENCH_ROUNDS (3), VECTORS_BENCH_SKIP_EXTRA=1 to
// skip the design measurements. Needs `npm run build` (the host runs from dist/) and the native
// addon (for the exact ground truth).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import hnswlib from 'hnswlib-node';
import { ApiKeyStore } from '../src/auth/api-keys.js';
import { gemm } from '../src/native/gemm.js';
import { openStore } from '../src/store/store.js';
import { rng } from '../test/helpers/random.js';
import { autocannon } from './support/autocannon.js';
import { clusteredVectors, randomCentres } from './support/clustered-vectors.js';
import { printTable } from './support/markdown-table.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const HOST_MAIN = path.join(ROOT, 'dist/server/main.js');
const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);

// The host's defaults (src/config.ts), used for the raw peer too.
const M = 16;
const EF_CONSTRUCTION = 200;
const EF = 64;
const K = 10;
const BATCH = 500;
const UPSERT_CONCURRENCY = 2;



// ---- data ----


function unitRows(v: Float32Array, dim: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i += dim) {
    let s = 0;
    for (let j = 0; j < dim; j++) s += v[i + j]! ** 2;
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) out[i + j] = v[i + j]! * inv;
  }
  return out;
}

/** Exact top-k by cosine distance for every query, through the native GEMM in blocks of queries. */
function groundTruth(data: Float32Array, queries: Float32Array, dim: number, k: number): number[][] {
  const n = data.length / dim;
  const q = queries.length / dim;
  const a = unitRows(queries, dim);
  const b = unitRows(data, dim);
  const out: number[][] = [];
  const block = 64;
  for (let start = 0; start < q; start += block) {
    const rows = Math.min(block, q - start);
    const sims = gemm(rows, n, dim, a.subarray(start * dim, (start + rows) * dim), b, { transB: true });
    for (let r = 0; r < rows; r++) {
      const row = sims.subarray(r * n, (r + 1) * n);
      const best: Array<[number, number]> = [];
      let floor = -Infinity;
      for (let i = 0; i < n; i++) {
        const s = row[i]!;
        if (best.length < k || s > floor) {
          best.push([s, i]);
          best.sort((x, y) => y[0] - x[0]);
          if (best.length > k) best.pop();
          floor = best[best.length - 1]![0];
        }
      }
      out.push(best.map(([, i]) => i));
    }
  }
  return out;
}

const recallAt = (found: number[][], truth: number[][]) =>
  found.reduce((hits, f, i) => hits + f.filter((x) => truth[i]!.includes(x)).length, 0) / (truth.length * K);

const row = (v: Float32Array, dim: number, i: number) => Array.from(v.subarray(i * dim, (i + 1) * dim));

// ---- the host ----

interface Host {
  proc: ChildProcess;
  url: string;
  token: string;
  dataDir: string;
}

async function startHost(): Promise<Host> {
  if (!fs.existsSync(HOST_MAIN)) throw new Error(`${HOST_MAIN} is missing: run "npm run build" first`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vectors-bench-'));
  const store = await openStore({ dataDir });
  const { key } = await new ApiKeyStore(store.db).create('bench');
  await store.close();
  // The host logs at warn (no line per request, as an operator would run a busy store), so it is
  // started on a port picked here and polled until /healthz answers.
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(p));
    });
  });
  const proc = spawn(process.execPath, [HOST_MAIN], {
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries++) {
    if (proc.exitCode !== null) throw new Error(`the host exited with ${proc.exitCode}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (tries > 300) throw new Error('the host did not start within 30 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = await fetch(`${url}/api/v1/authentication/platform-api-key`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformApiKey: key }),
  });
  const { accessToken } = (await res.json()) as { accessToken: string };
  return { proc, url, token: accessToken, dataDir };
}

async function stopHost(host: Host): Promise<void> {
  const exited = new Promise((resolve) => host.proc.on('exit', resolve));
  host.proc.kill('SIGTERM');
  await exited;
  fs.rmSync(host.dataDir, { recursive: true, force: true });
}

async function call<T>(host: Host, method: string, urlPath: string, body?: string): Promise<T> {
  const res = await fetch(host.url + urlPath, {
    method,
    headers: { authorization: `Bearer ${host.token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${urlPath}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

type Graph = InstanceType<typeof hnswlib.HierarchicalNSW>;

interface Figures {
  rawInsertPerSec: number;
  ackPerSec: number;
  indexedPerSec: number;
  healthP50: number;
  healthP99: number;
  healthMax: number;
  healthSamples: number;
  rawQps: number;
  qps1: number;
  qps16: number;
  p99ms16: number;
  rawRecall: number;
  recall: number;
  raw: Graph;
}

/**
 * Raw hnswlib-node in this process and the host over HTTP, on the same data, interleaved in
 * chunks (insertion) and rounds (search) so that both see the same background load.
 */
async function sideBySide(data: Float32Array, queries: Float32Array, dim: number, truth: number[][], seconds: number, rounds: number): Promise<Figures> {
  const n = data.length / dim;
  const q = queries.length / dim;
  const raw = new hnswlib.HierarchicalNSW('cosine', dim);
  raw.initIndex({ maxElements: n, m: M, efConstruction: EF_CONSTRUCTION, randomSeed: 100 });
  const host = await startHost();
  try {
    const name = `bench${dim}`;
    await call(host, 'POST', '/api/v1/vectors/collections', JSON.stringify({ name, dimension: dim, metric: 'cosine' }));
    const bodies: string[] = [];
    for (let start = 0; start < n; start += BATCH) {
      const vector = [];
      for (let i = start; i < Math.min(n, start + BATCH); i++) vector.push({ id: String(i), values: row(data, dim, i), properties: { i } });
      bodies.push(JSON.stringify({ collection_name: name, vector }));
    }
    const probeBody = JSON.stringify({ collection_name: name, reference_vector: { element: row(queries, dim, 0) }, max_results: 1 });

    // Insertion, in chunks of 20 batches: raw, then the same vectors over HTTP.
    const CHUNK = 20 * BATCH;
    let rawMs = 0;
    let ackMs = 0;
    let indexedMs = 0;
    const health: number[] = [];
    for (let start = 0; start < n; start += CHUNK) {
      const end = Math.min(n, start + CHUNK);
      let t0 = performance.now();
      for (let i = start; i < end; i++) raw.addPoint(row(data, dim, i), i);
      rawMs += performance.now() - t0;

      // GET /healthz every ~10 ms while this chunk is upserted and indexed.
      let probing = true;
      const probe = (async () => {
        while (probing) {
          const t = performance.now();
          await fetch(`${host.url}/healthz`).then((r) => r.arrayBuffer());
          health.push(performance.now() - t);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      t0 = performance.now();
      let next = start / BATCH;
      const last = Math.ceil(end / BATCH);
      await Promise.all(
        Array.from({ length: UPSERT_CONCURRENCY }, async () => {
          while (next < last) await call(host, 'POST', '/api/v1/vectors/upsert', bodies[next++]);
        }),
      );
      ackMs += performance.now() - t0;
      // A search waits behind the collection's queued graph work: when it answers, all is indexed.
      await call(host, 'POST', '/api/v1/vectors/search', probeBody);
      indexedMs += performance.now() - t0;
      probing = false;
      await probe;
    }
    health.sort((a, b) => a - b);

    // Recall, raw and over HTTP (8 requests at a time).
    raw.setEf(EF);
    const points = Array.from({ length: q }, (_, i) => row(queries, dim, i));
    const rawFound = points.map((p) => raw.searchKnn(p, K).neighbors);
    const searchBodies = points.map((element) => JSON.stringify({ collection_name: name, reference_vector: { element }, max_results: K }));
    const found: number[][] = new Array(q);
    let qi = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (qi < q) {
          const i = qi++;
          const res = await call<{ search_results: Array<{ id: string }> }>(host, 'POST', '/api/v1/vectors/search', searchBodies[i]);
          found[i] = res.search_results.map((r) => Number(r.id));
        }
      }),
    );

    // Search QPS: rounds of raw (single thread), HTTP at concurrency 1, HTTP at concurrency 16.
    const qpsAt = async (connections: number) => {
      let i = 0;
      const result = await autocannon({
        url: `${host.url}/api/v1/vectors/search`,
        connections,
        duration: seconds,
        method: 'POST',
        headers: { authorization: `Bearer ${host.token}`, 'content-type': 'application/json' },
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: searchBodies[i++ % q] }) }],
      });
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`search run had ${result.non2xx} non-2xx answers and ${result.errors} errors`);
      return result;
    };
    const rawQps: number[] = [];
    const qps1: number[] = [];
    const qps16: number[] = [];
    const p99: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      let runs = 0;
      while (performance.now() - t0 < 2000) for (const p of points) (raw.searchKnn(p, K), runs++);
      rawQps.push(runs / ((performance.now() - t0) / 1000));
      qps1.push((await qpsAt(1)).requests.average);
      const c16 = await qpsAt(16);
      qps16.push(c16.requests.average);
      p99.push(c16.latency.p99);
    }
    return {
      rawInsertPerSec: n / (rawMs / 1000),
      ackPerSec: n / (ackMs / 1000),
      indexedPerSec: n / (indexedMs / 1000),
      healthP50: pct(health, 50),
      healthP99: pct(health, 99),
      healthMax: health[health.length - 1] ?? NaN,
      healthSamples: health.length,
      rawQps: median(rawQps),
      qps1: median(qps1),
      qps16: median(qps16),
      p99ms16: median(p99),
      rawRecall: recallAt(rawFound, truth),
      recall: recallAt(found, truth),
      raw,
    };
  } finally {
    await stopHost(host);
  }
}

// ---- design measurements ----

/** One graph per tenant against one shared graph searched with a tenant filter. */
function tenantLayout(dim: number): Array<Record<string, string | number>> {
  const tenants = 20;
  const perTenant = 2500;
  const centres = clusteredVectors(100, dim, 77, new Float32Array(dim).fill(0));
  const data = clusteredVectors(tenants * perTenant, dim, 78, centres);
  const queries = clusteredVectors(200, dim, 79, centres);
  const tenantOf = (label: number) => Math.floor(label / perTenant);
  const shared = new hnswlib.HierarchicalNSW('cosine', dim);
  shared.initIndex({ maxElements: tenants * perTenant, m: M, efConstruction: EF_CONSTRUCTION, randomSeed: 100 });
  let t0 = performance.now();
  for (let i = 0; i < tenants * perTenant; i++) shared.addPoint(row(data, dim, i), i);
  const sharedBuild = performance.now() - t0;
  const own = Array.from({ length: tenants }, () => {
    const g = new hnswlib.HierarchicalNSW('cosine', dim);
    g.initIndex({ maxElements: perTenant, m: M, efConstruction: EF_CONSTRUCTION, randomSeed: 100 });
    return g;
  });
  t0 = performance.now();
  for (let i = 0; i < tenants * perTenant; i++) own[tenantOf(i)]!.addPoint(row(data, dim, i), i);
  const ownBuild = performance.now() - t0;
  shared.setEf(EF);
  for (const g of own) g.setEf(EF);

  // Queries for tenant 3, with the exact answer inside that tenant.
  const tenant = 3;
  const slice = data.subarray(tenant * perTenant * dim, (tenant + 1) * perTenant * dim);
  const truth = groundTruth(slice, queries, dim, K).map((r) => r.map((i) => i + tenant * perTenant));
  const points = Array.from({ length: 200 }, (_, i) => row(queries, dim, i));
  const time = (fn: (p: number[]) => number[]) => {
    const found = points.map(fn);
    const start = performance.now();
    let runs = 0;
    while (performance.now() - start < 1000) for (const p of points) (fn(p), runs++);
    return { qps: runs / ((performance.now() - start) / 1000), recall: recallAt(found, truth) };
  };
  const filtered = time((p) => shared.searchKnn(p, K, (label) => tenantOf(label) === tenant).neighbors);
  const mine = time((p) => own[tenant]!.searchKnn(p, K).neighbors);
  return [
    { layout: 'shared graph + tenant filter', build_s: sharedBuild / 1000, qps: filtered.qps, recall: filtered.recall },
    { layout: 'one graph per tenant', build_s: ownBuild / 1000, qps: mine.qps, recall: mine.recall },
  ];
}

/** Exact scan over the matches against filtered graph search, by the fraction that matches. */
function filterStrategies(index: Graph, data: Float32Array, queries: Float32Array, dim: number) {
  const n = data.length / dim;
  const bucket = new Uint16Array(n);
  const r = rng(5);
  for (let i = 0; i < n; i++) bucket[i] = Math.floor(r() * 1000);
  const points = Array.from({ length: 30 }, (_, i) => row(queries, dim, i));
  const out: Array<Record<string, string | number>> = [];
  for (const perMille of [1, 10, 50, 200, 500]) {
    const allowed: number[] = [];
    for (let i = 0; i < n; i++) if (bucket[i]! < perMille) allowed.push(i);
    const set = new Set(allowed);
    const truthFor = (p: number[]) => {
      let qn = 0;
      for (const x of p) qn += x * x;
      qn = Math.sqrt(qn);
      return allowed
        .map((label) => {
          const v = index.getPoint(label);
          let dot = 0;
          for (let j = 0; j < dim; j++) dot += v[j]! * p[j]!;
          return { label, d: 1 - dot / qn };
        })
        .sort((a, b) => a.d - b.d)
        .slice(0, K)
        .map((x) => x.label);
    };
    let t0 = performance.now();
    const truth = points.map(truthFor);
    const exactMs = (performance.now() - t0) / points.length;
    const widen = Math.min(8, n / allowed.length);
    index.setEf(Math.ceil(EF * widen));
    t0 = performance.now();
    const found = points.map((p) => index.searchKnn(p, K, (label) => set.has(label)).neighbors);
    const graphMs = (performance.now() - t0) / points.length;
    index.setEf(EF);
    out.push({
      matches: allowed.length,
      exact_ms: exactMs,
      filtered_graph_ms: graphMs,
      filtered_graph_recall: recallAt(found, truth),
    });
  }
  return out;
}

// ---- report ----

function table(rows: Array<Record<string, string | number>>): void {
  printTable(rows, (v) => (Number.isInteger(v) ? String(v) : v < 10 ? v.toFixed(3) : v.toFixed(1)));
}

export default async function run(): Promise<void> {
  const queriesN = env('VECTORS_BENCH_QUERIES', 1000);
  const seconds = env('VECTORS_BENCH_SECONDS', 5);
  const rounds = env('VECTORS_BENCH_ROUNDS', 3);
  const sizes = [
    { n: env('VECTORS_BENCH_N', 100_000), dim: 128 },
    { n: env('VECTORS_BENCH_N_768', 10_000), dim: 768 },
  ].filter((s) => s.n > 0);
  console.log(
    `cosine, M ${M}, ef_construction ${EF_CONSTRUCTION}, ef ${EF}, k ${K}; ${queriesN} queries; ${os.cpus().length} CPUs; ` +
      `upserts in batches of ${BATCH}, ${UPSERT_CONCURRENCY} in flight; QPS: median of ${rounds} rounds of ${seconds} s\n`,
  );
  const results: Array<Record<string, unknown>> = [];
  const summary: Array<Record<string, string | number>> = [];
  let extra: { index: Graph; data: Float32Array; queries: Float32Array; dim: number } | undefined;
  for (const { n, dim } of sizes) {
    const centres = randomCentres(dim);
    const data = clusteredVectors(n, dim, 1, centres);
    const queries = clusteredVectors(queriesN, dim, 2, centres);
    let t0 = performance.now();
    const truth = groundTruth(data, queries, dim, K);
    console.log(`${n} x ${dim}: ground truth by exact scan in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    t0 = performance.now();
    const f = await sideBySide(data, queries, dim, truth, seconds, rounds);
    console.log(`${n} x ${dim}: raw and HTTP done in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    if (dim === 128) extra = { index: f.raw, data, queries, dim };
    results.push({ n, dim, ...f, raw: undefined });
    const size = `${n / 1000}k x ${dim}`;
    const goal = (ok: boolean, text: string) => `${text}: ${ok ? 'met' : 'NOT met'}`;
    summary.push(
      { size, figure: 'upsert vectors/s, acknowledged (durable)', http: f.ackPerSec, raw: f.rawInsertPerSec, ratio: f.ackPerSec / f.rawInsertPerSec, goal: '' },
      { size, figure: 'upsert vectors/s, durable and indexed', http: f.indexedPerSec, raw: f.rawInsertPerSec, ratio: f.indexedPerSec / f.rawInsertPerSec, goal: goal(f.indexedPerSec / f.rawInsertPerSec >= 0.7, '>= 0.70') },
      { size, figure: 'search QPS, concurrency 1', http: f.qps1, raw: f.rawQps, ratio: f.qps1 / f.rawQps, goal: '' },
      { size, figure: `search QPS, concurrency 16 (p99 ${f.p99ms16} ms)`, http: f.qps16, raw: f.rawQps, ratio: f.qps16 / f.rawQps, goal: goal(f.qps16 / f.rawQps >= 0.5, '>= 0.50') },
      { size, figure: 'recall@10 at defaults', http: f.recall, raw: f.rawRecall, ratio: f.recall / f.rawRecall, goal: goal(f.recall >= 0.95, '>= 0.95') },
      {
        size,
        figure: `GET /healthz p99 ms during upserts (p50 ${f.healthP50.toFixed(1)}, max ${f.healthMax.toFixed(1)}, ${f.healthSamples} probes)`,
        http: f.healthP99,
        raw: '',
        ratio: '',
        goal: goal(f.healthP99 < 20, '< 20 ms'),
      },
    );
  }
  console.log('raw: hnswlib-node in this process with the same M / ef_construction / ef: insertions/s, and single-thread QPS (it is synchronous, so concurrency cannot raise it).\n');
  table(summary);

  let layout: Array<Record<string, string | number>> = [];
  let strategies: Array<Record<string, string | number>> = [];
  if (process.env.VECTORS_BENCH_SKIP_EXTRA !== '1') {
    console.log('\nOne graph per tenant against a shared graph with a tenant filter (20 tenants x 2,500 x 128, search in one tenant, in-process):\n');
    layout = tenantLayout(128);
    table(layout);
    if (extra) {
      console.log(`\nFiltered search on the raw ${extra.data.length / extra.dim} x ${extra.dim} graph: exact scan of the matches against filtered graph search (ef raised by 1/selectivity, at most 8x), per query:\n`);
      strategies = filterStrategies(extra.index, extra.data, extra.queries, extra.dim);
      table(strategies);
    }
  }
  const outDir = path.join(ROOT, 'bench', 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'vectors.json'), `${JSON.stringify({ results, summary, layout, strategies }, null, 2)}\n`);
}
