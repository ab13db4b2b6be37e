// Predict through HTTP: requests/s and p50/p99 latency at concurrency 1, 16 and 64 (autocannon),
// against the real host (a child process running dist/server/main.js, as `npm start` does)
// serving the MLP 64-256-256-1 and a 300-tree depth-6 gradient-boosted ensemble, one row per
// request. The peer is a bare Fastify route in another child process that parses the same body
// and returns a constant. While each run goes, GET /healthz is timed every 10 ms: its p99 shows
// whether the event loop is ever blocked. Needs `npm run build` (dist/) first.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import autocannon from 'autocannon';

import { mlpModel, treeModel } from './tabular.bench.js';
import { freePort } from '../test/helpers/free-port.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DURATION_S = Number(process.env.PREDICT_BENCH_SECONDS ?? 5);
const CONCURRENCY = [1, 16, 64];

/** Starts a node child and waits until `url`/healthz (or the first stdout line) answers. */
async function startChild(args: string[], env: Record<string, string>, url?: string): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  if (url === undefined) {
    const first = await new Promise<string>((resolve, reject) => {
      proc.stdout!.once('data', (chunk: Buffer) => resolve(String(chunk).trim()));
      proc.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
    });
    return { proc, url: first };
  }
  for (let i = 0; i < 200; i++) {
    if (await fetch(`${url}/healthz`).then((r) => r.ok, () => false)) return { proc, url };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${args.join(' ')} did not start`);
}

async function json<T>(url: string, init: RequestInit): Promise<T> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** Times GET /healthz every 10 ms until stopped; returns the latencies in ms. */
function probeHealth(url: string): { stop: () => Promise<number[]> } {
  const times: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      await fetch(`${url}/healthz`).then((r) => r.arrayBuffer());
      times.push(performance.now() - t);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return times;
    },
  };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

async function load(url: string, body: string, headers: Record<string, string>, connections: number) {
  const result = await autocannon({ url, method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, connections, duration: DURATION_S });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + result.non2xx };
}

export default async function run(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'predict-bench-'));
  const cli = path.join(ROOT, 'dist/cli/main.js');
  const key = execFileSync(process.execPath, [cli, 'keys', 'create', '--name', 'bench'], { env: { ...process.env, DATA_DIR: dataDir }, stdio: ['ignore', 'pipe', 'ignore'] })
    .toString()
    .trim();
  const port = await freePort();
  const host = await startChild([path.join(ROOT, 'dist/server/main.js')], { DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn' }, `http://127.0.0.1:${port}`);
  const bare = await startChild(['--import', 'tsx', path.join(ROOT, 'bench/support/bare-server.ts')], {});
  try {
    const { accessToken } = await json<{ accessToken: string }>(`${host.url}/api/v1/authentication/platform-api-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ platformApiKey: key }),
    });
    const auth = { authorization: `Bearer ${accessToken}` };
    const models: Array<{ id: string; bytes: Uint8Array; features: number }> = [
      { id: 'mlp', bytes: mlpModel([64, 256, 256, 1]), features: 64 },
      { id: 'gbt', bytes: treeModel(300, 6, 20), features: 20 },
    ];
    const rows: string[][] = [];
    for (const m of models) {
      const names = Array.from({ length: m.features }, (_, i) => `f${i}`);
      await json(`${host.url}/api/v1/models`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ model_id: m.id }) });
      const build = await json<{ build_id: string }>(`${host.url}/api/v1/models/${m.id}/builds?feature_names=${names.join(',')}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/octet-stream' },
        body: m.bytes,
      });
      const dep = await json<{ deployment_id: string }>(`${host.url}/api/v1/models/${m.id}/deployments`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ build_id: build.build_id }),
      });
      for (;;) {
        const status = await json<{ status: string; reason: string | null }>(`${host.url}/api/v1/deployments/${dep.deployment_id}`, { method: 'GET', headers: auth });
        if (status.status === 'LIVE') break;
        if (status.status === 'FAILED') throw new Error(`deploy ${m.id} failed: ${status.reason}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const body = JSON.stringify({ columns: names, index: [0], data: [names.map((_, i) => (i % 7) / 7 - 0.3)] });
      for (const c of CONCURRENCY) {
        const probe = probeHealth(host.url);
        const ours = await load(`${host.url}/v1/${m.id}/predict`, body, auth, c);
        const health = (await probe.stop()).sort((a, b) => a - b);
        const peer = await load(`${bare.url}/v1/bare/predict`, body, {}, c);
        rows.push([
          m.id,
          String(c),
          ours.rps.toFixed(0),
          `${ours.p50} / ${ours.p99}`,
          String(ours.errors),
          peer.rps.toFixed(0),
          `${peer.p50} / ${peer.p99}`,
          `${((ours.rps / peer.rps) * 100).toFixed(0)} %`,
          pct(health, 99).toFixed(1),
        ]);
      }
    }
    const header = ['model', 'conc.', 'predict req/s', 'p50 / p99 ms', 'errors', 'bare req/s', 'bare p50 / p99 ms', 'predict / bare', 'healthz p99 ms'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
    console.log(`${DURATION_S} s per run, one row per request, host LOG_LEVEL=warn`);
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
  } finally {
    host.proc.kill('SIGTERM');
    bare.proc.kill('SIGTERM');
  }
}
