// Three replicas of the real host on one PostgreSQL database, behaving as one platform: a deploy
// through one serves on all, a traffic split changed through one is in force on all (timed over
// 100 changes), a revoked key stops on all, a lost LISTEN connection loses no change, SIGKILL under
// load fails only what was in flight on the killed replica, SIGTERM under load fails nothing, and
// restarting every replica comes back to the same state. The balancer in front is the test's
// (test/helpers/cluster.ts): it sends to replicas whose /readyz answers 200, as a Service does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, waitForDeployment, type Api } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { createKey, killListener, percentile, runLoad, startCluster, tokenOn, type Cluster, type LoadRecord } from './helpers/cluster.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { linearModel } from './helpers/models.js';
import { tempDir } from './helpers/paths.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';

const FEATURES = ['amount', 'age', 'country'];
const ROWS = { columns: FEATURES, data: [[120.5, 34, 2]] };
const IDS = ['replica-a', 'replica-b', 'replica-c'] as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let pg: TestPostgres;
let databaseUrl: string;
let cluster: Cluster;
let token: string;
let opsKey: string;
let audience: string;
let liveDeployment: string;

const on = (id: string): Api => apiClient(cluster.url(id), token);

/** Polls `check` every 20 ms until it is true; the time it took, or a thrown error after `timeoutMs`. */
async function within(timeoutMs: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

/** The variation a replica routes a request to now (X-Variation), or null when it cannot answer. */
async function variationOn(id: string): Promise<string | null> {
  const res = await fetch(`${cluster.url(id)}/v1/fraud/predict`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(ROWS) });
  await res.arrayBuffer();
  return res.ok ? res.headers.get('x-variation') : null;
}

/** A split of the catch-all audience: `a` percent to variation a, the rest to b. */
const split = (a: number) => ({ build_id: '', variation_name: 'b', audiences: [{ id: audience, routes: [{ variation_name: 'a', weight: a }, { variation_name: 'b', weight: 100 - a }], fallback_variation: 'a' }] });

async function deployThrough(id: string, body: Record<string, unknown>): Promise<string> {
  const res = await on(id)<{ deployment_id: string }>('POST', '/api/v1/models/fraud/deployments', body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.deployment_id;
}

const predictOk = async (url: string) => {
  const res = await fetch(`${url}/v1/fraud/predict`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(ROWS) });
  await res.arrayBuffer();
  return res.ok;
};

const streamOk = async (url: string) => {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 48, temperature: 0, stream: true }),
  });
  const text = await res.text();
  return res.ok && text.trimEnd().endsWith('data: [DONE]');
};

/** Predict and streaming load through the balancer while `during` runs; every request's record. */
async function underLoad(during: () => Promise<void>): Promise<LoadRecord[]> {
  const predicts = runLoad(cluster, 'predict', 4, predictOk);
  const streams = runLoad(cluster, 'stream', 2, streamOk);
  await during();
  return [...(await predicts.stop()), ...(await streams.stop())];
}

beforeAll(async () => {
  pg = await startPostgres();
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat');
  ({ cluster, databaseUrl, key: opsKey, token } = await startCluster(pg, 'three_replicas', IDS, {
    MODELS_DIR: modelsDir,
    // A replica killed without a word stops counting after 2 s.
    REPLICA_TIMEOUT_MS: '2000',
    CONFIG_POLL_MS: '500',
    DRAIN_DELAY_SECONDS: '1',
    SHUTDOWN_TIMEOUT_SECONDS: '20',
    PREDICT_MAX_WAIT_MICROS: '0',
  }));
}, 120_000);

afterAll(async () => {
  cluster?.stopBalancing();
  await cluster?.stopAll('SIGKILL');
  await pg?.stop();
});

describe('three replicas on one PostgreSQL database', () => {
  it('serve on B and C what was deployed through A, and say on how many replicas it is applied', async () => {
    const a = on('replica-a');
    expect((await a('POST', '/api/v1/models', { model_id: 'fraud' })).status).toBe(201);
    const builds: string[] = [];
    for (const w of [0.25, 0.5]) {
      const res = await a<{ build_id: string }>('POST', `/api/v1/models/fraud/builds?feature_names=${FEATURES.join(',')}`, linearModel(FEATURES, w));
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      builds.push(res.body.build_id);
    }
    const first = await deployThrough('replica-a', { build_id: builds[0], variation_name: 'a' });
    // LIVE once every live replica has loaded the build.
    expect(await waitForDeployment(a, first)).toMatchObject({ status: 'LIVE' });
    for (const id of IDS) await within(3000, `variation a on ${id}`, async () => (await variationOn(id)) === 'a');
    await within(3000, 'applied on 3/3', async () => {
      const res = await on('replica-c')<{ replicas: { applied: number; total: number } }>('GET', '/api/v1/models/fraud');
      return res.body.replicas.applied === 3 && res.body.replicas.total === 3;
    });
    const shown = await runCli(['models', 'get', 'fraud'], { PLATFORM_URL: cluster.url('replica-b'), PLATFORM_API_KEY: opsKey, PLATFORM_CACHE_DIR: tempDir() });
    expect(shown.stdout + shown.stderr).toMatch(/\nreplicas:\s+applied on 3\/3 replicas\n/);

    // The catch-all audience and the second variation, through A; the splits come through B.
    const aud = await a<{ audiences: Array<{ id: string }> }>('POST', '/api/v1/audiences', { api_version: 'v1', spec: { audiences: [{ name: 'everyone' }] } });
    audience = aud.body.audiences[0]!.id;
    const second = await deployThrough('replica-a', { ...split(100), build_id: builds[1] });
    expect(await waitForDeployment(a, second)).toMatchObject({ status: 'LIVE' });
    liveDeployment = second;

    // A library model deployed through A loads on every replica, and answers on C.
    expect((await a('POST', '/api/v1/library/deployments', { name: 'tiny-chat', model_id: 'tiny' })).status).toBe(202);
    await within(20_000, 'tiny LIVE', async () => (await a<{ status: string }>('GET', '/api/v1/library/deployments/tiny')).body.status === 'LIVE');
    const lib = await on('replica-b')<{ replicas: { applied: number; total: number } }>('GET', '/api/v1/library/deployments/tiny');
    expect(lib.body.replicas).toEqual({ applied: 3, total: 3 });
    expect(await streamOk(cluster.url('replica-c'))).toBe(true);

    // The replicas as an operator lists them: all three live, serving, on the newest configuration.
    type Listing = { config_version: number; replicas: Array<{ replica_id: string; state: string; live: boolean; applied_version: number; library_models: string[] }> };
    await within(3000, 'every replica on the newest configuration', async () => {
      const res = await on('replica-b')<Listing>('GET', '/api/v1/replicas');
      return res.body.replicas.every((r) => r.applied_version === res.body.config_version);
    });
    const listed = (await on('replica-b')<Listing>('GET', '/api/v1/replicas')).body;
    expect(listed.replicas.map((r) => [r.replica_id, r.state, r.live, r.library_models])).toEqual(IDS.map((id) => [id, 'serving', true, ['tiny@cpu/all']]));
    const table = await runCli(['replicas'], { PLATFORM_URL: cluster.url('replica-a'), PLATFORM_API_KEY: opsKey, PLATFORM_CACHE_DIR: tempDir() });
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^REPLICA\s+STATE\s+LIVE\s+HEARTBEAT\s+CONFIG\s+DEPLOYMENTS\s+LIBRARY\s+VECTORS\s+ADDRESS$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/).slice(0, 3))).toEqual(IDS.map((id) => [id, 'serving', 'yes']));
    expect(lines.slice(1).every((l) => /\(newest\)\s+1\s+tiny\s+-\s+http:\/\/127\.0\.0\.1:\d+$/.test(l))).toBe(true);
  }, 120_000);

  it("answer a model's figures for the whole cluster, whichever replica is asked", async () => {
    for (const [id, n] of [['replica-a', 2], ['replica-b', 3], ['replica-c', 4]] as const) {
      for (let i = 0; i < n; i++) expect(await variationOn(id)).toBe('a');
      expect(await streamOk(cluster.url(id))).toBe(true);
    }
    const windows = await Promise.all(IDS.map((id) => on(id)<Array<{ requests: number }>>('GET', '/api/v1/models/fraud/metrics/window')));
    const predicts = windows.reduce((n, w) => n + w.body.reduce((m, v) => m + v.requests, 0), 0);
    const libraryWindows = await Promise.all(IDS.map((id) => on(id)<{ requests: number }>('GET', '/api/v1/models/tiny/metrics/window')));
    // Each replica has its own share; the figures through any replica are the sum.
    expect(libraryWindows.map((w) => w.body.requests).every((n) => n >= 1)).toBe(true);
    for (const id of IDS) {
      const realtime = await on(id)<{ replicas: { answered: number; total: number }; variations: Array<{ requests_5m: number }> }>('GET', '/api/v1/models/fraud/metrics');
      expect(realtime.body.replicas).toEqual({ answered: 3, total: 3 });
      expect(realtime.body.variations.reduce((n, v) => n + v.requests_5m, 0)).toBe(predicts);
      const library = await on(id)<{ replicas: { answered: number; total: number }; requests_5m: number }>('GET', '/api/v1/models/tiny/metrics');
      expect(library.body).toMatchObject({ replicas: { answered: 3, total: 3 }, requests_5m: libraryWindows.reduce((n, w) => n + w.body.requests, 0) });
    }
  });

  it('a traffic split changed through B is in force on all three, 100 times', async () => {
    const build = (await on('replica-b')<{ live_deployment: { traffic: { variations: Record<string, string> } } }>('GET', '/api/v1/models/fraud')).body.live_deployment.traffic.variations.b!;
    const times: number[] = [];
    for (let i = 0; i < 100; i++) {
      const toA = i % 2 === 1;
      const t0 = performance.now();
      liveDeployment = await deployThrough('replica-b', { ...split(toA ? 100 : 0), build_id: build });
      const want = toA ? 'a' : 'b';
      await Promise.all(IDS.map((id) => within(10_000, `split ${i} on ${id}`, async () => (await variationOn(id)) === want)));
      times.push(performance.now() - t0);
    }
    const p50 = percentile(times, 50);
    const p99 = percentile(times, 99);
    console.log(`propagation of a traffic split to 3 replicas over 100 changes: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms`);
    expect(times).toHaveLength(100);
  }, 300_000);

  it('a key revoked with the CLI against the database stops on every replica', async () => {
    const { key, id } = await createKey(cluster.env, 'short-lived');
    const theirs = await tokenOn(cluster.url('replica-c'), key);
    for (const r of IDS) expect((await apiClient(cluster.url(r), theirs)('GET', '/api/v1/models')).status).toBe(200);
    const revoked = await runCli(['keys', 'revoke', id], { ...cluster.env, DATA_DIR: tempDir() });
    expect(revoked.code, revoked.stderr).toBe(0);
    const took = await Promise.all(IDS.map((r) => within(5000, `revoked on ${r}`, async () => (await apiClient(cluster.url(r), theirs)('GET', '/api/v1/models')).status === 401)));
    console.log(`revocation in force on every replica after ${Math.max(...took).toFixed(0)} ms`);
  });

  it('killing the LISTEN connection of C loses no change', async () => {
    const build = (await on('replica-a')<{ live_deployment: { traffic: { variations: Record<string, string> } } }>('GET', '/api/v1/models/fraud')).body.live_deployment.traffic.variations.b!;
    expect(await killListener(databaseUrl, 'replica-c')).toBe(1);
    // Changes while C reconnects: the last one must be in force on C.
    for (const toA of [false, true, false]) {
      const dep = await deployThrough('replica-a', { ...split(toA ? 100 : 0), build_id: build });
      expect(await waitForDeployment(on('replica-a'), dep)).toMatchObject({ status: 'LIVE' });
      liveDeployment = dep;
    }
    for (const id of IDS) await within(5000, `the last split on ${id}`, async () => (await variationOn(id)) === 'b');
    // And C listens again.
    await within(10_000, 'C listening again', async () => (await killListener(databaseUrl, 'replica-c').catch(() => 0)) === 0 ? false : true);
    const dep = await deployThrough('replica-a', { ...split(100), build_id: build });
    expect(await waitForDeployment(on('replica-a'), dep)).toMatchObject({ status: 'LIVE' });
    liveDeployment = dep;
    for (const id of IDS) await within(5000, `split after the second cut on ${id}`, async () => (await variationOn(id)) === 'a');
  }, 60_000);

  it('SIGKILL of C under predict and streaming load fails only requests that were on C', async () => {
    cluster.startBalancing();
    const c = cluster.replicas.get('replica-c')!;
    let killedAt = 0;
    const records = await underLoad(async () => {
      await sleep(1500);
      killedAt = performance.now();
      c.host.proc.kill('SIGKILL');
      await sleep(1500);
    });
    const failed = records.filter((r) => !r.ok);
    expect(records.filter((r) => r.ok && r.replica !== 'replica-c').length).toBeGreaterThan(20);
    expect(records.filter((r) => r.ok && r.replica === 'replica-c' && r.kind === 'stream').length).toBeGreaterThan(0);
    // Every failure was on C, sent before the kill or before the balancer could know of it.
    expect(failed.filter((r) => r.replica !== 'replica-c')).toEqual([]);
    expect(failed.every((r) => r.endedAt >= killedAt)).toBe(true);
    console.log(`SIGKILL under load: ${records.length} requests, ${failed.length} failed, all on the killed replica (${failed.map((f) => f.error).join(', ')})`);

    // A deployment does not wait for the dead replica once its heartbeat is older than the timeout.
    const build = (await on('replica-a')<{ live_deployment: { traffic: { variations: Record<string, string> } } }>('GET', '/api/v1/models/fraud')).body.live_deployment.traffic.variations.b!;
    const dep = await deployThrough('replica-a', { ...split(0), build_id: build });
    expect(await waitForDeployment(on('replica-a'), dep)).toMatchObject({ status: 'LIVE' });
    liveDeployment = dep;
    const count = await on('replica-b')<{ replicas: { applied: number; total: number } }>('GET', '/api/v1/models/fraud');
    expect(count.body.replicas.total).toBe(2);
    const listed = await on('replica-a')<{ replicas: Array<{ replica_id: string; state: string; live: boolean }> }>('GET', '/api/v1/replicas');
    // Killed without a word: still "serving" in its row, but no longer live.
    expect(listed.body.replicas.map((r) => [r.replica_id, r.state, r.live])).toEqual([
      ['replica-a', 'serving', true],
      ['replica-b', 'serving', true],
      ['replica-c', 'serving', false],
    ]);
  }, 60_000);

  it('SIGTERM of B under load fails nothing, and B exits 0', async () => {
    await cluster.start('replica-c');
    for (const id of IDS) await within(5000, `split on ${id}`, async () => (await variationOn(id)) === 'b');
    const b = cluster.replicas.get('replica-b')!;
    let exitCode: number | null = -1;
    const records = await underLoad(async () => {
      await sleep(1500);
      b.host.proc.kill('SIGTERM');
      exitCode = await b.host.exited;
      await sleep(300);
    });
    expect(exitCode).toBe(0);
    const failed = records.filter((r) => !r.ok);
    expect(failed).toEqual([]);
    expect(records.filter((r) => r.replica === 'replica-b' && r.ok).length).toBeGreaterThan(0);
    console.log(`SIGTERM under load: ${records.length} requests, none failed, ${records.filter((r) => r.replica === 'replica-b').length} answered by the stopping replica`);
    cluster.stopBalancing();
  }, 60_000);

  it('restarting every replica comes back to the same state', async () => {
    await cluster.start('replica-b');
    const before = await on('replica-a')<{ live_deployment: { deployment_id: string } }>('GET', '/api/v1/models/fraud');
    expect(before.body.live_deployment.deployment_id).toBe(liveDeployment);
    expect(await cluster.stopAll('SIGTERM')).toEqual([0, 0, 0]);
    for (const id of IDS) await cluster.start(id);
    for (const id of IDS) {
      const model = await on(id)<{ live_deployment: { deployment_id: string }; replicas: { applied: number; total: number } }>('GET', '/api/v1/models/fraud');
      expect(model.body.live_deployment.deployment_id).toBe(liveDeployment);
      expect(await variationOn(id)).toBe('b');
      expect(await streamOk(cluster.url(id))).toBe(true);
    }
    await within(5000, 'applied on 3/3 after the restart', async () => {
      const res = await on('replica-a')<{ replicas: { applied: number; total: number } }>('GET', '/api/v1/models/tiny');
      return res.body.replicas.applied === 3 && res.body.replicas.total === 3;
    });
  }, 120_000);
});
