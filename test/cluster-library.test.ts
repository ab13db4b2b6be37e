// Library models across three replicas of the real host on one PostgreSQL database: a model
// deployed with `replicas: 1` runs on one replica and the others forward its requests (JSON and
// streams); a session (X-Session-ID, or the body's `user`) sticks to one replica among those
// holding a model; when the only holder is killed the others answer 503 with Retry-After until
// the model is placed again and loaded; an undeploy through one replica is gone from all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { startCluster, type Cluster } from './helpers/cluster.js';
import { writeTinyChatModel } from './helpers/llm-models.js';
import { tempDir } from './helpers/paths.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';

const IDS = ['replica-a', 'replica-b', 'replica-c'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let pg: TestPostgres;
let cluster: Cluster;
let token: string;
let key: string;

interface Answer {
  status: number;
  replica: string | null;
  retryAfter: string | null;
  text: string;
}

async function chat(on: string, model: string, options: { stream?: boolean; session?: string; user?: string } = {}): Promise<Answer> {
  const res = await fetch(`${cluster.url(on)}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(options.session ? { 'x-session-id': options.session } : {}) },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 8, temperature: 0, stream: options.stream ?? false, ...(options.user ? { user: options.user } : {}) }),
  });
  return { status: res.status, replica: res.headers.get('x-replica-id'), retryAfter: res.headers.get('retry-after'), text: await res.text() };
}

async function deployment(on: string, model: string) {
  return apiClient(cluster.url(on), token)<{ status: string; placement: number | null; replicas: { applied: number; total: number } }>('GET', `/api/v1/library/deployments/${model}`);
}

async function untilLive(model: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const d = await deployment('replica-a', model);
    if (d.body.status === 'LIVE') return;
    expect(d.body.status).not.toBe('FAILED');
    await sleep(50);
  }
  throw new Error(`${model} did not go LIVE`);
}

beforeAll(async () => {
  pg = await startPostgres();
  const modelsDir = tempDir();
  writeTinyChatModel(modelsDir, 'tiny-chat');
  writeTinyChatModel(modelsDir, 'other-chat', { seed: 5 });
  // Slow enough that a stream is still going when its replica is killed.
  writeTinyChatModel(modelsDir, 'long-chat', { nEmbd: 256, nLayer: 4, nCtx: 4096 });
  ({ cluster, key, token } = await startCluster(pg, 'library_replicas', IDS, { MODELS_DIR: modelsDir, REPLICA_TIMEOUT_MS: '2000', CONFIG_POLL_MS: '500' }));
}, 120_000);

afterAll(async () => {
  await cluster?.stopAll('SIGKILL');
  await pg?.stop();
});

describe('library models across three replicas', () => {
  let holder: string;

  it('one placed on one replica answers through every replica, streams included', async () => {
    const cli = await runCli(['library', 'deploy', 'tiny-chat', '--model-id', 'tiny', '--replicas', '1', '--wait'], {
      PLATFORM_URL: cluster.url('replica-b'),
      PLATFORM_API_KEY: key,
      PLATFORM_CACHE_DIR: tempDir(),
    });
    expect(cli.code, cli.stderr).toBe(0);
    await untilLive('tiny');
    const d = await deployment('replica-c', 'tiny');
    expect(d.body).toMatchObject({ placement: 1, replicas: { applied: 1, total: 1 } });
    const answers = await Promise.all(IDS.map((id) => chat(id, 'tiny')));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    holder = answers[0]!.replica!;
    expect(IDS).toContain(holder);
    // Every replica's answer was generated on the holder, and they agree (greedy).
    expect(answers.map((a) => a.replica)).toEqual([holder, holder, holder]);
    expect(new Set(answers.map((a) => JSON.parse(a.text).choices[0].message.content)).size).toBe(1);
    const other = IDS.find((id) => id !== holder)!;
    const streamed = await chat(other, 'tiny', { stream: true });
    expect(streamed.status).toBe(200);
    expect(streamed.replica).toBe(holder);
    expect(streamed.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const shown = await runCli(['models', 'get', 'tiny'], { PLATFORM_URL: cluster.url(other), PLATFORM_API_KEY: key, PLATFORM_CACHE_DIR: tempDir() });
    expect(shown.stdout).toMatch(/\nreplicas:\s+applied on 1\/1 replica \(placed on 1\)\n/);
  }, 60_000);

  it('a session sticks to one replica among those holding the model', async () => {
    const res = await apiClient(cluster.url('replica-a'), token)('POST', '/api/v1/library/deployments', { name: 'other-chat', model_id: 'duo', replicas: 2 });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await untilLive('duo');
    expect((await deployment('replica-a', 'duo')).body.replicas).toEqual({ applied: 2, total: 2 });
    const chosen = new Set<string>();
    for (let s = 0; s < 16; s++) {
      const byHeader = await Promise.all(IDS.map((id) => chat(id, 'duo', { session: `session-${s}` })));
      const byUser = await Promise.all(IDS.map((id) => chat(id, 'duo', { user: `session-${s}` })));
      const replicas = new Set([...byHeader, ...byUser].map((a) => a.replica));
      expect([...byHeader, ...byUser].map((a) => `${a.status} ${a.replica}${a.status === 200 ? '' : ` ${a.text}`}`).filter((a) => !a.startsWith('200'))).toEqual([]);
      expect(replicas.size).toBe(1);
      chosen.add([...replicas][0]!);
    }
    // Sessions spread over both holders (16 sessions all on one would have odds of 1 in 32768).
    expect(chosen.size).toBe(2);
  }, 60_000);

  it('when the only holder dies, the others say 503 with Retry-After until it is placed again', async () => {
    cluster.replicas.get(holder)!.host.proc.kill('SIGKILL');
    await cluster.replicas.get(holder)!.host.exited;
    const others = IDS.filter((id) => id !== holder);
    const seen: number[] = [];
    let served: Answer | undefined;
    for (let i = 0; i < 300 && !served; i++) {
      const a = await chat(others[i % 2]!, 'tiny');
      seen.push(a.status);
      if (a.status === 200) served = a;
      else {
        expect(a.status).toBe(503);
        expect(a.retryAfter).toBe('1');
        await sleep(50);
      }
    }
    expect(served, `statuses: ${seen.join(' ')}`).toBeDefined();
    expect(others).toContain(served!.replica);
    // The new holder records its load in the store just after it starts answering: the count
    // may lag the first 200 by a moment (seen once under a loaded full run).
    let replicas: unknown;
    for (let i = 0; i < 100; i++) {
      replicas = (await deployment(others[0]!, 'tiny')).body.replicas;
      if ((replicas as { applied?: number }).applied === 1) break;
      await sleep(50);
    }
    expect(replicas).toEqual({ applied: 1, total: 1 });
  }, 60_000);

  it('an undeploy through one replica is gone from all', async () => {
    const others = IDS.filter((id) => id !== holder);
    const res = await apiClient(cluster.url(others[0]!), token)('DELETE', '/api/v1/library/deployments/duo');
    expect(res.status).toBe(204);
    for (const id of others) {
      for (let i = 0; i < 100; i++) {
        if ((await chat(id, 'duo')).status === 404) break;
        await sleep(50);
      }
      expect((await chat(id, 'duo')).status).toBe(404);
    }
  }, 30_000);

  it('a forwarded stream whose replica dies ends with an error event, not a silent cut', async () => {
    const alive = IDS.filter((id) => id !== holder);
    const res = await apiClient(cluster.url(alive[0]!), token)('POST', '/api/v1/library/deployments', { name: 'long-chat', model_id: 'long', replicas: 1 });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await untilLive('long');
    const longHolder = (await chat(alive[0]!, 'long')).replica!;
    const via = alive.find((id) => id !== longHolder)!;
    const stream = await fetch(`${cluster.url(via)}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'long', messages: [{ role: 'user', content: 'Tell me everything' }], max_tokens: 3500, temperature: 0.8, stream: true }),
    });
    expect(stream.headers.get('x-replica-id')).toBe(longHolder);
    const reader = stream.body!.getReader();
    let text = new TextDecoder().decode((await reader.read()).value);
    cluster.replicas.get(longHolder)!.host.proc.kill('SIGKILL');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const events = text.trim().split('\n\n');
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(events.at(-2)!.slice('data: '.length))).toMatchObject({ error: { code: 'unavailable' } });
    expect(events.at(-2)).toContain(`(${longHolder}) stopped in the middle of the answer`);
  }, 60_000);
});
