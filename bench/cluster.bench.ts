// Three replicas of the real host on one PostgreSQL database (Debian's binaries, started in a
// temporary directory as the tests do): how long a traffic split changed through one replica takes
// to be in force on all three (p50 / p99 over 100 changes, from the POST to the moment every
// replica routes by it), and predict throughput of the MLP 64-256-256-1 through one replica and
// through all three (autocannon, the same total connections split across them). Every process
// shares this machine's cores, so the three-replica figure measures the overhead of replication
// here, not the scaling it gives on separate machines. Needs `npm run build` (dist/) first.
import os from 'node:os';

import autocannon from 'autocannon';

import { mlpModel } from './tabular.bench.js';
import { percentile, startCluster } from '../test/helpers/cluster.js';
import { linearModel } from '../test/helpers/models.js';
import { tempDir } from '../test/helpers/paths.js';
import { startPostgres } from '../test/helpers/postgres.js';

const DURATION_S = Number(process.env.CLUSTER_BENCH_SECONDS ?? 5);
const CONNECTIONS = 24;
const CHANGES = 100;
const IDS = ['replica-a', 'replica-b', 'replica-c'];

async function call<T>(url: string, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const binary = body instanceof Uint8Array;
  const res = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': binary ? 'application/octet-stream' : 'application/json' }) },
    ...(body === undefined ? {} : { body: binary ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function deployAndWait(url: string, token: string, modelId: string, body: unknown): Promise<void> {
  const dep = await call<{ deployment_id: string }>(url, token, 'POST', `/api/v1/models/${modelId}/deployments`, body);
  for (;;) {
    const s = await call<{ status: string; reason: string | null }>(url, token, 'GET', `/api/v1/deployments/${dep.deployment_id}`);
    if (s.status === 'LIVE') return;
    if (s.status === 'FAILED') throw new Error(`deployment failed: ${s.reason}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function throughput(urls: string[], token: string, body: string) {
  const results = await Promise.all(
    urls.map((url) =>
      autocannon({
        url: `${url}/v1/mlp/predict`,
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        connections: Math.round(CONNECTIONS / urls.length),
        duration: DURATION_S,
      }),
    ),
  );
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    p99: Math.max(...results.map((r) => r.latency.p99)),
    errors: results.reduce((sum, r) => sum + r.errors + r.non2xx, 0),
  };
}

export default async function run(): Promise<void> {
  const pg = await startPostgres();
  const { cluster, token } = await startCluster(pg, 'bench', IDS, { MODELS_DIR: tempDir(), LOG_LEVEL: 'warn' });
  try {
    const [a, b] = [cluster.url('replica-a'), cluster.url('replica-b')];

    // Propagation: a split of the catch-all audience between variations x and y, changed through B.
    const features = ['f0', 'f1', 'f2'];
    await call(a, token, 'POST', '/api/v1/models', { model_id: 'split' });
    const bx = await call<{ build_id: string }>(a, token, 'POST', `/api/v1/models/split/builds?feature_names=${features.join(',')}`, linearModel(features, 0.25));
    const by = await call<{ build_id: string }>(a, token, 'POST', `/api/v1/models/split/builds?feature_names=${features.join(',')}`, linearModel(features, 0.5));
    await deployAndWait(a, token, 'split', { build_id: bx.build_id, variation_name: 'x' });
    const { audiences } = await call<{ audiences: Array<{ id: string }> }>(a, token, 'POST', '/api/v1/audiences', { api_version: 'v1', spec: { audiences: [{ name: 'everyone' }] } });
    const splitTo = (x: number) => ({ build_id: by.build_id, variation_name: 'y', audiences: [{ id: audiences[0]!.id, routes: [{ variation_name: 'x', weight: x }, { variation_name: 'y', weight: 100 - x }], fallback_variation: 'x' }] });
    await deployAndWait(a, token, 'split', splitTo(100));
    const row = JSON.stringify({ columns: features, data: [[1, 2, 3]] });
    const variationOn = async (url: string) => {
      const res = await fetch(`${url}/v1/split/predict`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: row });
      await res.arrayBuffer();
      return res.headers.get('x-variation');
    };
    const times: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const toX = i % 2 === 1;
      const t0 = performance.now();
      await call(b, token, 'POST', '/api/v1/models/split/deployments', splitTo(toX ? 100 : 0));
      await Promise.all(
        IDS.map(async (id) => {
          while ((await variationOn(cluster.url(id))) !== (toX ? 'x' : 'y')) await new Promise((resolve) => setTimeout(resolve, 2));
        }),
      );
      times.push(performance.now() - t0);
    }

    // Throughput: the MLP through one replica, then through all three.
    const names = Array.from({ length: 64 }, (_, i) => `f${i}`);
    await call(a, token, 'POST', '/api/v1/models', { model_id: 'mlp' });
    const mlp = await call<{ build_id: string }>(a, token, 'POST', `/api/v1/models/mlp/builds?feature_names=${names.join(',')}`, mlpModel([64, 256, 256, 1]));
    await deployAndWait(a, token, 'mlp', { build_id: mlp.build_id });
    const body = JSON.stringify({ columns: names, index: [0], data: [names.map((_, i) => (i % 7) / 7 - 0.3)] });
    const one = await throughput([a], token, body);
    const three = await throughput(IDS.map((id) => cluster.url(id)), token, body);

    const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
    console.log(`three replicas on one PostgreSQL, ${os.cpus().length} cores, load average ${load}`);
    console.log(`| measure | figure |`);
    console.log(`|---|---|`);
    console.log(`| split changed through B, in force on all 3 (${CHANGES} changes) | p50 ${percentile(times, 50).toFixed(1)} ms, p99 ${percentile(times, 99).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms |`);
    console.log(`| predict MLP, ${CONNECTIONS} connections, through 1 replica | ${one.rps.toFixed(0)} req/s, p50 ${one.p50} ms, p99 ${one.p99} ms, ${one.errors} errors |`);
    console.log(`| predict MLP, ${CONNECTIONS} connections, through 3 replicas | ${three.rps.toFixed(0)} req/s, p50 ${three.p50} ms, p99 ${three.p99} ms, ${three.errors} errors (${((three.rps / one.rps) * 100).toFixed(0)} % of one) |`);
  } finally {
    await cluster.stopAll('SIGTERM');
    await pg.stop();
  }
}
