// The vector store across replicas: three replicas of the real host (`npm start` as child
// processes) on one PostgreSQL started here (Debian's binaries in a temporary directory, as the
// tests do), beside a one-box host (no DATABASE_URL: SQLite) given the same data. Measures:
//   1. upserts (batches of 100 vectors of 128 dimensions, 6 clients, two per replica): the rate
//      acknowledged (committed to PostgreSQL), the rate applied on every replica (a count through
//      each replica, which waits for read-your-writes, answers the total) and the rate indexed on
//      every replica (a search through each, which also waits for the graph work queued before
//      it, answers); the one-box host takes the same batches from the same 6 clients;
//   2. search QPS (k 10, 12 connections): through one replica, through the three (4 connections
//      each), and the one box; rounds interleaved, medians; and at one connection, through one
//      replica against the one box, where the read-your-writes check (a PostgreSQL round trip per
//      read) is a visible part of each request;
//   3. lag: single-vector upserts through replica A, B, C in turn, under a background load of
//      upserts through every replica; after each acknowledgement (x-vector-seq = S), each
//      replica's `GET /api/v1/vectors/collections/<name>` is polled back to back (it does not wait
//      for read-your-writes) until its `replica.applied_seq` >= S: the lag until every replica
//      has applied the write, p50 / p99 / max, for the replica that acknowledged and the others.
//      A poll shows the copy as it was while it was answered, so each figure is an upper bound
//      (the answer that showed it) with a lower bound beside it (the previous poll's sending).
// Every process (PostgreSQL, four hosts with their workers, the load generator) shares this
// machine's cores: the three-replica figures measure the cost of replication here, not the
// scaling that three machines would give. Needs `npm run build` (the hosts run from dist/).
//
// VC_BENCH_N (20000) vectors, VC_BENCH_SECONDS (3) per QPS run, VC_BENCH_ROUNDS (3), VC_BENCH_LAG
// (300) lag probes, VC_BENCH_BG (250) background vectors/s during the lag probes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnHost, startLineOf, type ChildHost } from '../test/helpers/child-host.js';
import { runCli } from '../test/helpers/cli.js';
import { percentile, startCluster, tokenOn } from '../test/helpers/cluster.js';
import { tempDir } from '../test/helpers/paths.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { autocannon } from './support/autocannon.js';
import { clusteredVectors, randomCentres, rowsOf } from './support/clustered-vectors.js';
import { printTable } from './support/markdown-table.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);

const N = env('VC_BENCH_N', 20_000);
const SECONDS = env('VC_BENCH_SECONDS', 3);
const ROUNDS = env('VC_BENCH_ROUNDS', 3);
const LAG_PROBES = env('VC_BENCH_LAG', 300);
const BG_PER_S = env('VC_BENCH_BG', 250);
const DIM = 128;
const K = 10;
const BATCH = 100;
const WRITERS = 6;
const CONNECTIONS = 12;
const QUERIES = 200;
const BG_BATCH = 50;
const IDS = ['replica-a', 'replica-b', 'replica-c'];
const COLLECTION = 'bench';
/** The host's default VECTOR_CHECKPOINT_IDLE_MS. */
const CHECKPOINT_IDLE_MS = 5000;



const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** n points around the benches' 100 centres (support/clustered-vectors.ts), as JSON rows. */
function clustered(n: number, seed: number): number[][] {
  return rowsOf(clusteredVectors(n, DIM, seed, randomCentres(DIM)), DIM);
}

interface Answer {
  status: number;
  seq: number | undefined;
  body: any;
}

async function send(url: string, token: string, method: string, urlPath: string, body?: string): Promise<Answer> {
  const res = await fetch(url + urlPath, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body,
  });
  const text = await res.text();
  const seq = res.headers.get('x-vector-seq');
  return { status: res.status, seq: seq === null ? undefined : Number(seq), body: text ? JSON.parse(text) : undefined };
}

async function ok(url: string, token: string, method: string, urlPath: string, body?: string): Promise<Answer> {
  const a = await send(url, token, method, urlPath, body);
  if (a.status !== 200 && a.status !== 201) throw new Error(`${method} ${urlPath}: ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
  return a;
}

/** A read retried while the replica answers 503 (its copy did not catch up within the bound). */
async function read(url: string, token: string, urlPath: string, body: string): Promise<Answer> {
  for (;;) {
    const a = await send(url, token, 'POST', urlPath, body);
    if (a.status !== 503) {
      if (a.status !== 200) throw new Error(`POST ${urlPath}: ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
      return a;
    }
  }
}

interface Target {
  url: string;
  token: string;
}

interface UpsertFigures {
  ackS: number;
  ackPerS: number;
  batchP50: number;
  batchP99: number;
  /** Per target: seconds from the first upsert until a count through it answered N. */
  appliedS: number[];
  /** Per target: seconds from the first upsert until a search through it answered. */
  indexedS: number[];
  maxSeq: number;
}

/**
 * The batches from WRITERS clients, client w always through targets[w % targets.length]; once the
 * last is acknowledged, a count and a search through every target, timed from the first upsert.
 */
async function upsertAll(targets: Target[], bodies: string[], probe: string): Promise<UpsertFigures> {
  let next = 0;
  let maxSeq = 0;
  const latencies: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const t = targets[w % targets.length]!;
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const started = performance.now();
        const a = await ok(t.url, t.token, 'POST', '/api/v1/vectors/upsert', body);
        latencies.push(performance.now() - started);
        if (a.seq !== undefined && a.seq > maxSeq) maxSeq = a.seq;
      }
    }),
  );
  const ackS = (performance.now() - t0) / 1000;
  const countBody = JSON.stringify({ collection_name: COLLECTION });
  const appliedS: number[] = [];
  const indexedS: number[] = [];
  await Promise.all(
    targets.map(async (t, i) => {
      await Promise.all([
        (async () => {
          for (;;) {
            const a = await read(t.url, t.token, '/api/v1/vectors/count', countBody);
            if (a.body.count >= N) break;
            await sleep(2); // a one-box count never lags; a replica's waits for its copy
          }
          appliedS[i] = (performance.now() - t0) / 1000;
        })(),
        (async () => {
          await read(t.url, t.token, '/api/v1/vectors/search', probe);
          indexedS[i] = (performance.now() - t0) / 1000;
        })(),
      ]);
    }),
  );
  return {
    ackS,
    ackPerS: N / ackS,
    batchP50: percentile(latencies, 50),
    batchP99: percentile(latencies, 99),
    appliedS,
    indexedS,
    maxSeq,
  };
}

/** Search QPS with `connections` split evenly over `targets` (one load generator per target). */
async function qps(targets: Target[], connections: number, bodies: string[], seconds = SECONDS) {
  const results = await Promise.all(
    targets.map((t) => {
      let i = Math.floor(Math.random() * bodies.length);
      return autocannon({
        url: `${t.url}/api/v1/vectors/search`,
        method: 'POST',
        headers: { authorization: `Bearer ${t.token}`, 'content-type': 'application/json' },
        connections: Math.max(1, Math.round(connections / targets.length)),
        duration: seconds,
        requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodies[i++ % bodies.length] }) }],
      });
    }),
  );
  const errors = results.reduce((n, r) => n + r.errors + r.non2xx, 0);
  if (errors > 0) throw new Error(`a search run had ${errors} errors or non-2xx answers`);
  return {
    rps: results.reduce((n, r) => n + r.requests.average, 0),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
  };
}

/** A one-box host (SQLite) with an operator's key, and a token for it. */
async function startOneBox(): Promise<{ host: ChildHost; token: string }> {
  const dataDir = tempDir();
  const created = await runCli(['keys', 'create', '--name', 'ops'], { DATA_DIR: dataDir });
  if (created.code !== 0) throw new Error(created.stderr);
  const host = await spawnHost({ DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  await startLineOf(host);
  return { host, token: await tokenOn(host.url, created.stdout.trim()) };
}

function table(rows: Array<Record<string, string | number>>): void {
  printTable(rows, (v) => (Number.isInteger(v) ? v.toLocaleString('en-US') : v < 10 ? v.toFixed(2) : Math.round(v).toLocaleString('en-US')));
}

export default async function run(): Promise<void> {
  const loadAtStart = load();
  const started = performance.now();
  const data = clustered(N, 1);
  const queries = clustered(QUERIES, 2);
  const bodies: string[] = [];
  for (let i = 0; i < N; i += BATCH) {
    bodies.push(JSON.stringify({ collection_name: COLLECTION, vector: data.slice(i, i + BATCH).map((values, j) => ({ id: `v${i + j}`, values, properties: { i: i + j } })) }));
  }
  const searchBodies = queries.map((element) => JSON.stringify({ collection_name: COLLECTION, reference_vector: { element }, max_results: K, include_vector: false }));
  const spec = JSON.stringify({ name: COLLECTION, dimension: DIM, metric: 'cosine' });

  const pg = await startPostgres();
  const { cluster, token } = await startCluster(pg, 'vectors_bench', IDS, { LOG_LEVEL: 'warn' });
  const oneBox = await startOneBox();
  try {
    const replicas: Target[] = IDS.map((id) => ({ url: cluster.url(id), token }));
    const single: Target = { url: oneBox.host.url, token: oneBox.token };
    console.log(
      `${N.toLocaleString('en-US')} x ${DIM} clustered vectors, cosine, the host's default HNSW settings (M 16, ef_construction 200, ef 64); ` +
        `${os.cpus().length} CPUs; load average at the start ${loadAtStart}\n`,
    );

    // 1. Upserts: the cluster, then the one box.
    await ok(replicas[0]!.url, token, 'POST', '/api/v1/vectors/collections', spec);
    await ok(single.url, single.token, 'POST', '/api/v1/vectors/collections', spec);
    const loadBeforeUpserts = load();
    const clusterUp = await upsertAll(replicas, bodies, searchBodies[0]!);
    const oneUp = await upsertAll([single], bodies, searchBodies[0]!);
    const loadAfterUpserts = load();

    // 2. Search QPS, rounds interleaved, after a second of each path to warm up. First, every host
    // writes its graph's checkpoint once it has had no write for VECTOR_CHECKPOINT_IDLE_MS (5 s):
    // those writes would land in the first round.
    await sleep(CHECKPOINT_IDLE_MS + 1000);
    for (const targets of [[replicas[0]!], replicas, [single]]) await qps(targets, CONNECTIONS, searchBodies, 1);
    const runs = { oneBox: [] as number[], one: [] as number[], three: [] as number[] };
    const lat = { oneBox: [] as Array<[number, number]>, one: [] as Array<[number, number]>, three: [] as Array<[number, number]> };
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, targets] of [
        ['one', [replicas[0]!]],
        ['three', replicas],
        ['oneBox', [single]],
      ] as const) {
        const f = await qps([...targets], CONNECTIONS, searchBodies);
        runs[name].push(f.rps);
        lat[name].push([f.p50, f.p99]);
      }
    }
    const c1Replica = await qps([replicas[0]!], 1, searchBodies);
    const c1OneBox = await qps([single], 1, searchBodies);
    const loadAfterSearch = load();

    // 3. Lag from acknowledgement until every replica has applied the write.
    let stopBg = false;
    let bgSent = 0;
    let bgFailed = 0;
    const bgData = clustered(BG_BATCH, 3);
    const background = (async () => {
      const period = (1000 * BG_BATCH) / BG_PER_S;
      for (let n = 0; !stopBg; n++) {
        const t = performance.now();
        const t2 = replicas[n % replicas.length]!;
        const body = JSON.stringify({ collection_name: COLLECTION, vector: bgData.map((values, j) => ({ id: `bg${n}-${j}`, values })) });
        const a = await send(t2.url, token, 'POST', '/api/v1/vectors/upsert', body);
        if (a.status === 200) bgSent += BG_BATCH;
        else bgFailed++;
        await sleep(Math.max(0, period - (performance.now() - t)));
      }
    })();
    const probeValues = clustered(LAG_PROBES, 4);
    const lagAll: number[] = [];
    const lagAllLower: number[] = [];
    const lagOwn: number[] = [];
    const lagOther: number[] = [];
    const ackMs: number[] = [];
    const pollMs: number[] = [];
    let atFirstPoll = 0;
    const lagStarted = performance.now();
    for (let i = 0; i < LAG_PROBES; i++) {
      const writer = i % IDS.length;
      const w = replicas[writer]!;
      const t0 = performance.now();
      const a = await ok(w.url, token, 'POST', '/api/v1/vectors/upsert', JSON.stringify({ collection_name: COLLECTION, vector: [{ id: `probe-${i}`, values: probeValues[i] }] }));
      const acked = performance.now();
      ackMs.push(acked - t0);
      const seq = a.seq!;
      const each = await Promise.all(
        replicas.map(async (t) => {
          // The copy is read while the poll is being answered: it reached the write before the
          // answer that shows it came back, and after the previous poll (which did not) was sent.
          let notBefore = 0;
          for (;;) {
            const sent = performance.now();
            const info = await ok(t.url, token, 'GET', `/api/v1/vectors/collections/${COLLECTION}`);
            const now = performance.now();
            pollMs.push(now - sent);
            if (info.body.replica.applied_seq >= seq) {
              if (notBefore === 0) atFirstPoll++;
              return { upper: now - acked, lower: notBefore };
            }
            notBefore = sent - acked;
          }
        }),
      );
      each.forEach((b, r) => (r === writer ? lagOwn : lagOther).push(b.upper));
      lagAll.push(Math.max(...each.map((b) => b.upper)));
      lagAllLower.push(Math.max(...each.map((b) => b.lower)));
      await sleep(Math.random() * 20);
    }
    const lagSeconds = (performance.now() - lagStarted) / 1000;
    stopBg = true;
    await background;
    const loadAtEnd = load();

    // ---- report ----
    const maxOf = (xs: number[]) => Math.max(...xs);
    console.log(`Upserts: ${N.toLocaleString('en-US')} vectors in batches of ${BATCH}, ${WRITERS} clients (cluster: two per replica); load average before ${loadBeforeUpserts}, after ${loadAfterUpserts}\n`);
    table([
      { figure: 'acknowledged (committed to the store of record), vectors/s', cluster: clusterUp.ackPerS, 'one box': oneUp.ackPerS, 'cluster / one box': clusterUp.ackPerS / oneUp.ackPerS },
      { figure: 'upsert of 100 vectors, p50 ms', cluster: clusterUp.batchP50, 'one box': oneUp.batchP50, 'cluster / one box': clusterUp.batchP50 / oneUp.batchP50 },
      { figure: 'upsert of 100 vectors, p99 ms', cluster: clusterUp.batchP99, 'one box': oneUp.batchP99, 'cluster / one box': clusterUp.batchP99 / oneUp.batchP99 },
      { figure: 'applied on every replica (count = N), vectors/s', cluster: N / maxOf(clusterUp.appliedS), 'one box': N / oneUp.appliedS[0]!, 'cluster / one box': (N / maxOf(clusterUp.appliedS)) / (N / oneUp.appliedS[0]!) },
      { figure: 'indexed on every replica (a search answers), vectors/s', cluster: N / maxOf(clusterUp.indexedS), 'one box': N / oneUp.indexedS[0]!, 'cluster / one box': (N / maxOf(clusterUp.indexedS)) / (N / oneUp.indexedS[0]!) },
    ]);
    console.log(
      `\n(cluster: acknowledged in ${clusterUp.ackS.toFixed(1)} s, last x-vector-seq ${clusterUp.maxSeq}; applied on A/B/C at ${clusterUp.appliedS.map((s) => s.toFixed(1)).join(' / ')} s, ` +
        `indexed at ${clusterUp.indexedS.map((s) => s.toFixed(1)).join(' / ')} s; one box: acknowledged in ${oneUp.ackS.toFixed(1)} s, indexed at ${oneUp.indexedS[0]!.toFixed(1)} s)\n`,
    );
    const med = (xs: number[]) => median(xs);
    const p = (xs: Array<[number, number]>) => `${med(xs.map((x) => x[0]))} / ${med(xs.map((x) => x[1]))}`;
    console.log(`Search, k ${K}, ${QUERIES} different queries, ${CONNECTIONS} connections, median of ${ROUNDS} rounds of ${SECONDS} s (load average after ${loadAfterSearch})\n`);
    table([
      { path: 'one box (SQLite, no read-your-writes check)', 'QPS': med(runs.oneBox), 'p50 / p99 ms': p(lat.oneBox), 'rounds': runs.oneBox.map((x) => Math.round(x)).join(', ') },
      { path: 'cluster, through 1 replica', 'QPS': med(runs.one), 'p50 / p99 ms': p(lat.one), 'rounds': runs.one.map((x) => Math.round(x)).join(', ') },
      { path: 'cluster, through 3 replicas (4 connections each)', 'QPS': med(runs.three), 'p50 / p99 ms': p(lat.three), 'rounds': runs.three.map((x) => Math.round(x)).join(', ') },
      { path: '3 replicas / 1 replica', 'QPS': med(runs.three) / med(runs.one), 'p50 / p99 ms': '', 'rounds': '' },
      { path: '1 replica / one box', 'QPS': med(runs.one) / med(runs.oneBox), 'p50 / p99 ms': '', 'rounds': '' },
      { path: 'one box, 1 connection', 'QPS': c1OneBox.rps, 'p50 / p99 ms': `${c1OneBox.p50} / ${c1OneBox.p99}`, 'rounds': '' },
      { path: 'cluster, 1 replica, 1 connection', 'QPS': c1Replica.rps, 'p50 / p99 ms': `${c1Replica.p50} / ${c1Replica.p99}`, 'rounds': '' },
    ]);
    const row = (name: string, xs: number[]) => ({ lag: name, samples: xs.length, 'p50 ms': percentile(xs, 50), 'p99 ms': percentile(xs, 99), 'max ms': Math.max(...xs) });
    console.log(
      `\nLag, ${LAG_PROBES} single-vector upserts through A, B, C in turn, from the acknowledgement until replica.applied_seq >= its x-vector-seq; ` +
        `background ${BG_BATCH}-vector upserts at ~${BG_PER_S} vectors/s (${bgSent} acknowledged in ${lagSeconds.toFixed(1)} s, ${bgFailed} failed). ` +
        `A replica is polled back to back, so a figure is an upper bound, late by up to one poll: ${pollMs.length} polls took p50 ${percentile(pollMs, 50).toFixed(1)} ms, ` +
        `p99 ${percentile(pollMs, 99).toFixed(1)} ms; ${atFirstPoll} of ${LAG_PROBES * IDS.length} (probe, replica) pairs had applied it by the first poll. Load average at the end ${loadAtEnd}\n`,
    );
    table([
      row('every replica has applied it (the slowest of the three)', lagAll),
      row('  the same, lower bound (the last poll that did not show it was sent)', lagAllLower),
      row('the replica that acknowledged it', lagOwn),
      row('each of the other two', lagOther),
      { lag: 'the probe upsert itself (send to acknowledgement)', samples: ackMs.length, 'p50 ms': percentile(ackMs, 50), 'p99 ms': percentile(ackMs, 99), 'max ms': Math.max(...ackMs) },
    ]);
    console.log(`\nload average: start ${loadAtStart}, end ${loadAtEnd}; ${((performance.now() - started) / 1000).toFixed(1)} s`);

    const outDir = path.join(ROOT, 'bench', 'out');
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(
      path.join(outDir, 'vectors-cluster.json'),
      `${JSON.stringify(
        {
          settings: { n: N, dim: DIM, k: K, batch: BATCH, writers: WRITERS, connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, lagProbes: LAG_PROBES, backgroundPerS: BG_PER_S, cpus: os.cpus().length },
          loadAverage: { start: loadAtStart, beforeUpserts: loadBeforeUpserts, afterUpserts: loadAfterUpserts, afterSearch: loadAfterSearch, end: loadAtEnd },
          upsert: { cluster: clusterUp, oneBox: oneUp },
          search: { qps: runs, latency: lat, concurrency1: { replica: c1Replica, oneBox: c1OneBox } },
          lag: { all: lagAll, allLowerBound: lagAllLower, own: lagOwn, other: lagOther, ackMs, pollMs, atFirstPoll, backgroundAcknowledged: bgSent, backgroundFailed: bgFailed },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    oneBox.host.proc.kill('SIGTERM');
    await Promise.all([cluster.stopAll('SIGTERM'), oneBox.host.exited]);
    await pg.stop();
    for (const dir of [oneBox.host.dataDir, ...[...cluster.replicas.values()].map((r) => r.dataDir)]) fs.rmSync(dir, { recursive: true, force: true });
  }
}
